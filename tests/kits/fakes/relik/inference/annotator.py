"""relik.inference.annotator.Relik (1.0.7): from_pretrained and __call__ with the
argument handling the adapter relies on (see tests/kits/fakes/README.md)."""

from __future__ import annotations

import re
from typing import Any, ClassVar

from relik.inference.data.objects import RelikOutput, Span, TaskType, Triplets
from relik.reader.pytorch_modules.triplet import RelikReaderForTripletExtraction
from relik.retriever.indexers.document import Document
from relik.retriever.indexers.inmemory import InMemoryDocumentIndex
from relik.retriever.pytorch_modules.model import GoldenRetriever

NME = "--NME--"
#: the reader's marker slots of the stand-in models (small, so that tests can exceed them)
RELATION_SLOTS = 4
ENTITY_SLOTS = 6


class Relik:
    loads: ClassVar[list[dict]] = []  # every from_pretrained, for the tests
    calls: ClassVar[list[dict]] = []  # every __call__: its arguments and the candidates read

    def __init__(self, model: str, task: TaskType, index: dict | None, device: str | None) -> None:
        self.model = model
        self.task = task
        self.device = device
        tasks = [TaskType.SPAN, TaskType.TRIPLET] if task == TaskType.BOTH else [TaskType.TRIPLET]
        self._retriever = {t: GoldenRetriever(f"{model}:{t.value}") for t in tasks}
        self._index = {}
        for key, value in (index or {}).items():
            t = TaskType(key) if isinstance(key, str) else key
            loaded = value if isinstance(value, InMemoryDocumentIndex) else \
                InMemoryDocumentIndex.from_pretrained(value)
            if loaded.embeddings != f"embedded by {model}:{t.value}":
                raise ValueError(f"index {value} was not embedded by this model's encoder")
            self._retriever[t].document_index = loaded
            self._index[t] = loaded
        self.reader = RelikReaderForTripletExtraction(
            RELATION_SLOTS, ENTITY_SLOTS if task == TaskType.BOTH else 0)

    @classmethod
    def from_pretrained(cls, model: str, **kwargs: Any) -> Relik:
        index = kwargs.pop("index", None)
        if isinstance(index, str):
            raise KeyError(TaskType.SPAN)  # relik 1.0.7: a plain string fails for task=both
        task = TaskType.BOTH if "cie" in model else TaskType.TRIPLET
        cls.loads.append({"model": model, "index": index, **kwargs})
        return cls(model, task, index, kwargs.get("device"))

    @property
    def retriever(self):
        if len(self._retriever) == 1:
            return next(iter(self._retriever.values()))
        return self._retriever

    def __call__(self, text: str | list[str], candidates: dict | list | None = None,
                 top_k: int | None = None, relation_threshold: float = 0.5,
                 **kwargs: Any) -> RelikOutput | list[RelikOutput]:
        single = isinstance(text, str)
        texts = [text] if single else list(text)
        top_k = top_k or 100
        tasks = list(self._retriever)
        if candidates is not None and not isinstance(candidates, dict):
            candidates = {self.task: candidates if isinstance(candidates[0], list)
                          else [candidates]}
        chosen: dict[TaskType, list[list[str]]] = {}
        for t in tasks:
            if candidates is not None and t in candidates:
                # one list per text, indexed by the window's doc id (a flat list fails)
                chosen[t] = [[c.text if isinstance(c, Document) else c
                              for c in candidates[t][doc_id]] for doc_id in range(len(texts))]
            else:
                if self._retriever[t].document_index is None:
                    raise ValueError("No retriever was provided, please provide a retriever "
                                     "or candidates.")
                chosen[t] = [[s.document.text for s in hits]
                             for hits in self._retriever[t].retrieve(texts, k=top_k)]
        slots = self.reader.relik_reader_model.config
        kept = {TaskType.TRIPLET: [c[:slots.additional_special_symbols]
                                   for c in chosen[TaskType.TRIPLET]]}
        if TaskType.SPAN in chosen:
            kept[TaskType.SPAN] = [c[:max(0, slots.additional_special_symbols_types - 1)]
                                   for c in chosen[TaskType.SPAN]]
        Relik.calls.append({"texts": len(texts), "top_k": top_k,
                            "given": candidates is not None,
                            "read": {t.value: [len(c) for c in v] for t, v in kept.items()},
                            "threshold": relation_threshold})
        out = [self._read(i, t, kept) for i, t in enumerate(texts)]
        return out[0] if single else out

    def _read(self, i: int, text: str, kept: dict) -> RelikOutput:
        relations = sorted(kept[TaskType.TRIPLET][i], key=len, reverse=True)
        entities = set(kept.get(TaskType.SPAN, [[]] * (i + 1))[i])
        spans, triplets = [], []
        for m in re.finditer(r"[^.]+", text):
            sentence = m.group(0)
            rel = next((r for r in relations if f" {r} " in sentence), None)
            if rel is None:
                continue
            head, _, tail = sentence.partition(f" {rel} ")
            s_text, o_text = head.strip(), tail.strip()
            s_start = m.start() + sentence.index(s_text)
            o_start = m.start() + sentence.rindex(o_text)
            subj = Span(s_start, s_start + len(s_text), s_text if s_text in entities else NME,
                        s_text)
            obj = Span(o_start, o_start + len(o_text), o_text if o_text in entities else NME,
                       o_text)
            spans += [subj, obj]
            triplets.append(Triplets(subj, rel, obj, 0.9))
        return RelikOutput(text=text, tokens=text.split(), id=i, spans=spans, triplets=triplets)
