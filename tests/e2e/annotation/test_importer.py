"""``emerge annotate`` on a curated, validated release of the tiny world (planted LLM
verdicts from the stub): export → two annotators (planted verdicts, in Label Studio's JSON
export format) → import → the agreement table, recomputed here independently; the authors'
format; idempotent imports; errors before anything is written; the disagreements imported
back as a resolving annotator; a rebuild keeps the annotation listed, validated and on
the card. The real Label Studio round trip is tests/system/annotation/test_labelstudio.py."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest
from annotatekit import answers, curated, planted

from emerge_lib.annotation import agreement as ag
from emerge_lib.annotation import disagreements as dis
from emerge_lib.annotation.importer import import_annotations
from emerge_lib.annotation.release import AnnotationError, read_annotations
from emerge_lib.annotation.sample import export
from emerge_lib.cli import main
from emerge_lib.formats.format import ASSERTION, DEPRECATION
from emerge_lib.formats.manifest import read_manifest, verify_release

ADDITIONS, DEPRECATIONS = "Meta-Llama-3.1-8B", "Meta-Llama-3.1-405B"
FILE = "human_annotation/solved_disagreements.jsonl"


@pytest.fixture(scope="module")
def made(worlds, spark, tmp_path_factory):
    """The curated release (shared: tests copy it) and its export of 3 per operation."""
    base = tmp_path_factory.mktemp("annotate")
    cur = curated(worlds, spark, base)
    export(cur.release, base / "export", per_op=3, seed=1)
    return cur, json.loads((base / "export" / "tasks.json").read_text()), base / "export"


def _copy(made, tmp_path: Path) -> Path:
    shutil.copytree(made[0].release, tmp_path / "release")
    return tmp_path / "release"


def _file(tmp_path: Path, name: str, tasks, users, **kw) -> Path:
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(answers(tasks, users, **kw)))
    return path


def _digests(root: Path) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


def _expected(release: Path, tasks) -> dict[str, float]:
    """H1-H2 and H1-LLM κ of the planted answers, paired here from the tasks and the
    release's own LLM verdicts (every question both annotators answered)."""
    from sklearn.metrics import cohen_kappa_score

    lines = {json.loads(x)["hash_id"]: json.loads(x) for p in release.glob("corpus/*/*.jsonl")
             for x in p.read_text().splitlines()}
    h1, h2, llm = [], [], []
    for t in tasks:
        d = t["data"]
        triple = next(x for x in lines[d["hash_id"]]["tkgu_triples"] if x["triple"] == d["triple"])
        judge = DEPRECATIONS if d["prompt_type"] == DEPRECATION else ADDITIONS
        said = next(a["llm_assessment"] for a in triple["llm_assessment"]
                    if a["llm_name"] == judge and a["llm_prompt_type"] == d["prompt_type"])
        ops = [o for o in d["tkgu_operations"]
               if (o == "d-triples") == (d["prompt_type"] == DEPRECATION)]
        for _ in ops:  # an item per operation the question stands for
            h1.append(planted(t, "annotator_1"))
            h2.append(planted(t, "annotator_2"))
            llm.append(said)
    return {"cohen_h1_h2": cohen_kappa_score(h1, h2), "cohen_h1_llm": cohen_kappa_score(h1, llm),
            "n": len(h1)}


