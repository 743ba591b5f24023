"""What every emerge task does inside Airflow: resolve its run once (:func:`task_run`: the
snapshot, the configuration from file, environment, connections and params, the S3
session), which the task bodies take; open an engine session, call
``emerge_lib.pipeline.runner.run_stage``, and turn emerge's errors into Airflow's verdict:
a retryable ``EmergeError`` is raised as is (the task's retries, with exponential backoff,
try again), any other failure becomes ``AirflowFailException`` (no retry: bad data or
configuration does not heal by waiting)."""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from airflow.sdk.exceptions import AirflowFailException, AirflowSkipException

if TYPE_CHECKING:
    from airflow.sdk import Asset

    from emerge_lib.core.config import Config
    from emerge_lib.core.stage import StageContext, StageResult
    from emerge_lib.pipeline.runs import SnapshotRun

log = logging.getLogger("emerge_airflow")

#: the snapshot DAG's wait (``emerge_lib.airflow.waits``); its XCom ``dump_date`` is the
#: dump the run ingests itself
SNAPSHOT_WAIT = "wait_for_inputs"


@contextmanager
def verdicts() -> Iterator[None]:
    """Retry only what emerge says is retryable."""
    from emerge_lib.core.errors import EmergeError

    try:
        yield
    except (AirflowSkipException, AirflowFailException):
        raise
    except EmergeError as exc:
        if exc.retryable:
            log.warning("retryable: %s", exc)
            raise
        raise AirflowFailException(str(exc)) from exc
    except Exception as exc:
        raise AirflowFailException(f"{type(exc).__name__}: {exc}") from exc


def allow_children() -> None:
    """Let this task process start processes of its own. A Celery worker (the prefork
    pool, billiard's) runs each task in a fork of one of its pool's processes, and the
    fork inherits that process's multiprocessing identity: its daemon flag, for which
    multiprocessing refuses any child ("daemonic processes are not allowed to have
    children"), and billiard's authkey, which the spawn of a child refuses to pickle
    ("Pickling an AuthenticationString object is disallowed"). The ingest's process pool
    could start under neither. A task process is nobody's multiprocessing child
    (Airflow's supervisor forked it and waits for it) and the pool's workers exit with it:
    the flag goes, and the key becomes the standard library's (same bytes)."""
    import multiprocessing
    from multiprocessing.process import AuthenticationString  # type: ignore[attr-defined]

    # no setter allows it (and typeshed does not know the attribute)
    config = multiprocessing.current_process()._config  # type: ignore[attr-defined]  # noqa: SLF001
    if config.get("daemon"):
        config["daemon"] = False
    key = config.get("authkey")
    if key is not None and type(key) is not AuthenticationString:
        config["authkey"] = AuthenticationString(bytes(key))


def skipped(reason: str) -> None:
    """Skip the task, saying why in its log (Airflow shows the exception's text only in
    the collapsed "Post Execute" group)."""
    log.info("skipped: %s", reason)
    raise AirflowSkipException(reason)


def resolve_snapshot(context: Mapping[str, Any]) -> str:
    """The snapshot t of this run: ``params.snapshot``; else the ``snapshot`` of a
    triggering Asset event; else the run's logical date (a scheduled or backfill run's
    quarter start, with CronTriggerTimetable; the trigger form's date of a manual run).
    ``{{ ds }}`` is never used: an Asset-triggered run has no logical date."""
    params = context.get("params") or {}
    if params.get("snapshot"):
        return str(params["snapshot"])
    events = context.get("triggering_asset_events") or {}
    for asset_events in events.values():
        for event in asset_events:
            if (event.extra or {}).get("snapshot"):
                return str(event.extra["snapshot"])
    logical = context.get("logical_date")
    if logical is not None:
        return logical.isoformat()
    raise AirflowFailException("this run has no snapshot: give params.snapshot (an ISO "
                               "timestamp such as 2024-04-01T00:00:00Z) when triggering it")


