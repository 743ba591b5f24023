"""The small data model of the planted world: entity states, revisions, wikitext blocks.

Why a model and not XML: truth is computed from the plan (``semantics.py``) with the
same objects the XML is rendered from, so what the dumps say and what truth.jsonl says
cannot drift apart. Times are integer Unix seconds (UTC) throughout: cheap to compare
and free of time-zone mistakes.
"""

from __future__ import annotations

import calendar
import time
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime

MINUTE = 60
HOUR = 3600
DAY = 86400


def to_seconds(value: str | datetime) -> int:
    """``2024-01-01T00:00:00Z`` (or an aware datetime) -> Unix seconds."""
    if isinstance(value, datetime):
        dt = value if value.tzinfo else value.replace(tzinfo=UTC)
        return int(dt.timestamp())
    text = value.strip()
    if len(text) == 8 and text.isdigit():  # YYYYMMDD
        return calendar.timegm(time.strptime(text, "%Y%m%d"))
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    dt = datetime.fromisoformat(text)
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    return int(dt.timestamp())


def iso(seconds: int) -> str:
    """Unix seconds -> the MediaWiki XML timestamp form ``2024-01-01T00:00:00Z``."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(seconds))


def ymd(seconds: int) -> str:
    return time.strftime("%Y%m%d", time.gmtime(seconds))


# --------------------------------------------------------------------------- Wikidata


@dataclass(frozen=True)
class Qualifier:
    """A time-valued qualifier (start/end); ``time`` is a Wikibase time string."""

    pid: str
    time: str  # e.g. "+2024-01-10T00:00:00Z" (month/day may be 00 when coarse)
    precision: int  # 9 year, 10 month, 11 day


@dataclass(frozen=True)
class Statement:
    """One statement. ``target`` is an entity key for item values, else a literal."""

    pid: str
    target: str
    kind: str = "item"  # item | string | external-id | time | quantity | url
    rank: str = "normal"  # normal | preferred | deprecated
    qualifiers: tuple[Qualifier, ...] = ()
    references: int = 1
    guid: str = ""
    reason_deprecated: str | None = None  # entity key of a P2241 value


@dataclass(frozen=True)
class ItemState:
    """An entity's content at one revision (items and properties)."""

    labels: tuple[tuple[str, str], ...] = ()
    descriptions: tuple[tuple[str, str], ...] = ()
    aliases: tuple[tuple[str, tuple[str, ...]], ...] = ()
    sitelinks: tuple[tuple[str, str], ...] = ()
    statements: tuple[Statement, ...] = ()
    redirect: str | None = None  # entity key this entity redirects to
    datatype: str | None = None  # properties only

    def sitelink(self, site: str) -> str | None:
        for s, title in self.sitelinks:
            if s == site:
                return title
        return None

    def with_sitelink(self, site: str, title: str | None) -> ItemState:
        links = [(s, t) for s, t in self.sitelinks if s != site]
        if title is not None and site == "enwiki":
            links.insert(0, (site, title))
        elif title is not None:
            links.append((site, title))
        return replace(self, sitelinks=tuple(links))

    def add(self, st: Statement) -> ItemState:
        return replace(self, statements=self.statements + (st,))

    def remove(self, pid: str, target: str) -> ItemState:
        kept = tuple(s for s in self.statements if not (s.pid == pid and s.target == target))
        if len(kept) == len(self.statements):
            raise ValueError(f"no statement {pid} -> {target} to remove")
        return replace(self, statements=kept)

    def change(self, pid: str, target: str, /, **changes: object) -> ItemState:
        out, hit = [], False
        for s in self.statements:
            if s.pid == pid and s.target == target:
                s = replace(s, **changes)  # type: ignore[arg-type]
                hit = True
            out.append(s)
        if not hit:
            raise ValueError(f"no statement {pid} -> {target} to change")
        return replace(self, statements=tuple(out))


# --------------------------------------------------------------------------- revisions


@dataclass
class Rev:
    """One revision of a planted page. ``content`` None means its text was revision-deleted."""

    ts: int
    content: object | None
    comment: str = ""
    user: str | None = "ExampleEditor"  # None: an anonymous (IP) edit
    ip: str = "192.0.2.1"
    minor: bool = False
    user_hidden: bool = False
    comment_hidden: bool = False
    legacy: bool = False  # Wikidata: render in the pre-2014 serialization
    id_ts: int | None = None  # timestamp used for the revision id (out-of-order revisions)
    rev_id: int = 0  # assigned once page ids are known


@dataclass
class PlanEntity:
    """A planted Wikidata page (item or property)."""

    key: str
    revs: list[Rev]
    is_property: bool = False
    pid: str | None = None  # properties: their fixed id
    page_id: int = 0
    qid: str = ""

    @property
    def created(self) -> int:
        return min(r.ts for r in self.revs)

    @property
    def title(self) -> str:
        return f"Property:{self.qid}" if self.is_property else self.qid


