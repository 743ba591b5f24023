"""Worker functions for the pool tests: importable from a spawned child (tests/kits is on
its sys.path), picklable, and taking the ``threads`` keyword every extraction worker takes."""

from __future__ import annotations

import os
import time


def whoami(n: int, threads: int | None = None) -> tuple[int, int]:
    """``(n, this process's pid)``, after a pause, so that every worker of the pool gets a job."""
    time.sleep(0.3)
    return n, os.getpid()


def die(n: int, threads: int | None = None) -> None:
    """A worker killed as the out-of-memory killer would (exit by signal 9)."""
    os.kill(os.getpid(), 9)


def sleep_long(n: int, threads: int | None = None) -> None:
    time.sleep(600)
