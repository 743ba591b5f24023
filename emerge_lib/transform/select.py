"""instances + passages + verdicts → selection: which lines a delta file releases, and the
test split.

Per delta file (snapshot, window), on the passages that have instances (the release's
lines), as the authors' s07 and s07b do it (the defaults;
their code's file and line in docs/data-model.md):

- **Guards** (``selection.guards``, S07:377-425, 483): lines with template braces, mostly
  table markup (fewer than three words per ``|`` or ``:``), or mostly list markup (fewer
  words than ``*`` groups, unless a "list of" or a cast list) go; read, as s07 reads
  them, on the released passage split at its first ``:`` (``guard_split_at_colon``, a
  quirk of theirs: a title with a colon moves its rest into the text measured).
- **Support** (``selection.require_supported``, S07:607-629): once curated, a line needs
  an E, EE, EE-KG or D triple its judges asserted (the curation's judge rule,
  ``curation.rules``); its other triples stay, with their verdicts. An uncurated release
  keeps every line the structural rules kept (its card says it is uncurated).
- **Near-duplicates, two passes** (``selection.dedup_passes: authors``, S07:647-1129).
  Pass 1, on the passage text as released (title prefix included), lines sorted by length:
  two lines of the same article are duplicates when the longer is ≥ 2,500 characters, the
  length ratio ≥ 0.70 and the normalized edit distance (Levenshtein / (len1 + len2)) ≤
  0.25 or that of their common-length prefixes ≤ 0.10; shorter, when the prefixes' ≤ 0.05
  or the ratio ≥ 0.85 and the distance ≤ 0.15; lines of different articles when the ratio
  > 0.98 and the distance ≤ 0.05. The survivor of a pair is the line with more supported
  D, then EE, E, EE-KG, X triples, more triples (a two-operation triple twice), the
  longer passage, then a seeded draw. Pass 2 groups the survivors by their exact triples
  and operations; in a group, lines with a supported removal come first, then supported
  additions, then supported EE-KG additions (each tier in its order), and a line is kept
  when its token Jaccard is below ``max_jaccard`` and its distance above
  ``min_edit_distance`` against every line kept before it. Pass 1 compares only what can
  match (the same article, and lengths within 2 % for different articles), so it is not
  quadratic in a delta file.
- **Test split** (s07b): a seeded draw of ``evaluation_pre_draw`` lines (their 1,000, at
  least 400 per op) and from those ``evaluation_per_delta`` (100, at least 40 per op):
  lines with a supported op of ``evaluation_ops[0]`` (D) first until the minimum is
  reached, then EE-KG, EE, E, then any.

The no-selection-rules preset (the selection before the authors' rules): no guards, no
support rule, one greedy pass (``dedup_passes: greedy``: lines ranked as s07 ranks them,
a line dropped when some line kept before it is above ``max_jaccard`` or below
``min_edit_distance``, compared only within blocks that can match: the same article, the
same triples, a shared rare token), one draw.

Every line gets a row with its fate and the reason (``duplicate``, ``unsupported``,
``guard:…``), so nothing is dropped silently; the release reads the table.
"""

from __future__ import annotations

import bisect
import hashlib
import math
import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from emerge_lib.catalog import Catalog
from emerge_lib.core.config import CurationSettings, PassageSettings, SelectionSettings
from emerge_lib.core.errors import EmergeError
from emerge_lib.core.schedule import SnapshotPlan
from emerge_lib.core.spawn import spawned_pool
from emerge_lib.curation.prompts import ASSERTION, DEPRECATION
from emerge_lib.curation.verdicts import Triple, assessments, passage_text
from emerge_lib.formats.format import hash_id

