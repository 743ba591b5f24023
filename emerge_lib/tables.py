"""The catalog: every Delta table's name, schema, partitioning, write mode, producer, consumers.

One place owns table names and shapes, so a reader finds any table's producer and
consumers in seconds, and every write goes through the guarded helpers below:

- ``replace_partition``: replace exactly one partition, transactionally, with replaceWhere.
  Sail 0.7 accepts rows outside a replaceWhere predicate (and silently ignores dynamic
  partition overwrite, replacing the whole table), so every row is checked against the
  partition first and a violating frame is refused before anything is written.
- ``merge``: MERGE INTO on a declared key (update matched, insert new), for incremental
  timelines.
- ``overwrite``: replace the whole table in one transaction, for tables derived wholesale
  from others (a rerun gives the same table).
- ``delete_matching`` / ``update_matching``: the ingest's deletes of replayed pages and
  closures of open intervals, on merge-mode tables.

Each method refuses a table whose declared write mode it does not implement, and retries a
commit that lost the race to a concurrent writer (Airflow runs mapped tasks and snapshot
runs side by side), a bounded number of times with jittered backoff. ``producers`` and
``consumers`` name stages of the registry (``emerge_lib.pipeline``); a test checks that
they agree with what each stage declares it reads and writes.

Writes go through Spark (any engine); reads go through Spark or, where a session is not
wanted (CLI summaries, tests), through deltalake.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar

import pyarrow as pa
import pyarrow.compute  # noqa: F401  (pa.compute in row_count)

from emerge_lib.errors import EmergeError

if TYPE_CHECKING:
    from deltalake import DeltaTable
    from pyspark.sql import DataFrame, SparkSession

    from emerge_lib.config import Config

log = logging.getLogger(__name__)

WriteMode = Literal["replace_partition", "merge", "overwrite"]
TS = pa.timestamp("us", tz="UTC")
T = TypeVar("T")


class CatalogError(EmergeError):
    """A write that would break a table's contract (wrong partition, schema, key)."""


class CommitConflictError(CatalogError):
    """A commit kept losing the race to concurrent writers; running the task again is safe."""

    retryable = True


@dataclass(frozen=True)
class TableSpec:
    """A table's contract. ``key`` is the MERGE key (merge mode) or the row identity."""

    name: str
    schema: pa.Schema
    write_mode: WriteMode
    producers: tuple[str, ...]
    description: str
    partition_by: tuple[str, ...] = ()
    key: tuple[str, ...] = ()
    consumers: tuple[str, ...] = field(default_factory=tuple)
    released: bool = False  # part of a release (a snapshot's KG, its instances)

    def __post_init__(self) -> None:
        names = set(self.schema.names)
        missing = [c for c in (*self.partition_by, *self.key) if c not in names]
        if missing:
            raise CatalogError(f"table {self.name}: columns {missing} are not in its schema")
        if self.write_mode == "merge" and not self.key:
            raise CatalogError(f"table {self.name}: merge mode needs a key")
        if self.write_mode == "replace_partition" and not self.partition_by:
            raise CatalogError(f"table {self.name}: replace_partition needs partition columns")

    @property
    def ddl(self) -> str:
        """The schema as a Spark DDL string (for createDataFrame and casts)."""
        return ", ".join(f"`{f.name}` {spark_type(f.type)}" for f in self.schema)


def spark_type(t: pa.DataType) -> str:
    """Arrow type → Spark SQL type name."""
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return "STRING"
    if pa.types.is_int64(t):
        return "BIGINT"
    if pa.types.is_int32(t):
        return "INT"
    if pa.types.is_int16(t):
        return "SMALLINT"
    if pa.types.is_int8(t):
        return "TINYINT"
    if pa.types.is_boolean(t):
        return "BOOLEAN"
    if pa.types.is_float64(t):
        return "DOUBLE"
    if pa.types.is_float32(t):
        return "FLOAT"
    if pa.types.is_timestamp(t):
        return "TIMESTAMP"
    if pa.types.is_date32(t):
        return "DATE"
    if pa.types.is_binary(t):
        return "BINARY"
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return f"ARRAY<{spark_type(t.value_type)}>"
    if pa.types.is_struct(t):
        inner = ", ".join(f"`{f.name}`: {spark_type(f.type)}" for f in t)
        return f"STRUCT<{inner}>"
    raise CatalogError(f"no Spark type for Arrow type {t}")


