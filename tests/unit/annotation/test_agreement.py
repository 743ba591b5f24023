"""The agreement table as the authors' s09e computes it, on the 10 lines of their
released annotation file (../shared/realdata/emerge/solved_disagreements.sample.jsonl) and
on hand-made lines: pairing, missing verdicts, the undefined cell, LLM-vs-LLM, the files.

GOLDEN: the authors' computation on those 10 lines (their ``load_annotated_instances`` and
``return_paper_stats``, klimzaporojets/emerge src/dataset/emerge/utils/
s09_annotate_dataset_utils_v4.py, re-run with pandas/scikit-learn/statsmodels/krippendorff
on the sample; their script itself stops at EE, where krippendorff refuses a single value;
NaN there). The same code gives the paper's table on their full file (0.792 …)."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from emerge_lib.annotation import agreement as ag
from emerge_lib.annotation.release import AnnotationError, read_annotations
from emerge_lib.cli import main
from emerge_lib.formats.format import ASSERTION, DEPRECATION, human_readable_triple

LLM = "Meta-Llama-3.1-405B"
ASSESSORS = {ASSERTION: LLM, DEPRECATION: LLM}
H = ("annotator_1", "annotator_2")
NAN = None
#: operation → (items, H-H, H1-LLM, H2-LLM, Fleiss, Krippendorff α)
GOLDEN = {
    "x-triples": (18, 0.64, -0.08, -0.058823529411765, 0.189999999999999, 0.205),
    "e-triples": (5, 1.0, 0.0, 0.0, 0.423076923076924, 0.461538461538462),
    "ee-triples": (7, NAN, NAN, NAN, NAN, NAN),
    "ee-kg-triples": (15, 0.857142857142857, 0.736842105263158, 0.608695652173913,
                      0.726720647773279, 0.732793522267206),
    "d-triples": (4, 1.0, 0.0, 0.0, 0.4, 0.45),
    "overall": (49, 0.864265927977839, 0.543275632490013, 0.502177068214804,
                0.637037037037037, 0.639506172839506),
}


@pytest.fixture(scope="module")
def sample(realdata: Path) -> Path:
    return realdata / "emerge" / "solved_disagreements.sample.jsonl"


def test_the_table_on_the_authors_lines_equals_theirs_in_every_cell(sample: Path,
                                                                     tmp_path: Path) -> None:
    assert main(["annotate", "agreement", "--annotations", str(sample),
                 "--assessor", LLM, "--out", str(tmp_path)]) == 0
    rows = json.loads((tmp_path / "agreement.json").read_text())["rows"]
    cells = {(r["operation"], r["metric"]): r for r in rows}
    for op, (n, *values) in GOLDEN.items():
        for metric, want in zip(ag.METRICS, values, strict=True):
            cell = cells[(op, metric)]
            assert cell["n"] == n, (op, metric)
            if want is None:  # every rating YES: undefined, said so, not a crash
                assert cell["value"] is None and "every rating" in cell["note"]
            else:
                assert cell["value"] == pytest.approx(want, abs=1e-12), (op, metric)
                assert ag.round3(cell["value"]) == f"{want:.3f}".replace("-0.000", "0.000")
    md = (tmp_path / "agreement.md").read_text()
    assert "| Overall | 0.864 | 0.543 | 0.502 | 0.637 | 0.640 | 49 |" in md
    assert "| EE | – | – | – | – | – | 7 |" in md
    tex = (tmp_path / "agreement.tex").read_text()
    assert r"X & 0.640 & -0.080 & -0.059 & 0.190 & 0.205 \\" in tex
    # the same input, the same bytes
    assert main(["annotate", "agreement", "--annotations", str(sample), "--assessor", LLM,
                 "--out", str(tmp_path / "again")]) == 0
    for name in ("agreement.json", "agreement.md", "agreement.tex"):
        assert (tmp_path / name).read_bytes() == (tmp_path / "again" / name).read_bytes()


def test_llm_vs_llm_kappa_is_cohens_over_the_triples_both_judged(sample: Path) -> None:
    from sklearn.metrics import cohen_kappa_score

    lines = read_annotations(sample)
    rows = [r for r in ag.llm_pairs(lines) if r["operation"] == "overall"]
    assert {tuple(r["raters"]) for r in rows} == {
        (a, b) for a in ("Meta-Llama-3.1-405B", "Meta-Llama-3.1-405B_prompt_v2",
                         "Meta-Llama-3.1-8B", "Meta-Llama-3.1-8B_prompt_v2")
        for b in ("Meta-Llama-3.1-405B", "Meta-Llama-3.1-405B_prompt_v2",
                  "Meta-Llama-3.1-8B", "Meta-Llama-3.1-8B_prompt_v2") if a < b}
    # independently: one pair over every (operation, triple) both answered as a bool
    a, b = "Meta-Llama-3.1-405B", "Meta-Llama-3.1-8B"
    x, y = [], []
    for rec in map(json.loads, sample.open()):
        for t in rec["tkgu_triples"]:
            for op in t["tkgu_operations"]:
                kind = DEPRECATION if op == "d-triples" else ASSERTION
                said = {e["llm_name"]: e["llm_assessment"] for e in t["llm_assessment"]
                        if e["llm_prompt_type"] == kind}
                if isinstance(said.get(a), bool) and isinstance(said.get(b), bool):
                    x.append(said[a])
                    y.append(said[b])
    row = next(r for r in rows if r["raters"] == [a, b])
    assert row["n"] == len(x) > 40
    assert row["value"] == pytest.approx(cohen_kappa_score(x, y))


def _line(hid: str, ops: list[str], humans: dict[tuple[str, str], bool],
          llm: dict[tuple[str, str], bool | None]) -> dict:
    rec = {"hash_id": hid, "passage": "A met B.", "mentions": [], "tkgu_triples": [{
        "triple": ["Q1", "P1", "Q2"], "triple_labels": ["A", "knows", "B"],
        "tkgu_operations": ops}]}
    t = rec["tkgu_triples"][0]
    hrt = human_readable_triple(rec, t)
    t["human_assessment"] = [{"annotator_name": a, "prompt_type": k, "assessment": v,
                              "human_readable_triple": hrt, "definition_relation": "d"}
                             for (a, k), v in humans.items()]
    t["llm_assessment"] = [{"llm_name": n, "llm_assessment": v, "llm_prompt_type": k,
                            "llm_prompt": ""} for (n, k), v in llm.items()]
    return rec


def test_pairing_and_missing_verdicts_follow_the_authors() -> None:
    """A two-operation triple is an item per operation, each with its prompt's verdicts;
    an item needs both annotators and a parsed assessor verdict; a third annotator does
    not change H1-H2."""
    both = {(h, k): True for h in H for k in (ASSERTION, DEPRECATION)}
    lines = {
        "a": _line("a", ["d-triples", "e-triples"], {**both, ("annotator_2", DEPRECATION): False},
                   {(LLM, ASSERTION): True, (LLM, DEPRECATION): False}),
        "b": _line("b", ["x-triples"], {("annotator_1", ASSERTION): True},
                   {(LLM, ASSERTION): True}),  # one annotator only: out
        "c": _line("c", ["x-triples"], {(h, ASSERTION): False for h in H},
                   {(LLM, ASSERTION): None}),  # the assessor's answer did not parse: out
        "d": _line("d", ["x-triples"], {("annotator_1", ASSERTION): False,
                                        ("annotator_2", ASSERTION): True,
                                        ("adjudicator", ASSERTION): True},
                   {(LLM, ASSERTION): True}),
    }
    by_op, dropped = ag.items(lines, H, ASSESSORS)
    assert by_op["e-triples"] == [(1, 1, 1)] and by_op["d-triples"] == [(1, 0, 0)]
    assert by_op["x-triples"] == [(0, 1, 1)]
    assert dropped == {"one annotator only": 1, "no assessor verdict": 1}
    table = ag.agreement(lines, H, ASSESSORS)
    assert table.items == {"x-triples": 1, "e-triples": 1, "ee-triples": 0, "ee-kg-triples": 0,
                           "d-triples": 1, "overall": 3}
    assert table.value("ee-triples", "fleiss") is None
    # the names must be there: a table of nothing says nothing
    with pytest.raises(AnnotationError, match="annotator_9"):
        ag.check_names(lines, ("annotator_1", "annotator_9"), ASSESSORS, "x")
    with pytest.raises(AnnotationError, match="no triple_assertion verdict by assessor 'M'"):
        ag.check_names(lines, H, {ASSERTION: "M", DEPRECATION: LLM}, "x")


def test_a_cli_call_naming_a_missing_assessor_is_one_line(sample: Path, tmp_path: Path,
                                                          capsys) -> None:
    assert main(["annotate", "agreement", "--annotations", str(sample), "--assessor", "GPT-9",
                 "--out", str(tmp_path)]) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "GPT-9" in err and "Meta-Llama-3.1-8B" in err


def test_the_authors_human_readable_triple_is_what_every_entry_holds(sample: Path) -> None:
    entries = 0
    for rec in map(json.loads, sample.open()):
        for t in rec["tkgu_triples"]:
            for e in t["human_assessment"]:
                entries += 1
                assert e["human_readable_triple"] == human_readable_triple(rec, t)
    assert entries > 90


def test_merged_files_keep_the_first_verdict_per_annotator_and_prompt(tmp_path: Path) -> None:
    first = _line("a", ["x-triples"], {("annotator_1", ASSERTION): True}, {(LLM, ASSERTION): True})
    second = copy.deepcopy(first)
    second["tkgu_triples"][0]["human_assessment"][0]["assessment"] = False
    second["tkgu_triples"][0]["human_assessment"].append(
        {**second["tkgu_triples"][0]["human_assessment"][0], "annotator_name": "annotator_2"})
    (tmp_path / "1.jsonl").write_text(json.dumps(first) + "\n")
    (tmp_path / "2.jsonl").write_text(json.dumps(second) + "\n")
    merged = read_annotations(tmp_path)
    said = {e["annotator_name"]: e["assessment"]
            for e in merged["a"]["tkgu_triples"][0]["human_assessment"]}
    assert said == {"annotator_1": True, "annotator_2": False}
    (tmp_path / "3.jsonl").write_text("{not json\n")
    with pytest.raises(AnnotationError, match=r"3\.jsonl:1: not a JSON line"):
        read_annotations(tmp_path)
