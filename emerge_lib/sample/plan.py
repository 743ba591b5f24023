"""The planted world: a small cast per snapshot whose every event is chosen, so that the
expected TKGU instances follow by construction (see ``semantics.py``).

Each snapshot t gets its own cast (~35 items, ~25 articles) created in a quiet period
before t, plus a shared core (classes, countries, properties) created in 2012-13 in the
legacy serialization. Scenarios are functions that add events around t and declare the
rows they expect and the traps they set; ``semantics.compute_truth`` then derives the
complete truth generically and ``generate_world`` refuses a plan whose declared rows are
missing or whose traps appear.
"""

from __future__ import annotations

import calendar
import time
from collections.abc import Callable
from dataclasses import replace

from emerge_lib.sample.model import (
    DAY,
    HOUR,
    MINUTE,
    Article,
    Block,
    Bold,
    Expectation,
    ItemState,
    Link,
    Plan,
    PlanEntity,
    PlanPage,
    Qualifier,
    Redirect,
    Ref,
    Rev,
    Statement,
    TrapSpec,
    prose,
    to_seconds,
)
from emerge_lib.sample.names import DESCRIPTIONS, label_languages, stable_int, transliterate
from emerge_lib.sample.render import wikibase_time

WINDOWS = 5
WINDOW = 7 * DAY
LEGACY_END = to_seconds("2014-03-01T00:00:00Z")  # before: legacy serialization

# (pid, English label, datatype, description)
PROPERTIES: tuple[tuple[str, str, str, str], ...] = (
    ("P17", "country", "wikibase-item", "sovereign state that this item is in"),
    ("P18", "image", "commonsMedia", "image of relevant illustration of the subject"),
    ("P19", "place of birth", "wikibase-item", "most specific known birth location"),
    ("P21", "sex or gender", "wikibase-item", "sex or gender identity of human or animal"),
    ("P27", "country of citizenship", "wikibase-item", "the object is a country that recognizes the subject as its citizen"),
    ("P31", "instance of", "wikibase-item", "that class of which this subject is a particular example and member"),
    ("P39", "position held", "wikibase-item", "subject currently or formerly holds the object position or public office"),
    ("P47", "shares border with", "wikibase-item", "countries or administrative subdivisions that this item borders"),
    ("P50", "author", "wikibase-item", "main creator(s) of a written work"),
    ("P54", "member of sports team", "wikibase-item", "sports teams or clubs that the subject represents or represented"),
    ("P69", "educated at", "wikibase-item", "educational institution attended by subject"),
    ("P102", "member of political party", "wikibase-item", "the political party of which a person is or has been a member"),
    ("P106", "occupation", "wikibase-item", "occupation of a person"),
    ("P108", "employer", "wikibase-item", "person or organization for which the subject works or worked"),
    ("P127", "owned by", "wikibase-item", "owner of the subject"),
    ("P131", "located in the administrative territorial entity", "wikibase-item", "the item is located on the territory of the following administrative entity"),
    ("P136", "genre", "wikibase-item", "creative work's genre or an artist's field of work"),
    ("P143", "imported from Wikimedia project", "wikibase-item", "source of this claim's value; used in references section by bots"),
    ("P159", "headquarters location", "wikibase-item", "city where an organization's headquarters is or has been situated"),
    ("P166", "award received", "wikibase-item", "award or recognition received by a person, organization or creative work"),
    ("P214", "VIAF ID", "external-id", "identifier for the Virtual International Authority File database"),
    ("P248", "stated in", "wikibase-item", "to be used in the references field to refer to the information document or database"),
    ("P279", "subclass of", "wikibase-item", "this item is a subclass of that item"),
    ("P463", "member of", "wikibase-item", "organization, club or musical group to which the subject belongs"),
    ("P495", "country of origin", "wikibase-item", "country of origin of this item"),
    ("P569", "date of birth", "time", "date on which the subject was born"),
    ("P570", "date of death", "time", "date on which the subject died"),
    ("P571", "inception", "time", "time when an entity begins to exist"),
    ("P576", "dissolved, abolished or demolished date", "time", "point in time at which the subject ceased to exist"),
    ("P577", "publication date", "time", "date or point in time when a work was first published"),
    ("P580", "start time", "time", "time an entity begins to exist or a statement starts being valid"),
    ("P582", "end time", "time", "moment when an entity ceases to exist or a statement stops being valid"),
    ("P585", "point in time", "time", "date something took place, existed or a statement was true"),
    ("P625", "coordinate location", "globe-coordinate", "geocoordinates of the subject"),
    ("P646", "Freebase ID", "external-id", "identifier for a page in the Freebase database"),
    ("P740", "location of formation", "wikibase-item", "location where a group or organization was formed"),
    ("P813", "retrieved", "time", "date or point in time that information was retrieved"),
    ("P856", "official website", "url", "URL of the official page of an item"),
    ("P1001", "applies to jurisdiction", "wikibase-item", "the item applies to the jurisdiction"),
    ("P1027", "conferred by", "wikibase-item", "person or organization who awards a prize to or bestows an honor upon a recipient"),
    ("P1082", "population", "quantity", "number of people inhabiting the place"),
    ("P1326", "latest date", "time", "latest possible time that something could have occurred"),
    ("P1448", "official name", "monolingualtext", "official name of the subject in its official language"),
    ("P2241", "reason for deprecated rank", "wikibase-item", "qualifier to indicate why a particular statement should have deprecated rank"),
)
PROPERTY_LABELS = {pid: label for pid, label, _, _ in PROPERTIES}

# Core items: (key, English label, kind, enwiki title or None, statements as (pid, key))
CORE: tuple[tuple[str, str, str, str | None, tuple[tuple[str, str], ...]], ...] = (
    ("core:class", "class", "org", "Class (philosophy)", ()),
    ("core:human", "human", "org", "Human", (("P279", "core:class"),)),
    ("core:settlement", "human settlement", "place", "Human settlement", (("P279", "core:class"),)),
    ("core:city", "city", "place", "City", (("P279", "core:settlement"),)),
    ("core:village", "village", "place", "Village", (("P279", "core:settlement"),)),
    ("core:country", "country", "place", "Country", (("P279", "core:class"),)),
    ("core:university", "university", "org", "University", (("P279", "core:class"),)),
    ("core:business", "business", "org", "Business", (("P279", "core:class"),)),
    ("core:party", "political party", "org", "Political party", (("P279", "core:class"),)),
    ("core:award", "award", "org", "Award", (("P279", "core:class"),)),
    ("core:club", "association football club", "org", "Association football club", (("P279", "core:class"),)),
    ("core:ensemble", "musical ensemble", "org", "Musical ensemble", (("P279", "core:class"),)),
    ("core:office", "public office", "org", "Public office", (("P279", "core:class"),)),
    ("core:airport", "airport", "place", "Airport", (("P279", "core:class"),)),
    ("core:abbey", "abbey", "place", "Abbey", (("P279", "core:class"),)),
    ("core:organization", "organization", "org", "Organization", (("P279", "core:class"),)),
    ("core:lawfirm", "law firm", "org", "Law firm", (("P279", "core:business"),)),
    ("core:novel", "novel", "work", "Novel", (("P279", "core:class"),)),
    ("core:enwp", "English Wikipedia", "org", "English Wikipedia", ()),
    ("core:archive", "Veloria National Archive", "org", None, ()),
    ("core:incorrect", "incorrect value", "org", None, ()),
    ("core:veloria", "Veloria", "place", "Veloria", (("P31", "core:country"),)),
    ("core:ostrand", "Ostrand", "place", "Ostrand", (("P31", "core:country"), ("P47", "core:veloria"))),
    ("core:marenia", "Marenia", "place", "Marenia", (("P31", "core:country"),)),
    ("core:civic", "Civic Union", "org", "Civic Union", (("P31", "core:party"), ("P17", "core:veloria"))),
)

# Per-snapshot cast names; cast i > 0 gets a suffix so every title stays unique.
CAST_NAMES = {
    "kh": "Kestrel Harbour", "pel": "Pellham", "hf": "Harrow Fields", "kha1": "Kestrel Harbour Airport",
    "kha2": "Kestrel Harbour Airfield", "nu": "Northam University", "bw": "Brightwater Analytics",
    "club": "Ostrand Rovers F.C.", "pos1": "Mayor of Kestrel Harbour", "pos2": "Chair of the Kestrel Council",
    "pos3": "Mayor of Pellham", "soc": "Pellham Historical Society", "vh": "Vermande Holdings",
    "abbey": "Corven Abbey", "cr": "Castellane & Rowe", "arvel": "Arvel Dunmore", "lena": "Lena Hartwell",
    "mira": "Mira Castellane", "rod": "Roderick Vale", "jonas": "Jonas Ferrow", "edda": "Edda Lindqvist",
    "oskar": "Oskar Whitlow", "selene": "Selene Marchetti", "bram": "Bram Ellery", "agnes": "Agnes Thorne",
    "pia": "Pia Sandor", "hugo": "Hugo Brand", "tamsin": "Tamsin Oakridge", "ilse": "Ilse Varga",
    "choir": "The Lantern Choir", "prize": "Halvorsen Prize", "orrin": "Orrin Dale",
    "lecture": "Dale Memorial Lecture", "port": "Kestrel Port", "archive_red": "Pellham Folk Archive",
    # the authors' selection rules (docs/data-model.md): a case each rule removes, a near miss
    "nils": "Nils Aberg", "greta": "Greta Solberg", "ivar": "Ivar Rask", "elin": "Elin Moreau",
    "tove": "Tove Lindahl", "runa": "Runa Castell", "troupe": "The Harbour Players",
    "paleo": "Pellham Trading Company", "neo": "Kestrel Maritime Trust",
    "neo2": "Northam Rowing Club", "young": "Northam Boat Shed", "ferry": "Harrow Ferry Guild",
    # what the authors' s07 does at its edges (docs/data-model.md)
    "wren": "Wren Halloway", "ada": "Ada Pruitt", "cato": "Cato Brennan",
    "saga": "Harbour Lights: Chronicle",
    # item merges (their s02): an item merged into another before t
    "finn": "Finn Calloway", "mill": "Harrow Mill", "mill2": "Harrow Mill (company)",
    # an unlinked repeat of an anchor (their s03 coreference_regex)
    "vera": "Vera Ostrow",
    # a two-operation triple one of whose verdicts is garbage (the stub with
    # garbage_for=GARBLED_SUBJECT answers a deprecation prompt about "Mumbles …" with prose)
    "mumbles": "Mumbles Pier Trust",
}
_CAST_SUFFIX = ("", " II", " III", " IV", " V", " VI", " VII", " VIII", " IX", " X")


def day_time(ts: int) -> str:
    """The Wikibase day-precision time of the day containing ts."""
    t = time.gmtime(ts)
    return wikibase_time(t.tm_year, t.tm_mon, t.tm_mday)


def first_of_month_in(lo: int, hi: int) -> int | None:
    """The first instant of a calendar month inside (lo, hi], if any."""
    t = time.gmtime(lo)
    year, month = t.tm_year, t.tm_mon
    for _ in range(3):
        month += 1
        if month > 12:
            year, month = year + 1, 1
        ts = calendar.timegm((year, month, 1, 0, 0, 0))
        if lo < ts <= hi:
            return ts
    return None


