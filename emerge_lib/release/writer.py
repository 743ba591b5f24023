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
A snapshot whose inputs did not change since the release already there has its files
linked into that folder instead of written again (``release.carry``; the same bytes).
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
    ContextSettings,
    CurationSettings,
    PassageSettings,
    ReleaseSettings,
    ValidationSettings,
)
from emerge_lib.core.schedule import SnapshotPlan
from emerge_lib.formats.card import Prepared, SnapshotStats, plotted
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
from emerge_lib.formats.manifest import code_version, config_hash, sha256_file
from emerge_lib.release._atomic import (
    atomic_file,
    recover,
    release_lock,
    staging_of,
    swap_into_place,
)
from emerge_lib.release.carry import (
    SHARED,
    Carrier,
    Decision,
    Part,
    shared_fingerprint,
    snapshot_fingerprint,
    suites_key,
)
from emerge_lib.release.describe import Entries, describe
from emerge_lib.release.foreign import carry_foreign, stale
from emerge_lib.release.provenance import (
    built_earlier,
    dumps,
    gold,
    history,
    judges,
    provisional,
)
from emerge_lib.release.splits import SnapshotSplits, drawn, merge_splits
from emerge_lib.release.tables import dropped
from emerge_lib.release.units import (
    Unit,
    Units,
    card_stats,
    context,
    kg_tsv,
    split_files,
    table_file,
)
from emerge_lib.release.windows import (
    Reads,
    Record,
    ReleaseError,
    Window,
    Written,
    write_window,
)
from emerge_lib.validation.validate import (
    ReleaseValidation,
    annotation_files,
    check_croissant,
    validate_release,
)

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
    # snapshots built from an earlier history than the release holds (kept as built)
    built_earlier: list[dict[str, Any]] = field(default_factory=list)
    validation: dict[str, Any] = field(default_factory=dict)  # the manifest's verdict
    card: list[dict[str, Any]] = field(default_factory=list)  # the card's table rows
    splits: dict[str, dict[str, int]] = field(default_factory=dict)  # the splits' counts
    carried: int = 0  # files carried over from the release before (release.carry)
    carried_bytes: int = 0
    carry: str = ""  # the carry-over's summary line

    def rows(self) -> dict[str, int]:
        """Released rows: instances (over the JSONL files), passages (lines), Parquet rows."""
        out = {"instances": sum(self.ops.values()), "passages": sum(self.lines.values())}
        for rel, n in self.parquet_rows.items():
            name = rel.rsplit("/", 1)[-1].removesuffix(".parquet")
            if name in KG_SNAPSHOT_TABLES:
                out[name] = out.get(name, 0) + n
        return out

    def merge(self, part: Part) -> None:
        """Count one snapshot's files in (written or carried)."""
        self.files += part.files
        self.parquet_rows.update(part.parquet_rows)
        self.lines.update(part.lines)
        for counts, more in ((self.ops, part.ops), (self.left_out, part.left_out),
                             (self.gold, part.gold)):
            for key, n in more.items():
                counts[key] = counts.get(key, 0) + n
        self.orphan_instances += part.orphan_instances
        self.anchor_mismatches += part.anchor_mismatches

    def listing(self) -> dict[str, Any]:
        """release.json: the snapshots, files, lines and operations."""
        return {"snapshots": self.snapshots, "files": [f for f in self.files if f != LISTING],
                "lines": self.lines, "parquet_rows": self.parquet_rows,
                "ops": dict(sorted(self.ops.items())),
                "orphan_instances": self.orphan_instances,
                "anchor_mismatches": self.anchor_mismatches,
                "left_out": dict(sorted(self.left_out.items())), "splits": self.splits,
                **({"provisional": self.provisional} if self.provisional else {}),
                **({"built_earlier": self.built_earlier} if self.built_earlier else {})}

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
    ``release.context``), and whether a snapshot whose inputs did not change since the
    release in ``out_dir`` has its files carried over from it (``release.carry_unchanged``,
    ``release.carry``: the same bytes, not written again).
    """
    final = Path(out_dir)
    report: ReleaseValidation | None = None
    units: Units | None = None
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
            held = history(catalog, summary.versions)  # read once: the marks, the manifest
            summary.built_earlier = built_earlier(catalog, summary.snapshots, held)
            for mark in summary.built_earlier:  # snapshots.rebuild: new kept them
                log.info("release: snapshot %s was built from an earlier history (%s)",
                         mark["snapshot"], "; ".join(
                             f"{h['wiki']}: revisions before {h['revisions_before']}"
                             for h in mark["history"]))
            log.info("release reads %s", ", ".join(f"{name}@{v}" for name, v in
                                                  summary.versions.items() if v is not None))
            reads = Reads(catalog, summary.versions, settings, curation)
            carrier = Carrier(final, out, enabled=derived.carry_unchanged)
            units = Units(reads, derived.workers, most=derived.most_workers())
            parts, records, early = _write_data(reads, out, plans, summary, carrier,
                                                 dataset_settings, derived, validation.enabled,
                                                 units)
            origin = _provenance(reads, summary.snapshots, dataset_settings,
                                 held if derived.provenance == "history" else None)
            # the provisional marks are release.json's too: reconciling data that changes
            # no snapshot's rows still clears them
            shared = shared_fingerprint(reads, {k: fp for k, (fp, _) in parts.items()},
                                        {**origin, "provisional": summary.provisional,
                                         "built_earlier": summary.built_earlier},
                                        {rel: sha256_file(out / rel) for rel in annotation})
            earlier, suites = None, suites_key(dataset_settings)
            if all(k in carrier.decisions and carrier.decisions[k].carried for k in parts):
                earlier = carrier.shared(shared, [f for _, part in parts.values()
                                                  for f in part.every_file()])
            else:
                carrier.decisions[SHARED] = Decision(
                    reason=carrier.why_not or "a snapshot was written")
            prepared: Prepared | None = None
            if earlier is not None:
                _as_before(out, summary, earlier)
            else:
                tables = early.tables or _submit_tables(reads, out, summary, units)
                beside = _submit_shared(out, summary, derived, units, early.stats)
                if validation.enabled:  # here (its Spark session, GX) while the units run
                    report = _validate(reads, out, summary, parts, records, carrier, suites)
                prepared = _take_shared(out, summary, parts, units, beside, tables)
                units.close()
                summary.files += annotation
                _describe(reads, out, summary, report, origin, carrier.known, prepared)
            # the card's statistics, for the next release to keep (carried whole: those kept)
            stats = {key: units.result(unit) for key, unit in early.stats.items()} \
                if prepared is None else dict(zip(prepared.snapshots, prepared.stats,
                                                  strict=True))
            carrier.save(parts, shared, summary.manifest, report.gates if report else {},
                         suites, stats)
            carrier.log_decisions()
            summary.carried, summary.carried_bytes = carrier.carried_files, carrier.carried_bytes
            summary.carry = carrier.summary()
            summary.removed = stale(final, set(summary.files))
            swap_into_place(out, final)
        except BaseException as exc:
            if units is not None:  # no worker still writing into the folder removed
                units.close(abandon=isinstance(exc, KeyboardInterrupt))
            shutil.rmtree(out, ignore_errors=True)
            raise
    summary.out_dir = final
    if summary.removed:
        log.info("release: removed %d stale files of an earlier release", len(summary.removed))
    if report is not None:
        report.raise_for_failure()
    return summary


def _validate(reads: Reads, out: Path, summary: ReleaseSummary,
              parts: Mapping[str, tuple[str, Part]], records: dict[str, list[Record]],
              carrier: Carrier, suites: str) -> ReleaseValidation:
    """The release's audit; a carried snapshot keeps the release suites' report of the
    last release (the same lines, the same suites) and its lines are read back only for
    what needs them (the suites run again, the human annotation's checks)."""
    checked = {key: gate for key in parts if (gate := carrier.gate(key, suites)) is not None}
    annotated = bool(annotation_files(out))
    for key, (_, part) in parts.items():
        if key not in records and (annotated or key not in checked):
            records[key] = part.records(out)
    if checked:
        log.info("release: the release suites' reports of %d carried snapshots kept",
                 len(checked))
    return validate_release(reads.catalog, out, summary.snapshots, records, summary.versions,
                            checked)


def _write_data(reads: Reads, out: Path, plans: Sequence[SnapshotPlan],
                summary: ReleaseSummary, carrier: Carrier, dataset_settings: Mapping[str, Any],
                derived: ReleaseSettings, keep_records: bool, units: Units
                ) -> tuple[dict[str, tuple[str, Part]], dict[str, list[Record]], _Early]:
    """Every snapshot's files into ``out``, carried over (``carrier``) or written (by
    ``units``: every written snapshot's units are submitted first, then taken in order);
    returns each snapshot's fingerprint and part, the lines written per snapshot (for
    the release suites, when kept; a carried snapshot has none here), and, when a
    snapshot is written (so the shared files will be too), the shared units that read no
    written snapshot (the tables released whole, the card's statistics of the carried
    snapshots), submitted with its units so that they run beside them."""
    by_key = {p.key: p for p in plans}
    dirs = [snapshot_dir_name(s) for s in summary.snapshots]
    if len(set(dirs)) != len(dirs):
        raise ReleaseError(f"two snapshots share a release folder (one per day): "
                           f"{summary.snapshots}")
    for plan in plans:
        names = [delta_file_name(plan.key, w.k, plan.window_days) for w in plan.windows]
        if len(set(names)) != len(names):
            raise ReleaseError(
                f"windows of {plan.window_days} days give two files with the same end date: "
                f"{names}")
    fingerprints: dict[str, str] = {}
    carried: dict[str, Part] = {}
    for snap in summary.snapshots:
        fingerprints[snap] = snapshot_fingerprint(reads, by_key[snap], dataset_settings,
                                                  derived.context)
        if (part := carrier.snapshot(snap, fingerprints[snap])) is not None:
            carried[snap] = part
    units.settle([s for s in summary.snapshots if s not in carried])
    writing = {snap: _submit_snapshot(reads, out, by_key[snap], keep_records, units)
               for snap in summary.snapshots if snap not in carried}
    early = _Early(stats={snap: units.ready(kept) for snap in sorted(carried)
                          if (kept := carrier.stats(snap)) is not None})
    if early.stats:
        log.info("release: the statistics on the card of %d carried snapshots kept",
                 len(early.stats))
    if writing:  # the shared files will be written: what of them reads no written snapshot
        early.tables = _submit_tables(reads, out, summary, units)
        early.stats.update({snap: _submit_stats(out, snap, part.parquet_rows, units)
                            for snap, part in sorted(carried.items())
                            if snap not in early.stats})
    for written in writing.values():  # its context once its windows and KG are there
        written.collect(units, derived.context)
    parts: dict[str, tuple[str, Part]] = {}
    records: dict[str, list[Record]] = {}
    for snap in summary.snapshots:
        if snap in writing:
            carried[snap], records[snap] = writing[snap].finish(units)
        parts[snap] = (fingerprints[snap], carried[snap])
        summary.merge(carried[snap])
    return parts, records, early


@dataclass
class _Snapshot:
    """One snapshot being written: its units, submitted, then taken in their order."""

    snap: str
    out: Path
    windows: list[tuple[Window, Unit[Written]]]
    tables: list[tuple[str, Unit[int]]]  # its KG Parquet files, then its TSV
    part: Part = field(default_factory=Part)
    records: list[Record] = field(default_factory=list)
    context: Unit[dict[str, int]] | None = None

    def collect(self, units: Units, settings: ContextSettings) -> None:
        """Its windows' and KG files' results; then its context submitted (it reads them)."""
        for window, unit in self.windows:
            done = units.result(unit)
            self.part.add(window, done)
            self.records += done.records
            log.debug("release: %s, %d passages (%d drawn)", window.corpus, done.lines,
                      done.drawn)
        for rel, rows in self.tables:
            n = units.result(rows)
            if rel.endswith(".parquet"):
                self.part.parquet_rows[rel] = n
            self.part.files.append(rel)
        corpus = [rel for rel in self.part.lines if rel.startswith(f"{CORPUS}/")]
        self.context = units.submit(context, self.out, {self.snap: corpus}, settings)

    def finish(self, units: Units) -> tuple[Part, list[Record]]:
        assert self.context is not None  # collect submitted it
        self.part.context = units.result(self.context)
        return self.part, self.records


def _submit_snapshot(reads: Reads, out: Path, plan: SnapshotPlan, keep_records: bool,
                     units: Units) -> _Snapshot:
    """One snapshot's units: its windows', its KG snapshot's (Parquet and TSV)."""
    snap, versions = plan.key, reads.versions
    selected = versions["selection"] is not None and bool(reads.catalog.read_arrow(
        "selection", filters=[("snapshot", "=", snap)], columns=["window"],
        version=versions["selection"]).num_rows)
    windows = []
    for w in plan.windows:
        window = Window(snap, w.k, plan.window_days, corpus_path(snap, w.k, plan.window_days),
                        evaluation_path(snap, w.k, plan.window_days) if selected else None)
        windows.append((window, units.submit(write_window, out, window, keep_records)))
    tables = [(kg_parquet_path(snap, name),
               units.submit(table_file, name, out / kg_parquet_path(snap, name), [snap],
                            versions[name], {}))
              for name in KG_SNAPSHOT_TABLES]
    tables.append((kg_tsv_path(snap), units.submit(kg_tsv, out / kg_tsv_path(snap), snap,
                                                   versions["kg_triples"])))
    return _Snapshot(snap, out, windows, tables)


#: the tables released whole, submitted: (their release-relative path, the unit)
_Tables = list[tuple[str, Unit[int]]]


@dataclass
class _Early:
    """The shared units submitted with the written snapshots' units: the tables released
    whole and the card's statistics of each carried snapshot (its files are in the
    staging folder from the start; the last release's statistics, done already, where
    the carrier kept them)."""

    tables: _Tables = field(default_factory=list)
    stats: dict[str, Unit[SnapshotStats]] = field(default_factory=dict)


def _submit_stats(out: Path, snap: str, rows: Mapping[str, int], units: Units
                  ) -> Unit[SnapshotStats]:
    """A snapshot's statistics on the card, from its lines (``rows``: its Parquet files'
    rows, its KG tables' among them)."""
    return units.submit(card_stats, out, snap, {
        name: rows[kg_parquet_path(snap, name)] for name in KG_SNAPSHOT_TABLES})


def _submit_tables(reads: Reads, out: Path, summary: ReleaseSummary, units: Units) -> _Tables:
    """The tables released whole (``parquet/<table>.parquet``), of every snapshot: a unit
    each."""
    versions = reads.versions
    left_out = dropped(reads.catalog, summary.snapshots, versions["selection"])
    names = sorted(n for n, s in TABLES.items() if s.released and n not in KG_SNAPSHOT_TABLES)
    return [(table_parquet_path(name),
             units.submit(table_file, name, out / table_parquet_path(name), summary.snapshots,
                          versions[name], left_out))
            for name in names]


def _write_tables(summary: ReleaseSummary, units: Units, submitted: _Tables) -> None:
    """The tables released whole, taken in order."""
    for rel, rows in submitted:
        summary.parquet_rows[rel] = units.result(rows)
        summary.files.append(rel)


@dataclass
class _Shared:
    """The shared files' units, submitted once every snapshot's files are in the staging
    folder (what they read): each snapshot's leak-free splits (its lines' Parquet twins)
    and statistics on the card (its JSONL lines)."""

    splits: list[Unit[SnapshotSplits]]
    stats: list[Unit[SnapshotStats]]


def _submit_shared(out: Path, summary: ReleaseSummary, settings: ReleaseSettings,
                   units: Units, early: Mapping[str, Unit[SnapshotStats]]) -> _Shared:
    """The splits and the card's statistics, from the lines just written (or carried): a
    unit each per snapshot (``early``: the statistics submitted already); the lines drawn
    into test, which every snapshot's splits need, found here first."""
    corpus: dict[str, list[str]] = {snap: [] for snap in summary.snapshots}
    for rel in summary.lines:
        if rel.startswith(f"{CORPUS}/"):
            snap = next(s for s in summary.snapshots if rel.split("/")[1] == snapshot_dir_name(s))
            corpus[snap].append(rel)
    evaluation = [parquet_twin(rel) for rel in summary.lines
                  if rel.startswith(f"{EVALUATION_SET}/")]
    twins = {snap: [parquet_twin(f) for f in files] for snap, files in corpus.items()}
    test, pages = drawn(out, [f for files in twins.values() for f in files], evaluation)
    splits = [units.submit(split_files, out, snap, files, test, pages, settings.splits)
              for snap, files in sorted(twins.items())]
    return _Shared(splits, [early[snap] if snap in early else
                            _submit_stats(out, snap, summary.parquet_rows, units)
                            for snap in summary.snapshots])


def _take_shared(out: Path, summary: ReleaseSummary, parts: Mapping[str, tuple[str, Part]],
                 units: Units, shared: _Shared, tables: _Tables) -> Prepared:
    """The shared units' results, in the order the serial path writes them: the card's
    statistics (its plots drawn here, beside the units still running), the tables
    released whole, then the leak-free splits with the KG context (each snapshot's,
    written with it) listed after them."""
    prepared = plotted(out, summary.snapshots, [units.result(unit) for unit in shared.stats])
    _write_tables(summary, units, tables)
    counts, written = merge_splits([units.result(unit) for unit in shared.splits])
    for snap in sorted(parts):
        written.update(parts[snap][1].context)
    summary.splits = counts.record()
    summary.parquet_rows.update(written)
    summary.files += list(written)
    log.info("release: splits %s (left out: %s)", counts.lines, counts.excluded or "none")
    return prepared


def _provenance(reads: Reads, snapshots: Sequence[str], dataset_settings: Mapping[str, Any],
                held: list[dict[str, Any]] | None) -> dict[str, Any]:
    """The manifest's account of what made the release (but the gold's lines and the
    splits, which the snapshots' files decide): ``held``, the history it holds
    (``release.provenance: history``), or with None the dump files read (``files``)."""
    source = ({"history": held} if held is not None else
              {"dumps": dumps(reads.catalog, reads.versions.get("ingested_files"))})
    return {"code_version": code_version(), "settings": dict(dataset_settings),
            "settings_sha256": config_hash(dataset_settings), **source,
            "judges": judges(reads, snapshots)}


def _as_before(out: Path, summary: ReleaseSummary, manifest: Mapping[str, Any]) -> None:
    """The summary of a release carried whole (nothing changed): its release.json and
    manifest say what the rest of it holds."""
    listing = json.loads((out / LISTING).read_text(encoding="utf-8"))
    summary.files = [e["path"] for e in manifest["files"]]
    summary.parquet_rows.update(listing["parquet_rows"])
    summary.splits = listing["splits"]
    summary.manifest = dict(manifest)
    summary.card = list(manifest.get("card") or [])
    summary.validation = dict(manifest.get("validation") or {})


def _describe(reads: Reads, out: Path, summary: ReleaseSummary,
              report: ReleaseValidation | None, origin: Mapping[str, Any],
              carried: Entries, prepared: Prepared) -> None:
    """The validation results, the card's statistics and plots (``prepared``),
    release.json, then what states the version (``release.describe``) and the manifest."""
    if report is not None:  # the results, and the page of its checks (written by describe)
        summary.files += [*report.files, VALIDATION_PAGE]
    summary.card = [s.row() for s in prepared.stats]
    summary.files += [f"{PLOTS}/{p}" for p in prepared.plots]
    summary.files += [CROISSANT, CARD, CARD_HTML, LISTING]
    with atomic_file(out / LISTING) as tmp:
        tmp.write_text(json.dumps(summary.listing(), indent=1, sort_keys=True) + "\n",
                       encoding="utf-8")
    record = {**{k: v for k, v in origin.items() if k != "judges"},
              "curation": {"judges": origin["judges"],
                           "gold": gold(reads.curation, summary.gold)},
              "splits": summary.splits,
              **({"provisional": summary.provisional} if summary.provisional else {}),
              **({"built_earlier": summary.built_earlier} if summary.built_earlier else {})}

    def judge(known: Entries) -> dict[str, Any]:
        if report is None:
            return {"success": False, "reason": "validation.enabled is false: not validated, "
                    "not publishable"}
        report.add_croissant(check_croissant(out, known, CROISSANT))
        return report.manifest

    summary.manifest = describe(out, prepared, summary.files, record, judge, carried)
    summary.validation = summary.manifest["validation"]
