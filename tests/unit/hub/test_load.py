"""``load_release`` (emerge_lib/hub/load.py) on a small hand-made release (kits/hubkit.py),
in every kind, split and format; files only, no engine."""

from __future__ import annotations

from pathlib import Path

import pytest
from hubkit import B1, C4, small_release

from emerge_lib.formats.manifest import read_manifest
from emerge_lib.hub import ReleaseNotFound, load_release, version_of
from emerge_lib.hub.load import LoadError


@pytest.fixture()
def release(tmp_path: Path) -> Path:
    return small_release(tmp_path / "old")


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


@pytest.mark.parametrize("drift", ["a column missing", "a column of another type"])
def test_a_file_whose_schema_drifted_is_refused_in_one_line(release: Path, drift: str) -> None:
    """load_release read a file with the declared schema: a missing column came back as
    nulls and a column of another type was cast, where `emerge query` failed."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = sorted(release.glob("parquet/corpus/snapshot_2024-01-01/delta_*.parquet"))[0]
    table = pq.read_table(path)
    if drift == "a column missing":
        table = table.drop_columns(["passage"])
    else:
        i = table.schema.get_field_index("paragraph_offset")
        table = table.set_column(i, "paragraph_offset",
                                 pa.array([str(v) for v in table.column(i).to_pylist()]))
    pq.write_table(table, path)
    with pytest.raises(LoadError) as info:
        load_release(release, format="arrow")
    text = str(info.value)
    assert str(path) in text and "\n" not in text
    assert ("missing: passage" if drift == "a column missing" else "paragraph_offset (string")\
        in text