TOKEN = re.compile(r"(?u)\b\w\w+\b")  # scikit-learn CountVectorizer's tokens, as s07's
RANK_OPS = ("D", "EE", "E", "EE-KG", "X")  # s07's order of preference
DELTA_OPS = ("E", "EE", "EE-KG", "D")  # what supports a line (S07:626)


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
    text: str  # the paragraph (greedy mode compares it)
    signature: frozenset[tuple[str, Triple]]
    supported: Counter[str]  # op → supported triples (all triples when not curated)
    triples: int
    tokens: frozenset[str] = field(default_factory=frozenset)
    released: str = ""  # the passage as released: title prefix + text (the authors' texts)
    title: str = ""
    ops_total: int = 0  # triples counted once per operation (s07's total)
    tiers: tuple[int, int, int, int] = (0, 0, 0, 0)  # s07 pass 2: R, A, KA, KR
    order: bytes = b""  # the seeded draw that breaks ties
    released_tokens: frozenset[str] = field(default_factory=frozenset)

    def rank_key(self) -> tuple[int | str, ...]:
        return (*(-self.supported[op] for op in RANK_OPS), -self.triples, -len(self.text),
                self.hash_id)


@dataclass(frozen=True)
class Fate:
    kept: bool
    rank: int
    duplicate_of: str | None = None
    jaccard: float | None = None
    edit_distance: float | None = None
    reason: str | None = None  # why not kept: duplicate, unsupported, guard:...


# --- guards and support -------------------------------------------------------------------


def guard(line: Line, split_at_colon: bool) -> str | None:
    """Why s07's structural checks refuse a line (S07:369-425, 483), or None.

    With ``split_at_colon`` (``selection.guard_split_at_colon``, their quirk) the checks
    read the released passage as s07 does (S07:372-373): the text after its first ``:``
    and the title before it. The first ``:`` is the title prefix's, unless the title holds
    one: then the title's rest and the prefix's colon count as the text's (one more
    ``:``, more words), and "list of" is looked for in the title's first part only.
    Without it the checks read the paragraph and the title themselves."""
    full = line.released or line.text
    text, title = line.text, line.title
    if split_at_colon and ":" in full:
        head, rest = full.split(":", 1)
        text, title = rest.strip(), head.strip()
    if "{{" in full:
        return "guard:template"
    words = len(text.split(" "))
    marks = text.count("|") + text.count(":")
    if marks and words / marks < 3:
        return "guard:table-markup"
    stars = len(re.findall(r"\*+", full))
    if stars > 1:
        lowered = text.lower()
        if "list of" in title.lower() or "==cast==" in lowered or "== cast ==" in lowered:
            return None
        if words / stars < 1:
            return "guard:list-markup"
    elif text.lower().startswith(("==see also==", "== see also ==")) and words < 2:
        return "guard:see-also"
    return None


def supported(line: Line) -> bool:
    """A line with a supported E, EE, EE-KG or D triple (X never supports one)."""
    return any(line.supported[op] for op in DELTA_OPS)


# --- the authors' two dedup passes ------------------------------------------------------


def _survivor(a: Line, b: Line) -> Line:
    """s07's deduplicate_instance (S07:124-359): the first strict difference decides."""
    for x, y in ((a.supported[op], b.supported[op]) for op in RANK_OPS):
        if x != y:
            return a if x > y else b
    if a.ops_total != b.ops_total:
        return a if a.ops_total > b.ops_total else b
    if len(a.released) != len(b.released):
        return a if len(a.released) > len(b.released) else b
    return a if a.order < b.order else b


def _near_identical(a: str, b: str, same_anchor: bool) -> bool:
    """s07 pass 1's duplicate test (S07:670-720, config ``preliminary_pass``)."""
    short, long_ = min(len(a), len(b)), max(len(a), len(b))
    ratio = _ratio(short, long_)
    if not same_anchor:
        return ratio > 0.98 and edit_distance(a, b) <= 0.05
    prefix = edit_distance(a[:short], b[:short])
    if long_ >= 2500:
        return ratio >= 0.70 and (edit_distance(a, b) <= 0.25 or prefix <= 0.10)
    return prefix <= 0.05 or (ratio >= 0.85 and edit_distance(a, b) <= 0.15)


