"""emerge_ingest: new dump files → the warehouse's timelines and stable statements.

Thin wiring over the ingest stages' steps (``emerge_lib.ingest.stage``, each run through
``emerge_lib.pipeline.runner.run_stage``):
wait for the dump → per wiki, side by side: plan → extract (mapped over groups
of the oldest pending dump date's files, any worker) → commit → extract_newer (mapped
over the next dump date's files) → commit_newer → stability, which emits the timelines
Asset. One run at a time: it is the writer of the timelines; snapshot runs read them side
by side.

- Schedule: the dumps Asset: a run starts when the emerge_dumps DAG has seen a quarter's
  history dump done on the mirror, and ingests that dump (the event's ``dump_date``), so
  no run of this DAG waits weeks for a dump and holds its one active run meanwhile. A
  manual run naming a ``dump_date`` still being written waits for it (deferrable).
- Extraction is mapped over groups of files, never more than ``max_tasks`` (Airflow's
  ``[core] max_map_length`` is 1024; a full history dump has hundreds of parts), each of
  at least ``dumps.extract_group_mb`` (256 MB compressed: a task's pool then has work for
  every core). A newer dump continues from the watermarks the older one left, so the
  next dump date's files (a first ingest of two dump dates) are grouped by the commit of
  the older one and extracted by ``extract_newer`` after it; ``commit_newer`` commits
  them (a third dump date or later, rare, it extracts itself) and judges the rejects. A
  quarterly run has one dump date: extract_newer has no groups and commit_newer is
  skipped.
- The two wikis run side by side: on one machine two tasks then share its cores (each
  task's stage line reports its share), while one wiki's engine-bound commit (about one
  core) leaves room for the other's extraction. Run one after the other, each extract
  line reported 1.75 cores but the run took longer (benchmarks/airflow_ingest.py,
  docs/operations.md); the stability task's run line reports the cores of the ingest as
  a whole.
- Manual runs: ``dump_date`` (empty: the configured dump dates), or the dump files
  themselves, and the snapshots whose Wikipedia ranges to keep (``snapshots``; empty: the configured ones plus the newest
  quarter the dump covers).
"""

from __future__ import annotations

from datetime import timedelta

import pendulum
from airflow.sdk import TaskGroup, dag, get_current_context, task

from emerge_lib.airflow.assets import DUMPS, TIMELINES
from emerge_lib.airflow.params import dag_params
from emerge_lib.airflow.runtime import (
    ingest_commit_newer_task,
    ingest_commit_task,
    ingest_extract_task,
    ingest_plan_task,
    stability_task,
    task_run,
)
from emerge_lib.airflow.waits import WaitForInputs

PARAMS = dag_params("ingest")


@dag(
    dag_id="emerge_ingest",
    schedule=[DUMPS],
    start_date=pendulum.datetime(2019, 1, 1, tz="UTC"),
    catchup=False,
    max_active_runs=1,  # the one writer of the timelines
    params=PARAMS,
    default_args={"retries": 3, "retry_delay": timedelta(minutes=2),
                  "retry_exponential_backoff": 2.0, "max_retry_delay": timedelta(hours=1)},
    tags=["emerge"],
    doc_md=__doc__,
)
def emerge_ingest() -> None:
    wait = WaitForInputs(task_id="wait_for_dump", what="dump", poll_s=3600,
                         wait_timeout=timedelta(days=28), retries=0)
    commits = []
    for kind in ("wikidata", "wikipedia"):
        with TaskGroup(kind):
            @task(task_id="plan", execution_timeout=timedelta(hours=6))
            def plan(kind: str = kind) -> list[dict]:
                tr = task_run(get_current_context(), snapshot=False)
                return ingest_plan_task(kind, tr, int(tr.context["params"]["max_tasks"]))

            @task(task_id="extract", execution_timeout=timedelta(days=2))
            def extract_group(group: dict, kind: str = kind) -> list[dict]:
                return ingest_extract_task(kind, group,
                                           task_run(get_current_context(), snapshot=False))

            @task(task_id="commit", trigger_rule="none_failed",
                  execution_timeout=timedelta(days=2))
            def commit_group(plan: dict | None, staged: list, kind: str = kind) -> list[dict]:
                tr = task_run(get_current_context(), snapshot=False)
                return ingest_commit_task(kind, plan, staged, tr,
                                          int(tr.context["params"]["max_tasks"]))

            # all_success: skipped, without starting, when extract_newer had no groups
            @task(task_id="commit_newer", execution_timeout=timedelta(days=2))
            def commit_newer(plan: dict | None, staged: list, kind: str = kind) -> dict:
                return ingest_commit_newer_task(kind, plan, staged,
                                                task_run(get_current_context(), snapshot=False))

            groups = plan()
            wait >> groups
            first = extract_group.expand(group=groups)
            newer = commit_group(groups["plan"], first)
            staged_newer = extract_group.override(task_id="extract_newer").expand(group=newer)
            commits.append(commit_newer(groups["plan"], staged_newer))

    @task(task_id="stability", outlets=[TIMELINES], trigger_rule="none_failed",
          execution_timeout=timedelta(hours=12))
    def stability() -> dict:
        return stability_task(task_run(get_current_context(), snapshot=False), TIMELINES)

    commits >> stability()


emerge_ingest()
