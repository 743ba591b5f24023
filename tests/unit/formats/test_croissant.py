"""croissant.json (emerge_lib/formats/croissant.py) of a small hand-made release
(kits/hubkit.py): mlcroissant reads every record set, and the release gate refuses one that
does not hold; files only, no engine."""

from __future__ import annotations

import json
from itertools import islice
from pathlib import Path

import pytest
from hubkit import A1, A2, B1, C4, small_release

from emerge_lib.formats.croissant import RAI_PROPERTIES
from emerge_lib.formats.layout import CROISSANT
from emerge_lib.formats.manifest import SELF_DESCRIBING, read_manifest


@pytest.fixture()
def release(tmp_path: Path) -> Path:
    return small_release(tmp_path / "old")


def test_croissant_validates_and_yields_every_record_set(release: Path) -> None:
    import mlcroissant as mlc

    doc = json.loads((release / CROISSANT).read_text())
    # MAJOR.MINOR.PATCH from the newest snapshot, the content version as build metadata;
    # datePublished: the end of the newest snapshot's last window (no dump recorded here)
    assert doc["version"] == f"2024.4.1+{read_manifest(release)['version']}"
    assert doc["datePublished"] == "2024-04-15"
    assert {k for k in doc if k.startswith("rai:")} <= RAI_PROPERTIES  # unknown keys pass mlc
    assert "M (triple_assertion; served as m, quantization bf16)" in doc[
        "rai:machineAnnotationTools"]
    dataset = mlc.Dataset(jsonld=str(release / CROISSANT))
    assert dataset.metadata.ctx.issues.warnings == set()  # it warned twice on every load
    assert dataset.metadata.ctx.issues.errors == set()
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


def test_date_published_is_the_newest_dump_the_release_was_built_from() -> None:
    from emerge_lib.formats.croissant import date_published, semantic_version

    dumps = [{"wiki": "wikidatawiki", "dump_date": "20240520"},
             {"wiki": "enwiki", "dump_date": "20240601"}]
    assert date_published({}, dumps, ["2024-04-01T00:00:00Z"]) == "2024-06-01"
    assert date_published({}, [], []) is None
    # release.provenance: history: the day the newest history held ends, whatever the files
    history = [{"wiki": "enwiki", "revisions_before": "2024-05-20"},
               {"wiki": "wikidatawiki", "revisions_before": "2024-06-02"}]
    assert date_published({}, dumps, [], history) == "2024-06-02"
    assert semantic_version("0123456789abcdef", []) == "0.0.0+0123456789abcdef"
    assert semantic_version("0123456789abcdef", ["2019-01-01T00:00:00Z",
                                                 "2024-10-01T00:00:00Z"]) == \
        "2024.10.1+0123456789abcdef"
