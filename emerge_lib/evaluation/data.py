"""Reading what the scorer scores: gold instances (EMERGE-format JSONL, ours and the
authors') and predictions (our JSONL format, and the in-record ``predictions`` blocks of
the authors' files).

Gold: a JSONL file, or a folder. A folder with an ``evaluation_set/`` (the authors'
``data/`` layout, or ``data/evaluation_set`` below it, as in our releases) is read there;
otherwise its ``snapshot_*/delta_*.jsonl`` files (a snapshot folder's parent), its
``corpus/snapshot_*/delta_*.jsonl`` (a release without a test split), or failing that its
``*.jsonl`` files. Dates may be date-only (``2019-01-01``, the authors' and our [compat] format) or
full timestamps (``2024-01-01T00:00:00Z``, our earlier releases); the snapshot of an
instance is the date of ``delta_dates[0]``, never its epoch seconds (the authors' are
Europe/Paris midnight, an hour before UTC midnight).

Predictions, one JSON object per line::

    {"hash_id": str, "model": str,
     "predicted": [{"triple": [Qs, Pp, Qo] | null, "triple_labels": [h, r, t],
                    "operation": "add" | "infer" | "deprecate" | null}]}

``add`` counts for X, E and EE, ``infer`` for EE-KG, ``deprecate`` for D, ``null`` for all
five. Several lines for one (hash_id, model) add up.

Gold filter ``llm-asserted``: our releases record per triple ``asserted_operations``, the
operations the configured judging rule accepted (``curation.rules``); where a triple has
that field and no assessor is named, it decides. Otherwise (the authors' files) the
verdict of the named assessor per prompt type decides, by default the authors'
evaluation setting (:data:`DEFAULT_ASSESSORS`).
"""

from __future__ import annotations

import gzip
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec

from emerge_lib.core.errors import InputError
from emerge_lib.formats.format import OP_NAMES

#: Operation codes in table order, and the release names they stand for.
OPS: tuple[str, ...] = tuple(OP_NAMES)
RELEASE_TO_OP: dict[str, str] = {name: op for op, name in OP_NAMES.items()}
OP_TITLES: dict[str, str] = {"X": "X-Triples", "E": "E-Triples", "EE": "EE-Triples",
                             "EE-KG": "EE-KG-Triples", "D": "D-Triples"}

#: A prediction's ``operation`` → the operations it counts for.
OPERATION_OPS: dict[str | None, frozenset[str]] = {
    "add": frozenset({"X", "E", "EE"}),
    "infer": frozenset({"EE-KG"}),
    "deprecate": frozenset({"D"}),
    None: frozenset(OPS),
}
ASSERTION, DEPRECATION = "triple_assertion", "triple_deprecation"
#: The authors' evaluation setting: the 405B model (prompt v1) judges every operation.
#: Their released files name the v1 entries without a suffix (facts/authors-pipeline.md §7),
#: their configuration with it: a name is looked up exactly first, then under the other
#: spelling (``assessor_aliases``), never mixed with another judge's verdicts.
DEFAULT_ASSESSORS: dict[str, str] = {ASSERTION: "Meta-Llama-3.1-405B",
                                     DEPRECATION: "Meta-Llama-3.1-405B"}
DEFAULT_ANNOTATOR = "annotator_1"
#: auto (the default): llm-asserted when the gold carries the verdicts it needs (our curated
#: releases, the authors' files: the paper's Tables 3 and 4), else all
GOLD_FILTERS = ("auto", "all", "llm-asserted", "human")
_DATE = re.compile(r"^(\d{4})-(\d{2})-(\d{2})")


def prompt_type(op: str) -> str:
    """The verdict that decides an operation: deprecation for D, assertion otherwise."""
    return DEPRECATION if op == "D" else ASSERTION


