"""The two ingest stages of the registry, whole (``run``: plan → extract → commit in this
process, ``emerge_lib.ingest.run``) and as three steps that run as separate tasks (the
ingest DAG maps ``extract`` over groups of files; JSON in, JSON out, any process):

- ``plan``: every file, done or not, and the pending files of the oldest pending dump
  date balanced by bytes into at most ``max_groups`` groups (one mapped task each, so a
  dump of thousands of files stays under a scheduler's limit on mapped tasks) of at least
  ``dumps.extract_group_mb`` each (measured in Airflow: files of a second each, one task
  each, used 0.5 cores a task and took 3× the command's time; grouped, a task's pool
  uses every core); files of
  newer dump dates are left to the commit (each newer dump continues from the
  watermarks the older one left);
- ``extract``: one group's files here, in a process pool of ``dumps.workers``, staged;
  needs no engine session;
- ``commit``: what the extract steps staged, plus what went stale and the newer dump
  dates, then the reject verdict: the stage's own result. A rerun commits nothing twice.
  With ``newer=N`` it leaves the next dump date to mapped extract steps instead (its
  ``detail["next"]``: that date's files in at most N groups, planned once the watermarks
  they continue from are committed), and a second commit of those judges the rejects:
  the DAG's extraction then runs on its workers for both dump dates of a first ingest,
  not inside one commit task.

Every step goes through ``run_stage(ctx, "ingest_wikidata", step="extract", group=…)``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import asdict, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from emerge_lib.core.errors import EmergeError
from emerge_lib.core.stage import Outcome, Stage, StageContext, StageFunction

if TYPE_CHECKING:
    from emerge_lib.ingest.plan import IngestPlan, Kind, PlannedFile
    from emerge_lib.ingest.run import IngestReport

log = logging.getLogger(__name__)

INGEST_READS = ("page_watermarks", "ingested_files", "ingest_rejects", "dump_pages",
                "reconciled_pages", "reconciled_logs")
#: a newer complete full dump removes what it lacks (ingest.absent)
INGEST_WRITES = ("page_watermarks", "ingested_files", "ingest_rejects", "dump_pages",
                 "reconciled_pages", "reconciled_logs")


def _outcome(report: IngestReport) -> Outcome:
    """An IngestReport as the stage's outcome (rejects: stored, over every file of the
    plan, i.e. what the reject-ratio check judged)."""
    metrics: dict[str, float] = {"files": len(report.files)}
    if report.files and report.done:
        metrics["already ingested"] = len(report.done)
    metrics |= {"revisions": report.revisions, "rejects": report.rejects,
                "MB": report.bytes / 1e6}
    if report.reconciled is not None:  # what a newer complete full dump removed
        metrics["pages changed"] = report.reconciled.changed
    note = "" if report.files else f"{len(report.done)} files already ingested"
    return Outcome(report.rows(), metrics, note, report)


def _no_inputs(kind: Kind) -> Callable[[StageContext], str | None]:
    def skip(ctx: StageContext) -> str | None:
        return None if ctx.has_inputs(kind) else "no files given and no dump dates configured"

    return skip


def _run(kind: Kind) -> StageFunction:
    def run(ctx: StageContext, _: None) -> Outcome:
        from emerge_lib.ingest.run import describe, run_ingest

        report = run_ingest(ctx.cfg, ctx.catalog, kind, ctx.inputs(kind), ctx.on_file,
                            ctx.progress_factory, ctx.on_plan)
        log.debug("%s", describe(report))  # run_stage logs the one summary line
        return _outcome(report)

    return run


def _plan(kind: Kind) -> StageFunction:
    def plan_step(ctx: StageContext, _: None, *, max_groups: int) -> Outcome:
        """``detail``: {"plan": every file as JSON (None without inputs), "groups": one
        plan of its own per mapped extract task, "later": files of newer dump dates}."""
        from emerge_lib.ingest.plan import plan_ingest

        if max_groups < 1:
            raise EmergeError(f"max_groups must be at least 1, not {max_groups}")
        if not ctx.has_inputs(kind):
            return Outcome(note="no input files",
                           detail={"plan": None, "groups": [], "later": []})
        plan = plan_ingest(ctx.cfg, ctx.catalog, kind, ctx.inputs(kind), ctx.progress_factory)
        dates = plan.pending_by_date()
        first = dates[0] if dates else []
        groups = _groups(ctx, plan, first, max_groups)
        later = [f.name for batch in dates[1:] for f in batch]
        note = f"{len(later)} files of newer dump dates follow" if later else ""
        return Outcome(metrics={"files": len(plan.files), "done": len(plan.files) - len(plan.pending),
                                "pending": len(first), "groups": len(groups)}, note=note,
                       detail={"plan": plan.to_dict(), "groups": groups, "later": later})

    return plan_step


def _groups(ctx: StageContext, plan: IngestPlan, files: Sequence[PlannedFile], max_groups: int
            ) -> list[dict[str, Any]]:
    """``files`` (of one dump date) balanced by bytes into at most ``max_groups`` groups of
    at least ``dumps.extract_group_mb`` each, largest file first to the lightest group;
    each group a plan of its own, as JSON (one mapped extract task each)."""
    least = ctx.cfg.dumps.extract_group_mb * 1e6
    by_size = int(sum(f.bytes for f in files) // least) if least else len(files)
    groups: list[list[PlannedFile]] = [[] for _ in range(min(max_groups, len(files), max(1, by_size)))]
    load = [0] * len(groups)
    for f in sorted(files, key=lambda f: (-f.bytes, f.name)):
        i = load.index(min(load))
        groups[i].append(f)
        load[i] += f.bytes
    return [replace(plan, files=g).to_dict() for g in groups]


def _extract(ctx: StageContext, _: None, *, group: dict[str, Any] | None) -> Outcome:
    """``detail``: the group's FileSummaries as JSON data, for the commit step."""
    from emerge_lib.ingest.extract import extract, job_for
    from emerge_lib.ingest.plan import IngestPlan
    from emerge_lib.ingest.pool import WorkerPool, log_file, run_workers
    from emerge_lib.ingest.staging import remove_staging

    if not group:
        return Outcome(note="nothing to extract", detail=[])
    parsed = IngestPlan.from_dict(group)
    jobs = [(job_for(parsed, f, ctx.cfg.staging, ctx.catalog),) for f in parsed.pending]
    workers = max(1, min(ctx.cfg.workers, len(jobs)))
    try:
        with WorkerPool(workers) as pool:
            summaries = run_workers(extract, jobs, workers, log_file, None, pool)
    except BaseException:
        for (job,) in jobs:
            remove_staging(job.staging)
        raise
    return Outcome(metrics={"files": len(summaries),
                            "MB": sum(s.bytes for s in summaries) / 1e6},
                   detail=[asdict(s) for s in summaries])


