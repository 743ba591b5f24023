"""The release lines as typed Parquet: one explicit Arrow schema, and the writer that fills it.

The JSONL lines (``emerge_lib.formats.format``) stay the authors' format byte for byte;
beside them the release writes the same lines as Parquet with the schema below, so that
``datasets.load_dataset(RELEASE)``, the Hub's viewer, DuckDB and pandas read typed columns
without inferring anything. Type inference is what breaks on these lines: ``qualifier_info``
is ``{}`` or a dict, ``triple_lifespan_date`` holds nulls, ``llm_assessment`` is a list of
dicts whose verdict may be null, and ``predictions`` is a free-form object keyed by model.

How each JSON value becomes a typed one (and nothing else changes):

- every ``*_date`` (``"2019-01-09"``) is a ``date32``; ``revision_date``
  (``"2019-01-04T22:43:24Z"``) and every ``*_timestamp`` (Unix seconds) are
  ``timestamp[us, UTC]`` holding the same instant (for the authors' files that instant is
  their Paris-local reading, as in their JSON: docs/data-model.md);
- ``qualifier_info``: ``{}`` (no qualifier) is null, a qualifier is a struct;
- ``predictions`` (model name → that model's output, whose shape is the model's) is its
  JSON text, ``"{}"`` for ours; a line without the key (the authors' annotation files) null;
- our extra keys (``passage_id``, ``window``, ``paragraph_offset``, ``deprecation_signal``,
  ``asserted_operations``) are null on lines that lack them.

A key this schema does not know, or a value of the wrong kind, stops the writer with a
:class:`~emerge_lib.formats.format.FormatError` naming the line and the field: nothing is
dropped silently. Pure (pyarrow and the standard library): the writer, the tests and a
reader of the authors' files use it without the catalog.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from emerge_lib.formats.format import (
    HUMAN_ASSESSMENT_FIELDS,
    JSON_SEPARATORS,
    LLM_ASSESSMENT_FIELDS,
    MENTION_FIELDS,
    QUALIFIER_FIELDS,
    RELEASE_FIELDS,
    TRIPLE_FIELDS,
    FormatError,
)

TIMESTAMP = pa.timestamp("us", tz="UTC")  # the catalog's timestamps too
STRINGS = pa.list_(pa.string())

MENTION = pa.struct([
    ("mention_text", pa.string()),
    ("target_entity", pa.string()),
    ("start_char", pa.int64()),
    ("end_char", pa.int64()),
    ("qid", pa.string()),
])
LLM_ASSESSMENT = pa.struct([
    ("llm_name", pa.string()),
    ("llm_assessment", pa.bool_()),  # null: the answer did not parse (ours only)
    ("llm_prompt_type", pa.string()),
    ("llm_prompt", pa.string()),
])
HUMAN_ASSESSMENT = pa.struct([
    ("annotator_name", pa.string()),
    ("prompt_type", pa.string()),
    ("assessment", pa.bool_()),
    ("human_readable_triple", pa.string()),
    ("definition_relation", pa.string()),
])
QUALIFIER = pa.struct([
    ("qualifier_qid", pa.string()),
    ("qualifier_label", pa.string()),
    ("qualifier_date", pa.date32()),
    ("qualifier_timestamp", TIMESTAMP),
])
TRIPLE = pa.struct([
    ("triple", STRINGS),
    ("triple_labels", STRINGS),
    ("tkgu_operations", STRINGS),
    ("emerging_head", pa.bool_()),
    ("emerging_tail", pa.bool_()),
    ("head_creation_date", pa.date32()),
    ("head_creation_timestamp", TIMESTAMP),
    ("tail_creation_date", pa.date32()),
    ("tail_creation_timestamp", TIMESTAMP),
    ("triple_lifespan_date", pa.list_(pa.date32())),  # [from, to]; to null while open
    ("triple_lifespan_timestamp", pa.list_(TIMESTAMP)),
    ("llm_assessment", pa.list_(LLM_ASSESSMENT)),
    ("human_assessment", pa.list_(HUMAN_ASSESSMENT)),
    ("source_delta_type", pa.string()),  # null on x-triples (the key is absent there)
    ("qualifier_info", QUALIFIER),  # null: no qualifier (``{}`` in the JSONL)
    # ours, beyond the authors' format
    ("deprecation_signal", pa.string()),
    ("asserted_operations", STRINGS),
])

#: One release line: the authors' fields in their order, then ours.
LINE_SCHEMA = pa.schema([
    pa.field("hash_id", pa.string(), nullable=False),
    ("passage", pa.string()),
    ("mentions", pa.list_(MENTION)),
    ("revision_id", pa.int64()),
    ("revision_date", TIMESTAMP),
    ("revision_timestamp", TIMESTAMP),
    ("anchor_title", pa.string()),
    ("anchor_page_id", pa.int64()),
    ("anchor_page_qid", pa.string()),
    ("paragraph_idx", pa.int64()),
    ("delta_dates", pa.list_(pa.date32())),  # [t, τ_k]
    ("delta_timestamps", pa.list_(TIMESTAMP)),
    ("tkgu_triples", pa.list_(TRIPLE)),
    ("predictions", pa.string()),  # JSON text of the object (model name → its output)
    # ours, beyond the authors' format
    ("passage_id", pa.string()),
    ("window", pa.int32()),
    ("paragraph_offset", pa.int32()),
])
#: One TKGU triple of a line, a row of its own (``tkgu_triples`` unnested): the line's id,
#: its snapshot and window (from ``delta_dates`` and ``window``), the triple's position in
#: the line, then the triple's fields. DuckDB, pandas and Croissant read these without
#: unnesting (mlcroissant reads one level of nesting: ``llm_assessment`` here, not inside
#: ``tkgu_triples``).
TRIPLE_ROW_SCHEMA = pa.schema([
    pa.field("hash_id", pa.string(), nullable=False),
    ("snapshot", pa.date32()),  # t: delta_dates[0]
    ("delta_end", pa.date32()),  # τ_k: delta_dates[1]
    ("window", pa.int32()),
    ("passage_id", pa.string()),
    ("triple_index", pa.int32()),  # its position in the line's tkgu_triples
    *TRIPLE,
])
#: One KG triple of a line's context: its ends and relation with their labels (null where
#: V_t or R_t has none) and how many hops from the line's entities it lies.
CONTEXT_TRIPLE = pa.struct([
    ("s", pa.string()), ("p", pa.string()), ("o", pa.string()),
    ("s_label", pa.string()), ("p_label", pa.string()), ("o_label", pa.string()),
    ("hop", pa.int32()),
])
#: A corpus line's k-hop context in its snapshot's KG (``parquet/context/``): the entities
#: it starts from (its article's and its mentions' QIDs), the triples of T_t within
#: ``hops`` of them (at most the configured cap, nearest first, then by s, p, o), and how
#: many there were before the cap.
CONTEXT_SCHEMA = pa.schema([
    pa.field("hash_id", pa.string(), nullable=False),
    ("snapshot", pa.date32()),
    ("delta_end", pa.date32()),
    ("window", pa.int32()),
    ("seeds", STRINGS),
    ("hops", pa.int32()),
    ("context_triples", pa.list_(CONTEXT_TRIPLE)),
    ("context_total", pa.int64()),
    ("truncated", pa.bool_()),
])
#: R_t's prior: how many triples of T_t each relation has (``relation_priors.parquet``).
PRIORS_SCHEMA = pa.schema([
    ("snapshot", pa.date32()),
    ("pid", pa.string()),
    ("label", pa.string()),
    ("triples", pa.int64()),
    ("share", pa.float64()),
])
OUR_LINE_FIELDS = ("passage_id", "window", "paragraph_offset")
OUR_TRIPLE_FIELDS = ("deprecation_signal", "asserted_operations")
assert LINE_SCHEMA.names == [*RELEASE_FIELDS, *OUR_LINE_FIELDS]
assert [f.name for f in TRIPLE] == [*TRIPLE_FIELDS, *OUR_TRIPLE_FIELDS]
assert [f.name for f in MENTION] == list(MENTION_FIELDS)
assert [f.name for f in QUALIFIER] == list(QUALIFIER_FIELDS)
assert [f.name for f in LLM_ASSESSMENT] == list(LLM_ASSESSMENT_FIELDS)
assert [f.name for f in HUMAN_ASSESSMENT] == list(HUMAN_ASSESSMENT_FIELDS)

COMPRESSION = "zstd"


# --- JSON value → typed value --------------------------------------------------------------
class _Bad(Exception):
    """A value that does not fit its field (the path is added on the way up)."""


def _date(value: Any) -> date | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise _Bad(f"expected a date string, got {value!r:.40}")
    try:
        return date.fromisoformat(value[:10]) if len(value) == 10 else \
            datetime.fromisoformat(value.replace("Z", "+00:00")).astimezone(UTC).date()
    except ValueError:
        raise _Bad(f"not an ISO 8601 date: {value!r:.40}") from None


def _instant(value: Any) -> datetime | None:
    if value is None:
        return None
    if isinstance(value, bool):
        raise _Bad(f"expected a timestamp, got {value!r}")
    if isinstance(value, int | float):
        return datetime.fromtimestamp(value, UTC)
    if isinstance(value, str):
        try:
            parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            raise _Bad(f"not an ISO 8601 instant: {value!r:.40}") from None
        return parsed.replace(tzinfo=UTC) if parsed.tzinfo is None else parsed.astimezone(UTC)
    raise _Bad(f"expected a timestamp, got {value!r:.40}")


def _value(value: Any, kind: pa.DataType) -> Any:
    """``value`` (as JSON gives it) as a Python value of the Arrow type ``kind``."""
    return _converter(kind)(value)


@functools.cache
def _converter(kind: pa.DataType) -> Callable[[Any], Any]:
    """The conversion to ``kind``, decided once per type (a release converts millions of
    values of a handful of types; asking ``pa.types`` what each one is cost most of it)."""
    if pa.types.is_struct(kind):
        fields = [(f.name, _converter(f.type)) for f in kind]
        names = frozenset(f.name for f in kind)
        empty_is_none = kind == QUALIFIER

        def struct(value: Any) -> Any:
            if value is None:
                return None
            if not isinstance(value, Mapping):
                raise _Bad(f"expected an object, got {value!r:.40}")
            if not value and empty_is_none:
                return None  # ``{}``: no qualifier
            if not names.issuperset(value):
                raise _Bad(f"unknown key {sorted(set(value) - names)[0]!r}")
            out = {}
            for name, convert in fields:
                try:
                    out[name] = convert(value.get(name))
                except _Bad as exc:
                    raise _Bad(f"{name}: {exc}") from None
            return out
        return struct
    if pa.types.is_list(kind):
        convert_item = _converter(kind.value_type)

        def items(value: Any) -> Any:
            if value is None:
                return None
            if not isinstance(value, list):
                raise _Bad(f"expected a list, got {value!r:.40}")
            out_list = []
            for i, item in enumerate(value):
                try:
                    out_list.append(convert_item(item))
                except _Bad as exc:
                    raise _Bad(f"[{i}]: {exc}") from None
            return out_list
        return items
    if pa.types.is_date32(kind):
        return _date
    if pa.types.is_timestamp(kind):
        return _instant
    if pa.types.is_boolean(kind):
        def boolean(value: Any) -> Any:
            if value is None or isinstance(value, bool):
                return value
            raise _Bad(f"expected true or false, got {value!r:.40}")
        return boolean
    if pa.types.is_integer(kind):
        def integer(value: Any) -> Any:
            if value is None or (isinstance(value, int) and not isinstance(value, bool)):
                return value
            raise _Bad(f"expected an integer, got {value!r:.40}")
        return integer
    if pa.types.is_string(kind):
        def string(value: Any) -> Any:
            if value is None or isinstance(value, str):
                return value
            raise _Bad(f"expected a string, got {value!r:.40}")
        return string

    def unknown(value: Any) -> Any:  # pragma: no cover (the schema has no other)
        if value is None:
            return None
        raise _Bad(f"no conversion to {kind}")
    return unknown


def line_row(record: Mapping[str, Any]) -> dict[str, Any]:
    """One JSONL line (parsed) as a row of :data:`LINE_SCHEMA`."""
    where = f"line {record.get('hash_id')!r}"
    unknown = sorted(set(record) - set(LINE_SCHEMA.names))
    if unknown:
        raise FormatError(f"{where}: field {unknown[0]!r} is not in the release schema "
                          "(emerge_lib/release/schema.py)")
    row: dict[str, Any] = {}
    for f in LINE_SCHEMA:
        value = record.get(f.name)
        if f.name == "predictions":
            row[f.name] = None if value is None else json.dumps(
                value, ensure_ascii=False, separators=JSON_SEPARATORS, sort_keys=True)
            continue
        try:
            row[f.name] = _value(value, f.type)
        except _Bad as exc:
            raise FormatError(f"{where}: {f.name}: {exc}") from None
    if row["hash_id"] is None:
        raise FormatError(f"{where}: no hash_id")
    return row


def lines_table(records: Iterable[Mapping[str, Any]]) -> pa.Table:
    """Parsed JSONL lines as one Arrow table of :data:`LINE_SCHEMA`."""
    return pa.Table.from_pylist([line_row(r) for r in records], schema=LINE_SCHEMA)


def triples_table(lines: pa.Table) -> pa.Table:
    """The triples of ``lines`` (a table of :data:`LINE_SCHEMA`), one row each, in line
    order and then in their order in the line: a table of :data:`TRIPLE_ROW_SCHEMA`."""
    lines = lines.combine_chunks()
    nested = lines.column("tkgu_triples").chunk(0) if lines.num_rows else \
        pa.array([], LINE_SCHEMA.field("tkgu_triples").type)
    parents = pc.list_parent_indices(nested)
    flat = pc.list_flatten(nested)
    starts = pc.take(nested.offsets, parents)
    position = pc.subtract(pa.array(range(len(flat)), pa.int64()), starts)
    dates = lines.column("delta_dates")
    columns = {
        "hash_id": pc.take(lines.column("hash_id"), parents),
        "snapshot": pc.take(pc.list_element(dates, 0), parents) if lines.num_rows else
        pa.array([], pa.date32()),
        "delta_end": pc.take(pc.list_element(dates, 1), parents) if lines.num_rows else
        pa.array([], pa.date32()),
        "window": pc.take(lines.column("window"), parents),
        "passage_id": pc.take(lines.column("passage_id"), parents),
        "triple_index": position.cast(pa.int32()),
    }
    children = flat.flatten() if len(flat) else [pa.array([], f.type) for f in TRIPLE]
    columns |= {f.name: child for f, child in zip(TRIPLE, children, strict=True)}
    return pa.Table.from_arrays([columns[name] for name in TRIPLE_ROW_SCHEMA.names],
                                schema=TRIPLE_ROW_SCHEMA)


#: ``snapshot`` in every table a release writes: the date of t, as ``delta_dates[0]`` of
#: the lines and ``snapshot`` of their triples; the catalog's tables hold t as its key,
#: the string ``2024-01-01T00:00:00Z`` (a partition column), converted where they leave it
SNAPSHOT_TYPE = pa.date32()


def release_schema(schema: pa.Schema) -> pa.Schema:
    """A catalog table's schema as the release writes it: ``snapshot`` a date."""
    i = schema.get_field_index("snapshot")
    if i < 0:
        return schema
    old = schema.field(i)
    return schema.set(i, pa.field("snapshot", SNAPSHOT_TYPE, old.nullable, old.metadata))