class Builder:
    """Accumulates planted entities and pages with their revision histories."""

    def __init__(self) -> None:
        self.plan = Plan()
        self._states: dict[str, ItemState] = {}
        self._articles: dict[str, object] = {}

    # ---- Wikidata
    def labels(self, key: str, name: str, kind: str, n_langs: int | None = None) -> ItemState:
        salt = stable_int(key)
        n = n_langs if n_langs is not None else 12 + salt % 40
        langs = label_languages(n, salt)
        labels = tuple((lang, transliterate(name, lang)) for lang in langs)
        table = DESCRIPTIONS.get(kind, DESCRIPTIONS["org"])
        descs = tuple((lang, text) for lang, text in table.items())
        aliases: tuple[tuple[str, tuple[str, ...]], ...] = ()
        if salt % 3 == 0:
            aliases = (("en", (name.upper() if len(name) < 12 else name.split()[0],)),)
        return ItemState(labels=labels, descriptions=descs, aliases=aliases)

    def entity(
        self,
        key: str,
        name: str,
        kind: str,
        created: int,
        *,
        enwiki: str | None = None,
        other_sites: tuple[tuple[str, str], ...] = (),
        statements: tuple[Statement, ...] = (),
        legacy: bool = False,
        user: str | None = "ExampleEditor",
    ) -> str:
        state = self.labels(key, name, kind)
        state = replace(state, statements=statements)
        if enwiki is not None:
            state = state.with_sitelink("enwiki", enwiki)
        for site, title in other_sites:
            state = state.with_sitelink(site, title)
        self._states[key] = state
        self.plan.labels[key] = name
        self.plan.entities[key] = PlanEntity(
            key,
            [Rev(created, state, "/* wbeditentity-create:0| */", user=user, legacy=legacy)],
        )
        return key

    def edit(
        self,
        key: str,
        ts: int,
        change: Callable[[ItemState], ItemState],
        comment: str,
        **rev: object,
    ) -> ItemState:
        state = change(self._states[key])
        self._states[key] = state
        self.plan.entities[key].revs.append(Rev(ts, state, comment, **rev))  # type: ignore[arg-type]
        return state

    def prop(self, pid: str, label: str, description: str, created: int,
             datatype: str = "wikibase-item") -> str:
        """A property created at ``created``, with an English label and description."""
        key = f"prop:{pid}"
        state = ItemState(labels=(("en", label),), descriptions=(("en", description),),
                          datatype=datatype)
        self._states[key] = state
        self.plan.labels[key] = label
        self.plan.entities[key] = PlanEntity(
            key, [Rev(created, state, "/* wbeditentity-create:0| */", user="PropertyCreator")],
            is_property=True, pid=pid)
        return key

    def raw_rev(self, key: str, rev: Rev) -> None:
        """A revision whose content does not become the builder's current state."""
        self.plan.entities[key].revs.append(rev)

    def state(self, key: str) -> ItemState:
        return self._states[key]

    # ---- Wikipedia
    def page(self, key: str, title: str, created: int, article: Article | Redirect,
             *, item: str | None = None, user: str | None = "ExampleEditor",
             comment: str = "Created page") -> str:
        self._articles[key] = article
        self.plan.pages[key] = PlanPage(key, [(created, title)], [Rev(created, article, comment, user=user)], item)
        return key

    def page_edit(self, key: str, ts: int, change: Callable[[Article], object], comment: str,
                  **rev: object) -> object:
        content = change(self._articles[key])  # type: ignore[arg-type]
        self._articles[key] = content
        self.plan.pages[key].revs.append(Rev(ts, content, comment, **rev))  # type: ignore[arg-type]
        return content

    def page_raw_rev(self, key: str, rev: Rev) -> None:
        self.plan.pages[key].revs.append(rev)

    def article(self, key: str) -> Article:
        a = self._articles[key]
        assert isinstance(a, Article)
        return a

    def move(self, key: str, ts: int, new_title: str, redirect_key: str, user: str) -> None:
        """A page move: the page gets a null revision and its new title; the old title
        becomes a new redirect page (as MediaWiki does)."""
        page = self.plan.pages[key]
        old = page.title
        page.titles.append((ts, new_title))
        page.revs.append(
            Rev(ts, self._articles[key], f"{user} moved page [[{old}]] to [[{new_title}]]", user=user, minor=True)
        )
        self.page(redirect_key, old, ts, Redirect(new_title, ""), user=user,
                  comment=f"{user} moved page [[{old}]] to [[{new_title}]]")


# --------------------------------------------------------------------------- helpers


def st(pid: str, target: str, **kw: object) -> Statement:
    return Statement(pid, target, **kw)  # type: ignore[arg-type]


def infobox(kind: str, name: str, fields: list[tuple[str, str]]) -> Block:
    body = "\n".join(f"| {k} = {v}" for k, v in fields)
    return Block("infobox", f"{{{{Infobox {kind}\n| name = {name}\n{body}\n}}}}")


def heading(text: str, level: int = 2) -> Block:
    bar = "=" * level
    return Block("heading", f"{bar} {text} {bar}")


def categories(*names: str) -> Block:
    return Block("category", "\n".join(f"[[Category:{n}]]" for n in names))


def template(text: str) -> Block:
    return Block("template", text)


def filler_prose(name: str, topic: str) -> Block:
    """A pre-existing prose paragraph without links (never a passage: one mention at most)."""
    return prose(
        f"Local records describe {name} in some detail. The {topic} was the subject of several ",
        "surveys during the twentieth century, and archival material about it is kept in ",
        "regional collections that remain open to researchers by appointment.",
        Ref(f"Regional survey of {name}", "https://archive.example.org/survey", "2019-03-02"),
    )


def standard_article(name: str, kind: str, lead: Block, extra: list[Block] | None = None,
                     infobox_fields: list[tuple[str, str]] | None = None,
                     cats: tuple[str, ...] = ()) -> Article:
    """A realistic skeleton: short description, infobox, lead, sections, refs, categories."""
    box_kind = {"person": "person", "place": "settlement", "org": "organization",
                "work": "book"}.get(kind, "organization")
    blocks = [
        template(f"{{{{Short description|{DESCRIPTIONS.get(kind, DESCRIPTIONS['org'])['en']}}}}}\n"
                 "{{Use dmy dates|date=March 2023}}"),
        infobox(box_kind, name, infobox_fields or [("image", f"{name.replace(' ', '_')}.jpg")]),
        lead,
        heading("History"),
        filler_prose(name, {"person": "career", "place": "town"}.get(kind, "organization")),
        *(extra or []),
        heading("References"),
        template("{{Reflist}}"),
        template("{{Authority control}}"),
        categories(*(cats or (f"{kind.capitalize()} stubs",))),
    ]
    return Article(tuple(blocks))


def cast_title(short: str, index: int) -> str:
    name = CAST_NAMES[short]
    suffix = _CAST_SUFFIX[index] if index < len(_CAST_SUFFIX) else f" {index + 1}"
    if not suffix:
        return name
    if name.endswith(" F.C."):
        return name[:-5] + suffix + " F.C."
    return name + suffix


# --------------------------------------------------------------------------- core


def build_core(b: Builder) -> None:
    """Properties and core items: created 2012-13 (legacy JSON), modernised in 2015-16."""
    base = to_seconds("2013-02-04T09:00:00Z")
    for n, (pid, label, datatype, desc) in enumerate(PROPERTIES):
        key = f"prop:{pid}"
        created = base + n * 6 * HOUR
        state = ItemState(
            labels=tuple((lang, label if lang.startswith("en") else transliterate(label, lang))
                         for lang in label_languages(6 + n % 20, stable_int(key))),
            descriptions=(("en", desc),),
            datatype=datatype,
        )
        b._states[key] = state
        b.plan.labels[key] = label
        b.plan.entities[key] = PlanEntity(
            key, [Rev(created, state, "/* wbeditentity-create:0| */", user="Denny", legacy=True)],
            is_property=True, pid=pid,
        )
        b.edit(key, to_seconds("2016-05-10T12:00:00Z") + n * MINUTE,
               lambda s, d=desc: replace(s, descriptions=(("en", d), ("de", d[:20]))),
               "/* wbsetdescription-add:1|de */", user="PropertyBot")

    created = to_seconds("2012-11-05T10:00:00Z")
    for n, (key, label, kind, enwiki, sts) in enumerate(CORE):
        c = created + n * 3 * HOUR
        b.entity(key, label, kind, c, legacy=True, user="Denny")
        if enwiki is not None:
            b.edit(key, c + 20 * MINUTE, lambda s, e=enwiki: s.with_sitelink("enwiki", e),
                   f"/* wbsetsitelink-add:1|enwiki */ {enwiki}", legacy=True, user="Sk!dbot")
        if sts:
            b.edit(key, to_seconds("2013-06-01T00:00:00Z") + n * HOUR,
                   lambda s, x=sts: replace(s, statements=tuple(st(p, o) for p, o in x)),
                   "/* wbcreateclaim-create:1| */", legacy=True, user="Sk!dbot")
        b.edit(key, to_seconds("2015-09-01T00:00:00Z") + n * HOUR,
               lambda s: replace(s, aliases=s.aliases or (("de", ("x",)),)),
               "/* wbsetaliases-add:1|de */", user="KrBot")
        if enwiki is not None:
            lead = prose(
                Bold(enwiki), " is a concept used throughout the encyclopedia. This article ",
                "describes it in general terms and links to related topics such as ",
                Link("Veloria" if key != "core:veloria" else "Ostrand"), " and ",
                Link("Human settlement", "settlements"), ".",
            )
            b.page(f"page:{key}", enwiki, to_seconds("2006-03-01T00:00:00Z") + n * DAY,
                   standard_article(enwiki, kind, lead), item=key, user="Founder")


# --------------------------------------------------------------------------- cast


