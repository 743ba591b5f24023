"""Wikipedia's commit: staged page and paragraph intervals into page_timeline,
paragraph_timeline and paragraph_coverage (the driver, plan → extract → commit, is
``emerge_lib.ingest.run``), and the watermarks a file's extraction starts from
(``load_marks``).

Produces: page_timeline, paragraph_timeline, paragraph_coverage, and rows with
wiki='enwiki' in page_watermarks, ingested_files and ingest_rejects. Consumed by: the
titles resolution (redirects and titles as of τ), the passages stage (paragraph presence
runs; it calls ``coverage.require_coverage`` first), the snapshot stage (first paragraphs).

The commit is idempotent and replaces pages whole:

1. every page the files wrote has its old page_timeline / paragraph_timeline rows deleted,
2. the new rows are MERGEd on the table keys,
3. each file's coverage rows are replaced by the ranges it was read for (a failed file
   covers nothing); then the driver MERGEs rejects, watermarks and file records, last
   (so a crash before them makes the rerun write those pages again).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime

from emerge_lib.catalog import Catalog
from emerge_lib.ingest.staging import FileSummary, read_staged
from emerge_lib.ingest.wikidata.commit import page_filters
from emerge_lib.ingest.wikipedia.coverage import Range, coverage, covers, utc_of
from emerge_lib.ingest.wikipedia.extract import PageMark, StoredPage


def load_marks(catalog: Catalog, wiki: str, ranges: Sequence[Range],
               page_range: tuple[int, int] | None, skippable: bool = True) -> dict[int, PageMark]:
    """Watermarks of the pages in ``page_range`` (the whole wiki without one); a page is
    skippable when the file that wrote it covered ``ranges`` (never, for a re-ingest)."""
    cov = coverage(catalog, wiki)
    ok = {f for f, have in cov.items() if covers(have, ranges)} if skippable else set()
    table = catalog.read_arrow(
        "page_watermarks", filters=page_filters(wiki, page_range),
        columns=["page_id", "last_rev_id", "last_timestamp", "title", "dump_file", "max_rev_id"])
    out: dict[int, PageMark] = {}
    for page_id, rev, last_ts, title, dump_file, max_rev in zip(
        *(c.to_pylist() for c in table.columns), strict=True
    ):
        out[page_id] = PageMark(rev, int(last_ts.timestamp()), title, dump_file in ok, max_rev)
    return out




def load_pages(catalog: Catalog, wiki: str, marks: Mapping[int, PageMark]
               ) -> dict[int, StoredPage]:
    """The stored rows of these pages, for an increment to continue (one read per table):
    page and paragraph runs, the first revision's time, and whether the watermark
    revision was unreadable (a reject: its state is not what the runs say)."""
    ids = sorted(marks)
    out = {i: StoredPage() for i in ids}
    for r in catalog.read_arrow("page_timeline", filters=[("page_id", "in", ids)]).to_pylist():
        out[r["page_id"]].page_rows.append(r)
    for r in catalog.read_arrow("paragraph_timeline",
                                filters=[("page_id", "in", ids)]).to_pylist():
        out[r["page_id"]].paragraph_rows.append(r)
    for r in catalog.read_arrow("page_watermarks", filters=[("wiki", "=", wiki),
                                                             ("page_id", "in", ids)],
                                columns=["page_id", "first_timestamp"]).to_pylist():
        first = r["first_timestamp"]
        out[r["page_id"]].first_us = None if first is None else int(first.timestamp()) * 1_000_000
    for r in catalog.read_arrow("ingest_rejects", filters=[("wiki", "=", wiki),
                                                            ("page_id", "in", ids)],
                                columns=["page_id", "rev_id"]).to_pylist():
        if r["rev_id"] is not None and r["rev_id"] == marks[r["page_id"]].last_rev_id:
            out[r["page_id"]].last_unreadable = True
    return out


# -- commit --------------------------------------------------------------------------------
def commit_staged(catalog: Catalog, summaries: Sequence[FileSummary], wiki: str,
                  ranges: Mapping[str, Sequence[Range]]) -> None:
    """Steps 1-3 of the module docstring; ``ranges``: dump_file → the ranges it was read for."""
    spark = catalog.session()

    def staged(output: str):
        return read_staged(spark, summaries, output)

    written = staged("written_pages")
    if written is not None:
        for table in ("page_timeline", "paragraph_timeline"):
            catalog.delete_matching(table, written, on=["page_id"])
    for table in ("page_timeline", "paragraph_timeline"):
        df = staged(table)
        if df is not None:
            catalog.merge(table, df)

    # a file's coverage is replaced (a failed file covers nothing: its complete pages are
    # kept but not trusted). Deleted first: a crash in between leaves less coverage, which
    # only makes the next run rewrite more pages.
    files = spark.createDataFrame([(wiki, s.dump_file) for s in summaries],
                                  "wiki string, dump_file string")
    catalog.delete_matching("paragraph_coverage", files, on=["wiki", "dump_file"])
    now = datetime.now(UTC)
    covered = [
        {"wiki": wiki, "dump_file": s.dump_file, "dump_date": s.dump_date,
         "range_from": utc_of(a), "range_to": utc_of(b), "ingested_at": now}
        for s in summaries if not s.error for a, b in ranges.get(s.dump_file, ())
    ]
    if covered:
        catalog.merge("paragraph_coverage", catalog.frame("paragraph_coverage", covered))
