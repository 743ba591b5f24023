"""emerge_dumps: each quarter's history dump, waited for until it is done, then announced.

Thin wiring. Wikimedia starts the history dumps on the 1st of each quarter's last month
(``0 0 1 3,6,9,12 *``, the run's logical date is the dump date); writing one takes one to
three weeks. The wait is deferrable (the triggerer polls the mirror's dumpstatus.json
hourly; no worker slot is held) and it waits here, not in emerge_ingest: a waiting
scheduled run never holds the ingest DAG's one active run, so manual ingests go on
meanwhile. When both wikis' dumps are done, the dumps Asset's event (``dump_date``)
starts an emerge_ingest run of that dump. See docs/operations.md.
"""

from __future__ import annotations

from datetime import timedelta

import pendulum
from airflow.sdk import CronTriggerTimetable, dag, get_current_context, task

from emerge_lib.airflow.assets import DUMPS
from emerge_lib.airflow.runtime import announce_dump_task, task_run
from emerge_lib.airflow.waits import WaitForInputs


@dag(
    dag_id="emerge_dumps",
    schedule=CronTriggerTimetable("0 0 1 3,6,9,12 *", timezone="UTC"),
    start_date=pendulum.datetime(2019, 1, 1, tz="UTC"),
    catchup=False,
    tags=["emerge"],
    doc_md=__doc__,
)
def emerge_dumps() -> None:
    wait = WaitForInputs(task_id="wait_for_dump", what="dump", poll_s=3600,
                         wait_timeout=timedelta(days=28), retries=0)

    @task(task_id="announce", outlets=[DUMPS])
    def announce() -> dict:
        return announce_dump_task(task_run(get_current_context(), snapshot=False), DUMPS)

    wait >> announce()


emerge_dumps()
