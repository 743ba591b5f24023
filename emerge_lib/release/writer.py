"""passages + instances + the KG snapshots → the EMERGE release on disk.

The layout is ``emerge_lib.formats.layout``'s: per snapshot and window a corpus and an
evaluation-set JSONL file with their typed Parquet twins (``release.windows``), the KG
snapshots (``release.tables``), the released tables, the validation results, release.json,
then what states the version (croissant.json, the card) and the manifest
(``release.describe``).

Only what is released is written (``TableSpec.released``): the internal timelines stay in
the warehouse. Every table is read at the Delta version it had when the release started,
so a writer working meanwhile cannot mix two states into one release; those versions are
logged and returned (``ReleaseSummary.versions``), not written: a rerun that rewrites the
same rows makes new Delta versions, and the release's bytes (hence its manifest version)
must not change with them. Files an earlier release left here that this one does not
write are removed; files no release writes (the user's own, the human annotation) are
carried over.

Output is a pure function of the tables: lines are sorted by ``hash_id``, triples by
(s, p, o), keys are in a fixed order and the JSON encoding is fixed, so a rebuild gives
byte-identical files. The whole release is written into a folder beside the output and
swapped into place at the end (``release._atomic``), so no reader ever sees a mixed release.
"""

from __future__ import annotations

import json
import logging
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from emerge_lib.catalog import TABLES, Catalog
from emerge_lib.core.config import (
    CurationSettings,
    PassageSettings,
    ReleaseSettings,
    ValidationSettings,
)
from emerge_lib.core.schedule import SnapshotPlan
from emerge_lib.formats.card import prepare
from emerge_lib.formats.layout import (
    CARD,
    CARD_HTML,
    CORPUS,
    CROISSANT,
    EVALUATION_SET,
    KG_SNAPSHOT_TABLES,
    LISTING,
    PLOTS,
    VALIDATION_PAGE,
    corpus_path,
    delta_file_name,
    evaluation_path,
    kg_parquet_path,
    kg_tsv_path,
    parquet_twin,
    snapshot_dir_name,
    table_parquet_path,
)
from emerge_lib.formats.manifest import code_version, config_hash
from emerge_lib.release._atomic import (
    atomic_file,
    recover,
    release_lock,
    staging_of,
    swap_into_place,
)
from emerge_lib.release.context import write_context
from emerge_lib.release.describe import Entries, describe
from emerge_lib.release.foreign import carry_foreign, stale
from emerge_lib.release.provenance import dumps, gold, judges, provisional
from emerge_lib.release.splits import write_splits
from emerge_lib.release.tables import dropped, write_kg_tsv, write_parquet
from emerge_lib.release.windows import Reads, Record, ReleaseError, Window, Written, write_window
from emerge_lib.validation.validate import ReleaseValidation, check_croissant, validate_release

log = logging.getLogger(__name__)

__all__ = ["ReleaseError", "ReleaseSummary", "write_release"]


@dataclass
class ReleaseSummary:
    """What a release wrote: paths are relative to ``out_dir``."""

    out_dir: Path
    snapshots: list[str] = field(default_factory=list)  # the snapshots released, sorted
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
    gold: dict[str, int] = field(default_factory=dict)  # whose gold → curated lines
    provisional: list[dict[str, Any]] = field(default_factory=list)  # provenance.provisional
    validation: dict[str, Any] = field(default_factory=dict)  # the manifest's verdict
    card: list[dict[str, Any]] = field(default_factory=list)  # the card's table rows
    splits: dict[str, dict[str, int]] = field(default_factory=dict)  # the splits' counts

    def rows(self) -> dict[str, int]:
        """Released rows: instances (over the JSONL files), passages (lines), Parquet rows."""
        out = {"instances": sum(self.ops.values()), "passages": sum(self.lines.values())}
        for rel, n in self.parquet_rows.items():
            name = rel.rsplit("/", 1)[-1].removesuffix(".parquet")
            if name in KG_SNAPSHOT_TABLES:
                out[name] = out.get(name, 0) + n
        return out

    def add(self, window: Window, done: Written) -> None:
        """Count one window's files in."""
        self.files += [*done.parquet_rows, window.corpus]
        self.parquet_rows.update(done.parquet_rows)
        self.lines[window.corpus] = done.lines
        if window.evaluation:
            self.files.append(window.evaluation)
            self.lines[window.evaluation] = done.drawn
        for counts, more in ((self.ops, done.ops), (self.left_out, done.left_out),
                             (self.gold, done.gold)):
            for key, n in more.items():
                counts[key] = counts.get(key, 0) + n
        self.orphan_instances += done.orphan_instances
        self.anchor_mismatches += done.anchor_mismatches

    def listing(self) -> dict[str, Any]:
        """release.json: the snapshots, files, lines and operations."""
        return {"snapshots": self.snapshots, "files": [f for f in self.files if f != LISTING],
                "lines": self.lines, "parquet_rows": self.parquet_rows,
                "ops": dict(sorted(self.ops.items())),
                "orphan_instances": self.orphan_instances,
                "anchor_mismatches": self.anchor_mismatches,
                "left_out": dict(sorted(self.left_out.items())), "splits": self.splits,
                **({"provisional": self.provisional} if self.provisional else {})}

    def __str__(self) -> str:
        return (f"release {self.out_dir}: {len(self.files)} files, "
                f"{sum(self.lines.values())} passages, {sum(self.ops.values())} instances")