class _OtherArticles:
    """Which lines pass 1 would absorb into a current line from other articles, for all
    of the line's length band at once.

    The pass visits, after the current line, every line whose length is within 2 % of
    its own (``0.98 × size < length`` and ``length × 0.98 < size``) and tests each with
    ``_near_identical(current, other, False)``: length ratio > 0.98 and edit distance ≤
    0.05 of the summed length. A delta file's band can hold a quarter of its lines (the
    bench world's templated passages: 0.73 M pairs in a window of 0.8 k lines), so the
    pairs are tested in vectorized steps (the length band, an exact lower bound on the
    distance from character counts) and one C loop per line over what is left
    (rapidfuzz's ``cdist`` with a distance cutoff: a distance over it cannot pass, each
    one under it goes through the same float test), and the pass then jumps from one
    absorbable line to the next instead of visiting every line of the band in Python."""

    def __init__(self, texts: Sequence[str]) -> None:
        import numpy as np

        self.texts = np.asarray(texts, dtype=object)
        self.lengths = np.asarray([len(t) for t in texts], dtype=np.int64)
        self.chars = np.stack([np.bincount(np.minimum(np.frombuffer(
            t.encode("utf-32-le"), dtype=np.uint32), 127), minlength=128)
            for t in texts]).astype(np.int32) if texts else np.zeros((0, 128), np.int32)
        self.near: dict[int, list[int]] = {}

    def after(self, x: int) -> list[int]:
        """The lines (ascending) that pass the test against line ``x`` within its band."""
        if x not in self.near:
            self.near[x] = self._band(x)
        return self.near[x]

    def _band(self, x: int) -> list[int]:
        import numpy as np
        from rapidfuzz.distance import Levenshtein
        from rapidfuzz.process import cdist

        size = int(self.lengths[x])
        lo = int(np.searchsorted(self.lengths, 0.98 * size, side="right"))
        wide = int(np.searchsorted(self.lengths, size / 0.97, side="right"))
        # the band's end by the pass's own test (lengths ascend: a prefix of the slice)
        hi = lo + int(np.count_nonzero(self.lengths[lo:wide] * 0.98 < size))
        rows = np.arange(lo, hi)
        lens = self.lengths[lo:hi]
        longer = np.maximum(lens, size)
        ratio = np.divide(np.minimum(lens, size), longer, out=np.ones(len(rows)),
                          where=longer > 0)  # _ratio, elementwise
        rows = rows[(ratio > 0.98) & (rows != x)]
        # an exact lower bound first: an edit adds or removes at most one character, so
        # the distance is at least the characters one text has beyond the other's
        # (counted per code point; code points over 126 share a count, which can only
        # lower the bound); on the bench world it leaves a tenth of the pairs
        apart = self.chars[rows] - self.chars[x]
        bound = np.maximum(np.clip(apart, 0, None).sum(axis=1), np.clip(-apart, 0, None).sum(axis=1))
        rows = rows[bound <= 0.05 * (size + self.lengths[rows]) + 1]
        if not len(rows):
            return []
        total = size + self.lengths[rows]
        cutoff = int(np.ceil(0.05 * total.max())) + 1
        found = cdist([self.texts[x]], self.texts[rows].tolist(),
                      scorer=Levenshtein.distance, score_cutoff=cutoff, dtype="int32")[0]
        scaled = np.divide(found, total, out=np.zeros(len(rows)), where=total > 0)
        near: list[int] = rows[(found <= cutoff) & (scaled <= 0.05)].tolist()
        return near


def _ratio(a: int, b: int) -> float:
    """The shorter length over the longer (1 for two empty texts), as s07 computes it."""
    short, long_ = min(a, b), max(a, b)
    return short / long_ if long_ else 1.0


