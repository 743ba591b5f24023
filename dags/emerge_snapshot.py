"""emerge_snapshot: one run builds one snapshot t and releases it.

Thin wiring: every task calls the stage registry (``emerge_lib.pipeline.run_stage``)
through ``emerge_airflow.runtime``; the per-snapshot tasks are the registry's, in its
order, so a stage added there appears here. See docs/operations.md.

- Schedule: quarterly, ``CronTriggerTimetable("0 0 1 1,4,7,10 *", timezone="UTC")``: the
  run of a quarter has logical date = the quarter start = t, and waits until the ingest
  DAG has brought the warehouse past t's last window. Backfills of past quarters:
  ``airflow backfill create --dag-id emerge_snapshot --from-date 2019-01-01
  --to-date 2025-12-31 --max-active-runs 1`` (a backfill ignores the DAG's
  max_active_runs and defaults to 10), or Backfill in the UI.
- Manual runs take ``params`` (a custom snapshot, its windows, its own dump files).
  Manual and Asset-triggered runs have no logical date: the snapshot comes from
  ``params.snapshot`` or the Asset event, never from ``{{ ds }}``.
- Retries (exponential backoff) only for retryable emerge errors; curate runs in the
  ``emerge_llm`` pool, sized to the GPU workers; publish only with ``params.publish``,
  emitting the release Asset that schedules emerge_evaluate.
"""

from __future__ import annotations

from datetime import timedelta

import pendulum
from airflow.sdk import CronTriggerTimetable, Param, dag, get_current_context, task
from emerge_airflow.assets import RELEASE, TIMELINES
from emerge_airflow.runtime import publish_task, run_stage_task
from emerge_airflow.waits import WaitForInputs

from emerge_lib.pipeline import STAGES

QUARTERLY = "0 0 1 1,4,7,10 *"
LLM_POOL = "emerge_llm"  # created by `make airflow` and the deployment, sized to the GPU workers
POOLS = {"curate": LLM_POOL}
TIMEOUTS = {"ingest": timedelta(days=3), "global": timedelta(hours=12),
            "snapshot": timedelta(hours=12), "release": timedelta(hours=6)}
TIMEOUTS_BY_STAGE = {"curate": timedelta(days=2)}

PARAMS = {
    "snapshot": Param(None, type=["null", "string"],
                      description="snapshot t, ISO 8601 (2024-04-01T00:00:00Z); empty: the "
                                  "logical date of a scheduled or backfill run"),
    "weeks": Param(None, type=["null", "integer"], minimum=1, maximum=52,
                   description="windows per snapshot; empty: the configuration's (5)"),
    "window_days": Param(None, type=["null", "number"], exclusiveMinimum=0, maximum=366,
                         description="window length in days; empty: the configuration's (7)"),
    "wikidata_files": Param([], type="array", items={"type": "string"},
                            description="Wikidata history files (paths or URLs); empty: "
                                        "what the warehouse holds (the ingest DAG's)"),
    "wikipedia_files": Param([], type="array", items={"type": "string"},
                             description="English Wikipedia history files (paths or URLs); "
                                         "empty: what the warehouse holds"),
    "mirror": Param(None, type=["null", "string"], pattern=r"^(https?|file)://",
                    description="dump mirror; empty: the configuration's"),
    "dump_date": Param(None, type=["null", "string"], pattern=r"^\d{8}$",
                       description="ingest this dump date (YYYYMMDD) of the mirror first, "
                                   "waiting until it is done"),
    "config": Param(None, type=["null", "string"],
                    description="YAML configuration file; empty: $EMERGE_CONFIG, else defaults"),
    "curate": Param(None, type=["null", "boolean"],
                    description="LLM curation on the GPU workers; empty: the configuration's"),
    "publish": Param(False, type="boolean", description="upload the release to S3"),
    "release_to": Param(None, type=["null", "string"], pattern=r"^s3://",
                        description="s3://bucket/prefix; empty: the configuration's publish.to"),
    "release_dir": Param(None, type=["null", "string"],
                         description="local release folder; empty: "
                                     "$EMERGE_RELEASE_ROOT/snapshot_YYYY-MM-DD"),
}


def _stage_task(name: str):
    st = STAGES[name]

    @task(task_id=name, pool=POOLS.get(name, "default_pool"),
          execution_timeout=TIMEOUTS_BY_STAGE.get(name, TIMEOUTS.get(st.scope, timedelta(hours=12))),
          trigger_rule="none_failed", doc_md=st.summary)
    def run() -> dict:
        return run_stage_task(name, get_current_context())

    return run()


@dag(
    dag_id="emerge_snapshot",
    schedule=CronTriggerTimetable(QUARTERLY, timezone="UTC"),
    start_date=pendulum.datetime(2019, 1, 1, tz="UTC"),
    catchup=False,
    max_active_runs=1,
    params=PARAMS,
    default_args={"retries": 3, "retry_delay": timedelta(minutes=2),
                  "retry_exponential_backoff": 2.0, "max_retry_delay": timedelta(hours=1)},
    dagrun_timeout=timedelta(days=120),
    tags=["emerge"],
    doc_md=__doc__,
)
def emerge_snapshot() -> None:
    wait = WaitForInputs(task_id="wait_for_inputs", what="snapshot", poll_s=3600,
                         wait_timeout=timedelta(days=100), retries=0, inlets=[TIMELINES])
    steps = [_stage_task(name) for name in STAGES if name != "publish"]

    @task(task_id="publish", outlets=[RELEASE], trigger_rule="none_failed",
          execution_timeout=timedelta(hours=6))
    def publish() -> dict:
        return publish_task(get_current_context(), RELEASE)

    chain = [wait, *steps, publish()]
    for upstream, downstream in zip(chain, chain[1:], strict=False):
        upstream >> downstream


emerge_snapshot()
