"""passages + instances + the KG snapshots → the EMERGE release on disk.

Layout under the output folder (the authors' folders, ``emerge_lib.release.format``)::

    corpus/snapshot_D/delta_D.jsonl            one file per window, named by τ_k's date
    evaluation_set/snapshot_D/delta_D.jsonl    the test split of that window
    kg_snapshots/kg_snapshot_D.tsv.gz          T_t as the authors' evaluator reads it
    kg_snapshots/snapshot_D/kg_triples.parquet G_t: T_t, V_t, R_t of that snapshot
    kg_snapshots/snapshot_D/entities.parquet
    kg_snapshots/snapshot_D/relations.parquet
    parquet/corpus/snapshot_D/delta_D.parquet  the corpus lines, typed (release.schema)
    parquet/evaluation_set/snapshot_D/…        the evaluation lines, typed
    parquet/triples/snapshot_D/delta_D.parquet the corpus lines' triples, a row each
    parquet/instances.parquet                  the released snapshots' instances
    release.json                               the files, snapshots, lines and operations
    croissant.json, README.md, card.html       Croissant, the Hub's card (they state the
                                               version: written after it is known)

Only what is released is written (``TableSpec.released``): the internal timelines stay in
the warehouse. Every table is read at the Delta version it had when the release started,
so a writer working meanwhile cannot mix two states into one release; those versions are
logged and returned (``ReleaseSummary.versions``), not written: a rerun that rewrites the
same rows makes new Delta versions, and the release's bytes (hence its manifest version)
must not change with them. Files an earlier release left here that this one does not
write are removed.

Order: the data files, the validation results, the card's statistics and plots and
release.json; then the version (the hash of those, ``manifest.content_version``);
croissant.json, checked by mlcroissant when validation is on (``check_croissant``: one
that does not hold fails the release); the card's text; the manifest last.

The JSONL lines follow the authors' instance format (``emerge_lib.release.format``: field
names, nesting, operation names, date-only dates) so their tooling reads ours, but with
clean passage text, exact offsets and true UTC timestamps. Output is a pure function of the tables: lines are sorted by ``hash_id``,
triples by (s, p, o), keys are in a fixed order and the JSON encoding is fixed, so a
rebuild gives byte-identical files. The whole release is written into a folder beside
the output (``.NAME.writing``) and swapped into place at the end (one atomic exchange of
the two folders where the kernel has ``renameat2``, else two renames), so no reader ever
sees a mixed release: a kill or a full disk at any point leaves the old release or the
new one. Files of the old folder that no release writes (the user's own) are carried over.

Work is streamed per (snapshot, window) for the JSONL and per record batch for Parquet:
no step holds more than one window's passages and instances in memory.
"""

from __future__ import annotations

import ctypes
import errno
import gzip
import hashlib
import json
import logging
import os
import shutil
from collections import Counter, defaultdict
from collections.abc import Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from emerge_lib.catalog import TABLES, Catalog, spec
from emerge_lib.core.config import CurationSettings, PassageSettings, ValidationSettings
from emerge_lib.core.errors import EmergeError
from emerge_lib.core.schedule import SnapshotPlan
from emerge_lib.curation.verdicts import assessments
from emerge_lib.release.card import CARD, CARD_HTML, PLOTS, CardFacts
from emerge_lib.release.card import prepare as prepare_card
from emerge_lib.release.card import render as render_card
from emerge_lib.release.croissant import CROISSANT, write_croissant
from emerge_lib.release.format import (
    AGREEMENT,
    CORPUS,
    EVALUATION_SET,
    HUMAN_ANNOTATION,
    KG_SNAPSHOTS,
    PARQUET,
    PARQUET_TRIPLES,
    PARQUET_TWINS,
    FormatError,
    corpus_path,
    delta_file_name,
    dumps_line,
    evaluation_path,
    hash_id,
    kg_parquet_path,
    kg_tsv_path,
    parquet_twin,
    passage_record,
    snapshot_dir_name,
    table_parquet_path,
)
from emerge_lib.release.manifest import (
    MANIFEST,
    SELF_DESCRIBING,
    code_version,
    config_hash,
    content_version,
    file_entries,
    write_manifest,
)
from emerge_lib.release.schema import lines_table, triples_table, write_table

log = logging.getLogger(__name__)

