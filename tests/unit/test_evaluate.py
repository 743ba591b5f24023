"""The scorer: metrics on hand-computed cases, the authors' released files read exactly,
our own release (full timestamps and the date-only [compat] dates), completeness with
the packaged models offline, the command and its outputs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest

from emerge_lib.core.errors import InputError
from emerge_lib.evaluation.data import (
    ASSERTION,
    DEPRECATION,
    OPS,
    Predicted,
    block_predictions,
    instance_from_record,
    prediction_from_json,
    prediction_line,
    read_gold,
    read_predictions,
)
from emerge_lib.evaluation.embed import triple_text
from emerge_lib.evaluation.metrics import Settings, model_predictions, score, summarize

REPO = Path(__file__).resolve().parents[2]
AUTHORS = REPO.parent / "shared" / "realdata" / "emerge" / "solved_disagreements.sample.jsonl"


def triple(s, p, o, labels, *ops, llm=(), human=()):
    return {"triple": [s, p, o], "triple_labels": list(labels), "tkgu_operations": list(ops),
            "llm_assessment": [{"llm_name": n, "llm_assessment": v, "llm_prompt_type": k,
                                "llm_prompt": ""} for n, k, v in llm],
            "human_assessment": [{"annotator_name": n, "prompt_type": k, "assessment": v}
                                 for n, k, v in human]}


def record(hid, triples, dates=("2024-01-01", "2024-01-08"), predictions=None):
    r = {"hash_id": hid, "passage": "text", "delta_dates": list(dates), "tkgu_triples": triples}
    if predictions is not None:
        r["predictions"] = predictions
    return instance_from_record(r, hid)


def pred(triple=None, labels=None, op="add"):
    return prediction_from_json({"triple": triple, "triple_labels": labels, "operation": op}, "t")


class FakeEmbedder:
    """Texts → fixed vectors: texts with the same key (before '#') are identical, others
    orthogonal; 'near:' texts have cosine 0.95 with their key, 'far:' 0.85."""

    def __init__(self) -> None:
        self.progress = None
        self._index: dict[str, int] = {}
        self._rows: list[np.ndarray] = []
        self.basis: dict[str, int] = {}

    def _vec(self, text: str) -> np.ndarray:
        kind, _, key = text.rpartition(":")
        base = self.basis.setdefault(key, len(self.basis))
        v = np.zeros(64, dtype=np.float32)
        cos = {"": 1.0, "near": 0.95, "far": 0.85}[kind]
        v[base] = cos
        v[63] = np.sqrt(1 - cos * cos)
        return v

    def add(self, texts) -> None:
        for t in texts:
            if t not in self._index:
                self._index[t] = len(self._rows)
                self._rows.append(self._vec(t))

    def index(self, text: str) -> int:
        return self._index[text]

    @property
    def matrix(self) -> np.ndarray:
        return np.vstack(self._rows)


def run(instances, preds, **kw):
    settings = Settings(**kw)
    scores = score(instances, model_predictions(instances, preds), settings, FakeEmbedder())
    return {(r["model"], r["operation"], r["snapshot"], r["metric"]): (r["value"], r["n_gold"])
            for r in summarize(scores, settings.metrics)}, scores


# --- metrics on hand-computed cases -------------------------------------------------------


def test_micro_average_over_gold_triples_of_each_instance() -> None:
    a = record("a", [triple("Q1", "P1", "Q2", ["a", "r", "b"], "e-triples"),
                     triple("Q3", "P1", "Q4", ["c", "r", "d"], "e-triples")])
    b = record("b", [triple("Q5", "P1", "Q6", ["e", "r", "f"], "e-triples")])
    preds = {"m": {"a": [pred(["Q1", "P1", "Q2"], ["a", "r", "b"])],
                   # b's prediction equals a's second gold triple: not matched across instances
                   "b": [pred(["Q3", "P1", "Q4"], ["c", "r", "d"])]}}
    rows, _ = run([a, b], preds)
    assert rows[("m", "E", "all", "recall")] == (pytest.approx(1 / 3), 3)  # not (1/2 + 0)/2
    assert rows[("m", "E", "2024", "completeness")] == (pytest.approx(1 / 3), 3)


def test_duplicates_count_once() -> None:
    g = triple("Q1", "P1", "Q2", ["a", "r", "b"], "x-triples")
    inst = record("a", [g, dict(g), triple("Q1", "P2", "Q2", ["a", "s", "b"], "x-triples")])
    same = pred(["Q1", "P1", "Q2"], ["a", "r", "b"])
    rows, _ = run([inst], {"m": {"a": [same, same, same]}})
    assert rows[("m", "X", "all", "recall")] == (0.5, 2)
    assert rows[("m", "X", "all", "completeness")] == (0.5, 2)


def test_empty_and_missing_predictions_score_zero_unless_only_predicted() -> None:
    a = record("a", [triple("Q1", "P1", "Q2", ["a", "r", "b"], "d-triples")])
    b = record("b", [triple("Q3", "P1", "Q4", ["c", "r", "d"], "d-triples")])
    c = record("c", [triple("Q5", "P1", "Q6", ["e", "r", "f"], "d-triples")])
    preds = {"m": {"a": [pred(["Q1", "P1", "Q2"], ["a", "r", "b"], "deprecate")], "b": []}}
    rows, scores = run([a, b, c], preds)
    assert rows[("m", "D", "all", "recall")] == (pytest.approx(1 / 3), 3)
    assert {s.hash_id: s.predicted for s in scores} == {"a": True, "b": True, "c": False}
    rows, _ = run([a, b, c], preds, only_predicted=True)
    assert rows[("m", "D", "all", "recall")] == (0.5, 2)  # the empty list still counts


def test_case_and_whitespace_do_not_matter_for_completeness_but_qids_are_exact() -> None:
    assert triple_text(["  Ireland ", "Country", "COUNTY\tKildare"]) == "ireland country county kildare"
    inst = record("a", [triple("Q27", "P17", "Q173332", ["Ireland", "country", "County Kildare"],
                               "x-triples")])
    rows, _ = run([inst], {"m": {"a": [pred(["q27", "P17", "Q173332"],
                                            [" ireland", "COUNTRY ", "county  kildare"])]}})
    assert rows[("m", "X", "all", "recall")] == (0.0, 1)
    assert rows[("m", "X", "all", "completeness")] == (1.0, 1)


def test_threshold_is_inclusive_of_similar_and_excludes_dissimilar() -> None:
    inst = record("a", [triple("Q1", "P1", "Q2", ["k1", "", ""], "e-triples"),
                        triple("Q3", "P1", "Q4", ["k2", "", ""], "e-triples")])
    # FakeEmbedder: "near:k1" has cosine 0.95 with "k1", "far:k2" 0.85 with "k2"
    rows, _ = run([inst], {"m": {"a": [pred(labels=["near:k1", "", ""]),
                                       pred(labels=["far:k2", "", ""])]}})
    assert rows[("m", "E", "all", "completeness")] == (0.5, 2)
    rows, _ = run([inst], {"m": {"a": [pred(labels=["near:k1", "", ""]),
                                       pred(labels=["far:k2", "", ""])]}}, threshold=0.8)
    assert rows[("m", "E", "all", "completeness")] == (1.0, 2)


def test_two_operation_triples_count_for_both_and_operations_route_predictions() -> None:
    t = triple("Q1", "P39", "Q2", ["a", "position held", "b"], "d-triples", "e-triples")
    kg = triple("Q1", "P31", "Q5", ["a", "instance of", "human"], "ee-kg-triples")
    inst = record("a", [t, kg])
    spo, lab = ["Q1", "P39", "Q2"], ["a", "position held", "b"]
    kg_spo, kg_lab = ["Q1", "P31", "Q5"], ["a", "instance of", "human"]
    cases = {
        "add": {"E": 1.0, "D": 0.0, "EE-KG": 0.0},
        "deprecate": {"E": 0.0, "D": 1.0, "EE-KG": 0.0},
        "infer": {"E": 0.0, "D": 0.0, "EE-KG": 1.0},
        None: {"E": 1.0, "D": 1.0, "EE-KG": 1.0},
    }
    for op, want in cases.items():
        preds = {"m": {"a": [pred(spo, lab, op), pred(kg_spo, kg_lab, op)]}}
        rows, _ = run([inst], preds)
        for code, value in want.items():
            for metric in ("recall", "completeness"):
                assert rows[("m", code, "all", metric)] == (value, 1), (op, code, metric)
        assert ("m", "X", "all", "recall") not in rows  # no gold, no row


def test_llm_and_human_filters_judge_each_operation_by_its_own_verdict() -> None:
    t = triple("Q1", "P108", "Q2", ["a", "employer", "b"], "ee-kg-triples", "d-triples",
               llm=[("Meta-Llama-3.1-8B", ASSERTION, True), ("Meta-Llama-3.1-405B", ASSERTION, False),
                    ("Meta-Llama-3.1-405B_prompt_v1", DEPRECATION, True)],
               human=[("annotator_1", DEPRECATION, True), ("annotator_2", ASSERTION, True)])
    inst = record("a", [t])
    assert [op for op in OPS if inst.gold(op, "llm-asserted")] == ["D"]
    eight = {ASSERTION: "Meta-Llama-3.1-8B", DEPRECATION: "Meta-Llama-3.1-8B"}
    assert [op for op in OPS if inst.gold(op, "llm-asserted", eight)] == ["EE-KG"]
    v1 = {ASSERTION: "Meta-Llama-3.1-405B_prompt_v1", DEPRECATION: "Meta-Llama-3.1-405B"}
    assert [op for op in OPS if inst.gold(op, "llm-asserted", v1)] == ["D"]
    assert [op for op in OPS if inst.gold(op, "human")] == ["D"]
    assert [op for op in OPS if inst.gold(op, "human", annotator="annotator_2")] == ["EE-KG"]
    assert [op for op in OPS if inst.gold(op)] == ["EE-KG", "D"]


def test_our_asserted_operations_decide_unless_assessors_are_named() -> None:
    """Our releases carry the configured rule's outcome per triple; the authors' files do
    not, and are judged by the authors' assessors (405B for both prompt types)."""
    verdicts = [("Meta-Llama-3.1-8B", ASSERTION, True), ("Meta-Llama-3.1-405B", DEPRECATION, True)]
    ours = triple("Q1", "P39", "Q2", ["a", "position held", "b"], "e-triples", "d-triples",
                  llm=verdicts)
    ours["asserted_operations"] = ["e-triples"]  # e.g. 8B said NO to D without a qualifier
    uncurated = triple("Q3", "P39", "Q4", ["c", "position held", "d"], "e-triples",
                       llm=verdicts[:1])
    uncurated["asserted_operations"] = None
    authors = triple("Q5", "P39", "Q6", ["e", "position held", "f"], "e-triples", "d-triples",
                     llm=verdicts)
    inst = record("a", [ours, uncurated, authors])
    asserted = {op: [t.triple[0] for t in inst.gold(op, "llm-asserted")] for op in ("E", "D")}
    assert asserted == {"E": ["Q1"], "D": ["Q5"]}  # Q1: D not asserted; Q5: no 405B assertion
    named = {ASSERTION: "Meta-Llama-3.1-8B", DEPRECATION: "Meta-Llama-3.1-405B"}
    assert {op: [t.triple[0] for t in inst.gold(op, "llm-asserted", named)]
            for op in ("E", "D")} == {"E": ["Q1", "Q3", "Q5"], "D": ["Q1", "Q5"]}
    bad = dict(ours, asserted_operations=["e-triples", "merge"])
    with pytest.raises(InputError, match="asserted_operations"):
        record("b", [bad])


