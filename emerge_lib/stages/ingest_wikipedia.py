"""Wikipedia history files → page_timeline, paragraph_timeline, paragraph_coverage (Delta).

Produces: page_timeline, paragraph_timeline, paragraph_coverage, and rows with
wiki='enwiki' in page_watermarks, ingested_files and ingest_rejects. Consumed by:
stages.titles (redirects and titles as of τ), stages.passages (paragraph presence runs;
it must call `require_coverage` first).

The history is streamed once; paragraphs are kept only for the time ranges the configured
snapshots need (`needed_ranges`: for each snapshot t, [t, τ_n + passage_minutes], with the
revision current at t), so a later change of window length inside stored coverage needs no
re-ingest, while a snapshot outside it is refused by `require_coverage` with a clear message.

The extraction (`stages.wikipedia_extract`) runs one process per file, or one Spark task
per file (mapInArrow). The commit is idempotent and replaces pages whole:

1. every page the files wrote has its old page_timeline / paragraph_timeline rows deleted
   (a matched MERGE: Sail has no IN-subquery in DELETE), then
2. the new rows are MERGEd on the table keys,
3. rejects and coverage replace their file's partition, watermarks and file records are
   MERGEd last (so a crash before them makes the rerun write those pages again).
"""

from __future__ import annotations

import logging
import shutil
import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

from emerge_lib.config import Config
from emerge_lib.schedule import as_utc, horizon, unix_seconds
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
from emerge_lib.stages.wikipedia_extract import (
    PageMark,
    Range,
    WikipediaFileSummary,
    extract_file,
    merge_ranges,
)
from emerge_lib.tables import Catalog

log = logging.getLogger(__name__)

__all__ = [
    "CoverageError",
    "DumpFileRef",
    "IngestError",
    "coverage",
    "ingest_wikipedia",
    "needed_ranges",
    "ranges_from_config",
    "require_coverage",
    "snapshot_range",
]


class CoverageError(RuntimeError):
    """The paragraphs a snapshot needs were not ingested (or not for these dates)."""


# -- ranges --------------------------------------------------------------------------------
def snapshot_range(snapshot: datetime | str, windows: int = 5, window_days: float = 7,
                   passage_minutes: float = 30) -> tuple[datetime, datetime]:
    """[t, τ_n + passage_minutes]: what the passages of one snapshot read (the state at t,
    every window, and the stability margin after the last window's end)."""
    t = as_utc(snapshot)
    return t, horizon(t, windows, window_days) + timedelta(minutes=passage_minutes)


def needed_ranges(snapshots: Iterable[datetime | str], windows: int = 5,
                  window_days: float = 7, passage_minutes: float = 30) -> list[Range]:
    """The merged [a, b] ranges (unix seconds) the snapshots need."""
    return merge_ranges([
        tuple(unix_seconds(x) for x in snapshot_range(t, windows, window_days, passage_minutes))
        for t in snapshots
    ])


def ranges_from_config(cfg: Config) -> list[Range]:
    s = cfg.snapshots
    return needed_ranges(s.timestamps, s.windows, s.window_days, cfg.stability.passage_minutes)


def _covers(have: Sequence[Range], want: Sequence[Range]) -> bool:
    """Every wanted range lies inside one (merged) covered range."""
    have = merge_ranges(have)
    return all(any(a >= c and b <= d for c, d in have) for a, b in want)


def _ts(seconds: int) -> datetime:
    return datetime.fromtimestamp(seconds, UTC)


# -- stored state --------------------------------------------------------------------------
def coverage(catalog: Catalog, wiki: str = "enwiki") -> dict[str, list[Range]]:
    """dump_file → the merged ranges its paragraphs were ingested for."""
    table = catalog.read_arrow("paragraph_coverage", filters=[("wiki", "=", wiki)])
    out: dict[str, list[Range]] = {}
    for row in table.to_pylist():
        out.setdefault(row["dump_file"], []).append(
            (int(row["range_from"].timestamp()), int(row["range_to"].timestamp())))
    return {f: merge_ranges(r) for f, r in out.items()}