KG_SNAPSHOT_TABLES = ("kg_triples", "entities", "relations")
LISTING = "release.json"
VALIDATION = "validation"

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
    left_out: dict[str, int] = field(default_factory=dict)  # reason → lines (selection)
    evaluation_lines: int = 0  # lines of evaluation_set/
    validation: dict[str, Any] = field(default_factory=dict)  # the manifest's verdict
    card: list[dict[str, Any]] = field(default_factory=list)  # the card's table rows

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
    catalog: Catalog, name: str, snapshot: str, window: int, version: int | None,
    passage_ids: Sequence[str] | None = None,
) -> list[dict[str, Any]]:
    """A window's rows of a table as Python rows (only those of ``passage_ids``, when
    given: a window's passages are mostly without instances, and converting every one
    of them to Python cost more than the rest of the window)."""
    if version is None:
        return []
    filters: list[tuple[str, str, Any]] = [("snapshot", "=", snapshot), ("window", "=", window)]
    if passage_ids is not None:
        if not passage_ids:
            return []
        filters.append(("passage_id", "in", list(passage_ids)))
    return catalog.read_arrow(name, filters=filters, version=version).to_pylist()


def _selection(catalog: Catalog, snapshot: str, window: int, version: int | None
               ) -> dict[str, tuple[bool, bool, str | None]] | None:
    """passage_id → (kept, in the evaluation set, why left out); None when the window was
    not selected (no ``select`` run): then every line is kept and none is drawn."""
    rows = _window_rows(catalog, "selection", snapshot, window, version)
    return {r["passage_id"]: (r["kept"], r["evaluation_set"], r.get("reason"))
            for r in rows} or None


def _write_window(
    catalog: Catalog,
    out: Path,
    rels: tuple[str, str | None],
    snapshot: str,
    window: int,
    window_days: float,
    passage_settings: PassageSettings,
    summary: ReleaseSummary,
    curation_settings: CurationSettings,
    records: list[tuple[str, dict[str, Any]]] | None,
) -> tuple[int, int]:
    """Write one window's corpus JSONL (the kept lines) and, when the window was selected,
    its evaluation-set JSONL, each with its typed Parquet twin (and the corpus lines'
    triples, a row each: ``emerge_lib.release.schema``); returns their numbers of lines.
    ``records`` collects what was written (for the release suites), when given."""
    by_passage: dict[str, list[dict[str, Any]]] = defaultdict(list)
    versions = summary.versions
    instances = _window_rows(catalog, "instances", snapshot, window, versions["instances"])
    for r in instances:
        by_passage[r["passage_id"]].append(r)
    passages = {
        p["passage_id"]: p
        for p in _window_rows(catalog, "passages", snapshot, window, versions["passages"],
                              sorted(by_passage))
    }
    curated = assessments(catalog, snapshot, window, versions["verdicts"], instances,
                          list(passages.values()), curation_settings, passage_settings)
    orphans = sum(len(rows) for pid, rows in by_passage.items() if pid not in passages)
    if orphans:
        log.warning("%s window %d: %d instances have no passage", snapshot, window, orphans)
        summary.orphan_instances += orphans
    selected = _selection(catalog, snapshot, window, versions["selection"])
    fates = {pid: (selected or {}).get(pid, (True, False, None)) for pid in passages}
    for kept, _, reason in fates.values():
        if not kept:
            why = (reason or "duplicate").split(":")[0]  # no reason: an older selection
            summary.left_out[why] = summary.left_out.get(why, 0) + 1
    keyed = sorted(
        (hash_id(snapshot, window, p["page_id"], pid), pid) for pid, p in passages.items()
        if fates[pid][0]
    )
    corpus_rel, eval_rel = rels
    corpus_path, eval_path = out / corpus_rel, out / eval_rel if eval_rel else None
    kept: list[dict[str, Any]] = []
    chosen: list[dict[str, Any]] = []
    ops: Counter[str] = Counter()
    drawn = 0
    with ExitStack() as stack:
        fh = stack.enter_context(stack.enter_context(_atomic(corpus_path)).open(
            "w", encoding="utf-8", newline="\n"))
        eval_fh = None
        if eval_path is not None:
            eval_fh = stack.enter_context(stack.enter_context(_atomic(eval_path)).open(
                "w", encoding="utf-8", newline="\n"))
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
            line = dumps_line(record) + "\n"
            fh.write(line)
            kept.append(record)
            if records is not None:
                records.append((corpus_path.name, record))
            if eval_fh is not None and fates[pid][1]:
                eval_fh.write(line)
                chosen.append(record)
                drawn += 1
            ops.update(r["op"] for r in rows)
    try:
        twins = [(corpus_rel, kept), *([(eval_rel, chosen)] if eval_rel else [])]
        for rel, lines in twins:
            table = _write_lines_parquet(out, parquet_twin(rel), lines)
            summary.files.append(parquet_twin(rel))
            summary.parquet_rows[parquet_twin(rel)] = table.num_rows
            if rel == corpus_rel:
                triples = parquet_twin(rel, PARQUET_TRIPLES)
                with _atomic(out / triples) as tmp:
                    summary.parquet_rows[triples] = write_table(tmp, triples_table(table))
                summary.files.append(triples)
    except FormatError as exc:
        raise ReleaseError(str(exc)) from None
    for op, n in ops.items():
        summary.ops[op] = summary.ops.get(op, 0) + n
    return len(keyed), drawn