def test_filters_that_would_keep_nothing_are_refused(tmp_path: Path) -> None:
    from emerge_lib.evaluation.run import evaluate

    t = triple("Q1", "P1", "Q2", ["a", "r", "b"], "e-triples")
    t["asserted_operations"] = None
    gold = tmp_path / "g.jsonl"
    gold.write_text(json.dumps({"hash_id": "a", "delta_dates": ["2024-01-01", "2024-01-08"],
                                "tkgu_triples": [t]}) + "\n")
    p = tmp_path / "p.jsonl"
    p.write_text('{"hash_id": "a", "model": "m", "predicted": []}\n')
    with pytest.raises(InputError, match="not curated"):
        evaluate(gold, [p], Settings(metrics=("recall",), gold_filter="llm-asserted"))
    with pytest.raises(InputError, match=r"human_annotation/solved_disagreements\.jsonl"):
        evaluate(gold, [p], Settings(metrics=("recall",), gold_filter="human"))
    t["human_assessment"] = [{"annotator_name": "annotator_2", "prompt_type": ASSERTION,
                              "assessment": True}]
    gold.write_text(json.dumps({"hash_id": "a", "delta_dates": ["2024-01-01", "2024-01-08"],
                                "tkgu_triples": [t]}) + "\n")
    with pytest.raises(InputError, match=r"annotations by \['annotator_2'\]"):
        evaluate(gold, [p], Settings(metrics=("recall",), gold_filter="human"))
    rows = evaluate(gold, [p], Settings(metrics=("recall",), gold_filter="human",
                                        annotator="annotator_2")).rows
    assert [(r["operation"], r["n_gold"]) for r in rows] == [("E", 1), ("E", 1)]


