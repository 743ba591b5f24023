"""passages + instances (+ every table) → the EMERGE release on disk.

Layout under the output folder::

    snapshot_YYYY-MM-DD/delta_YYYY-MM-DD.jsonl   one file per window, named by τ_k's date
    snapshot_YYYY-MM-DD/kg_triples.parquet       G_t: T_t, V_t, R_t of that snapshot
    snapshot_YYYY-MM-DD/entities.parquet
    snapshot_YYYY-MM-DD/relations.parquet
    parquet/<table>.parquet                      every catalog table that exists

The JSONL lines follow the authors' instance format (field names, nesting, operation
names) so their tooling reads ours, but with clean passage text, exact offsets and UTC
timestamps. Output is a pure function of the tables: lines are sorted by ``hash_id``,
triples by (s, p, o), keys are in a fixed order and the JSON encoding is fixed, so a
rebuild gives byte-identical files. Every file is written under a temporary name and
renamed, so a crash never leaves a half-written file under a release name.

Work is streamed per (snapshot, window) for the JSONL and per record batch for Parquet:
no step holds more than one window's passages and instances in memory.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from collections import Counter, defaultdict
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from emerge_lib.schedule import as_utc, iso, unix_seconds, window_end
from emerge_lib.tables import TABLES, Catalog, spec

log = logging.getLogger(__name__)

#: Catalog op code → the authors' release name, in the order ``tkgu_operations`` lists them.
OP_NAMES: dict[str, str] = {
    "X": "x-triples",
    "E": "e-triples",
    "EE": "ee-triples",
    "EE-KG": "ee-kg-triples",
    "D": "d-triples",
}
EMERGING_OPS = frozenset({"EE", "EE-KG"})
TITLE_PREFIX = "Excerpt from the Wikipedia page describing {title}: "
PREFIX_HEAD = "Excerpt from the Wikipedia page describing "
KG_SNAPSHOT_TABLES = ("kg_triples", "entities", "relations")
JSON_SEPARATORS = (",", ":")

#: Every field of the authors' instance format (top level and per triple): a test and
#: the validate stage check that none is missing.
RELEASE_FIELDS = (
    "hash_id",
    "passage",
    "mentions",
    "revision_id",
    "revision_date",
    "revision_timestamp",
    "anchor_title",
    "anchor_page_id",
    "anchor_page_qid",
    "paragraph_idx",
    "delta_dates",
    "delta_timestamps",
    "tkgu_triples",
    "predictions",
)
MENTION_FIELDS = ("mention_text", "target_entity", "start_char", "end_char", "qid")
TRIPLE_FIELDS = (
    "triple",
    "triple_labels",
    "tkgu_operations",
    "emerging_head",
    "emerging_tail",
    "head_creation_date",
    "head_creation_timestamp",
    "tail_creation_date",
    "tail_creation_timestamp",
    "triple_lifespan_date",
    "triple_lifespan_timestamp",
    "llm_assessment",
    "source_delta_type",
    "qualifier_info",
)
QUALIFIER_FIELDS = ("qualifier_qid", "qualifier_label", "qualifier_date", "qualifier_timestamp")


class ReleaseError(RuntimeError):
    """Input that must not be published as is (bad offsets, unknown op, name clashes)."""


@dataclass
class ReleaseSummary:
    """What a release wrote: paths are relative to ``out_dir``."""

    out_dir: Path
    files: list[str] = field(default_factory=list)
    lines: dict[str, int] = field(default_factory=dict)  # JSONL file → lines (passages)
    ops: dict[str, int] = field(default_factory=dict)  # op code → instances released
    parquet_rows: dict[str, int] = field(default_factory=dict)  # Parquet file → rows
    orphan_instances: int = 0  # instances whose passage is missing from `passages`
    anchor_mismatches: int = 0  # mentions whose anchor differs from text[start:end]


# --- values ------------------------------------------------------------------------------


def canonical_snapshot(snapshot: datetime | str) -> str:
    """The catalog's snapshot key, ``2024-01-01T00:00:00Z``, from a datetime or any ISO form."""
    return iso(as_utc(snapshot))