@dataclass(frozen=True)
class TaskRun:
    """One task's run, resolved once from its Airflow context (:func:`task_run`): the
    run's params with what the connections add, its configuration, the S3 connection's
    session. The task bodies take it: none reads the configuration or asks a connection
    again."""

    context: Mapping[str, Any]
    run: SnapshotRun
    cfg: Config
    s3_session: Any | None = None

    @property
    def release_dir(self) -> Path:
        return self.run.release_folder(self.cfg)


def task_run(context: Mapping[str, Any], snapshot: bool = True) -> TaskRun:
    """The one place a task builds its run from its context (``snapshot=False``: a run
    of the ingest DAG): each connection asked once, the configuration read once."""
    from emerge_lib.airflow.hooks import connections

    with verdicts():
        overrides, session = connections()
        run = snapshot_run(context, snapshot, overrides)
        return TaskRun(context, run, run.settings(), session)


def snapshot_run(context: Mapping[str, Any], snapshot: bool = True,
                 overrides: Mapping[str, Any] | None = None) -> SnapshotRun:
    """The run's params as an ``emerge_lib.pipeline.runs.SnapshotRun`` with the
    connections' ``overrides`` (``snapshot=False``: an ingest run)."""
    from emerge_lib.pipeline.runs import SnapshotRun

    params = dict(context.get("params") or {})
    if not params.get("dump_date") and not (params.get("wikidata_files") or
                                            params.get("wikipedia_files")):
        dump_date = _ingest_dump_date(context) if not snapshot else _own_dump_date(context)
        if dump_date:
            params["dump_date"] = dump_date
    with verdicts():
        return SnapshotRun.from_params(params, resolve_snapshot(context) if snapshot else None,
                                       overrides)


def run_type(context: Mapping[str, Any]) -> str:
    """``scheduled``, ``backfill``, ``manual`` or ``asset_triggered``."""
    kind = getattr(context.get("dag_run"), "run_type", None)
    return str(getattr(kind, "value", kind) or "manual")


def _ingest_dump_date(context: Mapping[str, Any]) -> str | None:
    """An ingest run's dump: the newest of its triggering dumps Asset events (the
    emerge_dumps DAG's), else, for a scheduled run (emerge_dumps' own), the day of its
    logical date. A manual run has none (the trigger form's date is the time of the
    click, not a dump's): the configured dump dates."""
    events = context.get("triggering_asset_events") or {}
    dates = [str(e.extra["dump_date"]) for es in events.values() for e in es
             if (e.extra or {}).get("dump_date")]
    if dates:
        return max(dates)
    logical = context.get("logical_date")
    if logical is None or run_type(context) != "scheduled":
        return None
    return logical.strftime("%Y%m%d")


def _own_dump_date(context: Mapping[str, Any]) -> str | None:
    """The dump a snapshot run's wait chose for the run to ingest itself (XCom)."""
    ti = context.get("ti")
    if ti is None or getattr(ti, "task_id", None) == SNAPSHOT_WAIT:
        return None
    return ti.xcom_pull(task_ids=SNAPSHOT_WAIT, key="dump_date") or None


@contextmanager
def stage_context(tr: TaskRun, engine: bool = True) -> Iterator[StageContext]:
    """The StageContext of the task's run (its inputs, its release folder, the S3
    connection's session), with a Spark session on the engine connection's engine when
    ``engine``."""
    from emerge_lib.pipeline.context import open_context

    with open_context(tr.cfg, engine=engine, wikidata=tr.run.inputs("wikidata"),
                      wikipedia=tr.run.inputs("wikipedia"), release_dir=tr.release_dir,
                      s3_client=tr.s3_session) as ctx:
        yield ctx


