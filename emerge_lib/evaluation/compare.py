"""``emerge evaluate --compare RUN_A RUN_B``: is one run's model better than the other's,
per operation and metric, beyond what the choice of instances explains?

A paired bootstrap with :mod:`.bootstrap`'s resampling: within each stratum (an
instance's snapshot and delta) as many instances as it holds are drawn with replacement,
and each draw carries both runs' scores of those instances (the same draws for both, for
every operation and metric). Per (operation, metric), over all snapshots:

- the difference A − B of the two values (each the ratio its metric defines: matched /
  gold triples, the mean over instances, …; :meth:`.metrics.InstanceScore.pair`);
- its 95 % interval: the 2.5th and 97.5th percentiles of the resampled differences;
- a two-sided p-value, 2 · min(share of resampled differences ≤ 0, share ≥ 0), each share
  counted as (k + 1) / (B + 1) so that it is never 0, capped at 1: identical runs give a
  difference of 0 and p = 1; a model better on every draw p = 2 / (B + 1).

The runs must have scored the same gold the same way (run.json's ``gold_digest``, gold
filter, threshold, assessors, annotator: :func:`.leaderboard.check_comparable`), else one
line names the difference. Models are paired by name; two runs of one model each are
paired whatever their names. Writes compare.md and compare.csv (bare operation ids).
"""

from __future__ import annotations

import csv
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from emerge_lib.core.errors import InputError
from emerge_lib.evaluation.bootstrap import LEVEL, resample_counts
from emerge_lib.evaluation.data import OPS
from emerge_lib.evaluation.leaderboard import check_comparable, read_run
from emerge_lib.evaluation.metrics import ALL_METRICS, InstanceScore
from emerge_lib.evaluation.report import op_heading


@dataclass(frozen=True)
class Difference:
    """One (model pair, operation, metric): A's value, B's, A − B, its interval, p."""

    model_a: str
    model_b: str
    operation: str
    metric: str
    value_a: float
    value_b: float
    diff: float
    low: float
    high: float
    p_value: float
    instances: int
    resamples: int


def read_scores(folder: str | Path) -> tuple[dict[str, object], list[InstanceScore]]:
    """A run's run.json and its instances.jsonl rows, each with its stratum."""
    run, _ = read_run(folder)
    path = Path(folder) / "instances.jsonl"
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        raise InputError(f"{path}: not found (give the --out folder of `emerge evaluate`)"
                         ) from None
    scores = []
    for n, line in enumerate(lines, 1):
        try:
            row = json.loads(line)
            score = InstanceScore.from_dict(row)
        except (ValueError, KeyError, TypeError):
            raise InputError(f"{path}:{n}: not a row of emerge evaluate's instances.jsonl"
                             ) from None
        if not score.stratum:
            raise InputError(f"{path}: its rows carry no stratum (scored by an older "
                             "emerge): score it again to compare it")
        scores.append(score)
    return run, scores


def pair_models(a: Sequence[str], b: Sequence[str], names: tuple[str, str]
                ) -> list[tuple[str, str]]:
    """The models compared: one each, whatever their names; else those of one name."""
    if len(a) == 1 and len(b) == 1:
        return [(a[0], b[0])]
    common = sorted(set(a) & set(b))
    if not common:
        raise InputError(f"{names[0]} ({', '.join(sorted(a))}) and {names[1]} "
                         f"({', '.join(sorted(b))}) share no model to compare: score one "
                         "model per run, or the same models in both")
    return [(m, m) for m in common]


def _vectors(scores: Sequence[InstanceScore], model: str, op: str, metric: str,
             index: Mapping[tuple[str, str], int]) -> tuple[np.ndarray, np.ndarray]:
    num = np.zeros(len(index))
    den = np.zeros(len(index))
    for s in scores:
        if s.model == model and s.op == op and (pair := s.pair(metric)) is not None:
            i = index[(s.stratum, s.hash_id)]
            num[i] += pair[0]
            den[i] += pair[1]
    return num, den