def _commit(kind: Kind) -> StageFunction:
    def commit_step(ctx: StageContext, _: None, *, plan: dict[str, Any] | None,
                    summaries: Sequence[dict[str, Any] | Sequence[dict[str, Any]]],
                    newer: int | None) -> Outcome:
        """``summaries``: the extract steps' output (lists of them, as mapped tasks
        return); extracts here what went stale, and the newer dump dates unless
        ``newer`` (a group count) says they are extracted elsewhere: then ``detail`` is
        ``{"next": …}``, the next dump date's files in at most ``newer`` groups (as the
        plan step's), and the verdict on the rejects waits for their commit."""
        from emerge_lib.ingest.plan import IngestPlan
        from emerge_lib.ingest.run import describe, finish_ingest
        from emerge_lib.ingest.staging import FileSummary

        if plan is None:
            return Outcome(note="no input files")
        parsed = IngestPlan.from_dict(plan)
        flat = [item for entry in summaries or () if entry
                for item in ([entry] if isinstance(entry, dict) else entry)]
        if kind == "wikipedia":  # its summaries carry the title-move counts too
            from emerge_lib.ingest.wikipedia.extract import WikipediaFileSummary as FileSummary
        report = finish_ingest(ctx.cfg, ctx.catalog, parsed, [FileSummary(**d) for d in flat],
                               newer is not None)
        log.debug("%s", describe(report))
        outcome = _outcome(report)
        if newer is None:
            return outcome
        if newer < 1:
            raise EmergeError(f"newer must be at least 1 group, not {newer}")
        dates = IngestPlan(parsed.kind, parsed.wiki, report.later).pending_by_date()
        nxt = _groups(ctx, parsed, dates[0], newer) if dates else []
        note = (f"{len(dates[0])} files of dump date {dates[0][0].ref.dump_date} are "
                f"extracted next" if dates else outcome.note)
        return replace(outcome, note=note, detail={"next": nxt})

    return commit_step


def _ingest_stage(kind: Kind, reads: tuple[str, ...], writes: tuple[str, ...],
                  settings: tuple[str, ...], summary: str) -> Stage:
    return Stage(name=f"ingest_{kind}", scope="ingest", reads=reads, writes=writes,
                 settings=settings, run=_run(kind), summary=summary, skip=_no_inputs(kind),
                 steps={"plan": _plan(kind), "extract": _extract, "commit": _commit(kind)})


