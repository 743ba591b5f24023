"""Spawned worker processes, for any room's process pool (the ingest's extraction, the
release's files): spawn, not fork, because the parent runs an embedded engine's threads
or holds a Spark Connect (gRPC) session, which fork would copy half-alive.

:class:`SpawnWithoutMain` is spawn's context minus the parent's ``__main__``,
:func:`exit_with_parent` (a pool initializer's first step) ends a worker whose parent
died, and :func:`spawned_pool` is a process pool of both.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import popen_spawn_posix, spawn
from multiprocessing.context import SpawnContext, SpawnProcess
from multiprocessing.process import BaseProcess

PARENT_POLL_S = 0.5


def exit_with_parent(parent: int) -> None:
    """End this worker within ``PARENT_POLL_S`` of its parent's death (a kill -9 included:
    nothing else tells a pool worker, whose queues it holds both ends of). Polling the
    parent pid, not PR_SET_PDEATHSIG, which fires when the *thread* that spawned the
    worker ends, and the pool spawns from whichever thread submits first."""
    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(PARENT_POLL_S)
        os._exit(70)

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()


_LAUNCH = threading.Lock()


class _PopenWithoutMain(popen_spawn_posix.Popen):
    """Spawn's launch, minus the parent's ``__main__``: a spawned child normally re-runs
    the parent's main script as ``__mp_main__``, and when that is Airflow's ``airflow``
    entry point the worker configures Airflow again, and dies on the task supervisor's
    deliberately blocked database URL (BrokenProcessPool in every pooled ingest task).
    The workers are functions of emerge_lib and need nothing from ``__main__``."""

    def _launch(self, process_obj: BaseProcess) -> None:
        real = spawn.get_preparation_data
        # spawn's own launch (typeshed does not declare the private method)
        launch: Callable[[popen_spawn_posix.Popen, BaseProcess], None] = vars(
            popen_spawn_posix.Popen)["_launch"]

        def without_main(name: str) -> dict[str, object]:
            data: dict[str, object] = real(name)
            data.pop("init_main_from_path", None)
            data.pop("init_main_from_name", None)
            return data

        with _LAUNCH:
            spawn.get_preparation_data = without_main
            try:
                launch(self, process_obj)
            finally:
                spawn.get_preparation_data = real


class _ProcessWithoutMain(SpawnProcess):
    @staticmethod
    def _Popen(process_obj: BaseProcess) -> _PopenWithoutMain:  # noqa: N802 (multiprocessing's name)
        return _PopenWithoutMain(process_obj)


class SpawnWithoutMain(SpawnContext):
    """The spawn context whose processes do not re-run the parent's ``__main__``."""

    Process = _ProcessWithoutMain


def _init_worker(parent: int, level: int) -> None:
    exit_with_parent(parent)
    logging.getLogger().setLevel(level)


def spawned_pool(workers: int) -> ProcessPoolExecutor:
    """A pool of ``workers`` spawned processes (without the parent's ``__main__``) that end
    with their parent and log at its level."""
    return ProcessPoolExecutor(max_workers=workers, mp_context=SpawnWithoutMain(),
                               initializer=_init_worker,
                               initargs=(os.getpid(), logging.getLogger().getEffectiveLevel()))
