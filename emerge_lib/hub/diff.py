"""``emerge diff``: what one release adds, removes and changes against another, line by
line, by ``hash_id`` (stable: the same snapshot, window, page and paragraph always have
the same id), so a quarter's extension says what it added.

Both releases' JSONL lines are compared (the corpus and the evaluation set, each on its
own), as parsed JSON per ``hash_id``: *added* (only in the new release), *removed* (only
in the old), *changed* (in both, other values; with the fields that differ, down to a
triple's: ``tkgu_triples[Q1 P2 Q3].llm_assessment`` after a new curation), *unchanged*
(the same values, whatever the bytes: a line written again with other spacing or key
order is not a change). Either side may be a folder or an S3 release
(``emerge_lib.hub.release``).

Each side's files are checked against its manifest as they are read (their sha256, and
that none is missing): a release whose files changed since it was written is not what
its version names, so the diff refuses it (``verify=False``: compared anyway, each
mismatch logged as a warning and listed in the report).

The JSONL is what is compared, while ``load_release`` and ``emerge query`` read the typed
Parquet twins: each side's twins are checked against its JSONL (the Parquet the lines make,
as the writer makes it), and a twin that is missing or disagrees is reported
(``DiffReport.twins``, a line each in the brief): "unchanged" must not hide a Parquet that
says otherwise.
"""

from __future__ import annotations

import hashlib
import logging
from collections import Counter
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from typing import Any

import orjson

from emerge_lib.formats.format import FormatError
from emerge_lib.formats.layout import (
    CORPUS,
    EVALUATION_SET,
    PARQUET,
    PARQUET_TRIPLES,
    parquet_twin,
)
from emerge_lib.formats.manifest import ManifestError
from emerge_lib.hub.release import OpenRelease

log = logging.getLogger(__name__)

SECTIONS = (CORPUS, EVALUATION_SET)
STATES = ("added", "removed", "changed", "unchanged")


@dataclass(frozen=True)
class LineChange:
    state: str  # added, removed or changed
    section: str  # corpus or evaluation_set
    path: str  # the JSONL file (the new release's, the old one's for a removed line)
    hash_id: str
    fields: tuple[str, ...] = ()  # changed: the top-level fields that differ


@dataclass
class DiffReport:
    old: str
    new: str
    old_version: str
    new_version: str
    counts: dict[str, dict[str, Counter[str]]] = field(default_factory=dict)  # section → snapshot → state → n
    changes: list[LineChange] = field(default_factory=list)
    #: files that do not match their side's manifest ("old: PATH: why"), with verify=False
    unverified: list[str] = field(default_factory=list)
    twins: list[str] = field(default_factory=list)  # Parquet twins that disagree (one line each)

    def totals(self, section: str) -> Counter[str]:
        out: Counter[str] = Counter()
        for c in self.counts.get(section, {}).values():
            out.update(c)
        return out

    def to_dict(self) -> dict[str, Any]:
        return {"old": {"source": self.old, "version": self.old_version},
                "new": {"source": self.new, "version": self.new_version},
                "counts": {s: {snap: {k: c.get(k, 0) for k in STATES}
                               for snap, c in sorted(snaps.items())}
                           for s, snaps in self.counts.items()},
                "changes": [{"state": c.state, "section": c.section, "path": c.path,
                             "hash_id": c.hash_id, "fields": list(c.fields)}
                            for c in self.changes],
                "unverified": self.unverified, "twins": list(self.twins)}

    def brief(self) -> str:
        head = f"emerge diff {self.old_version} → {self.new_version}"
        rows = []
        for section in SECTIONS:
            for snap, c in sorted(self.counts.get(section, {}).items()):
                rows.append(f"  {section:<15} {snap}  " + "  ".join(
                    f"{k} {c.get(k, 0):,}" for k in STATES))
            t = self.totals(section)
            if self.counts.get(section):
                rows.append(f"  {section:<15} {'all':<10}  " + "  ".join(
                    f"{k} {t.get(k, 0):,}" for k in STATES))
        warn = [f"WARNING: {len(self.unverified)} files do not match their manifest "
                f"(compared anyway): {'; '.join(self.unverified[:3])}"] if self.unverified else []
        return "\n".join([head, *rows, *warn, *(f"  WARNING {t}" for t in self.twins)])


def _lines(release: OpenRelease, section: str, side: str, problems: list[str]
           ) -> dict[str, tuple[str, bytes]]:
    """hash_id → (its file, its line's bytes) of one section of a release; each file
    checked against the manifest as it is read (a mismatch, or a file of the manifest
    that is not there, goes to ``problems`` as "side: path: why")."""
    out: dict[str, tuple[str, bytes]] = {}
    entries = {f["path"]: f for f in release.manifest["files"]
               if fnmatchcase(f["path"], f"{section}/snapshot_*/delta_*.jsonl")}
    for rel, entry in sorted(entries.items()):
        path = release.root / rel
        if not path.is_file():
            problems.append(f"{side}: {rel}: missing")
            continue
        data = path.read_bytes()
        if len(data) != entry.get("bytes") or \
                hashlib.sha256(data).hexdigest() != entry.get("sha256"):
            problems.append(f"{side}: {rel}: other bytes than its manifest's sha256")
        for n, line in enumerate(data.split(b"\n"), start=1):
            if not line.strip():
                continue
            try:
                hid = orjson.loads(line)["hash_id"]
            except (orjson.JSONDecodeError, KeyError, TypeError):
                raise FormatError(f"{path}:{n}: not a release line (no hash_id)") from None
            if hid in out:
                raise FormatError(f"{path}:{n}: hash_id {hid} also in {out[hid][0]}")
            out[hid] = (rel, line)
    return out


