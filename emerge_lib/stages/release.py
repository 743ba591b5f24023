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

The JSONL lines follow the authors' instance format (``emerge_lib.release_format``: field
names, nesting, operation names, date-only dates) so their tooling reads ours, but with
clean passage text, exact offsets and true UTC timestamps. Output is a pure function of the tables: lines are sorted by ``hash_id``,
triples by (s, p, o), keys are in a fixed order and the JSON encoding is fixed, so a
rebuild gives byte-identical files. Every file is written under a temporary name and
renamed, so a crash never leaves a half-written file under a release name.

Work is streamed per (snapshot, window) for the JSONL and per record batch for Parquet:
no step holds more than one window's passages and instances in memory.
"""

from __future__ import annotations

import json
import logging
import os
from collections import Counter, defaultdict
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow.compute as pc
import pyarrow.parquet as pq

from emerge_lib.config import CurationSettings, PassageSettings
from emerge_lib.curation.rules import asserted_operations
from emerge_lib.errors import EmergeError
from emerge_lib.manifest import MANIFEST, code_version, config_hash, write_manifest
from emerge_lib.release_format import (  # noqa: F401  (the format, re-exported)
    MENTION_FIELDS,
    OP_NAMES,
    QUALIFIER_FIELDS,
    RELEASE_FIELDS,
    TRIPLE_FIELDS,
    FormatError,
    delta_file_name,
    dumps_line,
    hash_id,
    llm_assessment_entry,
    passage_record,
    snapshot_dir_name,
)
from emerge_lib.schedule import SnapshotPlan
from emerge_lib.tables import TABLES, Catalog, spec

log = logging.getLogger(__name__)

KG_SNAPSHOT_TABLES = ("kg_triples", "entities", "relations")
LISTING = "release.json"
#: What a release reads: its JSONL sources and the released tables (TableSpec.released).
RELEASE_READS = ("instances", "passages", "verdicts", "ingested_files", *KG_SNAPSHOT_TABLES)
assert {n for n, s in TABLES.items() if s.released} <= set(RELEASE_READS)
JSON_SEPARATORS = (",", ":")

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
    manifest: dict[str, Any] = field(default_factory=dict)  # manifest.json as written

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


def _curation(catalog: Catalog, snapshot: str, window: int, version: int | None,
              instances: list[dict[str, Any]], passages: list[dict[str, Any]],
              settings: CurationSettings, passage_settings: PassageSettings,
              ) -> dict[str, dict[tuple[str, str, str], tuple[list[dict[str, Any]], list[str] | None]]]:
    """passage_id → (s, p, o) → (llm_assessment elements, asserted op codes), from the
    verdicts (the latest answer per model and prompt type); empty when nothing is curated.

    A configured model's verdict counts only for the prompt the instance has now: after a
    rebuild changed a passage or a label, its old answer is about another text and stays
    out until ``curate`` asks again. Verdicts of other models (an earlier assessor) are
    kept as they are."""
    rows = _window_rows(catalog, "verdicts", snapshot, window, version)
    if not rows:
        return {}
    from emerge_lib.stages.curate import plan_requests

    current = {(r.llm_name, r.sha) for r in
               plan_requests(settings, passage_settings, instances, passages)}
    configured = {settings.additions.name, settings.deprecations.name}
    rows = [r for r in rows
            if r["llm_name"] not in configured or (r["llm_name"], r["prompt_sha"]) in current]
    latest: dict[tuple, dict[str, Any]] = {}
    for r in sorted(rows, key=lambda r: r["answered_at"]):
        latest[(r["passage_id"], r["s"], r["p"], r["o"], r["llm_name"], r["prompt_type"])] = r
    entries: dict[tuple, list[dict[str, Any]]] = defaultdict(list)
    said: dict[tuple, dict[tuple[str, str], bool | None]] = defaultdict(dict)
    for (pid, s, p, o, name, kind), r in sorted(latest.items()):
        entries[(pid, s, p, o)].append(llm_assessment_entry(name, kind, r["verdict"], r["explanation"]))
        said[(pid, s, p, o)][(name, kind)] = (None if r["verdict"] not in ("YES", "NO")
                                              else r["verdict"] == "YES")
    ops: dict[tuple, list[str]] = defaultdict(list)
    qualified: dict[tuple, bool] = defaultdict(bool)
    for r in instances:
        key = (r["passage_id"], r["s"], r["p"], r["o"])
        ops[key].append(r["op"])
        qualified[key] |= r["op"] == "D" and (r.get("signal") or "").startswith("qualifier:")
    out: dict[str, dict] = defaultdict(dict)
    for key, op_list in ops.items():
        asserted = asserted_operations(settings, op_list, qualified[key], said.get(key, {}))
        out[key[0]][key[1:]] = (entries.get(key, []), asserted)
    return out


def _write_window(
    catalog: Catalog,
    path: Path,
    snapshot: str,
    window: int,
    window_days: float,
    passage_settings: PassageSettings,
    summary: ReleaseSummary,
    curation_settings: CurationSettings,
) -> int:
    """Write one window's JSONL; returns its number of lines."""
    by_passage: dict[str, list[dict[str, Any]]] = defaultdict(list)
    versions = summary.versions
    instances = _window_rows(catalog, "instances", snapshot, window, versions["instances"])
    for r in instances:
        by_passage[r["passage_id"]].append(r)
    passages = {
        p["passage_id"]: p
        for p in _window_rows(catalog, "passages", snapshot, window, versions["passages"])
        if p["passage_id"] in by_passage
    }
    curated = _curation(catalog, snapshot, window, versions["verdicts"], instances,
                        list(passages.values()), curation_settings, passage_settings)
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
            try:
                record = passage_record(p, rows, snapshot, window, window_days,
                                        passage_settings.title_prefix,
                                        curated.get(pid))
            except FormatError as exc:
                raise ReleaseError(str(exc)) from None
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
    curation: CurationSettings,
    dataset_settings: Mapping[str, Any] | None = None,
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
                              settings, summary, curation)
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
    summary.removed = _remove_stale(out, {*summary.files, MANIFEST})
    listing = {"snapshots": keys, "files": summary.files[:-1], "versions": summary.versions,
               "lines": summary.lines, "parquet_rows": summary.parquet_rows,
               "ops": dict(sorted(summary.ops.items())),
               "orphan_instances": summary.orphan_instances,
               "anchor_mismatches": summary.anchor_mismatches}
    with _atomic(out / LISTING) as tmp:
        tmp.write_text(json.dumps(listing, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    if summary.removed:
        log.info("release: removed %d stale files of an earlier release", len(summary.removed))
    summary.manifest = write_manifest(out, summary.files, meta=_manifest_meta(
        catalog, summary, dataset_settings or {}))
    return summary


def _manifest_meta(catalog: Catalog, summary: ReleaseSummary,
                   dataset_settings: Mapping[str, Any]) -> dict[str, Any]:
    """What made the release: the dump files (with their sha1), the Delta versions read,
    the dataset-defining settings and their hash, the code version."""
    version = summary.versions.get("ingested_files")
    dumps = [] if version is None else sorted(
        ({"wiki": r["wiki"], "dump_date": r["dump_date"], "file": r["dump_file"],
          "bytes": r["bytes"], "sha1": r["sha1"]}
         for r in catalog.read_arrow("ingested_files", version=version).to_pylist()),
        key=lambda d: (d["wiki"], d["dump_date"], d["file"]))
    return {"code_version": code_version(), "delta_versions": summary.versions,
            "settings": dict(dataset_settings), "settings_sha256": config_hash(dataset_settings),
            "dumps": dumps}
