"""What every emerge task does inside Airflow: resolve the run's snapshot, build its
configuration (file, environment, connections, params), open an engine session, call
``emerge_lib.pipeline.run_stage``, and turn emerge's errors into Airflow's verdict:
a retryable ``EmergeError`` is raised as is (the task's retries, with exponential backoff,
try again), any other failure becomes ``AirflowFailException`` (no retry: bad data or
configuration does not heal by waiting)."""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from airflow.sdk.exceptions import AirflowFailException, AirflowSkipException

log = logging.getLogger("emerge_airflow")


@contextmanager
def verdicts() -> Iterator[None]:
    """Retry only what emerge says is retryable."""
    from emerge_lib.errors import EmergeError

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


def resolve_snapshot(context: Mapping[str, Any]) -> str:
    """The snapshot t of this run: ``params.snapshot``; else the ``snapshot`` of a
    triggering Asset event; else the logical date of a scheduled or backfill run (the
    quarter start, with CronTriggerTimetable). Manual and Asset-triggered runs have no
    logical date, so ``{{ ds }}`` is never used."""
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


def snapshot_run(context: Mapping[str, Any], snapshot: bool = True):
    """The run's params as an ``emerge_lib.runs.SnapshotRun`` with the connections'
    overrides (``snapshot=False``: an ingest run)."""
    from emerge_airflow.hooks import connection_overrides
    from emerge_lib.runs import SnapshotRun

    params = dict(context.get("params") or {})
    logical = context.get("logical_date")
    if not snapshot and not params.get("dump_date") and logical is not None and not (
            params.get("wikidata_files") or params.get("wikipedia_files")):
        params["dump_date"] = logical.strftime("%Y%m%d")  # a scheduled ingest: its day's dump
    with verdicts():
        return SnapshotRun.from_params(params, resolve_snapshot(context) if snapshot else None,
                                       connection_overrides())


@contextmanager
def stage_context(run: Any, engine: bool = True) -> Iterator[Any]:
    """The StageContext of ``run``, with a Spark session when ``engine``."""
    from emerge_airflow.hooks import EmergeS3, EngineHook
    from emerge_lib.tables import Catalog

    cfg = run.settings()
    if not engine:
        yield run.context(cfg, Catalog.for_config(cfg), s3_client=EmergeS3().session())
        return
    with EngineHook().session(cfg) as spark:
        yield run.context(cfg, Catalog.for_config(cfg, spark), s3_client=EmergeS3().session())


def run_stage_task(name: str, context: Mapping[str, Any], snapshot: bool = True
                   ) -> dict[str, Any]:
    """Run registry stage ``name`` for this run; skipped like ``emerge build`` skips it
    (an ingest without inputs, a stage whose ``when`` is false). Returns the StageResult
    as plain data (XCom). ``snapshot=False``: a run of the ingest DAG."""
    from emerge_lib.pipeline import run_stage, stage

    run = snapshot_run(context, snapshot)
    with verdicts():
        st = stage(name)
        cfg = run.settings()
        if st.when is not None and not st.when(cfg):
            raise AirflowSkipException(f"{name} is off for this run (params or configuration)")
        if st.scope == "ingest" and not run.context(cfg, None).has_inputs(  # type: ignore[arg-type]
                name.removeprefix("ingest_")):
            raise AirflowSkipException(f"{name}: no files given and no dump dates configured")
        with stage_context(run) as ctx:
            result = run_stage(ctx, name, run.snapshot if st.scope == "snapshot" else None)
    return result.to_dict()


def ingest_plan_task(kind: str, context: Mapping[str, Any], max_groups: int
                     ) -> list[dict[str, Any]]:
    """The pending files of one wiki in groups (one mapped extract task each); the whole
    plan goes to XCom under the key ``plan`` for the commit."""
    from emerge_lib.pipeline import plan_ingest_groups

    run = snapshot_run(context, snapshot=False)
    with verdicts(), stage_context(run, engine=False) as ctx:
        planned = plan_ingest_groups(ctx, kind, max_groups)
    context["ti"].xcom_push(key="plan", value=planned["plan"])
    return planned["groups"]