def assessor_aliases(name: str) -> tuple[str, str]:
    """The name, then its other spelling: ``Meta-Llama-3.1-405B_prompt_v1`` ↔
    ``Meta-Llama-3.1-405B`` (the authors' configuration and files name one judge so)."""
    if name.endswith("_prompt_v1"):
        return name, name.removesuffix("_prompt_v1")
    return name, name + "_prompt_v1"


@dataclass(slots=True)
class GoldTriple:
    triple: tuple[str, str, str]
    labels: tuple[str, str, str]
    ops: tuple[str, ...]
    #: (llm_name, prompt type) → verdict (the first element of that name and type)
    llm: dict[tuple[str, str], bool] = field(default_factory=dict)
    #: (annotator name, prompt type) → verdict
    human: dict[tuple[str, str], bool] = field(default_factory=dict)
    #: our releases' ``asserted_operations`` (op codes); None when the field is null (not
    #: curated, or a verdict missing or unparsed), or absent (``has_asserted`` False)
    asserted: frozenset[str] | None = None
    has_asserted: bool = False

    def llm_accepts(self, op: str, assessors: Mapping[str, str] | None) -> bool:
        """Did the LLM assessment accept this triple for ``op``? With ``assessors`` (or
        without our ``asserted_operations`` field): the verdict of the named assessor
        for ``op``'s prompt type, a missing verdict being false (the authors' rule);
        otherwise the field, which encodes the release's configured judging rules."""
        if assessors is None and self.has_asserted:
            return self.asserted is not None and op in self.asserted
        kind = prompt_type(op)
        for name in assessor_aliases((assessors or DEFAULT_ASSESSORS)[kind]):
            if (name, kind) in self.llm:
                return self.llm[(name, kind)] is True
        return False


@dataclass(slots=True, frozen=True)
class Predicted:
    """One predicted triple: QIDs (or None), labels (or None), the operations it counts for."""

    triple: tuple[str, str, str] | None
    labels: tuple[str, str, str] | None
    ops: frozenset[str]


@dataclass(slots=True)
class Instance:
    hash_id: str
    snapshot: str  # YYYY-MM-DD of delta_dates[0]
    passage: str
    triples: list[GoldTriple]
    source: str  # file:line
    #: in-record predictions blocks (the authors' format): model → predicted triples
    predictions: dict[str, list[Predicted]] = field(default_factory=dict)
    delta_end: str | None = None
    #: when the line's passage appeared: the revision's instant (ISO 8601, as written)
    revision_date: str | None = None

    @property
    def year(self) -> str:
        return self.snapshot[:4]

    def gold(self, op: str, gold_filter: str = "all",
             assessors: Mapping[str, str] | None = None,
             annotator: str = DEFAULT_ANNOTATOR) -> list[GoldTriple]:
        """The operation's gold set: the triples listing ``op`` that pass the filter, each
        (s, p, o) once. ``assessors`` None: our ``asserted_operations`` where a triple has
        it, else the authors' assessors (:data:`DEFAULT_ASSESSORS`)."""
        out: dict[tuple[str, str, str], GoldTriple] = {}
        kind = prompt_type(op)
        for t in self.triples:
            if op not in t.ops or t.triple in out:
                continue
            if gold_filter == "llm-asserted":
                if not t.llm_accepts(op, assessors):
                    continue
            elif gold_filter == "human":
                if t.human.get((annotator, kind)) is not True:
                    continue
            elif gold_filter != "all":
                raise InputError(f"unknown gold filter {gold_filter!r}; use one of {GOLD_FILTERS}")
            out[t.triple] = t
        return list(out.values())