@dataclass(frozen=True)
class Redirect:
    """Wikitext ``#REDIRECT [[target]]`` content."""

    target: str
    extra: str = "\n\n{{Redirect category shell|\n{{R from alternative name}}\n}}"

    @property
    def raw(self) -> str:
        return f"#REDIRECT [[{self.target}]]{self.extra}"


@dataclass(frozen=True)
class Block:
    """A wikitext block (blocks are separated by blank lines).

    ``kind`` is prose for paragraphs; everything else (infobox, heading, list, table, file,
    category, template) is never a passage. For prose, ``plain`` is the cleaned text and
    ``links`` the raw link targets, known by construction.
    """

    kind: str
    raw: str
    plain: str = ""
    links: tuple[str, ...] = ()

    @property
    def tokens(self) -> int:
        return len(self.plain.split())

    @property
    def markup_ratio(self) -> float:
        if not self.raw:
            return 0.0
        return sum(self.raw.count(c) for c in "{}[]|=<>") / len(self.raw)

    @property
    def identity(self) -> str:
        return " ".join(self.plain.split())


@dataclass(frozen=True)
class Article:
    """Article content: blocks joined by blank lines."""

    blocks: tuple[Block, ...]

    @property
    def raw(self) -> str:
        return "\n\n".join(b.raw for b in self.blocks) + "\n"

    def replace_block(self, old: Block, new: Block | None) -> Article:
        out = []
        for b in self.blocks:
            if b == old:
                if new is not None:
                    out.append(new)
            else:
                out.append(b)
        return Article(tuple(out))

    def insert_after(self, anchor: Block, new: Block) -> Article:
        out: list[Block] = []
        for b in self.blocks:
            out.append(b)
            if b == anchor:
                out.append(new)
        if new not in out:
            raise ValueError("anchor block not found")
        return Article(tuple(out))


@dataclass
class PlanPage:
    """A planted English Wikipedia page (article or redirect), with its title history."""

    key: str
    titles: list[tuple[int, str]]  # (from_ts, title), ascending
    revs: list[Rev]
    item: str | None = None  # the entity key whose enwiki sitelink is this page
    page_id: int = 0

    @property
    def title(self) -> str:
        return self.titles[-1][1]

    @property
    def created(self) -> int:
        return min(r.ts for r in self.revs)

    def title_at(self, ts: int) -> str:
        current = self.titles[0][1]
        for since, title in self.titles:
            if since <= ts:
                current = title
        return current


# --------------------------------------------------------------------------- prose


@dataclass(frozen=True)
class Link:
    target: str
    anchor: str | None = None


@dataclass(frozen=True)
class Bold:
    text: str


@dataclass(frozen=True)
class Ref:
    """An inline citation; removed by the cleaner."""

    title: str
    url: str = "https://www.example.org/news"
    date: str = "2023-05-01"


def prose(*parts: str | Link | Bold | Ref) -> Block:
    """Build a prose block whose wikitext, plain text and links agree by construction."""
    raw: list[str] = []
    plain: list[str] = []
    links: list[str] = []
    for part in parts:
        if isinstance(part, str):
            raw.append(part)
            plain.append(part)
        elif isinstance(part, Link):
            links.append(part.target)
            if part.anchor is None:
                raw.append(f"[[{part.target}]]")
                plain.append(part.target)
            else:
                raw.append(f"[[{part.target}|{part.anchor}]]")
                plain.append(part.anchor)
        elif isinstance(part, Bold):
            raw.append(f"'''{part.text}'''")
            plain.append(part.text)
        else:
            raw.append(
                f'<ref>{{{{cite web |url={part.url} |title={part.title} '
                f"|date={part.date} |access-date={part.date}}}}}</ref>"
            )
    return Block("prose", "".join(raw), " ".join("".join(plain).split()), tuple(links))


@dataclass
class TrapSpec:
    """Something the pipeline must NOT produce, and why (written to traps.jsonl)."""

    snapshot: int
    kind: str
    reason: str
    window: int | None = None
    op: str | None = None
    s: str | None = None  # entity keys until resolved
    p: str | None = None
    o: str | None = None
    page: str | None = None  # PlanPage key
    paragraph: str | None = None
    settings: str = "both"  # as Expectation.settings


@dataclass
class Expectation:
    """A truth row a scenario promises (checked against the computed truth)."""

    snapshot: int
    window: int
    op: str
    s: str
    p: str
    o: str
    page: str
    signal: str | None = None
    tags: tuple[str, ...] = ()
    # which semantics promise the row: "both", "released" (the defaults: what the released
    # data shows, docs/semantics.md §1.3) or "design" (docs/semantics.md §1.1-1.2)
    settings: str = "both"


@dataclass
class Plan:
    """The whole planted world."""

    entities: dict[str, PlanEntity] = field(default_factory=dict)
    pages: dict[str, PlanPage] = field(default_factory=dict)
    traps: list[TrapSpec] = field(default_factory=list)
    expectations: list[Expectation] = field(default_factory=list)
    scenario_of: dict[tuple[str, str], str] = field(default_factory=dict)  # (page, para) -> name
    labels: dict[str, str] = field(default_factory=dict)  # entity key -> English label
