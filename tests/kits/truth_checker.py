"""An independent check of a sample world's truth.jsonl and traps.jsonl against its dumps.

Independent means: it reads only the generated mirror (mwxml + json + bz2 + stdlib) and
re-implements docs/semantics.md §1.1-1.2 naively here, sharing no code with emerge_lib (neither
the generator nor the pipeline). What it verifies, honestly scoped:

KG side (full): for every truth row, from the Wikidata history alone -- the state at τ
(greatest timestamp, ties by revision id, revision-deleted texts skipped), both JSON
serializations, entity redirects, V (enwiki sitelink), T with the 168 h stability
normalization -- that the op is right (X / E / EE / EE-KG / D) and so is the D signal;
and, per listed passage, that every KG candidate between its mentioned entities (and
every EE-KG candidate of them) is listed, so nothing is missing from a listed passage.
Traps without a paragraph are checked the same way: the op must not hold in the window.

Passage side (simple): the listed paragraph is found (by naively cleaned text) in the
article at τ_k, is absent at t, first appears inside (τ_{k-1}, τ_k] (inside (t, τ_k] with
cumulative windows), is still there 30 minutes later, has 25+ tokens, and its links
resolve (title normalization, redirects at τ_k, sitelinks at τ_k, the article's own item)
to exactly the listed mentioned QIDs.

Three semantics are checked: "released" (the defaults, what the released data shows:
cumulative windows, emerging = the item was created at or after t, an addition ended by an
in-window end qualifier is also D, and the authors' selection rules R1-R5; truth.jsonl),
"unselected" (the same without those rules; truth-unselected.jsonl) and "design" (docs/semantics.md
§1.1-1.2: first appearance, emerging = not in V_t, D only from T_t; truth-design.jsonl).
The selection rules, re-read from docs/data-model.md: R1 a listed passage has an E, EE or
D triple between two of its entities; R2a a removal added back within 15 years of τ_k is
neither D nor X; R2b a passage is not older than the latest removal (end-qualifier date or
presence end) among those; R3 an EE-KG triple's presence at τ_k lasts past τ_k + 182.5 d
or to the dump's end; R4 an item is as old as the oldest item redirected to it; R5 a line
of plain removals only, or with (delta + EE-KG triples) / entities ≤ 0.2, goes unless an
end qualifier or an emerging entity keeps it; s07's relation filter: a row whose relation
is not in R_t (a property page with an English label and description at t) goes, and a
line it leaves without an E, EE, EE-KG or D row; a row tagged removal-start-qualifier is a
removal whose statement at t carries a start qualifier (P580) dated inside its window and
no end qualifier (s07 judges it as qualified); their s02: every QID read through the
redirects at the end of the dump for the whole history (a merged item's statements,
sitelink and V membership are the surviving item's, histories of one key joined before
the 168 h rule); their s03 coreference_regex (released only, as passages.repeat_mentions
is off in the no-selection-rules preset): a plain-text repeat of an anchor of the
revision's earlier new paragraphs is a mention; a row tagged guard-title-colon is in a line
s07's table-markup guard refuses when it reads the released passage split at its first
':' (the title holds a colon) and keeps on the paragraph alone (title-colon-kept: keeps
either way). Traps with a paragraph must fail one of
the passage rules; a selection-rule trap (kind r1-, r2b-, r5-, s07-) must name a row that
no line of its page keeps under the rules. NOT verified: that no other
(unlisted) paragraph of the dumps is a passage -- that needs a full cleaner, which is
the pipeline's job (the generator's filler rules are tested separately).
"""

from __future__ import annotations

import bz2
import calendar
import json
import re
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import mwxml

SPAN_KG = 168 * 3600
SPAN_PASSAGE = 30 * 60
WEEK = 7 * 86400
END_QUALIFIERS = ["P582", "P1326", "P576", "P570", "P730", "P2032", "P2669", "P3999", "P7125"]


def seconds(ts: str) -> int:
    return calendar.timegm(tuple(int(x) for x in re.findall(r"\d+", ts)[:6]) + (0, 0, 0))


