"""docs/semantics.md §1.1-1.2 applied to the planted world: the truth by construction.

This is a direct, unoptimised reading of the semantics over the plan's objects (not over
XML): state at τ = the revision with the greatest (timestamp, revision id) at or before τ
whose text is readable (revision-deleted texts are skipped); V, T with the 168 h
stability normalization; window deltas with D signals; passages (new paragraphs) with
mentions resolved through redirects and sitelinks at τ_k. Interpretations of points the
design leaves open are written down in docs/dumps.md ("Truth semantics").
"""

from __future__ import annotations

import bisect
import calendar
import re
from collections import defaultdict
from dataclasses import dataclass, field, replace

from emerge_lib.sample.model import (
    DAY,
    HOUR,
    MINUTE,
    Article,
    Block,
    ItemState,
    Plan,
    Redirect,
    Statement,
)

Triple = tuple[str, str, str]

END_QUALIFIERS = ("P582", "P1326", "P576", "P570", "P730", "P2032", "P2669", "P3999", "P7125")


@dataclass(frozen=True)
class TruthSettings:
    """The semantics the truth follows; the defaults are what the released data shows
    (docs/semantics.md §1.3, emerge's defaults), ``DESIGN`` is the §1.1-1.2 rule."""

    name: str = "released"
    windows: int = 5
    window_seconds: int = 7 * DAY
    kg_span: int = 168 * HOUR
    passage_span: int = 30 * MINUTE
    min_tokens: int = 25
    max_tokens: int = 1000
    max_markup_ratio: float = 0.5
    min_entities: int = 2
    end_qualifiers: tuple[str, ...] = END_QUALIFIERS
    passage_windows: str = "cumulative"  # or "first_appearance"
    emerging: str = "created_after_snapshot"  # or "not_in_snapshot"
    deprecate_window_additions: bool = True
    # the authors' selection rules (docs/data-model.md "Which aligned passages are lines")
    permanence: int = 15 * 365 * DAY  # R2a: a removal not added back in (τ_k, τ_k + this)
    creation_over_redirects: bool = True  # R4
    between_mentions: bool = True  # R1
    passage_after_removal: bool = True  # R2b
    ee_kg_persistence: int = int(182.5 * DAY)  # R3
    interesting: bool = True  # R5
    interesting_ratio: float = 0.2
    relations_in_snapshot: bool = True  # s07: a triple's relation must be in R_t
    resolve_redirects: bool = True  # their s02: QIDs read through the final redirects
    repeat_mentions: bool = True  # their s03 coreference_regex: unlinked repeats of anchors


#: the selection before the authors' rules (the no-selection-rules preset)
RULES_OFF = {"permanence": 0, "creation_over_redirects": False, "between_mentions": False,
             "passage_after_removal": False, "ee_kg_persistence": 0, "interesting": False,
             "relations_in_snapshot": False, "resolve_redirects": False,
             "repeat_mentions": False}
RELEASED = TruthSettings()
DESIGN = TruthSettings(name="design", passage_windows="first_appearance",
                       emerging="not_in_snapshot", deprecate_window_additions=False,
                       **RULES_OFF)  # type: ignore[arg-type]
UNSELECTED = TruthSettings(name="unselected", **RULES_OFF)  # type: ignore[arg-type]


def applies(settings: str, name: str) -> bool:
    """Does an expectation or trap declared for ``settings`` ("both": every semantics; or
    names joined by commas) hold under the semantics ``name``?"""
    return settings == "both" or name in settings.split(",")


def normalize_title(target: str) -> str:
    """``[[foo_bar#x]]`` -> ``Foo bar``: underscores, fragment, first letter."""
    title = target.split("#", 1)[0].replace("_", " ")
    title = " ".join(title.split())
    return title[:1].upper() + title[1:]


def time_instant(value: str, precision: int) -> int:
    """A Wikibase time as Unix seconds; coarser than a day -> first instant of the period."""
    body = value.lstrip("+")
    year_s, month_s, rest = body.split("-", 2)
    year, month, day = int(year_s), int(month_s), int(rest[:2])
    if precision <= 9 or month == 0:
        month, day = 1, 1
    elif precision == 10 or day == 0:
        day = 1
    return calendar.timegm((year, month, day, 0, 0, 0))


@dataclass
class _Timeline:
    """Revisions of one page sorted by (timestamp, revision id), readable ones only."""

    keys: list[tuple[int, int]] = field(default_factory=list)
    contents: list[object] = field(default_factory=list)

    def at(self, tau: int) -> object | None:
        i = bisect.bisect_right(self.keys, (tau, float("inf"))) - 1
        return self.contents[i] if i >= 0 else None


