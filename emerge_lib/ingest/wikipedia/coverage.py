"""Which time ranges of the Wikipedia history the warehouse holds paragraphs for.

Paragraphs are kept only for the ranges snapshots need (``needed_ranges``: for each
snapshot t, [t, τ_n + passage_minutes], with the revision current at t). Coverage
accumulates: a file is extracted for the union of what the warehouse already covers and
what the new snapshots need, so a backfill that goes back to an earlier snapshot re-reads
nothing, and a window change inside stored coverage needs no re-ingest; a snapshot
outside it is refused by ``require_coverage`` with a clear message. Read by the ingest's
plan and by the stages that read paragraphs (snapshot, passages).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import UTC, datetime, timedelta

from emerge_lib.catalog import Catalog
from emerge_lib.core.config import Config
from emerge_lib.core.errors import EmergeError
from emerge_lib.core.schedule import SnapshotPlan, as_utc, unix_seconds

Range = tuple[int, int]  # [a, b] in unix seconds


def merge_ranges(ranges: Sequence[Range]) -> list[Range]:
    """Sorted, with overlapping or touching ranges merged."""
    out: list[Range] = []
    for a, b in sorted(ranges):
        if a > b:
            raise ValueError(f"range start {a} is after its end {b}")
        if out and a <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return out


class CoverageError(EmergeError):
    """The history a snapshot needs was not ingested (or not for these dates)."""


# -- ranges --------------------------------------------------------------------------------
def snapshot_range(plan: SnapshotPlan, passage_minutes: float) -> tuple[datetime, datetime]:
    """[t, τ_n + passage_minutes]: what the passages of one snapshot read (the state at t,
    every window, and the stability margin after the last window's end)."""
    return plan.t, plan.horizon + timedelta(minutes=passage_minutes)


def needed_ranges(plans: Iterable[SnapshotPlan], passage_minutes: float) -> list[Range]:
    """The merged [a, b] ranges (unix seconds) the snapshots need."""
    spans = (snapshot_range(p, passage_minutes) for p in plans)
    return merge_ranges([(unix_seconds(a), unix_seconds(b)) for a, b in spans])


def ranges_from_config(cfg: Config) -> list[Range]:
    return needed_ranges(cfg.plans(), cfg.stability.passage_minutes)


def covers(have: Sequence[Range], want: Sequence[Range]) -> bool:
    """Every wanted range lies inside one (merged) covered range."""
    have = merge_ranges(have)
    return all(any(a >= c and b <= d for c, d in have) for a, b in want)


def utc_of(seconds: int) -> datetime:
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
        shown = ", ".join(f"{utc_of(a):%Y-%m-%d %H:%M}..{utc_of(b):%Y-%m-%d %H:%M}" for a, b in have)
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
