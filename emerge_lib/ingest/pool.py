"""What the Wikidata and Wikipedia ingests share: file references, the worker runner, logs.

Extraction workers are module-level functions taking picklable arguments and returning a
picklable summary, so the same job runs in this process, in a spawned process pool, or as
a Spark task through mapInArrow (on a cluster).
"""

from __future__ import annotations

import ctypes
import importlib.abc
import logging
import os
import pickle
import sys
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from contextlib import nullcontext
from typing import Any, TypeVar

from emerge_lib.core.spawn import SpawnWithoutMain, exit_with_parent
from emerge_lib.ingest.files import IngestError

log = logging.getLogger(__name__)


S = TypeVar("S")


def _run_in_spark(worker: Callable[..., Any]):
    def run(batches):  # runs inside Spark's Python workers
        import pyarrow as pa

        keep_freed_memory()

        for batch in batches:
            for job in batch.column("job").to_pylist():
                summary = worker(*pickle.loads(job))
                yield pa.RecordBatch.from_pylist(
                    [{"summary": pickle.dumps(summary)}],
                    schema=pa.schema([("summary", pa.binary())]),
                )

    return run


def _file_size(job: tuple) -> int:
    size = getattr(job[0], "bytes", None) if job else None
    if size is not None:
        return size
    try:
        return os.path.getsize(job[0])
    except (OSError, TypeError, IndexError):
        return 0


class _NoPandas(importlib.abc.MetaPathFinder):
    def find_spec(self, name: str, path: Any = None, target: Any = None) -> None:
        if name == "pandas" or name.startswith("pandas."):
            raise ImportError("pandas is not imported in extraction workers")
        return None


def _without_pandas() -> None:
    """The workers never use pandas, but pyarrow imports it on the first ``pa.array`` of a
    list when it is installed: 0.3 s of CPU per worker, half of its start-up. Here that
    import fails at once, and pyarrow goes on without pandas."""
    if "pandas" not in sys.modules:
        sys.meta_path.insert(0, _NoPandas())


_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3  # glibc <malloc.h>
KEEP_FREED_BELOW = 64 << 20


def keep_freed_memory() -> bool:
    """Let glibc keep freed blocks for reuse instead of handing them back to the kernel.

    A worker allocates a fresh multi-MB block for every window of decompressed XML and
    the decompressor one for every bz2 block. By default glibc maps blocks over 128 KiB
    (a threshold that only creeps up) and trims the heap top, so each new block is
    page-faulted and zeroed by the kernel again: 8,000-11,000 faults per 65 MB bz2 file.
    With fixed thresholds the same memory is reused (25 faults once the heap has grown).
    Process-wide (up to 256 MB of freed memory stays with the process), so it is set in
    worker processes (the pool's, Spark's Python workers), not in a long-lived parent;
    False where the C library has no ``mallopt`` (not glibc).
    """
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    return bool(mallopt(_M_MMAP_THRESHOLD, KEEP_FREED_BELOW)
                and mallopt(_M_TRIM_THRESHOLD, 4 * KEEP_FREED_BELOW))


def _init_worker(parent: int) -> None:
    """Pool initializer: see core.spawn.exit_with_parent, _without_pandas and
    keep_freed_memory."""
    exit_with_parent(parent)
    _without_pandas()
    keep_freed_memory()


class WorkerPool:
    """A spawned process pool started on first use and kept for the caller's later batches
    (a spawn costs about half a second of start-up per process); spawn, not fork: the
    parent runs an embedded engine's threads, which fork would copy half-alive."""

    def __init__(self, workers: int) -> None:
        self.workers = workers
        self._pool: ProcessPoolExecutor | None = None

    def executor(self) -> ProcessPoolExecutor:
        if self._pool is None:
            self._pool = ProcessPoolExecutor(max_workers=self.workers,
                                             mp_context=SpawnWithoutMain(),
                                             initializer=_init_worker,
                                             initargs=(os.getpid(),))
        return self._pool

    def close(self, abandon: bool = False) -> None:
        """Shut the pool down; ``abandon``: end its workers now instead of waiting for
        the files they are on (an interrupted or terminated run)."""
        if self._pool is not None:
            if abandon:
                for proc in list((getattr(self._pool, "_processes", None) or {}).values()):
                    proc.terminate()
            self._pool.shutdown(cancel_futures=True)
            self._pool = None

    def __enter__(self) -> WorkerPool:
        return self

    def __exit__(self, kind: type[BaseException] | None, *exc: object) -> None:
        # Ctrl-C reaches the workers too (one process group); SIGTERM reaches this process
        # only, and a shutdown that waited would keep a terminated run on for minutes
        self.close(abandon=kind is not None and issubclass(kind, KeyboardInterrupt))


def run_workers(
    worker: Callable[..., S],
    jobs: Sequence[tuple],
    workers: int,
    on_done: Callable[[S], None] | None = None,
    spark=None,
    pool: WorkerPool | None = None,
) -> list[S]:
    """Run ``worker(*job, threads=...)`` for every job: one Spark task per job when
    ``spark`` is given, else here, in a process pool when ``workers`` > 1 (``pool``, or
    one for this call). With one job, the decompressor gets the cores instead.

    Jobs run largest file first (``job[0]`` is the dump file): a big file started last
    would run alone while the other workers idle.
    """
    results: list[S] = []
    jobs = sorted(jobs, key=_file_size, reverse=True)

    def done(summary: S) -> None:
        results.append(summary)
        if on_done:
            on_done(summary)

    if spark is not None:
        frame = spark.createDataFrame([(pickle.dumps(j),) for j in jobs], "job binary")
        rows = frame.repartition(max(1, len(jobs))).mapInArrow(
            _run_in_spark(worker), "summary binary").collect()
        for r in rows:
            done(pickle.loads(r.summary))
        return results
    if workers <= 1 or len(jobs) == 1:
        threads = None if workers > 1 else 1
        for job in jobs:
            done(worker(*job, threads=threads))
        return results
    with WorkerPool(workers) if pool is None else nullcontext(pool) as active:
        executor = active.executor()
        try:
            for fut in as_completed([executor.submit(worker, *job, threads=1) for job in jobs]):
                done(fut.result())
        except BrokenProcessPool:
            codes = sorted({p.exitcode for p in (getattr(executor, "_processes", None) or {}).values()
                            if p.exitcode is not None})
            active.close()
            raise IngestError(
                f"an extraction worker process died (exit code {codes or 'unknown'}; -9 is "
                "a kill, often the kernel's out-of-memory killer): lower dumps.workers or "
                "free memory, and run again (finished files are kept)", retryable=True) from None
    return results


def log_file(summary: Any) -> None:
    """One rate line per file, for the task log."""
    mb = summary.bytes / 1e6
    seconds = summary.seconds or 0.0
    log.info(
        "%s: %d pages, %d revisions (%d decoded), %d rejects, %.1f MB in %.1fs, %.1f CPU-s "
        "(%.1f MB/s compressed, %.0f revisions/s)%s",
        summary.dump_file, summary.pages, summary.revisions, summary.decoded, summary.rejects,
        mb, seconds, summary.cpu_seconds, mb / seconds if seconds else 0.0,
        summary.revisions / seconds if seconds else 0.0,
        f" FAILED: {summary.error}" if summary.error else "",
    )
