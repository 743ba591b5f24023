"""The ingest in one process: plan → extract → commit (``plan``, ``extract``, ``commit``)
for one wiki, extraction in a process pool of ``dumps.workers`` (or as Spark tasks with
``dumps.executor: spark``), dump date by dump date (each newer dump must see the
watermarks the older one left), files that went stale under a concurrent writer extracted
again; and ``finish_ingest``, the same after extractions that ran elsewhere (the Airflow
DAG maps extract over files). One ingest of a wiki runs at a time in a local warehouse
(``ingest_lock``).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from emerge_lib.catalog import Catalog
from emerge_lib.core.config import Config
from emerge_lib.ingest.absent import reconcile_full_dump
from emerge_lib.ingest.commit import check_rejects, commit
from emerge_lib.ingest.extract import extract, job_for
from emerge_lib.ingest.files import IngestError, ingest_lock
from emerge_lib.ingest.plan import IngestPlan, Kind, PlannedFile, Range, plan_ingest, wiki_of
from emerge_lib.ingest.pool import WorkerPool, log_file, run_workers
from emerge_lib.ingest.reconcile import ReconcileReport
from emerge_lib.ingest.staging import FileSummary, missing_outputs, remove_staging

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from emerge_lib.dumps.mirror import ProgressFactory

log = logging.getLogger(__name__)


@dataclass
class IngestReport:
    """What one ingest did: per-file summaries of the files read, files found done."""

    kind: Kind
    wiki: str
    files: list[FileSummary] = field(default_factory=list)
    done: list[str] = field(default_factory=list)
    totals: dict[str, int] = field(default_factory=dict)  # stored, over the whole plan
    seconds: float = 0.0
    # files of newer dump dates left for extraction elsewhere (finish_ingest's
    # ``newer_elsewhere``); the verdict on the rejects waits for the commit of those
    later: list[PlannedFile] = field(default_factory=list)
    # what a newer complete full dump removed (ingest.absent): None when nothing was decided
    reconciled: ReconcileReport | None = None
    removed: dict[str, int] = field(default_factory=dict)

    @property
    def revisions(self) -> int:
        return sum(f.revisions for f in self.files)

    @property
    def pages(self) -> int:
        return sum(f.pages for f in self.files)

    @property
    def rejects(self) -> int:
        return self.totals.get("rejects", 0)

    @property
    def bytes(self) -> int:
        return sum(f.bytes for f in self.files)

    def rows(self) -> dict[str, int]:
        """Rows staged and committed per catalog table."""
        from emerge_lib.catalog import TABLES

        out: dict[str, int] = {}
        for f in self.files:
            for name, n in f.rows.items():
                if name in TABLES:
                    out[name] = out.get(name, 0) + n
        return out


STALE_ATTEMPTS = 3


def run_ingest(cfg: Config, catalog: Catalog, kind: Kind,
               paths: Sequence[str | Path] | None,
               on_file: Callable[[FileSummary], None] | None,
               progress_factory: ProgressFactory | None,
               on_plan: Callable[[IngestPlan], None] | None) -> IngestReport:
    """Plan, extract and commit one wiki's files here (see the module docstring)."""
    started = time.monotonic()
    with ingest_lock(catalog, wiki_of(cfg, kind)):
        plan = plan_ingest(cfg, catalog, kind, paths, progress_factory)
        if on_plan:
            on_plan(plan)
        report = IngestReport(kind, plan.wiki, done=[f.name for f in plan.files if f.done])
        spark = catalog.session() if cfg.dumps.executor == "spark" else None

        def finished(summary: FileSummary) -> None:
            log_file(summary)
            if on_file:
                on_file(summary)

        with WorkerPool(cfg.workers) as pool:
            _run_batches(cfg, catalog, plan, report, pool, spark, finished)
        report.totals = check_rejects(catalog, plan, cfg.dumps.max_reject_ratio)
        report.reconciled, report.removed = reconcile_full_dump(catalog, plan)
    report.seconds = time.monotonic() - started
    return report


def _run_batches(cfg: Config, catalog: Catalog, plan: IngestPlan, report: IngestReport,
                 pool: WorkerPool, spark: SparkSession | None, finished: Callable[[FileSummary], None]) -> None:
    """Extract and commit the pending files, dump date by dump date; stale ones again."""
    for batch in plan.pending_by_date():
        for attempt in range(1, STALE_ATTEMPTS + 1):
            jobs = [(job_for(plan, f, cfg.staging, catalog),) for f in batch]
            try:
                summaries = run_workers(extract, jobs, cfg.workers, finished, spark, pool)
                stale = commit(catalog, plan, summaries)
            except BaseException:
                for (job,) in jobs:
                    remove_staging(job.staging)
                raise
            report.files.extend(s for s in summaries if s not in stale)
            if not stale:
                break
            if attempt == STALE_ATTEMPTS:
                raise IngestError(
                    f"{len(stale)} {plan.wiki} file(s) kept changing under concurrent "
                    f"writers ({stale[0].dump_file}); run the ingest again",
                    retryable=True)
            names = {s.dump_file for s in stale}
            batch = [replace(f, ranges=_kept(catalog, plan, f)) for f in batch
                     if f.name in names]


