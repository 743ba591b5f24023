"""Small files beside the tables, on the warehouse's own filesystem (a local folder or any
pyarrow filesystem URI, ``s3://…``): ``filesystem_of`` a path, and a stage's state file
(``_state/<name>.json``: what a global stage was last built from, so a rerun with the same
inputs writes nothing), the locks of a snapshot's writers (:func:`snapshot_lock`) and of a
wiki's timelines (:func:`timelines_lock`)."""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import tempfile
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TextIO

import pyarrow.fs as pafs

if TYPE_CHECKING:
    from emerge_lib.catalog.catalog import Catalog

log = logging.getLogger(__name__)

#: the locks this process holds, by (lock file, thread): a build holds its snapshots' locks
#: and each stage it runs asks again (a second ask in the same thread holds nothing more)
_HELD: set[tuple[str, int]] = set()
_HELD_GUARD = threading.Lock()


def filesystem_of(uri: str) -> tuple[pafs.FileSystem, str]:
    """(filesystem, path inside it) of a local path or a filesystem URI."""
    if "://" in uri:
        filesystem, path = pafs.FileSystem.from_uri(uri)
        return filesystem, str(path)
    return pafs.LocalFileSystem(), os.path.abspath(uri)


def _state_path(catalog: Catalog, name: str) -> str:
    return f"{catalog.warehouse}/_state/{name}.json"


def read_state(catalog: Catalog, name: str) -> dict[str, Any] | None:
    """The state a stage recorded, or None (never written, or unreadable)."""
    filesystem, path = filesystem_of(_state_path(catalog, name))
    try:
        with filesystem.open_input_stream(path) as fh:
            state: dict[str, Any] = json.loads(fh.read().decode("utf-8"))
            return state
    except (FileNotFoundError, OSError, ValueError):
        return None


def built_state(snapshot: str) -> str:
    """The state name of what the last whole build of ``snapshot`` left (its settings,
    windows, rows' digests and the history it was built from: ``pipeline.built``)."""
    return f"built-{snapshot.replace(':', '')}"


def write_state(catalog: Catalog, name: str, state: dict[str, Any]) -> None:
    filesystem, path = filesystem_of(_state_path(catalog, name))
    filesystem.create_dir(path.rsplit("/", 1)[0], recursive=True)
    with filesystem.open_output_stream(path) as fh:
        fh.write(json.dumps(state, sort_keys=True).encode("utf-8"))


def _lock_folder(warehouse: str) -> Path:
    """Where a warehouse's locks live: its own ``_locks/`` when local; for an ``s3://`` one,
    a folder of this machine's temporary directory named by the warehouse (so the runs of
    one machine still take turns; the catalog's guarded writes keep the others correct)."""
    if "://" not in warehouse:
        return Path(warehouse) / "_locks"
    digest = hashlib.sha256(warehouse.encode()).hexdigest()[:16]
    return Path(tempfile.gettempdir()) / "emerge-locks" / digest


@contextmanager
def snapshot_lock(warehouse: str, snapshots: list[str], *,
                  step: str | None = None) -> Iterator[None]:
    """Hold the write locks of ``snapshots`` in ``warehouse`` (taken in sorted order, so two
    holders of overlapping sets cannot deadlock): one run builds a snapshot at a time.

    Two builds of one snapshot side by side each rewrote the other's partitions between
    its validation and its release (a release that was not publishable), and an Airflow
    retry beside its stuck try the same: the second now waits for the first (a line
    names the holder), then rebuilds the same rows. The lock dies with its process
    (``flock``): a killed run never blocks the next one.

    ``step``: a step of a stage whose steps run side by side (curate's, one per model):
    it shares the snapshot's lock with the other steps and holds its own step's alone, so
    a run's two curate tasks go on together (one of them waiting on a busy model must not
    hold the other, and with it the other model's pool slot), while a retry of the same
    step, or a build of the snapshot, waits."""
    folder = _lock_folder(warehouse)
    snaps = sorted(set(snapshots))
    wanted = [(folder / _lock_name(s), step is not None, s) for s in snaps]
    wanted += [(folder / _lock_name(f"{s}.{step}"), False, f"{s} (its {step} step)")
               for s in snaps if step is not None]
    with _HELD_GUARD:
        todo = [w for w in wanted if (str(w[0]), threading.get_ident()) not in _HELD]
    if not todo:
        yield
        return
    folder.mkdir(parents=True, exist_ok=True)
    held: list[tuple[Any, str]] = []
    try:
        for path, shared, what in todo:
            held.append((_take(path, shared, f"snapshot {what} in {warehouse}"), str(path)))
            with _HELD_GUARD:
                _HELD.add((str(path), threading.get_ident()))
        yield
    finally:
        for fh, path in reversed(held):
            with _HELD_GUARD:
                _HELD.discard((path, threading.get_ident()))
            fh.close()  # closing the file releases its flock


def _take(path: Path, shared: bool, what: str) -> TextIO:
    """``path``'s flock, shared or alone, waiting (with a line naming the holder) while
    another run holds it; an exclusive holder writes its pid there for the next one."""
    import fcntl

    fh = open(path, "a+")  # noqa: SIM115 - the caller closes it
    flag = fcntl.LOCK_SH if shared else fcntl.LOCK_EX
    try:
        fcntl.flock(fh, flag | fcntl.LOCK_NB)
    except BlockingIOError:
        fh.seek(0)
        holder = fh.read().strip() or "another run"
        log.warning("%s: %s is building it; waiting for it to finish", what, holder)
        try:
            fcntl.flock(fh, flag)
        except BaseException:
            fh.close()
            raise
    if not shared:
        fh.seek(0)
        fh.truncate()
        fh.write(f"emerge run pid {os.getpid()}\n")
        fh.flush()
    return fh


@contextmanager
def timelines_lock(warehouse: str, wikis: Sequence[str], *,
                   mode: Literal["write", "read"]) -> Iterator[None]:
    """Hold the locks of ``wikis``' timelines in ``warehouse``: ``write`` (exclusive) for
    the ingest of a wiki, one at a time; ``read`` (shared) for a stage that reads what it
    writes. An ingest's commit rewrites a page's rows and a dump file's coverage as a
    delete then a merge, so a stage of another build reading between the two saw pages
    without coverage ("paragraphs are not ingested", two builds of different snapshots
    side by side) or without paragraphs; now it waits for the commit, and an ingest waits
    for the stages reading. Taken in sorted order; released when the process dies
    (``flock``)."""
    import fcntl

    folder = _lock_folder(warehouse)
    folder.mkdir(parents=True, exist_ok=True)
    flag = fcntl.LOCK_EX if mode == "write" else fcntl.LOCK_SH
    held = []
    try:
        for wiki in sorted(set(wikis)):
            fh = open(folder / f"ingest-{re.sub(r'[^0-9A-Za-z_.-]+', '-', wiki)}.lock", "a+")  # noqa: SIM115 - closed below
            held.append(fh)
            try:
                fcntl.flock(fh, flag | fcntl.LOCK_NB)
            except BlockingIOError:
                log.info("%s's timelines in %s: %s; waiting for it", wiki, warehouse,
                         "a stage reads them" if mode == "write" else "an ingest writes them")
                fcntl.flock(fh, flag)
        yield
    finally:
        for fh in reversed(held):
            fh.close()  # closing the file releases its flock


def _lock_name(snapshot: str) -> str:
    return "snapshot-" + re.sub(r"[^0-9A-Za-z_.-]+", "-", snapshot) + ".lock"
