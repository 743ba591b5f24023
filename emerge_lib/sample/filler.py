"""Bulk "filler" pages that give the sample its size without touching the truth.

Why filler cannot change truth.jsonl (the invariants tests check):

* filler items have statements only about filler subjects, so no triple between planted
  entities ever comes from filler;
* filler articles link only filler (and core) titles, and inside the forbidden ranges
  (each snapshot's (t - 1 h, τ_5 + 1 h]) a filler article's prose never changes except
  by appending a paragraph without links (one mentioned entity at most: never a passage);
  articles are never created inside those ranges;
* so every new paragraph of any window is a planted one.

Bench mode (``bench_statements`` / ``bench_passages`` > 0, opt-in, for
``benchmarks/build_dataset.py``) breaks the last rule on purpose: filler items get extra
item-valued statements to other filler items that have articles, and filler articles
append linked paragraphs inside the snapshots' windows that mention those objects, so a
build finds many passages and instances. Planted truth is still exact (bench statements
and paragraphs involve filler only), but the filler's own instances are not in
truth.jsonl. With both settings 0 (the default) nothing below changes a byte.

Every page is a pure function of (seed, page index): pages can be generated in any order,
in parallel, and identically for the older and the newer dump.
"""

from __future__ import annotations

import bisect
import random
from dataclasses import dataclass

from emerge_lib.sample.model import DAY, HOUR, ItemState, Qualifier, Statement, iso
from emerge_lib.sample.names import (
    ALL_LANGS,
    DESCRIPTIONS,
    GIVEN,
    LATIN_LANGS,
    filler_kind,
    filler_name,
    label_languages,
    stable_int,
    transliterate,
)
from emerge_lib.sample.render import (
    alias_entry,
    contributor,
    label_entry,
    render_legacy,
    revision,
    sitelink_entry,
    statement_json,
    wikibase_time,
)

# (ts, rev_id, xml, redirect target: "" = readable non-redirect, None = deleted text)
RevOut = tuple[int, int, str, str | None]


