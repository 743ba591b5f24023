"""``emerge diff``: what one release adds, removes and changes against another, line by
line, by ``hash_id`` (stable: the same snapshot, window, page and paragraph always have
the same id), so a quarter's extension says what it added.

Both releases' JSONL lines are compared (the corpus and the evaluation set, each on its
own), byte for byte per ``hash_id``: *added* (only in the new release), *removed* (only
in the old), *changed* (in both, other bytes; with the top-level fields that differ, e.g.
``tkgu_triples`` after a new curation), *unchanged*. Either side may be a folder or an S3
release (``emerge_lib.hub.release``).

The JSONL is what is compared, while ``load_release`` and ``emerge query`` read the typed
Parquet twins: each side's twins are checked against its JSONL (the Parquet the lines make,
as the writer makes it), and a twin that is missing or disagrees is reported
(``DiffReport.twins``, a line each in the brief): "unchanged" must not hide a Parquet that
says otherwise.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
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
from emerge_lib.hub.release import OpenRelease

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
                "twins": list(self.twins)}

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
        return "\n".join([head, *rows, *(f"  WARNING {t}" for t in self.twins)])


def _lines(release: OpenRelease, section: str) -> dict[str, tuple[str, bytes]]:
    """hash_id → (its file, its line's bytes) of one section of a release."""
    out: dict[str, tuple[str, bytes]] = {}
    for path in release.files(f"{section}/snapshot_*/delta_*.jsonl"):
        rel = path.relative_to(release.root).as_posix()
        with open(path, "rb") as fh:
            for n, line in enumerate(fh, start=1):
                line = line.rstrip(b"\n")
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


def _fields(old: bytes, new: bytes) -> tuple[str, ...]:
    a, b = orjson.loads(old), orjson.loads(new)
    return tuple(k for k in dict.fromkeys([*a, *b]) if a.get(k) != b.get(k))


def diff_releases(old: OpenRelease, new: OpenRelease) -> DiffReport:
    """The lines ``new`` adds, removes and changes against ``old`` (see the module doc)."""
    report = DiffReport(old.source, new.source, old.version, new.version)
    for section in SECTIONS:
        before, after = _lines(old, section), _lines(new, section)
        counts: dict[str, Counter[str]] = {}
        for hid in sorted(set(before) | set(after)):
            if hid not in before:
                path, state, fields = after[hid][0], "added", tuple[str, ...]()
            elif hid not in after:
                path, state, fields = before[hid][0], "removed", ()
            elif before[hid][1] != after[hid][1]:
                path, state = after[hid][0], "changed"
                fields = _fields(before[hid][1], after[hid][1])
            else:
                path, state, fields = after[hid][0], "unchanged", ()
            counts.setdefault(_snapshot(path), Counter())[state] += 1
            if state != "unchanged":
                report.changes.append(LineChange(state, section, path, hid, fields))
        if counts:
            report.counts[section] = counts
        report.twins += _twin_problems(old, section) + _twin_problems(new, section)
    report.changes.sort(key=lambda c: (c.section, c.path, c.state, c.hash_id))
    return report
