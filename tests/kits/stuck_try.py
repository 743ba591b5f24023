"""A try of one emerge snapshot task that Airflow has given up on (its worker lost its
heartbeat) and that goes on running: the task's own body (``run_stage_task`` of the
resolved ``task_run``), with the run's params, its logical date and the dump its wait
chose, under the deployment's configuration and connections, but outside Airflow's
books: it reports no state, as a worker cut off from the API server cannot. Airflow 3
gives a task instance one owner (only a queued try may start, only the running one may
finish), so ``airflow tasks test`` on the same run races the scheduler's retry for the
task instance instead of running beside it.

Usage: ``python stuck_try.py STAGE RUN.json`` where RUN.json holds ``params`` (the
run's, defaults included) and ``logical_date`` (ISO)."""

from __future__ import annotations

import json
import logging
import sys
from datetime import datetime
from pathlib import Path

from emerge_lib.airflow.runtime import run_stage_task, task_run


def main(stage: str, run_file: str) -> None:
    logging.basicConfig(level=logging.INFO, stream=sys.stdout,
                        format="%(asctime)s %(name)s %(message)s")
    run = json.loads(Path(run_file).read_text())
    context = {"params": run["params"],
               "logical_date": datetime.fromisoformat(run["logical_date"])}
    result = run_stage_task(stage, task_run(context))
    print(json.dumps({"stuck_try": stage, "rows": result.get("rows")}))


if __name__ == "__main__":
    main(*sys.argv[1:3])