def _date(ts: datetime | None) -> str | None:
    return None if ts is None else iso(ts)


def _seconds(ts: datetime | None) -> int | None:
    return None if ts is None else unix_seconds(ts)


def hash_id(snapshot: datetime | str, window: int, page_id: int, passage_id: str) -> str:
    """Stable line id: the same (snapshot, window, page, paragraph) always hashes the same."""
    key = f"{canonical_snapshot(snapshot)}|{int(window)}|{int(page_id)}|{passage_id}"
    return hashlib.sha256(key.encode("utf-8")).hexdigest()[:32]


def snapshot_dir_name(snapshot: datetime | str) -> str:
    return f"snapshot_{as_utc(snapshot):%Y-%m-%d}"


def delta_file_name(snapshot: datetime | str, window: int, window_days: float) -> str:
    return f"delta_{window_end(snapshot, window, window_days):%Y-%m-%d}.jsonl"


def dumps_line(record: Mapping[str, Any]) -> str:
    """One JSONL line: fixed separators, UTF-8 text, key order as built (fixed in code)."""
    return json.dumps(record, ensure_ascii=False, separators=JSON_SEPARATORS, allow_nan=False)


# --- records -----------------------------------------------------------------------------


def _mentions(passage_row: Mapping[str, Any], offset: int, passage: str) -> list[dict[str, Any]]:
    text = passage_row["text"]
    out: list[dict[str, Any]] = []
    for m in passage_row.get("mentions") or ():
        if m.get("qid") is None:
            continue  # unresolved links are not mentions of an entity
        start, end = m["start"], m["end"]
        if start is None or end is None or not 0 <= start <= end <= len(text):
            raise ReleaseError(
                f"passage {passage_row.get('passage_id')}: mention {m} lies outside its "
                f"text of {len(text)} characters"
            )
        out.append(
            {
                "mention_text": passage[offset + start : offset + end],
                "target_entity": m.get("target"),
                "start_char": offset + start,
                "end_char": offset + end,
                "qid": m["qid"],
            }
        )
    return out


def _qualifier_info(row: Mapping[str, Any]) -> dict[str, Any]:
    if row.get("qualifier_pid") is None:
        return {}
    return {
        "qualifier_qid": row["qualifier_pid"],
        "qualifier_label": row.get("qualifier_label"),
        "qualifier_date": _date(row.get("qualifier_at")),
        "qualifier_timestamp": _seconds(row.get("qualifier_at")),
    }