def _write_lines_parquet(out: Path, rel: str, lines: list[dict[str, Any]]) -> pa.Table:
    with _atomic(out / rel) as tmp:
        table = lines_table(lines)
        write_table(tmp, table)
    return table


#: Each released table's row order: a rebuild, on any engine or partitioning, writes the
#: same bytes.
RELEASE_ORDER: dict[str, tuple[str, ...]] = {
    "kg_triples": ("snapshot", "s", "p", "o"),
    "entities": ("snapshot", "qid"),
    "relations": ("snapshot", "pid"),
    "instances": ("snapshot", "window", "passage_id", "op", "s", "p", "o"),
}


def _write_parquet(
    catalog: Catalog, name: str, path: Path, snapshots: Sequence[str], version: int | None,
    dropped: Mapping[str, set[str]] | None = None,
) -> int:
    """Write one table's rows of ``snapshots`` (at a pinned version) into one Parquet file,
    one snapshot at a time, each sorted (``RELEASE_ORDER``); rows of the passages in
    ``dropped`` (snapshot → ``window:passage_id``, near-duplicates) are left out, so the
    Parquet holds what the JSONL holds.

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
            table = dataset.to_table(columns=schema.names, filter=pc.field("snapshot") == snap,
                                     use_threads=False)  # see Catalog.read_arrow
            left_out = (dropped or {}).get(snap)
            if left_out and table.num_rows:
                key = pc.binary_join_element_wise(pc.cast(table["window"], "string"),
                                                  table["passage_id"], ":")
                table = table.filter(pc.invert(pc.is_in(key, value_set=pa.array(
                    sorted(left_out)))))
            if table.num_rows:
                writer.write_table(table.cast(schema).sort_by(order))
                rows += table.num_rows
    return rows


def _write_kg_tsv(catalog: Catalog, path: Path, snapshot: str, version: int | None) -> int:
    """T_t as the authors' KG snapshot file: ``head<TAB>relation<TAB>tail`` per line
    (their s03_get_kg_snapshot.py "triples_only" output, which their evaluator reads for
    relik-cie), sorted, gzip-compressed with no name and no time in its header (the same
    rows give the same bytes)."""
    rows = 0
    with _atomic(path) as tmp, open(tmp, "wb") as raw, \
            gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0, compresslevel=6) as gz:
        if version is not None:
            dataset = catalog.dataset("kg_triples", version, [("snapshot", "=", snapshot)])
            table = dataset.to_table(columns=["s", "p", "o"],
                                     filter=pc.field("snapshot") == snapshot,
                                     use_threads=False)
            table = table.sort_by([("s", "ascending"), ("p", "ascending"), ("o", "ascending")])
            for batch in table.to_batches(max_chunksize=65536):
                s, p, o = (batch.column(i).to_pylist() for i in range(3))
                gz.write("".join(f"{a}\t{b}\t{c}\n" for a, b, c in zip(s, p, o, strict=True))
                         .encode("utf-8"))
                rows += batch.num_rows
    return rows


def _dropped(catalog: Catalog, snapshots: Sequence[str], version: int | None
             ) -> dict[str, set[str]]:
    """snapshot → ``window:passage_id`` of the near-duplicate lines the release leaves out."""
    if version is None:
        return {}
    out: dict[str, set[str]] = defaultdict(set)
    for r in catalog.read_arrow("selection", filters=[("kept", "=", False)],
                                columns=["snapshot", "window", "passage_id"],
                                version=version).to_pylist():
        if r["snapshot"] in snapshots:
            out[r["snapshot"]].add(f"{r['window']}:{r['passage_id']}")
    return out


def _ours(rel: str) -> bool:
    """Is this release-relative path one a release writes (and may therefore remove)?
    (``human_annotation/`` is not: it is the annotators', carried over as it is.)"""
    parts = rel.split("/")
    if parts in ([LISTING], [CARD], [CARD_HTML], [CROISSANT]) or parts[0] == VALIDATION:
        return True
    if len(parts) == 4 and parts[0] == PARQUET:  # parquet/<kind>/snapshot_D/delta_D.parquet
        twins = {folder for folders in PARQUET_TWINS.values() for folder in folders}
        return f"{parts[0]}/{parts[1]}" in twins and parts[2].startswith("snapshot_") and \
            parts[3].startswith("delta_") and parts[3].endswith(".parquet")
    if len(parts) == 2:
        folder, name = parts
        if folder == PARQUET:
            return name.endswith(".parquet") and name.removesuffix(".parquet") in TABLES
        if folder == PLOTS:
            return name.endswith(".png")
        return folder == KG_SNAPSHOTS and name.startswith("kg_snapshot_") and \
            name.endswith(".tsv.gz")
    if len(parts) != 3 or not parts[1].startswith("snapshot_"):
        return False
    top, _, name = parts
    if top in (CORPUS, EVALUATION_SET):
        return name.startswith("delta_") and name.endswith(".jsonl")
    return top == KG_SNAPSHOTS and name.endswith(".parquet") and \
        name.removesuffix(".parquet") in KG_SNAPSHOT_TABLES


def _stale(old: Path, keep: set[str]) -> list[str]:
    """The release files of the old folder this release does not write (an earlier
    release's windows, snapshots, tables or validation pages): they go with the swap."""
    if not old.is_dir():
        return []
    return sorted(rel for path in old.rglob("*") if path.is_file()
                  and _ours(rel := path.relative_to(old).as_posix()) and rel not in keep)


def _carry_foreign(old: Path, new: Path) -> list[str]:
    """Hard-link (or copy) into ``new`` the files of ``old`` no release writes; returns
    those of the human annotation (``human_annotation/``, ``agreement/``), which the
    release validates, shows on its card and lists in its manifest (other foreign files
    are carried, not listed)."""
    if not old.is_dir():
        return []
    annotation = []
    for path in sorted(old.rglob("*")):
        rel = path.relative_to(old).as_posix()
        if not path.is_file() or _ours(rel) or rel == MANIFEST or (new / rel).exists():
            continue
        (new / rel).parent.mkdir(parents=True, exist_ok=True)
        try:
            os.link(path, new / rel)
        except OSError:
            shutil.copy2(path, new / rel)
        if rel.split("/", 1)[0] in (HUMAN_ANNOTATION, AGREEMENT) and \
                not path.name.startswith("."):
            annotation.append(rel)
    return annotation


_RENAME_EXCHANGE, _AT_FDCWD = 2, -100


def _exchange(a: Path, b: Path) -> bool:
    """Swap two folders in one atomic step (Linux renameat2); False where unsupported."""
    try:
        renameat2 = ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError):
        return False
    if renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP):
        return False
    raise OSError(code, os.strerror(code), str(b))