def _through_the_door(ctx: StageContext, name: str, snapshot: str | None, step: str | None,
                      *, skip: bool = False, **inputs: Any) -> StageResult:
    """``run_stage`` of registry stage ``name`` (or its ``step``); a whole stage that does
    not apply to ``ctx`` (``Stage.skip``: an ingest without inputs, curation off, nowhere
    to publish, nothing to score), or a step of one with ``skip`` (curate's per model), is
    skipped with its reason."""
    from emerge_lib.pipeline.registry import stage
    from emerge_lib.pipeline.runner import run_stage

    st = stage(name)
    why = st.why_not(ctx) if step is None or skip else None
    if why is not None:
        skipped(f"{name}: {why}")
    return run_stage(ctx, name, snapshot, step=step, **inputs)  # a step's input may be `plan`


def _step(name: str, tr: TaskRun, *, engine: bool = True, step: str | None = None,
          skip: bool = False, **inputs: Any) -> StageResult:
    """Run registry stage ``name`` (or its ``step``) for this run (:func:`_through_the_door`).
    Returns the StageResult."""
    from emerge_lib.pipeline.registry import stage

    allow_children()
    with verdicts():
        st = stage(name)
        with stage_context(tr, engine=engine) as ctx:
            plan = tr.run.snapshot if st.scope == "snapshot" else None
            started = time.time()
            result = _through_the_door(ctx, name, plan, step, skip=skip, **inputs)
    ingest_run = tr.run.snapshot is None
    if ingest_run and st.scope == "ingest" and tr.context.get("ti") is not None:
        tr.context["ti"].xcom_push(key=STAGE_SPAN, value={
            "cpu_seconds": result.cpu_seconds, "start": started, "end": time.time()})
    return result


def run_stage_task(name: str, tr: TaskRun) -> dict[str, Any]:
    """Run registry stage ``name`` for this run; returns the StageResult as plain data
    (XCom)."""
    return _step(name, tr).to_dict()


def llm_task(name: str, judge: str, tr: TaskRun) -> dict[str, Any]:
    """An LLM stage's (``curate``, ``final_judge``) requests to one route's model
    (``additions`` or ``deprecations``): a task of its own, in that model's pool; skipped
    with the stage's reason when curation is off for this run."""
    return _step(name, tr, step=judge, skip=True).to_dict()


def ingest_plan_task(kind: str, tr: TaskRun, max_groups: int) -> list[dict[str, Any]]:
    """The pending files of one wiki in groups (one mapped extract task each); the whole
    plan goes to XCom under the key ``plan`` for the commit."""
    from emerge_lib.airflow.params import MAX_MAP_LENGTH

    if not 1 <= max_groups <= MAX_MAP_LENGTH:
        raise AirflowFailException(f"max_tasks must be 1..{MAX_MAP_LENGTH} (Airflow's "
                                   f"max_map_length), not {max_groups}")
    planned = _step(f"ingest_{kind}", tr, engine=False, step="plan",
                    max_groups=max_groups).detail
    tr.context["ti"].xcom_push(key="plan", value=planned["plan"])
    return planned["groups"]


def ingest_extract_task(kind: str, group: dict[str, Any], tr: TaskRun
                        ) -> list[dict[str, Any]]:
    """Extract one group of files into the staging area (no engine session)."""
    return _step(f"ingest_{kind}", tr, engine=False, step="extract", group=group).detail


#: the ingest DAG's commit tasks of a wiki's task group: the oldest pending dump date's,
#: which hands the next dump date to mapped extract tasks, and the newer one's
INGEST_COMMITS = ("commit", "commit_newer")
#: every ingest step's task of a wiki's task group
INGEST_STEPS = ("plan", "extract", "commit", "extract_newer", "commit_newer")
#: XCom key of an ingest step's CPU seconds and wall-clock span (epoch seconds): the
#: run's last task reports the cores of the ingest as a whole from them
STAGE_SPAN = "stage_span"