def test_two_annotators_import_in_the_authors_format_and_agree(made, spark, tmp_path) -> None:
    cur, tasks, _ = made
    release = _copy(made, tmp_path)
    before = _digests(release)
    first = import_annotations(release, _file(tmp_path, "a1", tasks, {2: "annotator_1"}),
                               spark, ["2=annotator_1"])
    assert first.added == len(tasks) and first.table is None  # one annotator: no table yet
    assert not (release / "agreement").exists()
    second = import_annotations(release, _file(tmp_path, "a2", tasks, {3: "annotator_2"}),
                                spark, ["3=annotator_2"])
    assert second.added == len(tasks) and second.table is not None
    # every release file but the card, the validation results and the manifest untouched
    after = _digests(release)
    changed = {p for p in before if before[p] != after.get(p)}
    assert changed == {"README.md", "card.html", "croissant.json", "manifest.json",
                       "validation/results.json", "validation/index.html"}
    new = set(after) - set(before)
    assert {FILE, "agreement/agreement.json", "agreement/agreement.md",
            "agreement/agreement.tex"} <= new
    assert all(p.startswith(("human_annotation/", "agreement/")) for p in new)
    assert "human annotation" in (release / "validation" / "index.html").read_text()
    check = verify_release(release)
    assert check.ok and not check.unlisted
    manifest = read_manifest(release)
    assert manifest["validation"]["success"] is True
    assert manifest["validation"]["human_annotation"]["checks"] >= 10
    # the authors' format: release lines without predictions, entries of five keys
    for line in map(json.loads, (release / FILE).open()):
        assert "predictions" not in line
        for t in line["tkgu_triples"]:
            for e in t["human_assessment"]:
                assert list(e) == ["annotator_name", "prompt_type", "assessment",
                                   "human_readable_triple", "definition_relation"]
                assert e["definition_relation"] != "<NOT FOUND>"
    # the table, with the release's judges (8B additions, 405B deprecations)
    table = json.loads((release / "agreement" / "agreement.json").read_text())
    assert table["assessors"] == {ASSERTION: ADDITIONS, DEPRECATION: DEPRECATIONS}
    cells = {(r["operation"], r["metric"]): r for r in table["rows"]}
    want = _expected(release, tasks)
    assert cells[("overall", "cohen_h1_h2")]["n"] == want["n"]
    for metric in ("cohen_h1_h2", "cohen_h1_llm"):
        assert cells[("overall", metric)]["value"] == pytest.approx(want[metric])
    assert 'id="agreement"' in (release / "README.md").read_text()
    assert 'id="agreement"' in (release / "card.html").read_text()
    # importing the same file again writes the same bytes
    again = import_annotations(release, tmp_path / "a2.json", spark, ["3=annotator_2"])
    assert again.added == again.changed == 0 and _digests(release) == after
    # an annotator's changed answers replace theirs
    flipped = json.loads((tmp_path / "a2.json").read_text())
    for t in flipped[:2]:
        for a in t["annotations"]:
            c = a["result"][0]["value"]["choices"]
            c[0] = "NO" if c[0] == "YES" else "YES"
    (tmp_path / "a2b.json").write_text(json.dumps(flipped))
    changed = import_annotations(release, tmp_path / "a2b.json", spark, ["3=annotator_2"])
    assert changed.changed == 2 and changed.added == 0 and verify_release(release).ok


