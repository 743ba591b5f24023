"""Atomic replacement, for the release writer: a file written beside its name and renamed
over it only on success (:func:`atomic_file`), and a whole release folder written beside
the old one and swapped into place (:func:`staging_of`, :func:`recover`,
:func:`swap_into_place`).

The swap is one atomic exchange of the two folders where the kernel has ``renameat2``
(Linux), else two renames; a kill between those two leaves the old release under
``.NAME.old``, which :func:`recover` (called before every write) puts back. So no reader
ever sees a mixed release: a kill or a full disk at any point leaves the old release or
the new one.
"""

from __future__ import annotations

import ctypes
import errno
import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

_RENAME_EXCHANGE, _AT_FDCWD = 2, -100


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
    """(the folder a new release of ``out`` is written into, where the old one waits
    during the fallback swap)."""
    return out.with_name(f".{out.name}.writing"), out.with_name(f".{out.name}.old")


def recover(out: Path) -> None:
    """Undo what a kill between the two renames of the fallback swap left: the old
    release back under its name; a half-written new one thrown away."""
    staging, old = staging_of(out)
    if old.is_dir() and not out.exists():
        os.rename(old, out)
    for leftover in (staging, old):
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