# --- schemas ------------------------------------------------------------------------------

QUALIFIER = pa.struct(
    [
        ("pid", pa.string()),
        ("kind", pa.string()),  # time | item | other
        ("time", pa.string()),  # Wikibase time string, e.g. +2001-00-00T00:00:00Z
        ("precision", pa.int8()),
        ("instant", TS),  # first instant of the period the time value stands for
        ("item", pa.string()),
    ]
)

MENTION = pa.struct(
    [
        ("start", pa.int32()),
        ("end", pa.int32()),
        ("anchor", pa.string()),
        ("target", pa.string()),
    ]
)

RESOLVED_MENTION = pa.struct(
    [
        ("start", pa.int32()),
        ("end", pa.int32()),
        ("anchor", pa.string()),
        ("target", pa.string()),
        ("qid", pa.string()),
    ]
)


def _schema(*fields: tuple[str, pa.DataType]) -> pa.Schema:
    return pa.schema(list(fields))


TABLES: dict[str, TableSpec] = {}


def _register(spec: TableSpec) -> TableSpec:
    if spec.name in TABLES:
        raise CatalogError(f"table {spec.name} declared twice")
    TABLES[spec.name] = spec
    return spec


# Ingest (timelines). One row per maximal interval in which a fact holds in a page's
# revision history; valid_to NULL = still open at the end of the ingested dumps.
STATEMENT_TIMELINE = _register(
    TableSpec(
        name="statement_timeline",
        schema=_schema(
            ("s", pa.string()),
            ("p", pa.string()),
            ("o", pa.string()),
            ("statement_id", pa.string()),
            ("rank", pa.string()),
            ("version_hash", pa.string()),  # hash of (statement_id, p, o, rank, qualifiers)
            ("qualifiers", pa.list_(QUALIFIER)),
            ("valid_from", TS),
            ("valid_to", TS),
            ("rev_from", pa.int64()),
            ("rev_to", pa.int64()),
            ("s_bucket", pa.int32()),
        ),
        write_mode="merge",
        key=("s", "version_hash", "rev_from"),
        partition_by=("s_bucket",),
        producers=("ingest_wikidata",),
        consumers=("stability", "deltas", "align"),
        description="Item-valued statements of every item revision, as validity intervals.",
    )
)

ITEM_TIMELINE = _register(
    TableSpec(
        name="item_timeline",
        schema=_schema(
            ("qid", pa.string()),
            ("valid_from", TS),
            ("valid_to", TS),
            ("rev_from", pa.int64()),
            ("enwiki_title", pa.string()),
            ("label_en", pa.string()),
            ("description_en", pa.string()),
            ("created_at", TS),
            ("redirect_to", pa.string()),
            ("qid_bucket", pa.int32()),
        ),
        write_mode="merge",
        key=("qid", "rev_from"),
        partition_by=("qid_bucket",),
        producers=("ingest_wikidata",),
        consumers=("snapshot", "deltas", "passages", "align"),
        description="Per item: enwiki sitelink, English label/description, redirect, over time.",
    )
)

PROPERTY_TIMELINE = _register(
    TableSpec(
        name="property_timeline",
        schema=_schema(
            ("pid", pa.string()),
            ("valid_from", TS),
            ("valid_to", TS),
            ("rev_from", pa.int64()),
            ("label_en", pa.string()),
            ("description_en", pa.string()),
            ("datatype", pa.string()),
        ),
        write_mode="merge",
        key=("pid", "rev_from"),
        producers=("ingest_wikidata",),
        consumers=("snapshot", "align"),
        description="Properties (namespace 120): label, description and datatype over time.",
    )
)

