"""Wikipedia history files → page_timeline, paragraph_timeline, paragraph_coverage: what is
Wikipedia's in the ingest (the driver, plan → extract → commit, is ``stages.ingest``).

Produces: page_timeline, paragraph_timeline, paragraph_coverage, and rows with
wiki='enwiki' in page_watermarks, ingested_files and ingest_rejects. Consumed by:
stages.titles (redirects and titles as of τ), stages.passages (paragraph presence runs;
it calls `require_coverage` first), stages.snapshot (first paragraphs).

The history is streamed once; paragraphs are kept only for the time ranges snapshots need
(`needed_ranges`: for each snapshot t, [t, τ_n + passage_minutes], with the revision
current at t). Coverage accumulates: a file is extracted for the union of what the
warehouse already covers and what the new snapshots need, so a backfill that goes back to
an earlier snapshot re-reads nothing, and a window change inside stored coverage needs no
re-ingest; a snapshot outside it is refused by `require_coverage` with a clear message.

The extraction (`stages.wikipedia_extract`) runs one process per file, or one Spark task
per file (mapInArrow). The commit is idempotent and replaces pages whole:

1. every page the files wrote has its old page_timeline / paragraph_timeline rows deleted,
2. the new rows are MERGEd on the table keys,
3. each file's coverage rows are replaced by the ranges it was read for (a failed file
   covers nothing); then the driver MERGEs rejects, watermarks and file records, last
   (so a crash before them makes the rerun write those pages again).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime, timedelta

from emerge_lib.config import Config
from emerge_lib.errors import EmergeError
from emerge_lib.schedule import SnapshotPlan, as_utc, unix_seconds
from emerge_lib.stages.ingest_wikidata import page_filters
from emerge_lib.stages.staging import FileSummary
from emerge_lib.stages.wikipedia_extract import PageMark, Range, merge_ranges
from emerge_lib.tables import Catalog

__all__ = [
    "CoverageError",
    "commit_staged",
    "coverage",
    "covered_ranges",
    "load_marks",
    "needed_ranges",
    "ranges_from_config",
    "require_coverage",
    "snapshot_range",
]


class CoverageError(EmergeError):
    """The history a snapshot needs was not ingested (or not for these dates)."""


# -- ranges --------------------------------------------------------------------------------
def snapshot_range(plan: SnapshotPlan, passage_minutes: float) -> tuple[datetime, datetime]:
    """[t, τ_n + passage_minutes]: what the passages of one snapshot read (the state at t,
    every window, and the stability margin after the last window's end)."""
    return plan.t, plan.horizon + timedelta(minutes=passage_minutes)


def needed_ranges(plans: Iterable[SnapshotPlan], passage_minutes: float) -> list[Range]:
    """The merged [a, b] ranges (unix seconds) the snapshots need."""
    return merge_ranges([
        tuple(unix_seconds(x) for x in snapshot_range(p, passage_minutes)) for p in plans
    ])


def ranges_from_config(cfg: Config) -> list[Range]:
    return needed_ranges(cfg.plans(), cfg.stability.passage_minutes)


def covers(have: Sequence[Range], want: Sequence[Range]) -> bool:
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


def covered_ranges(catalog: Catalog, wiki: str = "enwiki") -> list[Range]:
    """The union of every file's coverage: what the warehouse keeps paragraphs for."""
    return merge_ranges([r for have in coverage(catalog, wiki).values() for r in have])


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
    missing = sorted(f for f in files if not covers(cov.get(f, []), want))
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


# -- commit --------------------------------------------------------------------------------
def commit_staged(catalog: Catalog, summaries: Sequence[FileSummary], wiki: str,
                  ranges: Mapping[str, Sequence[Range]]) -> None:
    """Steps 1-3 of the module docstring; ``ranges``: dump_file → the ranges it was read for."""
    spark = catalog.session()

    def staged(output: str):
        paths = [s.outputs[output] for s in summaries if output in s.outputs]
        return spark.read.parquet(*paths) if paths else None

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
         "range_from": _ts(a), "range_to": _ts(b), "ingested_at": now}
        for s in summaries if not s.error for a, b in ranges.get(s.dump_file, ())
    ]
    if covered:
        catalog.merge("paragraph_coverage", catalog.frame("paragraph_coverage", covered))
