"""95 % bootstrap intervals for the summary values (``emerge evaluate --bootstrap B``).

Each value is a ratio of sums over a cell's instances (model, operation, column):
matched / gold triples (recall, completeness), matched / predicted triples
(pred_completeness), or the instances' scores / instances (the authors' QID metrics). A resample draws, within each stratum (an instance's snapshot and
delta, ``t→τ_k``), as many instances as the stratum holds, with replacement; the drawn
instances carry every model's and operation's scores (a paired bootstrap: the models are
compared on the same draws). A cell's interval is the 2.5th and 97.5th percentiles of its
value over the ``B`` resamples (a resample that draws no gold triple of the cell is
skipped). Seeded: the same scores, ``B`` and seed give the same intervals.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator, Sequence

import numpy as np

from emerge_lib.evaluation.metrics import InstanceScore

#: (model, operation, column, metric) → (low, high), as fractions
Intervals = dict[tuple[str, str, str, str], tuple[float, float]]
LEVEL = 0.95


BATCH = 64  # resamples drawn at a time: b x instances counts never held at once


def resample_counts(strata: Sequence[str], b: int, seed: int) -> Iterator[np.ndarray]:
    """Batches of (resamples × instances): how often each instance is drawn, per resample,
    each stratum resampled on its own (its size kept); ``b`` rows in all."""
    rng = np.random.default_rng(seed)
    members: dict[str, list[int]] = defaultdict(list)
    for i, stratum in enumerate(strata):
        members[stratum].append(i)
    groups = [np.array(members[s]) for s in sorted(members)]
    for start in range(0, b, BATCH):
        size = min(BATCH, b - start)
        counts: np.ndarray = np.zeros((size, len(strata)), dtype=np.int64)
        for idx in groups:
            counts[:, idx] = rng.multinomial(len(idx), np.full(len(idx), 1 / len(idx)),
                                             size=size)
        yield counts


def _cells(scores: Sequence[InstanceScore], metrics: Sequence[str],
           instances: dict[tuple[str, str], int]
           ) -> dict[tuple[str, str, str, str], tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Each cell's instances (their index), numerators and denominators
    (:meth:`InstanceScore.pair`: matched and gold triples; an instance's score and 1)."""
    acc: dict[tuple[str, str, str, str], dict[int, list[float]]] = defaultdict(dict)
    for s in scores:
        i = instances[(s.stratum, s.hash_id)]
        for m in metrics:
            counted = s.pair(m)
            if counted is None:
                continue
            for column in (s.snapshot, "all"):
                pair = acc[(s.model, s.op, column, m)].setdefault(i, [0.0, 0.0])
                pair[0] += counted[0]
                pair[1] += counted[1]
    return {key: (np.fromiter(by, dtype=np.int64),
                  np.array([v[0] for v in by.values()], dtype=np.float64),
                  np.array([v[1] for v in by.values()], dtype=np.float64))
            for key, by in acc.items()}


def intervals(scores: Sequence[InstanceScore], metrics: Sequence[str], b: int,
              seed: int = 0) -> Intervals:
    """Every cell's 95 % interval (per column and over all, "all") from ``b`` resamples."""
    if b <= 0 or not scores:
        return {}
    instances: dict[tuple[str, str], int] = {}
    for s in scores:
        instances.setdefault((s.stratum, s.hash_id), len(instances))
    cells = _cells(scores, metrics, instances)
    values: dict[tuple[str, str, str, str], list[np.ndarray]] = defaultdict(list)
    for counts in resample_counts([stratum for stratum, _ in instances], b, seed):
        for key, (idx, hits, gold) in cells.items():
            drawn = counts[:, idx]
            matched, total = drawn @ hits, drawn @ gold
            values[key].append(matched[total > 0] / total[total > 0])
    tail = 100 * (1 - LEVEL) / 2
    out: Intervals = {}
    for key, parts in values.items():
        v = np.concatenate(parts)
        if v.size:
            low, high = np.percentile(v, [tail, 100 - tail])
            out[key] = (float(low), float(high))
    return out