def ingest_extract_task(group: dict[str, Any], context: Mapping[str, Any]
                        ) -> list[dict[str, Any]]:
    """Extract one group of files into the staging area (no engine session)."""
    from emerge_lib.pipeline import extract_ingest_group

    run = snapshot_run(context, snapshot=False)
    with verdicts(), stage_context(run, engine=False) as ctx:
        return extract_ingest_group(ctx, group)


def ingest_commit_task(plan: dict[str, Any] | None, summaries: Any,
                       context: Mapping[str, Any]) -> dict[str, Any]:
    """Commit what the extract tasks staged (and what must be extracted again here)."""
    from emerge_lib.pipeline import commit_ingest

    run = snapshot_run(context, snapshot=False)
    with verdicts(), stage_context(run) as ctx:
        return commit_ingest(ctx, plan, list(summaries or [])).to_dict()


def stability_task(context: Mapping[str, Any], asset: Any) -> dict[str, Any]:
    """The ingest DAG's last step: the stability stage, then the timelines Asset's event
    (the dump date and what was committed)."""
    result = run_stage_task("stability", context, snapshot=False)
    run = snapshot_run(context, snapshot=False)
    ti = context["ti"]
    committed = {kind: ti.xcom_pull(task_ids=f"{kind}.commit") or {}
                 for kind in ("wikidata", "wikipedia")}
    context["outlet_events"][asset].extra = {
        "dump_date": run.dump_date,
        "files": {k: (v.get("metrics") or {}).get("files", 0) for k, v in committed.items()},
        "stability": result.get("note") or "rebuilt"}
    return result


def publish_task(context: Mapping[str, Any], asset: Any) -> dict[str, Any]:
    """The publish stage (only when ``params.publish``), then the release Asset's event
    with the snapshot, the local folder, where it went and the manifest's version."""
    params = context.get("params") or {}
    if not params.get("publish"):
        raise AirflowSkipException("params.publish is false")
    result = run_stage_task("publish", context)
    run = snapshot_run(context)
    with verdicts():
        cfg = run.settings()
    folder = run.release_folder(cfg)
    manifest = folder / "manifest.json"
    version = json.loads(manifest.read_text())["version"] if manifest.is_file() else None
    target = params.get("release_to") or getattr(getattr(cfg, "publish", None), "to", None)
    context["outlet_events"][asset].extra = {
        "snapshot": run.snapshot, "release_dir": str(folder), "version": version,
        "uri": target}
    return result


def release_location(extra: Mapping[str, Any]) -> Path:
    """The local release folder an Asset event names."""
    folder = extra.get("release_dir")
    if not folder or not Path(folder).is_dir():
        raise AirflowFailException(f"the release folder {folder!r} of the event "
                                   f"{dict(extra)} is not on this worker")
    return Path(folder)


def evaluate_task(context: Mapping[str, Any], asset: Any) -> list[dict[str, Any]]:
    """Score every release this run stands for: each triggering event of ``asset`` (events
    that arrive between two runs are merged into one run), or, in a manual run,
    ``params.releases`` ([{snapshot, release_dir, version}]). Returns one summary each."""
    from emerge_lib.config import load_config
    from emerge_lib.evaluation.run import evaluate_release
    from emerge_lib.runs import CONFIG_ENV

    params = context.get("params") or {}
    events = [dict(e.extra or {}) for e in
              (context.get("triggering_asset_events") or {}).get(asset, [])]
    events += [dict(r) for r in params.get("releases") or []]
    if not events:
        raise AirflowSkipException("no release to evaluate (no event, no params.releases)")
    from emerge_airflow.hooks import connection_overrides

    out = []
    with verdicts():
        cfg = load_config(params.get("config") or os.environ.get(CONFIG_ENV) or None,
                          overrides=connection_overrides())
        for extra in events:
            result = evaluate_release(cfg, release_location(extra), extra.get("snapshot"),
                                      extra.get("version"))
            out.append({"snapshot": extra.get("snapshot"), "version": extra.get("version"),
                        "out": str(result.written[0].parent) if result.written else None,
                        "rows": result.rows})
            log.info("evaluated %s: %d result rows", extra.get("snapshot"), len(result.rows))
    return out
