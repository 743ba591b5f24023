"""The release's independent files written by several processes (``release.workers``).

Each window of a snapshot (``release.windows``), each KG table of it and its TSV
(``release.tables``), each snapshot's context (``release.context``) and each table
released whole is a file of its own, read from the catalog through deltalake at the
pinned versions and written to its own name: nothing one of them writes is read by
another but the context (which the writer submits once its snapshot's windows and KG are
written). So they are *units*: a function and picklable arguments, run here with
``release.workers: 1`` (today's one process, in the order submitted) or in a pool of
spawned processes, each re-opening the warehouse by path with no Spark session (spawn,
not fork: the driver holds the engine's threads or a Spark Connect session). The writer
takes the results in the order it submitted them, so the release is the same bytes
either way.

**The shared files** (a function of every snapshot, written whenever one is) are units
too where what they read allows it:

- each table released whole (``parquet/<table>.parquet``: ``instances`` the largest) and
  each *carried* snapshot's statistics on the card (its JSONL lines, linked into the
  staging folder before any unit runs) are submitted with the written snapshots' units;
- each snapshot's leak-free splits and each written snapshot's statistics once every
  snapshot's files are written: the splits of one snapshot depend on the others' only
  through the lines drawn into ``test`` and their articles (one article in ``test``
  anywhere keeps its lines of every snapshot out of train), which the driver finds first
  (``release.splits.drawn``: two columns, filtered by Arrow) and gives to each unit; the
  driver joins the units' counts and refuses an article in two splits.

What stays in the driver, and why: the release suites and the human annotation's checks
(``validation.validate_release``: Great Expectations queries through the driver's Spark
session, which a worker has not; they run *while* the shared units run, so at the size
of a quarter's release the driver's validation and the workers' reading overlap); the
card's plots (matplotlib, from the statistics: drawn once those are taken, beside the
splits and tables still running; a worker would pay matplotlib's import as well);
croissant.json and its mlcroissant check, the card's text and the manifest: they state
the content version, the sha256 of every other file, so they come after every unit and
nothing is left to run beside them.

A unit that fails raises, in the writer, the error it raised (an ``EmergeError``: its one
line, without the worker's traceback); a worker that dies is a ``ReleaseError`` saying so.
:meth:`Units.close` waits for (or, on an interrupt, ends) the workers before the writer
removes its staging folder, so no worker writes into a folder being removed.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from emerge_lib.catalog import Catalog
from emerge_lib.core.config import (
    ContextSettings,
    CurationSettings,
    PassageSettings,
    SplitSettings,
)
from emerge_lib.core.errors import EmergeError
from emerge_lib.core.spawn import spawned_pool
from emerge_lib.formats.card import SnapshotStats, collect
from emerge_lib.release.context import write_context
from emerge_lib.release.splits import SnapshotSplits, write_snapshot_splits
from emerge_lib.release.tables import write_kg_tsv, write_parquet
from emerge_lib.release.windows import Reads, ReleaseError

log = logging.getLogger(__name__)

R = TypeVar("R")
#: a unit submitted: its result and the log records it made (in a worker)
Unit = Future[tuple[R, list[logging.LogRecord]]]


@dataclass(frozen=True)
class Source:
    """What a worker needs to read as the driver does: the warehouse by path (and its
    object-store options), the pinned versions and the lines' settings."""

    warehouse: str
    storage_options: Mapping[str, str]
    versions: Mapping[str, int | None]
    passages: PassageSettings
    curation: CurationSettings

    @classmethod
    def of(cls, reads: Reads) -> Source:
        catalog = reads.catalog
        return cls(catalog.warehouse, dict(catalog.storage_options), dict(reads.versions),
                   reads.passages, reads.curation)

    def reads(self) -> Reads:
        """The driver's ``Reads``, without its Spark session (none is needed)."""
        catalog = Catalog(self.warehouse, storage_options=self.storage_options or None)
        return Reads(catalog, self.versions, self.passages, self.curation)


_OPENED: list[tuple[Source, Reads]] = []  # a worker's reads, opened once per release


class _Kept(logging.Handler):
    """A unit's log records, taken back to the driver's log (a spawned worker has no
    handler of its own: its warnings would go to its stderr, unformatted)."""

    def __init__(self) -> None:
        super().__init__()
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        # the message made here: picklable whatever its arguments were
        self.records.append(logging.makeLogRecord(
            {**record.__dict__, "msg": record.getMessage(), "args": None, "exc_info": None,
             "exc_text": None}))


def _in_worker(fn: Callable[..., R], source: Source, *args: object
               ) -> tuple[R, list[logging.LogRecord]]:
    """Run one unit in a worker process; its result and its log records."""
    if not _OPENED or _OPENED[0][0] != source:
        _OPENED[:] = [(source, source.reads())]
    kept = _Kept()
    root = logging.getLogger()
    root.addHandler(kept)
    try:
        return fn(_OPENED[0][1], *args), kept.records
    finally:
        root.removeHandler(kept)


#: ``release.workers: 0`` writes in the driver alone when the snapshots written read less
#: than this (Parquet bytes of their rows of the tables below): a worker's start-up (≈ 2
#: CPU-s of imports, measured) costs more than a small release's files do
AUTO_MIN_BYTES = 64 << 20
#: what the units of a snapshot read most of (the shared tables read a share of these)
_SIZED = ("passages", "instances", "kg_triples", "entities", "relations", "verdicts")