def differences(a: Sequence[InstanceScore], b: Sequence[InstanceScore],
                pairs: Sequence[tuple[str, str]], metrics: Sequence[str], *,
                resamples: int, seed: int = 0) -> list[Difference]:
    """Every (model pair, operation, metric) both runs have a value for, A − B."""
    if resamples <= 0:
        raise InputError("--compare needs bootstrap resamples (--bootstrap B, B > 0)")
    keys = sorted({(s.stratum, s.hash_id) for s in (*a, *b)})
    index = {k: i for i, k in enumerate(keys)}
    cells = []
    for model_a, model_b in pairs:
        for op in OPS:
            for m in metrics:
                na, da = _vectors(a, model_a, op, m, index)
                nb, db = _vectors(b, model_b, op, m, index)
                if da.sum() > 0 and db.sum() > 0:
                    cells.append((model_a, model_b, op, m, na, da, nb, db))
    drawn: list[list[np.ndarray]] = [[] for _ in cells]
    for counts in resample_counts([stratum for stratum, _ in keys], resamples, seed):
        c: np.ndarray = counts.astype(np.float64)
        for k, (*_, na, da, nb, db) in enumerate(cells):
            ta, tb = c @ da, c @ db
            ok = (ta > 0) & (tb > 0)
            drawn[k].append((c @ na)[ok] / ta[ok] - (c @ nb)[ok] / tb[ok])
    tail = 100 * (1 - LEVEL) / 2
    out = []
    for (model_a, model_b, op, m, na, da, nb, db), parts in zip(cells, drawn, strict=True):
        d = np.concatenate(parts)
        value_a, value_b = na.sum() / da.sum(), nb.sum() / db.sum()
        low, high = np.percentile(d, [tail, 100 - tail]) if d.size else (np.nan, np.nan)
        below = (np.count_nonzero(d <= 0) + 1) / (d.size + 1)
        above = (np.count_nonzero(d >= 0) + 1) / (d.size + 1)
        out.append(Difference(model_a, model_b, op, m, float(value_a), float(value_b),
                              float(value_a - value_b), float(low), float(high),
                              min(1.0, 2 * min(below, above)),
                              int(np.count_nonzero((da > 0) | (db > 0))), int(d.size)))
    return out


def markdown(diffs: Sequence[Difference], names: tuple[str, str]) -> str:
    a, b = names
    lines = [f"### {a} (A) against {b} (B): paired bootstrap, all snapshots", "",
             "| TKGU Operations | metric | model A | model B | A (%) | B (%) | A − B (points) "
             "| 95 % interval | p |", "|---|---|---|---|---:|---:|---:|---:|---:|"]
    for d in diffs:
        lines.append(f"| {op_heading(d.operation)} | {d.metric} | {d.model_a} | {d.model_b} "
                     f"| {100 * d.value_a:.1f} | {100 * d.value_b:.1f} "
                     f"| {100 * d.diff:+.1f} | [{100 * d.low:+.1f}, {100 * d.high:+.1f}] "
                     f"| {d.p_value:.3g} |")
    if not diffs:
        lines.append("| (no operation both runs scored) | | | | | | | | |")
    lines += ["", "Instances resampled within each snapshot × delta, the same draws for both "
              "runs; p: two-sided, 2 · min(share of resampled differences ≤ 0, share ≥ 0)."]
    return "\n".join(lines) + "\n"


def write_csv(diffs: Sequence[Difference], path: Path) -> None:
    with path.open("w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["operation", "metric", "model_a", "model_b", "value_a", "value_b", "diff",
                    "ci_low", "ci_high", "p_value", "instances", "resamples"])
        for d in diffs:
            w.writerow([d.operation, d.metric, d.model_a, d.model_b, f"{d.value_a:.6f}",
                        f"{d.value_b:.6f}", f"{d.diff:.6f}", f"{d.low:.6f}", f"{d.high:.6f}",
                        f"{d.p_value:.6f}", d.instances, d.resamples])


def compare(run_a: str | Path, run_b: str | Path, *, resamples: int = 1000, seed: int = 0,
            out: str | Path | None = None) -> tuple[list[Difference], str]:
    """Compare two ``emerge evaluate`` output folders; writes compare.md and compare.csv
    into ``out`` when given. Returns the differences and the Markdown."""
    names = (Path(run_a).name or str(run_a), Path(run_b).name or str(run_b))
    if names[0] == names[1]:
        names = (str(run_a), str(run_b))
    meta_a, a = read_scores(run_a)
    meta_b, b = read_scores(run_b)
    check_comparable({names[0]: meta_a, names[1]: meta_b}, together="compared")
    pairs = pair_models(sorted({s.model for s in a}), sorted({s.model for s in b}), names)
    listed = [set(m) if isinstance(m := meta.get("metrics"), list) else set(ALL_METRICS)
              for meta in (meta_a, meta_b)]
    metrics = [m for m in ALL_METRICS if m in listed[0] & listed[1]]
    diffs = differences(a, b, pairs, metrics, resamples=resamples, seed=seed)
    md = markdown(diffs, names)
    if out is not None:
        folder = Path(out)
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "compare.md").write_text(md, encoding="utf-8")
        write_csv(diffs, folder / "compare.csv")
    return diffs, md