@dataclass
class Entity:
    """What the checker needs from one revision of an entity."""

    redirect: bool
    enwiki: str | None
    statements: list[tuple[str, str, str, list[tuple[str, str, int]]]]  # (p, o, rank, end quals)
    target: str | None = None  # a redirect's target


def _parse_time(value: dict) -> tuple[str, int]:
    return value["time"], int(value["precision"])


def parse_entity(text: str) -> Entity:
    """Read current or legacy Wikibase JSON (only what the semantics needs)."""
    data = json.loads(text)
    if "redirect" in data:
        return Entity(True, None, [], data["redirect"])
    out = []
    if "links" in data or "label" in data:  # legacy
        links = data.get("links") or {}
        en = links.get("enwiki")
        enwiki = en.get("name") if isinstance(en, dict) else en
        ranks = {0: "deprecated", 1: "normal", 2: "preferred"}
        for claim in data.get("claims") or []:
            m = claim["m"]
            if m[0] != "value" or m[2] != "wikibase-entityid":
                continue
            quals = [(f"P{q[1]}",) + _parse_time(q[3]) for q in claim.get("q", [])
                     if q[0] == "value" and q[2] == "time"]
            out.append((f"P{m[1]}", f"Q{m[3]['numeric-id']}", ranks[claim.get("rank", 1)], quals))
        return Entity(False, enwiki, out)
    sitelinks = data.get("sitelinks") or {}
    enwiki = sitelinks["enwiki"]["title"] if "enwiki" in sitelinks else None
    claims = data.get("claims") or {}
    for pid, statements in claims.items():
        for s in statements:
            snak = s["mainsnak"]
            if snak.get("snaktype") != "value" or snak["datavalue"]["type"] != "wikibase-entityid":
                continue
            value = snak["datavalue"]["value"]
            qid = value.get("id") or f"Q{value['numeric-id']}"
            quals = []
            for qp, snaks in (s.get("qualifiers") or {}).items():
                for q in snaks:
                    if q.get("snaktype") == "value" and q["datavalue"]["type"] == "time":
                        quals.append((qp,) + _parse_time(q["datavalue"]["value"]))
            out.append((pid, qid, s.get("rank", "normal"), quals))
    return Entity(False, enwiki, out)


def property_named(text: str) -> bool:
    """Does a property revision (current or legacy JSON) hold an English label and an
    English description?"""
    data = json.loads(text)
    if "labels" in data:
        return bool((data["labels"].get("en") or {}).get("value")) and bool(
            ((data.get("descriptions") or {}).get("en") or {}).get("value"))
    return bool((data.get("label") or {}).get("en")) and bool(
        (data.get("description") or {}).get("en"))


def table_markup(title: str, paragraph: str) -> tuple[bool, bool]:
    """s07's table-markup guard (fewer than 3 words per '|' or ':') on the released
    passage read their way, split at its first ':' (the title's rest counts), and on the
    paragraph alone."""
    def refused(text: str) -> bool:
        marks = text.count("|") + text.count(":")
        return marks > 0 and len(text.split(" ")) / marks < 3
    released = f"Excerpt from the Wikipedia page describing {title}: {paragraph}"
    return refused(released.split(":", 1)[1].strip()), refused(paragraph)


def instant(value: str, precision: int) -> int:
    year, month, day = (int(x) for x in re.match(r"[+-]?(\d+)-(\d\d)-(\d\d)", value).groups())
    if precision < 10 or month == 0:
        month = day = 1
    elif precision < 11 or day == 0:
        day = 1
    return calendar.timegm((year, month, day, 0, 0, 0, 0, 0, 0))


def history_files(mirror: Path, wiki: str, date: str) -> list[Path]:
    return sorted((mirror / wiki / date).glob(f"{wiki}-{date}-pages-meta-history*.bz2"))


