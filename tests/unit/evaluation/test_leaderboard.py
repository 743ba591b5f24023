"""`emerge leaderboard` on runs of `emerge evaluate` scored here: the ranks follow the
planted predictions, the overall column is the micro-average of the operations' cells,
and runs that scored other gold are refused in one line."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from emerge_lib.cli import main

#: hash_id → its triples (s, p, o, operation id)
GOLD = {
    "h1": [("Q1", "P69", "Q2", "e-triples"), ("Q1", "P27", "Q30", "x-triples"),
           ("Q1", "P31", "Q5", "x-triples")],
    "h2": [("Q7", "P39", "Q8", "d-triples"), ("Q9", "P54", "Q10", "e-triples")],
}


def _gold(folder: Path, lines: dict[str, list[tuple[str, str, str, str]]]) -> Path:
    snap = folder / "snapshot_2024-01-01"
    snap.mkdir(parents=True)
    with (snap / "delta_2024-01-08.jsonl").open("w") as fh:
        for i, (hid, triples) in enumerate(lines.items()):
            fh.write(json.dumps({
                "hash_id": hid, "passage": f"text {hid}",
                "revision_date": f"2024-01-0{2 + i}T00:00:00Z",
                "delta_dates": ["2024-01-01", "2024-01-08"],
                "tkgu_triples": [{"triple": [s, p, o], "triple_labels": [s, p, o],
                                  "tkgu_operations": [op], "llm_assessment": [],
                                  "human_assessment": []} for s, p, o, op in triples]})
                     + "\n")
    return folder


def _run(tmp: Path, name: str, gold: Path, right: set[tuple[str, str, str]],
         *extra: str) -> Path:
    """A model predicting exactly the triples ``right`` (as QIDs), scored by recall."""
    preds = tmp / f"{name}.jsonl"
    with preds.open("w") as fh:
        for hid, triples in GOLD.items():
            fh.write(json.dumps({"hash_id": hid, "model": name, "predicted": [
                {"triple": [s, p, o], "operation": None} for s, p, o, _ in triples
                if (s, p, o) in right]}) + "\n")
    out = tmp / name
    assert main(["evaluate", "--gold", str(gold), "--predictions", str(preds), "--metrics",
                 "recall", "--gold-filter", "all", "--out", str(out), *extra]) == 0
    return out


def test_runs_are_ranked_per_operation_and_overall(tmp_path: Path, capsys) -> None:
    gold = _gold(tmp_path / "gold", GOLD)
    every = {t[:3] for triples in GOLD.values() for t in triples}
    best = _run(tmp_path, "best", gold, every)
    some = _run(tmp_path, "some", gold, {("Q1", "P69", "Q2"), ("Q1", "P27", "Q30")})
    board = tmp_path / "board"
    assert main(["leaderboard", str(some), str(best), "--out", str(board)]) == 0
    assert "2 runs ranked" in capsys.readouterr().out
    rows = list(csv.DictReader((board / "leaderboard.csv").open()))
    got = {(r["operation"], r["rank"]): (r["run"], round(float(r["value"]), 4)) for r in rows}
    assert got[("X", "1")] == ("best", 1.0) and got[("X", "2")] == ("some", 0.5)
    assert got[("E", "1")] == ("best", 1.0) and got[("E", "2")] == ("some", 0.5)
    assert got[("D", "1")] == ("best", 1.0) and got[("D", "2")] == ("some", 0.0)
    # overall: matched gold triples over all of them (2 of 5), not a mean of the cells
    assert got[("overall", "1")] == ("best", 1.0) and got[("overall", "2")] == ("some", 0.4)
    page = (board / "index.html").read_text()
    assert "data:image/png;base64," in page and page.count("<table>") == len(
        {r["operation"] for r in rows})
    md = (board / "leaderboard.md").read_text()  # the paper's names beside the ids
    assert "### recall: E-Triples (Add)" in md and "### recall: Overall" in md
    # the bootstrap's intervals (emerge evaluate's default) come along
    assert "| 1 | best | best | 100.0 [100.0, 100.0] | 2 |" in \
        (board / "leaderboard.md").read_text()
    some_d = next(r for r in rows if r["operation"] == "E" and r["run"] == "some")
    assert float(some_d["ci_low"]) <= 0.5 <= float(some_d["ci_high"])


@pytest.mark.parametrize("how", ["other gold", "after"])
def test_runs_of_other_gold_are_refused_naming_the_difference(tmp_path: Path, capsys,
                                                              how: str) -> None:
    gold = _gold(tmp_path / "gold", GOLD)
    every = {t[:3] for triples in GOLD.values() for t in triples}
    one = _run(tmp_path, "one", gold, every)
    if how == "other gold":
        other = _gold(tmp_path / "other", {"h1": GOLD["h1"]})
        two = _run(tmp_path, "two", other, every)
    else:  # the same release, but only the lines after a cutoff: other gold scored
        two = _run(tmp_path, "two", gold, every, "--after", "2024-01-02T12:00:00Z")
    capsys.readouterr()
    assert main(["leaderboard", str(one), str(two), "--out", str(tmp_path / "b")]) == 1
    err = capsys.readouterr().err
    assert "two and one cannot be ranked together: their gold_digest differs" in err
    assert "Traceback" not in err and not (tmp_path / "b").exists()


def test_a_folder_that_is_not_a_run_is_one_line(tmp_path: Path, capsys) -> None:
    assert main(["leaderboard", str(tmp_path), "--out", str(tmp_path / "b")]) == 1
    assert "run.json: not found (give the --out folder of `emerge evaluate`)" in \
        capsys.readouterr().err


def test_the_authors_per_instance_columns_pool_over_instances(tmp_path: Path) -> None:
    """qid_recall cells are means over instances: the overall pools them by n_instances.
    Planted ("some", operation null): h1 X recall 1/2, h1 E 1, h2 E 0, h2 D 0; cells X 0.5
    (1 instance), E 0.5 (2), D 0 (1): overall 1.5/4 = 0.375 (by gold triples it would be
    2/5)."""
    gold = _gold(tmp_path / "gold", GOLD)
    some = _run(tmp_path, "some", gold, {("Q1", "P69", "Q2"), ("Q1", "P27", "Q30")},
                "--metrics", "recall,qid_recall")
    board = tmp_path / "board"
    assert main(["leaderboard", str(some), "--out", str(board)]) == 0
    with (board / "leaderboard.csv").open() as fh:
        got = {(r["metric"], r["operation"]): r for r in csv.DictReader(fh)}
    assert float(got[("qid_recall", "overall")]["value"]) == pytest.approx(0.375)
    assert float(got[("qid_recall", "E")]["value"]) == pytest.approx(0.5)
    assert float(got[("recall", "overall")]["value"]) == pytest.approx(2 / 5)
