"""instances + passages + verdicts → selection: near-duplicate removal and the test split.

The authors' s07 and s07b, per delta file (snapshot, window), on the passages that become
release lines (those with instances):

- **Near-duplicates.** Lines are ranked as s07 ranks them (more supported D triples, then
  EE, E, EE-KG, X, more triples in all, the longer passage, then the line's hash), and kept
  greedily: a line is dropped when some line kept before it is too similar, token-set
  Jaccard above ``selection.max_jaccard`` or normalized edit distance (Levenshtein /
  (len1 + len2)) below ``selection.min_edit_distance``, so kept lines are pairwise at most
  that similar. Not quadratic: a pair is compared only when the two lines share a block:
  the same article (edited versions of one paragraph are the usual duplicates), the same
  aligned triples (s07's pass 2 groups by that signature), or a token of their
  Jaccard prefix (prefix filtering: two sets above the threshold always share one of the
  rarest ``n - ceil(t·n) + 1`` tokens of each). Identical passages in different delta
  files of a snapshot are the cumulative windows, not duplicates, as in the released data.
- **Test split.** A seeded, reproducible, stratified draw of ``evaluation_per_delta``
  lines per delta file from the kept lines with an asserted triple (every kept line when
  curation is off): lines with an asserted op of ``evaluation_ops[0]`` (D) first until
  ``evaluation_min_per_op`` lines have it, then the next op, ..., then any, as s07b does.

Every line gets a row (kept or not, and which kept line it duplicates, with both
similarities), so nothing is dropped silently; the release reads the table.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from emerge_lib.catalog import Catalog
from emerge_lib.core.config import Config
from emerge_lib.core.schedule import SnapshotPlan
from emerge_lib.curation.verdicts import Triple, assessments
from emerge_lib.release.format import hash_id

TOKEN = re.compile(r"(?u)\b\w\w+\b")  # scikit-learn CountVectorizer's tokens, as s07's
RANK_OPS = ("D", "EE", "E", "EE-KG", "X")  # s07's order of preference


def tokens(text: str) -> frozenset[str]:
    return frozenset(TOKEN.findall(text.lower()))


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    union = len(a | b)
    return len(a & b) / union if union else 1.0


def edit_distance(a: str, b: str) -> float:
    """Levenshtein distance over the summed length (s07's normalized edit distance)."""
    from rapidfuzz.distance import Levenshtein

    total = len(a) + len(b)
    return Levenshtein.distance(a, b) / total if total else 0.0


@dataclass
class Line:
    """One release line (a passage of a delta file) and what ranks it."""

    passage_id: str
    hash_id: str
    page_id: int
    text: str
    signature: frozenset[tuple[str, Triple]]
    supported: Counter[str]  # op → asserted triples (all triples when not curated)
    triples: int
    tokens: frozenset[str] = field(default_factory=frozenset)

    def rank_key(self) -> tuple:
        return (*(-self.supported[op] for op in RANK_OPS), -self.triples, -len(self.text),
                self.hash_id)


def candidate_pairs(lines: list[Line], max_jaccard: float) -> dict[int, set[int]]:
    """Index → indexes of the lines it must be compared with (see the module docstring)."""
    neighbours: dict[int, set[int]] = defaultdict(set)

    def link(group: Iterable[int]) -> None:
        group = list(group)
        for i in group:
            neighbours[i].update(j for j in group if j != i)

    for key in ("page_id", "signature"):
        blocks: dict[Any, list[int]] = defaultdict(list)
        for i, line in enumerate(lines):
            blocks[getattr(line, key)].append(i)
        for block in blocks.values():
            if len(block) > 1:
                link(block)
    frequency = Counter(t for line in lines for t in line.tokens)
    postings: dict[str, list[int]] = defaultdict(list)
    for i, line in enumerate(lines):
        ordered = sorted(line.tokens, key=lambda t: (frequency[t], t))
        n = len(ordered)
        for t in ordered[: n - math.ceil(max_jaccard * n) + 1] if n else ():
            postings[t].append(i)
    for block in postings.values():
        if len(block) > 1:
            link(block)
    return neighbours


@dataclass(frozen=True)
class Fate:
    kept: bool
    rank: int
    duplicate_of: str | None = None
    jaccard: float | None = None
    edit_distance: float | None = None


def deduplicate(lines: list[Line], max_jaccard: float, min_edit_distance: float,
                enabled: bool = True) -> dict[str, Fate]:
    """passage_id → its fate: kept greedily in rank order unless too similar to a line
    kept before it."""
    order = sorted(range(len(lines)), key=lambda i: lines[i].rank_key())
    rank_of = {i: r for r, i in enumerate(order, 1)}
    neighbours = candidate_pairs(lines, max_jaccard) if enabled else {}
    kept: set[int] = set()
    fates: dict[str, Fate] = {}
    for i in order:
        line = lines[i]
        fate = Fate(True, rank_of[i])
        for j in sorted(neighbours.get(i, set()) & kept, key=rank_of.__getitem__):
            other = lines[j]
            jac = jaccard(line.tokens, other.tokens)
            ned = edit_distance(line.text, other.text)
            if jac > max_jaccard or ned < min_edit_distance:
                fate = Fate(False, rank_of[i], other.passage_id, jac, ned)
                break
        if fate.kept:
            kept.add(i)
        fates[line.passage_id] = fate
    return fates


def draw_evaluation_set(lines: list[Line], fates: dict[str, Fate], seed: str, size: int,
                        min_per_op: int, ops: Iterable[str]) -> set[str]:
    """The seeded stratified draw of s07b among kept lines with a supported triple."""
    pool = sorted((line for line in lines if fates[line.passage_id].kept
                   and sum(line.supported.values())),
                  key=lambda line: hashlib.sha256(f"{seed}:{line.passage_id}".encode()).digest())
    picked: list[Line] = []
    chosen: set[str] = set()
    for op in ops:
        count = sum(1 for line in picked if line.supported[op])
        for line in pool:
            if len(picked) >= size or count >= min_per_op:
                break
            if line.passage_id not in chosen and line.supported[op]:
                picked.append(line)
                chosen.add(line.passage_id)
                count += 1
    for line in pool:
        if len(picked) >= size:
            break
        if line.passage_id not in chosen:
            picked.append(line)
            chosen.add(line.passage_id)
    return chosen


def window_lines(catalog: Catalog, cfg: Config, snapshot: str, window: int,
                 versions: dict[str, int | None]) -> list[Line]:
    """The release lines of one delta file, with what ranks them."""
    def rows(name: str) -> list[dict[str, Any]]:
        if versions[name] is None:
            return []
        return catalog.read_arrow(name, filters=[("snapshot", "=", snapshot),
                                                 ("window", "=", window)],
                                  version=versions[name]).to_pylist()

    instances = rows("instances")
    by_passage: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in instances:
        by_passage[r["passage_id"]].append(r)
    passages = [p for p in rows("passages") if p["passage_id"] in by_passage]
    assessed = assessments(catalog, snapshot, window, versions["verdicts"], instances,
                           passages, cfg.curation, cfg.passages)
    curated = cfg.curation.enabled
    lines = []
    for p in passages:
        pid, mine = p["passage_id"], by_passage[p["passage_id"]]
        ops_of: dict[Triple, set[str]] = defaultdict(set)
        for r in mine:
            ops_of[(r["s"], r["p"], r["o"])].add(r["op"])
        supported: Counter[str] = Counter()
        for triple, ops in ops_of.items():
            if curated:
                ops = set(assessed.get(pid, {}).get(triple, ([], None))[1] or ())
            supported.update(ops)
        lines.append(Line(
            passage_id=pid, hash_id=hash_id(snapshot, window, p["page_id"], pid),
            page_id=p["page_id"], text=p["text"],
            signature=frozenset((r["op"], (r["s"], r["p"], r["o"])) for r in mine),
            supported=supported, triples=len(ops_of), tokens=tokens(p["text"])))
    return lines


def build_selection(catalog: Catalog, plan: SnapshotPlan, cfg: Config) -> dict[int, int]:
    """Write the selection rows of every window of ``plan``; returns rows per window."""
    settings = cfg.selection
    versions = {name: catalog.version(name) for name in ("instances", "passages", "verdicts")}
    rows: list[dict[str, Any]] = []
    for w in plan.windows:
        lines = window_lines(catalog, cfg, plan.key, w.k, versions)
        fates = deduplicate(lines, settings.max_jaccard, settings.min_edit_distance,
                            settings.dedup)
        chosen = draw_evaluation_set(lines, fates, f"{settings.seed}:{plan.key}:{w.k}",
                                     settings.evaluation_per_delta,
                                     settings.evaluation_min_per_op, settings.evaluation_ops)
        rows += [{"snapshot": plan.key, "window": w.k, "passage_id": pid, "kept": f.kept,
                  "duplicate_of": f.duplicate_of, "jaccard": f.jaccard,
                  "edit_distance": f.edit_distance, "rank": f.rank,
                  "evaluation_set": pid in chosen} for pid, f in fates.items()]
    return catalog.replace_partitions("selection", catalog.frame("selection", rows),
                                      {"snapshot": plan.key}, "window",
                                      [w.k for w in plan.windows], clear_others=True)
