"""Wikidata history files → statement, item and property timelines (Delta).

Produces: statement_timeline, item_timeline, property_timeline, page_watermarks,
ingested_files, ingest_rejects. Consumed by: stages.stability, stages.snapshot,
stages.deltas.

The Python-heavy extraction (`stages.wikidata_extract`) runs one process per file (Sail
runs Python UDFs on one core under one GIL, so a local process pool is the fast path);
this module commits the staged Parquet idempotently:

1. rows of entities replayed from scratch are deleted, then
2. closures end the intervals an earlier ingest left open (matched on the open row that
   started at or before the watermark, so a rerun never closes a newer row),
3. new interval rows are MERGEd on the table key,
4. rejects replace their file's partition, watermarks and file records are MERGEd last.

Rerunning any step, or the whole ingest, leaves the same tables.
"""

from __future__ import annotations

import logging
import shutil
import tempfile
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path

from emerge_lib.stages.ingest_common import (
    DumpFileRef,
    IngestError,
    IngestReport,
    commit_rejects,
    finish,
    log_file,
    refs_by_date,
    run_workers,
    watermarks_for,
)
from emerge_lib.stages.wikidata_extract import FileSummary, Watermark, extract_file
from emerge_lib.tables import Catalog

__all__ = ["DumpFileRef", "IngestError", "IngestReport", "extract_files", "ingest_wikidata"]

log = logging.getLogger(__name__)


def load_watermarks(catalog: Catalog, wiki: str) -> dict[int, Watermark]:
    table = catalog.read_arrow("page_watermarks", filters=[("wiki", "=", wiki)])
    out: dict[int, Watermark] = {}
    cols = table.select(
        ["page_id", "last_rev_id", "last_timestamp", "first_timestamp", "max_rev_id", "revisions"]
    )
    for page_id, rev, last_ts, first_ts, max_rev, count in zip(
        *(c.to_pylist() for c in cols.columns), strict=True
    ):
        out[page_id] = Watermark(
            rev, int(last_ts.timestamp()), int(first_ts.timestamp()) if first_ts else None,
            max_rev, count,
        )
    return out


def extract_files(
    refs: Sequence[DumpFileRef],
    staging: Path,
    wiki: str,
    watermarks: dict[int, Watermark],
    workers: int,
    on_file: Callable[[FileSummary], None] | None = None,
    spark=None,
) -> list[FileSummary]:
    """Run the extraction worker on each file (see ``ingest_common.run_workers``)."""
    jobs = [
        (str(r.path), str(staging), wiki, r.path.name, r.dump_date, watermarks_for(r, watermarks))
        for r in refs
    ]
    return run_workers(extract_file, jobs, workers, on_file, spark)


def _staged(summaries: Sequence[FileSummary], output: str) -> list[str]:
    return [s.outputs[output] for s in summaries if output in s.outputs]


def commit(catalog: Catalog, summaries: Sequence[FileSummary], wiki: str) -> None:
    """Commit staged outputs in the idempotent order of the module docstring."""
    spark = catalog.session()

    def staged(output: str):
        paths = _staged(summaries, output)
        return spark.read.parquet(*paths) if paths else None

    replayed = staged("replayed_entities")
    if replayed is not None:
        replayed.createOrReplaceTempView("emerge_replayed")
        for table, col in (("statement_timeline", "s"), ("item_timeline", "qid"),
                           ("property_timeline", "pid")):
            if catalog.exists(table):
                # Sail has no IN-subquery in DELETE; a matched MERGE deletes the same rows
                spark.sql(
                    f"MERGE INTO delta.`{catalog.path(table)}` AS t "
                    f"USING (SELECT DISTINCT id FROM emerge_replayed) AS c ON t.`{col}` = c.id "
                    "WHEN MATCHED THEN DELETE"
                )

    closures = {
        "statement_closures": ("statement_timeline",
                               "t.s = c.s AND t.version_hash = c.version_hash",
                               "valid_to = c.valid_to, rev_to = c.rev_to"),
        "item_closures": ("item_timeline", "t.qid = c.id", "valid_to = c.valid_to"),
        "property_closures": ("property_timeline", "t.pid = c.id", "valid_to = c.valid_to"),
    }
    for output, (table, match, update) in closures.items():
        df = staged(output)
        if df is None or not catalog.exists(table):
            continue
        df.createOrReplaceTempView("emerge_closures")
        spark.sql(
            f"MERGE INTO delta.`{catalog.path(table)}` AS t USING emerge_closures AS c "
            f"ON {match} AND t.valid_to IS NULL AND t.rev_from <= c.watermark_rev "
            f"WHEN MATCHED THEN UPDATE SET {update}"
        )

    for table in ("statement_timeline", "item_timeline", "property_timeline"):
        df = staged(table)
        if df is not None:
            catalog.merge(table, df)

    commit_rejects(catalog, summaries, wiki)

    marks = staged("page_watermarks")
    if marks is not None:
        catalog.merge("page_watermarks", marks)
    now = datetime.now(UTC)
    catalog.merge(
        "ingested_files",
        catalog.frame(
            "ingested_files",
            [
                {
                    "wiki": wiki, "dump_date": s.dump_date, "dump_file": s.dump_file, "sha1": None,
                    "pages": s.pages, "revisions": s.revisions, "rejects": s.rejects,
                    "bytes": s.bytes, "seconds": s.seconds, "ingested_at": now,
                }
                for s in summaries
            ],
        ),
    )


def ingest_wikidata(
    catalog: Catalog,
    files: Sequence[str | Path | DumpFileRef],
    wiki: str = "wikidatawiki",
    workers: int = 1,
    max_reject_ratio: float = 0.01,
    staging_dir: str | Path | None = None,
    on_file: Callable[[FileSummary], None] | None = None,
    executor: str = "local",
) -> IngestReport:
    """Ingest Wikidata history files (older dumps first), idempotently and incrementally.

    ``executor``: ``local`` runs a process pool of ``workers`` here; ``spark`` runs one
    Spark task per file with mapInArrow (for a cluster; ``staging_dir`` must then be
    storage every executor can reach).
    """
    if executor not in ("local", "spark"):
        raise ValueError(f"executor must be local or spark, not {executor!r}")
    started = time.monotonic()
    report = IngestReport()
    # Dumps of different dates hold the same pages: ingest date by date, so each newer
    # dump sees the watermarks the older one left.
    for batch in refs_by_date(files).values():
        staging = Path(tempfile.mkdtemp(prefix="emerge-staging-", dir=staging_dir))
        try:
            marks = load_watermarks(catalog, wiki)

            def done(summary: FileSummary) -> None:
                log_file(summary)
                if on_file:
                    on_file(summary)

            summaries = extract_files(
                batch, staging, wiki, marks, workers, done,
                spark=catalog.session() if executor == "spark" else None,
            )
            commit(catalog, summaries, wiki)
            report.files.extend(summaries)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    report.seconds = time.monotonic() - started
    return finish(report, "wikidata", max_reject_ratio)