PAGE_WATERMARKS = _register(
    TableSpec(
        name="page_watermarks",
        schema=_schema(
            ("wiki", pa.string()),
            ("page_id", pa.int64()),
            ("title", pa.string()),
            ("last_rev_id", pa.int64()),  # newest in time: where the state continues
            ("last_timestamp", TS),
            ("max_rev_id", pa.int64()),  # ids grow: a newer dump's new revisions exceed it
            ("revisions", pa.int64()),  # a different count up to max_rev_id forces a replay
            ("first_timestamp", TS),
            ("dump_date", pa.string()),
            ("dump_file", pa.string()),
        ),
        write_mode="merge",
        key=("wiki", "page_id"),
        partition_by=("wiki",),
        producers=("ingest_wikidata", "ingest_wikipedia"),
        consumers=("ingest_wikidata", "ingest_wikipedia", "passages"),
        description="Last ingested revision per page: what an incremental dump may skip.",
    )
)

INGESTED_FILES = _register(
    TableSpec(
        name="ingested_files",
        schema=_schema(
            ("wiki", pa.string()),
            ("dump_date", pa.string()),
            ("dump_file", pa.string()),
            ("sha1", pa.string()),
            ("pages", pa.int64()),  # article/entity pages read (the whole file, every time)
            ("revisions", pa.int64()),  # their revisions
            # from ingest_rejects after the commit, so a rerun reports the same numbers:
            ("rejects", pa.int64()),  # reject rows of the file, every reason
            ("rejected_pages", pa.int64()),  # pages unreadable as a whole (broken XML, empty)
            ("deleted_revisions", pa.int64()),  # text deleted or suppressed (normal)
            ("bytes", pa.int64()),
            ("seconds", pa.float64()),
            ("ingested_at", TS),
            ("error", pa.string()),  # why the file failed (NULL: read to its end)
        ),
        write_mode="merge",
        key=("wiki", "dump_file"),
        partition_by=("wiki",),
        producers=("ingest_wikidata", "ingest_wikipedia"),
        consumers=("ingest_wikidata", "ingest_wikipedia", "snapshot", "passages", "release"),
        description="One row per ingested dump file with counts, rejects, timing and its sha1.",
    )
)

INGEST_REJECTS = _register(
    TableSpec(
        name="ingest_rejects",
        schema=_schema(
            ("wiki", pa.string()),
            ("dump_file", pa.string()),
            ("page_id", pa.int64()),
            ("title", pa.string()),
            ("rev_id", pa.int64()),
            ("reason", pa.string()),
            ("detail", pa.string()),
        ),
        write_mode="merge",
        key=("wiki", "dump_file", "page_id", "rev_id", "reason"),
        partition_by=("wiki", "dump_file"),
        producers=("ingest_wikidata", "ingest_wikipedia"),
        consumers=("ingest_wikidata", "ingest_wikipedia"),
        description="Quarantine: every page or revision that could not be read, with the reason.",
    )
)

PAGE_TIMELINE = _register(
    TableSpec(
        name="page_timeline",
        schema=_schema(
            ("page_id", pa.int64()),
            ("title", pa.string()),  # normalized article title (namespace 0)
            ("valid_from", TS),
            ("valid_to", TS),  # NULL: still so at the end of the ingested dumps
            ("rev_from", pa.int64()),
            ("rev_to", pa.int64()),  # the revision that ended the run (NULL: open)
            ("is_redirect", pa.bool_()),
            ("redirect_target", pa.string()),  # normalized; NULL for a non-article target
        ),
        write_mode="merge",
        key=("page_id", "rev_from"),
        producers=("ingest_wikipedia",),
        consumers=("snapshot", "passages", "align"),
        description=(
            "Per article page: maximal runs of (title, is_redirect, redirect_target) over "
            "every revision; page moves change the title. Runs while the page was outside "
            "namespace 0 are not stored."
        ),
    )
)

PARAGRAPH_TIMELINE = _register(
    TableSpec(
        name="paragraph_timeline",
        schema=_schema(
            ("page_id", pa.int64()),
            ("paragraph_hash", pa.string()),
            ("paragraph_idx", pa.int32()),  # as in first_seen_rev
            ("text", pa.string()),
            ("mentions", pa.list_(MENTION)),  # as in first_seen_rev
            ("tokens", pa.int32()),
            ("markup_ratio", pa.float32()),
            ("first_seen_rev", pa.int64()),
            ("first_seen_at", TS),
            ("removed_rev", pa.int64()),  # first later ingested revision without it
            ("removed_at", TS),  # NULL: still present at the end of the covered range
        ),
        write_mode="merge",
        key=("page_id", "paragraph_hash", "first_seen_rev"),
        producers=("ingest_wikipedia",),
        consumers=("snapshot", "passages", "align"),
        description=(
            "Presence runs of each paragraph (by text hash) of each article, only over the "
            "revisions the configured snapshots need (see paragraph_coverage)."
        ),
    )
)

