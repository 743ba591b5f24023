"""The bootstrap intervals of emerge evaluate (emerge_lib/evaluation/bootstrap.py): seeded,
stratified by snapshot × delta, paired across models, and the percentiles of the very
micro-averages summarize computes."""

from __future__ import annotations

import numpy as np
import pytest

from emerge_lib.evaluation.bootstrap import BATCH, intervals, resample_counts
from emerge_lib.evaluation.metrics import InstanceScore, summarize


def _score(model: str, i: int, stratum: str, hits: int, n: int = 2, op: str = "E"
           ) -> InstanceScore:
    """An instance's score, its column being its snapshot (``--by date``)."""
    return InstanceScore(model, f"h{i}", stratum.split("→")[0], op, n, hits, None, True,
                         stratum)


A, B = "2024-01-01→2024-01-08", "2024-04-01→2024-04-08"
SCORES = ([_score("m", i, A, i % 3) for i in range(30)]
          + [_score("m", 100 + i, B, 2) for i in range(10)]
          + [_score("perfect", i, A, 2) for i in range(30)]
          + [_score("perfect", 100 + i, B, 2) for i in range(10)])


def test_each_stratum_is_resampled_on_its_own_and_the_seed_fixes_the_draws() -> None:
    strata = [A] * 30 + [B] * 10
    batches = list(resample_counts(strata, BATCH + 6, seed=3))
    assert [len(c) for c in batches] == [BATCH, 6]  # never b x instances at once
    counts = np.concatenate(batches)
    assert (counts[:, :30].sum(axis=1) == 30).all() and (counts[:, 30:].sum(axis=1) == 10).all()
    again = np.concatenate(list(resample_counts(strata, BATCH + 6, seed=3)))
    assert (again == counts).all()
    assert not (np.concatenate(list(resample_counts(strata, BATCH + 6, seed=4))) == counts).all()


def test_intervals_are_the_percentiles_of_the_resampled_micro_averages() -> None:
    ci = intervals(SCORES, ["recall"], 200, seed=7)
    assert ci == intervals(SCORES, ["recall"], 200, seed=7)  # seeded
    assert ci != intervals(SCORES, ["recall"], 200, seed=8)
    values = {(r["model"], r["snapshot"]): r["value"] for r in summarize(SCORES, ["recall"])}
    assert ci[("perfect", "E", "all", "recall")] == (1.0, 1.0)  # no spread to resample
    assert ci[("m", "E", "2024-04-01", "recall")] == (1.0, 1.0)
    low, high = ci[("m", "E", "2024-01-01", "recall")]
    assert low < values[("m", "2024-01-01")] < high and high - low > 0.05
    # by hand, from the same draws: matched / gold triples over the drawn instances
    counts = np.concatenate(list(resample_counts([A] * 30 + [B] * 10, 200, seed=7)))
    hits = np.array([i % 3 for i in range(30)] + [2] * 10, dtype=float)
    first = (counts[:, :30] @ hits[:30]) / (counts[:, :30] @ np.full(30, 2.0))
    overall = (counts @ hits) / (counts @ np.full(40, 2.0))
    assert (low, high) == pytest.approx(tuple(np.percentile(first, [2.5, 97.5])))
    assert ci[("m", "E", "all", "recall")] == pytest.approx(
        tuple(np.percentile(overall, [2.5, 97.5])))
    assert intervals(SCORES, ["recall"], 0) == {}