def _triple(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """One ``tkgu_triples`` entry from the instance rows of one (s, p, o)."""
    for r in rows:
        if r["op"] not in OP_NAMES:
            raise ReleaseError(f"unknown op {r['op']!r} for ({r['s']}, {r['p']}, {r['o']})")
    order = list(OP_NAMES)
    rows = sorted(rows, key=lambda r: order.index(r["op"]))
    first = rows[0]
    ops = list(dict.fromkeys(r["op"] for r in rows))
    qualified = next((r for r in rows if r.get("qualifier_pid") is not None), first)
    signal = next((r.get("signal") for r in rows if r["op"] == "D"), None)
    return {
        "triple": [first["s"], first["p"], first["o"]],
        "triple_labels": [first.get("s_label"), first.get("p_label"), first.get("o_label")],
        "tkgu_operations": [OP_NAMES[op] for op in ops],
        "emerging_head": bool(first.get("emerging_head")),
        "emerging_tail": bool(first.get("emerging_tail")),
        "head_creation_date": _date(first.get("head_created_at")),
        "head_creation_timestamp": _seconds(first.get("head_created_at")),
        "tail_creation_date": _date(first.get("tail_created_at")),
        "tail_creation_timestamp": _seconds(first.get("tail_created_at")),
        "triple_lifespan_date": [_date(first.get("lifespan_from")), _date(first.get("lifespan_to"))],
        "triple_lifespan_timestamp": [
            _seconds(first.get("lifespan_from")),
            _seconds(first.get("lifespan_to")),
        ],
        "llm_assessment": [],
        "source_delta_type": (
            "emerging" if EMERGING_OPS.intersection(ops) else "wikipedia_intersection"
        ),
        "qualifier_info": _qualifier_info(qualified),
        "deprecation_signal": signal,
    }


def passage_record(
    passage_row: Mapping[str, Any],
    instance_rows: Sequence[Mapping[str, Any]],
    snapshot: datetime | str,
    window: int,
    window_days: float = 7,
    title_prefix: bool = True,
) -> dict[str, Any]:
    """One release line: a passage with its instances grouped by (s, p, o).

    Pure (no I/O), so the format is testable field by field. With ``title_prefix`` the
    passage starts with the authors' "Excerpt from the Wikipedia page describing {title}: "
    and the article's own item is a mention at the title's offsets; mention offsets are
    shifted by the prefix so ``passage[start_char:end_char] == mention_text`` always.
    """
    title = passage_row["page_title"]
    text = passage_row["text"]
    prefix = TITLE_PREFIX.format(title=title) if title_prefix else ""
    passage = prefix + text
    mentions = _mentions(passage_row, len(prefix), passage)
    page_qid = passage_row.get("page_qid")
    if title_prefix and page_qid is not None:
        start = len(PREFIX_HEAD)
        mentions.append(
            {
                "mention_text": title,
                "target_entity": title,
                "start_char": start,
                "end_char": start + len(title),
                "qid": page_qid,
            }
        )
    mentions.sort(key=lambda m: (m["start_char"], m["end_char"], m["qid"], m["target_entity"] or ""))

    groups: dict[tuple[str, str, str], list[Mapping[str, Any]]] = defaultdict(list)
    for r in instance_rows:
        groups[(r["s"], r["p"], r["o"])].append(r)
    triples = [_triple(groups[key]) for key in sorted(groups)]

    t, end = as_utc(snapshot), window_end(snapshot, window, window_days)
    rev_ts = passage_row.get("rev_timestamp")
    return {
        "hash_id": hash_id(t, window, passage_row["page_id"], passage_row["passage_id"]),
        "passage": passage,
        "mentions": mentions,
        "revision_id": passage_row.get("rev_id"),
        "revision_date": _date(rev_ts),
        "revision_timestamp": _seconds(rev_ts),
        "anchor_title": title,
        "anchor_page_id": passage_row["page_id"],
        "anchor_page_qid": page_qid,
        "paragraph_idx": passage_row.get("paragraph_idx"),
        "delta_dates": [iso(t), iso(end)],
        "delta_timestamps": [unix_seconds(t), unix_seconds(end)],
        "tkgu_triples": triples,
        "predictions": {},
        # ours, beyond the authors' format
        "passage_id": passage_row["passage_id"],
        "window": int(window),
        "paragraph_offset": len(prefix),
    }


# --- files -------------------------------------------------------------------------------


@contextmanager
def _atomic(path: Path) -> Iterator[Path]:
    """Yield a temporary sibling of ``path``; rename it over ``path`` only on success."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    try:
        yield tmp
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def _window_rows(
    catalog: Catalog, name: str, snapshot: str, window: int
) -> list[dict[str, Any]]:
    filters = [("snapshot", "=", snapshot), ("window", "=", window)]
    return catalog.read_arrow(name, filters=filters).to_pylist()


def _write_window(
    catalog: Catalog,
    path: Path,
    snapshot: str,
    window: int,
    window_days: float,
    title_prefix: bool,
    summary: ReleaseSummary,
) -> int:
    """Write one window's JSONL; returns its number of lines."""
    by_passage: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in _window_rows(catalog, "instances", snapshot, window):
        by_passage[r["passage_id"]].append(r)
    passages = {
        p["passage_id"]: p
        for p in _window_rows(catalog, "passages", snapshot, window)
        if p["passage_id"] in by_passage
    }
    orphans = sum(len(rows) for pid, rows in by_passage.items() if pid not in passages)
    if orphans:
        log.warning("%s window %d: %d instances have no passage", snapshot, window, orphans)
        summary.orphan_instances += orphans
    keyed = sorted(
        (hash_id(snapshot, window, p["page_id"], pid), pid) for pid, p in passages.items()
    )
    ops: Counter[str] = Counter()
    with _atomic(path) as tmp, tmp.open("w", encoding="utf-8", newline="\n") as fh:
        for _, pid in keyed:
            p, rows = passages[pid], by_passage[pid]
            for m in p.get("mentions") or ():
                if m.get("qid") is not None and p["text"][m["start"] : m["end"]] != m["anchor"]:
                    summary.anchor_mismatches += 1
            record = passage_record(p, rows, snapshot, window, window_days, title_prefix)
            fh.write(dumps_line(record) + "\n")
            ops.update(r["op"] for r in rows)
    for op, n in ops.items():
        summary.ops[op] = summary.ops.get(op, 0) + n
    return len(keyed)


def _write_parquet(
    catalog: Catalog, name: str, path: Path, snapshots: Sequence[str] | None
) -> int:
    """Stream one table (optionally only some snapshots) into one Parquet file.

    Batches are cast to the catalog's declared schema, so a release's Parquet types do not
    depend on how the engine happened to write the Delta files.
    """
    from deltalake import DeltaTable

    schema = spec(name).schema
    rows = 0
    with _atomic(path) as tmp, pq.ParquetWriter(tmp, schema, compression="zstd") as writer:
        if catalog.exists(name):
            dt = DeltaTable(catalog.path(name), storage_options=catalog.storage_options)
            pruning = None
            row_filter = None
            if snapshots is not None:
                # prune files by partition, and filter rows too in case a table is unpartitioned
                pruning = [("snapshot", "in", list(snapshots))]
                row_filter = pc.field("snapshot").isin(list(snapshots))
            dataset = dt.to_pyarrow_dataset(file_pruning_predicate=pruning)
            for batch in dataset.to_batches(columns=schema.names, filter=row_filter):
                if batch.num_rows:
                    writer.write_table(pa.Table.from_batches([batch]).cast(schema))
                    rows += batch.num_rows
    return rows


def _per_snapshot(name: str) -> bool:
    return "snapshot" in spec(name).partition_by


def write_release(
    catalog: Catalog,
    out_dir: str | Path,
    snapshots: Sequence[datetime | str],
    window_count: int = 5,
    window_days: float = 7,
    title_prefix: bool = True,
) -> ReleaseSummary:
    """Write the release of ``snapshots`` (windows 1..window_count) under ``out_dir``.

    Every window gets a file, even one without instances (0 lines), so a reader can tell
    "nothing aligned" from "not released". Rerunning over the same tables rewrites
    byte-identical JSONL files.
    """
    if window_count < 1:
        raise ReleaseError(f"window_count must be >= 1, got {window_count}")
    out = Path(out_dir)
    summary = ReleaseSummary(out_dir=out)
    keys = sorted({canonical_snapshot(s) for s in snapshots})
    dirs = [snapshot_dir_name(s) for s in keys]
    if len(set(dirs)) != len(dirs):
        raise ReleaseError(f"two snapshots share a release folder (one per day): {keys}")

    for snap, folder in zip(keys, dirs, strict=True):
        names = [delta_file_name(snap, k, window_days) for k in range(1, window_count + 1)]
        if len(set(names)) != len(names):
            raise ReleaseError(
                f"windows of {window_days} days give two files with the same end date: {names}"
            )
        for k, fname in enumerate(names, start=1):
            rel = f"{folder}/{fname}"
            n = _write_window(catalog, out / rel, snap, k, window_days, title_prefix, summary)
            summary.files.append(rel)
            summary.lines[rel] = n
            log.info("release: %s, %d passages", rel, n)
        for name in KG_SNAPSHOT_TABLES:
            rel = f"{folder}/{name}.parquet"
            summary.parquet_rows[rel] = _write_parquet(catalog, name, out / rel, [snap])
            summary.files.append(rel)

    for name in sorted(TABLES):
        if not catalog.exists(name):
            continue
        rel = f"parquet/{name}.parquet"
        only = keys if _per_snapshot(name) else None
        summary.parquet_rows[rel] = _write_parquet(catalog, name, out / rel, only)
        summary.files.append(rel)
    return summary
