"""Carrying unchanged files over from the release already in the folder (issue 44,
"Incremental downstream"): a quarter adds one snapshot and leaves the others' inputs as
they were, and rewriting all of them is most of the release's hour on the driver at full
scale (docs/performance.md).

**Groups.** A release's files fall in two kinds of group, each with a fingerprint of
everything its bytes are a function of:

- *a snapshot's files*: its windows' JSONL (corpus, evaluation set) with their typed
  Parquet twins, triples and KG context, its relation priors, its KG tables and T_t's
  TSV (the context and the priors read the snapshot's own lines and KG only, so they
  are the snapshot's, not shared). Their inputs are the snapshot's rows of the tables the writer reads for them
  (``SNAPSHOT_READS``: every one is partitioned by snapshot, so
  ``Catalog.partition_digest`` fingerprints exactly those rows: a digest of their content,
  so a stage run again on unchanged inputs, as ``emerge build`` runs every snapshot's,
  which writes the same rows into new Delta files, keeps it), the snapshot's plan
  (windows, window days), the settings that shape them (the dataset settings but the
  snapshot list, the validation and the splits, which shape other files; curation's
  without its endpoints and keys) and the code that writes them (the sources of
  ``WRITER_CODE``, pyarrow's and emerge's versions, ``FORMAT``; not the git commit, which
  the data files do not state: a commit elsewhere keeps them carried);
- *the shared files*, a function of every snapshot: ``parquet/<table>.parquet``, the
  splits (``parquet/splits/``: an article drawn into test in one snapshot keeps its lines
  of every snapshot out of train), the validation results and page, the card's plots,
  README.md and card.html, release.json, croissant.json and the manifest. These are
  **recomputed** whenever a snapshot is written: they read the written files (the
  splits and plots the lines' Parquet, the release suites the lines) or one table for
  all snapshots (instances), a small part of the release beside the KG tables; their
  fingerprint (the snapshots', their stored validation results (partitioned by
  snapshot), the dumps ingested (``ingested_files`` is partitioned by wiki: its rows as
  the manifest lists them), the human annotation, the code version the manifest states
  and every source of emerge, every dataset setting) only lets a release with nothing
  changed carry them too, when the last release's
  validation passed (or was off): a rerun with nothing changed writes nothing. Inside
  the validation, a carried snapshot's release-suite report is the last release's when
  the suites are the same (:func:`suites_key`: the code with its git commit, Great
  Expectations' version, the validation settings), so its lines are not checked again;
  and its statistics on the card are those the last release collected, when the code
  that collects them is the same (:func:`stats_code`), so its lines are not read again
  for them either (≈ 100 CPU-s per million lines, docs/performance.md).

**The rule.** A group is carried when its fingerprint equals the one the last release
recorded and every file of it still has the size and sha256 that release recorded and its
manifest lists (a changed or missing file is logged, and its group written again). A
carried file is a hard link into the new release's staging folder (a copy where the
filesystem makes none), so the release is still swapped in whole (``release._atomic``),
and the result is the bytes a full rewrite gives (tests/engine/release/test_carry.py).

**Where the fingerprints are.** In a sidecar beside the release folder,
``.NAME.carry.json`` (next to its lock), written before the swap; not in the manifest nor
among the files it lists: a fingerprint is the engine's digest of the rows (Sail's and
Spark's may differ for the same rows) and of the code's sources, and the release's bytes,
the manifest's included, must not change with them. A sidecar is only believed for files that still
match it, so one left over from a killed run carries nothing wrong. Without one (or with
``release.carry_unchanged: false``) every file is written.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import os
import shutil
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from emerge_lib.core.config import ContextSettings
from emerge_lib.core.schedule import SnapshotPlan
from emerge_lib.formats.card import SnapshotStats
from emerge_lib.formats.layout import CORPUS
from emerge_lib.formats.manifest import (
    MANIFEST,
    ManifestError,
    code_version,
    inside,
    sha256_file,
)
from emerge_lib.release._atomic import atomic_file
from emerge_lib.release.windows import Reads, Record, Window, Written
from emerge_lib.validation.gate import CheckResult, GateReport

log = logging.getLogger(__name__)

#: the writer's format: bump it with any change of code that changes a snapshot's bytes
#: for the same rows and settings (a release written before is then written again whole)
FORMAT = 1
#: what a snapshot's files are made of (each partitioned by snapshot)
SNAPSHOT_READS = ("instances", "passages", "verdicts", "selection", "kg_triples", "entities",
                  "relations")
#: the code a snapshot's bytes come from (beside the catalog's rows and the settings):
#: their sources are part of its fingerprint, so a change there writes every snapshot
#: again; ``FORMAT`` is for a change elsewhere that changes them
WRITER_CODE = ("release/windows.py", "release/tables.py", "release/context.py",
               "release/carry.py", "formats/format.py", "formats/schema.py",
               "formats/layout.py", "curation/verdicts.py", "curation/answers.py",
               "curation/prompts.py", "curation/rules.py", "catalog/specs.py")
#: the code a snapshot's statistics on the card come from (beside its files' bytes)
STATS_CODE = ("formats/card.py", "formats/format.py")
#: the name of the shared files' group (in the log and the decisions)
SHARED = "shared files"
#: a route's fields that say where it runs, not what it answers
_WHERE = {"url", "api_key", "workers"}


def sidecar_of(final: Path) -> Path:
    """``.NAME.carry.json`` beside the release folder ``final``."""
    return final.with_name(f".{final.name}.carry.json")


def _digest(doc: object) -> str:
    text = json.dumps(doc, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:32]


@functools.cache
def code_digest(paths: tuple[str, ...] | None = None) -> str:
    """sha256 of emerge_lib's sources at ``paths`` (relative to the package; None: every
    module of it) and of the versions of pyarrow, which writes the Parquet (its version
    is in every file's footer), and of emerge."""
    import pyarrow

    from emerge_lib.core.version import __version__

    root = Path(__file__).resolve().parent.parent
    files = sorted(root.rglob("*.py")) if paths is None else [root / p for p in paths]
    h = hashlib.sha256(f"{__version__}\t{pyarrow.__version__}\n".encode())
    for path in files:
        h.update(f"{path.relative_to(root).as_posix()}\n".encode())
        h.update(path.read_bytes() if path.is_file() else b"")
    return h.hexdigest()[:32]


@functools.cache
def stats_code() -> str:
    """The digest of ``STATS_CODE``: a carried snapshot's statistics recorded under another
    are collected again."""
    return code_digest(STATS_CODE)


def _curation(reads: Reads) -> dict[str, Any]:
    return reads.curation.model_dump(mode="json", exclude={
        "additions": _WHERE, "deprecations": _WHERE})


def snapshot_fingerprint(reads: Reads, plan: SnapshotPlan, dataset_settings: Mapping[str, Any],
                         context: ContextSettings) -> str:
    """What a snapshot's files are a function of (the module docstring), hashed."""
    settings = {k: v for k, v in dataset_settings.items()
                if k not in ("snapshots", "validation", "release", "curation")}
    return _digest({
        "format": FORMAT, "code": code_digest(WRITER_CODE), "snapshot": plan.key,
        "windows": plan.window_count, "window_days": plan.window_days,
        "tables": {name: reads.catalog.partition_digest(name, reads.versions.get(name),
                                                        plan.key)
                   for name in SNAPSHOT_READS},
        "settings": settings, "passages": reads.passages.model_dump(mode="json"),
        "curation": _curation(reads), "context": context.model_dump(mode="json")})


def suites_key(dataset_settings: Mapping[str, Any]) -> str:
    """What the release suites' verdict on unchanged lines depends on: the code (its git
    commit, where it runs from a checkout), Great Expectations' version and the
    validation settings."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        gx = version("great_expectations")
    except PackageNotFoundError:
        gx = None
    return _digest({"code": code_version(), "sources": code_digest(), "gx": gx,
                    "validation": dataset_settings.get("validation")})


def shared_fingerprint(reads: Reads, snapshots: Mapping[str, str],
                       record: Mapping[str, Any], annotation: Mapping[str, str]) -> str:
    """What the shared files are a function of: the snapshots' fingerprints, their stored
    validation results, ``record`` (the manifest's account: code version, settings,
    dumps, judges), the human annotation's files (path → sha256)."""
    return _digest({
        "format": FORMAT, "sources": code_digest(), "snapshots": dict(snapshots),
        "record": dict(record),
        "validation_results": {key: reads.catalog.partition_digest(
            "validation_results", reads.versions.get("validation_results"), key)
            for key in snapshots},
        "annotation": dict(annotation), "curation": _curation(reads)})


@dataclass
class Part:
    """One snapshot's share of a release: its files in the order written, and what they
    hold (the release's summary adds these up; a carried snapshot's come from the
    sidecar)."""

    files: list[str] = field(default_factory=list)  # but the context's
    lines: dict[str, int] = field(default_factory=dict)  # JSONL file → lines
    parquet_rows: dict[str, int] = field(default_factory=dict)  # its Parquet → rows
    context: dict[str, int] = field(default_factory=dict)  # context files → rows
    ops: dict[str, int] = field(default_factory=dict)
    left_out: dict[str, int] = field(default_factory=dict)
    gold: dict[str, int] = field(default_factory=dict)
    orphan_instances: int = 0
    anchor_mismatches: int = 0

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

    def every_file(self) -> list[str]:
        return [*self.files, *self.context]

    def records(self, root: Path) -> list[Record]:
        """The corpus lines of its files as the release suites read them (what
        ``write_window`` keeps), read back from ``root``."""
        out: list[Record] = []
        for rel in self.files:
            if rel.startswith(f"{CORPUS}/") and rel.endswith(".jsonl"):
                with open(root / rel, encoding="utf-8") as fh:
                    out += [(Path(rel).name, json.loads(line)) for line in fh if line.strip()]
        return out


@dataclass
class Decision:
    """What became of one group: carried (files, bytes) or written, and why."""

    carried: int = 0
    bytes: int = 0
    reason: str = ""


class Carrier:
    """The release in the folder (``final``) and its sidecar, as the writer of the next
    one into ``out`` consults them: :meth:`snapshot` and :meth:`shared` carry a group
    when the rule holds (linking its files into ``out``), :meth:`save` writes the new
    sidecar. ``enabled`` false (``release.carry_unchanged``): nothing is carried."""

    def __init__(self, final: Path, out: Path, *, enabled: bool) -> None:
        self.final, self.out = final, out
        self.decisions: dict[str, Decision] = {}
        self.state: dict[str, Any] = {}
        self.entries: dict[str, dict[str, Any]] = {}
        self.manifest: dict[str, Any] = {}
        #: the manifest entries of the files carried, as verified (not hashed again)
        self.known: dict[str, dict[str, Any]] = {}
        self.why_not = "" if enabled else "release.carry_unchanged is false"
        if enabled:
            self._load()

    def _load(self) -> None:
        sidecar = sidecar_of(self.final)
        try:
            state = json.loads(sidecar.read_text(encoding="utf-8"))
            manifest = json.loads((self.final / MANIFEST).read_text(encoding="utf-8"))
        except FileNotFoundError:
            self.why_not = "no earlier release with its fingerprints here"
            return
        except (OSError, ValueError) as exc:
            self.why_not = f"{sidecar} or the manifest beside it is unreadable ({exc})"
            return
        if not isinstance(state, dict) or state.get("format") != FORMAT or \
                not isinstance(manifest, dict) or not isinstance(manifest.get("files"), list):
            self.why_not = f"{sidecar}: written by another format of the release"
            return
        self.state, self.manifest = state, manifest
        self.entries = {e["path"]: e for e in manifest["files"]
                        if isinstance(e, dict) and isinstance(e.get("path"), str)}

    def _check(self, entries: Mapping[str, Mapping[str, Any]]) -> str | None:
        """Why the earlier release's files ``entries`` (path → the entry the sidecar
        recorded) cannot be carried, or None: each must be the manifest's entry and the
        file still of that size and sha256."""
        for rel, entry in entries.items():
            listed = self.entries.get(rel)
            if listed is None or {k: listed.get(k) for k in ("bytes", "sha256", "rows")} != \
                    {k: entry.get(k) for k in ("bytes", "sha256", "rows")}:
                return f"{rel} is not in the manifest as recorded"
            try:
                path = inside(self.final, rel)
            except ManifestError as exc:
                return str(exc)
            if not path.is_file():
                return f"{rel} is missing"
            try:
                if path.stat().st_size != entry["bytes"] or \
                        sha256_file(path) != entry["sha256"]:
                    return f"{rel} no longer matches the manifest's sha256"
            except OSError as exc:
                return f"{rel} cannot be read ({exc.strerror})"
        return None

    def _malformed(self, exc: Exception) -> str:
        reason = f"its record in {sidecar_of(self.final)} is malformed ({exc!r:.80})"
        log.warning("release: %s", reason)
        return reason

    def _link(self, paths: Iterable[str]) -> int:
        """Hard-link (or copy) the earlier release's ``paths`` into ``out``; their bytes."""
        size = 0
        for rel in paths:
            src, dst = self.final / rel, self.out / rel
            dst.parent.mkdir(parents=True, exist_ok=True)
            dst.unlink(missing_ok=True)
            try:
                os.link(src, dst)
            except OSError:
                shutil.copy2(src, dst)
            size += dst.stat().st_size
        return size

    def _try(self, name: str, fingerprint: str, recorded: Mapping[str, Any] | None
             ) -> dict[str, Any] | None:
        """The group's recorded entries (path → entry) when the rule lets it be carried
        (logged either way), else None."""
        decision = self.decisions[name] = Decision()
        if self.why_not:
            decision.reason = self.why_not
        elif recorded is None:
            decision.reason = "not in the earlier release"
        elif recorded.get("fingerprint") != fingerprint:
            decision.reason = "its inputs changed"
        else:
            entries = recorded.get("entries") or {}
            problem = self._check(entries)
            if problem is None:
                return dict(entries)
            decision.reason = problem
            log.warning("release: %s: %s; written again", name, problem)
        return None

    def snapshot(self, key: str, fingerprint: str) -> Part | None:
        """Carry the snapshot's files into ``out`` when the rule holds; its part, else
        None (write it)."""
        try:
            recorded = (self.state.get("snapshots") or {}).get(key)
            entries = self._try(key, fingerprint, recorded)
            if entries is None or recorded is None:
                return None
            part = Part(**recorded["part"])
        except (AttributeError, KeyError, TypeError, ValueError) as exc:  # a hand-edited sidecar
            self.decisions[key] = Decision(reason=self._malformed(exc))
            return None
        if sorted(part.every_file()) != sorted(entries):
            self.decisions[key].reason = "its recorded files disagree"
            return None
        self.decisions[key].bytes = self._link(part.every_file())
        self.decisions[key].carried = len(entries)
        self.known.update({rel: {"path": rel, **entry} for rel, entry in entries.items()})
        return part

    def shared(self, fingerprint: str, paths: Sequence[str]) -> dict[str, Any] | None:
        """Carry every other file of the earlier release (``paths`` are the snapshots'
        ones, linked already) and its manifest into ``out`` when nothing changed and its
        validation passed or was off; the earlier manifest, else None."""
        recorded = self.state.get("shared")
        verdict = self.manifest.get("validation") or {}
        if recorded is not None and not (verdict.get("success") or str(
                verdict.get("reason", "")).startswith("validation.enabled is false")):
            self.decisions[SHARED] = Decision(reason="the earlier release's validation failed")
            return None
        if recorded is not None and recorded.get("manifest") != _manifest_sha(self.final):
            self.decisions[SHARED] = Decision(reason="its manifest was rewritten since")
            return None
        try:
            entries = self._try(SHARED, fingerprint, recorded)
        except (AttributeError, KeyError, TypeError, ValueError) as exc:
            self.decisions[SHARED] = Decision(reason=self._malformed(exc))
            return None
        if entries is None:
            return None
        rest = sorted(set(self.entries) - set(paths))
        if sorted(entries) != rest:
            self.decisions[SHARED].reason = "its recorded files disagree"
            return None
        decision = self.decisions[SHARED]
        decision.bytes = self._link([*rest, MANIFEST])
        decision.carried = len(rest) + 1
        return self.manifest

    def _recorded(self, key: str, what: str) -> dict[str, Any] | None:
        """What the sidecar recorded of carried snapshot ``key`` under ``what`` (its
        release suites' report, its statistics); None when it is not carried or has no
        such record (one that is not an object is malformed, and logged)."""
        if not self.decisions.get(key, Decision()).carried:
            return None  # carried: its record is an object (``snapshot`` read its part)
        recorded = self.state["snapshots"][key].get(what)
        if recorded is not None and not isinstance(recorded, dict):
            self._malformed(TypeError(f"{what} is {type(recorded).__name__}, not an object"))
            return None
        return recorded

    def gate(self, key: str, suites: str) -> GateReport | None:
        """The release suites' report on a carried snapshot's lines, as the last release
        ran them, when the suites are the same (``suites``: :func:`suites_key`) and none of
        their checks failed to run; else None (run them again)."""
        gate = self._recorded(key, "gate")
        if gate is None or gate.get("suites") != suites:
            return None
        try:
            report = GateReport([CheckResult(**r) for r in gate["results"]])
        except (KeyError, TypeError) as exc:
            self._malformed(exc)
            return None
        return None if report.raised else report

    def stats(self, key: str) -> SnapshotStats | None:
        """A carried snapshot's statistics on the card as the last release collected them
        from the same files, when the code that collects them is the same; else None
        (collect them again)."""
        recorded = self._recorded(key, "stats")
        if recorded is None or recorded.get("code") != stats_code():
            return None
        try:
            stats = SnapshotStats.from_record(recorded["record"])
        except (AttributeError, KeyError, TypeError, ValueError) as exc:
            self._malformed(exc)
            return None
        return stats if stats.snapshot == key else None

    def save(self, snapshots: Mapping[str, tuple[str, Part]], shared: str,
             manifest: Mapping[str, Any], gates: Mapping[str, GateReport],
             suites: str, stats: Mapping[str, SnapshotStats]) -> None:
        """The new sidecar (written before the swap): each group's fingerprint and its
        files' manifest entries, and the snapshots' parts, release suites' reports and
        statistics on the card (``stats``: those collected or kept in this release)."""
        entries = {e["path"]: {k: e[k] for k in ("bytes", "sha256", "rows")}
                   for e in manifest["files"]}
        mine: set[str] = set()
        state: dict[str, Any] = {"format": FORMAT, "snapshots": {}}
        for key, (fingerprint, part) in sorted(snapshots.items()):
            files = part.every_file()
            mine.update(files)
            state["snapshots"][key] = {"fingerprint": fingerprint, "part": asdict(part),
                                       "entries": {f: entries[f] for f in files}}
            if key in gates:
                state["snapshots"][key]["gate"] = {
                    "suites": suites, "results": [asdict(r) for r in gates[key].results]}
            if key in stats:
                state["snapshots"][key]["stats"] = {"code": stats_code(),
                                                    "record": stats[key].record()}
        state["shared"] = {"fingerprint": shared, "manifest": _manifest_sha(self.out),
                           "entries": {f: e for f, e in entries.items() if f not in mine}}
        with atomic_file(sidecar_of(self.final)) as tmp:
            tmp.write_text(json.dumps(state, sort_keys=True, indent=1, default=str) + "\n",
                           encoding="utf-8")

    def summary(self) -> str:
        """The log's and the stage's summary line."""
        carried = [d for d in self.decisions.values() if d.carried]
        written = Counter(d.reason for d in self.decisions.values() if not d.carried)
        files = sum(d.carried for d in carried)
        mb = sum(d.bytes for d in carried) / 1e6
        why = "; ".join(f"{n} {reason}" for reason, n in sorted(written.items()))
        return (f"carried {files} files ({mb:.1f} MB) of {len(carried)} groups, wrote "
                f"{sum(written.values())} groups" + (f" ({why})" if why else ""))

    def log_decisions(self) -> None:
        for name, d in self.decisions.items():
            if d.carried:
                log.info("release: %s: carried %d files (%.1f MB)", name, d.carried,
                         d.bytes / 1e6)
            else:
                log.info("release: %s: written (%s)", name, d.reason)
        log.info("release: %s", self.summary())

    @property
    def carried_files(self) -> int:
        return sum(d.carried for d in self.decisions.values())

    @property
    def carried_bytes(self) -> int:
        return sum(d.bytes for d in self.decisions.values() if d.carried)


def _manifest_sha(root: Path) -> str | None:
    path = root / MANIFEST
    return sha256_file(path) if path.is_file() else None
