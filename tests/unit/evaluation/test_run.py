"""The scorer end to end (emerge_lib/evaluation/run.py, ``emerge evaluate``): on a
synthetic gold and on the authors' files, its outputs, and what its path imports."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest
from evalkit import AUTHORS, triple
from repo import REPO

from emerge_lib.core.errors import InputError
from emerge_lib.evaluation.data import (
    ASSERTION,
    DEPRECATION,
    OPS,
    instance_from_record,
    read_gold,
    read_predictions,
)
from emerge_lib.evaluation.embed import triple_text
from emerge_lib.evaluation.metrics import ALL_METRICS, METRICS, Settings

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
    assert all(set(r) == {"model", "operation", "snapshot", "metric", "value", "n_gold",
                          "ci_low", "ci_high"}  # --bootstrap 1000 by default
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
    assert "| E-Triples (Add) | open | 100.0 [100.0, 100.0] | – | 100.0 [100.0, 100.0] |" in md
    assert "| D-Triples (Deprecate) | open | 0.0 [0.0, 0.0] | – | 0.0 [0.0, 0.0] |" in md
    assert "In brackets: the 95 % bootstrap interval" in md
    assert json.loads((out / "run.json").read_text())["bootstrap"] == {
        "resamples": 1000, "seed": 0, "level": 0.95, "strata": "snapshot x delta"}
    csv_rows = (out / "recall.csv").read_text().splitlines()
    assert csv_rows[0] == "TKGU Operations,Model,2023,2024,all,n_gold 2023,n_gold 2024,n_gold all"
    assert "X-Triples,oracle,100.0,100.0,100.0,1,1,2" in csv_rows
    # open predicts no QIDs: its recall rows are zero by construction, kept in
    # summary.json, left out of the recall table with a note
    recall_md = (out / "recall.md").read_text()
    assert "| open |" not in recall_md and not any(",open," in r for r in csv_rows)
    assert "zero by construction (no predicted QID triples for the operation): " \
           "open: X (Exists), E (Add), EE (Mint+Add), D (Deprecate)." in recall_md  # EE-KG: its one triple is not asserted
    png = (out / "scores.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 5000
    from PIL import Image

    titles = Image.open(out / "scores.png").text["Description"]
    assert "X-Triples (Exists) — completeness" in titles  # the paper's names beside the ids
    assert "D-Triples (Deprecate) — recall" in titles
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


@pytest.fixture(scope="module")
def authors() -> Path:
    if not AUTHORS.is_file():
        pytest.skip(f"the authors' sample is not at {AUTHORS}")
    return AUTHORS


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
        "summary.json", *(f"{m}.{ext}" for m in ALL_METRICS for ext in ("md", "csv")),
        "instances.jsonl", "scores.png", "run.json"}
    rows = json.loads((out / "summary.json").read_text())
    assert set(rows[0]) == {"model", "operation", "snapshot", "metric", "value", "n_gold",
                            "ci_low", "ci_high"}
    # the paper's two metrics; the authors' further columns are tested in test_metrics.py
    assert {r["value"] for r in rows if r["model"] == "oracle" and r["metric"] in METRICS} \
        == {1.0}
    assert {r["value"] for r in rows if r["model"] == "nothing"} == {0.0}
    n_all = {(r["operation"], r["metric"]): r["n_gold"] for r in rows
             if r["model"] == "oracle" and r["snapshot"] == "all"}
    assert n_all[("D", "recall")] == sum(len(i.gold("D", "llm-asserted")) for i in instances)
    per = [json.loads(line) for line in (out / "instances.jsonl").read_text().splitlines()]
    assert sum(p["n_gold"] for p in per if p["model"] == "oracle" and p["operation"] == "X") \
        == n_all[("X", "completeness")]
    md = (out / "completeness.md").read_text()
    assert "| TKGU Operations | Model | 2019 | 2020 | 2021 | 2022 | 2023 | 2024 | 2025 | all |" in md
    assert "| X-Triples (Exists) | nothing |" in md and "|  | oracle | 100.0 [100.0, 100.0] |" in md
    # the intervals: each holds its value
    rows = json.loads((out / "summary.json").read_text())
    # (to rounding: a mean over instances and its resampled ratio differ in the last bit)
    assert [r for r in rows if not r["ci_low"] - 1e-12 <= r["value"] <= r["ci_high"] + 1e-12
            ] == []
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

    from emerge_lib.evaluation.data import RELEASE_TO_OP
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


def _blocked_evaluate(gold: Path, tmp_path: Path) -> None:
    """The eval extra is enough: the scorer and the command, completeness
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
    # the 10-20 s of torch's import are announced, not silent
    loading = proc.stderr.find("loading the embedding model all-MiniLM-L6-v2")
    assert 0 <= loading < proc.stderr.find("embedding model all-MiniLM-L6-v2 loaded in")


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


def test_after_scores_only_the_lines_whose_passage_appeared_after_the_cutoff(
        tmp_path: Path, capsys) -> None:
    """`emerge evaluate --after DATE` (a model's training cutoff): the lines revised after
    it are scored, the rest are not, and the run says how many were left; a cutoff past
    every line is one clear line, not an empty table."""
    from emerge_lib.cli import main

    gold, preds, _ = synthetic_gold(tmp_path / "gold")
    revised = {"s23a": "2022-12-30T10:00:00Z", "s23b": "2023-01-03T09:00:00Z",
               "s24a": "2024-01-02T00:00:00Z"}
    for path in gold.rglob("*.jsonl"):
        lines = [json.loads(x) for x in path.read_text().splitlines()]
        path.write_text("".join(json.dumps({**x, "revision_date": revised[x["hash_id"]]})
                                + "\n" for x in lines))
    out = tmp_path / "out"
    assert main(["evaluate", "--gold", str(gold), "--predictions", str(preds), "--model",
                 "oracle", "--metrics", "recall", "--gold-filter", "all", "--after",
                 "2023-01-01", "--out", str(out)]) == 0
    assert "--after 2023-01-01: 2 of 3 lines appeared after it" in capsys.readouterr().out
    run = json.loads((out / "run.json").read_text())
    assert (run["after"], run["instances"], run["instances_read"]) == ("2023-01-01", 2, 3)
    scored = {json.loads(x)["hash_id"] for x in (out / "instances.jsonl").read_text().splitlines()}
    assert scored == {"s23b", "s24a"}
    # an instant works too, to the second
    assert main(["evaluate", "--gold", str(gold), "--predictions", str(preds), "--metrics",
                 "recall", "--gold-filter", "all", "--after", "2024-01-01T23:59:59Z",
                 "--out", str(tmp_path / "o2")]) == 0
    assert json.loads((tmp_path / "o2" / "run.json").read_text())["instances"] == 1
    assert main(["evaluate", "--gold", str(gold), "--predictions", str(preds), "--metrics",
                 "recall", "--after", "2025-06-01", "--out", str(tmp_path / "o3")]) == 1
    err = capsys.readouterr().err
    assert "no gold line's passage appeared after it" in err and \
        "2024-01-02T00:00:00Z" in err and "Traceback" not in err
    assert main(["evaluate", "--gold", str(gold), "--predictions", str(preds), "--after",
                 "soon", "--out", str(tmp_path / "o4")]) != 0
    assert "not a date or ISO 8601 instant: 'soon'" in capsys.readouterr().err