def llm_filter_problem(instances: Sequence[Instance],
                       assessors: Mapping[str, str] | None) -> str | None:
    """Why an LLM filter would accept nothing (and silently empty the gold sets), or None.

    Triples carrying our ``asserted_operations`` (with no assessor named) need at least
    one that is not null (a release that was never curated has them all null); the
    others need at least one verdict by the assessor named for each prompt type."""
    by_field = curated = 0
    seen: set[tuple[str, str]] = set()
    needed: set[str] = set()
    for inst in instances:
        for t in inst.triples:
            if assessors is None and t.has_asserted:
                by_field += 1
                curated += t.asserted is not None
                continue
            seen.update(t.llm)
            needed.update(prompt_type(op) for op in t.ops)
    if by_field and not curated:
        return ("every asserted_operations in the gold is null: the release was not "
                "curated (curate it: emerge curate --warehouse WH --out DIR rewrites it), or "
                "name the verdicts "
                "to use with --assertion-assessor/--deprecation-assessor")
    assessors = assessors or DEFAULT_ASSESSORS
    for kind in (ASSERTION, DEPRECATION):
        if kind not in needed:
            continue
        if not any((name, kind) in seen for name in assessor_aliases(assessors[kind])):
            names = sorted({n for n, k in seen if k == kind})
            return (f"no gold triple has a {kind} verdict by {assessors[kind]!r}; the gold "
                    f"files have {names or 'no LLM assessments'} (choose one with "
                    f"--{'assertion' if kind == ASSERTION else 'deprecation'}-assessor)")
    return None


def resolve_gold_filter(gold_filter: str, instances: Sequence[Instance],
                        assessors: Mapping[str, str] | None) -> str:
    """``auto`` → ``llm-asserted`` when the gold carries the LLM verdicts it needs, else
    ``all``; any other filter as it is."""
    if gold_filter != "auto":
        return gold_filter
    return "all" if llm_filter_problem(instances, assessors) else "llm-asserted"


# --- files -------------------------------------------------------------------------------