def finish_ingest(cfg: Config, catalog: Catalog, plan: IngestPlan,
                  summaries: Sequence[FileSummary], newer_elsewhere: bool) -> IngestReport:
    """Commit what extractions elsewhere staged (``summaries``, of the plan's oldest pending
    dump date), extract again here what went stale meanwhile and the files of newer dump
    dates (each needs the watermarks of the one before), then judge the rejects over the
    whole plan. Files whose staged output is gone because the warehouse already holds them
    (a rerun of the commit) are not committed again.

    ``newer_elsewhere``: the files of dump dates newer than the plan's oldest pending one
    are not extracted here but left in ``report.later`` (the ingest DAG maps their
    extraction over its workers once this commit has left the watermarks they continue
    from), and the verdict waits for their commit."""
    started = time.monotonic()
    report = IngestReport(plan.kind, plan.wiki, done=[f.name for f in plan.files if f.done])
    with ingest_lock(catalog, plan.wiki):
        stored = {r["dump_file"]: r for r in catalog.read_arrow(
            "ingested_files", filters=[("wiki", "=", plan.wiki)]).to_pylist()}
        missing = set(missing_outputs(summaries))
        held = [s for s in summaries if any(o in missing for o in s.outputs.values())
                and stored_as(stored.get(s.dump_file), s.bytes, s.sha1)]
        if held:
            log.info("%d %s file(s) already committed (a rerun): not committed again",
                     len(held), plan.wiki)
            report.done += [s.dump_file for s in held]
        fresh = [s for s in summaries if s not in held]
        stale = commit(catalog, plan, fresh) if fresh else []
        report.files.extend(s for s in fresh if s not in stale)
        handled = {s.dump_file for s in fresh} - {s.dump_file for s in stale} | {
            s.dump_file for s in held}
        stored = {r["dump_file"]: r for r in catalog.read_arrow(
            "ingested_files", filters=[("wiki", "=", plan.wiki)]).to_pylist()}
        cov = _coverage(catalog, plan)
        left = [replace(f, ranges=_kept(catalog, plan, f)) for f in plan.pending
                if f.name not in handled and not _committed(stored.get(f.name), f, cov, plan)]
        if newer_elsewhere and plan.pending:
            oldest = min(f.ref.dump_date for f in plan.pending)
            report.later = [f for f in left if f.ref.dump_date > oldest]
            left = [f for f in left if f.ref.dump_date <= oldest]
        if left:
            log.info("%s: %d file(s) extracted here (stale, or of a newer dump date)",
                     plan.wiki, len(left))
            rest = replace(plan, files=left)
            spark = catalog.session() if cfg.dumps.executor == "spark" else None
            with WorkerPool(cfg.workers) as pool:
                _run_batches(cfg, catalog, rest, report, pool, spark, log_file)
        if report.later:
            log.info("%s: %d file(s) of newer dump dates are extracted next, elsewhere",
                     plan.wiki, len(report.later))
        else:
            report.totals = check_rejects(catalog, plan, cfg.dumps.max_reject_ratio)
            report.reconciled, report.removed = reconcile_full_dump(catalog, plan)
    report.seconds = time.monotonic() - started
    return report


def _coverage(catalog: Catalog, plan: IngestPlan) -> dict[str, list[Range]]:
    if plan.kind != "wikipedia":
        return {}
    from emerge_lib.ingest.wikipedia.coverage import coverage

    return coverage(catalog, plan.wiki)


def stored_as(row: Mapping[str, Any] | None, size: int, sha1: str | None) -> bool:
    """Does ``row`` (the file's ``ingested_files`` row, or None) record this file committed
    without error: the same size and, where both sides know it, the same sha1? (A sha1
    that differs is another file of the same name; one that is missing on either side
    proves nothing.)"""
    return row is not None and row["error"] is None and row["bytes"] == size and (
        not sha1 or not row["sha1"] or row["sha1"] == sha1)


def _committed(row: Mapping[str, Any] | None, f: PlannedFile, cov: dict[str, list[Range]],
               plan: IngestPlan) -> bool:
    """Does the warehouse already hold ``f`` as planned (a rerun after its commit)?"""
    if not stored_as(row, f.bytes, f.ref.sha1):
        return False
    if plan.kind != "wikipedia":
        return True
    from emerge_lib.ingest.wikipedia.coverage import covers

    return covers(cov.get(f.name, []), plan.needed)


def _kept(catalog: Catalog, plan: IngestPlan, f: PlannedFile) -> tuple[Range, ...]:
    """A Wikipedia file's ranges, recomputed from the coverage as it is now."""
    if plan.kind != "wikipedia":
        return f.ranges
    from emerge_lib.ingest.wikipedia.coverage import covered_ranges, merge_ranges

    return tuple(merge_ranges(covered_ranges(catalog, plan.wiki) + list(plan.needed)))


def describe(report: IngestReport) -> str:
    """Every figure of one ingest on one line (logged at DEBUG; the stage line has the
    essentials)."""
    mb = report.bytes / 1e6
    rate = f", {mb / report.seconds:.1f} MB/s" if report.seconds and mb else ""
    done = f", {len(report.done)} already ingested" if report.done else ""
    return (f"{report.wiki}: {len(report.files)} files read{done}, {report.pages} pages, "
            f"{report.revisions} revisions, {mb:.1f} MB in {report.seconds:.1f}s{rate}; "
            f"{report.totals.get('rejects', 0)} rejects stored "
            f"({report.totals.get('deleted_revisions', 0)} deleted revisions)")