def pass_one(lines: Sequence[Line]) -> tuple[list[Line], dict[str, tuple[str, float]]]:
    """Survivors of pass 1, and each loser → (its survivor, their edit distance).

    Lines in length order (ties in the seeded order); each line not yet consumed becomes
    the current line and absorbs the later lines it duplicates, the survivor of each pair
    becoming the current line (its article stays the first line's, as in S07:662). Only
    lines that can be duplicates are compared: the same article, or lengths within 2 %.
    Within 2 % every pair is compared (the authors' rule), so that part grows with the
    square of a delta file's lines; ``_OtherArticles`` does it in C."""
    ordered = sorted(lines, key=lambda line: (len(line.released), line.order))
    position = {id(line): i for i, line in enumerate(ordered)}
    others = _OtherArticles([line.released for line in ordered])
    by_anchor: dict[int, list[int]] = defaultdict(list)
    for i, line in enumerate(ordered):
        by_anchor[line.page_id].append(i)
    consumed: set[int] = set()
    survivors: list[Line] = []
    lost: dict[str, tuple[str, float]] = {}
    for i, first in enumerate(ordered):
        if i in consumed:
            continue
        consumed.add(i)
        current, anchor = first, first.page_id
        same = by_anchor[anchor]
        j = i + 1
        while True:
            k = bisect.bisect_left(same, j)
            next_same = same[k] if k < len(same) else None
            near = others.after(position[id(current)])
            next_other = next((y for y in near[bisect.bisect_left(near, j):]
                               if y not in consumed and ordered[y].page_id != anchor), None)
            candidates = [x for x in (next_same, next_other) if x is not None]
            if not candidates:
                break
            j = min(candidates)
            other = ordered[j]
            j += 1
            if (j - 1) in consumed:
                continue
            if other.page_id == anchor and not _near_identical(
                    current.released, other.released, True):
                continue  # (a line of another article comes here only when near)
            winner = _survivor(current, other)
            loser = other if winner is current else current
            lost[loser.passage_id] = (winner.passage_id,
                                      edit_distance(loser.released, winner.released))
            consumed.add(j - 1)
            current = winner
        survivors.append(current)
    return survivors, lost


def _tier(line: Line) -> tuple[int, tuple[int | bytes, ...]]:
    """s07 pass 2's tier of a line and its order in the tier (S07:940-1110): supported
    removals first, then supported additions, then supported EE-KG additions."""
    r, a, ka, kr = line.tiers
    size = len(line.released)
    if r > 0:
        return 0, (-r, -a, -ka, -size, line.order)
    if a > 0:
        return 1, (-a, -ka, -size, line.order)
    if ka > 0:
        return 2, (-kr, -ka, -size, line.order)
    return 3, (-size, line.order)  # none in s07 (the support rule ran first)


def pass_two(lines: Sequence[Line], max_jaccard: float, min_edit_distance: float
             ) -> dict[str, tuple[str, float, float]]:
    """Each line pass 2 leaves out → (the kept line it is too close to, Jaccard, distance):
    within a group of lines with the same triples and operations, kept when its Jaccard
    is below ``max_jaccard`` and its distance above ``min_edit_distance`` against every
    line kept before it."""
    groups: dict[frozenset[tuple[str, Triple]], list[Line]] = defaultdict(list)
    for line in lines:
        groups[line.signature].append(line)
    out: dict[str, tuple[str, float, float]] = {}
    for members in groups.values():
        kept: list[Line] = []
        for line in sorted(members, key=_tier):
            close = None
            for other in kept:
                jac = jaccard(line.released_tokens, other.released_tokens)
                ned = edit_distance(line.released, other.released)
                if not (jac < max_jaccard and ned > min_edit_distance):
                    close = (other.passage_id, jac, ned)
                    break
            if close is None:
                kept.append(line)
            else:
                out[line.passage_id] = close
    return out


# --- the greedy pass (the no-selection-rules preset) ---------------------------------


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


def deduplicate(lines: list[Line], max_jaccard: float, min_edit_distance: float,
                enabled: bool) -> dict[str, Fate]:
    """passage_id → its fate: kept greedily in rank order unless too similar to a line
    kept before it (every line kept, ranked, when not ``enabled``)."""
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
                fate = Fate(False, rank_of[i], other.passage_id, jac, ned, "duplicate")
                break
        if fate.kept:
            kept.add(i)
        fates[line.passage_id] = fate
    return fates