def _timeline(revs: list) -> _Timeline:
    tl = _Timeline()
    for r in sorted(revs, key=lambda r: (r.ts, r.rev_id)):
        if r.content is None:
            continue
        tl.keys.append((r.ts, r.rev_id))
        tl.contents.append(r.content)
    return tl


def _union(intervals: list[list[int | None]]) -> list[list[int | None]]:
    """Overlapping or touching intervals joined (an open end is open)."""
    out: list[list[int | None]] = []
    for start, end in sorted(intervals, key=lambda iv: iv[0] or 0):
        assert start is not None
        last = out[-1][1] if out else 0
        if out and (last is None or start <= last):
            out[-1][1] = None if last is None or end is None else max(last, end)
        else:
            out.append([start, end])
    return out


def _normalize(intervals: list[list[int | None]], span: int) -> list[list[int | None]]:
    """Fill gaps shorter than span, then drop presences shorter than span (open = long)."""
    merged: list[list[int | None]] = []
    for start, end in intervals:
        if merged and merged[-1][1] is not None and start - merged[-1][1] < span:  # type: ignore[operator]
            merged[-1][1] = end
        else:
            merged.append([start, end])
    return [iv for iv in merged if iv[1] is None or iv[1] - iv[0] >= span]  # type: ignore[operator]


_LINK = re.compile(r"\[\[([^\]|]*)(?:\|([^\]]*))?\]\]")
_REF = re.compile(r"<ref>.*?</ref>", re.S)


def _repeated(revision: object, block: Block, first_seen: dict[str, int], first: int,
              title: str, s: TruthSettings) -> list[str]:
    """The link targets the authors' coreference_regex (their EXTR:563-623, literally: the
    anchors as alternatives in the order first seen, a title first, not inside a link)
    adds to ``block``'s wikitext (citations removed, as their cleaning does), given the
    new prose blocks of ``revision`` (the one ``block`` first appeared in) before it that
    pass the passage filter."""
    if not isinstance(revision, Article):
        return []
    pool: dict[str, str] = {}
    for earlier in revision.blocks:
        if earlier is block or earlier.identity == block.identity:
            break
        if earlier.kind != "prose" or first_seen.get(earlier.identity) != first or not (
                s.min_tokens <= earlier.tokens <= s.max_tokens) or \
                earlier.markup_ratio > s.max_markup_ratio:
            continue
        pool.setdefault(title, title)
        for target, label in _LINK.findall(_REF.sub("", earlier.raw)):
            anchor = label or target
            if anchor:
                pool[anchor] = target
    if not pool:
        return []
    pattern = r"(?<!\[\[)(" + "|".join(re.escape(a) for a in pool) + r")(?![^\[]*\]\])"
    return [pool[m.group(0)] for m in re.finditer(pattern, _REF.sub("", block.raw))]


