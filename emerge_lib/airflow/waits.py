"""``WaitForInputs``: a deferrable wait that frees its worker slot while it waits.

- ``what="dump"`` (the ingest DAG): the mirror's history dump of the run's ``dump_date``
  (params, else the logical date's day) is ``done`` for both wikis.
- ``what="snapshot"`` (the snapshot DAG): nothing to wait for when the run names its dump
  files, or names a ``dump_date`` whose dump is done on the mirror (the run ingests it);
  otherwise the warehouse must hold dumps that reach the snapshot's last window, which
  the ingest DAG provides.

A fast path checks once before deferring; the trigger (``InputsTrigger``) polls every
``poll_s`` seconds until ``timeout`` (default three weeks: a history dump takes one to
three). ``dag.test()`` runs the trigger inline.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from airflow.sdk import BaseOperator
from airflow.sdk.exceptions import AirflowFailException

from emerge_lib.airflow.runtime import snapshot_run, verdicts
from emerge_lib.airflow.triggers import InputsTrigger, pending


class WaitForInputs(BaseOperator):
    ui_color = "#fff3d6"

    def __init__(self, *, what: str, poll_s: float = 900.0,
                 wait_timeout: timedelta = timedelta(days=21), **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if what not in ("dump", "snapshot"):
            raise ValueError(f"what must be dump or snapshot, not {what!r}")
        self.what, self.poll_s, self.wait_timeout = what, poll_s, wait_timeout

    def _trigger_args(self, context: Any) -> dict[str, Any] | None:
        run = snapshot_run(context, snapshot=self.what == "snapshot")
        if run.wikidata_files or run.wikipedia_files:
            self.log.info("the run names its dump files: nothing to wait for")
            return None
        if self.what == "dump" and not run.dump_date:
            self.log.info("no dump date: the configured dump dates are ingested as they are")
            return None
        with verdicts():
            cfg = run.settings()
        overrides = cfg.model_dump(mode="json", exclude_none=True)
        # model_dump masks secrets: hand the S3 keys over as they are
        overrides["s3"] = {k: (v.get_secret_value() if hasattr(v, "get_secret_value") else v)
                           for k, v in dict(cfg.s3).items() if v is not None}
        args: dict[str, Any] = {"config": run.config_path(), "overrides": overrides}
        if run.dump_date:
            return {**args, "what": "dump", "dump_date": run.dump_date}
        return {**args, "what": "warehouse", "snapshot": run.snapshot}

    def execute(self, context: Any) -> str:
        args = self._trigger_args(context)
        if args is None:
            return "files given"
        with verdicts():
            missing = pending(**args)
        if missing is None:
            self.log.info("ready: %s", args.get("dump_date") or args.get("snapshot"))
            return "ready"
        self.log.info("waiting for: %s (every %.0fs, up to %s)", missing, self.poll_s,
                      self.wait_timeout)
        self.defer(trigger=InputsTrigger(**args, poll_s=self.poll_s),
                   method_name="execute_complete", timeout=self.wait_timeout)
        return "deferred"  # not reached: defer raises

    def execute_complete(self, context: Any, event: dict[str, Any] | None = None) -> str:
        if not event or event.get("status") != "ready":
            raise AirflowFailException(f"stopped waiting: {(event or {}).get('reason')}")
        return "ready"