def select_lines(lines: list[Line], settings: SelectionSettings, curated: bool
                 ) -> dict[str, Fate]:
    """passage_id → fate, under the configured rules (see the module docstring)."""
    rank_of = {line.passage_id: r for r, line in
               enumerate(sorted(lines, key=Line.rank_key), 1)}
    fates: dict[str, Fate] = {}
    left: list[Line] = []
    for line in lines:
        why = guard(line, settings.guard_split_at_colon) if settings.guards else None
        if why is None and settings.require_supported and curated and not supported(line):
            why = "unsupported"
        if why is None:
            left.append(line)
        else:
            fates[line.passage_id] = Fate(False, rank_of[line.passage_id], reason=why)
    if settings.dedup_passes == "greedy":
        fates.update(deduplicate(left, settings.max_jaccard, settings.min_edit_distance,
                                 settings.dedup))
        return {pid: Fate(f.kept, rank_of[pid], f.duplicate_of, f.jaccard, f.edit_distance,
                          f.reason) for pid, f in fates.items()}
    survivors, lost = (pass_one(left) if settings.dedup else (left, {}))
    close = pass_two(survivors, settings.max_jaccard, settings.min_edit_distance) \
        if settings.dedup else {}
    for line in left:
        pid = line.passage_id
        if pid in lost:
            winner, ned = lost[pid]
            while winner in lost:  # a survivor that lost later: name the last one
                winner = lost[winner][0]
            fates[pid] = Fate(False, rank_of[pid], winner, None, ned, "duplicate")
        elif pid in close:
            other, jac, ned = close[pid]
            fates[pid] = Fate(False, rank_of[pid], other, jac, ned, "duplicate")
        else:
            fates[pid] = Fate(True, rank_of[pid])
    return fates


# --- the test split -----------------------------------------------------------------------


