"""emerge_incr: each day's adds/changes dumps of both wikis into the timelines, one run a day.

Thin wiring over ``emerge_lib.pipeline.incr`` (what ``emerge ingest --incr DAY`` runs):
the run at a day's midnight (UTC) reads the increment of the day that just ended from
the mirror's ``other/incr``, verified against its md5sums, continues each page from the
warehouse's state, then rebuilds the stable statements, and emits the timelines Asset.
Each day is one run and one commit: a day not published yet fails retryably and is
retried; a day already ingested reads nothing; a missed day is caught up (``catchup``),
in order (one active run: it is a writer of the timelines, as emerge_ingest is). Days
before the warehouse's newest full dump are in that dump: their runs read nothing. The
first day is ``EMERGE_INCR_START`` (YYYY-MM-DD, read when the file is parsed; default
2026-01-01): set it to the date of the full dump the warehouse starts from, since every
day after it is caught up. See docs/operations.md.
"""

from __future__ import annotations

import os
from datetime import timedelta

import pendulum
from airflow.sdk import CronTriggerTimetable, dag, get_current_context, task

from emerge_lib.airflow.assets import TIMELINES
from emerge_lib.airflow.runtime import incr_task, task_run


@dag(
    dag_id="emerge_incr",
    schedule=CronTriggerTimetable("0 0 * * *", timezone="UTC"),
    start_date=pendulum.parse(os.environ.get("EMERGE_INCR_START") or "2026-01-01", tz="UTC"),
    catchup=True,
    max_active_runs=1,  # days in order, one writer of the timelines
    default_args={"retries": 12, "retry_delay": timedelta(hours=1)},
    tags=["emerge"],
    doc_md=__doc__,
)
def emerge_incr() -> None:
    @task(task_id="ingest_increment", outlets=[TIMELINES], execution_timeout=timedelta(hours=6))
    def ingest_increment() -> dict:
        return incr_task(task_run(get_current_context(), snapshot=False), TIMELINES)

    ingest_increment()


emerge_incr()