def run_cores(spans: list[dict[str, float] | None]) -> tuple[int, float, float]:
    """(stages, CPU seconds, seconds while any of them ran) of the ingest steps' spans:
    a task's stage line reports only its own cores, and two tasks side by side on one
    machine each report their share."""
    got = [s for s in spans if s]
    wall, reach = 0.0, float("-inf")
    for span in sorted(got, key=lambda s: s["start"]):
        wall += max(0.0, span["end"] - max(span["start"], reach))
        reach = max(reach, span["end"])
    return len(got), sum(s["cpu_seconds"] for s in got), wall


def ingest_commit_task(kind: str, plan: dict[str, Any] | None, summaries: Any,
                       tr: TaskRun, max_groups: int) -> list[dict[str, Any]]:
    """Commit what the extract tasks staged of the oldest pending dump date; returns the
    next dump date's files in groups (the newer extract tasks map over them: they continue
    from the watermarks just committed). The stage's result goes to XCom as ``result``."""
    result = _step(f"ingest_{kind}", tr, step="commit", plan=plan,
                   summaries=list(summaries or []), newer=max_groups)
    tr.context["ti"].xcom_push(key="result", value=result.to_dict())
    return (result.detail or {}).get("next", [])


def ingest_commit_newer_task(kind: str, plan: dict[str, Any] | None, summaries: Any,
                             tr: TaskRun) -> dict[str, Any]:
    """Commit the newer dump date's staged files (a third dump date or later, rare, is
    extracted here), then judge the rejects (the DAG skips this task when there was no
    newer dump date: the first commit judged them)."""
    result = _step(f"ingest_{kind}", tr, step="commit", plan=plan,
                   summaries=list(summaries or []), newer=None).to_dict()
    tr.context["ti"].xcom_push(key="result", value=result)
    return result


def stability_task(tr: TaskRun, asset: Asset) -> dict[str, Any]:
    """The ingest DAG's last step: the stability stage, then the timelines Asset's event
    (the dump date and the files each wiki's commits committed)."""
    ti = tr.context["ti"]
    stages, cpu, wall = run_cores(ti.xcom_pull(
        task_ids=[f"{kind}.{step}" for kind in ("wikidata", "wikipedia")
                  for step in INGEST_STEPS], key=STAGE_SPAN) or [])
    if wall:
        log.info("ingest run: %d stage(s) of its tasks ran for %.1fs in all, %.1f CPU-s: "
                 "%.2f cores", stages, wall, cpu, cpu / wall)
    result = run_stage_task("stability", tr)
    files = {kind: sum(((ti.xcom_pull(task_ids=f"{kind}.{step}", key="result") or {})
                        .get("metrics") or {}).get("files", 0) for step in INGEST_COMMITS)
             for kind in ("wikidata", "wikipedia")}
    tr.context["outlet_events"][asset].extra = {
        "dump_date": tr.run.dump_date, "files": files,
        "stability": result.get("note") or "rebuilt"}
    return result


def incr_day(context: Mapping[str, Any]) -> str:
    """The day an emerge_incr run ingests: the day before its logical date (a run at
    midnight reads the adds/changes dump of the day that just ended)."""
    from datetime import timedelta

    return (context["logical_date"] - timedelta(days=1)).strftime("%Y%m%d")


def incr_task(tr: TaskRun, asset: Asset) -> dict[str, Any]:
    """The emerge_incr DAG's one task: the day's increments of both wikis into the timelines,
    then the stable statements (``emerge_lib.pipeline.incr``); a day not published yet
    is retryable (the task's retries wait for it)."""
    from emerge_lib.pipeline.incr import ingest_increments

    day = incr_day(tr.context)
    allow_children()
    with verdicts():
        results = ingest_increments(tr.cfg, day, day)
    tr.context["outlet_events"][asset].extra = {"increment": day}
    return {"day": day, "stages": [r.to_dict() for r in results]}