def draw_evaluation_set(lines: list[Line], fates: dict[str, Fate], seed: str, size: int,
                        min_per_op: int, ops: Iterable[str]) -> set[str]:
    """The seeded stratified draw of s07b among kept lines with a supported triple."""
    pool = sorted((line for line in lines if fates[line.passage_id].kept
                   and any(line.supported.values())),
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


def draw_test_split(lines: list[Line], fates: dict[str, Fate], settings: SelectionSettings,
                    seed: str) -> set[str]:
    """s07b's draws: the first stage (``evaluation_pre_draw``), then the test split from
    what it drew (their 35K set, then the 3.5K one), each seeded."""
    ops = list(settings.evaluation_ops)
    if settings.evaluation_pre_draw:
        first, minimum = settings.evaluation_pre_draw
        drawn = draw_evaluation_set(lines, fates, f"{seed}:pre", first, minimum, ops)
        fates = {pid: (f if pid in drawn else Fate(False, f.rank)) for pid, f in fates.items()}
    return draw_evaluation_set(lines, fates, seed, settings.evaluation_per_delta,
                               settings.evaluation_min_per_op, ops)


# --- the stage ------------------------------------------------------------------------------


def window_lines(catalog: Catalog, settings: SelectionSettings, curation: CurationSettings,
                 passage_settings: PassageSettings, snapshot: str, window: int,
                 versions: dict[str, int | None]) -> list[Line]:
    """The release lines of one delta file, with what ranks them."""
    def rows(name: str, *only: tuple[str, str, Any]) -> list[dict[str, Any]]:
        if versions[name] is None:
            return []
        found: list[dict[str, Any]] = catalog.read_arrow(
            name, filters=[("snapshot", "=", snapshot), ("window", "=", window), *only],
            version=versions[name]).to_pylist()
        return found

    instances = rows("instances")
    by_passage: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in instances:
        by_passage[r["passage_id"]].append(r)
    # only the passages with instances become Python rows (a few in a hundred of a window's)
    passages = rows("passages", ("passage_id", "in", sorted(by_passage))) if by_passage else []
    assessed = assessments(catalog, snapshot, window, versions["verdicts"], instances,
                           passages, curation, passage_settings)
    curated = curation.enabled
    judges = (curation.additions.name, curation.deprecations.name)
    lines = []
    for p in passages:
        pid, mine = p["passage_id"], by_passage[p["passage_id"]]
        ops_of: dict[Triple, set[str]] = defaultdict(set)
        for r in mine:
            ops_of[(r["s"], r["p"], r["o"])].add(r["op"])
        said: Counter[str] = Counter()
        tiers = [0, 0, 0, 0]
        for triple, ops in ops_of.items():
            entries, asserted = assessed.get(pid, {}).get(triple, ([], None))
            said.update(set(asserted or ()) if curated else ops)
            verdict = {(e["llm_name"], e["llm_prompt_type"]): e["llm_assessment"]
                       for e in entries}
            assert_yes = verdict.get((judges[0], ASSERTION)) is True if curated else True
            deprecate_yes = (verdict.get((judges[1], DEPRECATION)) is True if curated
                             else "D" in ops)
            if ops & {"E", "EE", "D"}:
                tiers[0] += deprecate_yes
                tiers[1] += assert_yes
            if "EE-KG" in ops:
                tiers[2] += assert_yes
                tiers[3] += deprecate_yes
        released = passage_text(p, passage_settings)
        lines.append(Line(
            passage_id=pid, hash_id=hash_id(snapshot, window, p["page_id"], pid),
            page_id=p["page_id"], text=p["text"],
            signature=frozenset((r["op"], (r["s"], r["p"], r["o"])) for r in mine),
            supported=said, triples=len(ops_of), tokens=tokens(p["text"]),
            released=released, title=p["page_title"] or "", released_tokens=tokens(released),
            ops_total=sum(len(ops) for ops in ops_of.values()),
            tiers=(tiers[0], tiers[1], tiers[2], tiers[3]),
            order=hashlib.sha256(f"{settings.seed}:{snapshot}:{window}:{pid}".encode())
            .digest()))
    return lines


def _window_rows(catalog: Catalog, settings: SelectionSettings, curation: CurationSettings,
                 passage_settings: PassageSettings, snapshot: str, window: int,
                 versions: dict[str, int | None]) -> list[dict[str, Any]]:
    """One window's selection rows (its lines read through deltalake: no session)."""
    lines = window_lines(catalog, settings, curation, passage_settings, snapshot, window,
                         versions)
    fates = select_lines(lines, settings, curation.enabled)
    chosen = draw_test_split(lines, fates, settings, f"{settings.seed}:{snapshot}:{window}")
    return [{"snapshot": snapshot, "window": window, "passage_id": pid, "kept": f.kept,
             "duplicate_of": f.duplicate_of, "jaccard": f.jaccard,
             "edit_distance": f.edit_distance, "rank": f.rank, "reason": f.reason,
             "evaluation_set": pid in chosen} for pid, f in fates.items()]


def _window_rows_at(warehouse: str, storage_options: dict[str, str], settings: SelectionSettings,
                    curation: CurationSettings, passage_settings: PassageSettings,
                    snapshot: str, window: int, versions: dict[str, int | None]
                    ) -> list[dict[str, Any]]:
    """``_window_rows`` in a worker process, the warehouse opened by path."""
    catalog = Catalog(warehouse, storage_options=storage_options or None)
    return _window_rows(catalog, settings, curation, passage_settings, snapshot, window,
                        versions)


def build_selection(catalog: Catalog, plan: SnapshotPlan, settings: SelectionSettings,
                    curation: CurationSettings, passage_settings: PassageSettings
                    ) -> dict[int, int]:
    """Write the selection rows of every window of ``plan``; returns rows per window. The
    windows are independent: with ``settings.workers`` > 1 each is selected in a spawned
    process (its reads need no session), the rows taken in window order (the same rows)."""
    versions = {name: catalog.version(name) for name in ("instances", "passages", "verdicts")}
    windows = [w.k for w in plan.windows]
    workers = min(settings.workers, len(windows))
    if workers > 1:
        with spawned_pool(workers) as pool:
            futures = [pool.submit(_window_rows_at, catalog.warehouse,
                                   dict(catalog.storage_options), settings, curation,
                                   passage_settings, plan.key, k, versions) for k in windows]
            try:
                per_window = [f.result() for f in futures]
            except EmergeError as exc:  # its line, not the worker's traceback under it
                raise exc from None
    else:
        per_window = [_window_rows(catalog, settings, curation, passage_settings, plan.key, k,
                                   versions) for k in windows]
    rows = [r for found in per_window for r in found]
    return catalog.replace_partitions("selection", catalog.frame("selection", rows),
                                      {"snapshot": plan.key}, "window", windows,
                                      clear_others=True)
