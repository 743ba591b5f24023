"""ReLiK RE and ReLiK cIE (the paper's §5.1 and Appendix D) through relik 1.0.7's API.

Per snapshot, ReLiK gets that snapshot's dictionaries: cIE the entities (V_t) and the
relations (R_t), RE only the relations. Each dictionary becomes a document index
(``relik.retriever.indexers``), embedded with the loaded model's own retriever encoder
and passed as ``Relik.from_pretrained(model, index={"span": …, "triplet": …})``; or, for
a small inventory, candidates are passed per text (one list per input text, keyed by
``TaskType``: a flat list is read wrongly for several texts and for ``task="both"``).

Outputs are ``RelikOutput`` objects; each ``Triplets(subject: Span, label, object: Span,
confidence)`` becomes one predicted triple:

- RE: labels (subject text, relation, object text), no QIDs, operations X, E, EE, EE-KG
  (the authors' ``relik-oie``; written as an ``add`` and an ``infer`` line);
- cIE: the span labels (index document texts) mapped back to QIDs and the relation to its
  PID; a span linked to nothing (``--NME--``) or to an unknown name gives no triple.
  Operation ``add`` (the authors split it into X and E by membership in T_t; for QID
  recall that is the same).

relik lives in its own environment (Python < 3.12, torch 2.3.1); this module imports it
only inside the functions that run it.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from emerge_lib.errors import EmergeError
from emerge_lib.evaluation.adapters.common import Dictionaries
from emerge_lib.evaluation.data import OPERATION_OPS, Instance, Predicted, prediction_line

NME = "--NME--"
RE_OPS = OPERATION_OPS["add"] | OPERATION_OPS["infer"]
MODELS = {"re": "relik-ie/relik-relation-extraction-large", "cie": "relik-ie/relik-cie-large"}
NAMES = {"re": "relik-oie", "cie": "relik-cie"}  # the authors' model names
SEPARATOR = " <def> "


@dataclass
class Inventory:
    """The documents of one snapshot's indexes, with stable ids, and the way back from a
    document text to its id (QID or PID)."""

    relations: list[dict[str, Any]] = field(default_factory=list)
    entities: list[dict[str, Any]] = field(default_factory=list)
    pid_of: dict[str, str] = field(default_factory=dict)
    qid_of: dict[str, str] = field(default_factory=dict)
    collisions: int = 0  # names shared by several ids (the first id keeps the name)


def inventory(d: Dictionaries, variant: str) -> Inventory:
    """Index documents from the dictionaries: relations as ``{text: label, id, metadata:
    {definition, pid}}``, entities (cIE only) as ``{text: name, id, metadata: {qid}}``;
    ids are positions in numeric-id order, so they are the same in every process."""
    inv = Inventory()
    for i, (pid, (label, desc)) in enumerate(d.relations.items()):
        if label in inv.pid_of:
            inv.collisions += 1
            continue
        inv.pid_of[label] = pid
        inv.relations.append({"text": label, "id": i, "metadata": {"definition": desc,
                                                                    "pid": pid}})
    if variant == "cie":
        for i, (qid, name) in enumerate(d.entities.items()):
            if name in inv.qid_of:
                inv.collisions += 1
                continue
            inv.qid_of[name] = qid
            inv.entities.append({"text": name, "id": i, "metadata": {"qid": qid}})
    return inv


def candidates(n_texts: int, inv: Inventory, variant: str, task_type: Any) -> dict[Any, list]:
    """``candidates=`` for ``relik(texts, candidates=…)``: one list per text, keyed by
    ``TaskType`` (pass relik's ``TaskType``)."""
    out = {task_type.TRIPLET: [[d["text"] for d in inv.relations]] * n_texts}
    if variant == "cie":
        out[task_type.SPAN] = [[d["text"] for d in inv.entities]] * n_texts
    return out


def parse_output(output: Any, variant: str, inv: Inventory | None = None) -> list[Predicted]:
    """Predicted triples of one ``RelikOutput`` (anything with ``.triplets`` of
    ``(subject, label, object, confidence)`` whose spans have ``.text`` and ``.label``)."""
    out: list[Predicted] = []
    # relik 1.0.7 names them ``triplets`` (class ``Triplets``); its later sources ``triples``
    found = getattr(output, "triplets", None)
    for t in found if found is not None else getattr(output, "triples", None) or ():
        labels = (str(t.subject.text), str(t.label), str(t.object.text))
        if variant == "re":
            out.append(Predicted(None, labels, RE_OPS))
            continue
        inv = inv or Inventory()
        s = inv.qid_of.get(t.subject.label) if t.subject.label != NME else None
        o = inv.qid_of.get(t.object.label) if t.object.label != NME else None
        p = inv.pid_of.get(t.label)
        if s and o and p:
            out.append(Predicted((s, p, o), labels, OPERATION_OPS["add"]))
    return out


def _require_relik() -> None:
    import importlib.util

    if importlib.util.find_spec("relik") is None:
        raise EmergeError("relik is not installed in this environment: ReLiK runs in its own "
                          "(Python 3.10/3.11, relik==1.0.7); see docs/evaluation.md")


def build_indexes(model: str, inv: Inventory, out_dir: str | Path, variant: str,
                  device: str = "cpu") -> dict[str, str]:
    """Embed the inventory with ``model``'s own retrievers and save the indexes under
    ``out_dir``; returns the ``index=`` dict for ``Relik.from_pretrained``."""
    _require_relik()
    from relik import Relik
    from relik.inference.data.objects import TaskType
    from relik.retriever.indexers.document import Document, DocumentStore
    from relik.retriever.indexers.inmemory import InMemoryDocumentIndex

    relik = Relik.from_pretrained(model, device=device)
    paths: dict[str, str] = {}
    tasks = [("triplet", TaskType.TRIPLET, inv.relations, ["definition"])]
    if variant == "cie":
        tasks.append(("span", TaskType.SPAN, inv.entities, []))
    for key, task, docs, fields in tasks:
        store = DocumentStore([Document(text=d["text"], id=d["id"], metadata=d["metadata"])
                               for d in docs])
        index = InMemoryDocumentIndex(documents=store, metadata_fields=fields,
                                      separator=SEPARATOR, device=device, precision=32)
        retriever = relik.retriever[task] if isinstance(relik.retriever, dict) else relik.retriever
        retriever.document_index = index
        retriever.index(batch_size=256, force_reindex=True)
        path = Path(out_dir) / key
        index.save_pretrained(str(path))
        paths[key] = str(path)
    return paths


class RelikAdapter:
    """Passages of one snapshot → ReLiK predictions lines."""

    def __init__(self, variant: str, *, model: str | None = None, device: str = "cpu",
                 relation_threshold: float = 0.5, top_k: int | None = None,
                 batch_size: int = 32) -> None:
        if variant not in MODELS:
            raise ValueError("variant is 're' or 'cie'")
        self.variant = variant
        self.model = model or MODELS[variant]
        self.device = device
        self.relation_threshold = relation_threshold
        self.top_k = top_k
        self.batch_size = batch_size
        self.model_name = NAMES[variant]

    def predict(self, instances: Sequence[Instance], inv: Inventory,
                index: Mapping[str, str] | None = None) -> Iterator[dict[str, Any]]:
        """With ``index`` (from :func:`build_indexes`) ReLiK retrieves from it; without,
        every relation (and entity) is a candidate of every text."""
        _require_relik()
        from relik import Relik
        from relik.inference.data.objects import TaskType

        relik = Relik.from_pretrained(self.model, device=self.device,
                                      **({"index": dict(index)} if index else {}))
        for chunk in _chunks(instances, self.batch_size):
            texts = [i.passage for i in chunk]
            kw: dict[str, Any] = {"relation_threshold": self.relation_threshold}
            if self.top_k:
                kw["top_k"] = self.top_k
            if not index:
                kw["candidates"] = candidates(len(texts), inv, self.variant, TaskType)
            outputs = relik(texts, **kw)
            if not isinstance(outputs, list):
                outputs = [outputs]
            for inst, output in zip(chunk, outputs, strict=True):
                yield prediction_line(inst.hash_id, self.model_name,
                                      parse_output(output, self.variant, inv))


def _chunks(items: Sequence[Instance], n: int) -> Iterable[Sequence[Instance]]:
    for i in range(0, len(items), n):
        yield items[i:i + n]