def _staging_of(out: Path) -> tuple[Path, Path]:
    return out.with_name(f".{out.name}.writing"), out.with_name(f".{out.name}.old")


def _recover(out: Path) -> None:
    """Undo what a kill between the two renames of the fallback swap left: the old
    release back under its name; a half-written new one thrown away."""
    staging, old = _staging_of(out)
    if old.is_dir() and not out.exists():
        os.rename(old, out)
    for leftover in (staging, old):
        if leftover.exists():
            shutil.rmtree(leftover)


def _swap_into_place(staging: Path, out: Path) -> None:
    _, old = _staging_of(out)
    if not out.exists():
        os.rename(staging, out)
    elif _exchange(staging, out):
        shutil.rmtree(staging)  # it holds the old release now
    else:
        os.rename(out, old)
        os.rename(staging, out)
        shutil.rmtree(old)


def write_release(
    catalog: Catalog,
    out_dir: str | Path,
    plans: Sequence[SnapshotPlan],
    settings: PassageSettings,
    curation: CurationSettings,
    validation: ValidationSettings,
    dataset_settings: Mapping[str, Any] | None = None,
    pinned: Sequence[str] = (),
) -> ReleaseSummary:
    """Write the release of the snapshots of ``plans`` (each with its windows) under
    ``out_dir``: the corpus, the evaluation set, the KG snapshots, the validation results,
    the dataset card and, last, the manifest, which pins the Delta version of each table of
    ``pinned`` (what the release stage reads).

    Every window gets a file, even one without instances (0 lines), so a reader can tell
    "nothing aligned" from "not released". Rerunning over the same tables rewrites
    byte-identical data files. With ``validation.enabled`` the release JSONL is checked
    (the release suites) and the manifest records whether every snapshot passed its table
    suites on exactly the rows released; a failure raises after the manifest is written
    (it says ``success: false``, so nothing publishes it).
    """
    final = Path(out_dir)
    _recover(final)
    out, _ = _staging_of(final)
    out.mkdir(parents=True)
    try:
        # first: the human annotation is validated, shown on the card and listed
        annotation = _carry_foreign(final, out)
        summary, report = _write_into(catalog, out, plans, settings, curation, validation,
                                      dataset_settings, pinned, annotation)
        summary.removed = _stale(final, set(summary.files))
        _swap_into_place(out, final)
    except BaseException:
        shutil.rmtree(out, ignore_errors=True)
        raise
    summary.out_dir = final
    if summary.removed:
        log.info("release: removed %d stale files of an earlier release", len(summary.removed))
    if report is not None:
        report.raise_for_failure()
    return summary


