"""The deferrable wait's trigger: polls emerge's own readiness checks (the dump mirror's
``dumpstatus.json``, or what the warehouse has ingested) in a thread, so a history dump
that takes one to three weeks costs no worker slot and never blocks the triggerer's event
loop (``HttpSensor(deferrable=True)`` with a response check silently does not defer)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from airflow.triggers.base import BaseTrigger, TaskFailedEvent, TriggerEvent

if TYPE_CHECKING:
    from emerge_lib.core.config import Config


def pending(what: str, config: str | None, overrides: dict[str, Any],
            snapshot: str | None = None, dump_date: str | None = None,
            cfg: Config | None = None) -> str | None:
    """None when ready, else what is still missing (blocking: run it in a thread).
    ``what``: ``dump`` (the mirror's dump of ``dump_date`` is done for both wikis) or
    ``warehouse`` (the warehouse holds dumps reaching ``snapshot``'s last window).
    ``cfg``: the configuration ``config`` and ``overrides`` give, when the caller (the
    wait's task) has it already; the trigger builds it from them."""
    from emerge_lib.catalog import Catalog
    from emerge_lib.core.config import load_config
    from emerge_lib.pipeline.waits import dump_pending, warehouse_pending

    if cfg is None:
        cfg = load_config(config, overrides=overrides)
    if what == "dump":
        assert dump_date is not None
        return dump_pending(cfg, dump_date)
    assert snapshot is not None
    return warehouse_pending(Catalog.for_config(cfg), cfg, snapshot)


class InputsTrigger(BaseTrigger):
    """Fires ``{"status": "ready"}`` once :func:`pending` says nothing is missing, or
    ``{"status": "failed", "reason": …}`` on an error that waiting cannot fix (a failed
    dump job, a bad configuration); a retryable error (the mirror unreachable) is logged
    and polled again. ``watch`` (a backfill run's: ``{"backfill_id", "every_s"}``): once
    that backfill is cancelled (``emerge_lib.airflow.backfills``; asked every
    ``every_s`` between the input checks) it logs one line naming the backfill and fails
    the task itself (``TaskFailedEvent``: no worker resumes it)."""

    def __init__(self, what: str, config: str | None, overrides: dict[str, Any],
                 snapshot: str | None = None, dump_date: str | None = None,
                 poll_s: float = 900.0, watch: dict[str, Any] | None = None) -> None:
        super().__init__()
        self.what, self.config, self.overrides = what, config, overrides
        self.snapshot, self.dump_date, self.poll_s = snapshot, dump_date, poll_s
        self.watch = watch
        self._api_trouble: str | None = None

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return ("emerge_lib.airflow.triggers.InputsTrigger",
                {"what": self.what, "config": self.config, "overrides": self.overrides,
                 "snapshot": self.snapshot, "dump_date": self.dump_date,
                 "poll_s": self.poll_s, "watch": self.watch})

    async def run(self) -> AsyncIterator[TriggerEvent]:
        from emerge_lib.core.errors import EmergeError

        clock = asyncio.get_running_loop().time
        next_check = clock()
        while True:
            if self.watch and (reason := await asyncio.to_thread(self._cancelled)):
                # the task fails here, in the triggerer: nothing to resume on a worker for
                self.log.error("stopped waiting: %s", reason)
                yield TaskFailedEvent()
                return
            if clock() >= next_check:
                try:
                    missing = await asyncio.to_thread(pending, self.what, self.config,
                                                      self.overrides, self.snapshot,
                                                      self.dump_date)
                except EmergeError as exc:
                    if not exc.retryable:
                        yield TriggerEvent({"status": "failed", "reason": str(exc)})
                        return
                    self.log.warning("will poll again: %s", exc)
                else:
                    if missing is None:
                        yield TriggerEvent({"status": "ready", "dump_date": self.dump_date})
                        return
                    self.log.info("waiting (next check in %.0fs): %s", self.poll_s, missing)
                next_check = clock() + self.poll_s
            pause = next_check - clock()
            if self.watch:
                pause = min(pause, float(self.watch["every_s"]))
            await asyncio.sleep(max(0.0, pause))

    def _cancelled(self) -> str | None:
        """Why the run's backfill no longer wants it (blocking: run it in a thread); an
        API that does not answer is logged when that changes, and asked again."""
        from emerge_lib.airflow.backfills import AirflowApi, ApiUnavailable

        assert self.watch is not None
        try:
            reason = AirflowApi.configured().cancelled(int(self.watch["backfill_id"]))
        except ApiUnavailable as exc:
            if str(exc) != self._api_trouble:
                self.log.warning("cannot see whether backfill %s was cancelled; asking "
                                 "again: %s", self.watch["backfill_id"], exc)
            self._api_trouble = str(exc)
            return None
        self._api_trouble = None
        return reason