def load_marks(catalog: Catalog, wiki: str, ranges: Sequence[Range]) -> dict[int, PageMark]:
    """Watermarks of the wiki; a page is skippable when the file that wrote it covered
    ``ranges``."""
    cov = coverage(catalog, wiki)
    ok = {f for f, have in cov.items() if _covers(have, ranges)}
    table = catalog.read_arrow("page_watermarks", filters=[("wiki", "=", wiki)])
    cols = table.select(
        ["page_id", "last_rev_id", "last_timestamp", "title", "dump_file", "max_rev_id"])
    out: dict[int, PageMark] = {}
    for page_id, rev, last_ts, title, dump_file, max_rev in zip(
        *(c.to_pylist() for c in cols.columns), strict=True
    ):
        out[page_id] = PageMark(rev, int(last_ts.timestamp()), title, dump_file in ok, max_rev)
    return out


def require_coverage(catalog: Catalog, start: datetime, end: datetime,
                     wiki: str = "enwiki") -> None:
    """Raise CoverageError unless every stored page's paragraphs cover [start, end] and the
    newest ingested dump reaches ``end``. The passages stage calls this before reading."""
    start, end = as_utc(start), as_utc(end)
    want = [(unix_seconds(start), unix_seconds(end))]
    files = set(catalog.read_arrow("page_watermarks", filters=[("wiki", "=", wiki)])
                .column("dump_file").to_pylist())
    if not files:
        raise CoverageError(f"no {wiki} history has been ingested; run the Wikipedia ingest "
                            f"with a snapshot covering {start:%Y-%m-%d %H:%M}..{end:%Y-%m-%d %H:%M}")
    cov = coverage(catalog, wiki)
    missing = sorted(f for f in files if not _covers(cov.get(f, []), want))
    if missing:
        have = sorted({r for f in missing for r in cov.get(f, [])})
        shown = ", ".join(f"{_ts(a):%Y-%m-%d %H:%M}..{_ts(b):%Y-%m-%d %H:%M}" for a, b in have)
        raise CoverageError(
            f"{wiki} paragraphs are not ingested for {start:%Y-%m-%d %H:%M}.."
            f"{end:%Y-%m-%d %H:%M} (UTC): {len(missing)} dump file(s), e.g. {missing[0]}, "
            f"cover only [{shown or 'nothing'}]. Add this snapshot to snapshots.timestamps "
            "(or shorten its windows) and re-run the Wikipedia ingest."
        )
    dates = [d for d in catalog.read_arrow("ingested_files", filters=[("wiki", "=", wiki)])
             .column("dump_date").to_pylist() if d]
    if dates:
        newest = max(dates)
        cut = datetime.strptime(newest, "%Y%m%d").replace(tzinfo=UTC)
        if end > cut:
            raise CoverageError(
                f"the newest ingested {wiki} dump ({newest}) starts before "
                f"{end:%Y-%m-%d %H:%M} (UTC), the end of this snapshot's range: edits after "
                "the dump are unknown; ingest a newer dump first"
            )


# -- extraction ----------------------------------------------------------------------------
def extract_files(
    refs: Sequence[DumpFileRef],
    staging: Path,
    ranges: list[Range],
    wiki: str,
    marks: dict[int, PageMark],
    workers: int,
    on_file: Callable[[WikipediaFileSummary], None] | None = None,
    spark=None,
) -> list[WikipediaFileSummary]:
    """Run the worker on each file (see ``ingest_common.run_workers``)."""
    jobs = [
        (str(r.path), str(staging), ranges, wiki, r.path.name, r.dump_date,
         watermarks_for(r, marks))
        for r in refs
    ]
    return run_workers(extract_file, jobs, workers, on_file, spark)