def write_release(catalog: Catalog, out_dir: str | Path, plans: Sequence[SnapshotPlan],
                  settings: PassageSettings, curation: CurationSettings,
                  validation: ValidationSettings, dataset_settings: Mapping[str, Any],
                  pinned: Sequence[str], derived: ReleaseSettings) -> ReleaseSummary:
    """Write the release of the snapshots of ``plans`` (each with its windows) under
    ``out_dir``: the corpus, the evaluation set, the KG snapshots, the validation results,
    the dataset card and, last, the manifest, which records ``dataset_settings`` (what
    decides the release's content) and pins the Delta version of each table of ``pinned``
    (what the release stage reads).

    Every window gets a file, even one without instances (0 lines), so a reader can tell
    "nothing aligned" from "not released". Rerunning over the same tables rewrites
    byte-identical data files. With ``validation.enabled`` the release JSONL is checked
    (the release suites) and the manifest records whether every snapshot passed its table
    suites on exactly the rows released; a failure raises after the manifest is written
    (it says ``success: false``, so nothing publishes it). ``derived``: the leak-free
    splits and the KG context written from the lines (``release.splits``,
    ``release.context``).
    """
    final = Path(out_dir)
    with release_lock(final):
        recover(final)
        out, _ = staging_of(final)
        out.mkdir(parents=True)
        try:
            # first: the human annotation is validated, shown on the card and listed
            annotation = carry_foreign(final, out)
            summary = ReleaseSummary(out_dir=out, snapshots=sorted(p.key for p in plans))
            summary.versions = {name: catalog.version(name) for name in pinned}
            summary.provisional = provisional(catalog, summary.versions, plans)
            for mark in summary.provisional:  # rebuilt when the reconciling data arrives
                log.warning("release: snapshot %s is provisional: its last window ends %s, "
                            "deletions are known to %s", *mark.values())
            log.info("release reads %s", ", ".join(f"{name}@{v}" for name, v in
                                                  summary.versions.items() if v is not None))
            reads = Reads(catalog, summary.versions, settings, curation)
            records = _write_data(reads, out, plans, summary, validation.enabled)
            _derive(out, summary, derived)
            summary.files += annotation
            report = validate_release(catalog, out, summary.snapshots, records,
                                      summary.versions) if validation.enabled else None
            _describe(reads, out, summary, report, dataset_settings)
            summary.removed = stale(final, set(summary.files))
            swap_into_place(out, final)
        except BaseException:
            shutil.rmtree(out, ignore_errors=True)
            raise
    summary.out_dir = final
    if summary.removed:
        log.info("release: removed %d stale files of an earlier release", len(summary.removed))
    if report is not None:
        report.raise_for_failure()
    return summary