def test_rows_zero_by_construction_are_left_out_of_the_tables() -> None:
    from emerge_lib.evaluation.metrics import zero_by_construction
    from emerge_lib.evaluation.report import markdown, table

    inst = record("a", [triple("Q1", "P1", "Q2", ["a", "r", "b"], "e-triples"),
                        triple("Q1", "P2", "Q3", ["a", "s", "c"], "d-triples")])
    preds = {"cie": {"a": [pred(["Q1", "P1", "Q2"], ["a", "r", "b"], "add")]},  # X, E, EE
             "oie": {"a": [pred(None, ["a", "s", "c"], None)]},
             "empty": {"a": []},
             "elsewhere": {"zz": [pred(["Q1", "P2", "Q3"], None, "deprecate")]}}
    hidden = zero_by_construction(preds, ["a"])
    assert hidden == {("cie", "EE-KG", "recall"), ("cie", "D", "recall"),
                      ("cie", "EE-KG", "completeness"), ("cie", "D", "completeness"),
                      *{("oie", op, "recall") for op in OPS}}
    rows, _ = run([inst], preds)
    _, cells, _ = table(list(rows_of(rows)), "recall", hidden)
    assert [(c[0], c[1]) for c in cells] == [("E-Triples", "cie"), ("", "elsewhere"),
                                             ("", "empty"), ("D-Triples", "elsewhere"),
                                             ("", "empty")]
    assert markdown(list(rows_of(rows)), "recall", hidden).rstrip().endswith(
        "(no predicted QID triples for the operation): cie: D; oie: E, D.")


def rows_of(rows: dict):
    for (model, op, snap, metric), (value, n) in rows.items():
        yield {"model": model, "operation": op, "snapshot": snap, "metric": metric,
               "value": value, "n_gold": n}


def test_snapshots_by_year_or_date_and_both_date_formats() -> None:
    a = record("a", [triple("Q1", "P1", "Q2", ["a", "r", "b"], "e-triples")],
               dates=("2024-01-01T00:00:00Z", "2024-01-08T00:00:00Z"))
    b = record("b", [triple("Q1", "P1", "Q2", ["a", "r", "b"], "e-triples")],
               dates=("2024-04-01", "2024-04-08"))
    preds = {"m": {"a": [pred(["Q1", "P1", "Q2"], ["a", "r", "b"])]}}
    rows, _ = run([a, b], preds)
    assert rows[("m", "E", "2024", "recall")] == (0.5, 2)
    rows, _ = run([a, b], preds, snapshot_key="date")
    assert rows[("m", "E", "2024-01-01", "recall")] == (1.0, 1)
    assert rows[("m", "E", "2024-04-01", "recall")] == (0.0, 1)


def test_scores_per_delta() -> None:
    """--by delta: a column per (snapshot, window end), so one snapshot's windows are
    told apart; "all" pools them."""
    week = {hid: record(hid, [triple("Q1", "P1", hid, ["a", "r", hid], "e-triples")],
                        dates=("2024-01-01", end))
            for hid, end in (("w1", "2024-01-08"), ("w2", "2024-01-15"), ("w2b", "2024-01-15"))}
    preds = {"m": {"w1": [pred(["Q1", "P1", "w1"], ["a", "r", "w1"])],
                   "w2": [pred(["Q1", "P1", "w2"], ["a", "r", "w2"])]}}
    rows, _ = run(list(week.values()), preds, snapshot_key="delta", metrics=("recall",))
    assert rows == {("m", "E", "2024-01-01→2024-01-08", "recall"): (1.0, 1),
                    ("m", "E", "2024-01-01→2024-01-15", "recall"): (0.5, 2),
                    ("m", "E", "all", "recall"): (2 / 3, 3)}
    with pytest.raises(ValueError, match="snapshot_key"):
        Settings(snapshot_key="window")


