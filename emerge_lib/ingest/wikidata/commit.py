"""Wikidata history files → statement, item and property timelines: what is Wikidata's in
the ingest (the driver, plan → extract → commit, is ``emerge_lib.ingest.run``).

Produces: statement_timeline, item_timeline, property_timeline, and rows with
wiki='wikidatawiki' in page_watermarks, ingested_files, ingest_rejects. Consumed by:
the transform stages stability, snapshot, deltas and align.

The Python-heavy extraction (``emerge_lib.ingest.wikidata.extract``) runs one process per file; its
staged Parquet is committed here, idempotently, in this order:

1. rows of entities replayed from scratch are deleted, then
2. closures end the intervals an earlier ingest left open (matched on the open row that
   started at or before the watermark, so a rerun never closes a newer row),
3. new interval rows are MERGEd on the table key;
4. then the driver MERGEs the rejects, the watermarks and the file records, last.

Rerunning any step, or the whole ingest, leaves the same tables.
"""

from __future__ import annotations

from collections.abc import Sequence

from emerge_lib.catalog import Catalog
from emerge_lib.ingest.staging import FileSummary, read_staged
from emerge_lib.ingest.wikidata.extract import Watermark

WATERMARK_COLUMNS = ["page_id", "last_rev_id", "last_timestamp", "first_timestamp",
                     "max_rev_id", "revisions"]


def load_watermarks(catalog: Catalog, wiki: str,
                    page_range: tuple[int, int] | None) -> dict[int, Watermark]:
    """The watermarks of the pages in ``page_range`` (all of the wiki's without one): a
    worker reads only its own file's share of a table with one row per page."""
    table = catalog.read_arrow("page_watermarks", filters=page_filters(wiki, page_range),
                               columns=WATERMARK_COLUMNS)
    out: dict[int, Watermark] = {}
    for page_id, rev, last_ts, first_ts, max_rev, count in zip(
        *(c.to_pylist() for c in table.columns), strict=True
    ):
        out[page_id] = Watermark(
            rev, int(last_ts.timestamp()), int(first_ts.timestamp()) if first_ts else None,
            max_rev, count,
        )
    return out


def page_filters(wiki: str, page_range: tuple[int, int] | None) -> list[tuple[str, str, object]]:
    filters: list[tuple[str, str, object]] = [("wiki", "=", wiki)]
    if page_range is not None:
        filters += [("page_id", ">=", page_range[0]), ("page_id", "<=", page_range[1])]
    return filters


def commit_staged(catalog: Catalog, summaries: Sequence[FileSummary]) -> None:
    """Steps 1-3 of the module docstring, for the staged outputs of ``summaries``."""
    spark = catalog.session()

    def staged(output: str):
        return read_staged(spark, summaries, output)

    replayed = staged("replayed_entities")
    if replayed is not None:
        for table, col in (("statement_timeline", "s"), ("item_timeline", "qid"),
                           ("property_timeline", "pid")):
            catalog.delete_matching(table, replayed.selectExpr(f"id AS {col}"), on=[col])

    closures = {
        "statement_closures": ("statement_timeline",
                               "t.s = s.s AND t.version_hash = s.version_hash",
                               {"valid_to": "s.valid_to", "rev_to": "s.rev_to"}),
        "item_closures": ("item_timeline", "t.qid = s.id", {"valid_to": "s.valid_to"}),
        "property_closures": ("property_timeline", "t.pid = s.id", {"valid_to": "s.valid_to"}),
    }
    for output, (table, match, assignments) in closures.items():
        df = staged(output)
        if df is not None:
            catalog.update_matching(
                table, df, f"{match} AND t.valid_to IS NULL AND t.rev_from <= s.watermark_rev",
                assignments)

    for table in ("statement_timeline", "item_timeline", "property_timeline"):
        df = staged(table)
        if df is not None:
            catalog.merge(table, df)
