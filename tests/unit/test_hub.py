"""A small hand-made release read the four ways a researcher reads one: croissant.json
(mlcroissant, and the release gate's check of it), ``load_release``, ``emerge query``
(DuckDB) and ``emerge diff`` (by hash_id); files only, no engine."""

from __future__ import annotations

import json
import shutil
from itertools import islice
from pathlib import Path

import pytest
from hubkit import SNAPS, build_release, line

from emerge_lib.cli import main
from emerge_lib.formats.croissant import RAI_PROPERTIES
from emerge_lib.formats.layout import CROISSANT, corpus_path
from emerge_lib.formats.manifest import SELF_DESCRIBING, read_manifest
from emerge_lib.hub import ReleaseNotFound, load_release, open_release, version_of
from emerge_lib.hub.diff import diff_releases
from emerge_lib.hub.load import LoadError
from emerge_lib.hub.query import QueryError, render, run

A1 = line(SNAPS[0], 1, "a", [("E", "Q1", "Q2"), ("X", "Q1", "Q3")], verdict=True)
B1 = line(SNAPS[0], 1, "b", [("D", "Q2", "Q3")])
A2 = line(SNAPS[0], 2, "a", [("E", "Q1", "Q2"), ("X", "Q1", "Q3")], verdict=True)
C4 = line(SNAPS[1], 1, "c", [("EE", "Q9", "Q1"), ("EE-KG", "Q9", "Q2")])


@pytest.fixture()
def release(tmp_path: Path) -> Path:
    return build_release(tmp_path / "old", {(SNAPS[0], 1): [A1, B1], (SNAPS[0], 2): [A2],
                                    (SNAPS[1], 1): [C4]},
                 {(SNAPS[0], 1): [B1], (SNAPS[1], 1): []})


def test_croissant_validates_and_yields_every_record_set(release: Path) -> None:
    import mlcroissant as mlc

    doc = json.loads((release / CROISSANT).read_text())
    assert doc["version"] == read_manifest(release)["version"]
    assert {k for k in doc if k.startswith("rai:")} <= RAI_PROPERTIES  # unknown keys pass mlc
    assert "M (triple_assertion; served as m, quantization bf16)" in doc[
        "rai:machineAnnotationTools"]
    dataset = mlc.Dataset(jsonld=str(release / CROISSANT))
    got = {rs["@id"]: list(islice(dataset.records(rs["@id"]), 10)) for rs in doc["recordSet"]}
    assert {k: len(v) for k, v in got.items()} == {
        "corpus": 4, "evaluation_set": 1, "triples": 7, "kg_triples": 4}
    ids = {r["corpus/hash_id"].decode() for r in got["corpus"]}
    assert ids == {A1["hash_id"], B1["hash_id"], A2["hash_id"], C4["hash_id"]}
    verdicts = [a["triples/llm_assessment/llm_assessment"] for r in got["triples"]
                for a in r["triples/llm_assessment"]]
    assert verdicts == [True, True]  # nested lists of records, one level deep
    files = {f["path"]: f for f in read_manifest(release)["files"]}
    objects = {n["contentUrl"]: n for n in doc["distribution"] if n["@type"] == "cr:FileObject"}
    assert set(objects) == set(files) - SELF_DESCRIBING
    assert all(objects[p]["sha256"] == files[p]["sha256"] for p in objects)


def _edit(release: Path, change) -> None:
    doc = json.loads((release / CROISSANT).read_text())
    change(doc)
    (release / CROISSANT).write_text(json.dumps(doc))


@pytest.mark.parametrize(("change", "problem"), [
    # without conformsTo, mlcroissant reads it as Croissant 0.8, which it is not
    (lambda d: d.pop("conformsTo"), 'should have an attribute "@type"'),
    (lambda d: d["distribution"][0].update(sha256="0" * 64), "size or sha256 differs"),
    (lambda d: d["recordSet"][0]["field"][1]["source"]["extract"].update(column="text"),
     "corpus/passage: no column 'text'"),
    (lambda d: d["distribution"][-1].update(encodingFormat="application/vnd.apache.parquet"),
     "mlcroissant cannot read it"),
])
def test_the_gate_refuses_a_croissant_that_does_not_hold(release: Path, change,
                                                         problem: str) -> None:
    from emerge_lib.validation.gate import ValidationFailed
    from emerge_lib.validation.validate import ReleaseValidation, check_croissant

    files = {f["path"]: f for f in read_manifest(release)["files"]}
    good = check_croissant(release, files)
    assert good["success"] and set(good["record_sets"].values()) == {"read"}
    _edit(release, change)
    verdict = check_croissant(release, files)
    assert not verdict["success"] and problem in " ".join(verdict["problems"])
    report = ReleaseValidation([], {"success": True})
    report.add_croissant(verdict)
    assert report.manifest["success"] is False and "croissant.json" in report.manifest["reason"]
    with pytest.raises(ValidationFailed, match="croissant.json does not validate"):
        report.raise_for_failure()


