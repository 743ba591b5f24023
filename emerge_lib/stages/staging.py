"""Staged worker output: per-output row buffers flushed to one Parquet file per dump file.

Extraction workers (stages.wikidata_extract, stages.wikipedia_extract) write here, in any
process; the ingest stages commit the staged files to Delta. Pure pyarrow: nothing here
needs an engine.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from emerge_lib.dumps.xmlstream import PageReject
from emerge_lib.tables import spec

log = logging.getLogger(__name__)
_MICROS = pa.timestamp("us", tz="UTC")


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
    outputs: dict[str, str] = field(default_factory=dict)
    error: str | None = None


class StagedOutputs:
    """Row buffers per output, flushed to Parquet in the staging folder.

    Two ways in: ``add`` takes a dict row (datetimes for timestamps); ``add_values`` takes
    a tuple in schema order with timestamps as Unix seconds. The hot outputs use the
    latter: no dict and no datetime per row, and Arrow builds each column in one call.
    Use one of them per output, so the rows of a file keep their order.
    """

    NAMES: tuple[str, ...] = ()  # the outputs, each a catalog table or one of EXTRA
    EXTRA: dict[str, pa.Schema] = {}  # outputs that are not catalog tables

    def __init__(self, staging: Path, stem: str, flush_rows: int = 200_000) -> None:
        self.staging = staging
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
            folder = self.staging / name
            folder.mkdir(parents=True, exist_ok=True)
            writer = pq.ParquetWriter(folder / f"{self.stem}.parquet", schema)
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
                out[name] = str(self.staging / name / f"{self.stem}.parquet")
        return out


class Quarantine:
    """Reject rows for a file worker: what could not be read is counted and kept,
    never dropped. Needs ``wiki``, ``dump_file``, ``summary`` and ``out``."""

    wiki: str
    dump_file: str
    summary: FileSummary
    out: StagedOutputs

    def reject(self, page_id: int | None, title: str | None, rev_id: int | None,
               reason: str, detail: str = "") -> None:
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
        self.reject(None, None, None, "file_error",
                    str(exc) if expected else f"{type(exc).__name__}: {exc}")
        self.summary.error = f"{type(exc).__name__}: {exc}"

    def _on_page_reject(self, r: PageReject) -> None:
        self.reject(r.page_id, r.title, None, "malformed_xml", f"{r.reason} at byte {r.offset}")