class Cast:
    """The cast and scenarios of one snapshot."""

    def __init__(self, b: Builder, index: int, t: int, quiet_start: int,
                 scenarios: frozenset[str] | None = None, new_text: bool = True) -> None:
        self.scenarios = scenarios  # the scenarios planted around t (None: every one)
        # False: the scenarios' Wikidata events only, no paragraph added after t (so no
        # passage and no expected row; their traps still hold)
        self.new_text = new_text
        self.b, self.i, self.t = b, index, t
        self.c0 = quiet_start
        self.taus = [t + k * WINDOW for k in range(WINDOWS + 1)]

    # ---- naming
    def k(self, short: str) -> str:
        return f"c{self.i}:{short}"

    def n(self, short: str) -> str:
        return cast_title(short, self.i)

    def at(self, days: float, hours: float = 0, minutes: float = 0) -> int:
        return self.t + int(days * DAY + hours * HOUR + minutes * MINUTE)

    def expect(self, window: int, op: str, s: str, p: str, o: str, page: str,
               signal: str | None = None, tags: tuple[str, ...] = (),
               settings: str = "both") -> None:
        """A row the truth must hold: under both semantics, or only "released" (the
        defaults, docs/semantics.md §1.3) or "design" (docs/semantics.md §1.1-1.2)."""
        if not self.new_text:
            return  # no paragraph, no row
        self.b.plan.expectations.append(
            Expectation(self.t, window, op, self.k(s) if ":" not in s else s, p,
                        self.k(o) if ":" not in o else o, self.k(page), signal, tags, settings))

    def trap(self, kind: str, reason: str, *, window: int | None = None, op: str | None = None,
             s: str | None = None, p: str | None = None, o: str | None = None,
             page: str | None = None, paragraph: str | None = None,
             settings: str = "both") -> None:
        def key(x: str | None) -> str | None:
            return None if x is None else (x if x.startswith("core:") else self.k(x))
        self.b.plan.traps.append(TrapSpec(self.t, kind, reason, window, op, key(s), p, key(o),
                                          key(page), paragraph, settings))

    def left_out(self, rule: str, why: str, window: int, op: str, s: str, p: str, o: str,
                 page: str, **kw: object) -> None:
        """A row of a line the authors' selection rules leave out: expected without them
        (the §1.1-1.2 and unselected semantics, docs/semantics.md), a trap with them (released)."""
        self.expect(window, op, s, p, o, page, settings="design,unselected", **kw)  # type: ignore[arg-type]
        self.trap(rule, why, window=window, op=op, s=s, p=p, o=o, page=page,
                  settings="released")

    def scenario(self, page: str, block: Block, name: str) -> None:
        self.b.plan.scenario_of[(self.k("page:" + page), block.identity)] = name

    # ---- entity + article in one go
    def person(self, short: str, created: int, sts: list[tuple[str, str]], lead_links: list[str],
               extra_sts: tuple[Statement, ...] = (), legacy: bool = False) -> None:
        self._thing(short, "person", created, [("P31", "core:human"), *sts], lead_links,
                    extra_sts, legacy)

    def _thing(self, short: str, kind: str, created: int, sts: list[tuple[str, str]],
               lead_links: list[str], extra_sts: tuple[Statement, ...] = (),
               legacy: bool = False, enwiki: bool = True,
               other_sites: tuple[tuple[str, str], ...] = ()) -> None:
        name = self.n(short)
        statements = tuple(st(p, o if ":" in o else self.k(o)) for p, o in sts) + extra_sts
        if enwiki:
            lead = self.lead(short, kind, lead_links)
            self.b.page(self.k("page:" + short), name, created - 2 * HOUR,
                        standard_article(name, kind, lead,
                                         infobox_fields=[("caption", name), ("established", "1998")]),
                        item=self.k(short))
        self.b.entity(self.k(short), name, kind, created, enwiki=name if enwiki else None,
                      statements=statements, legacy=legacy, other_sites=other_sites)

    def lead(self, short: str, kind: str, links: list[str]) -> Block:
        name = self.n(short)
        parts: list[str | Link | Bold | Ref] = [Bold(name), f" is a {kind_word(kind)} with ties to "]
        for n, target in enumerate(links):
            if n:
                parts.append(" and " if n == len(links) - 1 else ", ")
            parts.append(Link(self.title_of(target)))
        parts.append(". It has been described in regional histories and local newspapers.")
        return prose(*parts)

    def title_of(self, ref: str) -> str:
        if ref.startswith("core:"):
            return next(e for k, _, _, e, _ in CORE if k == ref) or ref
        return self.n(ref)

    def add_para(self, page: str, ts: int, block: Block, comment: str, *, scenario: str,
                 user: str | None = "ExampleEditor", after: str = "History") -> None:
        """Insert a new paragraph after the History heading's first paragraph."""
        if not self.new_text:
            return
        def change(a: Article) -> Article:
            heads = [b for b in a.blocks if b.kind == "heading" and after in b.raw]
            anchor = heads[0] if heads else a.blocks[2]
            idx = a.blocks.index(anchor)
            target = a.blocks[idx + 1] if idx + 1 < len(a.blocks) else anchor
            return a.insert_after(target, block)
        self.b.page_edit(self.k("page:" + page), ts, change, comment, user=user)
        self.scenario(page, block, scenario)

    # ---- the cast
    def build(self) -> None:
        b, c0, k = self.b, self.c0, self.k
        t = self.t
        # places and organisations (created in the quiet period before t)
        self._thing("kh", "place", c0, [("P31", "core:city"), ("P17", "core:veloria")], ["core:veloria"])
        self._thing("pel", "place", c0 + HOUR, [("P31", "core:city"), ("P17", "core:veloria")], ["core:veloria"])
        self._thing("hf", "place", c0 + 2 * HOUR, [("P31", "core:village"), ("P17", "core:ostrand"), ("P131", "pel")], ["core:ostrand"])
        self._thing("nu", "org", c0 + 3 * HOUR, [("P31", "core:university"), ("P131", "kh")], ["kh"])
        self._thing("bw", "org", c0 + 4 * HOUR, [("P31", "core:business"), ("P159", "kh")], ["kh"])
        self._thing("club", "org", c0 + 5 * HOUR, [("P31", "core:club"), ("P17", "core:ostrand")], ["core:ostrand"])
        self._thing("pos1", "org", c0 + 6 * HOUR, [("P31", "core:office"), ("P1001", "kh")], ["kh"])
        self._thing("pos2", "org", c0 + 7 * HOUR, [("P31", "core:office")], ["kh"])
        self._thing("pos3", "org", c0 + 8 * HOUR, [("P31", "core:office"), ("P1001", "pel")], ["pel"])
        self._thing("soc", "org", c0 + 9 * HOUR, [("P31", "core:organization"), ("P159", "pel")], ["pel"])
        self._thing("kha1", "place", c0 + 10 * HOUR, [("P31", "core:airport"), ("P131", "kh")], ["kh"])
        self._thing("kha2", "place", c0 + 11 * HOUR, [("P31", "core:airport"), ("P131", "kh")], ["kh"])
        self._thing("vh", "org", c0 + 12 * HOUR, [("P31", "core:business")], [], enwiki=False,
                    other_sites=(("dewiki", self.n("vh")), ("frwiki", self.n("vh"))))
        self._thing("abbey", "place", c0 + 13 * HOUR, [("P31", "core:abbey"), ("P131", "pel")], [],
                    enwiki=False, other_sites=(("frwiki", "Abbaye de " + self.n("abbey")),))
        # an article without a Wikidata item, and a redirect that exists for years
        b.page(k("page:lecture"), self.n("lecture"), c0 + 14 * HOUR,
               standard_article(self.n("lecture"), "org", filler_prose(self.n("lecture"), "lecture")))
        b.page(k("page:port"), self.n("port"), c0 + 15 * HOUR, Redirect(self.n("kh")))
        # people
        self.person("arvel", c0 + 16 * HOUR, [("P19", "kh"), ("P69", "nu"), ("P27", "core:veloria")], ["kh", "core:veloria"])
        self.person("lena", c0 + 17 * HOUR, [("P69", "nu"), ("P27", "core:veloria")], ["core:veloria"])
        self.person("rod", c0 + 18 * HOUR, [("P27", "core:veloria")], ["kh"],
                    (st("P39", k("pos1"), qualifiers=(Qualifier("P580", wikibase_time(2019, 1, 1), 11),)),))
        self.person("jonas", c0 + 19 * HOUR, [("P54", "club"), ("P27", "core:ostrand")], ["core:ostrand"])
        self.person("edda", c0 + 20 * HOUR, [("P27", "core:veloria")], ["kh"],
                    (st("P39", k("pos2"), qualifiers=(Qualifier("P580", wikibase_time(2021, 0, 0), 9),)),))
        self.person("oskar", c0 + 21 * HOUR, [("P27", "core:veloria")], ["core:veloria"])
        self.person("selene", c0 + 22 * HOUR, [("P27", "core:marenia")], ["core:marenia"])
        self.person("bram", c0 + 23 * HOUR, [("P19", "hf"), ("P27", "core:ostrand")], ["core:ostrand"])
        self.person("agnes", c0 + 24 * HOUR, [("P39", "pos3"), ("P463", "soc"), ("P102", "core:civic"), ("P27", "core:veloria")], ["pel"])
        self.person("pia", c0 + 25 * HOUR, [("P108", "kha2"), ("P27", "core:veloria")], ["core:veloria"])
        self.person("hugo", c0 + 26 * HOUR, [("P19", "pel")], ["pel"],
                    (st("P27", "core:ostrand", rank="deprecated", reason_deprecated="core:incorrect"),))
        self.person("tamsin", c0 + 27 * HOUR, [("P27", "core:marenia"), ("P69", "nu")], ["core:marenia"])
        # the cast of the selection-rule scenarios
        self.person("nils", c0 + 28 * HOUR, [("P108", "bw"), ("P27", "core:veloria")], ["core:veloria"])
        self.person("greta", c0 + 29 * HOUR, [("P54", "club"), ("P27", "core:ostrand")], ["core:ostrand"])
        self.person("ivar", c0 + 30 * HOUR, [("P69", "nu"), ("P27", "core:veloria")], ["core:veloria"])
        self.person("elin", c0 + 31 * HOUR, [("P108", "bw"), ("P27", "core:marenia")], ["core:marenia"])
        self.person("tove", c0 + 32 * HOUR, [("P27", "core:veloria")], ["core:veloria"])
        self.person("runa", c0 + 33 * HOUR, [("P27", "core:veloria")], ["core:veloria"])
        self._thing("paleo", "org", c0 + 34 * HOUR, [("P31", "core:organization")], [], enwiki=False)
        # the cast of s07's edge scenarios
        self.person("wren", c0 + 35 * HOUR, [("P27", "core:veloria")], ["core:veloria"])
        self.person("ada", c0 + 36 * HOUR, [("P27", "core:veloria")], ["core:veloria"])
        self._thing("saga", "work", c0 + 38 * HOUR, [("P31", "core:organization")], ["kh"])
        self._merged_before_t(c0 + 39 * HOUR)
        self._thing("mumbles", "org", c0 + 44 * HOUR, [("P31", "core:organization")], ["pel"])
        # a membership entered before t that is to start on day 2 (a start qualifier
        # inside the first window)
        self.person("cato", c0 + 37 * HOUR, [("P27", "core:veloria")], ["core:veloria"],
                    (st("P463", k("soc"), qualifiers=(
                        Qualifier("P580", day_time(t + 2 * DAY), 11),)),))
        # legacy-era entities (last edited in 2013): their state at t is legacy JSON
        y13 = to_seconds("2013-05-10T08:00:00Z") + self.i * DAY
        self._thing("cr", "org", y13, [("P31", "core:lawfirm"), ("P17", "core:ostrand")], ["core:ostrand"], legacy=True)
        self.person("mira", y13 + 2 * HOUR, [("P108", "cr"), ("P27", "core:ostrand")], ["core:ostrand"], legacy=True)
        b.edit(k("mira"), y13 + 120 * DAY,
               lambda s: replace(s, aliases=(("en", ("M. Castellane",)),)),
               "/* wbsetaliases-add:1|en */ M. Castellane", legacy=True, user="Sk!dbot")
        # a page move before t: the old title becomes a redirect, the sitelink follows
        moved = self.n("hf") + " (village)"
        b.move(k("page:hf"), c0 + 3 * DAY, moved, k("page:hf_old"), "Mover")
        b.edit(k("hf"), c0 + 3 * DAY + 5 * MINUTE, lambda s: s.with_sitelink("enwiki", moved),
               f"/* wbsetsitelink-set:1|enwiki */ {moved}", user="Mover")
        # scenarios around t (in this order: s_d_rank before s_e_underscore, both edit Oskar)
        for name in SCENARIOS:
            if self.scenarios is None or name in self.scenarios:
                getattr(self, f"s_{name}")()
        del t

    # ---- scenarios -------------------------------------------------------------------
    def s_x_basic(self) -> None:
        """X: a new paragraph mentions entities whose triples hold before and after t.
        Traps: an addition reverted after 24 h; a normal->preferred rank flip (no change)."""
        b, k = self.b, self.k
        b.edit(k("arvel"), self.at(1, 3), lambda s: s.add(st("P108", k("bw"))),
               f"/* wbcreateclaim-create:1| */ [[Property:P108]]: [[{k('bw')}]]", user="Wikiwalker")
        b.edit(k("arvel"), self.at(2, 3), lambda s: s.remove("P108", k("bw")),
               "/* wbremoveclaims-remove:1| */ [[Property:P108]]", user="Patroller")
        b.edit(k("arvel"), self.at(2, 12), lambda s: s.change("P69", k("nu"), rank="preferred"),
               "/* wbsetclaim-update:2||1 */ [[Property:P69]]", user="Wikiwalker")
        para = prose(
            f"In 2024 {self.n('arvel').split()[1]} returned to ", Link(self.n("kh")),
            ", the port city where he was born, to lead a coastal research group at ",
            Link(self.n("nu"), "the university"), ". He also advised ", Link(self.n("bw")),
            " on harbour data projects and published a series of essays about the changing ",
            "harbour economy and its labour history, which drew attention from regional newspapers.",
            Ref("Dunmore returns", "https://news.example.org/dunmore", "2024-01-04"),
        )
        self.add_para("arvel", self.at(3, 10), para, "Expanded career section", scenario="x-basic")
        self.left_out("r1-no-delta-between-mentions", "the line has no E, EE or D triple between two of its entities", 1, "X", "arvel", "P19", "kh", "page:arvel")
        self.left_out("r1-no-delta-between-mentions", "the line has no E, EE or D triple between two of its entities", 1, "X", "arvel", "P69", "nu", "page:arvel",
                      tags=("rank-flip-not-a-change",))
        self.left_out("r1-no-delta-between-mentions", "the line has no E, EE or D triple between two of its entities", 1, "X", "nu", "P131", "kh", "page:arvel")
        self.left_out("r1-no-delta-between-mentions", "the line has no E, EE or D triple between two of its entities", 1, "X", "bw", "P159", "kh", "page:arvel")
        for w in range(1, WINDOWS + 1):
            self.trap("reverted-addition", "added and removed again within 168 h: noise, not an addition",
                      window=w, op="E", s="arvel", p="P108", o="bw")
        # a suppressed contributor on a harmless later edit
        b.page_edit(k("page:arvel"), self.at(20, 5),
                    lambda a: a.replace_block(a.blocks[-1], categories("Living people", "Velorian scientists")),
                    "cat", user_hidden=True)

    def s_e_basic(self) -> None:
        """E with a start qualifier; a too-short paragraph; a removal reverted after a day;
        two revisions with the same timestamp; a revision-deleted vandal edit."""
        b, k = self.b, self.k
        b.edit(k("lena"), self.at(5, 2), lambda s: s.add(st("P108", k("pel"))), "vandalism", user=None, ip="203.0.113.7")
        b.raw_rev(k("lena"), Rev(self.at(5, 2), None, "", user_hidden=True, comment_hidden=True))
        b.plan.entities[k("lena")].revs.pop(-2)  # the vandal edit's text is deleted: keep only the hidden one
        b.edit(k("lena"), self.at(5, 2, 3), lambda s: s.remove("P108", k("pel")),
               "Undid revision by [[Special:Contributions/203.0.113.7|203.0.113.7]]", user="Patroller")
        start = Qualifier("P580", day_time(self.at(9)), 11)
        b.edit(k("lena"), self.at(9, 4), lambda s: s.add(st("P108", k("bw"), qualifiers=(start,))),
               f"/* wbcreateclaim-create:1| */ [[Property:P108]]: [[{k('bw')}]]", user="Wikiwalker")
        para = prose(
            "Early in 2024 ", self.n("lena").split()[0], " left academic teaching and joined ",
            Link(self.n("bw")), " as head of research, while keeping an honorary post at ",
            Link(self.n("nu")), ". Colleagues described the move as a turning point for the firm, ",
            "which had been looking for an experienced statistician to lead its public projects.",
        )
        self.add_para("lena", self.at(11), para, "Career update", scenario="e-basic")
        self.expect(2, "E", "lena", "P108", "bw", "page:lena")
        for w in range(3, WINDOWS + 1):  # cumulative deltas: new since t, still present
            self.expect(w, "E", "lena", "P108", "bw", "page:lena", tags=("cumulative",),
                        settings="released,unselected")
        self.trap("first-appearance", "the paragraph first appeared in window 2",
                  window=3, page="page:lena", paragraph=para.identity, settings="design")
        self.expect(2, "X", "lena", "P69", "nu", "page:lena")
        short = prose(self.n("lena").split()[1] + " joined ", Link(self.n("bw")), " in 2024.")
        self.add_para("lena", self.at(11, 0, 40), short, "short note", scenario="too-short",
                      after="References")
        self.trap("too-short-passage", "8 tokens: under the 25-token minimum", window=2, op="E",
                  s="lena", p="P108", o="bw", page="page:lena", paragraph=short.identity)
        # removal reverted after 24 h: the absence is filled, the triple stays (X, not D)
        b.edit(k("lena"), self.at(16), lambda s: s.remove("P69", k("nu")), "/* wbremoveclaims-remove:1| */", user="Wikiwalker")
        b.edit(k("lena"), self.at(17), lambda s: s.add(st("P69", k("nu"))), "Restore", user="Patroller")
        para3 = prose(
            "Her doctoral work at ", Link(self.n("nu")), " examined tidal records from ",
            Link(self.n("kh")), " and neighbouring ports, and it is still cited in studies of ",
            "coastal flooding. The thesis combined archival ledgers with modern gauge data and ",
            "was later published as a short monograph by the university press.",
        )
        self.add_para("lena", self.at(18), para3, "Education", scenario="reverted-removal")
        self.expect(3, "X", "lena", "P69", "nu", "page:lena")
        self.left_out("r1-no-delta-between-mentions", "the line has no E, EE or D triple between two of its entities", 3, "X", "nu", "P131", "kh", "page:lena")
        self.trap("reverted-removal", "removed and restored within 168 h: not a deprecation",
                  window=3, op="D", s="lena", p="P69", o="nu")
        # same timestamp, two revisions: the greater revision id wins (no membership)
        tie = self.at(15, 12)
        b.edit(k("lena"), tie, lambda s: s.add(st("P463", k("nu"))), "/* wbcreateclaim-create:1| */", user="Wikiwalker")
        b.edit(k("lena"), tie, lambda s: s.remove("P463", k("nu")), "/* wbremoveclaims-remove:1| */", user="Wikiwalker")
        for w in (3, 4, 5):
            self.trap("timestamp-tie", "two revisions share a timestamp; the greater revision id "
                      "(without the statement) is the state", window=w, op="E", s="lena", p="P463", o="nu")

    def s_ee_new(self) -> None:
        """EE: a new item and its new article; its unmentioned triples are EE-KG."""
        b, k = self.b, self.k
        name = self.n("ilse")
        lead = prose(
            Bold(name), " is a Velorian marine biologist born in ", Link(self.n("pel")),
            ". She studied at ", Link(self.n("nu")), " and became known in 2024 for a survey of ",
            "kelp forests along the northern coast, which was reported widely after its ",
            "publication and led to new protections for several bays.",
        )
        body = prose(
            "The survey relied on volunteers from fishing communities and on aerial photographs ",
            "taken over three summers. Its maps are used by regional planners and by schools that ",
            "teach the history of the coast and the changing climate of the region.",
        )
        art = Article((infobox("scientist", name, [("birth_place", f"[[{self.n('pel')}]]")]),
                       lead, heading("Research"), body, heading("References"), template("{{Reflist}}"),
                       categories("Velorian biologists")))
        created = self.at(16, 9)
        b.page(k("page:ilse"), name, created, art, item=k("ilse"), user="NewPageAuthor")
        self.scenario("ilse", lead, "ee-new-entity")
        b.entity(k("ilse"), name, "person", created + HOUR, enwiki=name,
                 statements=(st("P31", "core:human"), st("P19", k("pel")), st("P69", k("nu")),
                             st("P27", "core:veloria")))
        self.expect(3, "EE", "ilse", "P19", "pel", "page:ilse")
        self.expect(3, "EE", "ilse", "P69", "nu", "page:ilse")
        self.expect(3, "EE-KG", "ilse", "P27", "core:veloria", "page:ilse")
        self.trap("single-mention-paragraph", "the second paragraph links nothing: only the "
                  "article's own item is mentioned", window=3, page="page:ilse", paragraph=body.identity)

    def s_ee_sitelink(self) -> None:
        """EE: an existing item gains an English article; its old triples become additions."""
        b, k = self.b, self.k
        name = self.n("abbey")
        lead = prose(
            "The ", Bold(name), " is a ruined twelfth-century abbey near ", Link(self.n("pel")),
            ". Its cloister and chapter house survive, and the site was restored between 2019 ",
            "and 2023 with support from local volunteers and the regional heritage office.",
        )
        created = self.at(10)
        b.page(k("page:abbey"), name, created, standard_article(name, "place", lead), item=k("abbey"), user="NewPageAuthor")
        self.scenario("abbey", lead, "ee-sitelink-added")
        b.edit(k("abbey"), created + HOUR, lambda s: s.with_sitelink("enwiki", name),
               f"/* wbsetsitelink-add:1|enwiki */ {name}", user="NewPageAuthor")
        self.expect(2, "EE", "abbey", "P131", "pel", "page:abbey", tags=("entered-V",),
                    settings="design")
        # the released data dates emerging entities by their item's creation: the abbey's
        # item is older than t, so the addition is E (and the passage stays in deltas 2-5)
        for w in range(2, WINDOWS + 1):
            self.expect(w, "E", "abbey", "P131", "pel", "page:abbey",
                        tags=("entered-V", "created-before-t"), settings="released,unselected")
        self.trap("created-before-t", "the item existed before t: not emerging when "
                  "emerging means created at or after t", window=2, op="EE", s="abbey",
                  p="P131", o="pel", settings="released,unselected")

    def s_ee_object(self) -> None:
        """EE with the emerging entity as object (an award created in window 4)."""
        b, k = self.b, self.k
        name = self.n("prize")
        lead = prose(
            "The ", Bold(name), " is an award for coastal science conferred by ",
            Link(self.n("nu")), ". It was first presented in 2024 to ", Link(self.n("tamsin")),
            " for her long study of seabird colonies and the effects of shipping on them.",
        )
        created = self.at(22)
        b.page(k("page:prize"), name, created, standard_article(name, "org", lead), item=k("prize"), user="NewPageAuthor")
        self.scenario("prize", lead, "ee-object")
        b.entity(k("prize"), name, "org", created + HOUR, enwiki=name,
                 statements=(st("P31", "core:award"), st("P1027", k("nu"))))
        b.edit(k("tamsin"), created + 3 * HOUR, lambda s: s.add(st("P166", k("prize"))),
               f"/* wbcreateclaim-create:1| */ [[Property:P166]]: [[{k('prize')}]]", user="Wikiwalker")
        para = prose(
            "In 2024 ", self.n("tamsin").split()[1], " received the inaugural ",
            Link(name), " for three decades of fieldwork on seabird colonies. The citation ",
            "praised her careful long-term records and her work with fishing crews who reported ",
            "sightings from their boats throughout the breeding season.",
        )
        self.add_para("tamsin", self.at(23), para, "Award", scenario="ee-object")
        self.expect(4, "EE", "tamsin", "P166", "prize", "page:tamsin")
        self.expect(4, "EE", "tamsin", "P166", "prize", "page:prize")
        self.expect(4, "EE", "prize", "P1027", "nu", "page:prize")
        self.expect(4, "EE-KG", "prize", "P31", "core:award", "page:tamsin")

    def s_ee_kg(self) -> None:
        """EE-KG: the new entity's triples with unmentioned old entities."""
        b, k = self.b, self.k
        name = self.n("choir")
        lead = prose(
            Bold(name), " is a vocal ensemble formed in ", Link(self.n("pel")),
            " in 2024 by former members of church and harbour choirs. It performs folk songs ",
            "of the coast in new arrangements and toured the region in its first season.",
        )
        created = self.at(23, 6)
        b.page(k("page:choir"), name, created, standard_article(name, "org", lead), item=k("choir"), user="NewPageAuthor")
        self.scenario("choir", lead, "ee-kg")
        b.entity(k("choir"), name, "org", created + 2 * HOUR, enwiki=name,
                 statements=(st("P31", "core:ensemble"), st("P740", k("pel")), st("P495", "core:marenia")))
        self.expect(4, "EE", "choir", "P740", "pel", "page:choir")
        self.expect(4, "EE-KG", "choir", "P495", "core:marenia", "page:choir")
        self.expect(4, "EE-KG", "choir", "P31", "core:ensemble", "page:choir")

    def s_d_qualifier(self) -> None:
        """D by an end qualifier (day precision) dated inside the window."""
        b, k = self.b, self.k
        end = Qualifier("P582", day_time(self.at(3)), 11)
        b.edit(k("rod"), self.at(4), lambda s: s.change(
            "P39", k("pos1"), qualifiers=(Qualifier("P580", wikibase_time(2019, 1, 1), 11), end)),
            "/* wbsetqualifier-add:1| */ [[Property:P582]]", user="Wikiwalker")
        para = prose(
            self.n("rod").split()[1], " stepped down as ", Link(self.n("pos1"), "mayor"), " of ",
            Link(self.n("kh")), " early in 2024, citing health reasons, after five years in office. ",
            "His deputy took over the duties of the office until a new election could be held in ",
            "the spring, as the city charter requires.",
        )
        self.add_para("rod", self.at(9), para, "Resignation", scenario="d-qualifier")
        self.expect(2, "D", "rod", "P39", "pos1", "page:rod", signal="qualifier:P582")
        self.expect(2, "X", "pos1", "P1001", "kh", "page:rod")

    def s_d_removed(self) -> None:
        """D by removal, from an item whose state at t is in the legacy serialization."""
        b, k = self.b, self.k
        b.edit(k("mira"), self.at(8), lambda s: s.remove("P108", k("cr")),
               "/* wbremoveclaims-remove:1| */ [[Property:P108]]", user="Wikiwalker")
        para = prose(
            "After twenty years as a partner, ", self.n("mira").split()[1], " left ",
            Link(self.n("cr")), " in January 2024 to work as an independent mediator in ",
            Link("Ostrand"), ". The firm announced her departure in a short statement and ",
            "thanked her for building its maritime law practice.",
        )
        self.add_para("mira", self.at(10), para, "Later career", scenario="d-removed")
        self.left_out("r5-only-removals", "the line's only delta triples are plain removals", 2, "D", "mira", "P108", "cr", "page:mira", signal="removed",
                      tags=("legacy-json-at-t",))
        self.left_out("r5-only-removals", "the line's only delta triples are plain removals", 2, "X", "mira", "P27", "core:ostrand", "page:mira")
        self.left_out("r5-only-removals", "the line's only delta triples are plain removals", 2, "X", "cr", "P17", "core:ostrand", "page:mira")

    def s_d_rank(self) -> None:
        """D by deprecated rank; the item's history has a revision out of time order."""
        b, k = self.b, self.k
        before = b.state(k("jonas"))
        b.edit(k("jonas"), self.at(15), lambda s: s.change(
            "P54", k("club"), rank="deprecated", reason_deprecated="core:incorrect"),
            "/* wbsetclaim-update:2||1 */ [[Property:P54]]", user="Wikiwalker")
        # an old revision imported later: greater revision id, earlier timestamp
        old = replace(before, aliases=(("en", ("J. Ferrow",)),))
        b.raw_rev(k("jonas"), Rev(self.c0 + 2 * DAY, old, "Imported old revision", user="Importer",
                                  id_ts=self.at(15, 2)))
        para = prose(
            "Reports that ", self.n("jonas").split()[1], " had played for ", Link(self.n("club")),
            " were corrected in 2024: club records show he only trained with the squad in ",
            Link("Ostrand"), " for a season and never signed a contract or appeared in a ",
            "competitive match for the first team.",
        )
        self.add_para("jonas", self.at(17), para, "Correction", scenario="d-rank")
        self.left_out("r5-only-removals", "the line's only delta triples are plain removals", 3, "D", "jonas", "P54", "club", "page:jonas", signal="rank",
                      tags=("out-of-order-revisions",))
        self.left_out("r5-only-removals", "the line's only delta triples are plain removals", 3, "X", "jonas", "P27", "core:ostrand", "page:jonas")
        self.left_out("r5-only-removals", "the line's only delta triples are plain removals", 3, "X", "club", "P17", "core:ostrand", "page:jonas")

    def s_d_month(self) -> None:
        """An end qualifier of month precision: its first instant decides the window."""
        b, k = self.b, self.k
        ts = first_of_month_in(self.taus[WINDOWS - 1], self.taus[WINDOWS])
        if ts is not None:
            t = time.gmtime(ts)
            end = Qualifier("P582", wikibase_time(t.tm_year, t.tm_mon, 0), 10)
        else:
            ts = self.taus[WINDOWS - 1] + 2 * DAY
            end = Qualifier("P582", day_time(ts), 11)
        b.edit(k("edda"), self.at(2), lambda s: s.change(
            "P39", k("pos2"), qualifiers=(Qualifier("P580", wikibase_time(2021, 0, 0), 9), end)),
            "/* wbsetqualifier-add:1| */ [[Property:P582]]", user="Wikiwalker")
        p1 = prose(
            self.n("edda").split()[1], " announced that she would leave her post as ",
            Link(self.n("pos2"), "council chair"), " at the end of her term, and that she would ",
            "not seek another one. Members of the council thanked her for steering the budget ",
            "through two difficult years of repairs to the harbour walls.",
        )
        self.add_para("edda", self.at(10), p1, "Announcement", scenario="d-month-before")
        self.left_out("r1-no-delta-between-mentions", "the line has no E, EE or D triple between two of its entities", 2, "X", "edda", "P39", "pos2", "page:edda",
                      tags=("end-qualifier-later",))
        p2 = prose(
            "Her term as ", Link(self.n("pos2")), " ended as planned, and she returned to ",
            "private practice as an architect. A farewell reception was held in the council ",
            "chamber, where colleagues presented a book of drawings of the restored harbour walls.",
        )
        self.add_para("edda", self.at(WINDOWS * 7 - 1), p2, "Departure", scenario="d-month")
        self.expect(WINDOWS, "D", "edda", "P39", "pos2", "page:edda", signal="qualifier:P582",
                    tags=("coarse-precision",))
        self.trap("end-qualifier-later", "the end date lies after τ_2: not yet deprecated",
                  window=2, op="D", s="edda", p="P39", o="pos2")

    def s_e_underscore(self) -> None:
        """E through a link written with underscores and a lower-case first letter."""
        b, k = self.b, self.k
        b.edit(k("oskar"), self.at(15), lambda s: s.add(st("P69", k("nu"))),
               f"/* wbcreateclaim-create:1| */ [[Property:P69]]: [[{k('nu')}]]", user="Wikiwalker")
        target = self.n("nu")
        raw_target = target[0].lower() + target[1:].replace(" ", "_")
        para = prose(
            self.n("oskar").split()[1], " enrolled at ", Link(raw_target, "Northam"),
            " in 2024 as a mature student, after two decades working on merchant ships. He chose ",
            "a course in maritime history and said he wanted to write about the crews he had ",
            "sailed with and the ports they had known.",
        )
        self.add_para("oskar", self.at(18), para, "Studies", scenario="e-underscore")
        self.expect(3, "E", "oskar", "P69", "nu", "page:oskar", tags=("link-underscore-lowercase",))

    def s_e_redirect(self) -> None:
        """E through a link to a redirect page."""
        b, k = self.b, self.k
        b.edit(k("selene"), self.at(22), lambda s: s.add(st("P19", k("kh"))),
               f"/* wbcreateclaim-create:1| */ [[Property:P19]]: [[{k('kh')}]]", user="Wikiwalker")
        para = prose(
            "Birth records found in 2024 show that ", self.n("selene").split()[1],
            " was born in ", Link(self.n("port"), "the old port town"), " rather than abroad, as ",
            "earlier biographies had claimed. The discovery was made by a local genealogist ",
            "working through parish registers for an unrelated family history.",
        )
        self.add_para("selene", self.at(24), para, "Early life", scenario="e-redirect")
        self.expect(4, "E", "selene", "P19", "kh", "page:selene", tags=("link-via-redirect",))

    def s_x_move(self) -> None:
        """X through a link to a page's title before it was moved."""
        para = prose(
            self.n("bram").split()[1], " grew up in ", Link(self.n("hf")), ", where his family ran ",
            "a small boatyard for three generations. In 2024 he wrote a memoir about the yard, ",
            "the boats it built and the village families who worked there through good and bad years.",
        )
        self.add_para("bram", self.at(30), para, "Memoir", scenario="x-page-move")
        self.left_out("r1-no-delta-between-mentions", "the line has no E, EE or D triple between two of its entities", 5, "X", "bram", "P19", "hf", "page:bram",
                      tags=("link-via-page-move",))

    def s_end_outside(self) -> None:
        """End qualifiers dated before t, at t (coarse precision) and after the windows."""
        b, k = self.b, self.k
        year = time.gmtime(self.t).tm_year
        b.edit(k("agnes"), self.at(4), lambda s: s.change(
            "P39", k("pos3"), qualifiers=(Qualifier("P582", day_time(self.t - 180 * DAY), 11),)),
            "/* wbsetqualifier-add:1| */ [[Property:P582]]", user="Wikiwalker")
        b.edit(k("agnes"), self.at(4, 1), lambda s: s.change(
            "P463", k("soc"), qualifiers=(Qualifier("P582", wikibase_time(year, 0, 0), 9),)),
            "/* wbsetqualifier-add:1| */ [[Property:P582]]", user="Wikiwalker")
        b.edit(k("agnes"), self.at(4, 2), lambda s: s.change(
            "P102", "core:civic", qualifiers=(Qualifier("P582", day_time(self.t + 200 * DAY), 11),)),
            "/* wbsetqualifier-add:1| */ [[Property:P582]]", user="Wikiwalker")
        para = prose(
            "A profile published in 2024 recalled ", self.n("agnes").split()[1], "'s years as ",
            Link(self.n("pos3")), ", her long involvement with the ", Link(self.n("soc")),
            " and her membership of the ", Link("Civic Union"), ", for which she still campaigns ",
            "in local elections and at party conferences across the region.",
        )
        self.add_para("agnes", self.at(9), para, "Profile", scenario="end-qualifier-outside")
        self.left_out("r1-no-delta-between-mentions", "the line has no E, EE or D triple between two of its entities", 2, "X", "agnes", "P39", "pos3", "page:agnes",
                      tags=("end-qualifier-before-t",))
        self.left_out("r1-no-delta-between-mentions", "the line has no E, EE or D triple between two of its entities", 2, "X", "agnes", "P463", "soc", "page:agnes",
                      tags=("end-qualifier-year-precision-at-t",))
        self.left_out("r1-no-delta-between-mentions", "the line has no E, EE or D triple between two of its entities", 2, "X", "agnes", "P102", "core:civic", "page:agnes",
                      tags=("end-qualifier-after-windows",))
        for o, p, why in (("pos3", "P39", "end time before t"), ("soc", "P463", "year precision: first instant is not after t"),
                          ("core:civic", "P102", "end time after the last window")):
            self.trap("end-qualifier-outside-window", why, window=2, op="D", s="agnes", p=p, o=o)

    def s_merge(self) -> None:
        """An entity merged into another (entity redirect): its triples leave T (not D)."""
        b, k = self.b, self.k
        target = self.n("kha1")
        b.page_edit(k("page:kha2"), self.at(12, 10), lambda a: Redirect(target),
                    f"Merged into [[{target}]]", user="Merger")
        b.edit(k("kha2"), self.at(12, 11), lambda s: ItemState(redirect=k("kha1")),
               f"/* wbmergeitems-to:0||{k('kha1')} */", user="Merger")
        b.edit(k("pia"), self.at(12, 12), lambda s: s.change("P108", k("kha2"), target=k("kha1")),
               "/* wbsetclaim-update:2||1 */ fix redirect", user="KrBot")
        para = prose(
            self.n("pia").split()[1], " has managed operations at ", Link(self.n("kha2")),
            " since the merger of the two airfield companies, overseeing the new terminal and the ",
            "reopening of the northern runway. She previously worked in freight logistics and ",
            "for the regional ferry service.",
        )
        self.add_para("pia", self.at(16), para, "Career", scenario="merge")
        # read through the final redirects (their s02, the defaults), the statement was
        # about kha1 all along: X, and the line has no delta triple (R1); without, the
        # re-pointing is an addition
        self.expect(3, "E", "pia", "P108", "kha1", "page:pia", tags=("link-via-redirect", "merge"),
                    settings="design,unselected")
        self.trap("merged-histories", "a statement re-pointed to the surviving item of a merge "
                  "is no addition", window=3, op="E", s="pia", p="P108", o="kha1",
                  settings="released")
        self.trap("merged-entity", "the object became an entity redirect (left V): neither D nor X",
                  window=3, op="D", s="pia", p="P108", o="kha2")

    def s_vandalism(self) -> None:
        """A paragraph vandalised and reverted within 10 minutes; a revision-deleted edit."""
        b, k = self.b, self.k
        page = k("page:kh")
        original = self.b.article(page).blocks[2]
        vandal = prose(
            Link(self.n("kh")), " is the WORST place in ", Link("Veloria"), " and everyone from ",
            Link(self.n("pel")), " knows it, lol. Nobody should ever go there because it is boring ",
            "and the people are rude and the weather is always terrible all year long, trust me.",
        )
        b.page_edit(page, self.at(9, 14), lambda a: a.replace_block(original, vandal), "",
                    user=None, ip="198.51.100.23")
        b.page_edit(page, self.at(9, 14, 10), lambda a: a.replace_block(vandal, original),
                    "Reverted edits by [[Special:Contributions/198.51.100.23|198.51.100.23]] "
                    "([[User talk:198.51.100.23|talk]]) to last version by ExampleEditor",
                    user="ClueBot NG", minor=True)
        self.trap("vandalism-reverted", "present for 10 minutes (< 30): not a passage", window=2,
                  op="X", s="kh", p="P17", o="core:veloria", page="page:kh", paragraph=vandal.identity)
        b.page_raw_rev(page, Rev(self.at(25, 8), None, "", user_hidden=True, comment_hidden=True))
        b.page_raw_rev(page, Rev(self.at(25, 8, 2), b.article(page), "Reverted", user="Patroller"))

    def s_no_english(self) -> None:
        """A triple with an entity that has no English article (not in V)."""
        b, k = self.b, self.k
        b.edit(k("bw"), self.at(8), lambda s: s.add(st("P127", k("vh"))),
               f"/* wbcreateclaim-create:1| */ [[Property:P127]]: [[{k('vh')}]]", user="Wikiwalker")
        para = prose(
            "In January 2024 the company was bought by ", Link(self.n("vh")),
            ", a holding group based abroad, but it kept its offices in ", Link(self.n("kh")),
            " and its research staff. The new owners promised to invest in a larger data centre ",
            "and to keep the company's name and its public reports.",
        )
        self.add_para("bw", self.at(10), para, "Ownership", scenario="no-english-article")
        self.left_out("r1-no-delta-between-mentions", "the line has no E, EE or D triple between two of its entities", 2, "X", "bw", "P159", "kh", "page:bw")
        for w in range(2, WINDOWS + 1):
            self.trap("no-english-article", "the owner has no enwiki sitelink: not in V, no triple",
                      window=w, op="E", s="bw", p="P127", o="vh")

    def s_after_last(self) -> None:
        """Events after the last window belong to no window of this snapshot."""
        b, k = self.b, self.k
        when = self.at(WINDOWS * 7 + 3)
        b.edit(k("pel"), when, lambda s: s.add(st("P47", k("kh"))),
               f"/* wbcreateclaim-create:1| */ [[Property:P47]]: [[{k('kh')}]]", user="Wikiwalker")
        para = prose(
            "The town shares a border with ", Link(self.n("kh")), " along the river, and a new ",
            "footbridge between the two was opened in 2024 after years of planning. Commuters ",
            "now cross it daily, and the old ferry service has become a summer attraction.",
        )
        self.add_para("pel", when + 2 * HOUR, para, "Geography", scenario="after-last-window")
        self.trap("after-last-window", "added after τ_5", op="E", s="pel", p="P47", o="kh")
        self.trap("after-last-window", "paragraph first appears after τ_5", page="page:pel",
                  paragraph=para.identity)

    def s_single_entity(self) -> None:
        """A new article whose paragraph mentions only its own item (EE-KG must not appear)."""
        b, k = self.b, self.k
        name = self.n("orrin")
        lead = prose(
            Bold(name), " is a folk singer and collector of sea shanties. ", Link(name, "Dale"),
            " founded the ", Link(self.n("archive_red")), " and gives the annual ",
            Link(self.n("lecture")), ", a talk on the songs of the coast that draws a large ",
            "audience of students, sailors and visitors every autumn.",
        )
        created = self.at(17, 8)
        b.page(k("page:orrin"), name, created, Article((infobox("musical artist", name, [("genre", "Folk")]),
                                                        lead, categories("Folk singers"))),
               item=k("orrin"), user="NewPageAuthor")
        b.entity(k("orrin"), name, "person", created + HOUR, enwiki=name,
                 statements=(st("P31", "core:human"), st("P27", "core:ostrand")))
        self.trap("single-mention-paragraph", "links resolve to the article itself, a red link "
                  "and a page without an item: one mentioned entity", window=3, op="EE-KG",
                  s="orrin", p="P27", o="core:ostrand", page="page:orrin", paragraph=lead.identity)

    def s_rank_restored(self) -> None:
        """A deprecated statement (not in T_t) set back to normal: an addition."""
        b, k = self.b, self.k
        b.edit(k("hugo"), self.at(22), lambda s: s.change(
            "P27", "core:ostrand", rank="normal", reason_deprecated=None),
            "/* wbsetclaim-update:2||1 */ [[Property:P27]]", user="Wikiwalker")
        para = prose(
            "Documents released in 2024 confirmed that ", self.n("hugo").split()[1],
            " held citizenship of ", Link("Ostrand"), " from birth, although he has lived in ",
            Link(self.n("pel")), " since childhood. Earlier reference works had listed him as ",
            "stateless because of a clerical error in a census.",
        )
        self.add_para("hugo", self.at(24), para, "Citizenship", scenario="rank-restored")
        self.expect(4, "E", "hugo", "P27", "core:ostrand", "page:hugo", tags=("rank-restored",))
        self.expect(4, "X", "hugo", "P19", "pel", "page:hugo")


    def s_window_addition_ended(self) -> None:
        """An addition whose end qualifier lies inside the window: a two-operation triple
        (E and D) in the released data; only E by the docs/semantics.md §1.1 rule (D comes
        from T_t)."""
        b, k = self.b, self.k
        end = Qualifier("P582", day_time(self.at(5)), 11)
        b.edit(k("oskar"), self.at(2, 6), lambda s: s.add(st("P54", k("club"), qualifiers=(
            Qualifier("P580", day_time(self.at(1)), 11), end))),
            f"/* wbcreateclaim-create:1| */ [[Property:P54]]: [[{k('club')}]]", user="Wikiwalker")
        para = prose(
            "In the first days of 2024 ", self.n("oskar").split()[1], " played a short trial ",
            "spell with ", Link(self.n("club")), ", which ended after four days when the club ",
            "chose not to offer him a contract. He returned to coaching youth teams and wrote a ",
            "column about the trial for the regional sports pages.",
        )
        self.add_para("oskar", self.at(6), para, "Trial", scenario="window-addition-ended")
        self.expect(1, "E", "oskar", "P54", "club", "page:oskar", settings="design")
        for w in range(1, WINDOWS + 1):  # cumulative: the passage is in every delta
            self.expect(w, "E", "oskar", "P54", "club", "page:oskar", settings="released,unselected")
            self.expect(w, "D", "oskar", "P54", "club", "page:oskar", signal="qualifier:P582",
                        tags=("two-operations",), settings="released,unselected")
        self.trap("window-addition-ended", "D comes from T_t only by the §1.1 rule",
                  window=1, op="D", s="oskar", p="P54", o="club", settings="design")

    def s_unparsed_two_operations(self) -> None:
        """A two-operation triple (E and D: a headquarters entered and ended inside the
        window) whose deprecation verdict comes back garbage from the curated worlds' stub
        (``curation.stub`` with ``garbage_for=GARBLED_SUBJECT``: a deprecation prompt about
        a subject named "Mumbles …" is answered with prose that never parses), its
        assertion verdict YES. The authors' s07
        (``curation.unparsed_fails: operation``) keeps the line on the E; the whole-triple
        reading (``triple``) drops it. The rows are those of any two-operation triple."""
        b, k = self.b, self.k
        end = Qualifier("P582", day_time(self.at(5)), 11)
        b.edit(k("mumbles"), self.at(2, 7), lambda s: s.add(st("P159", k("pel"), qualifiers=(
            Qualifier("P580", day_time(self.at(1)), 11), end))),
            f"/* wbcreateclaim-create:1| */ [[Property:P159]]: [[{k('pel')}]]", user="Wikiwalker")
        para = prose(
            "Early in 2024 the trust moved its offices to ", Link(self.n("pel")), " while the ",
            "pier's kiosk was rebuilt, and moved them back within the week once the storm ",
            "damage to the landing stage turned out to be slighter than first feared.",
        )
        self.add_para("mumbles", self.at(6, 2), para, "Offices", scenario="unparsed-two-operations")
        self.expect(1, "E", "mumbles", "P159", "pel", "page:mumbles", settings="design")
        for w in range(1, WINDOWS + 1):  # cumulative: the passage is in every delta
            self.expect(w, "E", "mumbles", "P159", "pel", "page:mumbles",
                        settings="released,unselected")
            self.expect(w, "D", "mumbles", "P159", "pel", "page:mumbles",
                        signal="qualifier:P582", tags=("unparsed-deprecation",),
                        settings="released,unselected")

    # ---- the authors' selection rules (R1-R5, docs/data-model.md): what each removes and
    # a near miss it keeps; "released" is their rules on, "unselected" and "design" off
    def _cumulative(self, first: int, op: str, s: str, p: str, o: str, page: str,
                    signal: str | None = None, kept: bool = True, rule: str = "",
                    why: str = "", tags: tuple[str, ...] = ()) -> None:
        """A row of a passage first seen in window ``first``: in that window under every
        semantics, in the later ones under the cumulative (released, unselected) ones;
        under the released one only when the authors' rules keep the line (``kept``)."""
        for w in range(first, WINDOWS + 1):
            names = ["design", "unselected"] if w == first else ["unselected"]
            if kept:
                names.append("released")
            self.expect(w, op, s, p, o, page, signal=signal, settings=",".join(names),
                        tags=tags)
            if not kept:
                self.trap(rule, why, window=w, op=op, s=s, p=p, o=o, page=page,
                          settings="released")

    def s_removal_kept(self) -> None:
        """R5's near miss: a plain removal beside an addition in one line is kept (and R2a's:
        the removal is permanent; R2b's: the passage follows the removal)."""
        b, k = self.b, self.k
        b.edit(k("nils"), self.at(8), lambda s: s.remove("P108", k("bw")),
               "/* wbremoveclaims-remove:1| */ [[Property:P108]]", user="Wikiwalker")
        b.edit(k("nils"), self.at(8, 2), lambda s: s.add(st("P108", k("soc"))),
               f"/* wbcreateclaim-create:1| */ [[Property:P108]]: [[{k('soc')}]]", user="Wikiwalker")
        para = prose(
            "In January 2024 ", self.n("nils").split()[0], " left ", Link(self.n("bw")),
            " after eleven years as an analyst and became the first paid archivist of the ",
            Link(self.n("soc")), ", where he catalogues the papers of shipping families and ",
            "the minutes of the harbour board.",
        )
        self.add_para("nils", self.at(10), para, "Career", scenario="removal-kept")
        self._cumulative(2, "D", "nils", "P108", "bw", "page:nils", signal="removed")
        self._cumulative(2, "E", "nils", "P108", "soc", "page:nils")

    def s_rank_kept(self) -> None:
        """A deprecated rank (D) beside an addition in one line: kept."""
        b, k = self.b, self.k
        b.edit(k("greta"), self.at(15), lambda s: s.change(
            "P54", k("club"), rank="deprecated", reason_deprecated="core:incorrect"),
            "/* wbsetclaim-update:2||1 */ [[Property:P54]]", user="Wikiwalker")
        b.edit(k("greta"), self.at(15, 3), lambda s: s.add(st("P108", k("bw"))),
               f"/* wbcreateclaim-create:1| */ [[Property:P108]]: [[{k('bw')}]]", user="Wikiwalker")
        para = prose(
            "Club historians found in 2024 that ", self.n("greta").split()[0], " never played for ",
            Link(self.n("club")), "; the record had confused her with a cousin. She works as a ",
            "data engineer at ", Link(self.n("bw")), " and coaches a youth team on weekends.",
        )
        self.add_para("greta", self.at(17), para, "Correction", scenario="rank-kept")
        self._cumulative(3, "D", "greta", "P54", "club", "page:greta", signal="rank")
        self._cumulative(3, "E", "greta", "P108", "bw", "page:greta")

    def s_removal_added_back(self) -> None:
        """R2a: a removal added back after the windows (within 15 years) is neither D nor X."""
        b, k = self.b, self.k
        b.edit(k("ivar"), self.at(9), lambda s: s.remove("P69", k("nu")),
               "/* wbremoveclaims-remove:1| */ [[Property:P69]]", user="Wikiwalker")
        b.edit(k("ivar"), self.at(9, 2), lambda s: s.add(st("P463", k("soc"))),
               f"/* wbcreateclaim-create:1| */ [[Property:P463]]: [[{k('soc')}]]", user="Wikiwalker")
        b.edit(k("ivar"), self.at(WINDOWS * 7 + 2), lambda s: s.add(st("P69", k("nu"))),
               f"/* wbcreateclaim-create:1| */ [[Property:P69]]: [[{k('nu')}]]", user="Patroller")
        para = prose(
            self.n("ivar").split()[0], " interrupted his studies at ", Link(self.n("nu")),
            " early in 2024 to join the survey teams of the ", Link(self.n("soc")),
            ", which was recording the old warehouses of the port before their demolition.",
        )
        self.add_para("ivar", self.at(11), para, "Studies", scenario="removal-added-back")
        self._cumulative(2, "E", "ivar", "P463", "soc", "page:ivar")
        self._cumulative(2, "D", "ivar", "P69", "nu", "page:ivar", signal="removed", kept=False,
                         rule="r2a-removal-added-back",
                         why="removed, then added back after τ_5: not a permanent removal")

    def s_passage_before_removal(self) -> None:
        """R2b: a passage older than the removal among its triples is left out from the
        window the removal falls in (before it, the line is kept)."""
        b, k = self.b, self.k
        b.edit(k("elin"), self.at(3), lambda s: s.add(st("P463", k("soc"))),
               f"/* wbcreateclaim-create:1| */ [[Property:P463]]: [[{k('soc')}]]", user="Wikiwalker")
        para = prose(
            self.n("elin").split()[0], " works as a statistician at ", Link(self.n("bw")),
            " and joined the ", Link(self.n("soc")), " in 2024 to help date a collection of ",
            "ship portraits by comparing the vessels with entries in the old port registers.",
        )
        self.add_para("elin", self.at(5), para, "Interests", scenario="passage-before-removal")
        b.edit(k("elin"), self.at(9), lambda s: s.remove("P108", k("bw")),
               "/* wbremoveclaims-remove:1| */ [[Property:P108]]", user="Wikiwalker")
        self.expect(1, "E", "elin", "P463", "soc", "page:elin")
        self.expect(1, "X", "elin", "P108", "bw", "page:elin")
        why = "the passage (day 5) predates the removal (day 9)"
        for w in range(2, WINDOWS + 1):
            self.expect(w, "E", "elin", "P463", "soc", "page:elin", settings="unselected")
            self.expect(w, "D", "elin", "P108", "bw", "page:elin", signal="removed",
                        settings="unselected")
            self.trap("r2b-passage-before-removal", why, window=w, op="E", s="elin", p="P463",
                      o="soc", page="page:elin", settings="released")

    def s_ee_kg_transient(self) -> None:
        """R3: an EE-KG triple removed before τ_k + 182.5 days (here: before the dump's
        end) is left out; the one that stays is kept."""
        b, k = self.b, self.k
        name = self.n("troupe")
        lead = prose(
            Bold(name), " is an amateur theatre company founded in ", Link(self.n("pel")),
            " in 2024. It stages plays about the sea and the fishing trade in halls and boat ",
            "sheds along the coast, with a cast drawn from local families.",
        )
        created = self.at(22)
        b.page(k("page:troupe"), name, created, standard_article(name, "org", lead),
               item=k("troupe"), user="NewPageAuthor")
        self.scenario("troupe", lead, "ee-kg-transient")
        b.entity(k("troupe"), name, "org", created + HOUR, enwiki=name,
                 statements=(st("P31", "core:ensemble"), st("P740", k("pel")),
                             st("P495", "core:marenia")))
        b.edit(k("troupe"), self.at(WINDOWS * 7 - 2), lambda s: s.remove("P495", "core:marenia"),
               "/* wbremoveclaims-remove:1| */ [[Property:P495]]", user="Patroller")
        self.expect(4, "EE", "troupe", "P740", "pel", "page:troupe")
        self.expect(4, "EE-KG", "troupe", "P31", "core:ensemble", "page:troupe")
        self.expect(5, "EE-KG", "troupe", "P31", "core:ensemble", "page:troupe",
                    settings="released,unselected")
        self.left_out("r3-ee-kg-not-persistent", "removed 5 days after τ_4", 4, "EE-KG",
                      "troupe", "P495", "core:marenia", "page:troupe")

    def s_merged_into_new(self) -> None:
        """R4: an older item merged into a new one makes it old (E, not EE; no EE-KG); a
        younger item merged into a new one does not."""
        b, k = self.b, self.k
        leads = {  # different words: no near-duplicates of each other
            "neo": ("is a charity founded in 2024 in", "to look after historic boats and the "
                    "slipways where they were built. It runs open days in summer and trains "
                    "volunteers in traditional carpentry."),
            "neo2": ("is a rowing club whose crews train on the river at", "; it was formed "
                     "in 2024 by students and dockworkers and races gigs against other "
                     "coastal clubs every autumn."),
        }
        for short, place, created, merged in (("neo", "kh", self.at(15), "paleo"),
                                              ("neo2", "pel", self.at(15, 4), "young")):
            name = self.n(short)
            before, after = leads[short]
            lead = prose(Bold(name), f" {before} ", Link(self.n(place)),
                         after if after.startswith(";") else f" {after}")
            b.page(k("page:" + short), name, created, standard_article(name, "org", lead),
                   item=k(short), user="NewPageAuthor")
            self.scenario(short, lead, "merged-into-new")
            b.entity(k(short), name, "org", created + HOUR, enwiki=name,
                     statements=(st("P31", "core:organization"), st("P159", k(place))))
            if merged == "young":
                self._thing("young", "org", self.at(16), [("P31", "core:organization")], [],
                            enwiki=False)
            b.edit(k(merged), self.at(18), lambda s, short=short: ItemState(redirect=k(short)),
                   f"/* wbmergeitems-to:0||{k(short)} */", user="Merger")
        # the older item merged in: created before t, so not emerging
        for w in range(3, WINDOWS + 1):
            self.expect(w, "E", "neo", "P159", "kh", "page:neo", settings="released")
        self.expect(3, "EE", "neo", "P159", "kh", "page:neo", settings="design,unselected")
        self.trap("r4-created-over-redirects", "an item created before t redirects to it",
                  window=3, op="EE", s="neo", p="P159", o="kh", page="page:neo",
                  settings="released")
        self.trap("r4-created-over-redirects", "an item created before t redirects to it: "
                  "not emerging, no EE-KG", window=3, op="EE-KG", s="neo", p="P31",
                  o="core:organization", page="page:neo", settings="released")
        self._cumulative(3, "EE", "neo2", "P159", "pel", "page:neo2")
        self._cumulative(3, "EE-KG", "neo2", "P31", "core:organization", "page:neo2")

    def s_sparse_line(self) -> None:
        """R5: one addition among six mentioned entities (1/6 ≤ 0.2) is not interesting;
        among four (1/4) it is."""
        b, k = self.b, self.k
        texts = {  # different words: no near-duplicates of each other
            "tove": ("In 2024 {name} wrote a guide to the coast's museums and societies, "
                     "among them {links}, and became a member of the first of them soon "
                     "after it was published by a small press in the town."),
            "runa": ("{name} joined {links} as a volunteer during 2024; her walking tours "
                     "of old warehouses draw families every weekend through the summer "
                     "season and raise money for repairs."),
        }
        for short, links in (("tove", ("soc", "kh", "pel", "nu", "club")),
                             ("runa", ("soc", "kh", "nu"))):
            b.edit(k(short), self.at(12), lambda s: s.add(st("P463", k("soc"))),
                   f"/* wbcreateclaim-create:1| */ [[Property:P463]]: [[{k('soc')}]]",
                   user="Wikiwalker")
            before, after = texts[short].split("{links}")
            parts: list[str | Link | Bold | Ref] = [
                before.format(name=self.n(short).split()[0])]
            for n, ref in enumerate(links):
                if n:
                    parts.append(" and " if n == len(links) - 1 else ", ")
                parts.append(Link(self.n(ref)))
            parts.append(after)
            para = prose(*parts)
            self.add_para(short, self.at(13), para, "Writing", scenario="sparse-line")
        self._cumulative(2, "E", "tove", "P463", "soc", "page:tove", kept=False,
                         rule="r5-not-interesting",
                         why="one delta triple among six mentioned entities (ratio 1/6 ≤ 0.2)")
        self._cumulative(2, "E", "runa", "P463", "soc", "page:runa")

    def s_ee_kg_only(self) -> None:
        """R1: a line whose only delta triples are EE-KG (one end mentioned) is left out."""
        b, k = self.b, self.k
        name = self.n("ferry")
        lead = prose(
            Bold(name), " is a small ferry company formed in 2024 by boat owners from ",
            Link(self.n("hf")), " to carry walkers and cyclists across the estuary in summer, "
            "on a route that had been closed for decades.",
        )
        created = self.at(19)
        b.page(k("page:ferry"), name, created, standard_article(name, "org", lead),
               item=k("ferry"), user="NewPageAuthor")
        self.scenario("ferry", lead, "ee-kg-only")
        b.entity(k("ferry"), name, "org", created + HOUR, enwiki=name,
                 statements=(st("P31", "core:business"), st("P17", "core:ostrand")))
        self._cumulative(3, "EE-KG", "ferry", "P31", "core:business", "page:ferry", kept=False,
                         rule="r1-no-delta-between-mentions",
                         why="only EE-KG triples: none between two mentioned entities")

    # ---- what the authors' s07 does at its edges (docs/data-model.md)
    def s_new_relation(self) -> None:
        """s07's relation filter: an addition whose relation, a property created after t,
        is not in R_t leaves its line when it was the line's only delta triple; beside an
        addition with a relation of R_t, the line stays without it."""
        b, k = self.b, self.k
        pid = f"P{9100 + self.i}"
        b.prop(pid, "partner organisation", "organisation the subject works with as a partner",
               self.at(1))
        b.edit(k("wren"), self.at(3), lambda s: s.add(st(pid, k("soc"))),
               f"/* wbcreateclaim-create:1| */ [[Property:{pid}]]: [[{k('soc')}]]",
               user="Wikiwalker")
        b.edit(k("ada"), self.at(3, 2), lambda s: s.add(st(pid, k("nu"))),
               f"/* wbcreateclaim-create:1| */ [[Property:{pid}]]: [[{k('nu')}]]",
               user="Wikiwalker")
        b.edit(k("ada"), self.at(3, 4), lambda s: s.add(st("P108", k("bw"))),
               f"/* wbcreateclaim-create:1| */ [[Property:P108]]: [[{k('bw')}]]",
               user="Wikiwalker")
        para = prose(
            "Since early 2024 ", self.n("wren").split()[0], " has worked with the ",
            Link(self.n("soc")), " on an oral history of the net lofts, recording fishermen "
            "and their families about the years before the harbour closed to trawlers.",
        )
        self.add_para("wren", self.at(5), para, "Projects", scenario="new-relation")
        para = prose(
            self.n("ada").split()[0], " moved to ", Link(self.n("bw")), " in January 2024 "
            "and runs its partnership with ", Link(self.n("nu")), ", where students build "
            "tide and weather models from the company's sensor records of the estuary.",
        )
        self.add_para("ada", self.at(5, 2), para, "Career", scenario="new-relation")
        why = f"{pid} was created after t: not in R_t"
        self._cumulative(1, "E", "wren", pid, "soc", "page:wren", kept=False,
                         rule="s07-relation-outside-r-t", why=why)
        self._cumulative(1, "E", "ada", pid, "nu", "page:ada", kept=False,
                         rule="s07-relation-outside-r-t", why=why)
        self._cumulative(1, "E", "ada", "P108", "bw", "page:ada")

    def s_removal_start_qualifier(self) -> None:
        """A removal whose statement carries only a start qualifier dated inside the
        window: their qualifier_info is not empty, so one model judges it (S07:109-112);
        the D carries that qualifier (``deltas.removal_start_qualifier``). The near miss
        is ``removal_kept``'s removal without any qualifier (both models judge it)."""
        b, k = self.b, self.k
        b.edit(k("cato"), self.at(8), lambda s: s.remove("P463", k("soc")),
               "/* wbremoveclaims-remove:1| */ [[Property:P463]]", user="Wikiwalker")
        b.edit(k("cato"), self.at(8, 3), lambda s: s.add(st("P108", k("nu"))),
               f"/* wbcreateclaim-create:1| */ [[Property:P108]]: [[{k('nu')}]]",
               user="Wikiwalker")
        para = prose(
            "A week after joining, ", self.n("cato").split()[0], " gave up his place in the ",
            Link(self.n("soc")), " to take a lecturing post at ", Link(self.n("nu")),
            ", where he teaches the history of the coastal trade and keeps the archive of "
            "the old shipping ledgers.",
        )
        self.add_para("cato", self.at(10), para, "Career", scenario="removal-start-qualifier")
        self._cumulative(2, "D", "cato", "P463", "soc", "page:cato", signal="removed",
                         tags=("removal-start-qualifier",))
        self._cumulative(2, "E", "cato", "P108", "nu", "page:cato")

    def _merged_before_t(self, c: int) -> None:
        """Harrow Mill's item (with its article) and a duplicate item without one; the
        first is merged into the second a day later (a redirect; the article's sitelink
        moves), and Finn's statement still names the merged item at t."""
        b, k = self.b, self.k
        self._thing("mill", "org", c, [("P31", "core:business"), ("P131", "pel")], ["pel"])
        b.entity(k("mill2"), self.n("mill2"), "org", c + HOUR,
                 statements=(st("P31", "core:business"),))
        self.person("finn", c + 2 * HOUR, [("P108", "mill"), ("P27", "core:veloria")],
                    ["core:veloria"])
        b.edit(k("mill"), c + DAY, lambda s: ItemState(redirect=k("mill2")),
               f"/* wbmergeitems-to:0||{k('mill2')} */", user="Merger")
        b.edit(k("mill2"), c + DAY + 5 * MINUTE,
               lambda s: s.with_sitelink("enwiki", self.n("mill")),
               f"/* wbsetsitelink-set:1|enwiki */ {self.n('mill')}", user="Merger")

    def s_merged_before(self) -> None:
        """Their s02 resolves redirects: an item merged before t, and a statement naming
        it re-pointed to the surviving item after t, which is no addition (X); beside it,
        a real addition keeps the line (without the resolution: E)."""
        b, k = self.b, self.k
        b.edit(k("finn"), self.at(6), lambda s: s.change("P108", k("mill"), target=k("mill2")),
               "/* wbsetclaim-update:2||1 */ fix redirect", user="KrBot")
        b.edit(k("finn"), self.at(6, 2), lambda s: s.add(st("P463", k("soc"))),
               f"/* wbcreateclaim-create:1| */ [[Property:P463]]: [[{k('soc')}]]",
               user="Wikiwalker")
        para = prose(
            self.n("finn").split()[0], " still keeps the books of ", Link(self.n("mill")),
            ", and in 2024 he joined the ", Link(self.n("soc")), " to write the history of "
            "the mill and of the families who worked its wheels for two centuries.",
        )
        self.add_para("finn", self.at(8), para, "Work", scenario="merged-before")
        for w in range(2, WINDOWS + 1):
            self.expect(w, "E", "finn", "P463", "soc", "page:finn",
                        settings="design,unselected,released" if w == 2 else
                        "unselected,released")
            self.expect(w, "X", "finn", "P108", "mill2", "page:finn", tags=("merged-histories",),
                        settings="released")
            self.expect(w, "E", "finn", "P108", "mill2", "page:finn",
                        settings="design,unselected" if w == 2 else "unselected")
            self.trap("merged-histories", "read through the redirects, the statement named "
                      "the surviving item since before t", window=w, op="E", s="finn",
                      p="P108", o="mill2", page="page:finn", settings="released")

    def s_title_colon(self) -> None:
        """s07's guards read the released passage split at its first ':' (S07:372-373, a
        quirk of theirs): under a title holding a colon, a paragraph of exactly three
        words per ':' gains the title's rest and one ':' and goes as table markup; the
        same article's prose paragraph stays under both readings (the near miss)."""
        b, k = self.b, self.k
        b.edit(k("saga"), self.at(3), lambda s: s.add(st("P127", k("soc"))),
               f"/* wbcreateclaim-create:1| */ [[Property:P127]]: [[{k('soc')}]]",
               user="Wikiwalker")
        b.edit(k("saga"), self.at(3, 2), lambda s: s.add(st("P131", k("pel"))),
               f"/* wbcreateclaim-create:1| */ [[Property:P131]]: [[{k('pel')}]]",
               user="Wikiwalker")
        seasons = prose(
            "Seasons: 2016: ", Link(self.n("soc"), "the society"), " hall; 2017: ",
            Link(self.n("kh"), "the port"), " pier; 2018: barn tour; 2019: coast tour; "
            "2020: archive nights; 2021: winter staging; 2022: spring revival; 2023: town "
            "festival.",
        )
        text = seasons.plain  # 27 words, 9 colons: 3 words a ':' (the guard needs < 3)
        assert (len(text.split(" ")), text.count(":")) == (27, 9), text
        self.add_para("saga", self.at(5), seasons, "Seasons", scenario="title-colon")
        story = prose(
            "The chronicle follows three generations of lamp keepers in ", Link(self.n("pel")),
            ", and in 2024 the company that stages it moved its rehearsals and its "
            "workshop into the town's old rope walk.",
        )
        self.add_para("saga", self.at(5, 3), story, "Story", scenario="title-colon")
        self._cumulative(1, "E", "saga", "P127", "soc", "page:saga", tags=("guard-title-colon",))
        self._cumulative(1, "E", "saga", "P131", "pel", "page:saga", tags=("title-colon-kept",))

    def s_repeat_mention(self) -> None:
        """Their s03 coreference_regex: a new article's second paragraph names the birth
        place its lead linked, in plain text; that repeat is a mention, so the birth place
        is EE in the second paragraph's line (without it, EE-KG there). Two near misses of
        their rule (EXTR:563-609, fed at 800-803): the lead links [[Veloria]] and the
        second paragraph says "Velorian" (no word boundaries: the anchor inside a longer
        word is a mention, so citizenship is EE there too); and a later revision's new
        paragraphs repeat unlinked the university the first revision's lead linked (the
        anchors are only those of the same revision's new paragraphs: not a mention, so
        the degree stays EE-KG there) beside the employer its own earlier new paragraph
        linked (a mention)."""
        b, k = self.b, self.k
        name = self.n("vera")
        lead = prose(
            Bold(name), " is a Velorian harbour engineer born in ", Link(self.n("pel")),
            ", ", Link(self.title_of("core:veloria")), ". She trained at ", Link(self.n("nu")),
            " and designed the breakwater that ",
            "protects the old fishing quarter, a project followed closely by engineers along ",
            "the whole coast.",
        )
        body = prose(
            "Her later work took her to ", Link(self.n("bw")), ", where she led the harbour ",
            "modelling team after the storms of 2023, but she kept a workshop in ",
            self.n("pel"), " and taught there every summer, drawing Velorian students from ",
            "all over the region.",
        )
        art = Article((infobox("engineer", name, [("birth_place", f"[[{self.n('pel')}]]")]),
                       lead, heading("Career"), body, heading("References"),
                       template("{{Reflist}}"), categories("Velorian engineers")))
        created = self.at(23, 5)
        b.page(k("page:vera"), name, created, art, item=k("vera"), user="NewPageAuthor")
        self.scenario("vera", lead, "repeat-mention-lead")
        self.scenario("vera", body, "repeat-mention")
        b.entity(k("vera"), name, "person", created + HOUR, enwiki=name,
                 statements=(st("P31", "core:human"), st("P19", k("pel")), st("P69", k("nu")),
                             st("P108", k("bw")), st("P27", "core:veloria")))
        self.expect(4, "EE", "vera", "P19", "pel", "page:vera")
        self.expect(4, "EE", "vera", "P108", "bw", "page:vera")
        self.expect(4, "EE", "vera", "P27", "core:veloria", "page:vera")
        if not self.new_text:
            return
        # a later revision (same window): two new paragraphs, the first linking the employer
        awards = prose(
            "In 2024 the regional engineering council named her project lead for the new ",
            "harbour wall, a commission she shares with the modelling group of ",
            Link(self.n("bw")), " and with the port's own survey office.",
        )
        teaching = prose(
            "Her seminars on breakwater design, first given for ", self.n("bw"),
            " staff, now draw graduates of ", self.n("nu"), " and of several technical ",
            "schools along the coast every spring.",
        )

        def grow(a: Article) -> Article:
            return a.insert_after(body, awards).insert_after(awards, teaching)
        b.page_edit(k("page:vera"), self.at(25, 2), grow, "/* Career */ council commission",
                    user="ExampleEditor")
        self.scenario("vera", awards, "repeat-same-revision-lead")
        self.scenario("vera", teaching, "repeat-other-revision")