class IdSpace:
    """Page ids of one wiki: planted pages placed by creation time, filler in the gaps.

    Revision ids are ``(timestamp - epoch) * multiplier + page_id``: unique, increasing
    with time as on a real wiki, and computable for any page without a global counter.
    """

    def __init__(self, total: int, planted_ids: list[int], start: int, end: int, epoch: int) -> None:
        self.total = total
        self.planted = sorted(planted_ids)
        self._planted_set = set(planted_ids)
        self.start, self.end, self.epoch = start, end, epoch
        self.multiplier = 10 ** len(str(total + 1))
        self.slot = max(1, (end - start) // max(total, 1))

    @staticmethod
    def place(created: list[tuple[int, str]], total: int, start: int, end: int) -> dict[str, int]:
        """Page ids for planted pages (creation time, key): spread by creation time, strictly
        increasing with it, and squeezed back from the end when they crowd there."""
        ordered = sorted(created)
        span = max(end - start, 1)
        ids: list[int] = []
        for ts, _ in ordered:
            want = min(max(1 + (max(ts, start) - start) * total // span, 1), total)
            ids.append(max(want, ids[-1] + 1) if ids else want)
        for n in range(len(ids) - 1, -1, -1):
            ceiling = total - (len(ids) - 1 - n)
            if n + 1 < len(ids):
                ceiling = min(ceiling, ids[n + 1] - 1)
            ids[n] = min(ids[n], ceiling)
        return {key: pid for (_, key), pid in zip(ordered, ids, strict=True)}

    def filler_pid(self, f: int) -> int:
        """The page id of filler page f (the (f+1)-th id not taken by a planted page)."""
        pid = f + 1
        while True:
            nxt = f + 1 + bisect.bisect_right(self.planted, pid)
            if nxt == pid:
                return pid
            pid = nxt

    def filler_index(self, pid: int) -> int | None:
        if pid in self._planted_set:
            return None
        return pid - 1 - bisect.bisect_left(self.planted, pid)

    def created(self, pid: int) -> int:
        return self.start + (pid - 1) * (self.end - self.start) // max(self.total, 1)

    def rev_id(self, ts: int, pid: int) -> int:
        return (ts - self.epoch) * self.multiplier + pid


USERS = ("Rodrigo Alvez", "Mireille K", "Tom.Reding", "Lemonaka", "Ghouston", "Jura1",
         "Nikki", "Hoo man", "Pasleim", "Epìdosis", "Sabas88", "MisterSynergy")
BOTS = ("KrBot", "QuickStatementsBot", "Reinheitsgebot", "DeltaBot", "Sk!dbot", "PLbot")
WP_USERS = ("Materialscientist", "Citation bot", "InternetArchiveBot", "Ser Amantio di Nicolao",
            "BD2412", "Koavf", "Bearcat", "Rosguill", "Onel5969", "Magioladitis")

# item-valued properties of bench statements (all declared in plan.PROPERTIES)
BENCH_PROPERTIES = ("P47", "P69", "P102", "P108", "P127", "P136", "P159", "P166", "P463",
                    "P495", "P740", "P1001", "P1027", "P17", "P131", "P54")

ITEM_CLASS = {"person": "core:human", "place": "core:city", "org": "core:organization",
              "work": "core:novel"}


@dataclass
class FillerSettings:
    seed: int
    n_items: int
    n_articles: int
    revisions: int
    end: int  # last filler timestamp (before the newest dump's cutoff)
    legacy_end: int
    forbidden: list[tuple[int, int]]
    bench_statements: int = 0  # extra item-valued statements per filler item
    bench_passages: int = 0  # linked paragraphs added inside windows, over all filler articles
    windows: tuple[tuple[int, int], ...] = ()  # (τ_{k-1}, τ_k] of every snapshot's windows
    recent_share: float = 0.5  # of a page's later edits, the share in the last 200 days


class Filler:
    """Filler items (Wikidata) and articles/redirects (English Wikipedia)."""

    def __init__(self, cfg: FillerSettings, wd: IdSpace, en: IdSpace, core_qids: dict[str, str],
                 planted_titles: frozenset[str]) -> None:
        self.cfg = cfg
        self.wd, self.en = wd, en
        self.core = core_qids
        self.planted_titles = planted_titles
        self.n_items, self.n_articles = cfg.n_items, cfg.n_articles
        self.n_redirects = cfg.n_articles // 3
        self.ref_qid = core_qids["core:archive"]
        self._country_qids = [core_qids[k] for k in ("core:veloria", "core:ostrand", "core:marenia")]

    # ---- index arithmetic
    @staticmethod
    def enwiki_total(n_articles: int) -> int:
        return n_articles + n_articles // 3

    def article_of_item(self, i: int) -> int | None:
        if self.n_articles == 0:
            return None
        if self.n_items <= self.n_articles:
            return i if i < self.n_articles else None
        j = -(-i * self.n_articles // self.n_items)
        return j if j < self.n_articles and self.item_of_article(j) == i else None

    def item_of_article(self, j: int) -> int | None:
        if self.n_items <= self.n_articles:
            return j if j < self.n_items else None
        return j * self.n_items // self.n_articles

    def article_kind(self, j: int) -> str:
        i = self.item_of_article(j)
        return filler_kind(i if i is not None else self.n_items + j)

    def article_title(self, j: int) -> str:
        kind = self.article_kind(j)
        title = filler_name(j, kind)
        return title if title not in self.planted_titles else f"{title} ({kind})"

    def redirect_title(self, r: int) -> str:
        title = filler_name(10_000_000 + r, "place")
        return title if title not in self.planted_titles else f"{title} (redirect)"

    def article_pid(self, j: int) -> int:
        return self.en.filler_pid(j + j // 3)

    def in_forbidden(self, ts: int) -> bool:
        return any(lo <= ts <= hi for lo, hi in self.cfg.forbidden)

    def article_created(self, j: int) -> int:
        pid = self.article_pid(j)
        ts = self.en.created(pid) + stable_int(self.cfg.seed, "acreated", j) % self.en.slot
        for lo, hi in self.cfg.forbidden:
            if lo <= ts <= hi:
                ts = hi + HOUR + ts % HOUR
        return ts

    def item_qid(self, i: int) -> str:
        return f"Q{self.wd.filler_pid(i)}"

    def _timestamps(self, rng: random.Random, created: int, n: int) -> list[int]:
        """n distinct timestamps from creation on; half of the later edits (``recent_share``)
        fall in the last 200 days (edit activity is recent on real wikis, so windows see
        filler edits too; a smaller share puts more of the history before them)."""
        span = self.cfg.end - created
        if span <= 4 * n:
            return [created + k for k in range(n)]
        recent = max(created + 1, self.cfg.end - 200 * DAY)
        picked: set[int] = set()
        while len(picked) < n - 1:
            lo = recent if rng.random() < self.cfg.recent_share else created + 1
            picked.add(rng.randrange(lo, self.cfg.end))
        return [created, *sorted(picked)]

    def _count(self, rng: random.Random) -> int:
        avg = max(1, self.cfg.revisions)
        return 1 + int(rng.random() * (2 * avg - 1))

    # ---- Wikidata items
    def _statements(self, rng: random.Random, i: int, kind: str, qid: str) -> list[Statement]:
        sts = [Statement("P31", self.core[ITEM_CLASS[kind]], references=1)]

        def earlier(want: str) -> str | None:
            for _ in range(6):
                if i == 0:
                    return None
                cand = rng.randrange(i)
                if filler_kind(cand) == want:
                    return self.item_qid(cand)
            return None

        country = rng.choice(self._country_qids)
        year = 1900 + rng.randrange(110)
        if kind == "person":
            sts.append(Statement("P27", country))
            place = earlier("place")
            if place:
                sts.append(Statement("P19", place))
            sts.append(Statement("P569", f"{wikibase_time(year, rng.randint(1, 12), rng.randint(1, 28))}/11", kind="time"))
            org = earlier("org")
            if org:
                start = Qualifier("P580", wikibase_time(year + 25, 0, 0), 9)
                quals = (start, Qualifier("P582", wikibase_time(year + 30 + rng.randrange(20), rng.randint(1, 12), 0), 10)) \
                    if rng.random() < 0.5 else (start,)
                sts.append(Statement("P108", org, qualifiers=quals))
            sts.append(Statement("P214", str(rng.randrange(10**8, 10**9)), kind="external-id", references=0))
        elif kind == "place":
            sts.append(Statement("P17", country))
            sts.append(Statement("P1082", str(rng.randrange(200, 900_000)), kind="quantity",
                                 qualifiers=(Qualifier("P585", wikibase_time(2020, 0, 0), 9),)))
            sts.append(Statement("P625", f"{rng.uniform(40, 60):.4f},{rng.uniform(-10, 30):.4f}", kind="globe"))
            other = earlier("place")
            if other:
                sts.append(Statement("P47", other))
        elif kind == "org":
            sts.append(Statement("P17", country))
            place = earlier("place")
            if place:
                sts.append(Statement("P159", place))
            sts.append(Statement("P571", f"{wikibase_time(year, 0, 0)}/9", kind="time"))
            sts.append(Statement("P856", f"https://www.example.org/{qid.lower()}", kind="url", references=0))
        else:
            author = earlier("person")
            if author:
                sts.append(Statement("P50", author))
            sts.append(Statement("P577", f"{wikibase_time(year, 0, 0)}/9", kind="time"))
            sts.append(Statement("P495", country))
        sts.append(Statement("P646", f"/m/0{rng.randrange(36**5):x}", kind="external-id", references=0))
        return sts

    def item_page(self, f: int, pid: int) -> tuple[str, int, list[RevOut]]:
        """Filler item f: labels/descriptions/aliases/sitelinks grow, statements come and go."""
        cfg = self.cfg
        rng = random.Random(stable_int(cfg.seed, "item", f))
        kind = filler_kind(f)
        j = self.article_of_item(f)
        name = self.article_title(j) if j is not None else filler_name(self.n_articles + f, kind)
        qid = f"Q{pid}"
        created = self.wd.created(pid) + rng.randrange(self.wd.slot)
        n = self._count(rng)
        stamps = self._timestamps(rng, created, n)
        n = len(stamps)

        n_langs = min(len(ALL_LANGS), 3 + int(rng.paretovariate(1.2) * 8))
        langs = label_languages(n_langs, rng.randrange(1 << 30))
        labels = [(lang, transliterate(name, lang)) for lang in langs]
        label_entries = [label_entry(lang, v) for lang, v in labels]
        desc_items = list(DESCRIPTIONS[kind].items())[: rng.randint(1, len(DESCRIPTIONS[kind]))]
        desc_entries = [label_entry(lang, v) for lang, v in desc_items]
        alias_langs = langs[: rng.randrange(0, min(6, len(langs)) + 1)]
        alias_items = [(lang, (transliterate(name.split()[-1], lang), f"{name} ({kind})")) for lang in alias_langs]
        alias_entries = [alias_entry(lang, v) for lang, v in alias_items]
        wikis = [lang for lang in langs[1:] if lang in LATIN_LANGS and "-" not in lang][: rng.randrange(0, 10)]
        site_items = [(f"{lang}wiki", transliterate(name, lang)) for lang in wikis]
        enwiki_ts = None
        if j is not None:
            enwiki_ts = max(created, self.article_created(j) + HOUR)
            site_items.insert(0, ("enwiki", name))
        site_entries = [sitelink_entry(s, t) for s, t in site_items]

        statements = self._statements(rng, f, kind, qid)
        added = [0] + [rng.randrange(n) for _ in statements[1:]]
        removed = [rng.randrange(a + 1, n) if (n - a > 1 and rng.random() < 0.08) else n
                   for a in added]
        if cfg.bench_statements:
            extra = [Statement(pid, self.item_qid(self.item_of_article(j2)), references=0)  # type: ignore[arg-type]
                     for pid, j2 in self.bench_targets(f)]
            statements.extend(extra)
            added.extend([0] * len(extra))
            removed.extend([n] * len(extra))
        st_json = [statement_json(qid, s, _same, self.ref_qid) for s in statements]
        order = sorted(range(len(statements)), key=lambda x: int(statements[x].pid[1:]))

        redirect_to = None
        if j is None and n >= 2 and f > 0 and rng.random() < 0.01:
            redirect_to = self.item_qid(rng.randrange(f))
        deleted = {r for r in range(1, n - 1) if rng.random() < 0.01}
        hidden = {r for r in range(n) if rng.random() < 0.003}
        out_of_order = n >= 3 and rng.random() < 0.01

        revs: list[RevOut] = []
        prev_counts = (0, 0, 0, 0, frozenset())
        parent = 0
        claim_cache: dict[frozenset[int], str] = {}
        for r, ts in enumerate(stamps):
            frac = (r + 1) / n
            cl = max(1, round(len(label_entries) * frac))
            cd = round(len(desc_entries) * frac)
            ca = round(len(alias_entries) * frac)
            others = [k for k in range(len(site_items)) if site_items[k][0] != "enwiki"]
            sites = others[: round(len(others) * frac)]
            if enwiki_ts is not None and ts >= enwiki_ts:
                sites = [0, *sites]
            live = frozenset(x for x in range(len(statements)) if added[x] <= r < removed[x])
            is_redirect = redirect_to is not None and r == n - 1
            if is_redirect:
                text = f'{{"entity":"{qid}","redirect":"{redirect_to}"}}'
            elif ts < cfg.legacy_end:
                state = ItemState(
                    labels=tuple(labels[:cl]), descriptions=tuple(desc_items[:cd]),
                    aliases=tuple(alias_items[:ca]), sitelinks=tuple(site_items[k] for k in sites),
                    statements=tuple(statements[x] for x in order if x in live))
                text = render_legacy(qid, state, _same, self.ref_qid, badges=ts >= _BADGES)
            else:
                claims = claim_cache.get(live)
                if claims is None:
                    claims = _claims([(statements[x].pid, st_json[x]) for x in order if x in live])
                    claim_cache[live] = claims
                text = (
                    f'{{"type":"item","id":"{qid}","labels":{_obj(label_entries[:cl])},'
                    f'"descriptions":{_obj(desc_entries[:cd])},"aliases":{_obj(alias_entries[:ca])},'
                    f'"claims":{claims},"sitelinks":{_obj([site_entries[k] for k in sites])}}}'
                )
            counts = (cl, cd, ca, len(sites), live)
            comment = _item_comment(r, prev_counts, counts, labels, statements, is_redirect, redirect_to)
            prev_counts = counts
            user = BOTS[r % len(BOTS)] if rng.random() < 0.4 else (None if rng.random() < 0.1 else rng.choice(USERS))
            id_ts = ts
            if out_of_order and r == 1:
                id_ts = stamps[-1] + 1
            rev_id = self.wd.rev_id(id_ts, pid)
            is_deleted = r in deleted
            xml = revision(
                rev_id, parent, iso(ts),
                contributor(user, f"198.51.100.{rng.randrange(1, 255)}", r in hidden or is_deleted),
                None if is_deleted else comment, "wikibase-item", "application/json",
                None if is_deleted else text, minor=user in BOTS,
            )
            revs.append((ts, rev_id, xml, None if is_deleted else (redirect_to or "") if is_redirect else ""))
            parent = rev_id
        if out_of_order:
            revs.sort(key=lambda x: x[1])
        return qid, 0, revs

    # ---- bench mode
    def bench_targets(self, i: int | None) -> list[tuple[str, int]]:
        """Item i's bench statements as (pid, article index of the object): objects always
        have articles, so a paragraph linking them mentions both ends of a statement."""
        if i is None or self.n_articles < 2:
            return []
        rng = random.Random(stable_int(self.cfg.seed, "bench", i))
        want = max(self.cfg.bench_statements, 3)
        out: list[tuple[str, int]] = []
        seen: set[tuple[str, int]] = set()
        for _ in range(4 * want):
            if len(out) == want:
                break
            j2 = rng.randrange(self.n_articles)
            key = (rng.choice(BENCH_PROPERTIES), j2)
            if key in seen or self.item_of_article(j2) == i:
                continue
            seen.add(key)
            out.append(key)
        return out

    def bench_paragraphs(self, j: int, title: str, created: int) -> list[tuple[int, str]]:
        """Article j's bench paragraphs as (timestamp, wikitext), inside the windows, sorted.

        Paragraphs go two to a revision (fewer, larger revisions, as in real edits); each
        links two or three objects of the article's item's bench statements."""
        cfg = self.cfg
        n_f = max(1, self.n_articles)
        m = cfg.bench_passages // n_f + (1 if j < cfg.bench_passages % n_f else 0)
        if not m or not cfg.windows:
            return []
        targets = self.bench_targets(self.item_of_article(j))
        rng = random.Random(stable_int(cfg.seed, "benchpara", j))
        if not targets:
            targets = [("P47", rng.randrange(n_f)) for _ in range(3)]
        subj = title.split(" (")[0]
        slots: dict[int, list[str]] = {}
        for q in range(m):
            a, b, c = (self.article_title(targets[(q + d) % len(targets)][1]) for d in range(3))
            year = 1850 + rng.randrange(170)
            text = (f"In {year}, {subj} was linked with [[{a}]] in the survey record {j}.{q}, "
                    f"which also names [[{b}]] among its principal partners. "
                    f"Later accounts of the period connect {subj} with [[{c}|{c.split()[-1]}]] "
                    f"and describe a {rng.choice(('lasting', 'brief', 'difficult', 'productive'))} "
                    "relationship between them that shaped the region for decades.")
            slots.setdefault((j + q // 2) % len(cfg.windows), []).append(text)
        out: list[tuple[int, str]] = []
        for slot, texts in slots.items():
            lo, hi = cfg.windows[slot]
            span = max(1, hi - lo - 4 * HOUR)
            ts = lo + 2 * HOUR + stable_int(cfg.seed, "benchts", j, slot) % span
            if created < ts <= cfg.end:
                out.extend((ts, t) for t in texts)
        out.sort(key=lambda x: x[0])
        return out

    # ---- English Wikipedia
    def enwiki_page(self, f: int, pid: int) -> tuple[str, int, list[RevOut]]:
        if f % 4 == 3:
            return self._redirect_page(f // 4, pid)
        return self._article_page(f - (f + 1) // 4, pid)

    def _redirect_page(self, r: int, pid: int) -> tuple[str, int, list[RevOut]]:
        rng = random.Random(stable_int(self.cfg.seed, "redirect", r))
        title = self.redirect_title(r)
        target = self.article_title(rng.randrange(max(1, min(self.n_articles, 3 * r + 1))))
        created = self.en.created(pid) + rng.randrange(self.en.slot)
        stamps = [created] + ([created + rng.randrange(DAY, 400 * DAY)] if rng.random() < 0.3 else [])
        stamps = [s for s in stamps if s <= self.cfg.end] or [created]
        revs: list[RevOut] = []
        parent = 0
        for k, ts in enumerate(stamps):
            text = f"#REDIRECT [[{target}]]" + ("\n\n{{R from alternative name}}" if k else "")
            rev_id = self.en.rev_id(ts, pid)
            xml = revision(rev_id, parent, iso(ts), contributor(rng.choice(WP_USERS), "", False),
                           f"Redirected page to [[{target}]]" if k == 0 else "+rcat",
                           "wikitext", "text/x-wiki", text, minor=k > 0)
            revs.append((ts, rev_id, xml, target))
            parent = rev_id
        return title, 0, revs

    def _link(self, rng: random.Random, j: int) -> tuple[str, str]:
        """A link to another filler page: (wikitext, plain anchor)."""
        roll = rng.random()
        if roll < 0.08 and self.n_redirects:
            title = self.redirect_title(rng.randrange(self.n_redirects))
        elif roll < 0.12:
            title = filler_name(20_000_000 + rng.randrange(10**6), "org")  # a red link
        elif roll < 0.16:
            title = rng.choice(("Veloria", "Ostrand", "Marenia"))
        else:
            title = self.article_title(rng.randrange(max(1, self.n_articles)))
        form = rng.random()
        if form < 0.5:
            return f"[[{title}]]", title
        if form < 0.6:
            low = title[0].lower() + title[1:]
            return f"[[{low.replace(' ', '_')}|{title}]]", title
        if form < 0.7:
            return f"[[{title}#History|{title}]]", title
        anchor = title.split()[-1]
        return f"[[{title}|{anchor}]]", anchor

    def _sentence(self, rng: random.Random, j: int, name: str, links: bool) -> str:
        subj = name.split(" (")[0]
        year = 1850 + rng.randrange(170)
        if links:
            a, _ = self._link(rng, j)
            b, _ = self._link(rng, j)
        else:
            a = rng.choice(("the region", "the capital", "the coast", "the valley"))
            b = rng.choice(("a local council", "the provincial archive", "a national newspaper"))
        return rng.choice((
            f"In {year}, {subj} was associated with {a}, according to contemporary accounts.",
            f"The connection between {subj} and {a} was first documented in {year}.",
            f"{subj} later worked closely with {b} on a number of projects in {a}.",
            f"By {year} the influence of {a} on {subj} had become widely acknowledged.",
            f"Historians have compared {subj} with {b}, noting similarities in scope and ambition.",
            f"A {rng.choice(('detailed', 'brief', 'critical'))} study published in {year} examined the relationship with {a}.",
            f"Records from {year} mention {subj} alongside {a} and {b}.",
        ))

    def _ref(self, rng: random.Random, name: str) -> str:
        year = 1990 + rng.randrange(34)
        if rng.random() < 0.5:
            return (f'<ref name="r{rng.randrange(1000)}">{{{{cite web |url=https://www.example.org/{rng.randrange(10**6)} '
                    f'|title={name} profile |website=Example News |date={year}-0{rng.randint(1, 9)}-1{rng.randint(0, 9)} '
                    f'|access-date=2023-01-01}}}}</ref>')
        return (f"<ref>{{{{cite book |last={rng.choice(GIVEN)} |title=A history of {name.split()[0]} "
                f"|publisher=Example Press |year={year} |page={rng.randrange(1, 400)}}}}}</ref>")

    def _paragraph(self, rng: random.Random, j: int, name: str, links: bool = True) -> str:
        parts = [self._sentence(rng, j, name, links) for _ in range(rng.randint(2, 6))]
        if rng.random() < 0.6:
            parts[rng.randrange(len(parts))] += self._ref(rng, name)
        if rng.random() < 0.1:
            parts.append("<!-- please cite a source before changing this -->")
        return " ".join(parts)

    def _infobox(self, rng: random.Random, kind: str, name: str, j: int) -> str:
        place, _ = self._link(rng, j)
        if kind == "person":
            y = 1900 + rng.randrange(100)
            return ("{{Infobox person\n| name = " + name + "\n| image = " + name.replace(" ", "_") + ".jpg\n"
                    f"| birth_date = {{{{birth date and age|{y}|{rng.randint(1, 12)}|{rng.randint(1, 28)}}}}}\n"
                    f"| birth_place = {place}, {{{{flagicon|Veloria}}}} [[Veloria]]\n"
                    f"| occupation = {{{{hlist|Writer|Historian}}}}\n| years_active = {y + 20}–present\n}}}}")
        if kind == "place":
            return ("{{Infobox settlement\n| name = " + name + "\n| settlement_type = Town\n"
                    f"| subdivision_type = Country\n| subdivision_name = {{{{flag|Veloria}}}}\n"
                    f"| population_total = {rng.randrange(500, 900000)}\n"
                    f"| coordinates = {{{{coord|{rng.randrange(40, 60)}|{rng.randrange(60)}|N|{rng.randrange(30)}|{rng.randrange(60)}|E|display=inline,title}}}}\n}}}}")
        if kind == "org":
            return ("{{Infobox organization\n| name = " + name + f"\n| founded = {{{{start date|{1900 + rng.randrange(120)}}}}}\n"
                    f"| headquarters = {place}\n| website = {{{{URL|https://www.example.org/{j}}}}}\n}}}}")
        return ("{{Infobox book\n| name = " + name + "\n| author = " + place +
                f"\n| language = English\n| release_date = {1900 + rng.randrange(120)}\n}}}}")

    def _article_page(self, j: int, pid: int) -> tuple[str, int, list[RevOut]]:
        """Filler article j: grows section by section; copyedits, vandalism and reverts
        outside the forbidden ranges; only link-free additions inside them."""
        cfg = self.cfg
        rng = random.Random(stable_int(cfg.seed, "article", j))
        kind = self.article_kind(j)
        title = self.article_title(j)
        created = self.article_created(j)
        n = self._count(rng)
        stamps = self._timestamps(rng, created, n)
        n = len(stamps)

        desc = DESCRIPTIONS[kind]["en"]
        head = (f"{{{{Short description|{desc.capitalize()}}}}}\n{{{{Use dmy dates|date=January 2020}}}}"
                + ("\n{{About|the " + kind + "|other uses|" + title + " (disambiguation)}}" if rng.random() < 0.2 else ""))
        box = self._infobox(rng, kind, title, j)
        l1, _ = self._link(rng, j)
        lead = (f"'''{title}''' is a {desc} associated with {l1}. " + self._paragraph(rng, j, title))
        glue = rng.random() < 0.5  # infobox directly followed by the lead, as often in reality
        sections = [rng.choice(("History", "Career", "Background", "Reception", "Legacy", "Geography"))
                    for _ in range(rng.randint(1, 4))]
        paras: list[tuple[int, str]] = []  # (section, text)
        for s in range(len(sections)):
            for _ in range(rng.randint(1, 3)):
                paras.append((s, self._paragraph(rng, j, title)))
        variants = {rng.randrange(len(paras)): None} if paras and rng.random() < 0.5 else {}
        for v in variants:
            variants[v] = paras[v][1].replace(" the ", " the early ", 1) + " This has been disputed."
        extras: list[str] = []
        if rng.random() < 0.3:
            rows = "\n".join(f"|-\n| {1990 + 5 * k} || {rng.randrange(1000, 99999)} || {self._link(rng, j)[0]}" for k in range(rng.randint(2, 6)))
            extras.append('{| class="wikitable sortable"\n|+ Figures\n! Year !! Value !! Notes\n' + rows + "\n|}")
        if rng.random() < 0.3:
            extras.append(f"[[File:{title.replace(' ', '_')}_{rng.randrange(100)}.jpg|thumb|upright|{title} in {1950 + rng.randrange(70)}, with {self._link(rng, j)[0]}]]")
        if rng.random() < 0.3:
            extras.append("\n".join(f"* {self._link(rng, j)[0]} ({1900 + rng.randrange(120)})" for _ in range(rng.randint(2, 5))))
        cats = [f"[[Category:{c}]]" for c in (f"{desc.capitalize()}s in Veloria", f"{1900 + rng.randrange(120)} establishments",
                                               f"Articles about {kind}s", "Living people" if kind == "person" else "Veloria")]
        tail = ["== References ==\n{{Reflist}}",
                f"== External links ==\n* [https://www.example.org/{j} Official website]\n* {{{{Commons category|{title}}}}}",
                "{{Veloria-stub}}\n{{Authority control}}",
                f"{{{{DEFAULTSORT:{title.split()[-1]}, {title.split()[0]}}}}}"]

        # a per-revision view: paragraphs shown, variant on/off, categories, safe paragraphs
        shown = 1 if paras else 0
        variant_on = extras_on = False
        safe = 0
        safe_paras: list[str] = []
        revs: list[RevOut] = []
        parent = 0
        prev_text = ""
        bench = self.bench_paragraphs(j, title, created) if cfg.bench_passages else []
        taken = set(stamps)
        bench_on: list[str] = []  # bench paragraphs shown so far
        state: tuple = ()  # the last revision's _assemble arguments, less the tail paragraphs

        def emit_bench(until: int) -> None:
            """Revisions appending the bench paragraphs dated before ``until``."""
            nonlocal parent, prev_text
            while bench and bench[0][0] < until:
                bts = bench[0][0]
                while bench and bench[0][0] == bts:
                    bench_on.append(bench.pop(0)[1])
                while bts in taken:
                    bts += 1
                taken.add(bts)
                btext = self._assemble(*state, safe_paras + bench_on)
                bid = self.en.rev_id(bts, pid)
                revs.append((bts, bid, revision(bid, parent, iso(bts), contributor(rng.choice(WP_USERS), "", False),
                                                "/* History */ expanded", "wikitext", "text/x-wiki", btext), ""))
                parent, prev_text = bid, btext

        for r, ts in enumerate(stamps):
            if bench and state:
                emit_bench(ts)
            frozen = self.in_forbidden(ts)
            if not frozen:
                shown = max(shown, min(len(paras), round(len(paras) * (r + 1) / n)))
                if variants and not variant_on and r > 0 and rng.random() < 0.3:
                    variant_on = True
                extras_on = extras_on or r >= n // 2
            elif rng.random() < 0.5:
                safe += 1
                safe_paras.append(self._paragraph(random.Random(stable_int(cfg.seed, "safe", j, safe)),
                                                  j, title, links=False))
            ncat = min(len(cats), 1 + r)
            text = self._assemble(head, box, lead, glue, sections, paras[:shown], variants if variant_on else {},
                                  extras if extras_on else [], cats[:ncat], tail,
                                  safe_paras + bench_on if bench_on else safe_paras)
            if cfg.bench_passages:
                state = (head, box, lead, glue, sections, paras[:shown], variants if variant_on else {},
                         extras if extras_on else [], cats[:ncat], tail)
            # vandalism and its revert, outside the forbidden ranges
            if r > 0 and not frozen and rng.random() < 0.08:
                vts = ts - rng.randrange(60, 3000)
                if vts > stamps[r - 1] and not self.in_forbidden(vts):
                    vandal = prev_text.replace(lead[:40], "LOL " * 12 + "this page is rubbish ", 1)
                    vid = self.en.rev_id(vts, pid)
                    revs.append((vts, vid, revision(vid, parent, iso(vts), contributor(None, f"203.0.113.{rng.randrange(1, 255)}", False),
                                                    "", "wikitext", "text/x-wiki", vandal), ""))
                    parent = vid
            if r == 0:
                comment = "Created page with '" + lead[:60] + "'"
            elif text == prev_text:
                comment = "Null edit"
            else:
                comment = rng.choice(("copyedit", "Added citation", "/* History */ expanded", "Added category",
                                      "Reverted edits by 203.0.113.9 (talk) to last version by Bearcat",
                                      "Alter: title. Add: date. | Use this bot. Report bugs."))
            rev_id = self.en.rev_id(ts, pid)
            revs.append((ts, rev_id, revision(rev_id, parent, iso(ts), contributor(rng.choice(WP_USERS), "", rng.random() < 0.003),
                                              comment, "wikitext", "text/x-wiki", text, minor=rng.random() < 0.3), ""))
            parent = rev_id
            prev_text = text
        if bench and state:
            emit_bench(cfg.end + 1)
        if cfg.bench_passages:
            revs.sort(key=lambda x: x[0])
        return title, 0, revs

    @staticmethod
    def _assemble(head: str, box: str, lead: str, glue: bool, sections: list[str],
                  paras: list[tuple[int, str]], variants: dict[int, str | None], extras: list[str],
                  cats: list[str], tail: list[str], safe: list[str]) -> str:
        out = [head]
        if glue:
            out.append(box + "\n" + lead)
        else:
            out.extend((box, lead))
        last_section = -1
        for k, (s, text) in enumerate(paras):
            if s != last_section:
                out.append(f"== {sections[s]} ==")
                last_section = s
            out.append(variants.get(k) or text)
        out.extend(extras)
        out.extend(safe)
        out.extend(tail[:3])
        out.append(tail[3] + "\n" + "\n".join(cats))
        return "\n\n".join(out) + "\n"


_BADGES = 1364774400  # 2013-04-01: legacy sitelinks gained badges


def _same(x: str) -> str:
    return x


def _obj(entries: list[str]) -> str:
    return "{" + ",".join(entries) + "}" if entries else "[]"


def _claims(pairs: list[tuple[str, str]]) -> str:
    if not pairs:
        return "[]"
    groups: dict[str, list[str]] = {}
    for pid, text in pairs:
        groups.setdefault(pid, []).append(text)
    return "{" + ",".join(f'"{p}":[{",".join(v)}]' for p, v in groups.items()) + "}"


def _item_comment(r: int, prev: tuple, now: tuple, labels: list[tuple[str, str]],
                  statements: list[Statement], is_redirect: bool, target: str | None) -> str:
    if r == 0:
        return "/* wbeditentity-create:0| */"
    if is_redirect:
        return f"/* wbmergeitems-to:0||{target} */"
    if now[0] > prev[0]:
        lang, value = labels[now[0] - 1]
        return f"/* wbsetlabel-add:1|{lang} */ {value}"
    gained = now[4] - prev[4]
    if gained:
        st = statements[min(gained)]
        return f"/* wbcreateclaim-create:1| */ [[Property:{st.pid}]]: {st.target}"
    lost = prev[4] - now[4]
    if lost:
        return f"/* wbremoveclaims-remove:1| */ [[Property:{statements[min(lost)].pid}]]"
    if now[3] > prev[3]:
        return "/* wbsetsitelink-add:1| */"
    if now[1] > prev[1]:
        return "/* wbsetdescription-add:1| */"
    return "/* wbsetaliases-add:1| */"