def dated_snapshot(table: pa.Table) -> pa.Table:
    """A catalog table's rows with ``snapshot`` (t's key, ``2024-01-01T00:00:00Z``, UTC)
    as the date of t, the type the release's lines and triples give it: the tables of a
    release then join on it. A ``snapshot`` already a date stays as it is."""
    import pyarrow.compute as pc

    i = table.schema.get_field_index("snapshot")
    if i < 0 or table.schema.field(i).type == SNAPSHOT_TYPE:
        return table
    day = pc.cast(pc.utf8_slice_codeunits(table["snapshot"], 0, 10), SNAPSHOT_TYPE)
    return table.set_column(i, release_schema(table.schema).field(i), day)


def write_table(path: str | Path, table: pa.Table) -> int:
    """Write ``table`` to one Parquet file (zstd, one row group, rows as given; the same
    rows give the same bytes); returns its rows. No rows: the schema and no row group
    (``datasets`` 5.2 reads a file without row groups as no rows, but fails on a row group
    of 0 rows: "BatchSize must be greater than 0")."""
    with pq.ParquetWriter(path, table.schema, compression=COMPRESSION) as writer:
        if table.num_rows:
            writer.write_table(table)
    return int(table.num_rows)


def write_lines(path: str | Path, records: Iterable[Mapping[str, Any]],
                triples_path: str | Path | None = None) -> pa.Table:
    """Write parsed JSONL lines to one Parquet file of :data:`LINE_SCHEMA` (and, with
    ``triples_path``, their triples to one of :data:`TRIPLE_ROW_SCHEMA`); returns the
    lines' table. The writer of the release and of the authors' lines alike."""
    table = lines_table(records)
    write_table(path, table)
    if triples_path is not None:
        write_table(triples_path, triples_table(table))
    return table


