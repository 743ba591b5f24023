"""The scorer's inputs (emerge_lib/evaluation/data.py): prediction files checked, the
authors' prediction blocks, the authors' released files read exactly."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from evalkit import AUTHORS, record, run, triple

from emerge_lib.core.errors import InputError
from emerge_lib.evaluation.data import (
    ASSERTION,
    DEPRECATION,
    OPS,
    Predicted,
    block_predictions,
    prediction_line,
    read_gold,
    read_predictions,
)
from emerge_lib.evaluation.metrics import Settings


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


@pytest.mark.parametrize("bad, why", [
    (b'{"hash_id": "a", "model": "m", "predicted": []}\n\xff\xfe binary\n', "not UTF-8"),
    (b'{"hash_id": "a", "model": "m", "predicted": []}\n' + b"[" * 100_000 + b"\n",
     "nested too deep"),
    (b'{"hash_id": "a", "model": "m", "predicted": []}\n' + b'{"a":' * 100_000 + b"\n",
     "nested too deep"),
])
def test_predictions_not_utf8_or_too_deep_are_one_line_with_file_and_line(
        tmp_path, bad: bytes, why: str) -> None:
    """Binary predictions gave a decode error naming no file; deep ones a RecursionError."""
    from emerge_lib.evaluation.data import read_predictions

    for name, data in (("p.jsonl", bad), ("p.jsonl.gz", __import__("gzip").compress(bad))):
        path = tmp_path / name
        path.write_bytes(data)
        with pytest.raises(InputError) as info:
            read_predictions(path)
        text = str(info.value)
        assert text.startswith(f"{path}:2: ") and why in text and "\n" not in text