def _twin_problems(release: OpenRelease, section: str) -> list[str]:
    """One line per JSONL file of ``section`` whose Parquet twins (the lines, and for the
    corpus the triples) are missing or hold other rows than its lines make."""
    import pyarrow.parquet as pq

    from emerge_lib.formats.schema import lines_table, read_jsonl, triples_table

    out: list[str] = []
    if not any(p.startswith(f"{PARQUET}/") for p in release.paths):
        return out  # a release of JSONL only (built before the Parquet twins)
    for path in release.files(f"{section}/snapshot_*/delta_*.jsonl"):
        rel = path.relative_to(release.root).as_posix()
        lines = lines_table(read_jsonl(path))
        twins = [(parquet_twin(rel), lines)]
        if section == CORPUS:
            twins.append((parquet_twin(rel, PARQUET_TRIPLES), triples_table(lines)))
        for twin, want in twins:
            try:
                got = pq.read_table(release.root / twin)
                same = got.schema.equals(want.schema) and got.equals(want)
            except (OSError, ValueError):
                same = False
            if not same:
                out.append(f"{release.source}: {twin} disagrees with {rel} (load_release and "
                           "emerge query read the Parquet): the release is inconsistent")
    return out


def _snapshot(path: str) -> str:
    return path.split("/")[1].removeprefix("snapshot_")


_GONE = object()  # a key or a triple one side does not have


def _fields(old: Any, new: Any, where: str = "", depth: int = 0) -> list[str]:
    """The fields in which two parsed values differ, as paths: ``passage``,
    ``tkgu_triples[Q1 P2 Q3].llm_assessment`` (a line's triples matched by their triple,
    not their position), ``mentions[4]``; no deeper than three levels."""
    if old == new:
        return []
    if depth < 3 and isinstance(old, dict) and isinstance(new, dict):
        return [path for k in dict.fromkeys([*old, *new])  # a key gone is a change
                for path in _fields(old.get(k, _GONE), new.get(k, _GONE),
                                    f"{where}.{k}" if where else k, depth + 1)]
    if depth < 3 and isinstance(old, list) and isinstance(new, list):
        a, b = _keyed(old), _keyed(new)
        if a is not None and b is not None:
            return [path for k in dict.fromkeys([*a, *b])
                    for path in _fields(a.get(k, _GONE), b.get(k, _GONE), f"{where}[{k}]",
                                        depth + 1)]
        if len(old) == len(new):
            return [path for n, (x, y) in enumerate(zip(old, new, strict=True))
                    for path in _fields(x, y, f"{where}[{n}]", depth + 1)]
    return [where]


def _keyed(items: list[Any]) -> dict[str, Any] | None:
    """A line's triples by their triple (``Q1 P2 Q3``); None for any other list."""
    if not all(isinstance(i, dict) and isinstance(i.get("triple"), list) for i in items):
        return None
    keyed = {" ".join(map(str, i["triple"])): i for i in items}
    return keyed if len(keyed) == len(items) else None


def diff_releases(old: OpenRelease, new: OpenRelease, *, verify: bool = True) -> DiffReport:
    """The lines ``new`` adds, removes and changes against ``old`` (see the module doc);
    a side whose files do not match its manifest is refused (``verify``), else listed in
    the report's ``unverified`` and logged."""
    report = DiffReport(old.source, new.source, old.version, new.version)
    problems: list[str] = []
    for section in SECTIONS:
        before = _lines(old, section, f"old {old.source}", problems)
        after = _lines(new, section, f"new {new.source}", problems)
        counts: dict[str, Counter[str]] = {}
        for hid in sorted(set(before) | set(after)):
            path, state, fields = _state(before.get(hid), after.get(hid))
            counts.setdefault(_snapshot(path), Counter())[state] += 1
            if state != "unchanged":
                report.changes.append(LineChange(state, section, path, hid, fields))
        if counts:
            report.counts[section] = counts
        report.twins += _twin_problems(old, section) + _twin_problems(new, section)
    if problems and verify:
        raise ManifestError(f"diff: {problems[0]}" + (
            f" (and {len(problems) - 1} more)" if len(problems) > 1 else "") +
            ": the release changed since it was written, so its version does not name it; "
            "rebuild or download it again, or compare it anyway with --unverified")
    for problem in problems:
        log.warning("diff: %s: compared anyway (--unverified)", problem)
    report.unverified = problems
    report.changes.sort(key=lambda c: (c.section, c.path, c.state, c.hash_id))
    return report


def _state(before: tuple[str, bytes] | None, after: tuple[str, bytes] | None
           ) -> tuple[str, str, tuple[str, ...]]:
    """(the file, the state, the fields that changed) of one hash_id."""
    if before is None:
        assert after is not None
        return after[0], "added", ()
    if after is None:
        return before[0], "removed", ()
    if before[1] == after[1]:
        return after[0], "unchanged", ()
    fields = tuple(_fields(orjson.loads(before[1]), orjson.loads(after[1])))
    return after[0], ("changed" if fields else "unchanged"), fields
