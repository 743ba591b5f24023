"""Every Delta table declared once: name, schema, partitioning, write mode, producers,
consumers, whether it is released (``TableSpec``), and the Arrow → Spark type mapping.

``producers`` and ``consumers`` name stages of the registry (``emerge_lib.pipeline``); a
test checks that they agree with what each stage declares it reads and writes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import pyarrow as pa

from emerge_lib.core.errors import EmergeError

WriteMode = Literal["replace_partition", "merge", "overwrite"]
TS = pa.timestamp("us", tz="UTC")


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
        producers=("ingest_wikidata", "reconcile"),
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
        producers=("ingest_wikidata", "reconcile"),
        consumers=("stability", "snapshot", "deltas", "passages", "align"),
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
        producers=("ingest_wikidata", "reconcile"),
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
        producers=("ingest_wikidata", "ingest_wikipedia", "reconcile"),
        consumers=("ingest_wikidata", "ingest_wikipedia", "passages", "reconcile"),
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
        consumers=("ingest_wikidata", "ingest_wikipedia", "snapshot", "passages", "release",
                   "reconcile"),
        description="One row per ingested dump file with counts, rejects, timing and its sha1.",
    )
)

DUMP_PAGES = _register(
    TableSpec(
        name="dump_pages",
        schema=_schema(
            ("wiki", pa.string()),
            ("dump_date", pa.string()),
            ("dump_file", pa.string()),
            ("id_from", pa.int64()),  # a run of consecutive page ids the file holds
            ("id_to", pa.int64()),
        ),
        write_mode="merge",
        key=("wiki", "dump_file", "id_from"),
        partition_by=("wiki",),
        producers=("ingest_wikidata", "ingest_wikipedia"),
        consumers=("ingest_wikidata", "ingest_wikipedia"),
        description=("The ids of every <page> of each ingested dump file, skipped ones "
                     "included, as runs: what a newer complete full dump lacks is gone."),
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

RECONCILED_PAGES = _register(
    TableSpec(
        name="reconciled_pages",
        schema=_schema(
            ("wiki", pa.string()),
            # the logitem that decided it (its last delete/restore); a full dump's absent
            # page: -(page_id * 10^8 + dump date)
            ("log_id", pa.int64()),
            ("title", pa.string()),  # logtitle
            ("page_id", pa.int64()),  # NULL: the warehouse holds no page of that title
            # deleted (rows removed) | needs_full_dump (kept) | absent_from_full_dump (removed)
            ("action", pa.string()),
            ("log_action", pa.string()),  # type/action: delete/delete, delete/restore
            ("timestamp", TS),
            ("dump_date", pa.string()),  # of the logging dump
            ("dump_file", pa.string()),
        ),
        write_mode="merge",
        key=("wiki", "log_id"),
        partition_by=("wiki",),
        producers=("reconcile", "ingest_wikidata", "ingest_wikipedia"),
        consumers=("reconcile", "ingest_wikidata", "ingest_wikipedia"),
        description=(
            "What a logging dump (or a newer complete full dump: log_id < 0) changed in "
            "pages continued from daily increments or older full dumps: a page "
            "deleted (its rows removed from every timeline) or restored (kept; its old "
            "revisions only come with the next full dump)."
        ),
    )
)

RECONCILED_LOGS = _register(
    TableSpec(
        name="reconciled_logs",
        schema=_schema(
            ("wiki", pa.string()),
            ("dump_date", pa.string()),  # events before this day are reconciled
            ("dump_file", pa.string()),
            ("sha1", pa.string()),
            ("events", pa.int64()),  # delete, restore and move events after the full dump
            ("deleted", pa.int64()),  # pages whose rows the reconciliation removed
            ("needs_full_dump", pa.int64()),  # restored pages, kept until a full dump
            ("moves", pa.int64()),  # moves: their null revisions already told the timelines
            ("unmatched", pa.int64()),  # deletions of titles the warehouse does not hold
        ),
        write_mode="merge",
        key=("wiki", "dump_file"),
        partition_by=("wiki",),
        producers=("reconcile", "ingest_wikidata", "ingest_wikipedia"),
        consumers=("reconcile", "release", "ingest_wikidata", "ingest_wikipedia"),
        description=(
            "One row per logging dump, or newer complete full dump, reconciled (written "
            "last): up to which day each "
            "wiki's deletions and restorations are known (the provisional rule)."
        ),
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
        producers=("ingest_wikipedia", "reconcile"),
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
        producers=("ingest_wikipedia", "reconcile"),
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
        consumers=("align", "validate", "release"),
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
        consumers=("align", "curate", "select", "final_judge", "validate", "release"),
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
        consumers=("curate", "select", "final_judge", "validate", "release"),
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
            # the route: additions | deprecations; final: asked by the final judge
            ("judge", pa.string()),
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
            ("ask_round", pa.int32()),  # the prompt's ask this answer came from (1: first)
            ("replaced", pa.string()),  # JSON: the answer it replaced and why (NULL: none)
        ),
        write_mode="merge",
        key=("snapshot", "window", "passage_id", "s", "p", "o", "llm_name", "prompt_type",
             "prompt_sha"),
        partition_by=("snapshot",),
        producers=("curate", "final_judge"),
        consumers=("curate", "select", "final_judge", "validate", "release"),
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
            ("kept", pa.bool_()),  # false: left out (``reason`` says why)
            ("duplicate_of", pa.string()),
            ("jaccard", pa.float64()),  # with duplicate_of: token-set Jaccard
            ("edit_distance", pa.float64()),  # with duplicate_of: Levenshtein / (len1 + len2)
            ("rank", pa.int32()),  # 1 = the passage kept first (most supported triples)
            ("evaluation_set", pa.bool_()),  # drawn into the test split
            # why not kept: duplicate (of duplicate_of), unsupported (no delta triple its
            # judges asserted), guard:… (s07's structural checks); NULL when kept
            ("reason", pa.string()),
        ),
        write_mode="replace_partition",
        partition_by=("snapshot", "window"),
        producers=("select",),
        consumers=("final_judge", "validate", "release"),
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
            # critical: a failure blocks the release; warning: reported, blocks nothing (NULL
            # in rows an earlier version wrote: critical)
            ("severity", pa.string()),
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
