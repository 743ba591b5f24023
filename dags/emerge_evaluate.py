"""emerge_evaluate: every published release is scored with the configured predictions.

Scheduled on the release Asset that emerge_snapshot's publish task emits. Events that
arrive between two runs (a backfill publishing many quarters) are merged into one run,
so the task loops over every triggering event. The scores (summary.json, the paper's
tables as Markdown and CSV, per-instance scores) go to ``evaluation.out/<snapshot
date>/<release version>``: the ``emerge evaluate`` machinery, with the configuration's
``evaluation`` settings (predictions, metrics, embedding model). A manual run scores
``params.releases`` instead.
"""

from __future__ import annotations

from datetime import timedelta

import pendulum
from airflow.sdk import Param, dag, get_current_context, task

from emerge_lib.airflow.assets import RELEASE
from emerge_lib.airflow.runtime import evaluate_task


@dag(
    dag_id="emerge_evaluate",
    schedule=[RELEASE],
    start_date=pendulum.datetime(2019, 1, 1, tz="UTC"),
    catchup=False,
    max_active_runs=1,
    params={
        "config": Param(None, type=["null", "string"],
                        description="YAML configuration file; empty: $EMERGE_CONFIG"),
        "releases": Param([], type="array", items={"type": "object"},
                          description="manual runs: [{snapshot, release_dir, version}]"),
    },
    default_args={"retries": 2, "retry_delay": timedelta(minutes=5)},
    tags=["emerge"],
    doc_md=__doc__,
)
def emerge_evaluate() -> None:
    @task(task_id="evaluate", execution_timeout=timedelta(hours=12))
    def evaluate() -> list[dict]:
        return evaluate_task(get_current_context(), RELEASE)

    evaluate()


emerge_evaluate()