PARAGRAPH_COVERAGE = _register(
    TableSpec(
        name="paragraph_coverage",
        schema=_schema(
            ("wiki", pa.string()),
            ("dump_file", pa.string()),
            ("dump_date", pa.string()),
            ("range_from", TS),
            ("range_to", TS),
            ("ingested_at", TS),
        ),
        # a file's rows are replaced by a matched-MERGE delete plus a merge: Sail 0.7's
        # replaceWhere fails on timestamp columns ("UTC" vs "Etc/UTC" in its union)
        write_mode="merge",
        key=("wiki", "dump_file", "range_from"),
        producers=("ingest_wikipedia",),
        consumers=("ingest_wikipedia", "passages"),
        description=(
            "The time ranges whose paragraphs each Wikipedia dump file was ingested for: "
            "a snapshot whose range is not covered must be refused."
        ),
    )
)

STABLE_STATEMENTS = _register(
    TableSpec(
        name="stable_statements",
        schema=_schema(
            ("s", pa.string()),
            ("p", pa.string()),
            ("o", pa.string()),
            ("valid_from", TS),
            ("valid_to", TS),
        ),
        write_mode="overwrite",
        producers=("stability",),
        consumers=("snapshot", "deltas", "align"),
        description=(
            "Presence intervals of each (s, p, o) key after the KG stability rule: "
            "absences, then presences, shorter than stability.kg_hours are removed."
        ),
    )
)

# Derived per snapshot: partitioned by snapshot (and window), replaced as a whole.
KG_TRIPLES = _register(
    TableSpec(
        name="kg_triples",
        schema=_schema(
            ("snapshot", pa.string()),
            ("s", pa.string()),
            ("p", pa.string()),
            ("o", pa.string()),
        ),
        write_mode="replace_partition",
        partition_by=("snapshot",),
        producers=("snapshot",),
        consumers=("align", "validate", "release"),
        released=True,
        description="T_t: item-valued, non-deprecated statements between items of V_t.",
    )
)

ENTITIES = _register(
    TableSpec(
        name="entities",
        schema=_schema(
            ("snapshot", pa.string()),
            ("qid", pa.string()),
            ("title", pa.string()),
            ("label", pa.string()),
            ("description", pa.string()),
            ("text_description", pa.string()),
            ("created_at", TS),
        ),
        write_mode="replace_partition",
        partition_by=("snapshot",),
        producers=("snapshot",),
        consumers=("validate", "release"),
        released=True,
        description="V_t with labels, descriptions and the article's first paragraph.",
    )
)

RELATIONS = _register(
    TableSpec(
        name="relations",
        schema=_schema(
            ("snapshot", pa.string()),
            ("pid", pa.string()),
            ("label", pa.string()),
            ("description", pa.string()),
        ),
        write_mode="replace_partition",
        partition_by=("snapshot",),
        producers=("snapshot",),
        consumers=("validate", "release"),
        released=True,
        description="R_t: properties with English label and description at t.",
    )
)

DELTA_TRIPLES = _register(
    TableSpec(
        name="delta_triples",
        schema=_schema(
            ("snapshot", pa.string()),
            ("window", pa.int32()),
            ("s", pa.string()),
            ("p", pa.string()),
            ("o", pa.string()),
            ("op", pa.string()),
            ("signal", pa.string()),
            ("emerging_head", pa.bool_()),
            ("emerging_tail", pa.bool_()),
            ("head_created_at", TS),
            ("tail_created_at", TS),
            ("lifespan_from", TS),
            ("lifespan_to", TS),
            ("qualifier_pid", pa.string()),
            ("qualifier_at", TS),
        ),
        write_mode="replace_partition",
        partition_by=("snapshot", "window"),
        producers=("deltas",),
        consumers=("align",),
        description="Cumulative KG delta of each window with its operation candidate.",
    )
)

