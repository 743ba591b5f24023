"""emerge_snapshot: one run builds one snapshot t and releases it.

Thin wiring: every task calls the stage registry (``emerge_lib.pipeline.runner.run_stage``)
through ``emerge_lib.airflow.runtime``; the per-snapshot tasks are the registry's, in its
order, so a stage added there appears here. See docs/operations.md.

- Schedule: quarterly, ``CronTriggerTimetable("0 0 1 1,4,7,10 *", timezone="UTC")``: the
  run of a quarter has logical date = the quarter start = t, and waits until the ingest
  DAG has brought the warehouse past t's last window (checked every minute). Backfill and
  manual runs whose warehouse has not caught up ingest the earliest listed dump that
  covers them themselves, and fail at once when none is listed
  (``emerge_lib.airflow.waits``). Up to ``max_active_runs=4`` runs at once: runs of
  different snapshots write their own partitions, so the scheduled run waiting for its
  dump never blocks a manual run. Backfills of past quarters:
  ``airflow backfill create --dag-id emerge_snapshot --from-date 2019-01-01
  --to-date 2025-12-31 --max-active-runs 1`` (a backfill ignores the DAG's
  max_active_runs and defaults to 10), or Backfill in the UI.
- Manual runs take ``params`` (a custom snapshot, its windows, its own dump files). The
  snapshot comes from ``params.snapshot``, else the logical date (the trigger form fills
  one in), never from ``{{ ds }}``.
- Curation is two tasks side by side, one per model: ``curate_additions`` (the 8B-class
  additions model) and ``curate_deprecations`` (the 405B-class deprecations model), each
  in its model's pool and Celery queue (``emerge_llm_additions``,
  ``emerge_llm_deprecations``: one slot per server, ``curation.<route>.workers``), so a
  run waiting for the deprecations model never holds back another run's additions.
- The final judge (after ``select``: every operation of every kept line, the gold) is two
  tasks the same way, ``final_judge_additions`` and ``final_judge_deprecations``, each in
  its route's pool: the one of the configured ``curation.final_judge`` (the deprecations
  model by default, the authors' 405B) asks, the other has nothing to ask.
- validate, release and publish are ``ReleaseStep`` tasks, which plugins/emerge.py links to
  the validation results, the dataset card and the published manifest. The release task
  emits the release Asset (one event per built release: emerge_evaluate follows it), the
  publish task (only with ``params.publish``) the published one.
- Retries (exponential backoff) only for retryable emerge errors.
"""

from __future__ import annotations

from datetime import timedelta

import pendulum
from airflow.sdk import CronTriggerTimetable, dag, get_current_context, task

from emerge_lib.airflow.assets import PUBLISHED, RELEASE, TIMELINES
from emerge_lib.airflow.operators import RELEASE_STEPS, ReleaseStep
from emerge_lib.airflow.params import dag_params
from emerge_lib.airflow.pools import LLM_POOLS
from emerge_lib.airflow.runtime import llm_task, run_stage_task, task_run
from emerge_lib.airflow.waits import SNAPSHOT_WAIT, WaitForInputs
from emerge_lib.core.config import CALL_TIMEOUT_S
from emerge_lib.pipeline.registry import STAGES

QUARTERLY = "0 0 1 1,4,7,10 *"
#: an engine stage's task may make many calls, each bounded by engine.call_timeout_s (a
#: call that gets no answer fails its stage in one line, retryable): twice that bounds one
ENGINE_TASK = timedelta(seconds=2 * CALL_TIMEOUT_S)
TIMEOUTS = {"ingest": timedelta(days=3), "global": ENGINE_TASK, "snapshot": ENGINE_TASK,
            "release": timedelta(hours=6)}
TIMEOUTS_BY_STAGE = {"curate": timedelta(days=2), "final_judge": timedelta(days=2)}
#: the stages that ask LLMs: a task per route, each in its model's pool
LLM_STAGES = ("curate", "final_judge")

PARAMS = dag_params("snapshot")
#: the registry's stages this DAG runs as tasks, in order (evaluate is the emerge_evaluate
#: DAG's, scheduled on the release Asset the release task emits)
STEPS = [name for name, st in STAGES.items() if st.in_build]
#: the Asset each release step emits: every built release, every published one
OUTLETS = {"release": [RELEASE], "publish": [PUBLISHED]}


def _timeout(name: str) -> timedelta:
    return TIMEOUTS_BY_STAGE.get(name, TIMEOUTS.get(STAGES[name].scope, timedelta(hours=12)))


def _stage_task(name: str):
    """The stage's task; an LLM stage's two tasks (one per model, side by side) as a list."""
    st = STAGES[name]
    if name in LLM_STAGES:
        return [_llm_task(name, judge) for judge in LLM_POOLS]
    if name in RELEASE_STEPS:  # the plugin's links attach to these (plugins/emerge.py)
        return ReleaseStep(task_id=name, emerge_stage=name, outlets=OUTLETS.get(name, []),
                           execution_timeout=_timeout(name), trigger_rule="none_failed",
                           doc_md=st.summary)

    @task(task_id=name, execution_timeout=_timeout(name), trigger_rule="none_failed",
          doc_md=st.summary)
    def run() -> dict:
        return run_stage_task(name, task_run(get_current_context()))

    return run()


def _llm_task(name: str, judge: str):
    @task(task_id=f"{name}_{judge}", pool=LLM_POOLS[judge], queue=LLM_POOLS[judge],
          execution_timeout=_timeout(name), trigger_rule="none_failed",
          doc_md=f"{STAGES[name].summary}: the requests to the {judge} model")
    def run() -> dict:
        return llm_task(name, judge, task_run(get_current_context()))

    return run()


@dag(
    dag_id="emerge_snapshot",
    schedule=CronTriggerTimetable(QUARTERLY, timezone="UTC"),
    start_date=pendulum.datetime(2019, 1, 1, tz="UTC"),
    catchup=False,
    max_active_runs=4,
    params=PARAMS,
    default_args={"retries": 3, "retry_delay": timedelta(minutes=2),
                  "retry_exponential_backoff": 2.0, "max_retry_delay": timedelta(hours=1)},
    dagrun_timeout=timedelta(days=120),
    tags=["emerge"],
    doc_md=__doc__,
)
def emerge_snapshot() -> None:
    wait = WaitForInputs(task_id=SNAPSHOT_WAIT, what="snapshot", poll_s=3600,
                         warehouse_poll_s=60, wait_timeout=timedelta(days=100), retries=0,
                         inlets=[TIMELINES])
    chain = [wait, *(_stage_task(name) for name in STEPS)]
    for upstream, downstream in zip(chain, chain[1:], strict=False):
        upstream >> downstream  # a list (an LLM stage's two tasks) on either side: each


emerge_snapshot()