#: every scenario a cast plants around its t, in the order they run (``Cast.s_<name>``)
SCENARIOS: tuple[str, ...] = (
    "x_basic", "e_basic", "ee_new", "ee_sitelink", "ee_object", "ee_kg", "d_qualifier",
    "d_removed", "d_rank", "d_month", "window_addition_ended", "e_underscore", "e_redirect",
    "x_move", "end_outside", "merge", "vandalism", "no_english", "after_last",
    "single_entity", "rank_restored", "removal_kept", "rank_kept", "removal_added_back",
    "passage_before_removal", "ee_kg_transient", "merged_into_new", "sparse_line",
    "ee_kg_only", "new_relation", "removal_start_qualifier", "title_colon", "merged_before",
    "repeat_mention", "unparsed_two_operations")


#: histories that give a stage nothing, each as the scenarios it plants and whether its
#: articles gain paragraphs after t (``emerge sample --case NAME``): every one must build
#: to a release that says what is empty (tests/e2e/pipeline/test_runner_empty.py)
EMPTY_CASES: dict[str, tuple[tuple[str, ...], bool]] = {
    "no_removal": (("e_basic", "ee_new", "ee_kg"), True),  # no D
    "no_addition": (("x_basic", "d_removed", "d_qualifier"), True),  # no E, EE, EE-KG
    "no_emerging": (("x_basic", "e_basic", "d_removed"), True),  # no EE, EE-KG
    "no_new_passage": (("e_basic", "d_removed"), False),  # deltas, but no passage
    "no_line": (("x_basic",), True),  # passages with X only: no line is selected
    "quiet": ((), True),  # nothing happens around t
}


