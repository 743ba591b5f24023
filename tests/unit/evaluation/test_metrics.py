"""The scorer's metrics (emerge_lib/evaluation/metrics.py) on hand-computed cases: recall
and completeness, filters, per snapshot and per delta."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from evalkit import FakeEmbedder, record, run, triple

from emerge_lib.core.errors import InputError
from emerge_lib.evaluation.data import (
    ASSERTION,
    DEPRECATION,
    OPS,
    prediction_from_json,
)
from emerge_lib.evaluation.embed import triple_text
from emerge_lib.evaluation.metrics import (
    Settings,
    model_predictions,
    qid_prf,
    score,
    summarize,
    valid_qid_triple,
)


def pred(triple=None, labels=None, op="add"):
    return prediction_from_json({"triple": triple, "triple_labels": labels, "operation": op}, "t")


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
    assert [(c[0], c[1]) for c in cells] == [("E-Triples (Add)", "cie"), ("", "elsewhere"),
                                             ("", "empty"), ("D-Triples (Deprecate)", "elsewhere"),
                                             ("", "empty")]
    assert markdown(list(rows_of(rows)), "recall", hidden).rstrip().endswith(
        "(no predicted QID triples for the operation): cie: D (Deprecate); "
        "oie: E (Add), D (Deprecate).")


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


# --- the authors' further columns: QID precision/recall/F1 and prediction-side completeness

JUDGE = "Meta-Llama-3.1-405B"  # the authors' assessor, named as their files name it
YES, NO = [(JUDGE, ASSERTION, True)], [(JUDGE, ASSERTION, False)]


def test_qid_prf_is_the_authors_exact_match_with_its_edge_cases() -> None:
    a, b, c, d = ("Q1", "P1", "Q2"), ("Q3", "P1", "Q4"), ("Q5", "P1", "Q6"), ("Q7", "P1", "Q8")
    assert qid_prf([], []) == (0.0, 0.0, 0.0)  # both empty: 0, not 1 (their :67-68)
    assert qid_prf([], [a]) == (0.0, 0.0, 0.0)  # no gold: precision 0/1, recall 0
    assert qid_prf([a], []) == (0.0, 0.0, 0.0)  # no prediction: precision 0 by their guard
    # invalid predictions are dropped before counting: a None, --NME--, NME, an empty part,
    # a lower-case or label-like id (their _is_valid_qid_triple)
    junk = [("Q1", "P1", None), ("Q1", "P1", "--NME--"), ("NME", "P1", "Q2"), ("", "P1", "Q2"),
            ("q1", "P1", "Q2"), ("Q1", "country", "Q2")]
    assert qid_prf([a], [a, *junk]) == (1.0, 1.0, 1.0)
    assert qid_prf([a], junk) == (0.0, 0.0, 0.0)
    p, r, f = qid_prf([a, b, c], [a, d, a])  # duplicates count once: tp 1 of 2 predicted
    assert (p, r) == (0.5, pytest.approx(1 / 3)) and f == pytest.approx(0.4)  # 2·(1/6)/(5/6)
    assert not valid_qid_triple(("Q1", "P1")) and valid_qid_triple(("Q1", "P31", "Q5"))


def test_qid_metrics_average_instances_and_count_those_the_filter_emptied() -> None:
    """Planted: a holds gold A, B (asserted) and C (rejected), predicted A, C, D and an
    invalid triple: P 1/3, R 1/2, F1 0.4. b's only E triple was rejected: gold empty after
    the filter, one prediction: 0, 0, 0, and it still counts (the authors' row exists
    before the filter). c: gold F, no line of the model: 0, 0, 0 (empty predictions)."""
    qa, qb, qc, qd, qf, qx = (["Q1", "P1", f"Q{i}"] for i in (2, 3, 4, 5, 6, 7))
    a = record("a", [triple(*qa, ["a", "r", "b"], "e-triples", llm=YES),
                     triple(*qb, ["a", "r", "c"], "e-triples", llm=YES),
                     triple(*qc, ["a", "r", "d"], "e-triples", llm=NO),
                     triple(*qx, ["a", "r", "x"], "x-triples", llm=YES)])
    b = record("b", [triple(*qc, ["a", "r", "d"], "e-triples", llm=NO)])
    c = record("c", [triple(*qf, ["a", "r", "f"], "e-triples", llm=YES)])
    preds = {"m": {"a": [pred(qa), pred(qc), pred(qd), pred(["Q1", "P1", "--NME--"]),
                         pred(qx, op="deprecate")],  # counts for D only: not X's, not E's
                   "b": [pred(qa)]}}
    rows, scores = run([a, b, c], preds, gold_filter="llm-asserted")
    n_inst = {k[3]: r for k, r in _rows([a, b, c], preds, gold_filter="llm-asserted").items()
              if k[:3] == ("m", "E", "all")}
    assert rows[("m", "E", "all", "qid_precision")] == (pytest.approx(1 / 9), 3)  # (1/3+0+0)/3
    assert rows[("m", "E", "all", "qid_recall")] == (pytest.approx(1 / 6), 3)  # (1/2+0+0)/3
    assert rows[("m", "E", "all", "qid_f1")] == (pytest.approx(0.4 / 3), 3)
    assert n_inst["qid_f1"]["n_instances"] == 3 and n_inst["qid_f1"]["n_gold"] == 3
    # emerge's recall is the micro-average over the asserted gold triples: A of A, B, F
    assert rows[("m", "E", "all", "recall")] == (pytest.approx(1 / 3), 3)
    # X: a's one asserted triple, predicted only as a deprecation: 0 everywhere
    assert rows[("m", "X", "all", "qid_recall")] == (0.0, 1)
    b_row = next(s for s in scores if s.hash_id == "b")
    assert (b_row.n_gold, b_row.recall_hits, b_row.qid) == (0, None, (0.0, 0.0, 0.0))
    assert "recall" not in b_row.to_dict() and b_row.to_dict()["qid_precision"] == 0.0
    rows, _ = run([a, b, c], preds, gold_filter="llm-asserted", only_predicted=True)
    assert rows[("m", "E", "all", "qid_precision")] == (pytest.approx(1 / 6), 2)  # a and b
    assert rows[("m", "E", "all", "qid_f1")] == (pytest.approx(0.2), 2)
    # without the filter b's C is gold: b scores 0 (predicted A), a scores P 2/3, R 2/3
    rows, _ = run([a, b, c], preds, gold_filter="all")
    assert rows[("m", "E", "all", "qid_recall")] == (pytest.approx(2 / 9), 5)


def test_prediction_side_completeness_masks_by_the_verdicts() -> None:
    """Planted (FakeEmbedder: "near:" 0.95, "far:" 0.85 with their key): a's gold k1 is
    asserted, k2 rejected; predicted k1, near:k1 (matched), k2 (matches only the rejected
    triple: masked out, unmatched), far:k1 (below 0.9), k1 again (one distinct triple),
    and k9 as a deprecation (not E's). b's only gold was rejected: its prediction scores
    0. c has gold and no prediction: nothing to count. E: 2 of 5 predicted triples."""
    a = record("a", [triple("Q1", "P1", "Q2", ["k1", "", ""], "e-triples", llm=YES),
                     triple("Q1", "P1", "Q3", ["k2", "", ""], "e-triples", llm=NO)])
    b = record("b", [triple("Q1", "P1", "Q4", ["k3", "", ""], "e-triples", llm=NO)])
    c = record("c", [triple("Q1", "P1", "Q5", ["k4", "", ""], "e-triples", llm=YES)])
    labels = ["k1", "near:k1", "k2", "far:k1", "k1"]
    preds = {"m": {"a": [pred(labels=[t, "", ""]) for t in labels]
                   + [pred(labels=["k9", "", ""], op="deprecate")],
                   "b": [pred(labels=["k3", "", ""])]}}
    rows = _rows([a, b, c], preds, gold_filter="llm-asserted")
    cell = rows[("m", "E", "all", "pred_completeness")]
    assert (cell["value"], cell["n_pred"]) == (pytest.approx(2 / 5), 5)
    # gold side for contrast: k1 matched, k4 not
    assert rows[("m", "E", "all", "completeness")]["value"] == 0.5
    # unfiltered, k2 and k3 are gold: 4 of 5
    rows = _rows([a, b, c], preds, gold_filter="all")
    assert rows[("m", "E", "all", "pred_completeness")]["value"] == pytest.approx(4 / 5)
    # a group with no predicted triple has no value (0/0): no row
    rows = _rows([c], {"m": {"c": []}}, gold_filter="llm-asserted")
    assert ("m", "E", "all", "pred_completeness") not in rows
    assert rows[("m", "E", "all", "qid_precision")]["value"] == 0.0


def _rows(instances, preds, **kw):
    settings = Settings(**kw)
    scores = score(instances, model_predictions(instances, preds), settings, FakeEmbedder())
    return {(r["model"], r["operation"], r["snapshot"], r["metric"]): r
            for r in summarize(scores, settings.metrics)}


def test_the_configuration_knows_every_metric_and_scores_them_all_by_default() -> None:
    from typing import get_args

    from emerge_lib.core.config import EvaluationSettings, Metric
    from emerge_lib.evaluation.metrics import ALL_METRICS

    assert get_args(Metric) == ALL_METRICS
    assert tuple(EvaluationSettings().metrics) == ALL_METRICS == Settings().metrics
