"""passages + instances + the KG snapshots → the EMERGE release on disk.

Layout under the output folder::

    snapshot_YYYY-MM-DD/delta_YYYY-MM-DD.jsonl   one file per window, named by τ_k's date
    snapshot_YYYY-MM-DD/kg_triples.parquet       G_t: T_t, V_t, R_t of that snapshot
    snapshot_YYYY-MM-DD/entities.parquet
    snapshot_YYYY-MM-DD/relations.parquet
    parquet/instances.parquet                    the released snapshots' instances
    release.json                                 the files, snapshots and Delta versions read

Only what is released is written (``TableSpec.released``): the internal timelines stay in
the warehouse. Every table is read at the Delta version it had when the release started
(recorded in release.json), so a writer working meanwhile cannot mix two states into one
release; files an earlier release left here that this one does not write are removed.

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

import pyarrow.compute as pc
import pyarrow.parquet as pq

from emerge_lib.config import PassageSettings
from emerge_lib.errors import EmergeError
from emerge_lib.schedule import SnapshotPlan, as_utc, iso, unix_seconds, window_end
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
PREFIX_HEAD = TITLE_PREFIX.split("{title}")[0]
KG_SNAPSHOT_TABLES = ("kg_triples", "entities", "relations")
LISTING = "release.json"
#: What a release reads: its JSONL sources and the released tables (TableSpec.released).
RELEASE_READS = ("instances", "passages", *KG_SNAPSHOT_TABLES)
assert {n for n, s in TABLES.items() if s.released} <= set(RELEASE_READS)
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


class ReleaseError(EmergeError):
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
    versions: dict[str, int | None] = field(default_factory=dict)  # Delta versions read
    removed: list[str] = field(default_factory=list)  # stale files of an earlier release

    def rows(self) -> dict[str, int]:
        """Released rows: instances (over the JSONL files), passages (lines), Parquet rows."""
        out = {"instances": sum(self.ops.values()), "passages": sum(self.lines.values())}
        for rel, n in self.parquet_rows.items():
            name = rel.rsplit("/", 1)[-1].removesuffix(".parquet")
            if name in KG_SNAPSHOT_TABLES:
                out[name] = out.get(name, 0) + n
        return out

    def __str__(self) -> str:
        return (f"release {self.out_dir}: {len(self.files)} files, "
                f"{sum(self.lines.values())} passages, {sum(self.ops.values())} instances")


# --- values ------------------------------------------------------------------------------


def _date(ts: datetime | None) -> str | None:
    return None if ts is None else iso(ts)


def _seconds(ts: datetime | None) -> int | None:
    return None if ts is None else unix_seconds(ts)


def hash_id(snapshot: datetime | str, window: int, page_id: int, passage_id: str) -> str:
    """Stable line id: the same (snapshot, window, page, paragraph) always hashes the same."""
    key = f"{iso(snapshot)}|{int(window)}|{int(page_id)}|{passage_id}"
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
    catalog: Catalog, name: str, snapshot: str, window: int, version: int | None
) -> list[dict[str, Any]]:
    if version is None:
        return []
    filters = [("snapshot", "=", snapshot), ("window", "=", window)]
    return catalog.read_arrow(name, filters=filters, version=version).to_pylist()


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
    versions = summary.versions
    for r in _window_rows(catalog, "instances", snapshot, window, versions["instances"]):
        by_passage[r["passage_id"]].append(r)
    passages = {
        p["passage_id"]: p
        for p in _window_rows(catalog, "passages", snapshot, window, versions["passages"])
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


#: Each released table's row order: a rebuild, on any engine or partitioning, writes the
#: same bytes.
RELEASE_ORDER: dict[str, tuple[str, ...]] = {
    "kg_triples": ("snapshot", "s", "p", "o"),
    "entities": ("snapshot", "qid"),
    "relations": ("snapshot", "pid"),
    "instances": ("snapshot", "window", "passage_id", "op", "s", "p", "o"),
}


def _write_parquet(
    catalog: Catalog, name: str, path: Path, snapshots: Sequence[str], version: int | None
) -> int:
    """Write one table's rows of ``snapshots`` (at a pinned version) into one Parquet file,
    one snapshot at a time, each sorted (``RELEASE_ORDER``).

    Batches are cast to the catalog's declared schema, so a release's Parquet types do not
    depend on how the engine happened to write the Delta files.
    """
    schema = spec(name).schema
    order = [(c, "ascending") for c in RELEASE_ORDER[name]]
    rows = 0
    with _atomic(path) as tmp, pq.ParquetWriter(tmp, schema, compression="zstd") as writer:
        for snap in sorted(snapshots) if version is not None else ():
            # prune files by partition, and filter rows too in case a table is unpartitioned
            dataset = catalog.dataset(name, version, [("snapshot", "=", snap)])
            table = dataset.to_table(columns=schema.names, filter=pc.field("snapshot") == snap)
            if table.num_rows:
                writer.write_table(table.cast(schema).sort_by(order))
                rows += table.num_rows
    return rows


def _ours(rel: str) -> bool:
    """Is this release-relative path one a release writes (and may therefore remove)?"""
    parts = rel.split("/")
    if parts == [LISTING]:
        return True
    if len(parts) != 2:
        return False
    folder, name = parts
    if folder == "parquet":
        return name.endswith(".parquet") and name.removesuffix(".parquet") in TABLES
    return folder.startswith("snapshot_") and (
        (name.startswith("delta_") and name.endswith(".jsonl"))
        or name.removesuffix(".parquet") in KG_SNAPSHOT_TABLES and name.endswith(".parquet"))


def _remove_stale(out: Path, keep: set[str]) -> list[str]:
    """Delete the release files in ``out`` this release did not write (an earlier release's
    windows, snapshots or tables), then the folders left empty."""
    removed = []
    if not out.is_dir():
        return removed
    for path in sorted(out.glob("*/*")) + sorted(out.glob("*")):
        rel = path.relative_to(out).as_posix()
        if path.is_file() and _ours(rel) and rel not in keep:
            path.unlink()
            removed.append(rel)
    for folder in out.iterdir():
        if folder.is_dir() and (folder.name == "parquet" or folder.name.startswith("snapshot_")) \
                and not any(folder.iterdir()):
            folder.rmdir()
    return removed


def write_release(
    catalog: Catalog,
    out_dir: str | Path,
    plans: Sequence[SnapshotPlan],
    settings: PassageSettings,
) -> ReleaseSummary:
    """Write the release of the snapshots of ``plans`` (each with its windows) under
    ``out_dir``.

    Every window gets a file, even one without instances (0 lines), so a reader can tell
    "nothing aligned" from "not released". Rerunning over the same tables rewrites
    byte-identical files.
    """
    out = Path(out_dir)
    summary = ReleaseSummary(out_dir=out)
    summary.versions = {name: catalog.version(name) for name in RELEASE_READS}
    by_key = {p.key: p for p in plans}
    keys = sorted(by_key)
    dirs = [snapshot_dir_name(s) for s in keys]
    if len(set(dirs)) != len(dirs):
        raise ReleaseError(f"two snapshots share a release folder (one per day): {keys}")

    for snap, folder in zip(keys, dirs, strict=True):
        plan = by_key[snap]
        names = [delta_file_name(snap, w.k, plan.window_days) for w in plan.windows]
        if len(set(names)) != len(names):
            raise ReleaseError(
                f"windows of {plan.window_days} days give two files with the same end date: "
                f"{names}"
            )
        for w, fname in zip(plan.windows, names, strict=True):
            rel = f"{folder}/{fname}"
            n = _write_window(catalog, out / rel, snap, w.k, plan.window_days,
                              settings.title_prefix, summary)
            summary.files.append(rel)
            summary.lines[rel] = n
            log.debug("release: %s, %d passages", rel, n)
        for name in KG_SNAPSHOT_TABLES:
            rel = f"{folder}/{name}.parquet"
            summary.parquet_rows[rel] = _write_parquet(catalog, name, out / rel, [snap],
                                                       summary.versions[name])
            summary.files.append(rel)

    for name in sorted(n for n, s in TABLES.items() if s.released and n not in KG_SNAPSHOT_TABLES):
        rel = f"parquet/{name}.parquet"
        summary.parquet_rows[rel] = _write_parquet(catalog, name, out / rel, keys,
                                                   summary.versions[name])
        summary.files.append(rel)
    summary.files.append(LISTING)
    summary.removed = _remove_stale(out, set(summary.files))
    listing = {"snapshots": keys, "files": summary.files[:-1], "versions": summary.versions,
               "lines": summary.lines, "parquet_rows": summary.parquet_rows,
               "ops": dict(sorted(summary.ops.items())),
               "orphan_instances": summary.orphan_instances,
               "anchor_mismatches": summary.anchor_mismatches}
    with _atomic(out / LISTING) as tmp:
        tmp.write_text(json.dumps(listing, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    if summary.removed:
        log.info("release: removed %d stale files of an earlier release", len(summary.removed))
    return summary