PASSAGES = _register(
    TableSpec(
        name="passages",
        schema=_schema(
            ("snapshot", pa.string()),
            ("window", pa.int32()),
            ("passage_id", pa.string()),
            ("page_id", pa.int64()),
            ("page_title", pa.string()),
            ("page_qid", pa.string()),
            ("rev_id", pa.int64()),
            ("rev_timestamp", TS),
            ("paragraph_idx", pa.int32()),
            ("text", pa.string()),
            ("mentions", pa.list_(RESOLVED_MENTION)),
        ),
        write_mode="replace_partition",
        partition_by=("snapshot", "window"),
        producers=("passages",),
        consumers=("align", "curate", "select", "validate", "release"),
        description="New paragraphs of each window with mentions resolved to QIDs.",
    )
)

INSTANCES = _register(
    TableSpec(
        name="instances",
        schema=_schema(
            ("snapshot", pa.string()),
            ("window", pa.int32()),
            ("passage_id", pa.string()),
            ("op", pa.string()),  # X, E, EE, EE-KG, D
            ("s", pa.string()),
            ("p", pa.string()),
            ("o", pa.string()),
            ("signal", pa.string()),  # D only: removed, rank, qualifier:Pxxx
            ("s_label", pa.string()),
            ("p_label", pa.string()),
            ("o_label", pa.string()),
            ("emerging_head", pa.bool_()),
            ("emerging_tail", pa.bool_()),
            ("head_created_at", TS),
            ("tail_created_at", TS),
            ("lifespan_from", TS),
            ("lifespan_to", TS),
            ("qualifier_pid", pa.string()),
            ("qualifier_label", pa.string()),
            ("qualifier_at", TS),
            # wikipedia_intersection | emerging | all: which of the authors' deltas finds it
            # first (NULL for X)
            ("source_delta_type", pa.string()),
        ),
        write_mode="replace_partition",
        partition_by=("snapshot", "window"),
        producers=("align",),
        consumers=("curate", "select", "validate", "release"),
        released=True,
        description=(
            "(snapshot, window, passage, op, s, p, o): the benchmark's instances, with the "
            "labels, creation times, lifespan and qualifier the release prints."
        ),
    )
)

VERDICTS = _register(
    TableSpec(
        name="verdicts",
        schema=_schema(
            ("snapshot", pa.string()),
            ("window", pa.int32()),
            ("passage_id", pa.string()),
            ("s", pa.string()),
            ("p", pa.string()),
            ("o", pa.string()),
            ("prompt_type", pa.string()),  # triple_assertion | triple_deprecation
            ("judge", pa.string()),  # the route: additions | deprecations
            ("llm_name", pa.string()),  # the configured name the release records
            ("served_model", pa.string()),
            ("prompt_sha", pa.string()),  # the prompt text's identity (one request)
            ("verdict", pa.string()),  # YES | NO | UNPARSED
            ("explanation", pa.string()),
            ("raw_answer", pa.string()),
            ("tokens_in", pa.int64()),
            ("tokens_out", pa.int64()),
            ("latency_s", pa.float64()),
            ("attempts", pa.int32()),
            ("answered_at", TS),
        ),
        write_mode="merge",
        key=("snapshot", "window", "passage_id", "s", "p", "o", "llm_name", "prompt_type",
             "prompt_sha"),
        partition_by=("snapshot",),
        producers=("curate",),
        consumers=("curate", "select", "validate", "release"),
        description=(
            "LLM verdicts per instance triple, model and prompt (one request per passage, "
            "prompt type and model), written as answers arrive: a rerun asks only what is "
            "not answered yet."
        ),
    )
)


