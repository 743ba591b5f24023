"""ReLiK RE and ReLiK cIE (the paper's §5.1 and Appendix D) through relik 1.0.7's API.

Per snapshot, ReLiK gets that snapshot's dictionaries: cIE the entities (V_t) and the
relations (R_t), RE only the relations. The default path: each dictionary becomes a
document index (``relik.retriever.indexers``), embedded with the loaded model's own
retriever encoder and passed as ``Relik.from_pretrained(model, index={"span": …,
"triplet": …})``; ReLiK then retrieves ``top_k`` candidates per text window, with
``top_k`` at most the reader's candidate slots. Passing the dictionaries as candidates of
every text (one list per input text, keyed by ``TaskType``: a flat list is read wrongly
for several texts and for ``task="both"``) is only for an inventory that fits the
reader's slots: its triplet reader has ``additional_special_symbols`` relation markers
(``[R-0]…``) and ``additional_special_symbols_types - 1`` entity markers (``[E-0]…``,
after ``--NME--``), and it silently drops every candidate past them, so all of V_t as
candidates would keep the first few hundred entities by id and lose the rest.

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

import hashlib
import json
import logging
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from emerge_lib.core.errors import EmergeError
from emerge_lib.evaluation.adapters.common import Dictionaries
from emerge_lib.evaluation.data import OPERATION_OPS, Instance, Predicted, prediction_line

log = logging.getLogger(__name__)

NME = "--NME--"
DEFAULT_TOP_K = 100  # relik's own default (``Relik.__call__``)
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


def reader_slots(relik: Any) -> dict[str, int]:
    """How many candidates the loaded model's reader can take per window: ``triplet``
    (relation markers) and, for a closed-IE reader, ``span`` (entity markers, ``--NME--``
    not counted). Read from ``relik.reader.relik_reader_model.config``."""
    config = relik.reader.relik_reader_model.config
    slots = {"triplet": int(config.additional_special_symbols)}
    types = int(getattr(config, "additional_special_symbols_types", 0) or 0)
    if types > 0:
        slots["span"] = types - 1
    return slots


def _require_relik() -> None:
    import importlib.util

    if importlib.util.find_spec("relik") is None:
        raise EmergeError("relik is not installed in this environment: ReLiK runs in its own "
                          "(Python 3.10/3.11, relik==1.0.7); see docs/evaluation.md")


def _fingerprint(model: str, docs: Sequence[Mapping[str, Any]]) -> str:
    """What an index was built from: the model (its encoder embeds) and the documents."""
    h = hashlib.sha256(model.encode())
    for d in docs:
        h.update(json.dumps(d, sort_keys=True, ensure_ascii=False).encode() + b"\n")
    return h.hexdigest()


INDEX_MARK = "emerge-index.sha256"


def build_indexes(model: str, inv: Inventory, out_dir: str | Path, variant: str,
                  device: str = "cpu", relik: Any = None) -> dict[str, str]:
    """Embed the inventory with ``model``'s own retrievers and save the indexes under
    ``out_dir``; returns the ``index=`` dict for ``Relik.from_pretrained``. An index whose
    marker says it was built from the same model and documents is reused (a rerun embeds
    nothing); ``relik``: the model, already loaded."""
    _require_relik()
    from relik.inference.data.objects import TaskType
    from relik.retriever.indexers.document import Document, DocumentStore
    from relik.retriever.indexers.inmemory import InMemoryDocumentIndex

    paths: dict[str, str] = {}
    tasks = [("triplet", TaskType.TRIPLET, inv.relations, ["definition"])]
    if variant == "cie":
        tasks.append(("span", TaskType.SPAN, inv.entities, []))
    for key, task, docs, fields in tasks:
        path = Path(out_dir) / key
        paths[key] = str(path)
        mark = _fingerprint(model, docs)
        if (path / INDEX_MARK).is_file() and (path / INDEX_MARK).read_text().strip() == mark:
            log.info("relik %s index at %s is current (%d documents)", key, path, len(docs))
            continue
        if relik is None:
            from relik import Relik

            relik = Relik.from_pretrained(model, device=device)
        store = DocumentStore([Document(text=d["text"], id=d["id"], metadata=d["metadata"])
                               for d in docs])
        index = InMemoryDocumentIndex(documents=store, metadata_fields=fields,
                                      separator=SEPARATOR, device=device, precision=32)
        retriever = relik.retriever[task] if isinstance(relik.retriever, dict) else relik.retriever
        retriever.document_index = index
        retriever.index(batch_size=256, force_reindex=True)
        index.save_pretrained(str(path))
        (path / INDEX_MARK).write_text(mark + "\n")
        log.info("relik %s index: %d documents embedded into %s", key, len(docs), path)
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
        """With ``index`` (from :func:`build_indexes`, the default path) ReLiK retrieves
        from it, ``top_k`` capped at the reader's slots; without, the whole inventory is
        every text's candidates, which is refused when it does not fit the reader's
        slots (the reader would silently keep only the first of them)."""
        _require_relik()
        from relik import Relik
        from relik.inference.data.objects import TaskType

        relik = Relik.from_pretrained(self.model, device=self.device,
                                      **({"index": dict(index)} if index else {}))
        slots = reader_slots(relik)
        kw: dict[str, Any] = {"relation_threshold": self.relation_threshold}
        if index:
            kw["top_k"] = min(self.top_k or DEFAULT_TOP_K, max(slots.values()))
        else:
            sizes = {"triplet": len(inv.relations)}
            if self.variant == "cie":
                sizes["span"] = len(inv.entities)
            over = {k: n for k, n in sizes.items() if n > slots.get(k, 0)}
            if over:
                raise EmergeError(
                    "relik: " + ", ".join(f"{n} {'relation' if k == 'triplet' else 'entity'} "
                                          f"candidates for {slots.get(k, 0)} reader slots"
                                          for k, n in over.items())
                    + f" ({self.model}): the reader would drop the rest; use per-snapshot "
                    "indexes (the default; --index-dir) instead of --candidates")
        for chunk in _chunks(instances, self.batch_size):
            texts = [i.passage for i in chunk]
            call = dict(kw)
            if not index:
                call["candidates"] = candidates(len(texts), inv, self.variant, TaskType)
            outputs = relik(texts, **call)
            if not isinstance(outputs, list):
                outputs = [outputs]
            for inst, output in zip(chunk, outputs, strict=True):
                yield prediction_line(inst.hash_id, self.model_name,
                                      parse_output(output, self.variant, inv))


def _chunks(items: Sequence[Instance], n: int) -> Iterable[Sequence[Instance]]:
    for i in range(0, len(items), n):
        yield items[i:i + n]