def read_jsonl(path: str | Path) -> list[dict[str, Any]]:
    """The parsed lines of a release JSONL file (blank lines skipped); a line that is not
    JSON is a FormatError naming the file and line number."""
    out = []
    with open(path, encoding="utf-8") as fh:
        for n, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                out.append(json.loads(line))
            except ValueError as exc:
                raise FormatError(f"{path}:{n}: not a JSON line: {exc}") from None
    return out


#: What every field means (dotted paths into nested fields), for the card's field list.
FIELD_DOCS: dict[str, str] = {
    "hash_id": "the line's stable id: sha256 of snapshot, window, page and paragraph (32 hex "
               "digits; the authors' files: 10 characters)",
    "passage": "the passage: \"Excerpt from the Wikipedia page describing {title}: \" and the "
               "clean paragraph",
    "mentions": "the resolved links of the passage (and the article's own title in the prefix)",
    "mentions.mention_text": "passage[start_char:end_char]",
    "mentions.target_entity": "the link target as written (underscores for spaces)",
    "mentions.start_char": "start offset in the passage (Unicode code points)",
    "mentions.end_char": "end offset, exclusive",
    "mentions.qid": "the Wikidata item of the target",
    "revision_id": "the Wikipedia revision the paragraph first appeared in",
    "revision_date": "that revision's time (UTC)",
    "revision_timestamp": "the same instant (the JSONL's Unix seconds)",
    "anchor_title": "the article's title",
    "anchor_page_id": "the article's page id",
    "anchor_page_qid": "the article's Wikidata item (null: none)",
    "paragraph_idx": "the paragraph's index in that revision",
    "delta_dates": "[t, τ_k]: the snapshot date and the window's end",
    "delta_timestamps": "the same two instants",
    "tkgu_triples": "the triples the passage is aligned to, with their operations",
    "tkgu_triples.triple": "[subject QID, property PID, object QID]",
    "tkgu_triples.triple_labels": "their English labels at τ_k",
    "tkgu_triples.tkgu_operations": "x-triples, e-triples, ee-triples, ee-kg-triples, "
                                    "d-triples (two for a two-operation triple)",
    "tkgu_triples.emerging_head": "the subject is an emerging entity",
    "tkgu_triples.emerging_tail": "the object is an emerging entity",
    "tkgu_triples.head_creation_date": "the subject item's creation (its first revision)",
    "tkgu_triples.head_creation_timestamp": "the same instant",
    "tkgu_triples.tail_creation_date": "the object item's creation",
    "tkgu_triples.tail_creation_timestamp": "the same instant",
    "tkgu_triples.triple_lifespan_date": "[from, to] of the triple's stable presence; to is "
                                         "null while it holds",
    "tkgu_triples.triple_lifespan_timestamp": "the same two instants",
    "tkgu_triples.llm_assessment": "one verdict per (model, prompt type) that judged the "
                                   "triple; empty when not curated",
    "tkgu_triples.llm_assessment.llm_name": "the judge's name",
    "tkgu_triples.llm_assessment.llm_assessment": "YES (true) or NO (false); null: the "
                                                  "answer did not parse",
    "tkgu_triples.llm_assessment.llm_prompt_type": "triple_assertion or triple_deprecation",
    "tkgu_triples.llm_assessment.llm_prompt": "the model's explanation (not the prompt)",
    "tkgu_triples.human_assessment": "human verdicts, where annotations were imported",
    "tkgu_triples.human_assessment.annotator_name": "who judged",
    "tkgu_triples.human_assessment.prompt_type": "triple_assertion or triple_deprecation",
    "tkgu_triples.human_assessment.assessment": "the verdict",
    "tkgu_triples.human_assessment.human_readable_triple": "the triple as shown to the "
                                                            "annotator",
    "tkgu_triples.human_assessment.definition_relation": "the property's description",
    "tkgu_triples.source_delta_type": "wikipedia_intersection, emerging or all: which delta "
                                      "finds the triple first (null on x-triples)",
    "tkgu_triples.qualifier_info": "the qualifier that dates the change (null: none)",
    "tkgu_triples.qualifier_info.qualifier_qid": "the qualifier's property (P582 end time, …)",
    "tkgu_triples.qualifier_info.qualifier_label": "its label",
    "tkgu_triples.qualifier_info.qualifier_date": "its date",
    "tkgu_triples.qualifier_info.qualifier_timestamp": "the same instant",
    "tkgu_triples.deprecation_signal": "ours: why D (removed, rank, qualifier:Pxxx); null "
                                       "when not D",
    "tkgu_triples.asserted_operations": "ours: the gold: the operations the final judge "
                                        "said YES to (else every required judge); null "
                                        "when not curated or a verdict is missing",
    "predictions": "model outputs keyed by model name, as JSON text (\"{}\" in ours)",
    "passage_id": "ours: the paragraph's text hash",
    "window": "ours: k, the window's number (1 = the first week)",
    "paragraph_offset": "ours: where the clean paragraph starts in passage",
    "snapshot": "t, the snapshot date (delta_dates[0])",
    "delta_end": "τ_k, the window's end (delta_dates[1])",
    "triple_index": "the triple's position in its line's tkgu_triples",
}


def field_rows(schema: pa.Schema, prefix: str = "") -> list[tuple[str, str, str]]:
    """(dotted name, Arrow type, meaning) of every field of ``schema``, nested ones after
    their parent; a field of the triple rows documents as its ``tkgu_triples.`` twin."""
    out = []

    def visit(name: str, kind: pa.DataType) -> None:
        doc = FIELD_DOCS.get(name) or FIELD_DOCS.get(f"tkgu_triples.{name}", "")
        out.append((name, str(kind), doc))
        inner = kind.value_type if pa.types.is_list(kind) else kind
        if pa.types.is_struct(inner):
            for child in inner:
                visit(f"{name}.{child.name}", child.type)

    for f in schema:
        visit(prefix + f.name, f.type)
    return out