def _write_data(reads: Reads, out: Path, plans: Sequence[SnapshotPlan],
                summary: ReleaseSummary, keep_records: bool) -> dict[str, list[Record]]:
    """Every window's files, the KG snapshots and the released tables into ``out``;
    returns the lines written per snapshot (for the release suites, when kept)."""
    by_key = {p.key: p for p in plans}
    dirs = [snapshot_dir_name(s) for s in summary.snapshots]
    if len(set(dirs)) != len(dirs):
        raise ReleaseError(f"two snapshots share a release folder (one per day): "
                           f"{summary.snapshots}")
    versions = reads.versions
    records: dict[str, list[Record]] = {}
    for snap in summary.snapshots:
        plan = by_key[snap]
        names = [delta_file_name(snap, w.k, plan.window_days) for w in plan.windows]
        if len(set(names)) != len(names):
            raise ReleaseError(
                f"windows of {plan.window_days} days give two files with the same end date: "
                f"{names}")
        selected = versions["selection"] is not None and bool(reads.catalog.read_arrow(
            "selection", filters=[("snapshot", "=", snap)], columns=["window"],
            version=versions["selection"]).num_rows)
        mine = records.setdefault(snap, [])
        for w in plan.windows:
            window = Window(snap, w.k, plan.window_days, corpus_path(snap, w.k, plan.window_days),
                            evaluation_path(snap, w.k, plan.window_days) if selected else None)
            done = write_window(reads, out, window, keep_records)
            summary.add(window, done)
            mine += done.records
            log.debug("release: %s, %d passages (%d drawn)", window.corpus, done.lines,
                      done.drawn)
        for name in KG_SNAPSHOT_TABLES:
            rel = kg_parquet_path(snap, name)
            summary.parquet_rows[rel] = write_parquet(reads.catalog, name, out / rel, [snap],
                                                      versions[name], {})
            summary.files.append(rel)
        rel = kg_tsv_path(snap)
        write_kg_tsv(reads.catalog, out / rel, snap, versions["kg_triples"])
        summary.files.append(rel)
    left_out = dropped(reads.catalog, summary.snapshots, versions["selection"])
    for name in sorted(n for n, s in TABLES.items() if s.released and n not in KG_SNAPSHOT_TABLES):
        rel = table_parquet_path(name)
        summary.parquet_rows[rel] = write_parquet(reads.catalog, name, out / rel,
                                                  summary.snapshots, versions[name], left_out)
        summary.files.append(rel)
    return records


def _derive(out: Path, summary: ReleaseSummary, settings: ReleaseSettings) -> None:
    """The leak-free splits and the KG context, from the lines and KG just written."""
    corpus: dict[str, list[str]] = {snap: [] for snap in summary.snapshots}
    for rel in summary.lines:
        if rel.startswith(f"{CORPUS}/"):
            snap = next(s for s in summary.snapshots if rel.split("/")[1] == snapshot_dir_name(s))
            corpus[snap].append(rel)
    evaluation = [parquet_twin(rel) for rel in summary.lines
                  if rel.startswith(f"{EVALUATION_SET}/")]
    counts, written = write_splits(out, {s: [parquet_twin(f) for f in files]
                                         for s, files in corpus.items()},
                                   evaluation, settings.splits)
    written.update(write_context(out, corpus, settings.context))
    summary.splits = counts.record()
    summary.parquet_rows.update(written)
    summary.files += list(written)
    log.info("release: splits %s (left out: %s)", counts.lines, counts.excluded or "none")


def _describe(reads: Reads, out: Path, summary: ReleaseSummary,
              report: ReleaseValidation | None, dataset_settings: Mapping[str, Any]) -> None:
    """The validation results, the card's statistics and plots, release.json, then what
    states the version (``release.describe``) and the manifest."""
    if report is not None:  # the results, and the page of its checks (written by describe)
        summary.files += [*report.files, VALIDATION_PAGE]
    kg_rows = {snap: {name: summary.parquet_rows[kg_parquet_path(snap, name)]
                      for name in KG_SNAPSHOT_TABLES} for snap in summary.snapshots}
    prepared = prepare(out, summary.snapshots, kg_rows)
    summary.card = [s.row() for s in prepared.stats]
    summary.files += [f"{PLOTS}/{p}" for p in prepared.plots]
    summary.files += [CROISSANT, CARD, CARD_HTML, LISTING]
    with atomic_file(out / LISTING) as tmp:
        tmp.write_text(json.dumps(summary.listing(), indent=1, sort_keys=True) + "\n",
                       encoding="utf-8")
    record = {"code_version": code_version(), "settings": dict(dataset_settings),
              "settings_sha256": config_hash(dataset_settings),
              "dumps": dumps(reads.catalog, reads.versions.get("ingested_files")),
              "curation": {"judges": judges(reads, summary.snapshots),
                           "gold": gold(reads.curation, summary.gold)},
              "splits": summary.splits,
              **({"provisional": summary.provisional} if summary.provisional else {})}

    def judge(known: Entries) -> dict[str, Any]:
        if report is None:
            return {"success": False, "reason": "validation.enabled is false: not validated, "
                    "not publishable"}
        report.add_croissant(check_croissant(out, known, CROISSANT))
        return report.manifest

    summary.manifest = describe(out, prepared, summary.files, record, judge)
    summary.validation = summary.manifest["validation"]