def test_predictions_format_is_checked(tmp_path: Path) -> None:
    f = tmp_path / "p.jsonl"
    f.write_text('{"hash_id": "a", "model": "m", "predicted": [{"triple": null, '
                 '"triple_labels": ["x", "y", "z"], "operation": "merge"}]}\n')
    with pytest.raises(InputError, match="merge"):
        read_predictions(f)
    f.write_text('{"hash_id": "a", "model": "m", "predicted": [{"triple": null, '
                 '"triple_labels": ["x", "y", "z"], "operation": "infer"}]}\n'
                 '{"hash_id": "a", "model": "m", "predicted": [{"triple": ["Q1", "P1", "Q2"], '
                 '"triple_labels": null, "operation": null}]}\n')
    got = read_predictions(f)["m"]["a"]
    assert [p.ops for p in got] == [frozenset({"EE-KG"}), frozenset(OPS)]
    assert prediction_line("a", "m", [Predicted(None, ("x", "y", "z"),
                                                frozenset({"X", "E", "EE", "EE-KG"}))]) == {
        "hash_id": "a", "model": "m", "predicted": [
            {"triple": None, "triple_labels": ["x", "y", "z"], "operation": "add"},
            {"triple": None, "triple_labels": ["x", "y", "z"], "operation": "infer"}]}


def test_the_authors_prediction_blocks() -> None:
    blocks = {
        "edc-plus-x": {"model_type": "edc", "predicted_triples_oie": {
            "oie_add": [["Joe_Gambardella", "educated_at", "UMass Lowell"]],
            "oie_deprecate": [["a", "position held", "b"]],
            "oie_not_in_text": [["Joe Gambardella", "instance of", "human"]]}},
        "relik-cie": {"model_type": "relik", "predicted_triples": [
            {"triple_qids": ["Q1", "P69", "Q2"], "extracted_relation": ["Joe", "educated at", "U"],
             "triple_labels": ["Joe", "educated at", "U"]},
            {"triple_qids": ["--NME--", "P69", "Q2"], "extracted_relation": ["x", "y", "z"],
             "triple_labels": None}]},
        "relik-oie": {"model_type": "relik", "predicted_triples": [
            {"extracted_relation": ["Joe", "educated at", "U"]}]},
    }
    got = {m: list(block_predictions(m, b, "w")) for m, b in blocks.items()}
    assert [(p.labels, sorted(p.ops)) for p in got["edc-plus-x"]] == [
        (("Joe Gambardella", "educated at", "UMass Lowell"), ["E", "EE", "X"]),
        (("a", "position held", "b"), ["D"]),
        (("Joe Gambardella", "instance of", "human"), ["EE-KG"])]
    assert [(p.triple, sorted(p.ops)) for p in got["relik-cie"]] == [(("Q1", "P69", "Q2"),
                                                                     ["E", "X"])]
    assert sorted(got["relik-oie"][0].ops) == ["E", "EE", "EE-KG", "X"]
    with pytest.raises(InputError, match="model_type"):
        list(block_predictions("m", {"model_type": "mystery"}, "w"))
    # in-record blocks are scored like a predictions file
    inst = record("a", [triple("Q1", "P69", "Q2", ["Joe", "educated at", "U"], "e-triples")],
                  predictions=blocks)
    rows, _ = run([inst], {})
    assert rows[("relik-cie", "E", "all", "recall")] == (1.0, 1)
    assert rows[("relik-oie", "E", "all", "completeness")] == (1.0, 1)
    assert rows[("edc-plus-x", "E", "all", "recall")] == (0.0, 1)


# --- the command end to end on a synthetic gold (CI has no ../shared) ---------------------

A405 = "Meta-Llama-3.1-405B"
EDUCATED = ["Joe Gambardella", "educated at", "University of Massachusetts Lowell"]
STUDIED = ["joe gambardella", "studied at", "umass lowell"]  # a paraphrase: cosine < 0.9


def synthetic_gold(folder: Path) -> tuple[Path, Path, dict]:
    """A release-shaped gold folder (two snapshots, every operation, a two-operation
    triple, 405B verdicts with some NO, annotator_1 verdicts) and predictions of three
    models: ``oracle`` (exact QIDs, upper-cased labels, operation null), ``open``
    (labels only: exact for some, the paraphrase for the E triple) and ``nothing``."""
    def t(spo, labels, ops, asserted, human=None):
        kinds = {DEPRECATION if o == "d-triples" else ASSERTION for o in ops}
        return triple(*spo, labels, *ops, llm=[(A405, k, asserted) for k in sorted(kinds)],
                      human=[("annotator_1", k, human) for k in sorted(kinds)]
                      if human is not None else ())
    snaps = {
        "2023-01-01": [
            ("s23a", [t(("Q1", "P69", "Q2"), EDUCATED, ["e-triples"], True, True),
                      t(("Q1", "P27", "Q30"), ["Joe Gambardella", "country of citizenship",
                                                "United States"], ["x-triples"], True, False),
                      t(("Q1", "P31", "Q5"), ["Joe Gambardella", "instance of", "human"],
                        ["ee-kg-triples"], False, True)]),
            ("s23b", [t(("Q7", "P39", "Q8"), ["Vijay Keshav Gokhale", "position held",
                                              "Foreign Secretary of India"],
                        ["d-triples", "e-triples"], True),
                      t(("Q9", "P54", "Q10"), ["Anna Petrova", "member of sports team",
                                               "Kestrel FC"], ["ee-triples"], True)])],
        "2024-01-01": [
            ("s24a", [t(("Q11", "P108", "Q12"), ["Melih Bulu", "employer", "Haliç University"],
                        ["d-triples"], False, True),
                      t(("Q11", "P106", "Q13"), ["Melih Bulu", "occupation", "politician"],
                        ["x-triples"], True, True)])],
    }
    predictions = folder.parent / "predictions.jsonl"
    planted: dict = {"instances": 0, "asserted": defaultdict(int), "all": defaultdict(int)}
    with predictions.open("w") as pf:
        for snap, recs in snaps.items():
            d = folder / f"snapshot_{snap}"
            d.mkdir(parents=True)
            lines = []
            for hid, triples in recs:
                lines.append(json.dumps({"hash_id": hid, "passage": f"text of {hid}",
                                         "delta_dates": [snap, snap[:8] + "08"],
                                         "tkgu_triples": triples}))
                planted["instances"] += 1
                oracle = [{"triple": x["triple"], "triple_labels": [w.upper() for w in
                                                                    x["triple_labels"]],
                           "operation": None} for x in triples]
                open_ = [{"triple": None, "operation": "add" if "e-triples" in x["tkgu_operations"]
                          or "x-triples" in x["tkgu_operations"] else None,
                          "triple_labels": STUDIED if x["triple_labels"] == EDUCATED
                          else x["triple_labels"]} for x in triples]
                for model, preds in (("oracle", oracle), ("open", open_), ("nothing", [])):
                    pf.write(json.dumps({"hash_id": hid, "model": model, "predicted": preds})
                             + "\n")
                for x in triples:
                    for name in x["tkgu_operations"]:
                        op = {"x-triples": "X", "e-triples": "E", "ee-triples": "EE",
                              "ee-kg-triples": "EE-KG", "d-triples": "D"}[name]
                        kind = DEPRECATION if op == "D" else ASSERTION
                        planted["all"][(op, snap[:4])] += 1
                        planted["asserted"][(op, snap[:4])] += any(
                            a["llm_assessment"] for a in x["llm_assessment"]
                            if a["llm_prompt_type"] == kind)
            (d / f"delta_{snap[:8]}08.jsonl").write_text("\n".join(lines) + "\n")
    return folder, predictions, planted


