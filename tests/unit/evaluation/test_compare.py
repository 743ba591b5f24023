"""`emerge evaluate --compare RUN_A RUN_B` (emerge_lib/evaluation/compare.py) on runs
scored here from planted predictions: a clearly better model gets its exact difference and
a small p, identical runs a difference of 0 and p = 1, swapping the runs flips the sign,
and runs of other gold are refused in one line."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from emerge_lib.cli import main
from emerge_lib.evaluation.compare import compare

B = 200  # resamples: p of a model better on every draw is 2 / (B + 1)


def _gold(folder: Path, n: int = 30) -> Path:
    """n instances in two deltas, each with two E triples (Q{i} P1 Q{i}00, Q{i} P2
    Q{i}01) and one D triple (Q{i} P3 Q{i}02)."""
    for d, end in enumerate(("2024-01-08", "2024-01-15")):
        snap = folder / "snapshot_2024-01-01"
        snap.mkdir(parents=True, exist_ok=True)
        with (snap / f"delta_{end}.jsonl").open("w") as fh:
            for i in range(d * n // 2, (d + 1) * n // 2):
                triples = [(f"Q{i}", "P1", f"Q{i}00", "e-triples"),
                           (f"Q{i}", "P2", f"Q{i}01", "e-triples"),
                           (f"Q{i}", "P3", f"Q{i}02", "d-triples")]
                fh.write(json.dumps({
                    "hash_id": f"h{i}", "passage": f"text {i}", "revision_date":
                    "2024-01-02T00:00:00Z", "delta_dates": ["2024-01-01", end],
                    "tkgu_triples": [{"triple": [s, p, o], "triple_labels": [s, p, o],
                                      "tkgu_operations": [op], "llm_assessment": [],
                                      "human_assessment": []} for s, p, o, op in triples]})
                    + "\n")
    return folder


def _run(tmp: Path, name: str, gold: Path, keep, n: int = 30) -> Path:
    """A model predicting, of instance i, the E triples ``keep(i)`` says (as QIDs, operation
    add) and never a D triple; scored by recall and the QID metrics."""
    preds = tmp / f"{name}.jsonl"
    with preds.open("w") as fh:
        for i in range(n):
            fh.write(json.dumps({"hash_id": f"h{i}", "model": name, "predicted": [
                {"triple": [f"Q{i}", p, f"Q{i}{o}"], "operation": "add"}
                for p, o in (("P1", "00"), ("P2", "01")) if keep(i, p)]}) + "\n")
    out = tmp / name
    assert main(["evaluate", "--gold", str(gold), "--predictions", str(preds), "--metrics",
                 "recall,qid_precision,qid_recall,qid_f1", "--gold-filter", "all",
                 "--bootstrap", "0", "--out", str(out)]) == 0
    return out


def test_a_clearly_better_model_has_its_exact_difference_and_a_small_p(tmp_path: Path,
                                                                       capsys) -> None:
    gold = _gold(tmp_path / "gold")
    good = _run(tmp_path, "good", gold, lambda i, p: True)  # every E triple
    poor = _run(tmp_path, "poor", gold, lambda i, p: p == "P1" and i % 3 == 0)  # 10 of 60
    capsys.readouterr()
    board = tmp_path / "vs"
    assert main(["evaluate", "--compare", str(good), str(poor), "--bootstrap", str(B),
                 "--out", str(board)]) == 0
    assert "| E-Triples (Add) | recall | good | poor | 100.0 | 16.7 | +83.3 |" in \
        capsys.readouterr().out
    with (board / "compare.csv").open() as fh:
        got = {(r["operation"], r["metric"]): r for r in csv.DictReader(fh)}
    recall = got[("E", "recall")]
    assert float(recall["diff"]) == pytest.approx(1 - 10 / 60)
    assert 0 < float(recall["ci_low"]) <= float(recall["diff"]) <= float(recall["ci_high"]) <= 1
    assert float(recall["p_value"]) == pytest.approx(2 / (B + 1), abs=1e-6)
    assert (recall["instances"], recall["resamples"]) == ("30", str(B))
    # the authors' per-instance columns: good P = R = F1 = 1; poor on the 10 instances it
    # predicted P 1, R 1/2, F1 2/3, elsewhere 0
    assert float(got[("E", "qid_precision")]["diff"]) == pytest.approx(1 - 10 / 30)
    assert float(got[("E", "qid_f1")]["diff"]) == pytest.approx(1 - (10 * 2 / 3) / 30)
    # D: neither predicts a D triple: both 0, the same on every draw
    assert float(got[("D", "recall")]["diff"]) == 0 and float(got[("D", "recall")]["p_value"]) == 1
    # B against A: the same test, the sign flipped
    back, _ = compare(poor, good, resamples=B)
    flipped = next(d for d in back if (d.operation, d.metric) == ("E", "recall"))
    assert flipped.diff == pytest.approx(-float(recall["diff"]))
    assert (flipped.low, flipped.high) == pytest.approx(
        (-float(recall["ci_high"]), -float(recall["ci_low"])), abs=1e-6)
    assert flipped.p_value == pytest.approx(float(recall["p_value"]), abs=1e-6)


def test_identical_runs_differ_by_nothing_with_p_one(tmp_path: Path) -> None:
    gold = _gold(tmp_path / "gold")
    half = lambda i, p: (i + len(p)) % 2 == 0  # noqa: E731  # some right, some not
    one = _run(tmp_path, "one", gold, half)
    two = _run(tmp_path, "two", gold, half)  # another name, the same predictions
    diffs, md = compare(one, two, resamples=B, seed=7, out=tmp_path / "vs")
    assert {(d.model_a, d.model_b) for d in diffs} == {("one", "two")}
    assert {d.operation for d in diffs} == {"E", "D"}
    assert all((d.diff, d.low, d.high, d.p_value) == (0, 0, 0, 1) for d in diffs)
    assert 0 < next(d.value_a for d in diffs if d.metric == "recall" and d.operation == "E") < 1
    assert (tmp_path / "vs" / "compare.md").read_text() == md


def test_runs_of_other_gold_are_refused_in_one_line(tmp_path: Path, capsys) -> None:
    gold = _gold(tmp_path / "gold")
    other = _gold(tmp_path / "other", n=20)
    one = _run(tmp_path, "one", gold, lambda i, p: True)
    two = _run(tmp_path, "two", other, lambda i, p: True, n=20)
    capsys.readouterr()
    assert main(["evaluate", "--compare", str(one), str(two), "--out", str(tmp_path / "vs")]) == 1
    err = capsys.readouterr().err
    assert "two and one cannot be compared: their gold_digest differs" in err
    assert "Traceback" not in err and not (tmp_path / "vs").exists()
    assert main(["evaluate", "--out", str(tmp_path / "vs")]) == 1
    assert "give --gold (the gold to score), or --compare RUN_A RUN_B" in capsys.readouterr().err