def test_two_imports_side_by_side_both_land(made, spark, tmp_path) -> None:
    """Each import rewrites the annotation file, the validation results and the manifest in
    place; side by side (two annotators' files imported at once) the second waits for
    the first (the release folder's lock), so neither one's verdicts are lost and the
    release verifies."""
    import threading

    from emerge_lib.formats.manifest import verify_release

    cur, tasks, _ = made
    release = _copy(made, tmp_path)
    files = [_file(tmp_path, f"a{n}", tasks, {n + 1: f"annotator_{n}"}) for n in (1, 2)]
    errors: list[BaseException] = []

    def run(n: int) -> None:
        try:
            import_annotations(release, files[n - 1], spark, [f"{n + 1}=annotator_{n}"])
        except BaseException as exc:  # noqa: BLE001 - reported by the assertion below
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(n,)) for n in (1, 2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(600)
    assert errors == []
    lines = [json.loads(x) for x in (release / FILE).read_text().splitlines()]
    names = {e["annotator_name"] for rec in lines for t in rec["tkgu_triples"]
             for e in t["human_assessment"]}
    assert {"annotator_1", "annotator_2"} <= names, names
    assert (release / "agreement" / "agreement.json").is_file()  # both were there for it
    assert verify_release(release).ok


def test_a_task_not_in_the_release_stops_the_import_before_anything_is_written(
        made, spark, tmp_path) -> None:
    cur, tasks, _ = made
    release = _copy(made, tmp_path)
    before = _digests(release)
    for change, message in (({"triple": ["Q1", "P1", "Q2"]}, "is not a triple of line"),
                            ({"hash_id": "0" * 32}, "is not in the release")):
        bad = json.loads(json.dumps(tasks))
        bad[-1]["data"].update(change)
        path = _file(tmp_path, "bad", bad, {2: "annotator_1"})
        with pytest.raises(AnnotationError, match=message) as info:
            import_annotations(release, path, spark, ["annotator_1"])
        assert "\n" not in str(info.value) and "bad.json" in str(info.value)
    assert _digests(release) == before


def test_disagreements_import_back_as_a_resolving_annotator(made, spark, tmp_path) -> None:
    cur, tasks, _ = made
    release = _copy(made, tmp_path)
    import_annotations(release, _file(tmp_path, "both", tasks, {2: "annotator_1",
                                                                3: "annotator_2"}),
                       spark, ["2=annotator_1", "3=annotator_2"])
    table = (release / "agreement" / "agreement.json").read_bytes()
    assert main(["annotate", "disagreements", "--annotations", str(release), "--between",
                 "humans", "--out", str(tmp_path / "dis")]) == 0
    rows = [json.loads(x) for x in (tmp_path / "dis" / "disagreements.jsonl").open()]
    planted_differ = [t for t in tasks if planted(t, "annotator_1") != planted(t, "annotator_2")]
    assert len(rows) == len(planted_differ) > 0
    assert {(r["hash_id"], tuple(r["triple"]), r["prompt_type"]) for r in rows} == {
        (t["data"]["hash_id"], tuple(t["data"]["triple"]), t["data"]["prompt_type"])
        for t in planted_differ}
    assert all(r["verdicts"]["annotator_1"] != r["verdicts"]["annotator_2"] for r in rows)
    # with the LLM too: at least those
    assert len(dis.find(read_annotations(release), ("annotator_1", "annotator_2"),
                        {ASSERTION: ADDITIONS, DEPRECATION: DEPRECATIONS})) >= len(rows)
    resolve = json.loads((tmp_path / "dis" / "tasks.json").read_text())
    assert all("annotator_1: " in t["data"]["earlier_verdicts"] for t in resolve)
    summary = import_annotations(release, _file(tmp_path, "adj", resolve, {4: "adjudicator"}),
                                 spark, ["adjudicator"])
    assert summary.added == len(rows)
    # the resolution is a verdict of its own: H1 and H2's table is what they said
    assert (release / "agreement" / "agreement.json").read_bytes() == table
    merged = read_annotations(release)
    humans, _ = ag.names_present(merged)
    assert humans == ["adjudicator", "annotator_1", "annotator_2"]
    assert verify_release(release).ok


def test_a_rebuild_keeps_the_annotation_listed_validated_and_on_the_card(
        made, spark, tmp_path) -> None:
    cur, tasks, _ = made
    release = _copy(made, tmp_path)
    import_annotations(release, _file(tmp_path, "both", tasks, {2: "annotator_1",
                                                                3: "annotator_2"}),
                       spark, ["2=annotator_1", "3=annotator_2"])
    annotated = _digests(release)
    type(cur)(release, cur.warehouse, cur.config).rebuild(spark)
    rebuilt = _digests(release)
    for path in (FILE, "agreement/agreement.json"):
        assert rebuilt[path] == annotated[path], path  # carried over as they were
    manifest = read_manifest(release)
    listed = {f["path"] for f in manifest["files"]}
    assert {FILE, "agreement/agreement.json"} <= listed
    assert manifest["validation"]["success"] is True
    assert manifest["validation"]["human_annotation"]["success"] is True
    check = verify_release(release)
    assert check.ok and not check.unlisted
    assert 'id="agreement"' in (release / "README.md").read_text()


def test_annotation_lines_in_the_authors_layout_import_too(made, spark, tmp_path) -> None:
    """The JSONL export, annotated in the authors' layout (as their s09b writes it), imports
    like a Label Studio export; each entry's text is recomputed from the release line."""
    cur, tasks, exported = made
    release = _copy(made, tmp_path)
    source = exported / "instances_to_annotate.jsonl"
    lines = [json.loads(x) for x in source.read_text().splitlines()]
    asked = 0
    for line in lines:
        t = line["tkgu_triples"][0]
        kind = DEPRECATION if t["tkgu_operations"] == ["d-triples"] else ASSERTION
        t["human_assessment"] = [{"annotator_name": "s09b", "prompt_type": kind,
                                  "assessment": False, "human_readable_triple": "?",
                                  "definition_relation": "?"}]
        asked += 1
    (tmp_path / "s09b.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    summary = import_annotations(release, tmp_path / "s09b.jsonl", spark, ["annotator_3"])
    assert summary.added == asked and summary.annotators == ["annotator_3"]
    entries = [e for x in map(json.loads, (release / FILE).open()) for t in x["tkgu_triples"]
               for e in t["human_assessment"]]
    assert len(entries) == asked and {e["annotator_name"] for e in entries} == {"annotator_3"}
    assert all(e["human_readable_triple"].startswith("['") and e["definition_relation"] != "?"
               for e in entries)
    assert read_manifest(release)["validation"]["success"] is True
