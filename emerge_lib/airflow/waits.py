"""``WaitForInputs``: a deferrable wait that frees its worker slot while it waits.

- ``what="dump"`` (the ingest DAG): the mirror's history dump of the run's ``dump_date``
  (params, else the logical date's day) is ``done`` for both wikis.
- ``what="snapshot"`` (the snapshot DAG): nothing to wait for when the run names its dump
  files, or names a ``dump_date`` whose dump is done on the mirror (the run ingests it),
  or when the warehouse holds dumps that reach the snapshot's last window. Otherwise:

  - a scheduled run (the newest quarter) waits for the warehouse, which the ingest DAG
    brings; the check is a read of a small table, so the trigger looks every
    ``warehouse_poll_s`` (60 s): the run goes on within a minute of the ingest's end;
  - a backfill or manual run ingests a dump itself: the earliest listed dump that reaches
    the snapshot (``covering_dump``: the configured dump dates, else the mirror's list),
    waiting for it while it is still being written; its date goes to the run's ingest
    tasks through XCom (key ``dump_date``). When no listed dump reaches the snapshot, the
    run fails at once, naming the dump it needs and what is listed.

A fast path checks once before deferring; the trigger (``InputsTrigger``) polls until
``timeout`` (a history dump takes one to three weeks). ``dag.test()`` runs the trigger
inline. A backfill run's trigger also asks Airflow's REST API every 10 s whether the
backfill was cancelled (Airflow's cancel fails only its queued runs) and then ends the
wait, failing the run with one line naming the backfill (``emerge_lib.airflow.backfills``).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta
from typing import Any

from airflow.sdk import BaseOperator
from airflow.sdk.exceptions import AirflowFailException

from emerge_lib.airflow.runtime import SNAPSHOT_WAIT, TaskRun, run_type, task_run, verdicts
from emerge_lib.airflow.triggers import InputsTrigger, pending

__all__ = ["SNAPSHOT_WAIT", "WaitForInputs"]


class WaitForInputs(BaseOperator):
    ui_color = "#fff3d6"

    def __init__(self, *, what: str, poll_s: float = 900.0, warehouse_poll_s: float = 60.0,
                 wait_timeout: timedelta = timedelta(days=21), **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if what not in ("dump", "snapshot"):
            raise ValueError(f"what must be dump or snapshot, not {what!r}")
        self.what, self.poll_s, self.wait_timeout = what, poll_s, wait_timeout
        self.warehouse_poll_s = warehouse_poll_s

    def _trigger_args(self, tr: TaskRun) -> dict[str, Any] | None:
        run, cfg = tr.run, tr.cfg
        if run.wikidata_files or run.wikipedia_files:
            self.log.info("the run names its dump files: nothing to wait for")
            return None
        if self.what == "dump" and not run.dump_date:
            self.log.info("no dump date: the configured dump dates are ingested as they are")
            return None
        overrides = cfg.model_dump(mode="json", exclude_none=True)
        # model_dump masks secrets: hand the S3 keys over as they are
        overrides["s3"] = {k: (v.get_secret_value() if hasattr(v, "get_secret_value") else v)
                           for k, v in dict(cfg.s3).items() if v is not None}
        args: dict[str, Any] = {"config": run.config_path(), "overrides": overrides}
        if run.dump_date:
            return {**args, "what": "dump", "dump_date": run.dump_date}
        return {**args, "what": "warehouse", "snapshot": run.snapshot}

    def execute(self, context: Mapping[str, Any]) -> str:
        tr = task_run(context, snapshot=self.what == "snapshot")
        args = self._trigger_args(tr)
        if args is None:
            return "files given"
        with verdicts():
            missing = pending(**args, cfg=tr.cfg)
        if missing is None:
            self.log.info("ready: %s", args.get("dump_date") or args.get("snapshot"))
            return "ready"
        if args["what"] == "warehouse" and run_type(context) != "scheduled":
            args = self._own_dump(tr, args, missing)
            with verdicts():
                missing = pending(**args, cfg=tr.cfg)
            if missing is None:
                self.log.info("ready: the run ingests the %s dump", args["dump_date"])
                return "ready"
        poll = self.warehouse_poll_s if args["what"] == "warehouse" else self.poll_s
        watch = self._backfill_watch(context)
        self.log.info("waiting for: %s (every %.0fs, up to %s)", missing, poll,
                      self.wait_timeout)
        self.defer(trigger=InputsTrigger(**args, poll_s=poll, watch=watch),
                   method_name="execute_complete", timeout=self.wait_timeout)
        return "deferred"  # not reached: defer raises

    def _backfill_watch(self, context: Mapping[str, Any]) -> dict[str, Any] | None:
        """A backfill run's backfill, for its trigger to watch: Airflow's cancel fails
        queued runs only, so the wait ends itself when its backfill is cancelled
        (``emerge_lib.airflow.backfills``). None for other runs, or when the REST API
        cannot say (logged: such a run is then marked failed by hand)."""
        if run_type(context) != "backfill":
            return None
        from emerge_lib.airflow.backfills import (
            API_CONN,
            CANCEL_POLL_S,
            AirflowApi,
            ApiUnavailable,
            cancel_reason,
        )

        dag_run = context["dag_run"]
        try:
            backfill = AirflowApi.configured().backfill_of(dag_run.dag_id,
                                                           dag_run.logical_date)
        except ApiUnavailable as exc:
            self.log.warning("cannot watch this run's backfill for a cancel (%s); set the "
                             "%s connection (docs/operations.md), or mark the run failed "
                             "by hand after a cancel", exc, API_CONN)
            return None
        if backfill is None:
            self.log.warning("no backfill of %s holds %s: not watched for a cancel",
                             dag_run.dag_id, dag_run.logical_date)
            return None
        reason = cancel_reason(backfill)
        if reason:
            raise AirflowFailException(f"stopped waiting: {reason}")
        self.log.info("a run of backfill %s: a cancel of it ends this wait (asked every "
                      "%.0fs)", backfill["id"], CANCEL_POLL_S)
        return {"backfill_id": backfill["id"], "every_s": CANCEL_POLL_S}

    def _own_dump(self, tr: TaskRun, args: dict[str, Any], missing: str) -> dict[str, Any]:
        """A backfill or manual run whose warehouse has not caught up: the dump it ingests
        itself (handed to its ingest tasks), or a failure naming the dump it needs."""
        from emerge_lib.pipeline.waits import covering_dump

        with verdicts():
            date, looked = covering_dump(tr.cfg, args["snapshot"])
        if date is None:
            raise AirflowFailException(f"no dump can cover this run: {looked} (the warehouse: "
                                       f"{missing})")
        tr.context["ti"].xcom_push(key="dump_date", value=date)
        self.log.info("the warehouse has not caught up (%s): this run ingests the %s dump",
                      missing, date)
        return {**args, "what": "dump", "dump_date": date}

    def execute_complete(self, context: Mapping[str, Any], event: dict[str, Any] | None = None) -> str:
        if not event or event.get("status") != "ready":
            raise AirflowFailException(f"stopped waiting: {(event or {}).get('reason')}")
        if self.what == "snapshot" and event.get("dump_date"):
            context["ti"].xcom_push(key="dump_date", value=event["dump_date"])
        return "ready"