INGEST_WIKIDATA = _ingest_stage(
    "wikidata", INGEST_READS,
    ("statement_timeline", "item_timeline", "property_timeline", *INGEST_WRITES),
    ("dumps",), "Wikidata history files → statement, item and property timelines")
INGEST_WIKIPEDIA = _ingest_stage(
    "wikipedia", (*INGEST_READS, "paragraph_coverage"),
    ("page_timeline", "paragraph_timeline", "paragraph_coverage", *INGEST_WRITES),
    ("dumps", "snapshots", "stability"),
    "Wikipedia history files → page and paragraph timelines for the snapshots' ranges")
STAGES = (INGEST_WIKIDATA, INGEST_WIKIPEDIA)


def _reconcile(ctx: StageContext, _: None, *, logs: dict[Kind, list[str]] | None
               ) -> Outcome:
    """``logs``: {kind: a logging dump's files (one, or its parts in order)}; None: each
    wiki's newest logging dump on the configured mirror that its timelines reach and that
    is not yet reconciled (``ingest.reconcile``). ``detail``: the ReconcileReports."""
    from emerge_lib.ingest.files import DumpFileRef
    from emerge_lib.ingest.plan import wiki_of
    from emerge_lib.ingest.reconcile import reconcile

    chosen = ({k: ([Path(p) for p in paths], DumpFileRef.of(paths[0]).dump_date,
                   [None] * len(paths)) for k, paths in logs.items()}
              if logs is not None else _mirror_logs(ctx))
    reports = []
    rows: dict[str, int] = {}
    for kind, (paths, date, sha1s) in chosen.items():
        report, removed = reconcile(ctx.catalog, wiki_of(ctx.cfg, kind), paths, date,
                                    sha1s=sha1s)
        reports.append(report)
        for table, n in removed.items():
            rows[table] = rows.get(table, 0) + n
    metrics: dict[str, float] = {
        "logging dumps": sum(not r.skipped for r in reports),
        "pages changed": sum(r.changed for r in reports),
        "need full dump": sum(r.needs_full_dump for r in reports),
        "moves": sum(r.moves for r in reports)}
    note = "; ".join(f"{r.wiki} {r.dump_date}: {r.skipped}" for r in reports if r.skipped)
    return Outcome(rows, metrics, note or ("" if reports else "no logging dump to reconcile"),
                   reports)


def _mirror_logs(ctx: StageContext) -> dict[Kind, tuple[list[Path], str, list[str | None]]]:
    """Per wiki, the newest logging dump of the mirror after what is reconciled and up to
    the day the timelines reach (its files, downloaded and verified, with their sha1)."""
    from emerge_lib.dumps.mirror import DumpNotReadyError, Mirror
    from emerge_lib.ingest.plan import wiki_of
    from emerge_lib.ingest.reconcile import reach, reconciled_to

    out: dict[Kind, tuple[list[Path], str, list[str | None]]] = {}
    kinds: tuple[Kind, ...] = ("wikidata", "wikipedia")
    if not ctx.cfg.dumps.mirror or not ctx.catalog.exists("ingested_files"):
        return out
    with Mirror(ctx.cfg.dumps.mirror) as mirror:
        for kind in kinds:
            wiki = wiki_of(ctx.cfg, kind)
            done, (_, reached) = reconciled_to(ctx.catalog, wiki), reach(ctx.catalog, wiki)
            for date in reversed(mirror.dates(wiki)):
                if not done < date <= reached:
                    continue
                try:
                    parts = mirror.logging_dump(wiki, date)
                except DumpNotReadyError as exc:
                    log.info("%s: no logging dump to reconcile yet (%s)", wiki, exc)
                    continue
                paths = [mirror.local_path(f, verify=True) if mirror.scheme == "file" else
                         mirror.download(f, Path(ctx.cfg.dumps.download_dir) / wiki / date)
                         for f in parts]
                out[kind] = (paths, date, [f.sha1 for f in parts])
                break
    return out


def _nothing_ingested(ctx: StageContext) -> str | None:
    if ctx.catalog.exists("ingested_files") and ctx.catalog.row_count("ingested_files"):
        return None
    return "no dump ingested: nothing to reconcile"


RECONCILE = Stage(
    name="reconcile", scope="ingest",
    reads=("page_watermarks", "ingested_files", "reconciled_pages", "reconciled_logs"),
    writes=("statement_timeline", "item_timeline", "property_timeline", "page_timeline",
            "paragraph_timeline", "page_watermarks", "reconciled_pages", "reconciled_logs"),
    settings=("dumps",), run=_reconcile, in_build=False, skip=_nothing_ingested,
    summary="a logging dump's deletions and restorations → the timelines (continued from "
            "daily increments or newer full dumps)")
