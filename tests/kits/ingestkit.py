"""The ingest stages as the tests run them (through the registry, with the settings a test
varies) and the table contents they compare, for the stage tier's hand-made dumps and the
end-to-end tier's generated worlds alike.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from stagekit import ingest

from emerge_lib.catalog import Catalog


def ingest_wikidata(catalog: Catalog, files, workers: int | None = None,
                    max_reject_ratio: float = 0.01, executor: str = "local",
                    reingest: bool = False):
    """The Wikidata ingest stage through the registry; returns its IngestReport."""
    dumps = {"max_reject_ratio": max_reject_ratio, "executor": executor, "reingest": reingest}
    if workers is not None:
        dumps["workers"] = workers
    return ingest(catalog, "wikidata", files, dumps=dumps).detail


def ts(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(UTC)


def statements(catalog: Catalog) -> set[tuple]:
    return {
        (r["s"], r["p"], r["o"], r["rank"], r["rev_from"], r["rev_to"], r["valid_from"],
         r["valid_to"], tuple(q["pid"] for q in r["qualifiers"]))
        for r in catalog.read_arrow("statement_timeline").to_pylist()
    }


def items(catalog: Catalog) -> set[tuple]:
    return {
        (r["qid"], r["rev_from"], r["valid_from"], r["valid_to"], r["enwiki_title"],
         r["redirect_to"], r["created_at"])
        for r in catalog.read_arrow("item_timeline").to_pylist()
    }


def snapshot_of(catalog: Catalog) -> tuple[set, set, set, int]:
    return (statements(catalog), items(catalog),
            {(r["pid"], r["rev_from"], r["valid_to"]) for r in catalog.read_arrow("property_timeline").to_pylist()},
            catalog.read_arrow("statement_timeline").num_rows)


T = "2024-01-01T00:00:00Z"  # the snapshot of the generated world: 2 windows of 7 days


def ingest_wikipedia(catalog: Catalog, files, snapshots=(T,), windows: int = 2,
                     window_days: float = 7, max_reject_ratio: float = 0.01,
                     workers: int | None = None, executor: str = "local",
                     reingest: bool = False):
    """The Wikipedia ingest stage through the registry, for the paragraphs these snapshots
    need (30-minute passage margin); returns its IngestReport."""
    dumps = {"max_reject_ratio": max_reject_ratio, "executor": executor, "reingest": reingest}
    if workers is not None:
        dumps["workers"] = workers
    return ingest(catalog, "wikipedia", files, dumps=dumps,
                  snapshots={"timestamps": list(snapshots), "windows": windows,
                             "window_days": window_days}).detail


def pages(catalog: Catalog) -> set[tuple]:
    return {
        (r["page_id"], r["title"], r["valid_from"], r["valid_to"], r["rev_from"], r["rev_to"],
         r["is_redirect"], r["redirect_target"])
        for r in catalog.read_arrow("page_timeline").to_pylist()
    }


def runs(catalog: Catalog) -> set[tuple]:
    return {
        (r["page_id"], r["text"], r["paragraph_idx"], r["first_seen_rev"], r["first_seen_at"],
         r["removed_rev"], r["removed_at"])
        for r in catalog.read_arrow("paragraph_timeline").to_pylist()
    }


def state(catalog: Catalog) -> tuple:
    marks = {(r["page_id"], r["last_rev_id"], r["title"])
             for r in catalog.read_arrow("page_watermarks").to_pylist()}
    return pages(catalog), runs(catalog), marks


def staged_rows(path: Path, out: Path, scan: bool) -> tuple[dict, int]:
    import pyarrow.parquet as pq

    from emerge_lib.ingest.wikidata.extract import WikidataFileExtractor

    summary = WikidataFileExtractor(path, out, dump_date="20240101",
                                    scan_entities=scan).run()
    rows = {f.relative_to(out).as_posix(): sorted(map(repr, pq.read_table(f).to_pylist()))
            for f in sorted(out.rglob("*.parquet"))}
    return rows, summary.decoded


def same_rows_both_ways(files: list[Path], tmp_path: Path) -> None:
    for i, path in enumerate(files):
        with_scan = staged_rows(path, tmp_path / f"scan{i}", True)
        without = staged_rows(path, tmp_path / f"text{i}", False)
        assert with_scan == without, path
        assert with_scan[1] > 0


@contextlib.contextmanager
def killed_before(table: str) -> Iterator[None]:
    """The ingest inside is killed (what kill -9 leaves) when it comes to merge into
    ``table``: what it committed before stays, the rest never happens."""
    real = Catalog.merge

    def killed(self: Catalog, name: str, *args, **kwargs):
        if name == table:
            raise KeyboardInterrupt("killed")
        return real(self, name, *args, **kwargs)

    setattr(Catalog, "merge", killed)  # noqa: B010 (a method swapped for the test)
    try:
        with pytest.raises(KeyboardInterrupt):
            yield
    finally:
        setattr(Catalog, "merge", real)  # noqa: B010
