"""``emerge diff`` (emerge_lib/hub/diff.py: by hash_id) between small hand-made releases
(kits/hubkit.py); files only, no engine."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from hubkit import A1, A2, B1, C4, SNAPS, build_release, line, small_release

from emerge_lib.cli import main
from emerge_lib.formats.layout import corpus_path
from emerge_lib.hub import open_release
from emerge_lib.hub.diff import diff_releases


@pytest.fixture()
def release(tmp_path: Path) -> Path:
    return small_release(tmp_path / "old")


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
    # the fields that changed, down to the triple's (matched by its triple, not its place)
    verdict = ("tkgu_triples[Q1 P1 Q2].llm_assessment",
               "tkgu_triples[Q1 P1 Q2].asserted_operations")
    assert [(c.hash_id, c.fields) for c in changed] == [(A2["hash_id"], verdict)]
    assert {c.hash_id for c in report.changes if c.state == "added"} == {
        D2["hash_id"], E7["hash_id"], C4["hash_id"]}
    assert main(["diff", "--old", str(release), "--new", str(new), "--list"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"emerge diff {report.old_version} → {report.new_version}"
    assert any(line.split() == ["corpus", "all", "added", "2", "removed", "1", "changed", "1",
                                "unchanged", "2"] for line in out)
    assert f"changed\tcorpus\t{corpus_path(SNAPS[0], 2, 7)}\t{A2['hash_id']}\t" \
           f"{','.join(verdict)}" in out
    same = diff_releases(open_release(release), open_release(shutil.copytree(
        release, tmp_path / "copy")))
    assert not same.changes and same.old_version == same.new_version


def test_a_line_written_again_with_other_bytes_is_unchanged(release: Path, tmp_path: Path
                                                            ) -> None:
    """Lines compare as parsed JSON: other spacing and key order are no change; a triple
    that moved within its line neither."""
    import json

    new = build_release(tmp_path / "new", {(SNAPS[0], 1): [A1, B1], (SNAPS[0], 2): [A2],
                                           (SNAPS[1], 1): [C4]}, {(SNAPS[0], 1): [B1]})
    target = new / corpus_path(SNAPS[0], 1, 7)
    lines = [json.loads(t) for t in target.read_text().splitlines()]
    lines[0]["tkgu_triples"].reverse()
    target.write_text("".join(json.dumps(dict(reversed(r.items())), indent=None,
                                         separators=(" , ", " : ")) + "\n" for r in lines))
    _write_manifest_again(new)
    report = diff_releases(open_release(release), open_release(new))
    assert report.changes == [] and report.totals("corpus")["unchanged"] == 4


def _write_manifest_again(root: Path) -> None:
    """The manifest of ``root`` written again over its files as they are now."""
    from emerge_lib.formats.manifest import read_manifest, write_manifest

    manifest = read_manifest(root)
    meta = {k: v for k, v in manifest.items()
            if k not in ("schema_version", "dataset", "version", "files")}
    write_manifest(root, [f["path"] for f in manifest["files"]], meta=meta)


def test_a_side_that_does_not_match_its_manifest_is_refused(release: Path, tmp_path: Path,
                                                            capsys) -> None:
    """A file changed or gone since the manifest: refused in one line naming the side and
    the file; --unverified compares anyway, saying so on stdout and stderr."""
    new = shutil.copytree(release, tmp_path / "new")
    edited = new / corpus_path(SNAPS[0], 2, 7)
    edited.write_text(edited.read_text().replace("Eastport", "Westport"))
    assert main(["diff", "--old", str(release), "--new", str(new)]) == 1
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and f"new {new}: {corpus_path(SNAPS[0], 2, 7)}: other bytes" \
        in err and "--unverified" in err, err
    (new / corpus_path(SNAPS[1], 1, 7)).unlink()
    assert main(["diff", "--old", str(release), "--new", str(new), "--unverified"]) == 0
    captured = capsys.readouterr()
    assert "WARNING: 2 files do not match their manifest" in captured.out
    assert f"{corpus_path(SNAPS[1], 1, 7)}: missing" in captured.err
    report = diff_releases(open_release(release), open_release(new), verify=False)
    assert [c.fields for c in report.changes if c.state == "changed"] == [("passage",)]
    assert {c.state for c in report.changes} == {"changed", "removed"}


def test_diff_notices_parquet_twins_that_disagree_with_their_jsonl(release: Path, tmp_path: Path,
                                                                   capsys) -> None:
    """diff compares the JSONL while load_release and query read the Parquet: a twin
    that says otherwise (a line's passage edited in the Parquet only) was "unchanged"."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    new = tmp_path / "new"
    shutil.copytree(release, new)
    assert diff_releases(open_release(release), open_release(new)).twins == []
    twin = new / "parquet" / corpus_path(SNAPS[0], 1, 7).removesuffix(".jsonl")
    twin = twin.with_suffix(".parquet")
    table = pq.read_table(twin)
    i = table.schema.get_field_index("passage")
    table = table.set_column(i, table.schema.field(i),
                             pa.array(["forged"] * table.num_rows, pa.string()))
    pq.write_table(table, twin)
    report = diff_releases(open_release(release), open_release(new))
    assert report.totals("corpus")["changed"] == 0  # the JSONL did not change ...
    assert len(report.twins) == 1 and twin.relative_to(new).as_posix() in report.twins[0]
    assert "WARNING" in report.brief() and report.to_dict()["twins"] == report.twins