class PlanTruth:
    """Indexes over a plan that answer the §1.1 questions at any τ."""

    def __init__(self, plan: Plan, settings: TruthSettings | None = None) -> None:
        self.plan = plan
        self.s = settings or TruthSettings()
        self.entities = {k: _timeline(e.revs) for k, e in plan.entities.items() if not e.is_property}
        # their s02: every key read through the redirects at the history's end (chains)
        self.survivor = self._final_redirects() if self.s.resolve_redirects else {}
        # an item's creation: its first revision (readable or not), as the ingest records it;
        # R4: the earliest over it and the items redirected to it at the history's end
        self.created = {k: min(r.ts for r in e.revs) for k, e in plan.entities.items()
                        if not e.is_property and e.revs}
        for key, survivor in self.survivor.items():  # a merged item's history is theirs
            if key in self.created and survivor in self.created:
                self.created[survivor] = min(self.created[survivor], self.created[key])
        if self.s.creation_over_redirects:
            first = dict(self.created)
            for key, tl in self.entities.items():
                last = tl.contents[-1] if tl.contents else None
                target = last.redirect if isinstance(last, ItemState) else None
                if target in self.created and key in first:
                    self.created[target] = min(self.created[target], first[key])
        self.pages = {k: _timeline(p.revs) for k, p in plan.pages.items()}
        self.properties = {e.pid: _timeline(e.revs) for e in plan.entities.values()
                           if e.is_property and e.pid}
        self.presence = self._presence()

    # ---- KG
    def state(self, key: str, tau: int) -> ItemState | None:
        st = self.entities[key].at(tau)
        return st if isinstance(st, ItemState) else None

    def _final_redirects(self) -> dict[str, str]:
        """Key → the key its chain of redirects ends at, for the keys whose last readable
        state is a redirect."""
        direct = {}
        for key, tl in self.entities.items():
            last = tl.contents[-1] if tl.contents else None
            if isinstance(last, ItemState) and last.redirect:
                direct[key] = last.redirect
        out = {}
        for key, target in direct.items():
            seen = {key}
            while target in direct and target not in seen and len(seen) <= 50:
                seen.add(target)
                target = direct[target]
            out[key] = target
        return out

    def res(self, key: str) -> str:
        """The key an item is read as (its surviving item, with the redirects resolved)."""
        return self.survivor.get(key, key)

    def statements(self, key: str, tau: int) -> list[Statement]:
        """The statements of ``key`` at tau, with the redirects resolved: those of every
        item read as ``key`` (itself, and the items merged into it while not yet merged),
        their targets read through the redirects."""
        out = []
        for c in [key, *(k for k, t in self.survivor.items() if t == key)]:
            st = self.state(c, tau) if c in self.entities else None
            if st is not None and st.redirect is None:
                out += [replace(x, target=self.res(x.target)) if x.kind == "item" else x
                        for x in st.statements]
        return out

    def relations(self, tau: int) -> set[str]:
        """R_τ: the properties that exist at τ with an English label and description."""
        out = set()
        for pid, tl in self.properties.items():
            st = tl.at(tau)
            if isinstance(st, ItemState) and dict(st.labels).get("en") and \
                    dict(st.descriptions).get("en"):
                out.add(pid)
        return out

    def in_v(self, tau: int) -> set[str]:
        out = set()
        for key in self.entities:
            st = self.state(key, tau)
            if st is not None and st.redirect is None and st.sitelink("enwiki"):
                out.add(self.res(key))
        return out

    def _presence(self) -> dict[Triple, list[list[int | None]]]:
        raw: dict[Triple, list[list[int | None]]] = defaultdict(list)
        for key, tl in self.entities.items():
            current: set[Triple] = set()
            for (ts, _), content in zip(tl.keys, tl.contents, strict=True):
                assert isinstance(content, ItemState)
                now = set()
                if content.redirect is None:
                    now = {(self.res(key), s.pid, self.res(s.target)) for s in content.statements
                           if s.kind == "item" and s.rank != "deprecated"}
                for triple in now - current:
                    raw[triple].append([ts, None])
                for triple in current - now:
                    raw[triple][-1][1] = ts
                current = now
        # keys several items share once resolved: their histories merged (theirs: a triple
        # is present while either history has it)
        return {k: _normalize(_union(v), self.s.kg_span) for k, v in raw.items()}

    def present(self, triple: Triple, tau: int) -> bool:
        return any(a <= tau and (b is None or tau < b) for a, b in self.presence.get(triple, ()))  # type: ignore[operator]

    def presence_end(self, triple: Triple, tau: int) -> int | None:
        """The end of the presence of ``triple`` that holds at tau (None: still open)."""
        for a, b in self.presence.get(triple, ()):
            if a <= tau and (b is None or tau < b):  # type: ignore[operator]
                return b
        raise ValueError(f"{triple} is not present at {tau}")

    def added_back(self, triple: Triple, tau: int) -> bool:
        """R2a: a presence of the triple starts inside (tau, tau + permanence)."""
        return any(tau < a < tau + self.s.permanence for a, _ in self.presence.get(triple, ()))  # type: ignore[operator]

    def end_qualifier_at(self, triple: Triple, t: int, tau: int) -> int | None:
        """The earliest end qualifier dated in (t, tau] on the key's statements at tau."""
        s, p, o = triple
        dates = [time_instant(q.time, q.precision) for x in self.statements(s, tau)
                 if x.pid == p and x.target == o for q in x.qualifiers
                 if q.pid in self.s.end_qualifiers]
        return min((d for d in dates if t < d <= tau), default=None)

    def triples(self, tau: int, v: set[str] | None = None) -> set[Triple]:
        v = self.in_v(tau) if v is None else v
        return {t for t in self.presence if t[0] in v and t[2] in v and self.present(t, tau)}

    def end_signal(self, triple: Triple, t: int, tau: int) -> str | None:
        """``qualifier:Pxxx`` when a statement for the key in s's state at tau carries an
        end qualifier dated in (t, tau]."""
        s, p, o = triple
        same = [x for x in self.statements(s, tau) if x.pid == p and x.target == o]
        for x in same:
            for q in sorted(x.qualifiers, key=lambda q: self.s.end_qualifiers.index(q.pid)
                            if q.pid in self.s.end_qualifiers else 99):
                if q.pid in self.s.end_qualifiers and t < time_instant(q.time, q.precision) <= tau:
                    return f"qualifier:{q.pid}"
        return None

    def d_signal(self, triple: Triple, t: int, tau: int, t_tau: set[Triple]) -> str | None:
        """The D signal of a triple of T_t in window ending tau (None: not deprecated)."""
        s, p, o = triple
        same = [x for x in self.statements(s, tau) if x.pid == p and x.target == o]
        signal = self.end_signal(triple, t, tau)
        if signal is not None:
            return signal
        if triple in t_tau:
            return None
        if same and all(x.rank == "deprecated" for x in same):
            return "rank"
        return "removed"

    # ---- passages
    def _titles_at(self, tau: int) -> dict[str, object]:
        out: dict[str, object] = {}
        for key, page in self.plan.pages.items():
            content = self.pages[key].at(tau)
            if content is not None:
                out[page.title_at(tau)] = content
        return out

    def _sitelinks_at(self, tau: int) -> dict[str, str]:
        out = {}
        for key in self.entities:
            st = self.state(key, tau)
            link = st.sitelink("enwiki") if st is not None and st.redirect is None else None
            if link:
                out[link] = self.res(key)
        return out

    def resolve(self, target: str, titles: dict[str, object], sitelinks: dict[str, str]) -> str | None:
        title = normalize_title(target)
        seen = set()
        while title in titles and isinstance(redirect := titles[title], Redirect):
            if title in seen:
                return None
            seen.add(title)
            title = normalize_title(redirect.target)
        return sitelinks.get(title)

    def passages(self, t: int, k: int) -> list[dict]:
        """New paragraphs of window k with their mentioned entity keys: first seen in
        (τ_{k-1}, τ_k], or in (t, τ_k] with cumulative windows."""
        s = self.s
        lo, hi = t + (k - 1) * s.window_seconds, t + k * s.window_seconds
        if s.passage_windows == "cumulative":
            lo = t
        titles, sitelinks = self._titles_at(hi), self._sitelinks_at(hi)
        out = []
        for key, page in self.plan.pages.items():
            tl = self.pages[key]
            at_hi, at_t = tl.at(hi), tl.at(t)
            if not isinstance(at_hi, Article):
                continue
            before = {b.identity for b in at_t.blocks if b.kind == "prose"} if isinstance(at_t, Article) else set()
            first_seen: dict[str, int] = {}
            for (ts, _), content in zip(tl.keys, tl.contents, strict=True):
                if isinstance(content, Article):
                    for b in content.blocks:
                        if b.kind == "prose":
                            first_seen.setdefault(b.identity, ts)
            for b in at_hi.blocks:
                if b.kind != "prose" or b.identity in before:
                    continue
                first = first_seen[b.identity]
                if not lo < first <= hi:
                    continue
                later = tl.at(first + s.passage_span)
                if not isinstance(later, Article) or b.identity not in {x.identity for x in later.blocks}:
                    continue
                if not (s.min_tokens <= b.tokens <= s.max_tokens) or b.markup_ratio > s.max_markup_ratio:
                    continue
                targets = list(b.links)
                if s.repeat_mentions:
                    targets += _repeated(tl.at(first), b, first_seen, first, page.title_at(hi), s)
                mentioned = {q for q in (self.resolve(x, titles, sitelinks) for x in targets) if q}
                own = sitelinks.get(page.title_at(hi))
                if own:
                    mentioned.add(own)
                if len(mentioned) < s.min_entities:
                    continue
                out.append({"page": key, "block": b, "first_seen": first,
                            "title": page.title_at(hi), "mentioned": mentioned})
        return out

    # ---- alignment
    def instances(self, t: int) -> list[dict]:
        """All instances (rows with entity keys) of snapshot t."""
        s = self.s
        v_t = self.in_v(t)
        t_t = self.triples(t, v_t)
        r_t = self.relations(t)

        def emerging(e: str) -> bool:
            if s.emerging == "created_after_snapshot":
                return self.created[e] >= t
            return e not in v_t

        rows = []
        for k in range(1, s.windows + 1):
            tau = t + k * s.window_seconds
            v_k = self.in_v(tau)
            t_k = self.triples(tau, v_k)
            ops: dict[Triple, list[tuple[str, str | None]]] = {}
            for tr in t_t:
                if not (tr[0] in v_k and tr[2] in v_k):
                    continue  # left V: neither D nor X
                sig = self.d_signal(tr, t, tau, t_k)
                if sig in ("rank", "removed") and s.permanence and self.added_back(tr, tau):
                    continue  # R2a: not a permanent removal: neither D nor X
                ops[tr] = [("D", sig) if sig else ("X", None)]
            for tr in t_k - t_t:
                ops[tr] = [("EE" if emerging(tr[0]) or emerging(tr[2]) else "E", None)]
                if s.deprecate_window_additions:  # an addition ended inside the window
                    sig = self.end_signal(tr, t, tau)
                    if sig is not None:
                        ops[tr].append(("D", sig))
            for passage in self.passages(t, k):
                m = passage["mentioned"]
                line: list[tuple[dict, bool]] = []  # (row, between two mentions)
                for tr, found in ops.items():
                    s_in, o_in = tr[0] in m, tr[2] in m
                    added = found[0][0] in ("E", "EE")
                    for op, sig in found:
                        if s_in and o_in:
                            line.append((self._row(t, k, passage, op, tr, sig,
                                                   self.qualifiers(tr, tau)), True))
                        elif added and s_in != o_in:
                            inside, outside = (tr[0], tr[2]) if s_in else (tr[2], tr[0])
                            if not (emerging(inside) and not emerging(outside)):
                                continue
                            end = self.presence_end(tr, tau)  # R3: it persists
                            if s.ee_kg_persistence and end is not None and \
                                    end <= tau + s.ee_kg_persistence:
                                continue
                            line.append((self._row(t, k, passage, "EE-KG" if op != "D" else "D",
                                                   tr, sig, self.qualifiers(tr, tau)), False))
                if self.selected(line, passage, t, tau):
                    rows.extend(self.known_relations([row for row, _ in line], r_t))
        return rows

    def known_relations(self, line: list[dict], r_t: set[str]) -> list[dict]:
        """s07's relation filter on a selected line's rows: the rows whose relation is in
        R_t, none when the line lost a row and kept no E, EE, EE-KG or D row."""
        if not self.s.relations_in_snapshot:
            return line
        known = [r for r in line if r["p"] in r_t]
        if len(known) < len(line) and all(r["op"] == "X" for r in known):
            return []
        return known

    def selected(self, line: list[tuple[dict, bool]], passage: dict, t: int, tau: int) -> bool:
        """The authors' line rules R1, R2b and R5 on one passage's rows."""
        s = self.s
        delta: dict[Triple, list[dict]] = defaultdict(list)  # R1's: E, EE, D between mentions
        kg: set[Triple] = set()
        for row, pair in line:
            triple = (row["s"], row["p"], row["o"])
            if pair and row["op"] in ("E", "EE", "D"):
                delta[triple].append(row)
            elif not pair and row["op"] == "EE-KG":
                kg.add(triple)
        if s.between_mentions and not delta:
            return False
        d_rows = [(tr, r) for tr, rs in delta.items() for r in rs if r["op"] == "D"]
        if s.passage_after_removal and d_rows:
            latest = max(self.end_qualifier_at(tr, t, tau) if r["signal"].startswith("qualifier:")
                         else self.presence_end(tr, t) for tr, r in d_rows)
            if latest is not None and passage["first_seen"] < latest:
                return False
        if s.interesting:
            rows = [r for rs in delta.values() for r in rs]
            qualifier_d = any(r["op"] == "D" and r["signal"].startswith("qualifier:") for r in rows)
            not_plain = any(r["op"] != "D" for r in rows) or qualifier_d
            emerging = any(r["op"] == "EE" for r in rows) or bool(kg)
            ratio = (len(delta) + len(kg)) / len(passage["mentioned"])
            if not ((not_plain and ratio > s.interesting_ratio) or qualifier_d or emerging):
                return False
        return True

    def qualifiers(self, tr: Triple, tau: int) -> list[tuple[str, str, int]]:
        """Time qualifiers of the key's statements in s's state at tau (``qualifier_info``)."""
        found = {(q.pid, q.time, q.precision) for x in self.statements(tr[0], tau)
                 if x.pid == tr[1] and x.target == tr[2] for q in x.qualifiers}
        return sorted(found)

    @staticmethod
    def _row(t: int, k: int, passage: dict, op: str, tr: Triple, signal: str | None,
             qualifiers: list[tuple[str, str, int]]) -> dict:
        block: Block = passage["block"]
        return {"snapshot": t, "window": k, "op": op, "s": tr[0], "p": tr[1], "o": tr[2],
                "signal": signal, "page": passage["page"], "page_title": passage["title"],
                "paragraph": block.identity, "first_seen": passage["first_seen"],
                "mentioned": sorted(passage["mentioned"]), "qualifiers": qualifiers}
