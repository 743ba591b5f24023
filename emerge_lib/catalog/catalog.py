"""The catalog's reads and writes: every write goes through one guarded method, allowed
only for the tables whose declared write mode (``emerge_lib.catalog.specs``) it implements:

- ``replace_partition``: replace exactly one partition, transactionally, with replaceWhere.
  Sail 0.7 accepts rows outside a replaceWhere predicate (and silently ignores dynamic
  partition overwrite, replacing the whole table), so every row is checked against the
  partition as it is written, and a violating frame fails the write before its commit
  (Delta-Spark would refuse it too, with its own message: the guard's comes first).
- ``merge``: MERGE INTO on a declared key (update matched, insert new), for incremental
  timelines.
- ``overwrite``: replace the whole table in one transaction, for tables derived wholesale
  from others (a rerun gives the same table); ``replace_keys`` replaces the rows of some
  keys of such a table (a partial recompute), in one MERGE.
- ``delete_matching`` / ``update_matching``: the ingest's deletes of replayed pages and
  closures of open intervals, on merge-mode tables.

A commit that lost the race to a concurrent writer (Airflow runs mapped tasks and snapshot
runs side by side) is retried a bounded number of times with jittered backoff.

Writes go through Spark (any engine: Sail or Apache Spark with Delta Lake, one code path;
where they differ, the engine's traits decide: ``core.engine.EngineTraits``); reads go
through Spark or, where a session is not wanted (CLI summaries, tests), through deltalake.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar

import pyarrow as pa
import pyarrow.compute  # noqa: F401  (pa.compute in row_count)

from emerge_lib.catalog.specs import (
    CatalogError,
    CommitConflictError,
    TableSpec,
    WriteMode,
    spark_type,
    spec,
)
from emerge_lib.catalog.sql import literal, partition_predicate
from emerge_lib.core.engine import (
    EngineTraits,
    engine_activity,
    engine_traits,
    local_checkpoint,
)

if TYPE_CHECKING:
    from deltalake import DeltaTable
    from pyspark.sql import DataFrame, SparkSession

    from emerge_lib.core.config import Config

log = logging.getLogger(__name__)

T = TypeVar("T")


def _lost_commit_race(exc: BaseException) -> bool:
    """Did a Delta commit fail because another writer committed first?

    Sail 0.7 reports it as ``Failed to commit transaction: <version>`` (measured with four
    writers replacing four partitions of one table at once); Delta-Spark says
    ``ConcurrentAppendException`` and friends (measured: two MERGEs into different
    partitions of one table conflict unless their ON names the partitions' values).
    Nothing of the failed write is visible, so running the same idempotent write again is
    safe.
    """
    text = str(exc)
    return any(marker in text for marker in _CONFLICT_MARKERS)


#: the text a guarded write's rows raise when one falls outside its partitions
_GUARD_MARK = "emerge-guard: a row outside the partitions:"

_CONFLICT_MARKERS = (
    "Failed to commit transaction",
    "ConcurrentAppendException",
    "ConcurrentDeleteReadException",
    "ConcurrentDeleteDeleteException",
    "ConcurrentTransactionException",
    "MetadataChangedException",
    "ProtocolChangedException",
    "VersionAlreadyExists",
    "version already exists",
)


class Catalog:
    """Tables under one warehouse root (a local path or an s3:// URL).

    Every write goes through one of the methods below, each allowed only for tables whose
    declared ``write_mode`` it implements, and each committed with a bounded retry when a
    concurrent writer won the race (writes are idempotent, so the retry is the same write
    again, reading its inputs anew).
    """

    def __init__(
        self,
        warehouse: str | Path,
        spark: SparkSession | None = None,
        storage_options: Mapping[str, str] | None = None,
        commit_attempts: int = 8,
        start_session: Callable[[], SparkSession] | None = None,
    ) -> None:
        self.warehouse = str(warehouse).rstrip("/")
        self.spark = spark
        # starts the engine on the first read or write that needs it (reads through
        # deltalake and stages with nothing to do never start one)
        self._start_session = start_session
        self.storage_options = dict(storage_options or {})
        self.commit_attempts = max(1, commit_attempts)
        self._scratch: list[str] = []
        self._checkpoints: list[DataFrame] = []  # materialized on Spark (materialize)
        self._upgraded: set[str] = set()  # tables checked for declared columns (_upgrade)
        #: partition_digest's results: (table, snapshot, its data files) → the digest
        self._digests: dict[tuple[str, str, str], str] = {}

    @classmethod
    def for_config(cls, cfg: Config, spark: SparkSession | None = None,
                   start_session: Callable[[], SparkSession] | None = None) -> Catalog:
        """The configuration's warehouse, with its S3 settings for reads through deltalake."""
        options = cfg.s3.storage_options() if "://" in cfg.warehouse else None
        return cls(cfg.warehouse, spark, storage_options=options, start_session=start_session)

    # -- locations ---------------------------------------------------------------------------
    def path(self, name: str) -> str:
        spec(name)
        if "://" in self.warehouse:
            return f"{self.warehouse}/{name}"
        return str(Path(self.warehouse).resolve() / name)

    def exists(self, name: str) -> bool:
        from deltalake import DeltaTable

        return bool(DeltaTable.is_deltatable(self.path(name),
                                             storage_options=self.storage_options))

    @property
    def traits(self) -> EngineTraits:
        """What the session's engine is (Sail or Spark), as it reports itself."""
        return engine_traits(self.session())

    def spark_path(self, name: str) -> str:
        """The table's location as the engine names it (Spark: ``s3a://`` for S3)."""
        return self.traits.path(self.path(name))

    def session(self) -> SparkSession:
        """The Spark session stages run on (reads via deltalake need none), started now
        when the catalog was given a way to start one."""
        if self.spark is None and self._start_session is not None:
            self.spark = self._start_session()
        if self.spark is None:
            raise CatalogError("this catalog has no Spark session; writes need one")
        return self.spark

    # -- reads -------------------------------------------------------------------------------
    def read(self, name: str, version: int | None = None) -> DataFrame:
        """The table as a Spark DataFrame (an empty frame of the right schema if missing)."""
        spark = self.session()
        if not self.exists(name):
            return spark.createDataFrame([], spec(name).ddl)
        reader = spark.read.format("delta")
        if version is not None:
            reader = reader.option("versionAsOf", version)
        return reader.load(self.spark_path(name))

    def _delta(self, name: str, version: int | None = None) -> DeltaTable:
        from deltalake import DeltaTable
        from deltalake.exceptions import DeltaError, DeltaProtocolError

        try:
            return DeltaTable(self.path(name), version=version,
                              storage_options=self.storage_options)
        except (DeltaError, DeltaProtocolError) as exc:
            if "version" in str(exc).lower() and version is not None:
                raise
            # deltalake's message carries a native backtrace ("0: <unknown> …"): cut it
            reason = " ".join(str(exc).split(" 0: ")[0].split())[:300]
            raise CatalogError(f"table {name} ({self.path(name)}): its Delta log cannot be "
                               f"read ({reason}); restore _delta_log from a backup, or "
                               "remove the table and rebuild it") from None

    def read_arrow(
        self,
        name: str,
        filters: list[tuple[str, str, Any]] | None = None,
        columns: list[str] | None = None,
        version: int | None = None,
    ) -> pa.Table:
        """Read through deltalake (no Spark session); missing tables read as empty.

        ``version`` pins a Delta version (time travel), so a reader of several tables can
        see one consistent state while writers go on.
        """
        if not self.exists(name):
            table = spec(name).schema.empty_table()
            return table.select(columns) if columns else table
        from pyarrow.parquet import filters_to_expression

        expression = filters_to_expression(filters) if filters else None
        dataset = self._arrow_dataset(name, version, filters)
        if columns is None:
            # the declared order: Sail stores a partitioned table's partition columns last,
            # Spark where the frame had them (first, as declared)
            declared = spec(name).schema.names
            if set(dataset.schema.names) == set(declared):
                columns = declared
        # deltalake's own to_pyarrow_table, but single-threaded: its file system handler on
        # pyarrow's thread pool aborts the interpreter at exit ("terminate called without an
        # active exception", deltalake 1.6.6, pyarrow 26) when a process exits soon after a
        # threaded read, as a CLI does (tests/engine/catalog/test_catalog.py)
        return dataset.to_table(columns=columns, filter=expression, use_threads=False)

    def dataset(self, name: str, version: int | None = None,
                pruning: list[tuple[str, str, Any]] | None = None) -> Any:
        """A pyarrow dataset of the table at ``version`` (for streaming reads), or None."""
        if not self.exists(name):
            return None
        return self._arrow_dataset(name, version, pruning)

    def _arrow_dataset(self, name: str, version: int | None,
                       filters: list[tuple[str, str, Any]] | None) -> Any:
        """The table's files as a pyarrow dataset, each file known by its partition values
        only. delta-rs picks the files (``filters`` against the partition values and the
        column statistics of the Delta log, rightly keeping a file whose statistics lack a
        column), but its pyarrow fragments also carry those statistics as bounds, and a
        column without them gets null bounds, which pyarrow reads as "no row can match":
        Delta-Spark keeps no minimum or maximum of a boolean column, so a filter on one
        (the release's ``kept = false`` of selection) found no row in a table Spark wrote
        (tests/engine/catalog/test_catalog_engines.py). The files' own Parquet statistics
        still skip row groups.

        A local table's files are read through pyarrow's own file system, not deltalake's
        Python file system handler: pyarrow's I/O threads calling back into Python aborted
        the interpreter at exit ("terminate called without an active exception", SIGABRT)
        in a process that exited soon after a read, even single-threaded (1 run in ~1,000
        under CI's load; the workaround the Polars maintainers give, pola-rs/polars#24169).
        Object stores keep deltalake's handler, which holds their credentials."""
        import pyarrow.dataset as pads

        table = self._delta(name, version)
        found = table.to_pyarrow_dataset(file_pruning_predicate=filters or None)
        schema = found.schema
        filesystem, root = found.filesystem, ""
        local = self._local_root(name)
        if local is not None:
            from pyarrow.fs import LocalFileSystem

            filesystem, root = LocalFileSystem(), local + "/"
        fragments = []
        for fragment in found.get_fragments():
            values = pads.get_partition_keys(fragment.partition_expression)
            known = pads.scalar(True)
            for column in table.metadata().partition_columns:
                value = values.get(column)
                known = known & (pads.field(column).is_null() if value is None else
                                 pads.field(column) == pa.scalar(value,
                                                                 schema.field(column).type))
            fragments.append(found.format.make_fragment(
                root + fragment.path, filesystem=filesystem, partition_expression=known))
        return pads.FileSystemDataset(fragments, schema, found.format, filesystem)

    def _local_root(self, name: str) -> str | None:
        """The table's folder on this machine's disk, or None for an object store."""
        path = self.path(name)
        if path.startswith("file://"):
            from urllib.parse import unquote, urlparse

            return unquote(urlparse(path).path).rstrip("/")
        return None if "://" in path else path.rstrip("/")

    def partition_digest(self, name: str, version: int | None, snapshot: str) -> str | None:
        """A fingerprint of one snapshot's rows of a table at ``version``: of their
        content, not of the Delta files holding them, so a stage run again on unchanged
        inputs (which writes the same rows into new files) keeps it, while any change of
        those rows changes it, and writes to other snapshots leave it as it is. A check
        made on a snapshot (validate) and a release's files made from it (release/carry.py)
        stay valid until that snapshot's own rows change. None when the table does not
        exist.

        Computed by the engine (:func:`rows_digest`) once per set of data files in this
        process: the files' names are the cache key (Delta data files are never rewritten
        in place, so the same names are the same rows; with deletion vectors, which take
        rows out of a file, the table's id and version too)."""
        import hashlib

        if version is None or not self.exists(name):
            return None
        table = self._delta(name, version)
        files = table.file_uris(file_pruning_predicate=[("snapshot", "=", snapshot)])
        marks = sorted(f.rsplit("/", 1)[-1] for f in files)
        if "deletionVectors" in set(table.protocol().reader_features or []):
            # a file's rows are then not its Parquet rows: the version says which
            marks.append(f"version {table.metadata().id} {table.version()}")
        names = "\n".join(marks)
        key = (self.path(name), snapshot, hashlib.sha256(names.encode()).hexdigest())
        if key not in self._digests:
            from pyspark.sql import functions as F

            rows = self.read(name, version).filter(F.col("snapshot") == snapshot)
            self._digests[key] = rows_digest(rows, spec(name).schema) if files else \
                _EMPTY_DIGEST
        return self._digests[key]

    def has_snapshot(self, name: str, snapshot: str) -> bool:
        """Whether the table holds rows of ``snapshot`` (a partition value), read from its
        Delta log without an engine."""
        if not self.exists(name):
            return False
        return bool(self._delta(name).file_uris(
            file_pruning_predicate=[("snapshot", "=", snapshot)]))

    def version(self, name: str) -> int | None:
        if not self.exists(name):
            return None
        return int(self._delta(name).version())

    def table_id(self, name: str) -> str | None:
        """The Delta table's id (made when it is created): a table removed and made anew
        has another one, though its versions count from 0 again. None when missing."""
        if not self.exists(name):
            return None
        return str(self._delta(name).metadata().id)

    def row_count(self, name: str, version: int | None = None) -> int:
        """Rows of the table, from the Delta log's file statistics (no data is read)."""
        if not self.exists(name):
            return 0
        dt = self._delta(name, version)
        actions = pa.table(dt.get_add_actions(flatten=True))
        if "num_records" in actions.schema.names:
            counts = actions.column("num_records")
            if counts.null_count == 0:
                return int(pa.compute.sum(counts).as_py() or 0)
        return int(dt.to_pyarrow_dataset().count_rows())  # footers only

    # -- writes ------------------------------------------------------------------------------
    def _writable(self, name: str, *modes: WriteMode) -> TableSpec:
        s = spec(name)
        if s.write_mode not in modes:
            raise CatalogError(
                f"table {name} is written by {s.write_mode}, not by {' or '.join(modes)}"
            )
        self._upgrade(name)
        return s

    def _upgrade(self, name: str) -> None:
        """A table an earlier version of emerge wrote without a column it now declares gets
        that column (NULL in its old rows) in one overwrite, before the first write of this
        process: Sail's Delta writer has no schema evolution, and a stage's write would
        otherwise fail on a warehouse built before the column existed. Only added columns
        are upgraded; anything else is refused with both schemas named."""
        if name in self._upgraded:
            return
        self._upgraded.add(name)
        if not self.exists(name):
            return
        stored = self._delta(name).schema().to_arrow()
        declared = spec(name).schema
        missing = [f for f in declared if f.name not in stored.names]
        if not missing:
            return
        unknown = [n for n in stored.names if n not in declared.names]
        if unknown:
            raise CatalogError(f"table {name}: stored columns {unknown} are not declared; "
                               f"rebuild it (its stage recomputes it)")
        from pyspark.sql import functions as F

        old = self.session().read.format("delta").load(self.spark_path(name))
        for f in missing:
            old = old.withColumn(f.name, F.lit(None).cast(spark_type(f.type)))
        df = self.materialize(self.conform(name, old))
        writer = df.write.format("delta").mode("overwrite").option("overwriteSchema", "true")
        if spec(name).partition_by:
            writer = writer.partitionBy(*spec(name).partition_by)
        self._committed(name, "upgrade (add columns)",
                        lambda: writer.save(self.spark_path(name)))
        log.info("table %s: upgraded, added column(s) %s", name,
                 ", ".join(f.name for f in missing))

    def conform(self, name: str, df: DataFrame) -> DataFrame:
        """Select the table's columns in order, cast to its types; refuse missing/extra columns."""
        from pyspark.sql import functions as F

        s = spec(name)
        have, want = set(df.columns), set(s.schema.names)
        if have != want:
            raise CatalogError(
                f"table {name}: frame columns differ from the schema: "
                f"missing {sorted(want - have)}, unexpected {sorted(have - want)}"
            )
        return df.select(
            *[F.col(f"`{f.name}`").cast(spark_type(f.type)).alias(f.name) for f in s.schema]
        )

    def frame(self, name: str, data: pa.Table | Iterable[Mapping[str, Any]]) -> DataFrame:
        """A Spark frame of this table's schema from Arrow or rows (for small writes)."""
        s = spec(name)
        if isinstance(data, pa.Table):
            table = data.select(s.schema.names).cast(s.schema)
        else:
            table = pa.Table.from_pylist(list(data), schema=s.schema)
        return self.session().createDataFrame(table, schema=s.ddl)

    def materialize(self, df: DataFrame, *,
                    keep: Literal["checkpoint", "table"] = "checkpoint") -> DataFrame:
        """Run df's plan once and hand back its result, for a frame used several times.

        On Spark, a local checkpoint: the rows kept by the executors (memory, then disk),
        the plan cut there. Sail does not cache (``cache()`` is a no-op and
        ``localCheckpoint`` fails), so there the rows go to a scratch Delta table, read
        back; ``keep="table"`` does that on Spark too, for a plan Spark 4.2 cannot
        checkpoint (a union beside a checkpoint fails its constraint rewrite: "key not
        found: qid#…"). Either is released by the next guarded write's cleanup (or
        ``clean_scratch``), after that write has read it.
        """
        import uuid

        if self.traits.caches and keep == "checkpoint":
            with engine_activity("a local checkpoint (materialize)"):
                kept = local_checkpoint(df)
            # held until clean_scratch, as a scratch table is: Spark Connect releases a
            # checkpoint when its DataFrame object is collected, and a frame of spark.sql
            # over it holds only the plan's protobuf, not the object
            self._checkpoints.append(kept)
            return kept
        folder = f"{self.warehouse}/_scratch/{uuid.uuid4().hex}"
        if "://" not in folder:
            folder = str(Path(folder).resolve())
        # a scratch Delta table, not Parquet: Parquet renames list elements ("element"),
        # which Sail's replaceWhere union then refuses next to the table's own files
        with engine_activity("a scratch table (materialize)"):
            df.write.format("delta").mode("overwrite").save(self.traits.path(folder))
        self._scratch.append(folder)
        return self.session().read.format("delta").load(self.traits.path(folder))

    def clean_scratch(self) -> None:
        """Remove scratch folders of earlier guarded writes (their data is committed), and
        let the engine release their checkpoints."""
        import shutil

        from pyarrow import fs as pafs

        for folder in self._scratch:
            if "://" in folder:
                filesystem, path = pafs.FileSystem.from_uri(folder)
                filesystem.delete_dir_contents(path, missing_dir_ok=True)
            else:
                shutil.rmtree(folder, ignore_errors=True)
        self._scratch.clear()
        self._checkpoints.clear()

    def _committed(self, name: str, operation: str, write: Callable[[], T]) -> T:
        """Run one Delta commit (``operation`` of table ``name``, the words of a timeout's
        message); when a concurrent writer won the race, run it again after a jittered,
        growing pause (bounded by ``commit_attempts``)."""
        pause = 0.05
        for attempt in range(1, self.commit_attempts + 1):
            try:
                with engine_activity(f"{name}: {operation}"):
                    return write()
            except Exception as exc:
                if not _lost_commit_race(exc):
                    raise
                if attempt == self.commit_attempts:
                    raise CommitConflictError(
                        f"table {name}: the commit lost the race to concurrent writers "
                        f"{attempt} times; nothing of it was committed (retry the task)"
                    ) from exc
                wait = random.uniform(pause / 2, pause)
                log.info("%s: a concurrent writer committed first; retrying in %.2fs "
                         "(attempt %d of %d)", name, wait, attempt + 1, self.commit_attempts)
                time.sleep(wait)
                pause = min(pause * 2, 5.0)
        raise AssertionError("unreachable")  # pragma: no cover

    def _create_or(self, name: str, operation: str, df: DataFrame,
                   write: Callable[[], None]) -> None:
        """``write`` (a guarded replace or a MERGE), the table first created empty when it
        does not exist yet. The rows never go in by a creating append: two writers that
        both found no table (two builds of one snapshot into a fresh warehouse) both
        appended, and every row was there twice. Two empty creates add no row, whichever
        lands, and the idempotent write then runs on the table either way."""
        s = spec(name)

        def create() -> None:
            if self.exists(name):
                return
            writer = df.limit(0).write.format("delta").mode("append")
            if s.partition_by:
                writer = writer.partitionBy(*s.partition_by)
            writer.save(self.spark_path(name))

        if not self.exists(name):
            self._committed(name, "create (empty)", create)
        self._committed(name, operation, write)

    def overwrite(self, name: str, df: DataFrame) -> None:
        """Replace the whole table in one Delta transaction (derived tables only)."""
        s = self._writable(name, "overwrite")
        df = self.conform(name, df)

        def write() -> None:
            writer = df.write.format("delta").mode("overwrite").option("overwriteSchema", "true")
            if s.partition_by:
                writer = writer.partitionBy(*s.partition_by)
            writer.save(self.spark_path(name))

        self._committed(name, "overwrite", write)

    def replace_keys(self, name: str, df: DataFrame, keys: DataFrame,
                     on: Sequence[str]) -> KeyedReplace:
        """Make the rows whose ``on`` columns equal those of a row of ``keys`` exactly the
        rows of ``df`` (a derived table recomputed for some keys only), in one MERGE: the
        rows of those keys that ``df`` lacks are deleted, the rows of ``df`` the table
        lacks inserted; every other row stays as it is, and an unchanged key touches no
        file. A row of ``df`` outside ``keys`` is refused before anything is written.
        Rows are a set (a row already there is not inserted again), so running the same
        replace twice, or again after a lost commit race, gives the same table.
        Overwrite-mode (derived) tables only."""
        s = self._writable(name, "overwrite")
        unknown = [c for c in on if c not in s.schema.names or c not in keys.columns]
        if not on or unknown:
            raise CatalogError(f"table {name}: cannot replace keys on {list(on) or 'nothing'}")
        df = self.conform(name, df)
        keys = keys.select(*on).distinct()
        cols = s.schema.names
        same = " AND ".join(f"a.`{c}` <=> b.`{c}`" for c in cols)
        keyed = " AND ".join(f"x.`{c}` <=> k.`{c}`" for c in on)
        listed = ", ".join(f"`{c}`" for c in cols)
        try:
            with engine_activity(f"{name}: replace keys (the changed rows)"):
                src = self.materialize(self.session().sql(f"""
                    WITH b AS (SELECT x.* FROM {{old}} x LEFT SEMI JOIN {{keys}} k ON {keyed})
                    SELECT b.*, 'delete' AS _op FROM b LEFT ANTI JOIN {{new}} a ON {same}
                    UNION ALL
                    SELECT a.*, 'insert' AS _op FROM {{new}} a LEFT ANTI JOIN b ON {same}
                    UNION ALL
                    SELECT x.*, 'outside' AS _op FROM {{new}} x LEFT ANTI JOIN {{keys}} k
                      ON {keyed}
                """, old=self.read(name), new=df, keys=keys))
                counts = {r["_op"]: int(r["n"]) for r in
                          src.groupBy("_op").count().withColumnRenamed("count", "n").collect()}
            if counts.get("outside"):
                row = src.filter("_op = 'outside'").limit(1).collect()[0]
                raise CatalogError(
                    f"table {name}: {counts['outside']} new row(s) outside the keys replaced, "
                    f"e.g. {', '.join(f'{c} = {row[c]}' for c in on)}; nothing was written")
            result = KeyedReplace(deleted=counts.get("delete", 0),
                                  inserted=counts.get("insert", 0))
            if not result.deleted and not result.inserted:
                return result
            values = ", ".join(f"s.`{c}`" for c in cols)
            match = " AND ".join(f"t.`{c}` <=> s.`{c}`" for c in cols)

            def write() -> None:
                self._sql(
                    f"MERGE INTO delta.`{self.spark_path(name)}` AS t USING {{src}} AS s "
                    f"ON {match} WHEN MATCHED AND s._op = 'delete' THEN DELETE "
                    f"WHEN NOT MATCHED AND s._op = 'insert' THEN INSERT ({listed}) "
                    f"VALUES ({values})", src=src.filter("_op <> 'outside'"))

            self._create_or(name, "replace keys", df, write)
            return result
        finally:
            self.clean_scratch()

    def files_between(self, name: str, since: int, until: int) -> FileChanges:
        """The data files the commits after version ``since`` up to ``until`` took out of
        the table and put into it, net (two snapshots' file lists compared: a file
        rewritten by a MERGE leaves, its rewrite comes in). Their rows, compared, are the
        rows that changed: appended, updated or deleted. Raises CatalogError when that
        cannot be told: version ``since`` is no longer in the log (cleaned up), a file
        that left is gone from storage (vacuumed), or the table keeps deletion vectors
        or column mapping (a file's rows are then not its Parquet rows)."""
        from pyarrow import fs as pafs

        if since > until:
            raise CatalogError(f"table {name}: version {since} is after {until}")
        try:
            before = self._delta(name, since)
            after = self._delta(name, until)
        except Exception as exc:  # deltalake names the missing version its own way
            reason = " ".join(str(exc).split(" 0: ")[0].split())[:200]
            raise CatalogError(f"table {name}: version {since} or {until} cannot be read "
                               f"({reason})") from None
        features = set(after.protocol().reader_features or [])
        mapping = after.metadata().configuration.get("delta.columnMapping.mode", "none")
        if "deletionVectors" in features or mapping != "none":
            raise CatalogError(f"table {name}: it keeps deletion vectors or column mapping; "
                               "its changed rows cannot be read from its files")
        # file_uris: the log's paths made absolute (2 ms for 1,441 files, where the add
        # actions with their statistics took 2 s and a pyarrow dataset 1 s)
        old, new = set(before.file_uris()), set(after.file_uris())
        removed, added = sorted(old - new), sorted(new - old)
        root = self._local_root(name)
        if root is not None:
            from urllib.parse import unquote, urlparse

            gone = [f for f in removed if not Path(
                unquote(urlparse(f).path) if f.startswith("file://") else f).exists()]
        else:  # through deltalake's own file system, which holds the store's credentials
            prefix = self.path(name).rstrip("/") + "/"
            inside = [f.removeprefix(prefix) for f in removed if f.startswith(prefix)]
            infos = before.to_pyarrow_dataset().filesystem.get_file_info(inside) if inside else []
            gone = [f for f, info in zip(inside, infos, strict=True)
                    if info.type == pafs.FileType.NotFound]
        if gone:
            raise CatalogError(f"table {name}: {len(gone)} file(s) of version {since} are gone "
                               f"from storage (vacuumed?), e.g. {gone[0]}")
        return FileChanges(removed=removed, added=added)

    def read_files(self, name: str, files: Sequence[str], columns: Sequence[str]) -> DataFrame:
        """Some of the table's data files (``files_between``), ``columns`` of their rows
        (not the partition columns, which the files do not hold)."""
        s = spec(name)
        held = [c for c in columns if c in s.partition_by]
        if held or not files:
            raise CatalogError(f"table {name}: read_files needs files and data columns, not "
                               f"{held or 'no files'}")
        return (self.session().read.parquet(*[self.traits.path(f) for f in files])
                .select(*[f"`{c}`" for c in columns]))

    def replace_partition(self, name: str, df: DataFrame, partition: Mapping[str, Any]) -> int:
        """Replace exactly the rows of one partition with df; other partitions are untouched.

        Every partition column must be fixed, and every row of df must belong to the
        partition: Sail writes rows outside a replaceWhere predicate without complaint,
        so a frame that violates it is refused here before anything is written.
        Returns the number of rows written.
        """
        s = self._writable(name, "replace_partition")
        if set(partition) != set(s.partition_by):
            raise CatalogError(
                f"table {name}: replace_partition needs exactly the partition columns "
                f"{list(s.partition_by)}, got {sorted(partition)}"
            )
        predicate = partition_predicate(partition)
        return self._replace_where(name, df, predicate, predicate, partition).total

    def replace_partitions(
        self, name: str, df: DataFrame, fixed: Mapping[str, Any], column: str,
        values: Iterable[Any], clear_others: bool = False,
    ) -> dict[Any, int]:
        """Replace the partitions ``fixed`` × each of ``values`` of ``column`` in one
        transaction (a stage computing all windows of a snapshot in one pass).

        Every partition listed is replaced, the empty ones too (a rerun that finds
        nothing clears what an earlier run wrote); rows outside them are refused. With
        ``clear_others``, the other values of ``column`` under ``fixed`` are removed too
        (a snapshot rebuilt with fewer windows keeps no stale ones). Returns rows per value.
        """
        s = self._writable(name, "replace_partition")
        if set(fixed) | {column} != set(s.partition_by) or column in fixed:
            raise CatalogError(
                f"table {name}: replace_partitions needs the partition columns "
                f"{list(s.partition_by)} split into fixed values and one listed column"
            )
        values = list(values)
        if not values:
            raise CatalogError(f"table {name}: no partitions to replace")
        listed = ", ".join(literal(v) for v in values)
        inside = " AND ".join(
            [partition_predicate(fixed), f"`{column}` IN ({listed})"] if fixed
            else [f"`{column}` IN ({listed})"]
        )
        if clear_others and not fixed:
            raise CatalogError(f"table {name}: clear_others needs fixed partition values")
        replace = partition_predicate(fixed) if clear_others else inside
        counts = dict.fromkeys(values, 0)
        counts.update(self._replace_where(name, df, inside, replace, fixed, column, values)
                      .by_value)
        return counts

    def _replace_where(
        self, name: str, df: DataFrame, inside: str, replace: str,
        fixed: Mapping[str, Any], column: str | None = None, values: Sequence[Any] = (),
    ) -> WriteResult:
        """The guarded write behind both replace methods: every row must satisfy
        ``inside``, then ``replace`` is replaced by the rows in one transaction.

        The guard travels with the rows: a row outside ``inside`` (or with a NULL
        partition value) makes the engine raise an error while it writes, before the
        commit, so nothing is committed. The frame is computed and written once (it
        was materialized, checked, counted and written again: every row written twice);
        the rows per partition are read from the Delta log's file statistics after the
        commit (a table with a list column: see below)."""
        s = spec(name)
        df = self.conform(name, df)
        if not self.traits.replace_where_any_lists and any(
                pa.types.is_list(f.type) or pa.types.is_large_list(f.type) for f in s.schema):
            # on Sail a list column goes through a scratch Delta table first: Sail's
            # replaceWhere puts the frame beside the table's own rows and refuses list
            # elements named otherwise there ("UnionExec requires all inputs to have the
            # same data type"), as a frame made from local data or cast by conform names
            # them; read back from Delta they match (passages, the one such table, is
            # written twice). Spark takes the frame as it is.
            df = self.materialize(df)
        df = self._guarded(name, df, inside, [*fixed, *([column] if column else [])])
        try:
            def write() -> None:
                (
                    df.write.format("delta")
                    .mode("overwrite")
                    .option("replaceWhere", replace)
                    .partitionBy(*s.partition_by)
                    .save(self.spark_path(name))
                )

            try:
                self._create_or(name, f"replace {replace}", df, write)
            except CatalogError:
                raise
            except Exception as exc:
                if _GUARD_MARK not in str(exc):
                    raise
                detail = _guard_detail(str(exc))
                raise CatalogError(
                    f"table {name}: rows fall outside the partition(s) {inside}, "
                    f"e.g. a row with {detail}; nothing was written") from None
        finally:
            self.clean_scratch()
        result = self._written_rows(name, fixed, column, values, inside)
        log.debug("%s: replaced %s with %d rows", name, replace, result.total)
        return result

    def _guarded(self, name: str, df: DataFrame, inside: str, not_null: list[str]) -> DataFrame:
        """``df`` with its first partition column computed through a guard: a row outside
        ``inside`` or with a NULL partition value raises an error naming its partition
        values (Spark's ``raise_error``, which Sail and Spark 4 both run per row)."""
        s = spec(name)
        nulls = " OR ".join(f"`{c}` IS NULL" for c in not_null)
        shown = ", ', ', ".join(f"'{c} = ', COALESCE(CAST(`{c}` AS STRING), 'NULL')"
                                for c in s.partition_by)
        first = s.partition_by[0]
        typ = spark_type(s.schema.field(first).type)
        checked = (f"CASE WHEN NOT ({inside}) OR ({nulls}) "
                   f"THEN CAST(raise_error(concat('{_GUARD_MARK} ', {shown})) AS {typ}) "
                   f"ELSE `{first}` END AS `{first}`")
        return df.selectExpr(*[checked if c == first else f"`{c}`" for c in df.columns])

    def _written_rows(self, name: str, fixed: Mapping[str, Any], column: str | None,
                      values: Sequence[Any], inside: str) -> WriteResult:
        """Rows now in the partitions ``fixed`` (× ``column`` in ``values``, counted per
        value), from the Delta log's file statistics; a scan of those partitions where a
        file has none."""
        import pyarrow.compute as pc

        actions = pa.table(self._delta(name).get_add_actions(flatten=True))
        wanted = [*fixed, *([column] if column else [])]
        names = [f"partition.{c}" for c in wanted]
        if actions.num_rows and all(n in actions.schema.names for n in ["num_records", *names]):
            mask = pa.array([True] * actions.num_rows)
            for c, value in fixed.items():
                col = actions.column(f"partition.{c}")
                mask = pc.and_(mask, pc.equal(col, pa.scalar(value, type=col.type)))
            if column:
                col = actions.column(f"partition.{column}")
                mask = pc.and_(mask, pc.is_in(col, value_set=pa.array(list(values), type=col.type)))
            mine = actions.filter(mask)
            records = mine.column("num_records")
            if records.null_count == 0:
                if column is None:
                    return WriteResult(total=int(pc.sum(records).as_py() or 0))
                by_value: dict[Any, int] = {}
                for value, n in zip(mine.column(f"partition.{column}").to_pylist(),
                                    records.to_pylist(), strict=True):
                    by_value[value] = by_value.get(value, 0) + int(n)
                return WriteResult(total=sum(by_value.values()), by_value=by_value)
        elif not actions.num_rows:
            return WriteResult(total=0)
        written = self.read(name).filter(inside)
        if column is None:
            return WriteResult(total=written.count())
        by_value = {r[column]: r["count"] for r in written.groupBy(column).count().collect()}
        return WriteResult(total=sum(by_value.values()), by_value=by_value)

    def merge(self, name: str, df: DataFrame) -> int:
        """MERGE INTO on the table's key: update matched rows, insert the others.

        Duplicate keys in df are refused (MERGE would be ambiguous); an empty df commits
        nothing. The partition columns join the match, so the engine can prune files.
        Returns the number of source rows.
        """
        from pyspark.sql import functions as F

        s = self._writable(name, "merge")
        df = self.conform(name, df)
        with engine_activity(f"{name}: merge (check the new rows)"):
            # one query for the rows and the most rows of one key (every engine call costs
            # Spark about a CPU-second of planning, however few the rows)
            per_key = df.groupBy(*s.key).count()
            seen = per_key.agg(F.sum("count").alias("rows"),
                               F.max("count").alias("most")).collect()[0]
            rows = int(seen["rows"] or 0)
            dup = (per_key.filter("count > 1").limit(1).collect()
                   if (seen["most"] or 0) > 1 else [])
        if dup:
            raise CatalogError(f"table {name}: duplicate merge key in the new rows: {dup[0]}")
        if not rows:
            return 0
        keys = list(dict.fromkeys([*s.partition_by, *s.key]))
        on = " AND ".join(f"t.`{k}` <=> s.`{k}`" for k in keys)

        def write() -> None:
            self._sql(
                f"MERGE INTO delta.`{self.spark_path(name)}` AS t USING {{src}} AS s ON {on} "
                "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *",
                src=df,
            )

        self._create_or(name, "merge", df, write)
        return rows

    def delete_matching(self, name: str, keys: DataFrame, on: Sequence[str]) -> None:
        """Delete the rows whose ``on`` columns equal those of some row of ``keys``
        (a matched MERGE: Sail has no IN-subquery in DELETE). Merge-mode tables only."""
        self._writable(name, "merge")
        if not self.exists(name) or not on:
            return
        unknown = [c for c in on if c not in spec(name).schema.names or c not in keys.columns]
        if unknown:
            raise CatalogError(f"table {name}: cannot match on {unknown}")
        keys = keys.select(*on).distinct()
        match = " AND ".join(f"t.`{c}` = k.`{c}`" for c in on)
        self._committed(name, "delete matching rows", lambda: self._sql(
            f"MERGE INTO delta.`{self.spark_path(name)}` AS t USING {{keys}} AS k ON {match} "
            "WHEN MATCHED THEN DELETE", keys=keys))

    def update_matching(self, name: str, updates: DataFrame, on: str,
                        assignments: Mapping[str, str]) -> None:
        """Update target rows ``t`` matched by source rows ``s`` of ``updates`` under the SQL
        condition ``on`` (over aliases t and s), setting ``column = expression`` (over s).
        Merge-mode tables only; a row matched twice is refused by the engine."""
        s = self._writable(name, "merge")
        if not self.exists(name):
            return
        unknown = [c for c in assignments if c not in s.schema.names]
        if unknown:
            raise CatalogError(f"table {name}: cannot set unknown columns {unknown}")
        sets = ", ".join(f"`{c}` = {expr}" for c, expr in assignments.items())
        self._committed(name, "update matching rows", lambda: self._sql(
            f"MERGE INTO delta.`{self.spark_path(name)}` AS t USING {{src}} AS s ON {on} "
            f"WHEN MATCHED THEN UPDATE SET {sets}", src=updates))

    def _sql(self, query: str, **frames: DataFrame) -> None:
        """Run a command naming frames as ``{name}`` query arguments (never session-wide
        view names, which a later call could rebind). Sail runs a command when issued."""
        self.session().sql(query, **frames)


def _digest_of(count: int, sums: Sequence[int]) -> str:
    import hashlib

    return hashlib.sha256(f"rows {count} {' '.join(map(str, sums))}".encode()).hexdigest()[:32]


#: a partition without a row (no data file holds it)
_EMPTY_DIGEST = _digest_of(0, (0, 0))


def rows_digest(rows: DataFrame, schema: pa.Schema) -> str:
    """An order-free digest of the rows of ``rows`` (the multiset of them): their count and,
    for each of two 64-bit hashes of a row, the sum of them over the rows modulo 2**64.
    The same rows in any order and any files give the same digest; a row changed, added
    or removed, or any value of any column changed, changes it but with a probability of
    about 2**-128 (the two hashes taken as independent and uniform: xxhash64 seeded two
    ways; a sum of uniform hashes collides as rarely as one hash). Computed on the engine
    in one aggregate (Sail and Spark 4 have ``xxhash64``, ``to_json``, ``shiftrightunsigned``),
    each sum as its two 32-bit halves, so no sum overflows (Spark 4 fails one, ANSI) below
    2**31 rows a partition.

    A row's hash reads every column of ``schema`` the frame has (a table written before a
    column was declared lacks it until its next write), in the declared order (an engine
    stores the partition columns where it likes), each value with whether it is NULL
    (``xxhash64`` skips NULLs: ('a', NULL) and (NULL, 'a') would hash alike) and each
    nested value (lists, structs) as its JSON text (``xxhash64`` of a list skips its NULL
    elements and of a struct its NULL fields; the JSON keeps both). Collisions assumed
    away beyond that: a double's -0.0 and 0.0, and its NaNs, may hash alike (an engine may
    normalize them); the digest is the engine's (Sail 0.7 and Spark 4 gave the same one for
    the same rows, tests/engine/catalog/test_catalog.py's, but nothing promises it, nor
    across two versions of one: a difference costs a needless rewrite, no wrong carry)."""
    from pyspark.sql import functions as F

    parts, held = [], set(rows.columns)
    for declared in (f for f in schema if f.name in held):  # a table not yet upgraded
        column = F.col(declared.name)
        parts += [F.to_json(column) if pa.types.is_nested(declared.type) else column,
                  column.isNull()]
    low = F.lit(0xFFFFFFFF).cast("bigint")
    sums = []
    for seed in ("emerge-row-1", "emerge-row-2"):
        h = F.xxhash64(F.lit(seed), *parts)
        sums += [F.sum(h.bitwiseAND(low)), F.sum(F.shiftrightunsigned(h, 32))]
    got = rows.agg(F.count(F.lit(1)), *sums).collect()[0]
    count, halves = int(got[0]), [int(x or 0) for x in got[1:]]
    return _digest_of(count, [(halves[i] + (halves[i + 1] << 32)) % 2**64 for i in (0, 2)])


def _guard_detail(message: str) -> str:
    """The partition values a guard's error names: the rest of its line, without the
    SQLSTATE Spark appends (``[USER_RAISED_EXCEPTION] <message> SQLSTATE: P0001``; Sail
    gives the bare message)."""
    import re

    detail = message.split(_GUARD_MARK, 1)[1].split("\n", 1)[0]
    return re.sub(r"\s*SQLSTATE: \w+\s*$", "", detail).strip()


@dataclass(frozen=True)
class WriteResult:
    """Rows a replace wrote: in total, and per value of the listed partition column."""

    total: int
    by_value: dict[Any, int] = field(default_factory=dict)


@dataclass(frozen=True)
class KeyedReplace:
    """What ``replace_keys`` changed: rows deleted and rows inserted."""

    deleted: int
    inserted: int


@dataclass(frozen=True)
class FileChanges:
    """The data files that left a table and those that came into it between two versions."""

    removed: list[str]
    added: list[str]
