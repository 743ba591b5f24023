"""An append-only local journal of verdict rows, so that a killed curate run loses no
answer it received.

The curate stage MERGEs verdicts into Delta in batches (a MERGE per answer would cost more
than the answer on a GPU server); between two MERGEs the answers live in memory. Each
answer's rows are therefore also appended to a JSONL file with one ``write(2)`` before the
answer counts as done: a ``kill -9`` cannot lose what the kernel already holds. A thread
``fdatasync``s the file when it grew, at most every ``SYNC_INTERVAL_S`` (group commit: a
sync takes about 5 ms here and, run after every answer, slowed the appends twofold), so a
power loss or kernel crash loses at most the answers of the last 50 ms or so. The next run of the snapshot replays every
journal no live run holds (``flock``) into the table before it plans, then deletes it; a
run that ends normally deletes its own journal after its last MERGE. Replay is a MERGE on
the table's key: rows a MERGE already committed are rewritten with the same values.

Where: ``<warehouse>/_staging/curate-journal/<snapshot>/`` for a local warehouse; for a
remote one (``s3://``, which has no append) a folder of this machine's cache named after
the warehouse (``$XDG_CACHE_HOME/emerge/curate-journal/…``), so a rerun on another machine
asks those answers again instead.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import logging
import os
import threading
import uuid
from collections.abc import Iterable, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

SYNC_INTERVAL_S = 0.05


def journal_folder(warehouse: str, snapshot: str) -> Path:
    """Where the journals of one snapshot of this warehouse live (see the module doc)."""
    if "://" not in warehouse or warehouse.startswith("file://"):
        root = Path(warehouse.removeprefix("file://")).resolve() / "_staging" / "curate-journal"
    else:
        cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
        name = hashlib.sha256(warehouse.encode()).hexdigest()[:16]
        root = cache / "emerge" / "curate-journal" / name
    return root / snapshot


def _json_default(value: Any) -> str:
    if isinstance(value, datetime):
        return value.isoformat()
    raise TypeError(f"cannot journal a {type(value).__name__}")


class Journal:
    """This run's journal: ``append`` rows (one write), ``close(remove=True)`` when every
    row is committed to the table."""

    def __init__(self, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        self.path = folder / f"{os.getpid()}-{uuid.uuid4().hex[:12]}.jsonl"
        self.fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        fcntl.flock(self.fd, fcntl.LOCK_EX)  # held while this run lives: replay skips it
        self.rows = 0
        self.syncs = 0
        self._grew = threading.Event()
        self._closed = threading.Event()
        self._closing = False
        self._syncer = threading.Thread(target=self._sync_loop, name="curate-journal",
                                        daemon=True)
        self._syncer.start()

    def append(self, rows: Iterable[Mapping[str, Any]]) -> None:
        data = "".join(json.dumps(r, default=_json_default, ensure_ascii=False) + "\n"
                       for r in rows).encode()
        view = memoryview(data)
        while view:  # one write(2) for a line of an answer's rows, in practice
            view = view[os.write(self.fd, view):]
        self.rows += data.count(b"\n")
        self._grew.set()

    def _sync_loop(self) -> None:
        while True:
            self._grew.wait()
            self._grew.clear()
            if self._closing:
                return
            with contextlib.suppress(OSError):
                os.fdatasync(self.fd)
                self.syncs += 1
            self._closed.wait(SYNC_INTERVAL_S)  # answers meanwhile share the next sync

    def close(self, remove: bool) -> None:
        """Stop syncing; delete the file when its rows are all in the table."""
        self._closing = True
        self._closed.set()
        self._grew.set()
        self._syncer.join()
        if remove:
            self.path.unlink(missing_ok=True)
        else:
            os.fdatasync(self.fd)
        os.close(self.fd)  # releases the lock


def take_orphans(folder: Path) -> tuple[list[dict[str, Any]], list[Path], int]:
    """The rows of every journal in ``folder`` that no live run holds, the files (to delete
    once the rows are committed: ``release``) and the count of lines a kill cut short."""
    rows: list[dict[str, Any]] = []
    taken: list[Path] = []
    torn = 0
    if not folder.is_dir():
        return rows, taken, torn
    for path in sorted(folder.glob("*.jsonl")):
        try:
            fd = os.open(path, os.O_RDONLY)
        except FileNotFoundError:
            continue  # another run took it
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                continue  # a live run's journal
            with open(fd, "rb", closefd=False) as fh:
                for line in fh:
                    try:
                        rows.append(json.loads(line))
                    except ValueError:
                        torn += 1  # the last line, cut by a kill in the middle of a write
            taken.append(path)
        finally:
            os.close(fd)
    return rows, taken, torn


def release(paths: Iterable[Path]) -> None:
    """Delete replayed journals (their rows are committed)."""
    for path in paths:
        path.unlink(missing_ok=True)