# -- commit --------------------------------------------------------------------------------
def commit(catalog: Catalog, summaries: Sequence[WikipediaFileSummary], wiki: str,
           ranges: Sequence[Range]) -> None:
    """Commit staged outputs in the idempotent order of the module docstring."""
    spark = catalog.session()

    def staged(output: str):
        paths = [s.outputs[output] for s in summaries if output in s.outputs]
        return spark.read.parquet(*paths) if paths else None

    written = staged("written_pages")
    if written is not None:
        written.createOrReplaceTempView("emerge_written_pages")
        for table in ("page_timeline", "paragraph_timeline"):
            if catalog.exists(table):
                spark.sql(
                    f"MERGE INTO delta.`{catalog.path(table)}` AS t USING "
                    "(SELECT DISTINCT page_id FROM emerge_written_pages) AS w "
                    "ON t.page_id = w.page_id WHEN MATCHED THEN DELETE"
                )
    for table in ("page_timeline", "paragraph_timeline"):
        df = staged(table)
        if df is not None:
            catalog.merge(table, df)

    now = datetime.now(UTC)
    commit_rejects(catalog, summaries, wiki)
    # a file's coverage is replaced (a failed file covers nothing: its complete pages are
    # kept but not trusted). Deleted first: a crash in between leaves less coverage, which
    # only makes the next run rewrite more pages.
    if catalog.exists("paragraph_coverage"):
        files = spark.createDataFrame([(wiki, s.dump_file) for s in summaries],
                                      "wiki string, dump_file string")
        files.createOrReplaceTempView("emerge_covered_files")
        spark.sql(
            f"MERGE INTO delta.`{catalog.path('paragraph_coverage')}` AS t USING "
            "emerge_covered_files AS f ON t.wiki = f.wiki AND t.dump_file = f.dump_file "
            "WHEN MATCHED THEN DELETE"
        )
    covered = [
        {"wiki": wiki, "dump_file": s.dump_file, "dump_date": s.dump_date,
         "range_from": _ts(a), "range_to": _ts(b), "ingested_at": now}
        for s in summaries if not s.error for a, b in ranges
    ]
    if covered:
        catalog.merge("paragraph_coverage", catalog.frame("paragraph_coverage", covered))

    marks = staged("page_watermarks")
    if marks is not None:
        catalog.merge("page_watermarks", marks)
    catalog.merge("ingested_files", catalog.frame("ingested_files", [
        {"wiki": wiki, "dump_date": s.dump_date, "dump_file": s.dump_file, "sha1": None,
         "pages": s.pages, "revisions": s.revisions, "rejects": s.rejects, "bytes": s.bytes,
         "seconds": s.seconds, "ingested_at": now}
        for s in summaries
    ]))


def ingest_wikipedia(
    catalog: Catalog,
    files: Sequence[str | Path | DumpFileRef],
    ranges: Sequence[Range],
    wiki: str = "enwiki",
    workers: int = 1,
    max_reject_ratio: float = 0.01,
    staging_dir: str | Path | None = None,
    on_file: Callable[[WikipediaFileSummary], None] | None = None,
    executor: str = "local",
    force: bool = False,
) -> IngestReport:
    """Ingest Wikipedia history files (older dumps first), idempotently and incrementally.

    ``ranges``: the [a, b] unix-second ranges whose paragraphs are kept (`needed_ranges`,
    `ranges_from_config`). ``force``: ignore watermarks and rewrite every page.
    ``executor``: ``local`` (process pool of ``workers``) or ``spark`` (one task per file;
    ``staging_dir`` must then be reachable from every executor).
    """
    if executor not in ("local", "spark"):
        raise ValueError(f"executor must be local or spark, not {executor!r}")
    started = time.monotonic()
    ranges = merge_ranges(ranges)
    report = IngestReport()
    for batch in refs_by_date(files).values():
        staging = Path(tempfile.mkdtemp(prefix="emerge-staging-", dir=staging_dir))
        try:
            marks = {} if force else load_marks(catalog, wiki, ranges)

            def done(summary: WikipediaFileSummary) -> None:
                log_file(summary)
                log.info("%s: %d unchanged and %d stale pages skipped, %d revisions in the "
                         "ranges (%d cleaned), %d page runs, %d paragraph runs, %d moves",
                         summary.dump_file, summary.unchanged_pages, summary.stale_pages,
                         summary.cleaned, summary.decoded, summary.page_runs,
                         summary.paragraph_runs, summary.moves)
                if on_file:
                    on_file(summary)

            summaries = extract_files(batch, staging, ranges, wiki, marks, workers, done,
                                      spark=catalog.session() if executor == "spark" else None)
            commit(catalog, summaries, wiki, ranges)
            report.files.extend(summaries)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    report.seconds = time.monotonic() - started
    return finish(report, "wikipedia", max_reject_ratio)