def _lines(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """Each JSON object of a JSONL file (or .jsonl.gz) with its line number; a line that
    is not UTF-8, not JSON or nested too deep is one error naming the file and the line
    (they were a bare decode error and a RecursionError)."""
    decoder = msgspec.json.Decoder()
    with gzip.open(path, "rb") if path.suffix == ".gz" else path.open("rb") as fh:
        for n, raw in enumerate(fh, 1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise InputError(f"{path}:{n}: not UTF-8 text (byte {exc.start} of the line); "
                                 "expected JSON lines") from None
            if not line.strip():
                continue
            try:
                obj = decoder.decode(line)
            except msgspec.DecodeError as exc:
                raise InputError(f"{path}:{n}: not a JSON line ({exc})") from None
            except RecursionError:
                raise InputError(f"{path}:{n}: a JSON line nested too deep") from None
            if not isinstance(obj, dict):
                raise InputError(f"{path}:{n}: expected a JSON object per line")
            yield n, obj


def gold_files(path: str | Path) -> list[Path]:
    """The JSONL files a gold path stands for (see the module docstring)."""
    p = Path(path)
    if p.is_file():
        return [p]
    if not p.is_dir():
        raise InputError(f"gold: {p} does not exist")
    root = p
    for candidate in (p / "evaluation_set", p / "data" / "evaluation_set"):
        if candidate.is_dir():
            root = candidate
            break
    files = sorted(root.glob("snapshot_*/delta_*.jsonl")) or sorted(
        root.glob("snapshot_*/delta_*.jsonl.gz")) or sorted(
        root.glob("corpus/snapshot_*/delta_*.jsonl"))
    if not files:
        files = sorted(f for f in root.glob("*.jsonl*") if f.suffix in (".jsonl", ".gz"))
    if not files:
        raise InputError(f"gold: no EMERGE JSONL under {root} (expected snapshot_*/delta_*.jsonl, "
                         "an evaluation_set/ or corpus/ folder, or *.jsonl files)")
    return files


def _date_of(value: Any, where: str) -> str:
    m = _DATE.match(value) if isinstance(value, str) else None
    if not m:
        raise InputError(f"{where}: delta_dates[0] {value!r} is not an ISO 8601 date")
    return m.group(0)


def _labels(value: Any, fallback: Sequence[str]) -> tuple[str, str, str]:
    vals = list(value) if isinstance(value, list | tuple) and len(value) == 3 else [None] * 3
    return tuple(str(v) if v is not None else str(f) for v, f in zip(vals, fallback, strict=True))


def _gold_triple(t: Mapping[str, Any], where: str) -> GoldTriple:
    triple = t.get("triple")
    if not isinstance(triple, list | tuple) or len(triple) != 3:
        raise InputError(f"{where}: a tkgu_triples entry has no [s, p, o] triple")
    spo = tuple(str(x) for x in triple)
    ops = []
    for name in t.get("tkgu_operations") or ():
        if name not in RELEASE_TO_OP:
            raise InputError(f"{where}: unknown operation {name!r} for {spo}")
        ops.append(RELEASE_TO_OP[name])
    llm: dict[tuple[str, str], bool] = {}
    for a in t.get("llm_assessment") or ():
        if isinstance(a, Mapping) and a.get("llm_name") and a.get("llm_prompt_type"):
            verdict = a.get("llm_assessment")
            if isinstance(verdict, bool):  # the first of a name and type, as theirs reads
                llm.setdefault((str(a["llm_name"]), str(a["llm_prompt_type"])), verdict)
    human: dict[tuple[str, str], bool] = {}
    for a in t.get("human_assessment") or ():
        if isinstance(a, Mapping) and a.get("annotator_name") and a.get("prompt_type"):
            verdict = a.get("assessment")
            if isinstance(verdict, bool):
                human[(str(a["annotator_name"]), str(a["prompt_type"]))] = verdict
    has_asserted = "asserted_operations" in t
    asserted = None
    if has_asserted and t["asserted_operations"] is not None:
        names = t["asserted_operations"]
        if not isinstance(names, list | tuple) or any(n not in RELEASE_TO_OP for n in names):
            raise InputError(f"{where}: asserted_operations {names!r} of {spo} is not a list "
                             "of operation names")
        asserted = frozenset(RELEASE_TO_OP[n] for n in names)
    return GoldTriple(spo, _labels(t.get("triple_labels"), spo), tuple(ops), llm, human,
                      asserted, has_asserted)


def instance_from_record(record: Mapping[str, Any], where: str,
                         snapshot_hint: str | None = None) -> Instance:
    """One gold instance from one EMERGE line (ours or the authors')."""
    hid = record.get("hash_id")
    if not isinstance(hid, str) or not hid:
        raise InputError(f"{where}: {_not_a_string('hash_id', hid, 'hash_id' in record)}")
    dates = record.get("delta_dates")
    if isinstance(dates, list | tuple) and dates:
        snapshot = _date_of(dates[0], where)
        end = _date_of(dates[1], where) if len(dates) > 1 else None
    elif snapshot_hint:
        snapshot, end = snapshot_hint, None
    else:
        raise InputError(f"{where}: no delta_dates (and the file is not in a snapshot_* folder)")
    triples = [_gold_triple(t, where) for t in record.get("tkgu_triples") or ()]
    revised = record.get("revision_date")
    inst = Instance(hid, snapshot, str(record.get("passage") or ""), triples, where,
                    delta_end=end, revision_date=revised if isinstance(revised, str) else None)
    blocks = record.get("predictions")
    if isinstance(blocks, Mapping):
        for model, block in blocks.items():
            inst.predictions[str(model)] = list(block_predictions(str(model), block, where))
    return inst


def read_gold(paths: str | Path | Iterable[str | Path]) -> list[Instance]:
    """Every instance of the gold paths; a hash_id seen twice is an error (predictions
    are matched to instances by it)."""
    if isinstance(paths, str | Path):
        paths = [paths]
    out: list[Instance] = []
    seen: dict[str, str] = {}
    for path in paths:
        for f in gold_files(path):
            m = re.match(r"snapshot_(\d{4}-\d{2}-\d{2})", f.parent.name)
            hint = m.group(1) if m else None
            for n, record in _lines(f):
                inst = instance_from_record(record, f"{f}:{n}", hint)
                if inst.hash_id in seen:
                    raise InputError(f"{f}:{n}: hash_id {inst.hash_id} also at "
                                     f"{seen[inst.hash_id]}; predictions could not be matched")
                seen[inst.hash_id] = inst.source
                out.append(inst)
    return out


# --- predictions -------------------------------------------------------------------------


def _spo(value: Any) -> tuple[str, str, str] | None:
    if isinstance(value, list | tuple) and len(value) == 3 and all(
            isinstance(v, str) and v for v in value):
        return (value[0], value[1], value[2])
    return None


def _valid_qids(value: Any) -> tuple[str, str, str] | None:
    """A Q/P/Q triple, or None (the authors' scorer drops '--NME--' and other non-ids)."""
    spo = _spo(value)
    if spo and spo[0].startswith("Q") and spo[1].startswith("P") and spo[2].startswith("Q"):
        return spo
    return None


def _underscores(labels: Any, positions: Sequence[int] = (0, 1, 2)) -> tuple[str, str, str] | None:
    spo = _spo(labels)
    if spo is None:
        return None
    return tuple(s.replace("_", " ") if i in positions else s for i, s in enumerate(spo))


FOUR_ADDITIONS = frozenset({"X", "E", "EE", "EE-KG"})


def block_predictions(model: str, block: Any, where: str) -> Iterator[Predicted]:
    """The predicted triples of one in-record block of the authors' format, with the
    operations their evaluation gives them (``preloader.py`` of their repository):

    - ``edc`` (EDC+): ``predicted_triples_oie`` ``oie_add`` → X, E, EE; ``oie_deprecate``
      → D; ``oie_not_in_text`` → EE-KG (labels with ``_`` read as spaces);
    - ``edc-original``: ``oie_add`` → X, E, EE, EE-KG;
    - ``relik``: ``relik-cie`` → QIDs (``triple_qids``) with the ``extracted_relation``
      text, X and E; any other relik model → the text, X, E, EE, EE-KG;
    - ``kg-gen``, ``rebel``, ``rakg``: ``extracted_relation`` → X, E, EE, EE-KG;
    - ``llm-tool``: ``predicted_x_triples`` … ``predicted_d_triples`` with labels and QIDs.
    """
    if not isinstance(block, Mapping) or not block:
        return
    kind = block.get("model_type")
    if kind in ("edc", "edc-original"):
        oie = block.get("predicted_triples_oie") or {}
        parts = ({"oie_add": FOUR_ADDITIONS} if kind == "edc-original" else
                 {"oie_add": OPERATION_OPS["add"], "oie_deprecate": OPERATION_OPS["deprecate"],
                  "oie_not_in_text": OPERATION_OPS["infer"]})
        for key, ops in parts.items():
            for t in oie.get(key) or ():
                labels = _underscores(t)
                if labels:
                    yield Predicted(None, labels, ops)
    elif kind == "relik":
        cie = model == "relik-cie"
        for t in block.get("predicted_triples") or ():
            labels = _spo(t.get("extracted_relation"))
            if cie:
                qids = _valid_qids(t.get("triple_qids"))
                if qids:
                    yield Predicted(qids, labels, frozenset({"X", "E"}))
            elif labels:
                yield Predicted(None, labels, FOUR_ADDITIONS)
    elif kind in ("kg-gen", "rebel", "rakg"):
        for t in block.get("predicted_triples") or ():
            labels = _spo(t.get("extracted_relation"))
            if labels:
                yield Predicted(None, labels, FOUR_ADDITIONS)
    elif kind == "llm-tool":
        for op, name in OP_NAMES.items():
            for t in block.get(f"predicted_{name.replace('-', '_')}") or ():
                yield Predicted(_valid_qids(t.get("triple_qids")),
                                _underscores(t.get("triple_labels"), (0, 2)), frozenset({op}))
    else:
        raise InputError(f"{where}: predictions of {model!r} have an unknown model_type "
                         f"{kind!r} (known: edc, edc-original, relik, kg-gen, rebel, rakg, "
                         "llm-tool)")


def prediction_from_json(item: Any, where: str) -> Predicted:
    if not isinstance(item, Mapping):
        raise InputError(f"{where}: a predicted entry is not an object")
    op = item.get("operation")
    if op not in OPERATION_OPS:
        raise InputError(f"{where}: operation {op!r} is not add, infer, deprecate or null")
    triple = item.get("triple")
    spo = _spo(triple) if triple is not None else None
    if triple is not None and spo is None:
        raise InputError(f"{where}: triple {triple!r} is not [s, p, o] or null")
    labels = item.get("triple_labels")
    lab = None
    if labels is not None:
        if not isinstance(labels, list | tuple) or len(labels) != 3:
            raise InputError(f"{where}: triple_labels {labels!r} is not [head, relation, tail]")
        lab = tuple("" if v is None else str(v) for v in labels)
    if spo is None and lab is None:
        raise InputError(f"{where}: a predicted entry has neither a triple nor labels")
    return Predicted(spo, lab, OPERATION_OPS[op])


def _not_a_string(name: str, value: Any, present: bool) -> str:
    """What is wrong with a field that must be a non-empty string: absent, or its type."""
    if not present:
        return f"no {name}"
    if isinstance(value, str):
        return f"{name} is empty"
    return f"{name} {msgspec.json.encode(value).decode()[:40]} is a JSON {_json_type(value)}, not a string"


def _json_type(value: Any) -> str:
    return ("null" if value is None else "boolean" if isinstance(value, bool) else
            "number" if isinstance(value, int | float) else "array" if isinstance(value, list)
            else "object" if isinstance(value, dict) else type(value).__name__)


def read_predictions(paths: str | Path | Iterable[str | Path]
                     ) -> dict[str, dict[str, list[Predicted]]]:
    """model → hash_id → predicted triples, from our predictions JSONL files."""
    if isinstance(paths, str | Path):
        paths = [paths]
    out: dict[str, dict[str, list[Predicted]]] = {}
    for path in paths:
        p = Path(path)
        if not p.is_file():
            raise InputError(f"predictions: {p} is not a file")
        for n, obj in _lines(p):
            where = f"{p}:{n}"
            hid, model = obj.get("hash_id"), obj.get("model")
            for name, value in (("hash_id", hid), ("model", model)):
                if not isinstance(value, str) or not value:
                    raise InputError(f"{where}: a predictions line needs a hash_id and a "
                                     f"model: {_not_a_string(name, value, name in obj)}")
            predicted = obj.get("predicted")
            if not isinstance(predicted, list):
                raise InputError(f"{where}: 'predicted' must be a list")
            bucket = out.setdefault(model, {}).setdefault(hid, [])
            bucket.extend(prediction_from_json(item, where) for item in predicted)
    return out


def prediction_line(hash_id: str, model: str, predicted: Iterable[Predicted | Mapping[str, Any]]
                    ) -> dict[str, Any]:
    """One predictions line in our format (what the baseline adapters write)."""
    items = []
    for p in predicted:
        if isinstance(p, Mapping):
            items.append(dict(p))
            continue
        for op in operations_for(p.ops):
            items.append({"triple": list(p.triple) if p.triple else None,
                          "triple_labels": list(p.labels) if p.labels else None,
                          "operation": op})
    return {"hash_id": hash_id, "model": model, "predicted": items}


def operations_for(ops: frozenset[str]) -> list[str | None]:
    """The ``operation`` values whose operations together are exactly ``ops``: one value
    where one fits, ``add`` and ``infer`` for X, E, EE and EE-KG (ReLiK RE)."""
    for name, covered in OPERATION_OPS.items():
        if covered == ops:
            return [name]
    parts = [name for name, covered in OPERATION_OPS.items() if name and covered <= ops]
    if frozenset().union(*(OPERATION_OPS[n] for n in parts)) != ops:
        raise ValueError(f"operations {sorted(ops)} cannot be written as add/infer/deprecate")
    return parts
