"""Atomic replacement, for the release writer: a file written beside its name and renamed
over it only on success (:func:`atomic_file`), and a whole release folder written beside
the old one and swapped into place (:func:`staging_of`, :func:`recover`,
:func:`swap_into_place`), under a lock on the folder (:func:`release_lock`).

The swap is one atomic exchange of the two folders where the kernel has ``renameat2``
(Linux), else two renames; a kill between those two leaves the old release under
``.NAME.old``, which :func:`recover` (called before every write) puts back. So no reader
ever sees a mixed release: a kill or a full disk at any point leaves the old release or
the new one.

One run writes a folder at a time: two builds with the same ``--out`` shared one staging
folder and no lock, and the first to finish swapped in a mix of both (files that did not
match its manifest). Each run now writes into a staging folder of its own and holds a lock
on the output (a file beside it, ``.NAME.lock``) from its recovery to its swap; a second
run waits for the first, then writes its own release whole. The lock dies with its
process (``flock``), so a killed run never blocks the next one.
"""

from __future__ import annotations

import ctypes
import errno
import logging
import os
import shutil
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

_RENAME_EXCHANGE, _AT_FDCWD = 2, -100

log = logging.getLogger(__name__)


@contextmanager
def release_lock(out: Path) -> Iterator[None]:
    """Hold the lock on the release folder ``out`` (waiting, with a line saying so, while
    another run holds it)."""
    import fcntl

    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out.with_name(f".{out.name}.lock"), "a+") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            fh.seek(0)
            holder = fh.read().strip() or "another process"
            log.warning("release %s: %s is writing it; waiting for it to finish", out, holder)
            fcntl.flock(fh, fcntl.LOCK_EX)
        fh.seek(0)
        fh.truncate()
        fh.write(f"emerge run pid {os.getpid()}\n")
        fh.flush()
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


@contextmanager
def atomic_file(path: Path) -> Iterator[Path]:
    """Yield a temporary sibling of ``path``; rename it over ``path`` only on success."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    try:
        yield tmp
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def _exchange(a: Path, b: Path) -> bool:
    """Swap two folders in one atomic step (Linux renameat2); False where unsupported."""
    try:
        renameat2 = ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError):
        return False
    if renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP):
        return False
    raise OSError(code, os.strerror(code), str(b))


def staging_of(out: Path) -> tuple[Path, Path]:
    """(a folder of this run's own that a new release of ``out`` is written into, where
    the old one waits during the fallback swap)."""
    run = f"{os.getpid()}-{uuid.uuid4().hex[:8]}"
    return out.with_name(f".{out.name}.writing-{run}"), out.with_name(f".{out.name}.old")


def recover(out: Path) -> None:
    """Undo what a kill between the two renames of the fallback swap left: the old
    release back under its name; half-written new ones thrown away (called under
    :func:`release_lock`, so no live run is writing them)."""
    _, old = staging_of(out)
    if old.is_dir() and not out.exists():
        os.rename(old, out)
    mine = f".{out.name}.writing"
    leftovers = [old, *(p for p in out.parent.iterdir() if p.name.startswith(mine))] \
        if out.parent.is_dir() else [old]
    for leftover in leftovers:
        if leftover.exists():
            shutil.rmtree(leftover)


def swap_into_place(staging: Path, out: Path) -> None:
    """The folder ``staging`` becomes ``out``; the old ``out``, if any, is removed."""
    _, old = staging_of(out)
    if not out.exists():
        os.rename(staging, out)
    elif _exchange(staging, out):
        shutil.rmtree(staging)  # it holds the old release now
    else:
        os.rename(out, old)
        os.rename(staging, out)
        shutil.rmtree(old)