def input_bytes(reads: Reads, snapshots: Sequence[str]) -> int:
    """The Parquet bytes of ``snapshots``' rows of the tables their units read, at the
    pinned versions (file sizes: no data is read)."""
    total = 0
    for name in _SIZED:
        version = reads.versions.get(name)
        for snap in snapshots if version is not None else ():
            dataset = reads.catalog.dataset(name, version, [("snapshot", "=", snap)])
            if dataset is not None:
                total += sum(info.size or 0 for info in
                             dataset.filesystem.get_file_info(list(dataset.files)))
    return total


class Units:
    """Where the release's units run: in this process, as they are submitted, or in a
    pool of spawned processes, started on the first unit. ``workers`` 0 settles the
    number when the snapshots to write are known (:meth:`settle`)."""

    def __init__(self, reads: Reads, workers: int, *, most: int = 4) -> None:
        self.reads, self.workers, self.most = reads, max(0, workers), max(1, most)
        self._source = Source.of(reads)
        self._pool: ProcessPoolExecutor | None = None

    def settle(self, snapshots: Sequence[str]) -> int:
        """The processes for writing ``snapshots`` (``release.workers``, or with 0:
        ``most`` when they read ``AUTO_MIN_BYTES`` or more, else 1)."""
        if not self.workers:
            size = input_bytes(self.reads, snapshots) if snapshots else 0
            self.workers = self.most if size >= AUTO_MIN_BYTES else 1
            log.info("release: %d snapshots to write (%.1f MB of Parquet read): %d "
                     "processes (release.workers: 0)", len(snapshots), size / 1e6,
                     self.workers)
        return self.workers

    def submit(self, fn: Callable[..., R], *args: object) -> Unit[R]:
        """Run ``fn(reads, *args)`` (a module-level function, picklable arguments); its
        result, or its error, is :meth:`result`'s."""
        if self.settle([]) == 1:
            return self.ready(fn(self.reads, *args))  # an error raises here, as inline
        if self._pool is None:
            self._pool = spawned_pool(self.workers)
        return self._pool.submit(_in_worker, fn, self._source, *args)

    @staticmethod
    def ready(value: R) -> Unit[R]:
        """A unit done already, with ``value`` (what the release kept from before)."""
        done: Unit[R] = Future()
        done.set_result((value, []))
        return done

    def result(self, unit: Unit[R]) -> R:
        """The unit's result (its log records logged here); its error raised here as the
        serial path raises it."""
        try:
            value, records = unit.result()
        except BrokenProcessPool:
            codes = sorted({p.exitcode for p in (getattr(self._pool, "_processes", None) or {})
                            .values() if p.exitcode is not None})
            raise ReleaseError(
                f"a release worker process died (exit code {codes or 'unknown'}; -9 is a "
                "kill, often the kernel's out-of-memory killer): lower release.workers or "
                "free memory, and run again", retryable=True) from None
        except EmergeError as exc:  # its line, not the worker's traceback under it
            raise exc from None
        for record in records:
            logging.getLogger(record.name).handle(record)
        return value

    def close(self, *, abandon: bool = False) -> None:
        """Stop the pool: the units not started are cancelled, those running finished
        (``abandon``: ended now, on an interrupt)."""
        if self._pool is not None:
            if abandon:
                for proc in list((getattr(self._pool, "_processes", None) or {}).values()):
                    proc.terminate()
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None

    def __enter__(self) -> Units:
        return self

    def __exit__(self, kind: type[BaseException] | None, *exc: object) -> None:
        self.close(abandon=kind is not None and issubclass(kind, KeyboardInterrupt))


# -- the units that are not already ``fn(reads, ...)`` ----------------------------------------
def table_file(reads: Reads, name: str, path: Path, snapshots: Sequence[str],
               version: int | None, dropped: Mapping[str, set[str]]) -> int:
    """A released table's Parquet (``release.tables.write_parquet``)."""
    return write_parquet(reads.catalog, name, path, snapshots, version, dropped)


def kg_tsv(reads: Reads, path: Path, snapshot: str, version: int | None) -> int:
    """A snapshot's T_t as the authors' TSV (``release.tables.write_kg_tsv``)."""
    return write_kg_tsv(reads.catalog, path, snapshot, version)


def context(_: Reads, out: Path, corpus: Mapping[str, Sequence[str]],
            settings: ContextSettings) -> dict[str, int]:
    """A snapshot's context files (``release.context.write_context``)."""
    return write_context(out, corpus, settings)


def split_files(_: Reads, out: Path, snapshot: str, files: Sequence[str], test: set[str],
                test_pages: set[int], settings: SplitSettings) -> SnapshotSplits:
    """A snapshot's leak-free splits (``release.splits.write_snapshot_splits``)."""
    return write_snapshot_splits(out, snapshot, files, test, test_pages, settings)


def card_stats(_: Reads, out: Path, snapshot: str, kg_rows: Mapping[str, int]
               ) -> SnapshotStats:
    """A snapshot's statistics on the card, read from its release files
    (``formats.card.collect``)."""
    return collect(out, [snapshot], {snapshot: dict(kg_rows)})[0]
