"""Staged worker output: per-output row buffers flushed to one Parquet file per dump file.

Extraction workers (``ingest.wikidata.extract``, ``ingest.wikipedia.extract``) write here, in any
process and on any machine; the ingest's commit step reads the staged files into Delta.
The staging folder is a local path or any pyarrow filesystem URI (``s3://…`` where
extraction runs on other machines than the commit). Pure pyarrow: no engine needed.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.parquet as pq
from pyarrow import fs as pafs

from emerge_lib.catalog import spec
from emerge_lib.catalog.storage import filesystem_of
from emerge_lib.core.resources import cpu_seconds
from emerge_lib.dumps.compressed import DumpReadError
from emerge_lib.dumps.xml import Dump, MalformedXMLError, PageReject

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

log = logging.getLogger(__name__)
_MICROS = pa.timestamp("us", tz="UTC")

#: a page the warehouse holds, in a file that has none of its ingested revisions: only
#: newer ones, as Wikimedia's daily adds/changes dumps (other/incr/…) carry them. Rebuilt
#: from those alone it would lose its history: the page is a reject and keeps its rows
PARTIAL = ("the file holds none of the page's ingested revisions, only newer ones (an "
           "adds/changes increment?): its history is not replayed from them; ingest "
           "full-history files (pages-meta-history)")
#: the same, for an increment read as one: what it lacks cannot be continued from
PARTIAL_GAP = ("the increment does not follow on from the page's ingested revisions (a "
               "revision's parent is neither in the file nor ingested: a day skipped?); "
               "ingest the missing increments, or the next full dump")
PARTIAL_LATE = ("the increment holds a revision dated before the page's ingested ones (an "
                "import?): replaying the page needs its whole history; the next full dump "
                "(pages-meta-history) replays it")


@dataclass
class FileSummary:
    """What one worker did with one dump file (picklable: it travels back from pools
    and Spark tasks), with the paths of its staged outputs."""

    dump_file: str
    dump_date: str = ""
    pages: int = 0
    revisions: int = 0
    decoded: int = 0
    skipped_pages: int = 0
    rejects: int = 0
    replayed_pages: int = 0
    bytes: int = 0
    seconds: float = 0.0
    cpu_seconds: float = 0.0  # while reading it: the process (decoder threads too) and
    # the children it reaped (an external decompressor)
    outputs: dict[str, str] = field(default_factory=dict)  # output → staged Parquet (URI)
    rows: dict[str, int] = field(default_factory=dict)  # output → rows staged
    error: str | None = None
    sha1: str | None = None  # the mirror's, carried into ingested_files
    basis: str = ""  # digest of the stored state the extraction read (see ``ingest.commit``)
    staging: str = ""  # this file's staging folder, removed after the commit


class PageRuns:
    """The ids of every <page> a file holds, as runs of consecutive ids (``dump_pages``):
    dumps list pages in id order, so a file is a few runs per thousand pages, not a row
    per page. What a newer full dump lacks is known from them (``ingest.reconcile``)."""

    __slots__ = ("hi", "lo", "runs")

    def __init__(self) -> None:
        self.runs: list[tuple[int, int]] = []
        self.lo = self.hi = -2

    def add(self, page_id: int) -> None:
        if page_id == self.hi + 1:
            self.hi = page_id
            return
        if self.lo <= page_id <= self.hi:
            return  # seen (a page read twice: a replay's second pass)
        if self.hi >= 0:
            self.runs.append((self.lo, self.hi))
        self.lo = self.hi = page_id

    def close(self) -> list[tuple[int, int]]:
        if self.hi >= 0:
            self.runs.append((self.lo, self.hi))
            self.lo = self.hi = -2
        return self.runs


class StagedOutputs:
    """Row buffers per output, flushed to Parquet in the staging folder.

    Two ways in: ``add`` takes a dict row (datetimes for timestamps); ``add_values`` takes
    a tuple in schema order with timestamps as Unix seconds. The hot outputs use the
    latter: no dict and no datetime per row, and Arrow builds each column in one call.
    Use one of them per output, so the rows of a file keep their order.
    """

    NAMES: tuple[str, ...] = ()  # the outputs, each a catalog table or one of EXTRA
    EXTRA: dict[str, pa.Schema] = {}  # outputs that are not catalog tables

    def __init__(self, staging: str, stem: str, flush_rows: int = 200_000) -> None:
        self.staging = str(staging).rstrip("/")
        self.fs, self.root = filesystem_of(self.staging)
        self.stem = stem
        self.flush_rows = flush_rows
        self.rows: dict[str, list[dict[str, Any]]] = {n: [] for n in self.NAMES}
        self.tuples: dict[str, list[tuple[Any, ...]]] = {n: [] for n in self.NAMES}
        self.writers: dict[str, pq.ParquetWriter] = {}
        self.counts: dict[str, int] = dict.fromkeys(self.NAMES, 0)

    @classmethod
    def schema(cls, name: str) -> pa.Schema:
        return cls.EXTRA[name] if name in cls.EXTRA else spec(name).schema

    def add(self, name: str, row: dict[str, Any]) -> None:
        buf = self.rows[name]
        buf.append(row)
        if len(buf) >= self.flush_rows:
            self.flush(name)

    def add_values(self, name: str, values: tuple[Any, ...]) -> None:
        buf = self.tuples[name]
        buf.append(values)
        if len(buf) >= self.flush_rows:
            self.flush(name)

    def _table_of_tuples(self, name: str, schema: pa.Schema) -> pa.Table:
        buf = self.tuples[name]
        columns = list(zip(*buf, strict=True)) if buf else [[] for _ in schema]
        arrays = []
        for f, col in zip(schema, columns, strict=True):
            if f.type == _MICROS:  # integer seconds -> micros: no datetime object per row
                arrays.append(pa.array([None if t is None else t * 1_000_000 for t in col], f.type))
            else:
                arrays.append(pa.array(col, f.type))
        return pa.Table.from_arrays(arrays, schema=schema)

    def flush(self, name: str) -> None:
        rows, tuples = self.rows[name], self.tuples[name]
        if not rows and not tuples:
            return
        schema = self.schema(name)
        writer = self.writers.get(name)
        if writer is None:
            folder = f"{self.root}/{name}"
            self.fs.create_dir(folder, recursive=True)
            writer = pq.ParquetWriter(f"{folder}/{self.stem}.parquet", schema, filesystem=self.fs)
            self.writers[name] = writer
        if rows:
            writer.write_table(pa.Table.from_pylist(rows, schema=schema))
        if tuples:
            writer.write_table(self._table_of_tuples(name, schema))
        self.counts[name] += len(rows) + len(tuples)
        rows.clear()
        tuples.clear()

    def close(self) -> dict[str, str]:
        out = {}
        for name in self.NAMES:
            self.flush(name)
            if name in self.writers:
                self.writers[name].close()
                out[name] = f"{self.staging}/{name}/{self.stem}.parquet"
        return out


def read_staged(spark: SparkSession, summaries: Sequence[FileSummary], output: str) -> Any:
    """One staged output of every summary that has it, as one frame (None: none has it)."""
    from emerge_lib.core.engine import engine_traits

    paths = [s.outputs[output] for s in summaries if output in s.outputs]
    if not paths:
        return None
    traits = engine_traits(spark)  # Spark names S3 s3a://
    return spark.read.parquet(*[traits.path(p) for p in paths])


def missing_outputs(summaries: Sequence[FileSummary]) -> list[str]:
    """Staged files the summaries name that do not exist (Spark's parquet reader would
    silently read a missing file as no rows)."""
    missing = []
    for summary in summaries:
        for uri in summary.outputs.values():
            filesystem, path = filesystem_of(uri)
            if filesystem.get_file_info(path).type != pafs.FileType.File:
                missing.append(uri)
    return missing


def remove_staging(uri: str) -> None:
    """Delete a staging folder and everything in it (missing is fine)."""
    if not uri:
        return
    filesystem, path = filesystem_of(uri)
    with suppress(FileNotFoundError):
        filesystem.delete_dir(path)


class WrongWikiError(DumpReadError):
    """The file is a dump of another wiki than the one being ingested (its <dbname>)."""


class NothingReadError(DumpReadError):
    """The file held no revision that could be read: not a history dump, or all broken."""


class Quarantine:
    """Reject rows for a file worker: what could not be read is counted and kept,
    never dropped. Needs ``path``, ``wiki``, ``dump_file``, ``threads``, ``summary`` and
    ``out``."""

    path: Any
    wiki: str
    dump_file: str
    threads: int | None
    summary: FileSummary
    out: StagedOutputs
    empty_ok: bool = False  # a file without revisions is fine (a quiet day's increment)
    dump_date: str
    page_ids: PageRuns  # every <page> of the file, in scope or not (``dump_pages``)

    @contextmanager
    def open_dump(self, **options: Any) -> Iterator[Dump]:
        """The file as a Dump; refused when its <dbname> names another wiki."""
        with Dump.from_file(self.path, on_reject=self._on_page_reject, threads=self.threads,
                            **options) as dump:
            dbname = dump.site_info.dbname
            if dbname and dbname != self.wiki:
                raise WrongWikiError(
                    f"{self.dump_file} is a dump of {dbname}, not of {self.wiki} "
                    "(its <dbname>); pass it as the other wiki's file"
                )
            yield dump

    def read_guarded(self, body: Callable[[], None]) -> FileSummary:
        """Run ``body`` (the file's pages) so that any failure fails this file only: what
        was read before it is kept, and a ``file_error`` row says what went wrong. A file
        that yields no revision at all fails too (a loud error, not an empty success)."""
        started, cpu_started = time.monotonic(), cpu_seconds()
        try:
            self.summary.bytes = os.path.getsize(self.path)
            body()
            if self.summary.revisions == 0 and not (self.empty_ok and not self.summary.pages):
                raise NothingReadError(
                    f"{self.dump_file}: no revision could be read from {self.summary.pages} "
                    f"page(s): {self._why_nothing()}"
                )
        except (MalformedXMLError, DumpReadError, OSError, EOFError) as exc:
            self.fail_file(exc)  # truncated, corrupt, unreadable, or not a dump
        except Exception as exc:  # noqa: BLE001 - anything else fails this file, not the run
            self.fail_file(exc, expected=False)
        for lo, hi in self.page_ids.close():
            self.out.add_values("dump_pages", (self.wiki, self.dump_date, self.dump_file, lo, hi))
        self.summary.outputs = self.out.close()
        self.summary.rows = {k: v for k, v in self.out.counts.items() if v}
        self.summary.seconds = time.monotonic() - started
        self.summary.cpu_seconds = cpu_seconds() - cpu_started
        return self.summary

    def _why_nothing(self) -> str:
        """Why a file gave no revision, from its rejects: a content model of the other
        wiki is a file passed as the wrong wiki's (an enwiki export without <dbname>
        given as Wikidata said "not a MediaWiki history dump, or every page is broken")."""
        reasons: dict[tuple[str, str], int] = self.__dict__.get("_reject_reasons", {})
        skipped = getattr(self.summary, "skipped_pages", 0)
        if not self.summary.pages and skipped and not reasons:
            wikidata = self.wiki.endswith("wikidatawiki")
            return (f"all {skipped} page(s) skipped, none is "
                    f"{'an entity page (Q…, Property:P…)' if wikidata else 'an article'}: "
                    f"a {'Wikipedia' if wikidata else 'Wikidata'} dump? pass it with "
                    f"{'--wikipedia' if wikidata else '--wikidata'}")
        models = {detail for (reason, detail), n in reasons.items()
                  if reason == "unknown_content_model"}
        if models and sum(n for (r, _), n in reasons.items() if r == "unknown_content_model") \
                == sum(reasons.values()):
            other = "Wikipedia" if self.wiki.endswith("wikidatawiki") or "wikitext" in models \
                else "Wikidata"
            flag = "--wikipedia" if other == "Wikipedia" else "--wikidata"
            return (f"every revision has content model {', '.join(sorted(models))[:80]}, "
                    f"not {self.wiki}'s: a {other} dump? pass it with {flag}")
        if reasons:
            top = ", ".join(f"{n} {reason}" for (reason, _), n in
                            sorted(reasons.items(), key=lambda kv: -kv[1])[:3])
            return f"every revision was rejected ({top}); see the ingest_rejects table"
        return "not a MediaWiki history dump, or every page is broken"

    def reject(self, page_id: int | None, title: str | None, rev_id: int | None,
               reason: str, detail: str = "") -> None:
        reasons = self.__dict__.setdefault("_reject_reasons", {})
        key = (reason, detail[:40] if reason == "unknown_content_model" else "")
        reasons[key] = reasons.get(key, 0) + 1
        self.summary.rejects += 1
        self.out.add("ingest_rejects", {
            "wiki": self.wiki, "dump_file": self.dump_file, "page_id": page_id, "title": title,
            "rev_id": rev_id, "reason": reason, "detail": detail[:500],
        })

    def fail_file(self, exc: BaseException, expected: bool = True) -> None:
        """Mark the whole file failed (a ``file_error`` row; what was read is kept).
        ``expected``: a broken, truncated or unreadable dump; otherwise a bug or an input
        nobody foresaw, logged with its traceback. Either fails this file, not the run."""
        if not expected:
            log.exception("%s: unexpected error; the file is marked failed", self.dump_file)
        text = str(exc) if expected else f"{type(exc).__name__}: {exc}"
        self.reject(None, None, None, "file_error", text)
        self.summary.error = text

    def _on_page_reject(self, r: PageReject) -> None:
        if r.page_id is not None:  # a broken page is still in the file: never "absent"
            self.page_ids.add(r.page_id)
        self.reject(r.page_id, r.title, None, "malformed_xml", f"{r.reason} at byte {r.offset}")
