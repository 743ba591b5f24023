"""Worker functions for the pool tests: importable from a spawned child (tests/kits is on
its sys.path), picklable, and taking the ``threads`` keyword every extraction worker takes
(the ``release_unit_*`` ones: a release unit's arguments, ``reads`` first)."""

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


def release_unit_fails(reads: object, out: object, *args: object) -> None:
    """A release unit failing as a full disk fails it: a ``ReleaseError``'s one line."""
    from emerge_lib.release.windows import ReleaseError

    raise ReleaseError("release: cannot write the splits: no space left on device")


def release_unit_dies(reads: object, *args: object) -> None:
    """A release unit killed as the out-of-memory killer would (exit by signal 9)."""
    os.kill(os.getpid(), 9)