def _write_into(catalog: Catalog, out: Path, plans: Sequence[SnapshotPlan],
                settings: PassageSettings, curation: CurationSettings,
                validation: ValidationSettings, dataset_settings: Mapping[str, Any] | None,
                pinned: Sequence[str], annotation: Sequence[str] = ()
                ) -> tuple[ReleaseSummary, Any]:
    """Every file of the release in the fresh folder ``out`` (which holds the carried
    ``annotation`` files already), the manifest last."""
    summary = ReleaseSummary(out_dir=out)
    summary.versions = {name: catalog.version(name) for name in pinned}
    log.info("release reads %s", ", ".join(f"{name}@{v}" for name, v in
                                          summary.versions.items() if v is not None))
    by_key = {p.key: p for p in plans}
    keys = sorted(by_key)
    dirs = [snapshot_dir_name(s) for s in keys]
    if len(set(dirs)) != len(dirs):
        raise ReleaseError(f"two snapshots share a release folder (one per day): {keys}")
    records: dict[str, list[tuple[str, dict[str, Any]]]] = {}

    for snap in keys:
        plan = by_key[snap]
        names = [delta_file_name(snap, w.k, plan.window_days) for w in plan.windows]
        if len(set(names)) != len(names):
            raise ReleaseError(
                f"windows of {plan.window_days} days give two files with the same end date: "
                f"{names}"
            )
        selected = summary.versions["selection"] is not None and bool(catalog.read_arrow(
            "selection", filters=[("snapshot", "=", snap)], columns=["window"],
            version=summary.versions["selection"]).num_rows)
        mine = records.setdefault(snap, []) if validation.enabled else None
        for w in plan.windows:
            rel = corpus_path(snap, w.k, plan.window_days)
            eval_rel = evaluation_path(snap, w.k, plan.window_days) if selected else None
            n, drawn = _write_window(catalog, out, (rel, eval_rel), snap, w.k,
                                     plan.window_days, settings, summary, curation, mine)
            summary.files.append(rel)
            summary.lines[rel] = n
            if eval_rel:
                summary.files.append(eval_rel)
                summary.lines[eval_rel] = drawn
                summary.evaluation_lines += drawn
            log.debug("release: %s, %d passages (%d drawn)", rel, n, drawn)
        for name in KG_SNAPSHOT_TABLES:
            rel = kg_parquet_path(snap, name)
            summary.parquet_rows[rel] = _write_parquet(catalog, name, out / rel, [snap],
                                                       summary.versions[name])
            summary.files.append(rel)
        rel = kg_tsv_path(snap)
        _write_kg_tsv(catalog, out / rel, snap, summary.versions["kg_triples"])
        summary.files.append(rel)

    dropped = _dropped(catalog, keys, summary.versions["selection"])
    for name in sorted(n for n, s in TABLES.items() if s.released and n not in KG_SNAPSHOT_TABLES):
        rel = table_parquet_path(name)
        summary.parquet_rows[rel] = _write_parquet(catalog, name, out / rel, keys,
                                                   summary.versions[name], dropped)
        summary.files.append(rel)
    summary.files += annotation
    report = None
    if validation.enabled:
        from emerge_lib.validation.validate import validate_release

        report = validate_release(catalog, out, keys, records, summary.versions)
        summary.files += report.files
        summary.validation = report.manifest
    else:
        summary.validation = {"success": False, "reason": "validation.enabled is false: "
                              "not validated, not publishable"}
    kg_rows = {snap: {name: summary.parquet_rows[kg_parquet_path(snap, name)]
                      for name in KG_SNAPSHOT_TABLES} for snap in keys}
    # the card's statistics and plots, then the listing: what the version names; then
    # the files that state the version (croissant.json, the card) and the manifest
    prepared = prepare_card(out, keys, kg_rows)
    summary.card = [s.row() for s in prepared.stats]
    summary.files += [f"{PLOTS}/{p}" for p in prepared.plots]
    summary.files += [CROISSANT, CARD, CARD_HTML, LISTING]
    listing = {"snapshots": keys, "files": [f for f in summary.files if f != LISTING],
               "lines": summary.lines, "parquet_rows": summary.parquet_rows,
               "ops": dict(sorted(summary.ops.items())),
               "orphan_instances": summary.orphan_instances,
               "anchor_mismatches": summary.anchor_mismatches,
               "left_out": dict(sorted(summary.left_out.items()))}
    with _atomic(out / LISTING) as tmp:
        tmp.write_text(json.dumps(listing, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    known = {e["path"]: e for e in file_entries(
        out, [f for f in summary.files if f not in SELF_DESCRIBING])}
    version = content_version(known.values())
    settings_of = dict(dataset_settings or {})
    judges = _curation_record(catalog, keys, summary.versions.get("verdicts"), curation)
    dumps = _dumps(catalog, summary.versions.get("ingested_files"))
    write_croissant(out, list(known.values()), version=version, settings=settings_of,
                    dumps=dumps, snapshots=keys, judges=judges)
    if report is not None:
        from emerge_lib.validation.validate import check_croissant

        report.add_croissant(check_croissant(out, known, CROISSANT))
        summary.validation = report.manifest
    meta = _manifest_meta(summary, settings_of, dumps, judges)
    render_card(out, prepared, _validation_line(summary.validation), CardFacts(
        version=version, code_version=meta["code_version"], settings=settings_of,
        settings_sha256=meta["settings_sha256"], dumps=dumps, judges=judges,
        validation=summary.validation))
    summary.manifest = write_manifest(out, summary.files, meta=meta, known=known)
    if summary.manifest["version"] != version:  # the card and croissant.json state it
        raise ReleaseError(f"release {out}: its version changed while the card was written "
                           f"({version} → {summary.manifest['version']})")
    return summary, report


def describe_again(out: Path, paths: Sequence[str], meta: Mapping[str, Any]
                   ) -> dict[str, Any]:
    """Write again what states a written release's version (croissant.json, the card) and
    its manifest, as the release writes them, after files were added to it (``emerge
    annotate import``): the snapshots and KG rows from release.json; the settings, dumps,
    judges and validation verdict from ``meta`` (the manifest's record, updated by the
    caller; croissant.json is checked again when the verdict had it checked). ``paths``:
    the release's files. Returns the manifest written."""
    from emerge_lib.validation.validate import check_croissant, settle

    listing = json.loads((out / LISTING).read_text(encoding="utf-8"))
    keys = listing["snapshots"]
    kg_rows = {snap: {name: listing["parquet_rows"].get(kg_parquet_path(snap, name), 0)
                      for name in KG_SNAPSHOT_TABLES} for snap in keys}
    prepared = prepare_card(out, keys, kg_rows)
    files = sorted(set(paths) | {f"{PLOTS}/{p}" for p in prepared.plots}
                   | {CROISSANT, CARD, CARD_HTML, LISTING})
    known = {e["path"]: e for e in file_entries(out, [f for f in files
                                                      if f not in SELF_DESCRIBING])}
    version = content_version(known.values())
    judges = list((meta.get("curation") or {}).get("judges") or [])
    write_croissant(out, list(known.values()), version=version,
                    settings=dict(meta.get("settings") or {}), dumps=list(meta.get("dumps") or []),
                    snapshots=keys, judges=judges)
    verdict = dict(meta.get("validation") or {})
    if "croissant" in verdict:
        verdict["croissant"] = check_croissant(out, known, CROISSANT)
    verdict = settle(verdict)
    record = {**meta, "validation": verdict, "card": [s.row() for s in prepared.stats]}
    render_card(out, prepared, _validation_line(verdict), CardFacts(
        version=version, code_version=record.get("code_version"),
        settings=dict(record.get("settings") or {}),
        settings_sha256=record.get("settings_sha256"), dumps=list(record.get("dumps") or []),
        judges=judges, validation=verdict))
    manifest = write_manifest(out, files, meta=record, known=known)
    if manifest["version"] != version:
        raise ReleaseError(f"release {out}: its version changed while the card was written")
    return manifest


def _validation_line(verdict: Mapping[str, Any]) -> str:
    if verdict.get("success"):
        return ("Every snapshot passed its table suites on the rows released, the release "
                "files passed theirs, and croissant.json validates with mlcroissant: "
                "validation/results.json, Data Docs under validation/.")
    return f"Not publishable: {verdict.get('reason', 'a suite failed')}."


def _dumps(catalog: Catalog, version: int | None) -> list[dict[str, Any]]:
    """The dump files the warehouse was built from, with their sha1."""
    return [] if version is None else sorted(
        ({"wiki": r["wiki"], "dump_date": r["dump_date"], "file": r["dump_file"],
          "bytes": r["bytes"], "sha1": r["sha1"]}
         for r in catalog.read_arrow("ingested_files", version=version).to_pylist()),
        key=lambda d: (d["wiki"], d["dump_date"], d["file"]))


def _curation_record(catalog: Catalog, snapshots: Sequence[str], version: int | None,
                     settings: CurationSettings) -> list[dict[str, Any]]:
    """Who judged the released snapshots' triples: per model, route, prompt type and
    served model, the verdicts recorded (YES, NO, UNPARSED), the prompt template's
    sha256, and, for a configured route, its backend and quantization."""
    if version is None:
        return []
    from emerge_lib.curation.prompts import TEMPLATES

    rows = catalog.read_arrow("verdicts", columns=["snapshot", "llm_name", "judge",
                                                   "prompt_type", "served_model", "verdict"],
                              version=version).to_pylist()
    counts: dict[tuple[str, str, str, str], Counter[str]] = defaultdict(Counter)
    for r in rows:
        if r["snapshot"] in snapshots:
            key = (r["llm_name"], r["judge"] or "", r["prompt_type"], r["served_model"] or "")
            counts[key][r["verdict"]] += 1
    out = []
    for (name, judge, prompt_type, served), verdicts in sorted(counts.items()):
        route = settings.route(judge) if judge in ("additions", "deprecations") else None  # type: ignore[arg-type]
        mine = route is not None and route.name == name
        template = TEMPLATES.get(prompt_type)
        out.append({"llm_name": name, "judge": judge or None, "prompt_type": prompt_type,
                    "served_model": served or None,
                    "backend": route.backend if mine else None,
                    "quantization": route.quantization if mine else None,
                    "template_sha256": hashlib.sha256(template.encode()).hexdigest()
                    if template else None,
                    "verdicts": dict(sorted(verdicts.items()))})
    return out


def _manifest_meta(summary: ReleaseSummary, dataset_settings: Mapping[str, Any],
                   dumps: list[dict[str, Any]], judges: list[dict[str, Any]]
                   ) -> dict[str, Any]:
    """What made the release: the dump files (with their sha1), the dataset-defining
    settings and their hash, the code version, the curation record (the judges), the
    validation verdict and the card's statistics (not the Delta versions read: a rerun
    changes them, not the release)."""
    return {"code_version": code_version(),
            "settings": dict(dataset_settings), "settings_sha256": config_hash(dataset_settings),
            "dumps": dumps, "curation": {"judges": judges}, "validation": summary.validation,
            "card": summary.card}
