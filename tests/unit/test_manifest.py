"""manifest.json: every file with bytes, sha256 and rows; a content version; verification
that catches a changed, a missing and an unlisted file."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from emerge_lib.release.manifest import (
    MANIFEST,
    ManifestError,
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
    (root / "README.md").write_text("# card, changed\n")
    assert write_manifest(root, FILES, meta={})["version"] != first["version"]


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
