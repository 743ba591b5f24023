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


#: how scores are grouped into columns (``Settings.snapshot_key``, ``emerge evaluate --by``)
SNAPSHOT_KEYS = ("year", "date", "delta")


@dataclass
class Settings:
    metrics: tuple[str, ...] = METRICS
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
        bad = [m for m in self.metrics if m not in METRICS]
        if bad or not self.metrics:
            raise ValueError(f"metrics must be among {METRICS}, got {list(self.metrics)}")
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
    n_gold: int
    recall_hits: int | None
    completeness_hits: int | None
    predicted: bool
    #: the bootstrap's stratum: the instance's snapshot and delta (``t→τ_k``), whatever
    #: the column (``snapshot``) is; not written to instances.jsonl
    stratum: str = ""

    def to_dict(self) -> dict:
        d = {"model": self.model, "hash_id": self.hash_id, "snapshot": self.snapshot,
             "operation": self.op, "n_gold": self.n_gold, "predicted": self.predicted}
        for m in METRICS:
            hits = getattr(self, f"{m}_hits")
            if hits is not None:
                d[f"{m}_hits"] = hits
                d[m] = hits / self.n_gold
        return d


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
        reach: dict[str, set[str]] = {"recall": set(), "completeness": set()}
        any_pred = False
        for hid, preds in by_hash.items():
            if hid not in known:
                continue
            for p in preds:
                any_pred = True
                if p.triple is not None:
                    reach["recall"] |= p.ops
                if p.labels is not None:
                    reach["completeness"] |= p.ops
        if any_pred:
            out |= {(model, op, m) for m in metrics for op in OPS if op not in reach[m]}
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
    """Per (model, instance, operation) scores for every gold set that is not empty.

    ``predictions`` is model → hash_id → predicted triples (see
    :func:`model_predictions`). ``progress(stage, advance, total)`` is called as texts
    are embedded (``embed``) and instances scored (``score``).
    """
    want_c = "completeness" in settings.metrics
    want_r = "recall" in settings.metrics
    if want_c and embedder is None:
        raise ValueError("completeness needs an embedder")
    gold_filter = resolve_gold_filter(settings.gold_filter, instances, settings.assessors)
    golds: list[dict[str, list]] = []
    for inst in instances:
        golds.append({op: g for op in OPS if (g := inst.gold(
            op, gold_filter, settings.assessors, settings.annotator))})

    if want_c:
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
        matrix = embedder.matrix

    out: list[InstanceScore] = []
    if progress:
        progress("score", 0, len(instances) * max(1, len(predictions)))
    for model, by_hash in predictions.items():
        for inst, gold in zip(instances, golds, strict=True):
            if progress:
                progress("score", 1, None)
            preds = by_hash.get(inst.hash_id)
            has_preds = preds is not None
            if not gold or (settings.only_predicted and not has_preds):
                continue
            preds = preds or []
            snap = _key(inst, settings.snapshot_key)
            sims = gold_index = pred_ops = None
            if want_c:
                labelled = [p for p in preds if p.labels is not None]
                gold_texts = list(dict.fromkeys(
                    triple_text(t.labels) for g in gold.values() for t in g))
                gold_index = {t: i for i, t in enumerate(gold_texts)}
                pred_ops = [p.ops for p in labelled]
                if labelled:
                    gi = np.fromiter((embedder.index(t) for t in gold_texts), dtype=np.int64)
                    pi = np.fromiter((embedder.index(triple_text(p.labels)) for p in labelled),
                                     dtype=np.int64)
                    sims = matrix[gi] @ matrix[pi].T
            for op, g in gold.items():
                r_hits = c_hits = None
                if want_r:
                    exact = {p.triple for p in preds if p.triple is not None and op in p.ops}
                    r_hits = sum(t.triple in exact for t in g)
                if want_c:
                    cols = [j for j, ops in enumerate(pred_ops) if op in ops]
                    if sims is None or not cols:
                        c_hits = 0
                    else:
                        rows = [gold_index[triple_text(t.labels)] for t in g]
                        best = sims[np.ix_(rows, cols)].max(axis=1)
                        c_hits = int((best >= settings.threshold).sum())
                out.append(InstanceScore(model, inst.hash_id, snap, op, len(g), r_hits, c_hits,
                                         has_preds, _key(inst, "delta")))
    return out


def summarize(scores: Iterable[InstanceScore], metrics: Sequence[str] = METRICS
              ) -> list[dict]:
    """Summary rows ``{model, operation, snapshot, metric, value, n_gold}``: micro-averages
    per snapshot and over all snapshots ("all")."""
    sums: dict[tuple[str, str, str, str], list[int]] = defaultdict(lambda: [0, 0])
    for s in scores:
        for m in metrics:
            hits = getattr(s, f"{m}_hits")
            if hits is None:
                continue
            for snap in (s.snapshot, "all"):
                acc = sums[(s.model, s.op, snap, m)]
                acc[0] += hits
                acc[1] += s.n_gold
    order = {op: i for i, op in enumerate(OPS)}
    keys = sorted(sums, key=lambda k: (k[0], order[k[1]], k[2] == "all", k[2],
                                       metrics.index(k[3])))
    return [{"model": model, "operation": op, "snapshot": snap, "metric": m,
             "value": sums[k][0] / sums[k][1], "n_gold": sums[k][1]}
            for k in keys for model, op, snap, m in [k]]
