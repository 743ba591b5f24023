"""manifest.json: every file with bytes, sha256 and rows; a content version; verification
that catches a changed, a missing and an unlisted file."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from emerge_lib.formats.manifest import (
    MANIFEST,
    SELF_DESCRIBING,
    ManifestError,
    check_files,
    inside,
    read_manifest,
    sha256_file,
    verify_release,
    write_manifest,
)


def release(tmp_path: Path) -> Path:
    root = tmp_path / "rel"
    (root / "snapshot_2024-01-01").mkdir(parents=True)
    (root / "snapshot_2024-01-01" / "delta_2024-01-08.jsonl").write_text('{"a":1}\n{"a":2}\n')
    pq.write_table(pa.table({"x": [1, 2, 3]}), root / "snapshot_2024-01-01" / "kg_triples.parquet")
    (root / "README.md").write_text("# card\n")
    return root


FILES = ["README.md", "snapshot_2024-01-01/delta_2024-01-08.jsonl",
         "snapshot_2024-01-01/kg_triples.parquet"]


def test_every_file_is_listed_with_its_checksum_and_rows(tmp_path: Path) -> None:
    root = release(tmp_path)
    (root / "notes.txt").write_text("mine\n")
    manifest = write_manifest(root, FILES, meta={"settings": {"windows": 5}})
    assert json.loads((root / MANIFEST).read_text()) == manifest == read_manifest(root)
    files = {f["path"]: f for f in manifest["files"]}
    assert list(files) == FILES  # sorted; a stray file in the folder is not listed
    jsonl = files["snapshot_2024-01-01/delta_2024-01-08.jsonl"]
    assert jsonl["rows"] == 2 and jsonl["bytes"] == 16
    assert jsonl["sha256"] == sha256_file(root / jsonl["path"])
    assert files["snapshot_2024-01-01/kg_triples.parquet"]["rows"] == 3
    assert files["README.md"]["rows"] is None and manifest["settings"] == {"windows": 5}
    assert verify_release(root).ok and verify_release(root).checked == 3
    assert verify_release(root).unlisted == ["notes.txt"]


def test_the_version_names_the_content(tmp_path: Path) -> None:
    root = release(tmp_path)
    first = write_manifest(root, FILES, meta={})
    text = (root / MANIFEST).read_text()
    assert write_manifest(root, FILES, meta={})["version"] == first["version"]
    assert (root / MANIFEST).read_text() == text  # no clock in it: byte-identical
    (root / "snapshot_2024-01-01" / "delta_2024-01-08.jsonl").write_text('{"a":3}\n')
    assert write_manifest(root, FILES, meta={})["version"] != first["version"]


def test_the_files_that_state_the_version_are_outside_its_hash(tmp_path: Path) -> None:
    """The card, croissant.json and the validation page state the version (the page also
    when the checks ran), so they cannot be part of its hash: changing them keeps the
    version, yet they are listed and verified like every file."""
    root = release(tmp_path)
    (root / "croissant.json").write_text("{}\n")
    files = [*FILES, "croissant.json"]
    first = write_manifest(root, files, meta={})
    assert {"README.md", "card.html", "croissant.json",
            "validation/index.html"} == SELF_DESCRIBING
    (root / "README.md").write_text("# card, version 0123 stated\n")
    (root / "croissant.json").write_text('{"version": "0123"}\n')
    second = write_manifest(root, files, meta={})
    assert second["version"] == first["version"]
    assert second["files"] != first["files"]  # their sha256 are recorded all the same
    (root / "README.md").write_text("# tampered\n")
    assert verify_release(root).mismatched == ["README.md"]


def test_verification_names_what_differs(tmp_path: Path) -> None:
    root = release(tmp_path)
    write_manifest(root, FILES, meta={})
    (root / "README.md").write_text("# tampered\n")
    (root / "snapshot_2024-01-01" / "kg_triples.parquet").unlink()
    (root / "extra.txt").write_text("not listed\n")
    result = verify_release(root)
    assert not result.ok
    assert result.mismatched == ["README.md"]
    assert result.missing == ["snapshot_2024-01-01/kg_triples.parquet"]
    assert result.unlisted == ["extra.txt"]
    only = verify_release(root, ["snapshot_2024-01-01/delta_2024-01-08.jsonl"])
    assert only.ok and only.checked == 1


def test_a_folder_without_a_readable_manifest_is_refused(tmp_path: Path) -> None:
    root = release(tmp_path)
    with pytest.raises(ManifestError, match="no manifest"):
        verify_release(root)
    (root / MANIFEST).write_text("{not json")
    with pytest.raises(ManifestError, match="not JSON"):
        read_manifest(root)
    (root / MANIFEST).write_text('{"schema_version": 99, "files": []}')
    with pytest.raises(ManifestError, match="schema_version 99"):
        read_manifest(root)


def _entry(path: object) -> dict[str, object]:
    return {"path": path, "bytes": 3, "sha256": "0" * 64, "rows": None}


@pytest.mark.parametrize(("path", "why"), [
    ("/home/user/.bashrc", "is absolute"),
    ("C:/Windows/evil", "is absolute"),
    ("../../x", "'..'"),
    ("snapshot_2024-01-01/../../x", "'..'"),
    ("a//b", "empty"),
    ("./a", "'.'"),
    ("a\\..\\b", "backslash"),
    ("a\0b", "NUL"),
    ("", "non-empty string"),
    (123, "non-empty string"),
    (MANIFEST, "manifest itself"),
    ("/".join(["d"] * 2000), "longer than 1024"),  # passed, then RecursionError
    ("a/" * 32 + "b", "deeper than 32 folders"),
    ("x" * 1025, "longer than 1024 characters"),
    ("a/" + "é" * 128, "name longer than 255 bytes"),
])
def test_the_path_rule_refuses_paths_that_leave_the_root(path: object, why: str) -> None:
    files = [_entry("README.md"), _entry(path)]
    with pytest.raises(ManifestError, match="refusing the release") as err:
        check_files(files, "m.json")
    assert why in str(err.value) and "\n" not in str(err.value)


def test_the_path_rule_takes_the_deepest_and_longest_a_release_may_need() -> None:
    deep = "/".join(["d"] * 31) + "/f.html"  # 32 components
    assert check_files([_entry(deep), _entry("x" * 255), _entry("/".join(["b" * 200] * 5))], "m.json")


def test_the_path_rule_refuses_duplicates_folders_and_malformed_entries() -> None:
    with pytest.raises(ManifestError, match="same file as 'a/B.txt'"):
        check_files([_entry("a/B.txt"), _entry("a/b.txt")], "m.json")
    with pytest.raises(ManifestError, match="also the folder of 'a/b'"):
        check_files([_entry("a/b"), _entry("a")], "m.json")
    with pytest.raises(ManifestError, match="byte count"):
        check_files([{"path": "a", "bytes": -1, "sha256": "0" * 64}], "m.json")
    with pytest.raises(ManifestError, match="sha256"):
        check_files([{"path": "a", "bytes": 1, "sha256": "zz"}], "m.json")
    with pytest.raises(ManifestError, match="not a list"):
        check_files({"path": "a"}, "m.json")
    good = [_entry("README.md"), _entry("snapshot_2024-01-01/kg_triples.parquet")]
    assert check_files(good, "m.json") == good


def test_a_forged_manifest_is_refused_by_every_reader(tmp_path: Path) -> None:
    root = release(tmp_path)
    manifest = write_manifest(root, FILES, meta={})
    manifest["files"].append(_entry("../outside.txt"))
    (root / MANIFEST).write_text(json.dumps(manifest))
    with pytest.raises(ManifestError, match="'../outside.txt'"):
        read_manifest(root)
    with pytest.raises(ManifestError, match="'../outside.txt'"):
        verify_release(root)


def test_a_symbolic_link_out_of_the_root_is_refused(tmp_path: Path) -> None:
    root, elsewhere = tmp_path / "rel", tmp_path / "elsewhere"
    elsewhere.mkdir()
    root.mkdir()
    (root / "snapshot_2024-01-01").symlink_to(elsewhere)
    with pytest.raises(ManifestError, match="symbolic link"):
        inside(root, "snapshot_2024-01-01/kg_triples.parquet")
    assert inside(root, "README.md") == root.resolve() / "README.md"