SELECTION = _register(
    TableSpec(
        name="selection",
        schema=_schema(
            ("snapshot", pa.string()),
            ("window", pa.int32()),
            ("passage_id", pa.string()),
            ("kept", pa.bool_()),  # false: a near-duplicate of ``duplicate_of``
            ("duplicate_of", pa.string()),
            ("jaccard", pa.float64()),  # with duplicate_of: token-set Jaccard
            ("edit_distance", pa.float64()),  # with duplicate_of: Levenshtein / (len1 + len2)
            ("rank", pa.int32()),  # 1 = the passage kept first (most supported triples)
            ("evaluation_set", pa.bool_()),  # drawn into the test split
        ),
        write_mode="replace_partition",
        partition_by=("snapshot", "window"),
        producers=("select",),
        consumers=("validate", "release"),
        description=(
            "Every release line's fate: kept or a near-duplicate of which kept passage "
            "(with the two similarities), and whether the seeded stratified test split "
            "drew it."
        ),
    )
)

VALIDATION_RESULTS = _register(
    TableSpec(
        name="validation_results",
        schema=_schema(
            ("snapshot", pa.string()),
            ("suite", pa.string()),  # the table (or view) checked
            ("expectation", pa.string()),  # a readable name of the check
            ("success", pa.bool_()),
            ("raised", pa.bool_()),  # the check itself failed on this engine (a gate error)
            ("unexpected_count", pa.int64()),
            ("observed", pa.string()),  # JSON: observed value or a few unexpected rows
            ("fingerprints", pa.string()),  # JSON: table → a fingerprint of the rows checked
            ("validated_at", TS),
        ),
        write_mode="replace_partition",
        partition_by=("snapshot",),
        producers=("validate",),
        consumers=("release",),
        description=(
            "The Great Expectations results of a snapshot's tables at the versions they "
            "were checked at: the release publishes only what passed, at those versions."
        ),
    )
)


def spec(name: str) -> TableSpec:
    try:
        return TABLES[name]
    except KeyError:
        raise CatalogError(f"no table named {name!r}; known: {sorted(TABLES)}") from None


def _sql_literal(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, datetime | date):
        return f"'{value.isoformat()}'"
    text = str(value).replace("'", "''")
    return f"'{text}'"


def partition_predicate(partition: Mapping[str, Any]) -> str:
    """``{"snapshot": "2024-01-01", "window": 2}`` → ``snapshot = '2024-01-01' AND window = 2``."""
    return " AND ".join(f"`{k}` = {_sql_literal(v)}" for k, v in partition.items())