def test_emerge_evaluate_end_to_end_on_a_synthetic_gold(tmp_path: Path, capsys) -> None:
    """Every option a user reaches for and every output file, on a gold written here."""
    from emerge_lib.cli import main
    from emerge_lib.evaluation.embed import Embedder
    from emerge_lib.evaluation.models import ensure

    gold, preds, planted = synthetic_gold(tmp_path / "gold")
    e = Embedder(ensure("all-MiniLM-L6-v2"))
    e.add([triple_text(EDUCATED), triple_text(STUDIED)])
    cosine = float(e.matrix[e.index(triple_text(EDUCATED))] @ e.matrix[e.index(triple_text(STUDIED))])
    e.close()
    assert 0.3 < cosine < 0.9  # the paraphrase counts below its cosine, not at 0.9
    low = round(cosine - 0.05, 2)
    out = tmp_path / "out"
    assert main(["evaluate", "--gold", str(gold), "--predictions", str(preds),
                 "--model", "open", "--model", "oracle", "--metrics", "completeness,recall",
                 "--threshold", str(low), "--gold-filter", "llm-asserted",
                 "--embedding-model", "all-MiniLM-L6-v2", "--out", str(out)]) == 0
    assert {p.name for p in out.iterdir()} == {
        "summary.json", "recall.md", "recall.csv", "completeness.md", "completeness.csv",
        "instances.jsonl", "scores.png", "run.json"}
    rows = json.loads((out / "summary.json").read_text())
    assert all(set(r) == {"model", "operation", "snapshot", "metric", "value", "n_gold"}
               for r in rows)
    assert {r["model"] for r in rows} == {"oracle", "open"}  # --model: "nothing" left out
    asserted = {k: v for k, v in planted["asserted"].items() if v}
    n_gold = {(r["operation"], r["snapshot"]): r["n_gold"] for r in rows
              if r["model"] == "oracle" and r["metric"] == "recall" and r["snapshot"] != "all"}
    assert n_gold == {(op, year): n for (op, year), n in asserted.items()}
    value = {(r["model"], r["operation"], r["snapshot"], r["metric"]): r["value"] for r in rows}
    assert {v for (m, *_), v in value.items() if m == "oracle"} == {1.0}
    # open: labels only, so recall 0; completeness: every asserted triple it predicted
    # with an operation that counts (the paraphrase counts at the low threshold)
    assert {v for (m, _, _, metric), v in value.items() if m == "open" and metric == "recall"} \
        == {0.0}
    assert value[("open", "E", "2023", "completeness")] == 1.0  # the paraphrase and the d+e
    assert value[("open", "X", "all", "completeness")] == 1.0
    assert value[("open", "D", "2023", "completeness")] == 0.0  # predicted as "add" only
    assert value[("open", "EE", "2023", "completeness")] == 1.0  # operation null: all five
    per = [json.loads(line) for line in (out / "instances.jsonl").read_text().splitlines()]
    assert {(p["model"], p["hash_id"], p["operation"]) for p in per} >= {
        ("open", "s23a", "E"), ("oracle", "s24a", "X")}
    for (model, op, snap, metric), v in value.items():
        if snap == "all":
            group = [p for p in per if (p["model"], p["operation"]) == (model, op)]
            assert sum(p[f"{metric}_hits"] for p in group) / sum(p["n_gold"] for p in group) \
                == pytest.approx(v)
    md = (out / "completeness.md").read_text()
    assert "| TKGU Operations | Model | 2023 | 2024 | all |" in md
    assert "| E-Triples | open | 100.0 | – | 100.0 |" in md
    assert "| D-Triples | open | 0.0 | – | 0.0 |" in md
    csv_rows = (out / "recall.csv").read_text().splitlines()
    assert csv_rows[0] == "TKGU Operations,Model,2023,2024,all,n_gold 2023,n_gold 2024,n_gold all"
    assert "X-Triples,oracle,100.0,100.0,100.0,1,1,2" in csv_rows
    # open predicts no QIDs: its recall rows are zero by construction, kept in
    # summary.json, left out of the recall table with a note
    recall_md = (out / "recall.md").read_text()
    assert "| open |" not in recall_md and not any(",open," in r for r in csv_rows)
    assert "zero by construction (no predicted QID triples for the operation): " \
           "open: X, E, EE, D." in recall_md  # EE-KG: its one triple is not asserted
    png = (out / "scores.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 5000
    run = json.loads((out / "run.json").read_text())
    assert run["threshold"] == low and run["gold_filter"] == "llm-asserted"
    assert run["instances"] == planted["instances"]
    assert "Completeness (the paper's Table 3)" in capsys.readouterr().out

    # the default threshold drops the paraphrase; recall only writes recall's files;
    # annotator_1's verdicts decide with --gold-filter human
    out2 = tmp_path / "out2"
    assert main(["evaluate", "--gold", str(gold), "--predictions", str(preds),
                 "--metrics", "completeness", "--model", "open",
                 "--embedding-model", "all-MiniLM-L6-v2", "--out", str(out2)]) == 0
    rows2 = json.loads((out2 / "summary.json").read_text())
    assert {r["metric"] for r in rows2} == {"completeness"}
    assert not (out2 / "recall.md").exists()
    e23 = next(r for r in rows2 if r["operation"] == "E" and r["snapshot"] == "2023")
    assert (e23["value"], e23["n_gold"]) == (0.5, 2)  # gold filter all: the paraphrase misses
    out3 = tmp_path / "out3"
    assert main(["evaluate", "--gold", str(gold), "--predictions", str(preds), "--metrics",
                 "recall", "--gold-filter", "human", "--out", str(out3)]) == 0
    rows3 = json.loads((out3 / "summary.json").read_text())
    assert {(r["operation"], r["snapshot"]): r["n_gold"] for r in rows3
            if r["model"] == "oracle"} == {("E", "2023"): 1, ("E", "all"): 1,
                                           ("EE-KG", "2023"): 1, ("EE-KG", "all"): 1,
                                           ("D", "2024"): 1, ("D", "all"): 1,
                                           ("X", "2024"): 1, ("X", "all"): 1}


# --- the authors' released files -----------------------------------------------------------


@pytest.fixture(scope="module")
def authors() -> Path:
    if not AUTHORS.is_file():
        pytest.skip(f"the authors' sample is not at {AUTHORS}")
    return AUTHORS


@pytest.mark.realdata
def test_the_authors_files_read_exactly(authors: Path) -> None:
    instances = read_gold(authors)
    raw = [json.loads(line) for line in authors.read_text(encoding="utf-8").splitlines()]
    assert [i.hash_id for i in instances] == [r["hash_id"] for r in raw]
    assert [i.snapshot for i in instances] == [r["delta_dates"][0] for r in raw]
    assert [i.delta_end for i in instances] == [r["delta_dates"][1] for r in raw]
    # every triple, its labels, its operations (in their order), as in the file
    for inst, r in zip(instances, raw, strict=True):
        assert [(t.triple, t.labels) for t in inst.triples] == [
            (tuple(t["triple"]), tuple(t["triple_labels"])) for t in r["tkgu_triples"]]
        assert [t.ops for t in inst.triples] == [
            tuple({"x-triples": "X", "e-triples": "E", "ee-triples": "EE",
                   "ee-kg-triples": "EE-KG", "d-triples": "D"}[o] for o in t["tkgu_operations"])
            for t in r["tkgu_triples"]]
    # gold sets per operation, with the filters, against a plain walk over the JSON
    for gold_filter in ("all", "llm-asserted", "human"):
        for op, name in {"X": "x-triples", "E": "e-triples", "EE": "ee-triples",
                         "EE-KG": "ee-kg-triples", "D": "d-triples"}.items():
            kind = DEPRECATION if op == "D" else ASSERTION
            want = 0
            for r in raw:
                for t in r["tkgu_triples"]:
                    if name not in t["tkgu_operations"]:
                        continue
                    llm = [a["llm_assessment"] for a in t["llm_assessment"]
                           if a["llm_name"] == "Meta-Llama-3.1-405B"
                           and a["llm_prompt_type"] == kind]
                    hum = [a["assessment"] for a in t.get("human_assessment", [])
                           if a["annotator_name"] == "annotator_1" and a["prompt_type"] == kind]
                    want += {"all": True, "llm-asserted": llm == [True],
                             "human": hum == [True]}[gold_filter]
            got = sum(len(i.gold(op, gold_filter)) for i in instances)
            assert got == want, (gold_filter, op)
    # hand-checked: the totals of the sample, and its two two-operation triples
    assert {op: sum(len(i.gold(op)) for i in instances) for op in OPS} == {
        "X": 19, "E": 5, "EE": 7, "EE-KG": 15, "D": 4}
    melih = next(i for i in instances if i.hash_id == "KuFuvw3H11")
    t = next(t for t in melih.triples if t.triple == ("Q104666007", "P108", "Q5642495"))
    assert t.ops == ("EE-KG", "D")
    # verdicts are keyed by (name, prompt type), not by position in the list
    assert t.llm[("Meta-Llama-3.1-8B", ASSERTION)] is True
    assert t.llm[("Meta-Llama-3.1-405B", ASSERTION)] is False
    assert t.llm[("Meta-Llama-3.1-405B", DEPRECATION)] is True
    assert t.llm[("Meta-Llama-3.1-405B_prompt_v2", ASSERTION)] is False
    assert [op for op in OPS if t in melih.gold(op, "llm-asserted")] == ["D"]
    assert {i.year for i in instances} == {"2019", "2020", "2021", "2022", "2023", "2024", "2025"}


@pytest.mark.realdata
def test_an_assessor_that_judged_nothing_is_refused(authors: Path, tmp_path: Path) -> None:
    from emerge_lib.evaluation.run import evaluate

    p = tmp_path / "p.jsonl"
    p.write_text('{"hash_id": "2tvv2DROjk", "model": "m", "predicted": []}\n')
    with pytest.raises(InputError, match="Meta-Llama-3.1-405B_prompt_v3"):
        evaluate(authors, [p], Settings(metrics=("recall",), gold_filter="llm-asserted",
                                        assessors={ASSERTION: "Meta-Llama-3.1-405B_prompt_v3",
                                                   DEPRECATION: "Meta-Llama-3.1-405B"}))


@pytest.mark.realdata
def test_emerge_evaluate_on_the_authors_files(authors: Path, tmp_path: Path, capsys) -> None:
    """The command end to end with the fast packaged model: every output, the tables in
    the paper's layout, per-instance scores that add up to the summary."""
    from emerge_lib.cli import main

    instances = read_gold(authors)
    perfect = tmp_path / "perfect.jsonl"
    with perfect.open("w") as fh:
        for i in instances:
            fh.write(json.dumps({"hash_id": i.hash_id, "model": "oracle", "predicted": [
                {"triple": list(t.triple), "triple_labels": [s.upper() for s in t.labels],
                 "operation": None} for t in i.triples]}) + "\n")
            fh.write(json.dumps({"hash_id": i.hash_id, "model": "nothing", "predicted": []}) + "\n")
    out = tmp_path / "out"
    assert main(["evaluate", "--gold", str(authors), "--predictions", str(perfect),
                 "--embedding-model", "all-MiniLM-L6-v2", "--gold-filter", "llm-asserted",
                 "--out", str(out)]) == 0
    assert {p.name for p in out.iterdir()} == {
        "summary.json", "recall.md", "recall.csv", "completeness.md", "completeness.csv",
        "instances.jsonl", "scores.png", "run.json"}
    rows = json.loads((out / "summary.json").read_text())
    assert set(rows[0]) == {"model", "operation", "snapshot", "metric", "value", "n_gold"}
    assert {r["value"] for r in rows if r["model"] == "oracle"} == {1.0}
    assert {r["value"] for r in rows if r["model"] == "nothing"} == {0.0}
    n_all = {(r["operation"], r["metric"]): r["n_gold"] for r in rows
             if r["model"] == "oracle" and r["snapshot"] == "all"}
    assert n_all[("D", "recall")] == sum(len(i.gold("D", "llm-asserted")) for i in instances)
    per = [json.loads(line) for line in (out / "instances.jsonl").read_text().splitlines()]
    assert sum(p["n_gold"] for p in per if p["model"] == "oracle" and p["operation"] == "X") \
        == n_all[("X", "completeness")]
    md = (out / "completeness.md").read_text()
    assert "| TKGU Operations | Model | 2019 | 2020 | 2021 | 2022 | 2023 | 2024 | 2025 | all |" in md
    assert "| X-Triples | nothing |" in md and "|  | oracle | 100.0 |" in md
    csv_lines = (out / "recall.csv").read_text().splitlines()
    assert csv_lines[0].startswith("TKGU Operations,Model,2019,")
    run = json.loads((out / "run.json").read_text())
    assert run["embedding_model"] == "all-MiniLM-L6-v2" and run["instances"] == 10
    assert "Completeness (the paper's Table 3)" in capsys.readouterr().out


@pytest.mark.realdata
def test_the_default_scores_the_authors_files_as_their_evaluation_does(authors: Path,
                                                                       tmp_path: Path) -> None:
    """No filter flag: the gold is what the authors' evaluation keeps with
    Meta-Llama-3.1-405B (their preloader_emerge.py:399-484 and filter_by_assessor_evaluation:
    one gold row per triple and operation, D by the deprecation verdict and every other
    operation by the assertion verdict of exactly that judge, the first such element,
    a missing verdict false), counted here from the raw lines."""
    from collections import Counter

    from emerge_lib.evaluation.data import OPS, RELEASE_TO_OP
    from emerge_lib.evaluation.run import evaluate

    want: Counter[str] = Counter()
    for line in authors.read_text().splitlines():
        for t in json.loads(line)["tkgu_triples"]:
            for name in t["tkgu_operations"]:
                prompt = "triple_deprecation" if name == "d-triples" else "triple_assertion"
                said = [a["llm_assessment"] for a in t["llm_assessment"]
                        if (a["llm_name"], a["llm_prompt_type"]) == ("Meta-Llama-3.1-405B", prompt)]
                want[RELEASE_TO_OP[name]] += bool(said) and said[0] is True
    nothing = tmp_path / "nothing.jsonl"
    nothing.write_text("".join(json.dumps({"hash_id": i.hash_id, "model": "nothing",
                                           "predicted": []}) + "\n" for i in read_gold(authors)))
    result = evaluate(authors, [nothing], Settings(metrics=("recall",)), png=False)
    assert result.run["gold_filter"] == "llm-asserted" and result.run["gold_filter_asked"] == "auto"
    got = {r["operation"]: r["n_gold"] for r in result.rows if r["snapshot"] == "all"}
    assert got == {op: want[op] for op in OPS if want[op]} and sum(got.values()) < sum(
        len(json.loads(x)["tkgu_triples"]) for x in authors.read_text().splitlines()) * 2
    # an uncurated gold (no verdict at all) is scored whole, and the run says so
    bare = tmp_path / "bare.jsonl"
    bare.write_text("".join(json.dumps({**json.loads(x), "tkgu_triples": [
        {**t, "llm_assessment": []} for t in json.loads(x)["tkgu_triples"]]}) + "\n"
        for x in authors.read_text().splitlines()))
    assert evaluate(bare, [nothing], Settings(metrics=("recall",)), png=False
                    ).run["gold_filter"] == "all"


# --- models offline ---------------------------------------------------------------------


def test_completeness_with_the_packaged_mpnet_model_offline(tmp_path: Path) -> None:
    """The paper's model from the installed PyPI parts, unpacked and checked, loaded with
    the hub switched off, in a process of its own (one torch thread)."""
    script = """
import os, sys
os.environ["HF_HUB_OFFLINE"] = "1"
from emerge_lib.evaluation.models import ensure, MPNET_SHA256, sha256_file
from emerge_lib.evaluation.embed import Embedder, triple_text
ref = ensure("all-mpnet-base-v2")
assert (ref.path / ".emerge-verified").read_text().strip() == MPNET_SHA256
e = Embedder(ref, cache_dir=sys.argv[1])
texts = [triple_text(t) for t in (["Ireland", "country", "Kill"], [" ireland ", "COUNTRY", "kill"],
         ["Kill", "located in", "Ireland"], ["snooker", "sport", "Irish Masters"])]
e.add(texts)
m = e.matrix
sims = [float(m[e.index(texts[0])] @ m[e.index(t)]) for t in texts]
print(sims)
assert sims[0] > 0.999 and sims[1] > 0.999 and 0.5 < sims[2] < 0.99 and sims[3] < 0.5
assert e.encoded == 3
e.close()
e2 = Embedder(ref, cache_dir=sys.argv[1])
e2.add(texts)
assert e2.encoded == 0   # all from the disk cache
import torch
assert torch.get_num_threads() == 1   # one torch thread on these shared 2-core machines
"""
    env = dict(os.environ, HF_HUB_OFFLINE="1", PYTHONPATH=str(REPO))
    proc = subprocess.run([sys.executable, "-c", script, str(tmp_path / "emb")], env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]


def test_damaged_model_parts_are_refused(tmp_path: Path, monkeypatch) -> None:
    import zipfile

    from emerge_lib.evaluation import models

    parts = []
    for i in range(1, 6):
        p = tmp_path / f"all-mpnet-base-v2.zip.00{i}"
        p.write_bytes(b"not a zip" * i)
        parts.append(p)
    monkeypatch.setattr(models, "_part_file", lambda name, i: parts[i - 1])
    with pytest.raises(InputError, match="do not join into a zip"):
        models.ensure("all-mpnet-base-v2", tmp_path / "cache")
    whole = tmp_path / "whole.zip"
    with zipfile.ZipFile(whole, "w") as zf:
        zf.writestr("all-mpnet-base-v2/model.safetensors", b"wrong weights")
        zf.writestr("all-mpnet-base-v2/modules.json", "[]")
    data = whole.read_bytes()
    cut = [data[i * len(data) // 5:(i + 1) * len(data) // 5] for i in range(5)]
    for p, chunk in zip(parts, cut, strict=True):
        p.write_bytes(chunk)
    with pytest.raises(InputError, match="sha256"):
        models.ensure("all-mpnet-base-v2", tmp_path / "cache")
    assert not (tmp_path / "cache" / "all-mpnet-base-v2").exists()
    assert [p.name for p in (tmp_path / "cache").iterdir()] == []  # no temporary left


def test_unknown_embedding_model_is_an_input_error() -> None:
    from emerge_lib.evaluation.models import ensure

    with pytest.raises(InputError, match="unknown embedding model"):
        ensure("bert-of-theseus")


# --- packaging ----------------------------------------------------------------------------


def _blocked_evaluate(gold: Path, tmp_path: Path) -> None:
    """`pip install emerge[eval]` is enough: the scorer and the command, completeness
    included, run with Spark, Sail, Delta, Airflow and GX blocked."""
    script = f"""
import importlib.abc, json, sys
BLOCKED = {{"pyspark", "pysail", "deltalake", "airflow", "great_expectations"}}
class Blocked(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCKED:
            raise ImportError(f"{{name}} is not installed here")
sys.meta_path.insert(0, Blocked())
import emerge_lib.evaluation, emerge_lib.evaluation.data, emerge_lib.evaluation.metrics
import emerge_lib.evaluation.embed, emerge_lib.evaluation.models, emerge_lib.evaluation.report
import emerge_lib.evaluation.run, emerge_lib.evaluation.adapters.edc
import emerge_lib.evaluation.adapters.relik, emerge_lib.commands.evaluate
from emerge_lib.evaluation.data import read_gold
from emerge_lib.cli import main
first = read_gold({str(gold)!r})[0]
p = {str(tmp_path / 'p.jsonl')!r}
open(p, "w").write(json.dumps({{"hash_id": first.hash_id, "model": "m", "predicted": [
    {{"triple": list(t.triple), "triple_labels": list(t.labels), "operation": None}}
    for t in first.triples]}}) + "\\n")
assert main(["evaluate", "--gold", {str(gold)!r}, "--predictions", p,
             "--embedding-model", "all-MiniLM-L6-v2", "--out", {str(tmp_path / 'out')!r}]) == 0
assert not BLOCKED & {{m.split(".")[0] for m in sys.modules}}, sorted(
    BLOCKED & {{m.split(".")[0] for m in sys.modules}})
"""
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          cwd=tmp_path, timeout=600,
                          env=dict(os.environ, PYTHONPATH=str(REPO), HF_HUB_OFFLINE="1"))
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert any(r["value"] > 0 for r in rows) and {r["model"] for r in rows} == {"m"}


def test_the_evaluate_path_imports_no_engine_and_no_airflow(tmp_path: Path) -> None:
    gold, _, _ = synthetic_gold(tmp_path / "gold")
    _blocked_evaluate(gold, tmp_path)


@pytest.mark.realdata
def test_the_evaluate_path_imports_no_engine_and_no_airflow_on_the_authors_files(
        authors: Path, tmp_path: Path) -> None:
    _blocked_evaluate(authors, tmp_path)


def test_a_hash_id_of_the_wrong_type_is_named_as_such(tmp_path: Path) -> None:
    """`"hash_id": 123` is there, a number: the line says so rather than "missing"."""
    cases = {'{"hash_id": 123, "model": "m", "predicted": []}':
             "hash_id 123 is a JSON number, not a string",
             '{"model": "m", "predicted": []}': "no hash_id",
             '{"hash_id": "h", "model": null, "predicted": []}':
             "model null is a JSON null, not a string",
             '{"hash_id": "", "model": "m", "predicted": []}': "hash_id is empty"}
    for n, (line, message) in enumerate(cases.items()):
        path = tmp_path / f"p{n}.jsonl"
        path.write_text(line + "\n")
        with pytest.raises(InputError, match=rf"{path}:1: .*{message}"):
            read_predictions(path)
    with pytest.raises(InputError, match=r"w: hash_id \[1\] is a JSON array"):
        instance_from_record({"hash_id": [1]}, "w")
