"""``load_release`` (emerge_lib/hub/load.py) on a small hand-made release (kits/hubkit.py),
in every kind, split and format; files only, no engine."""

from __future__ import annotations

from datetime import UTC, date, datetime
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


def test_leak_free_splits_share_no_article_and_context_is_per_line(tmp_path: Path) -> None:
    """The planted release: A1 drawn into test, its repeat A2 in no split; article 2's two
    lines and article 3's one each in the split the hash of its page_id gives."""
    from hubkit import S_A1, S_B1, S_B2, S_C1, split_release

    from emerge_lib.release.splits import validation_article

    release = split_release(tmp_path / "r")
    got = {split: load_release(release, split=split, format="arrow").column("hash_id")
           .to_pylist() for split in ("train", "validation", "test")}
    want: dict[str, list[str]] = {"train": [], "validation": [], "test": [S_A1["hash_id"]]}
    for page, lines in ((2, [S_B1, S_B2]), (3, [S_C1])):
        want["validation" if validation_article(page, 0.5) else "train"] += [
            r["hash_id"] for r in lines]
    assert {k: sorted(v) for k, v in got.items()} == {k: sorted(v) for k, v in want.items()}
    assert read_manifest(release)  # the files are the manifest's
    triples = load_release(release, kind="triples", split="test", format="arrow")
    assert triples.column("hash_id").to_pylist() == [S_A1["hash_id"]]
    context = load_release(release, kind="context", format="pandas")
    assert len(context) == 5
    row = context.set_index("hash_id").loc[S_A1["hash_id"]]
    assert list(row["seeds"]) == ["Q1", "Q7"]  # its article, then its mention
    assert [(t["s"], t["p"], t["o"], t["hop"]) for t in row["context_triples"]] == [
        ("Q1", "P1", "Q2", 1)]
    priors = load_release(release, kind="priors", format="arrow").to_pylist()
    assert [(r["pid"], r["triples"]) for r in priors] == [("P1", 2)]
    with pytest.raises(LoadError, match="kind 'priors' has no split"):
        load_release(release, kind="priors", split="train")
    with pytest.raises(LoadError, match="no parquet/splits/ in this release"):
        load_release(small_release(tmp_path / "old"), split="train")


def test_after_keeps_the_lines_first_seen_after_a_cutoff(tmp_path: Path, caplog) -> None:
    """emerge evaluate --after's rule: revision_date after the date (midnight UTC)."""
    from hubkit import S_C1, split_release

    release = split_release(tmp_path / "r")
    with caplog.at_level("INFO", logger="emerge_lib.hub.load"):
        late = load_release(release, after="2024-06-30", format="arrow")
    assert late.column("hash_id").to_pylist() == [S_C1["hash_id"]]
    assert "after=2024-06-30: 1 of 5 lines appeared after it" in caplog.text
    assert load_release(release, after="2023-01-01", format="arrow").num_rows == 5
    assert load_release(release, after="2024-01-02", format="arrow").num_rows == 3
    assert load_release(release, after=date(2024, 1, 2), format="arrow").num_rows == 3
    assert load_release(release, after=datetime(2024, 1, 3, tzinfo=UTC),
                        format="arrow").num_rows == 1
    assert load_release(release, after="2024-01-03T00:00:00Z", format="arrow").num_rows == 1
    ctx = load_release(release, kind="context", after="2024-06-30", format="arrow")
    assert ctx.column("hash_id").to_pylist() == [S_C1["hash_id"]]
    ds = load_release(release, split="train", after="2030-01-01")
    assert ds.num_rows == 0 and "0 lines that appeared after 2030-01-01" in ds.info.description
    with pytest.raises(LoadError, match=r"^after='2024-13-01': not a date or ISO 8601 "):
        load_release(release, after="2024-13-01")
    with pytest.raises(LoadError, match="kind 'kg' has no split and no after="):
        load_release(release, kind="kg", after="2024-01-01")