def kind_word(kind: str) -> str:
    return {"person": "public figure", "place": "place", "org": "organisation", "work": "work"}.get(kind, "topic")


def quiet_start(snapshots: list[int], index: int) -> int:
    """When cast ``index`` is created: before its t, after the previous snapshot's windows."""
    t = snapshots[index]
    start = t - 45 * DAY
    if index > 0:
        start = max(start, snapshots[index - 1] + WINDOWS * WINDOW + 9 * DAY)
    return start


def build_plan(snapshots: list[int], scenarios: frozenset[str] | None = None,
               new_text: bool = True) -> Plan:
    """The planted world for the given snapshots (Unix seconds, ascending), with every
    scenario of :data:`SCENARIOS` around each t, or only those named in ``scenarios``
    (the cast is created either way)."""
    unknown = sorted(set(scenarios or ()) - set(SCENARIOS))
    if unknown:
        raise ValueError(f"no scenario named {', '.join(unknown)}; scenarios: "
                         f"{', '.join(SCENARIOS)}")
    b = Builder()
    build_core(b)
    for i, t in enumerate(snapshots):
        Cast(b, i, t, quiet_start(snapshots, i), scenarios, new_text).build()
    for page in b.plan.pages.values():
        page.revs.sort(key=lambda r: r.ts)
    return b.plan