def announce_dump_task(tr: TaskRun, asset: Asset) -> dict[str, Any]:
    """The dumps DAG's last step: the dumps Asset's event with the dump date, which
    starts an emerge_ingest run of it."""
    tr.context["outlet_events"][asset].extra = {"dump_date": tr.run.dump_date}
    return {"dump_date": tr.run.dump_date}


def verdict_words(verdict: Mapping[str, Any]) -> str:
    """The gate's verdict of a release (its manifest's ``validation``) in a few words."""
    if not verdict:
        return "not recorded"
    warnings = verdict.get("warnings") or []
    if verdict.get("success"):
        return "passed" + (f" with {len(warnings)} warning(s)" if warnings else "")
    return f"failed: {verdict.get('reason') or 'a suite failed'}"


def release_task(tr: TaskRun, asset: Asset) -> dict[str, Any]:
    """The release stage, one line saying what it built (folder, version, files, the
    gate's verdict), the same returned, and the release Asset's event: one per built
    release, published or not (emerge_evaluate follows it)."""
    result = _step("release", tr)
    summary = result.detail
    built = {"snapshot": tr.run.snapshot, "release_dir": str(summary.out_dir),
             "version": summary.manifest.get("version"), "files": len(summary.files),
             "validation": verdict_words(summary.validation)}
    log.info("release %s: version %s, %d files, validation %s", built["release_dir"],
             built["version"], built["files"], built["validation"])
    tr.context["outlet_events"][asset].extra = built
    return {**built, "rows": result.rows, "seconds": round(result.seconds, 1)}


def publish_task(tr: TaskRun, asset: Asset) -> dict[str, Any]:
    """The publish stage (only when ``params.publish``), then the published Asset's event:
    the snapshot, the local folder, the version and where it went."""
    result = _step("publish", tr)
    report = result.detail
    published = {"snapshot": tr.run.snapshot, "release_dir": str(tr.release_dir),
                  "version": report.version, "uri": report.target,
                  "manifest": f"{report.target.rstrip('/')}/manifest.json",
                  "uploaded": report.uploaded_files, "files": report.files}
    log.info("published %s to %s: %d of %d files uploaded%s", report.version, report.target,
             report.uploaded_files, report.files,
             " (already published)" if report.already_published else "")
    tr.context["outlet_events"][asset].extra = published
    return published


def release_location(extra: Mapping[str, Any]) -> Path:
    """The local release folder an Asset event names."""
    folder = extra.get("release_dir")
    if not folder or not Path(folder).is_dir():
        raise AirflowFailException(f"the release folder {folder!r} of the event "
                                   f"{dict(extra)} is not on this worker")
    return Path(folder)


def evaluate_task(context: Mapping[str, Any], asset: Asset) -> list[dict[str, Any]]:
    """Score every release this run stands for: each triggering event of ``asset`` (events
    that arrive between two runs are merged into one run), or, in a manual run,
    ``params.releases`` ([{snapshot, release_dir, version}]), each through the evaluate
    stage. Returns one summary each."""
    from emerge_lib.airflow.hooks import connection_overrides
    from emerge_lib.core.config import load_config
    from emerge_lib.pipeline.context import open_context
    from emerge_lib.pipeline.runs import CONFIG_ENV

    params = context.get("params") or {}
    events = [dict(e.extra or {}) for e in
              (context.get("triggering_asset_events") or {}).get(asset, [])]
    events += [dict(r) for r in params.get("releases") or []]
    if not events:
        skipped("no release to evaluate (no event, no params.releases)")
    out = []
    with verdicts():
        cfg = load_config(params.get("config") or os.environ.get(CONFIG_ENV) or None,
                          overrides=connection_overrides())
        for extra in events:
            with open_context(cfg, engine=False, release_dir=release_location(extra)) as ctx:
                result = _through_the_door(ctx, "evaluate", None, None,
                                           release_snapshot=extra.get("snapshot"),
                                           version=extra.get("version"))
            out.append(result.detail)
    return out
