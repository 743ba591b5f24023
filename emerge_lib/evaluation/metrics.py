"""Recall and completeness per operation, instance by instance, and their micro-averages.

- An operation's gold set in an instance: its ``tkgu_triples`` whose ``tkgu_operations``
  contain the operation (a two-operation triple counts for both), each (s, p, o) once,
  after the gold filter (``all``, ``llm-asserted``, ``human``; see :mod:`.data`).
- A gold triple is matched only against the predictions of its own instance that count
  for the operation (``add`` → X, E, EE; ``infer`` → EE-KG; ``deprecate`` → D; ``null`` →
  all five).
- Recall (Appendix A.1): the gold triple's QIDs equal some predicted triple's QIDs.
- Completeness (Appendix A.2): some predicted triple's text has cosine similarity ≥ the
  threshold (0.9) with the gold triple's text; texts are the lower-cased, space-joined
  labels (:func:`.embed.triple_text`), embedded by all-mpnet-base-v2.
- Summary values are micro-averages: matched gold triples / gold triples of the group
  (model, operation, snapshot year or date, or all snapshots).
- The authors' QID precision, recall and F1 (``qid_precision``, ``qid_recall``,
  ``qid_f1``: their ``calculate_cie_exact_match``, :func:`qid_prf`) are per-instance values
  averaged over instances, as their tables average them; an instance counts for an
  operation when its gold lists the operation *before* the gold filter (their preloader
  makes the row then, src/evaluation/preloader/preloader_emerge.py:231,362-384), so an
  instance whose gold triples the filter all removed scores 0.
- Prediction-side completeness (``pred_completeness``, their completeness scorer's
  ``max_scores_pred``): each distinct predicted label triple that counts for the
  operation is matched when its best cosine over the *filtered* gold triples of its
  instance reaches the threshold (src/evaluation/scorers/completeness_scorer.py:160-168:
  the max runs over the rows the verdicts mask in; none masked in: 0); the value is
  matched / predicted triples of the group.

An instance a model has no predictions for counts with empty predictions (it scores 0),
unless ``only_predicted`` restricts a model to the instances it predicted.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from emerge_lib.evaluation.data import (
    DEFAULT_ANNOTATOR,
    GOLD_FILTERS,
    OPS,
    Instance,
    Predicted,
    resolve_gold_filter,
)
from emerge_lib.evaluation.embed import Embedder, triple_text
from emerge_lib.formats.format import instant

METRICS = ("recall", "completeness")
#: the authors' per-instance QID exact match (cie_exact_match_scorer.py)
QID_METRICS = ("qid_precision", "qid_recall", "qid_f1")
PRED_COMPLETENESS = "pred_completeness"
#: every metric emerge computes, in the order tables are written (the default)
ALL_METRICS = (*METRICS, *QID_METRICS, PRED_COMPLETENESS)
#: what a metric reads of a prediction: QIDs or labels (``zero_by_construction``)
READS = {"recall": "qid", "completeness": "labels", "qid_precision": "qid",
         "qid_recall": "qid", "qid_f1": "qid", PRED_COMPLETENESS: "labels"}
#: the unit a metric averages over, as summary rows and CSV columns count it
COUNTS = {"recall": "n_gold", "completeness": "n_gold", "qid_precision": "n_instances",
          "qid_recall": "n_instances", "qid_f1": "n_instances", PRED_COMPLETENESS: "n_pred"}


#: how scores are grouped into columns (``Settings.snapshot_key``, ``emerge evaluate --by``)
SNAPSHOT_KEYS = ("year", "date", "delta")


@dataclass
class Settings:
    metrics: tuple[str, ...] = ALL_METRICS
    threshold: float = 0.9
    gold_filter: str = "auto"
    #: llm-asserted: llm_name per prompt type; None = our releases' asserted_operations
    #: where a triple has it, else the authors' assessors (DEFAULT_ASSESSORS)
    assessors: Mapping[str, str] | None = None
    annotator: str = DEFAULT_ANNOTATOR
    snapshot_key: str = "year"  # or "date", or "delta" (a snapshot's window: t→τ_k)
    only_predicted: bool = False
    models: tuple[str, ...] = ()  # empty: every model found
    #: a model's training cutoff (a date or instant): only lines whose passage appeared
    #: after it are scored (a contamination filter; None: every line)
    after: str | None = None
    #: bootstrap resamples for each value's 95 % interval (0: none); seeded by ``seed``
    bootstrap: int = 0
    seed: int = 0

    def __post_init__(self) -> None:
        bad = [m for m in self.metrics if m not in ALL_METRICS]
        if bad or not self.metrics:
            raise ValueError(f"metrics must be among {ALL_METRICS}, got {list(self.metrics)}")
        if self.gold_filter not in GOLD_FILTERS:
            raise ValueError(f"gold filter must be one of {GOLD_FILTERS}")
        if self.snapshot_key not in SNAPSHOT_KEYS:
            raise ValueError(f"snapshot_key must be one of {SNAPSHOT_KEYS}")
        if not 0 <= self.threshold <= 1:
            raise ValueError("the threshold is a cosine similarity in [0, 1]")
        if self.bootstrap < 0:
            raise ValueError("bootstrap resamples must be 0 (none) or more")
        if self.after is not None:
            instant(self.after)


@dataclass(slots=True)
class InstanceScore:
    model: str
    hash_id: str
    snapshot: str
    op: str
    #: gold triples after the filter; 0 on a row that only the authors' per-instance
    #: metrics count (the filter removed every gold triple of the operation)
    n_gold: int
    recall_hits: int | None
    completeness_hits: int | None
    predicted: bool
    #: the bootstrap's stratum: the instance's snapshot and delta (``t→τ_k``), whatever
    #: the column (``snapshot``) is
    stratum: str = ""
    #: the authors' (precision, recall, F1) on QID triples (:func:`qid_prf`)
    qid: tuple[float, float, float] | None = None
    #: prediction-side completeness: matched and distinct predicted label triples
    pred_hits: int | None = None
    n_pred: int = 0

    def pair(self, metric: str) -> tuple[float, float] | None:
        """(numerator, denominator) this row adds to a group's value of ``metric``, or
        None when it does not count for it."""
        if metric in QID_METRICS:
            return None if self.qid is None else (self.qid[QID_METRICS.index(metric)], 1.0)
        if metric == PRED_COMPLETENESS:
            return None if self.pred_hits is None or not self.n_pred else \
                (self.pred_hits, self.n_pred)
        hits = getattr(self, f"{metric}_hits")
        return None if hits is None or not self.n_gold else (hits, self.n_gold)

    @classmethod
    def from_dict(cls, d: Mapping[str, object]) -> InstanceScore:
        """A row of instances.jsonl back (what ``emerge evaluate --compare`` reads)."""

        def count(key: str) -> int | None:
            v = d.get(key)
            return int(v) if isinstance(v, int | float) else None

        def share(key: str) -> float:
            v = d.get(key)
            return float(v) if isinstance(v, int | float) else 0.0

        qid = (share("qid_precision"), share("qid_recall"), share("qid_f1")) \
            if "qid_precision" in d else None
        return cls(str(d["model"]), str(d["hash_id"]), str(d["snapshot"]), str(d["operation"]),
                   count("n_gold") or 0, count("recall_hits"), count("completeness_hits"),
                   bool(d.get("predicted")), str(d.get("stratum", "")), qid,
                   count("pred_hits"), count("n_pred") or 0)

    def to_dict(self) -> dict:
        d = {"model": self.model, "hash_id": self.hash_id, "snapshot": self.snapshot,
             "stratum": self.stratum, "operation": self.op, "n_gold": self.n_gold,
             "predicted": self.predicted}
        for m in METRICS:
            hits = getattr(self, f"{m}_hits")
            if hits is not None and self.n_gold:
                d[f"{m}_hits"] = hits
                d[m] = hits / self.n_gold
        if self.qid is not None:
            d.update(zip(QID_METRICS, self.qid, strict=True))
        if self.pred_hits is not None:
            d["pred_hits"], d["n_pred"] = self.pred_hits, self.n_pred
            if self.n_pred:
                d[PRED_COMPLETENESS] = self.pred_hits / self.n_pred
        return d


def valid_qid_triple(triple: Sequence[object]) -> bool:
    """A predicted triple the authors' exact match keeps: Q…, P…, Q…, none empty or
    ``--NME--``/``NME`` (cie_exact_match_scorer.py:7-17)."""
    if len(triple) != 3 or any(x is None for x in triple):
        return False
    h, r, t = (str(x) for x in triple)
    if any(x in ("", "--NME--", "NME") for x in (h, r, t)):
        return False
    return h.startswith("Q") and r.startswith("P") and t.startswith("Q")


def qid_prf(gold: Iterable[tuple[str, str, str]], predicted: Iterable[tuple[str, str, str]]
            ) -> tuple[float, float, float]:
    """One instance's precision, recall and F1 on QID triples, exactly the authors'
    ``calculate_cie_exact_match`` (src/evaluation/scorers/cie_exact_match_scorer.py):
    the filtered gold and the valid predictions as sets (:54-64); both empty: 0, 0, 0
    (:67-68); otherwise tp = |gold ∩ predicted|, precision tp/|predicted| (0 with no
    prediction), recall tp/|gold| (0 with no gold), F1 their harmonic mean (0 when both
    are 0) (:69-73)."""
    gt = set(gold)
    pred = {tuple(p) for p in predicted if valid_qid_triple(p)}
    if not gt and not pred:
        return 0.0, 0.0, 0.0
    tp = len(gt & pred)
    precision = tp / len(pred) if pred else 0.0
    recall = tp / len(gt) if gt else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall > 0 else 0.0
    return precision, recall, f1


def model_predictions(instances: Sequence[Instance],
                      external: Mapping[str, Mapping[str, list[Predicted]]],
                      models: Sequence[str] = ()) -> dict[str, dict[str, list[Predicted]]]:
    """model → hash_id → predictions, from the predictions files and the in-record blocks
    (both, when a model has both)."""
    out: dict[str, dict[str, list[Predicted]]] = {m: dict(v) for m, v in external.items()}
    for inst in instances:
        for model, preds in inst.predictions.items():
            bucket = out.setdefault(model, {})
            bucket[inst.hash_id] = bucket.get(inst.hash_id, []) + preds
    if models:
        missing = [m for m in models if m not in out]
        if missing:
            raise KeyError(f"no predictions of {missing}; found {sorted(out)}")
        out = {m: out[m] for m in models}
    return out


def zero_by_construction(predictions: Mapping[str, Mapping[str, list[Predicted]]],
                         known: Iterable[str], metrics: Sequence[str] = METRICS
                         ) -> set[tuple[str, str, str]]:
    """(model, operation, metric) a model cannot score on, whatever the gold: it predicted
    triples for the gold's instances, but none that counts for the operation with what the
    metric reads (QIDs for recall, labels for completeness) — e.g. a closed-IE model under
    the operations it never outputs, or an open-IE model under recall. A model with no
    predicted triple at all is not in it (its zeros are its result)."""
    known = set(known)
    out: set[tuple[str, str, str]] = set()
    for model, by_hash in predictions.items():
        reach: dict[str, set[str]] = {"qid": set(), "labels": set()}
        any_pred = False
        for hid, preds in by_hash.items():
            if hid not in known:
                continue
            for p in preds:
                any_pred = True
                if p.triple is not None:
                    reach["qid"] |= p.ops
                if p.labels is not None:
                    reach["labels"] |= p.ops
        if any_pred:
            out |= {(model, op, m) for m in metrics for op in OPS
                    if op not in reach[READS[m]]}
    return out


def _key(inst: Instance, how: str) -> str:
    """The column an instance's score goes to: its snapshot's year, its snapshot's date,
    or its delta (``2024-01-01→2024-01-15``: the snapshot and its window's end; per-delta
    behaviour is the benchmark's point, the paper's tables are per year)."""
    if how == "year":
        return inst.year
    if how == "delta":
        return f"{inst.snapshot}→{inst.delta_end or '?'}"
    return inst.snapshot


def score(instances: Sequence[Instance], predictions: Mapping[str, Mapping[str, list[Predicted]]],
          settings: Settings, embedder: Embedder | None = None,
          progress: Callable[[str, int, int | None], object] | None = None
          ) -> list[InstanceScore]:
    """Per (model, instance, operation) scores for every gold set that is not empty (for
    the authors' per-instance metrics: not empty before the gold filter).

    ``predictions`` is model → hash_id → predicted triples (see
    :func:`model_predictions`). ``progress(stage, advance, total)`` is called as texts
    are embedded (``embed``) and instances scored (``score``).
    """
    wanted = set(settings.metrics)
    want_c = bool(wanted & {"completeness", PRED_COMPLETENESS})
    if want_c and embedder is None:
        raise ValueError("completeness needs an embedder")
    authors = bool(wanted & {*QID_METRICS, PRED_COMPLETENESS})
    gold_filter = resolve_gold_filter(settings.gold_filter, instances, settings.assessors)
    golds: list[dict[str, list]] = []
    listed: list[tuple[str, ...]] = []  # the operations an instance's gold lists, unfiltered
    for inst in instances:
        golds.append({op: g for op in OPS if (g := inst.gold(
            op, gold_filter, settings.assessors, settings.annotator))})
        listed.append(tuple(op for op in OPS if inst.gold(op, "all")) if authors
                      else tuple(golds[-1]))

    if want_c:
        assert embedder is not None
        _embed(instances, golds, predictions, embedder, progress)

    out: list[InstanceScore] = []
    if progress:
        progress("score", 0, len(instances) * max(1, len(predictions)))
    for model, by_hash in predictions.items():
        for inst, gold, ops in zip(instances, golds, listed, strict=True):
            if progress:
                progress("score", 1, None)
            preds = by_hash.get(inst.hash_id)
            if not ops or (settings.only_predicted and preds is None):
                continue
            out += _instance(model, inst, gold, ops, preds, settings, wanted,
                             embedder if want_c else None)
    return out


def _embed(instances: Sequence[Instance], golds: Sequence[Mapping[str, list]],
           predictions: Mapping[str, Mapping[str, list[Predicted]]], embedder: Embedder,
           progress: Callable[[str, int, int | None], object] | None) -> None:
    """Embed every text completeness can compare: the filtered gold triples and the
    labelled predictions of the instances that have some."""
    texts: dict[str, None] = {}
    for inst, gold in zip(instances, golds, strict=True):
        if not gold:
            continue
        for g in gold.values():
            for t in g:
                texts.setdefault(triple_text(t.labels))
        for preds in predictions.values():
            for p in preds.get(inst.hash_id, ()):
                if p.labels is not None:
                    texts.setdefault(triple_text(p.labels))
    todo = list(texts)
    if progress:
        progress("embed", 0, len(todo))
    previous = embedder.progress
    if progress:
        embedder.progress = lambda n: progress("embed", n, None)
    try:
        embedder.add(todo)
    finally:
        embedder.progress = previous


def _instance(model: str, inst: Instance, gold: Mapping[str, list], ops: Sequence[str],
              preds: list[Predicted] | None, settings: Settings, wanted: set[str],
              embedder: Embedder | None) -> list[InstanceScore]:
    """One model's scores on one instance, an InstanceScore per operation in ``ops``."""
    has_preds = preds is not None
    preds = preds or []
    snap = _key(inst, settings.snapshot_key)
    sims = gold_index = None
    labelled: list[Predicted] = []
    if embedder is not None:
        labelled = [p for p in preds if p.labels is not None]
        gold_texts = list(dict.fromkeys(
            triple_text(t.labels) for g in gold.values() for t in g))
        gold_index = {t: i for i, t in enumerate(gold_texts)}
        if labelled and gold_texts:
            gi = np.fromiter((embedder.index(t) for t in gold_texts), dtype=np.int64)
            pi = np.fromiter((embedder.index(triple_text(p.labels)) for p in labelled),
                             dtype=np.int64)
            matrix = embedder.matrix
            sims = matrix[gi] @ matrix[pi].T
    out = []
    for op in ops:
        g = gold.get(op, [])
        row = InstanceScore(model, inst.hash_id, snap, op, len(g), None, None, has_preds,
                            _key(inst, "delta"))
        if g and "recall" in wanted:
            exact = {p.triple for p in preds if p.triple is not None and op in p.ops}
            row.recall_hits = sum(t.triple in exact for t in g)
        if embedder is not None:
            assert gold_index is not None
            # each distinct predicted label triple once, as the authors' set holds them
            cols = list({p.labels: j for j, p in enumerate(labelled) if op in p.ops}.values())
            rows = [gold_index[triple_text(t.labels)] for t in g]
            matched = sims[np.ix_(rows, cols)] >= settings.threshold \
                if sims is not None and rows and cols else None
            if g and "completeness" in wanted:
                row.completeness_hits = 0 if matched is None else int(matched.any(axis=1).sum())
            if PRED_COMPLETENESS in wanted:
                row.pred_hits = 0 if matched is None else int(matched.any(axis=0).sum())
                row.n_pred = len(cols)
        if wanted & set(QID_METRICS):
            row.qid = qid_prf((t.triple for t in g), (p.triple for p in preds
                                                       if p.triple is not None and op in p.ops))
        out.append(row)
    return out


def summarize(scores: Iterable[InstanceScore], metrics: Sequence[str] = METRICS
              ) -> list[dict]:
    """Summary rows ``{model, operation, snapshot, metric, value, n_gold}`` per snapshot and
    over all snapshots ("all"): each value the group's numerators over its denominators
    (:meth:`InstanceScore.pair`: micro-averages over gold triples for recall and
    completeness, over predicted triples for ``pred_completeness``, means over instances
    for the QID metrics, whose rows add ``n_instances``; ``pred_completeness`` rows add
    ``n_pred``)."""
    sums: dict[tuple[str, str, str, str], list[float]] = defaultdict(lambda: [0.0, 0.0, 0])
    for s in scores:
        for m in metrics:
            pair = s.pair(m)
            if pair is None:
                continue
            for snap in (s.snapshot, "all"):
                acc = sums[(s.model, s.op, snap, m)]
                acc[0] += pair[0]
                acc[1] += pair[1]
                acc[2] += s.n_gold
    order = {op: i for i, op in enumerate(OPS)}
    keys = sorted(sums, key=lambda k: (k[0], order[k[1]], k[2] == "all", k[2],
                                       metrics.index(k[3])))
    out = []
    for k in keys:
        model, op, snap, m = k
        num, den, n_gold = sums[k]
        row = {"model": model, "operation": op, "snapshot": snap, "metric": m,
               "value": num / den, "n_gold": int(n_gold)}
        if COUNTS[m] != "n_gold":
            row[COUNTS[m]] = int(den)
        out.append(row)
    return out