def test_load_release_in_every_kind_split_and_format(release: Path) -> None:
    lines = load_release(release)
    assert lines.num_rows == 4 and version_of(lines) == read_manifest(release)["version"]
    assert lines.info.description.startswith(f"EMERGE release {version_of(lines)}")
    assert lines.features["delta_dates"].feature.dtype == "date32"
    one = load_release(release, snapshot="2024-04-01", format="pandas")
    assert list(one["hash_id"]) == [C4["hash_id"]] and version_of(one) == version_of(lines)
    test = load_release(release, split="test", format="arrow")
    assert test.column("hash_id").to_pylist() == [B1["hash_id"]]
    triples = load_release(release, kind="triples", format="pandas")
    assert len(triples) == 7 and sorted(triples["triple_index"]) == [0, 0, 0, 0, 1, 1, 1]
    tested = load_release(release, kind="triples", split="test", format="arrow")
    assert tested.column("hash_id").to_pylist() == [B1["hash_id"]]
    kg = load_release(release, kind="kg", snapshot="2024-01-01", format="arrow")
    assert kg.num_rows == 2 and version_of(kg) == version_of(lines)
    with pytest.raises(LoadError, match="no snapshot 2019-01-01; it has 2024-01-01, 2024-04-01"):
        load_release(release, snapshot="2019-01-01")
    with pytest.raises(LoadError, match="kind 'graph'"):
        load_release(release, kind="graph")  # type: ignore[arg-type]
    with pytest.raises(ReleaseNotFound, match="no such release folder"):
        load_release(release / "nope")


def test_query_answers_counts_per_operation_and_a_passage(release: Path, capsys) -> None:
    opened = open_release(release)
    columns, rows = run(opened, "SELECT operation, count(*) AS n FROM operations "
                                "GROUP BY ALL ORDER BY ALL")
    assert columns == ["operation", "n"] and rows == [
        ("d-triples", 1), ("e-triples", 2), ("ee-kg-triples", 1), ("ee-triples", 1),
        ("x-triples", 2)]
    _, rows = run(opened, "SELECT operation, count(*) FROM evaluation_operations GROUP BY ALL")
    assert rows == [("d-triples", 1)]
    # window is a keyword of SQL: the column is "window"
    _, rows = run(opened, f"SELECT snapshot, \"window\", passage FROM lines "
                          f"WHERE hash_id = '{C4['hash_id']}'")
    assert [(str(s), w, p) for s, w, p in rows] == [("2024-04-01", 1, C4["passage"])]
    with pytest.raises(QueryError, match="nope"):
        run(opened, "SELECT * FROM nope")
    text = render(["a", "b"], [(1, None), ("x" * 80, [1])])
    assert text.splitlines()[2].split() == ["1", "NULL"] and "(2 rows)" in text
    assert text.splitlines()[3] == "x" * 59 + "…  [1]"  # cut at 60 characters
    assert render(["a"], [(1,)], "csv") == "a\n1\n"
    assert main(["query", "--release", str(release), "--format", "json",
                 "SELECT count(*) AS n FROM triples"]) == 0
    assert json.loads(capsys.readouterr().out) == {"n": 7}
    assert main(["query", "--release", str(release), "SELECT * FROM nope"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("emerge: ") and len(err.strip().splitlines()) == 1


def test_diff_lists_what_a_new_release_adds_removes_and_changes(release: Path, tmp_path: Path,
                                                                 capsys) -> None:
    """The next quarter: A2's triple lost its judge's support (changed), B1 dropped
    (removed), a new line in window 2 and a new snapshot (added)."""
    A2_no = line(SNAPS[0], 2, "a", [("E", "Q1", "Q2"), ("X", "Q1", "Q3")], verdict=False)
    D2 = line(SNAPS[0], 2, "d", [("E", "Q4", "Q5")])
    E7 = line("2024-07-01T00:00:00Z", 1, "e", [("X", "Q6", "Q7")])
    new = build_release(tmp_path / "new", {(SNAPS[0], 1): [A1], (SNAPS[0], 2): [A2_no, D2],
                                   (SNAPS[1], 1): [C4], ("2024-07-01T00:00:00Z", 1): [E7]},
                {(SNAPS[0], 1): [], (SNAPS[1], 1): [C4]})
    report = diff_releases(open_release(release), open_release(new))
    corpus = report.counts["corpus"]
    assert dict(corpus["2024-01-01"]) == {"unchanged": 1, "removed": 1, "changed": 1,
                                          "added": 1}
    assert dict(corpus["2024-04-01"]) == {"unchanged": 1}
    assert dict(corpus["2024-07-01"]) == {"added": 1}
    assert dict(report.totals("evaluation_set")) == {"removed": 1, "added": 1}
    changed = [c for c in report.changes if c.state == "changed"]
    assert [(c.hash_id, c.fields) for c in changed] == [(A2["hash_id"], ("tkgu_triples",))]
    assert {c.hash_id for c in report.changes if c.state == "added"} == {
        D2["hash_id"], E7["hash_id"], C4["hash_id"]}
    assert main(["diff", "--old", str(release), "--new", str(new), "--list"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"emerge diff {report.old_version} → {report.new_version}"
    assert any(line.split() == ["corpus", "all", "added", "2", "removed", "1", "changed", "1",
                                "unchanged", "2"] for line in out)
    assert f"changed\tcorpus\t{corpus_path(SNAPS[0], 2, 7)}\t{A2['hash_id']}\ttkgu_triples" \
        in out
    same = diff_releases(open_release(release), open_release(shutil.copytree(
        release, tmp_path / "copy")))
    assert not same.changes and same.old_version == same.new_version