class Checker:
    """Loads one dump date of both wikis (small worlds only: everything in memory)."""

    def __init__(self, mirror: Path, date: str, variant: str = "released") -> None:
        self.released = variant in ("released", "unselected")
        self.rules = variant == "released"
        self.entities: dict[str, list[tuple[int, int, Entity]]] = {}
        self.created: dict[str, int] = {}  # the item's first revision, readable or not
        self.properties: dict[str, list[tuple[int, int, bool]]] = {}  # pid → (ts, id, named)
        for path in history_files(mirror, "wikidatawiki", date):
            for page in mwxml.Dump.from_file(bz2.open(path)):
                if page.namespace == 120:
                    self.properties[page.title.split(":", 1)[1]] = sorted(
                        (seconds(str(r.timestamp)), r.id, property_named(r.text))
                        for r in page if r.text is not None)
                    continue
                if page.namespace != 0:
                    continue
                all_revs = list(page)
                if all_revs:
                    self.created[page.title] = min(seconds(str(r.timestamp)) for r in all_revs)
                revs = [(seconds(str(r.timestamp)), r.id, parse_entity(r.text))
                        for r in all_revs if r.text is not None]
                self.entities[page.title] = sorted(revs, key=lambda x: (x[0], x[1]))
        self.pages: dict[int, tuple[str, list[tuple[int, int, str]]]] = {}
        for path in history_files(mirror, "enwiki", date):
            for page in mwxml.Dump.from_file(bz2.open(path)):
                revs = [(seconds(str(r.timestamp)), r.id, r.text) for r in page if r.text is not None]
                self.pages[page.id] = (page.title, sorted(revs, key=lambda x: (x[0], x[1])))
        # their s02: every QID read through the redirects at the end of the dump (chains),
        # for the whole history (the rules on: truth.jsonl)
        self.survivor: dict[str, str] = {}
        if self.rules:
            final = {q: revs[-1][2].target for q, revs in self.entities.items()
                     if revs and revs[-1][2].redirect}
            for q, target in final.items():
                hops = 0
                while target in final and hops < 50:
                    target, hops = final[target], hops + 1
                self.survivor[q] = target
        if self.rules:  # R4: as old as the oldest item redirected to it at the end
            own = dict(self.created)
            for qid, revs in self.entities.items():
                if revs and revs[-1][2].redirect and revs[-1][2].target in own:
                    target = revs[-1][2].target
                    self.created[target] = min(self.created[target], own[qid])
            for qid, target in self.survivor.items():  # (and through chains)
                if qid in own and target in self.created:
                    self.created[target] = min(self.created[target], own[qid])
        self._timelines = self._presence()
        self._cache: dict[tuple[str, int], object] = {}

    # ---- KG
    @staticmethod
    def _at(revs: list, tau: int):
        best = None
        for rev in revs:
            if rev[0] <= tau:
                best = rev
            else:
                break
        return best

    def state(self, qid: str, tau: int) -> Entity | None:
        rev = self._at(self.entities.get(qid, []), tau)
        return None if rev is None or rev[2].redirect else rev[2]

    def res(self, qid: str) -> str:
        return self.survivor.get(qid, qid)

    def statements(self, qid: str, tau: int) -> list[tuple[str, str, str, list]]:
        """The statements of the item ``qid`` is read as, at tau: its own and those of the
        items merged into it (before their merge), objects through the redirects."""
        out = []
        for q in [qid, *(m for m, t in self.survivor.items() if t == qid)]:
            state = self.state(q, tau)
            out += [(p, self.res(o), rank, quals) for p, o, rank, quals in
                    (state.statements if state else [])]
        return out

    def relations(self, tau: int) -> set[str]:
        """R_τ: properties whose page exists at τ with an English label and description."""
        return {pid for pid, revs in self.properties.items()
                if (rev := self._at(revs, tau)) is not None and rev[2]}

    def v(self, tau: int) -> set[str]:
        key = ("v", tau)
        if key not in self._cache:
            self._cache[key] = {self.res(q) for q in self.entities
                                if (s := self.state(q, tau)) and s.enwiki}
        return self._cache[key]  # type: ignore[return-value]

    def _presence(self) -> dict[tuple[str, str, str], list[tuple[int, int | None]]]:
        raw: dict[tuple, list[list]] = defaultdict(list)  # key → [start, end] per item
        for qid, revs in self.entities.items():
            seen: set[tuple] = set()
            for ts, _, ent in revs:
                now = set() if ent.redirect else {
                    (self.res(qid), p, self.res(o)) for p, o, rank, _ in ent.statements
                    if rank != "deprecated"}
                for k in now - seen:
                    raw[k].append([ts, None])
                for k in seen - now:
                    next(iv for iv in reversed(raw[k]) if iv[1] is None)[1] = ts
                seen = now
        out = {}
        for k, intervals in raw.items():
            spans: list[list] = []  # the items' presences joined (several items, one key)
            for a, b in sorted(intervals, key=lambda iv: iv[0]):
                if spans and (spans[-1][1] is None or a <= spans[-1][1]):
                    spans[-1][1] = None if spans[-1][1] is None or b is None else max(
                        spans[-1][1], b)
                else:
                    spans.append([a, b])
            filled: list[list] = []
            for span in spans:  # fill short gaps first ...
                if filled and span[0] - filled[-1][1] < SPAN_KG:
                    filled[-1][1] = span[1]
                else:
                    filled.append(span)
            out[k] = [(a, b) for a, b in filled if b is None or b - a >= SPAN_KG]  # ... then drop
        return out

    def in_t(self, triple: tuple[str, str, str], tau: int) -> bool:
        s, _, o = triple
        v = self.v(tau)
        if s not in v or o not in v:
            return False
        return any(a <= tau and (b is None or tau < b) for a, b in self._timelines.get(triple, []))

    def emerging(self, qid: str, t: int) -> bool:
        if self.released:
            return self.created.get(qid, 0) >= t
        return qid not in self.v(t)

    def end_signal(self, triple: tuple[str, str, str], t: int, tau: int) -> str | None:
        s, p, o = triple
        same = [x for x in self.statements(s, tau) if x[0] == p and x[1] == o]
        for q in END_QUALIFIERS:
            for x in same:
                if any(qp == q and t < instant(val, prec) <= tau for qp, val, prec in x[3]):
                    return f"qualifier:{q}"
        return None

    def classify(self, triple: tuple[str, str, str], t: int, k: int) -> list[tuple[str, str | None]]:
        """The (op, signal) pairs of a triple in window k of snapshot t: X, D, E or EE, and
        with the released semantics an addition ended inside the window is E/EE and D."""
        tau = t + k * WEEK
        before, after = self.in_t(triple, t), self.in_t(triple, tau)
        s, p, o = triple
        if before:
            if s not in self.v(tau) or o not in self.v(tau):
                return []
            signal = self.end_signal(triple, t, tau)
            if signal is not None:
                return [("D", signal)]
            if after:
                return [("X", None)]
            same = [x for x in self.statements(s, tau) if x[0] == p and x[1] == o]
            if self.rules and any(tau < a < tau + 15 * 365 * 86400
                                  for a, _ in self._timelines.get(triple, [])):
                return []  # R2a: added back, not a permanent removal
            if same and all(x[2] == "deprecated" for x in same):
                return [("D", "rank")]
            return [("D", "removed")]
        if after:
            out = [("EE" if self.emerging(s, t) or self.emerging(o, t) else "E", None)]
            signal = self.end_signal(triple, t, tau) if self.released else None
            return out + ([("D", signal)] if signal else [])
        return []

    def candidates(self, t: int, k: int, mentioned: set[str]) -> set[tuple]:
        """Every (op, s, p, o, signal) the mentioned set implies in window k."""
        tau = t + k * WEEK
        triples = {tr for tr in self._timelines if tr[0] in mentioned or tr[2] in mentioned}
        out = set()
        for tr in triples:
            if not (self.in_t(tr, t) or self.in_t(tr, tau)):
                continue
            ops = self.classify(tr, t, k)
            if not ops:
                continue
            s_in, o_in = tr[0] in mentioned, tr[2] in mentioned
            added = ops[0][0] in ("E", "EE")
            for op, sig in ops:
                if s_in and o_in:
                    out.add((op, *tr, sig))
                elif added and s_in != o_in:
                    inside, outside = (tr[0], tr[2]) if s_in else (tr[2], tr[0])
                    if self.emerging(inside, t) and not self.emerging(outside, t) and \
                            self.persists(tr, tau):
                        out.add(("EE-KG" if op != "D" else "D", *tr, sig))
        return out

    def _span_at(self, triple: tuple[str, str, str], tau: int) -> tuple[int, int | None]:
        return next((a, b) for a, b in self._timelines[triple] if a <= tau and (b is None or tau < b))

    def persists(self, triple: tuple[str, str, str], tau: int) -> bool:
        """R3: the presence at τ_k ends after τ_k + 182.5 days, or never."""
        end = self._span_at(triple, tau)[1]
        return not self.rules or end is None or end > tau + int(182.5 * 86400)

    def selected(self, t: int, k: int, rows: set[tuple], mentioned: set[str], first: int) -> bool:
        """R1, R2b, R5 on one passage's rows (op, s, p, o, signal)."""
        if not self.rules:
            return True
        tau = t + k * WEEK
        pair = {r for r in rows if r[1] in mentioned and r[3] in mentioned}
        delta = {r for r in pair if r[0] in ("E", "EE", "D")}
        triples = {r[1:4] for r in delta}
        kg = {r[1:4] for r in rows - pair if r[0] == "EE-KG"}
        if not triples:
            return False  # R1
        removals = []
        for op, s, p, o, sig in delta:
            if op != "D":
                continue
            if sig.startswith("qualifier:"):
                removals.append(min(instant(v, n) for x in self.statements(s, tau)
                                    if (x[0], x[1]) == (p, o)
                                    for qp, v, n in x[3] if qp in END_QUALIFIERS
                                    and t < instant(v, n) <= tau))
            else:
                removals.append(self._span_at((s, p, o), t)[1])
        if removals and first < max(removals):
            return False  # R2b
        qualifier = any(r[0] == "D" and r[4].startswith("qualifier:") for r in delta)
        plain_only = not qualifier and all(r[0] == "D" for r in delta)
        emerging = any(r[0] == "EE" for r in delta) or bool(kg)
        ratio = (len(triples) + len(kg)) / len(mentioned)
        if not ((not plain_only and ratio > 0.2) or qualifier or emerging):
            return False  # R5
        # s07: the rows whose relation is not in R_t go; a line they leave without an E,
        # EE, EE-KG or D row goes
        known = {r for r in rows if r[2] in self.relations(t)}
        return known == rows or any(r[0] != "X" for r in known)

    def known(self, t: int, rows: set[tuple]) -> set[tuple]:
        """The rows (op, s, p, o, signal) a selected line keeps: with the rules, those
        whose relation is in R_t (s07's relation filter)."""
        return {r for r in rows if r[2] in self.relations(t)} if self.rules else rows

    # ---- passages
    def text_at(self, page_id: int, tau: int) -> str | None:
        rev = self._at(self.pages[page_id][1], tau)
        return None if rev is None else rev[2]

    def resolve(self, target: str, tau: int) -> str | None:
        title = _norm(target)
        titles = {t: pid for pid, (t, _) in self.pages.items()}
        for _ in range(5):
            pid = titles.get(title)
            text = self.text_at(pid, tau) if pid is not None else None
            m = re.match(r"\s*#REDIRECT\s*\[\[([^\]|#]+)", text or "", re.I)
            if not m:
                break
            title = _norm(m.group(1))
        sitelinks = {s.enwiki: q for q in self.entities if (s := self.state(q, tau)) and s.enwiki}
        found = sitelinks.get(title)
        return None if found is None else self.res(found)

    def paragraph(self, page_id: int, tau: int, plain: str) -> str | None:
        """The raw block of the article at tau whose cleaned text is ``plain``."""
        text = self.text_at(page_id, tau) or ""
        for block in re.split(r"\n\s*\n", text):
            if clean(block) == plain:
                return block
        return None

    def first_seen(self, page_id: int, plain: str) -> int | None:
        for ts, _, text in self.pages[page_id][1]:
            if any(clean(b) == plain for b in re.split(r"\n\s*\n", text)):
                return ts
        return None

    def lines(self, t: int, k: int, page_id: int) -> list[tuple[str, set[str], set[tuple]]]:
        """Every passage of window k on a page: (its text, mentioned, implied rows)."""
        tau = t + k * WEEK
        out = []
        for block in re.split(r"\n\s*\n", self.text_at(page_id, tau) or ""):
            plain = clean(block)
            if plain and not self.passage_problems(t, k, page_id, plain):
                mentioned = self.mentions(page_id, block, tau)
                out.append((plain, mentioned, self.candidates(t, k, mentioned)))
        return out

    def mentions(self, page_id: int, block: str, tau: int) -> set[str]:
        links = re.findall(r"\[\[([^\]|]+)(?:\|[^\]]*)?\]\]", block)
        repeats = self.repeats(page_id, block) if self.rules else []  # passages.repeat_mentions
        out = {self.resolve(m, tau) for m in [*links, *repeats]
               if not re.match(r"(?i)(file|image|category):", m)}
        own = self.resolve(self.pages[page_id][0], tau)
        out.add(own)
        out.discard(None)
        return out  # type: ignore[return-value]

    def repeats(self, page_id: int, block: str) -> list[str]:
        """The authors' coreference_regex, read from their EXTR:563-623 again: the targets
        of plain-text repeats in ``block`` of the anchors (the title first) of the new
        paragraphs of 25+ tokens before it in the revision it first appeared in."""
        plain = clean(block)
        first = self.first_seen(page_id, plain)
        if first is None:
            return []
        text = next(text for ts, _, text in self.pages[page_id][1]
                    if ts == first and plain in {clean(b) for b in re.split(r"\n\s*\n", text)})
        unref = lambda b: re.sub(r"<ref[^>]*>.*?</ref>", "", b, flags=re.S)  # noqa: E731
        pool: dict[str, str] = {}
        for earlier in re.split(r"\n\s*\n", text):
            words = clean(earlier)
            if words == plain:
                break
            if earlier.strip().startswith("{{") or re.search(r"(Category|File|Image):", earlier) \
                    or not 25 <= len(words.split()) <= 1000 \
                    or self.first_seen(page_id, words) != first:
                continue
            pool.setdefault(self.pages[page_id][0], self.pages[page_id][0])
            for target, label in re.findall(r"\[\[([^\]|]+)(?:\|([^\]]*))?\]\]", unref(earlier)):
                pool[label or target] = target
        if not pool:
            return []
        pattern = r"(?<!\[\[)(" + "|".join(map(re.escape, pool)) + r")(?![^\[]*\]\])"
        return [pool[m.group(0)] for m in re.finditer(pattern, unref(block))]

    def passage_problems(self, t: int, k: int, page_id: int, plain: str) -> list[str]:
        """Why this paragraph is not a passage of window k ([] = it is one)."""
        tau, lo = t + k * WEEK, (t if self.released else t + (k - 1) * WEEK)
        block = self.paragraph(page_id, tau, plain)
        if block is None:
            return ["not present at τ_k"]
        problems = []
        if self.paragraph(page_id, t, plain) is not None:
            problems.append("present at t")
        first = self.first_seen(page_id, plain)
        if first is None or not lo < first <= tau:
            problems.append("first appears outside the window")
        elif self.paragraph(page_id, first + SPAN_PASSAGE, plain) is None:
            problems.append("gone within 30 minutes")
        if not 25 <= len(plain.split()) <= 1000:
            problems.append("token count")
        if len(self.mentions(page_id, block, tau)) < 2:
            problems.append("fewer than 2 mentioned entities")
        return problems