def _lost_commit_race(exc: BaseException) -> bool:
    """Did a Delta commit fail because another writer committed first?

    Sail 0.7 reports it as ``Failed to commit transaction: <version>`` (measured with four
    writers replacing four partitions of one table at once; delta-spark says
    ``ConcurrentAppendException`` and friends). Nothing of the failed write is visible, so
    running the same idempotent write again is safe.
    """
    text = str(exc)
    return any(marker in text for marker in _CONFLICT_MARKERS)


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
    ) -> None:
        self.warehouse = str(warehouse).rstrip("/")
        self.spark = spark
        self.storage_options = dict(storage_options or {})
        self.commit_attempts = max(1, commit_attempts)
        self._scratch: list[str] = []

    @classmethod
    def for_config(cls, cfg: Config, spark: SparkSession | None = None) -> Catalog:
        """The configuration's warehouse, with its S3 settings for reads through deltalake."""
        options = cfg.s3.storage_options() if "://" in cfg.warehouse else None
        return cls(cfg.warehouse, spark, storage_options=options)

    # -- locations ---------------------------------------------------------------------------
    def path(self, name: str) -> str:
        spec(name)
        if "://" in self.warehouse:
            return f"{self.warehouse}/{name}"
        return str(Path(self.warehouse).resolve() / name)

    def exists(self, name: str) -> bool:
        from deltalake import DeltaTable

        return DeltaTable.is_deltatable(self.path(name), storage_options=self.storage_options)

    def session(self) -> SparkSession:
        """The Spark session stages run on (reads via deltalake need none)."""
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
        return reader.load(self.path(name))

    def _delta(self, name: str, version: int | None = None) -> DeltaTable:
        from deltalake import DeltaTable

        return DeltaTable(self.path(name), version=version, storage_options=self.storage_options)

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
        # deltalake's own to_pyarrow_table, but single-threaded: its file system handler on
        # pyarrow's thread pool aborts the interpreter at exit ("terminate called without an
        # active exception", deltalake 1.6.6, pyarrow 26) when a process exits soon after a
        # threaded read, as a CLI does (tests/test_catalog.py)
        return self._delta(name, version).to_pyarrow_dataset().to_table(
            columns=columns, filter=expression, use_threads=False)

    def dataset(self, name: str, version: int | None = None,
                pruning: list[tuple[str, str, Any]] | None = None) -> Any:
        """A pyarrow dataset of the table at ``version`` (for streaming reads), or None."""
        if not self.exists(name):
            return None
        return self._delta(name, version).to_pyarrow_dataset(file_pruning_predicate=pruning)

    def partition_digest(self, name: str, version: int | None, snapshot: str) -> str | None:
        """A fingerprint of one snapshot's rows of a table at ``version``: the Delta data
        files holding them. Any rewrite of those rows adds new files, while writes to other
        snapshots leave it as it is, so a check made on a snapshot stays valid until that
        snapshot's own rows change. None when the table does not exist."""
        import hashlib

        if version is None or not self.exists(name):
            return None
        files = self._delta(name, version).file_uris(
            file_pruning_predicate=[("snapshot", "=", snapshot)])
        names = sorted(f.rsplit("/", 1)[-1] for f in files)
        return hashlib.sha256("\n".join(names).encode()).hexdigest()[:16]

    def version(self, name: str) -> int | None:
        if not self.exists(name):
            return None
        return self._delta(name).version()

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
        return dt.to_pyarrow_dataset().count_rows()  # footers only

    # -- writes ------------------------------------------------------------------------------
    def _writable(self, name: str, *modes: WriteMode) -> TableSpec:
        s = spec(name)
        if s.write_mode not in modes:
            raise CatalogError(
                f"table {name} is written by {s.write_mode}, not by {' or '.join(modes)}"
            )
        return s

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

    def materialize(self, df: DataFrame) -> DataFrame:
        """Run df's plan once into a scratch Delta table and read it back.

        Sail does not cache, so a guarded write (check, count, write) would otherwise run
        a stage's whole query three times. The folder is removed by the next guarded
        write's cleanup (or ``clean_scratch``), after that write has read it.
        """
        import uuid

        folder = f"{self.warehouse}/_scratch/{uuid.uuid4().hex}"
        if "://" not in folder:
            folder = str(Path(folder).resolve())
        # a scratch Delta table, not Parquet: Parquet renames list elements ("element"),
        # which Sail's replaceWhere union then refuses next to the table's own files
        df.write.format("delta").mode("overwrite").save(folder)
        self._scratch.append(folder)
        return self.session().read.format("delta").load(folder)

    def clean_scratch(self) -> None:
        """Remove scratch folders of earlier guarded writes (their data is committed)."""
        import shutil

        from pyarrow import fs as pafs

        for folder in self._scratch:
            if "://" in folder:
                filesystem, path = pafs.FileSystem.from_uri(folder)
                filesystem.delete_dir_contents(path, missing_dir_ok=True)
            else:
                shutil.rmtree(folder, ignore_errors=True)
        self._scratch.clear()

    def _committed(self, name: str, write: Callable[[], T]) -> T:
        """Run one Delta commit; when a concurrent writer won the race, run it again after a
        jittered, growing pause (bounded by ``commit_attempts``)."""
        pause = 0.05
        for attempt in range(1, self.commit_attempts + 1):
            try:
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

    def _create_or(self, name: str, df: DataFrame, write: Callable[[], None]) -> None:
        """Create the table from df when it does not exist yet, else ``write``; one commit."""
        s = spec(name)

        def commit() -> None:
            if self.exists(name):
                write()
                return
            writer = df.write.format("delta").mode("append")
            if s.partition_by:
                writer = writer.partitionBy(*s.partition_by)
            writer.save(self.path(name))

        self._committed(name, commit)

    def overwrite(self, name: str, df: DataFrame) -> None:
        """Replace the whole table in one Delta transaction (derived tables only)."""
        s = self._writable(name, "overwrite")
        df = self.conform(name, df)

        def write() -> None:
            writer = df.write.format("delta").mode("overwrite").option("overwriteSchema", "true")
            if s.partition_by:
                writer = writer.partitionBy(*s.partition_by)
            writer.save(self.path(name))

        self._committed(name, write)

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
        return self._replace_where(name, df, predicate, predicate, list(partition)).total

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
        listed = ", ".join(_sql_literal(v) for v in values)
        inside = " AND ".join(
            [partition_predicate(fixed), f"`{column}` IN ({listed})"] if fixed
            else [f"`{column}` IN ({listed})"]
        )
        if clear_others and not fixed:
            raise CatalogError(f"table {name}: clear_others needs fixed partition values")
        replace = partition_predicate(fixed) if clear_others else inside
        counts = dict.fromkeys(values, 0)
        counts.update(self._replace_where(name, df, inside, replace, [column], count_by=column)
                      .by_value)
        return counts

    def _replace_where(
        self, name: str, df: DataFrame, inside: str, replace: str, not_null: list[str],
        count_by: str | None = None,
    ) -> WriteResult:
        """The guarded write behind both replace methods: every row must satisfy
        ``inside`` (checked before anything is written), then ``replace`` is replaced by
        the rows in one transaction."""
        s = spec(name)
        df = self.materialize(self.conform(name, df))
        try:
            nulls = " OR ".join(f"`{c}` IS NULL" for c in not_null)
            bad = df.filter(f"NOT ({inside}) OR ({nulls})").limit(5).collect()
            if bad:
                raise CatalogError(
                    f"table {name}: {len(bad)}+ rows fall outside the partition(s) {inside}, "
                    f"e.g. {bad[0].asDict()}; nothing was written"
                )
            if count_by is None:
                result = WriteResult(total=df.count())
            else:
                by_value = {r[count_by]: r["count"]
                            for r in df.groupBy(count_by).count().collect()}
                result = WriteResult(total=sum(by_value.values()), by_value=by_value)

            def write() -> None:
                (
                    df.write.format("delta")
                    .mode("overwrite")
                    .option("replaceWhere", replace)
                    .partitionBy(*s.partition_by)
                    .save(self.path(name))
                )

            self._create_or(name, df, write)
        finally:
            self.clean_scratch()
        log.debug("%s: replaced %s with %d rows", name, replace, result.total)
        return result

    def merge(self, name: str, df: DataFrame) -> int:
        """MERGE INTO on the table's key: update matched rows, insert the others.

        Duplicate keys in df are refused (MERGE would be ambiguous); an empty df commits
        nothing. The partition columns join the match, so the engine can prune files.
        Returns the number of source rows.
        """
        s = self._writable(name, "merge")
        df = self.conform(name, df)
        stats = df.groupBy(*s.key).count()
        dup = stats.filter("count > 1").limit(1).collect()
        if dup:
            raise CatalogError(f"table {name}: duplicate merge key in the new rows: {dup[0]}")
        rows = df.count()
        if not rows:
            return 0
        keys = list(dict.fromkeys([*s.partition_by, *s.key]))
        on = " AND ".join(f"t.`{k}` <=> s.`{k}`" for k in keys)

        def write() -> None:
            self._sql(
                f"MERGE INTO delta.`{self.path(name)}` AS t USING {{src}} AS s ON {on} "
                "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *",
                src=df,
            )

        self._create_or(name, df, write)
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
        self._committed(name, lambda: self._sql(
            f"MERGE INTO delta.`{self.path(name)}` AS t USING {{keys}} AS k ON {match} "
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
        self._committed(name, lambda: self._sql(
            f"MERGE INTO delta.`{self.path(name)}` AS t USING {{src}} AS s ON {on} "
            f"WHEN MATCHED THEN UPDATE SET {sets}", src=updates))

    def _sql(self, query: str, **frames: DataFrame) -> None:
        """Run a command naming frames as ``{name}`` query arguments (never session-wide
        view names, which a later call could rebind). Sail runs a command when issued."""
        self.session().sql(query, **frames)


@dataclass(frozen=True)
class WriteResult:
    """Rows a replace wrote: in total, and per value of the listed partition column."""

    total: int
    by_value: dict[Any, int] = field(default_factory=dict)