def _norm(target: str) -> str:
    title = " ".join(target.split("#")[0].replace("_", " ").split())
    return title[:1].upper() + title[1:]


def clean(block: str) -> str:
    """Naive wikitext -> text, enough for the planted paragraphs (not a general cleaner)."""
    text = re.sub(r"<!--.*?-->", "", block, flags=re.S)
    text = re.sub(r"<ref[^>/]*/>", "", text)
    text = re.sub(r"<ref[^>]*>.*?</ref>", "", text, flags=re.S)
    while True:
        new = re.sub(r"\{\{[^{}]*\}\}", "", text)
        if new == text:
            break
        text = new
    text = re.sub(r"\[\[(?:[^\]|]*\|)?([^\]]*)\]\]", r"\1", text)
    text = text.replace("'''", "").replace("''", "")
    return " ".join(text.split())


def check_world(out: Path, date: str | None = None, snapshots: set[str] | None = None,
                variant: str = "released") -> list[str]:
    """All problems found (an empty list means the truth and traps files check out).

    ``date`` picks the dump (default: the newest); ``snapshots`` limits the check;
    ``variant`` the semantics: "released" (truth.jsonl), "unselected" or "design"
    (truth-unselected.jsonl, truth-design.jsonl).
    """
    mirror = out / "mirror"
    dates = sorted(p.name for p in (mirror / "wikidatawiki").iterdir() if p.is_dir())
    checker = Checker(mirror, date or dates[-1], variant)
    suffix = "" if variant == "released" else f"-{variant}"
    truth = [json.loads(line) for line in (out / f"truth{suffix}.jsonl").read_text().splitlines()]
    traps = [json.loads(line) for line in (out / f"traps{suffix}.jsonl").read_text().splitlines()]
    if snapshots is not None:
        truth = [r for r in truth if r["snapshot"] in snapshots]
        traps = [r for r in traps if r["snapshot"] in snapshots]
    problems: list[str] = []
    passages: dict[tuple, list[dict]] = defaultdict(list)
    for row in truth:
        t = seconds(row["snapshot"])
        ops = checker.classify((row["s"], row["p"], row["o"]), t, row["window"])
        m = set(row["mentioned"])
        single = (row["s"] in m) != (row["o"] in m)
        if row["op"] == "EE-KG":
            ok = ("EE", None) in ops and single
        else:
            ok = (row["op"], row["signal"]) in ops and (not single or row["op"] == "D")
        if not ok:
            problems.append(f"KG disagrees ({ops}): {row['op']} {row['s']} {row['p']} {row['o']} "
                            f"{row['signal']} w{row['window']} {row['snapshot']}")
        quals = {(qp, instant(v, n), n) for x in checker.statements(row["s"], t + row["window"] * WEEK)
                 if (x[0], x[1]) == (row["p"], row["o"]) for qp, v, n in x[3]}
        if quals != {(q["p"], instant(q["time"], q["precision"]), q["precision"]) for q in row["qualifiers"]}:
            problems.append(f"qualifiers differ for {row['s']} {row['p']} {row['o']}: {sorted(quals)}")
        if "removal-start-qualifier" in row["tags"]:  # judged as a D with a qualifier
            dates = {(qp, instant(v, n)) for x in checker.statements(row["s"], t)
                     if (x[0], x[1]) == (row["p"], row["o"]) for qp, v, n in x[3]}
            inside = t < min((d for qp, d in dates if qp == "P580"), default=0) <= \
                t + row["window"] * WEEK
            if row["signal"] != "removed" or not inside or {qp for qp, _ in dates} & set(
                    END_QUALIFIERS):
                problems.append(f"not a removal with only a start qualifier inside its "
                                f"window: {row['s']} {row['p']} {row['o']} w{row['window']}")
        for tag, refused in (("guard-title-colon", True), ("title-colon-kept", False)):
            if tag in row["tags"]:
                split, alone = table_markup(row["page_title"], row["paragraph"])
                if ":" not in row["page_title"] or alone or split != refused:
                    problems.append(f"{tag}: the guard reads {row['page_title']!r} "
                                    f"{'wrongly' if alone else 'as planted not'}")
        passages[(row["snapshot"], row["window"], row["page_id"], row["paragraph"])].append(row)
    for (snap, k, page_id, plain), rows in passages.items():
        t = seconds(snap)
        for why in checker.passage_problems(t, k, page_id, plain):
            problems.append(f"passage w{k} {snap} page {page_id}: {why}: {plain[:60]}")
        block = checker.paragraph(page_id, t + k * WEEK, plain)
        mentioned = checker.mentions(page_id, block, t + k * WEEK) if block else set()
        if mentioned != set(rows[0]["mentioned"]):
            problems.append(f"mentions differ on page {page_id}: {sorted(mentioned)} vs {rows[0]['mentioned']}")
        expected = checker.candidates(t, k, mentioned)
        listed = {(r["op"], r["s"], r["p"], r["o"], r["signal"]) for r in rows}
        if not checker.selected(t, k, expected, mentioned, checker.first_seen(page_id, plain) or 0):
            problems.append(f"a line the selection rules reject is listed: page {page_id} w{k}")
        expected = checker.known(t, expected)
        for missing in sorted(expected - listed, key=str):
            problems.append(f"missing from page {page_id} w{k} {snap}: {missing}")
        for extra in sorted(listed - expected, key=str):
            problems.append(f"not implied on page {page_id} w{k} {snap}: {extra}")
    for trap in traps:
        t = seconds(trap["snapshot"])
        windows = [trap["window"]] if trap["window"] else [1, 2, 3, 4, 5]
        if trap["paragraph"] is not None:
            for k in windows:
                if not checker.passage_problems(t, k, trap["page_id"], trap["paragraph"]):
                    problems.append(f"trap {trap['kind']}: paragraph is a passage in w{k}")
        elif trap["kind"].startswith(("r1-", "r2b-", "r5-", "s07-")):  # rows the rules drop
            if trap["kind"] == "s07-relation-outside-r-t" and trap["p"] in checker.relations(t):
                problems.append(f"trap {trap['kind']}: {trap['p']} is in R_t")
            for k in windows:
                for plain, mentioned, rows in checker.lines(t, k, trap["page_id"]):
                    row = next((r for r in rows if r[:4] == (trap["op"], trap["s"], trap["p"],
                                                             trap["o"])), None)
                    first = checker.first_seen(trap["page_id"], plain) or 0
                    if row in checker.known(t, rows) and checker.selected(t, k, rows, mentioned,
                                                                          first):
                        problems.append(f"trap {trap['kind']}: a selected line holds it in w{k}")
        elif trap["op"] is not None:
            for k in windows:
                ops = {op for op, _ in checker.classify((trap["s"], trap["p"], trap["o"]), t, k)}
                holds = trap["op"] in ops or (trap["op"] == "EE-KG" and "EE" in ops and
                                              checker.persists((trap["s"], trap["p"], trap["o"]),
                                                               t + k * WEEK))
                if holds:
                    problems.append(f"trap {trap['kind']}: {trap['op']} holds in w{k}")
        listed = [r for r in truth if r["snapshot"] == trap["snapshot"]
                  and (trap["window"] is None or r["window"] == trap["window"])
                  and (trap["paragraph"] is None or r["paragraph"] == trap["paragraph"])
                  and (trap["op"] is None or (r["op"], r["s"], r["p"], r["o"]) == (trap["op"], trap["s"], trap["p"], trap["o"]))
                  and (trap["op"] is None or trap["page_id"] is None or r["page_id"] == trap["page_id"])]
        if listed and (trap["op"] is not None or trap["paragraph"] is not None):
            problems.append(f"trap {trap['kind']} appears in the truth: {listed[0]}")
    return problems
