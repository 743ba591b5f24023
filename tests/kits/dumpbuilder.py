"""Tiny hand-written MediaWiki export dumps for exact, readable tests."""

from __future__ import annotations

import bz2
import json
from dataclasses import dataclass, field
from pathlib import Path
from xml.sax.saxutils import escape, quoteattr

import pytest

from emerge_lib.dumps.compressed import CorruptDumpError, open_dump
from emerge_lib.dumps.xml import Dump

HEADER = """<mediawiki xmlns="http://www.mediawiki.org/xml/export-0.11/" version="0.11" xml:lang="en">
  <siteinfo>
    <sitename>Wikidata</sitename>
    <dbname>{dbname}</dbname>
    <base>https://www.wikidata.org/wiki/Wikidata:Main_Page</base>
    <generator>MediaWiki 1.41.0-wmf.1</generator>
    <case>first-letter</case>
    <namespaces>
      <namespace key="0" case="first-letter" />
      <namespace key="120" case="first-letter">Property</namespace>
    </namespaces>
  </siteinfo>
"""


FORMATS = {"wikitext": "text/x-wiki"}  # every other model here is a Wikibase JSON one


@dataclass
class Rev:
    rev_id: int
    timestamp: str  # 2024-01-01T00:00:00Z
    text: str | None  # None = deleted text
    model: str = "wikibase-item"
    comment: str | None = None
    parent: int | None = None  # <parentid>, as Wikimedia writes it


@dataclass
class PageSpec:
    page_id: int
    title: str
    revisions: list[Rev] = field(default_factory=list)
    ns: int = 0
    redirect: str | None = None  # <redirect title="..."/>; "" = old-style empty tag


def render(pages: list[PageSpec], dbname: str = "wikidatawiki", close: bool = True,
           header: str | None = None) -> str:
    """The export XML of ``pages`` (``header``: a siteinfo of another wiki)."""
    out = [header if header is not None else HEADER.format(dbname=dbname)]
    for page in pages:
        out.append(f"  <page>\n    <title>{escape(page.title)}</title>\n    <ns>{page.ns}</ns>\n"
                   f"    <id>{page.page_id}</id>\n")
        if page.redirect is not None:
            attr = f" title={quoteattr(page.redirect)}" if page.redirect else ""
            out.append(f"    <redirect{attr} />\n")
        for rev in page.revisions:
            parent = f"      <parentid>{rev.parent}</parentid>\n" if rev.parent else ""
            out.append(f"    <revision>\n      <id>{rev.rev_id}</id>\n{parent}"
                       f"      <timestamp>{rev.timestamp}</timestamp>\n"
                       "      <contributor><username>Tester</username><id>1</id></contributor>\n")
            if rev.comment is not None:
                out.append(f"      <comment>{escape(rev.comment)}</comment>\n")
            fmt = FORMATS.get(rev.model, "application/json")
            out.append(f"      <model>{rev.model}</model>\n      <format>{fmt}</format>\n")
            if rev.text is None:
                out.append('      <text deleted="deleted" />\n')
            else:
                out.append(f'      <text bytes="{len(rev.text.encode())}" xml:space="preserve">'
                           f"{escape(rev.text)}</text>\n")
            out.append("      <sha1>x</sha1>\n    </revision>\n")
        out.append("  </page>\n")
    if close:
        out.append("</mediawiki>\n")
    return "".join(out)


def write_bz2(path: Path, pages: list[PageSpec], **kw) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(bz2.compress(render(pages, **kw).encode()))
    return path


def claim(pid: str, qid: str, sid: str, rank: str = "normal", quals: dict | None = None) -> dict:
    c = {
        "mainsnak": {"snaktype": "value", "property": pid, "datatype": "wikibase-item",
                     "datavalue": {"value": {"entity-type": "item", "numeric-id": int(qid[1:]),
                                             "id": qid}, "type": "wikibase-entityid"}},
        "type": "statement", "id": sid, "rank": rank,
    }
    if quals:
        c["qualifiers"] = {
            p: [{"snaktype": "value", "property": p, "datatype": "time",
                 "datavalue": {"value": {"time": t, "timezone": 0, "before": 0, "after": 0,
                                         "precision": prec,
                                         "calendarmodel": "http://www.wikidata.org/entity/Q1985727"},
                               "type": "time"}}]
            for p, (t, prec) in quals.items()
        }
        c["qualifiers-order"] = list(quals)
    return c


def item(qid: str, claims: list[dict], enwiki: str | None = None, label: str | None = None) -> str:
    grouped: dict[str, list[dict]] = {}
    for c in claims:
        grouped.setdefault(c["mainsnak"]["property"], []).append(c)
    doc = {
        "type": "item", "id": qid,
        "labels": {"en": {"language": "en", "value": label or qid},
                   "de": {"language": "de", "value": (label or qid) + " (de)"}},
        "descriptions": [], "aliases": [],
        "claims": grouped or [],
        "sitelinks": {"enwiki": {"site": "enwiki", "title": enwiki, "badges": []}} if enwiki else [],
    }
    return json.dumps(doc, separators=(",", ":"))


def legacy_item(qid: str, triples: list[tuple[str, str, str, int]], enwiki: str | None) -> str:
    """Legacy serialization: claims as a list with m/q/g/rank; rank ints."""
    claims = [
        {"m": ["value", int(p[1:]), "wikibase-entityid",
               {"entity-type": "item", "numeric-id": int(o[1:])}],
         "q": [], "g": g, "rank": rank, "refs": []}
        for p, o, g, rank in triples
    ]
    doc = {"label": {"en": qid}, "description": [], "aliases": [],
           "links": {"enwiki": {"name": enwiki, "badges": []}} if enwiki else [],
           "entity": qid.lower(), "claims": claims}
    return json.dumps(doc, separators=(",", ":"))


def redirect(qid: str, target: str) -> str:
    return json.dumps({"entity": qid, "redirect": target})


# -- reading dumps whole, or up to the damage that stops them (the compressed readers' tests)
def read_dump(path: Path, **kw: object) -> bytes:
    with open_dump(path, **kw) as fh:  # type: ignore[arg-type]
        return fh.read()


def paged_xml(n: int = 60) -> tuple[bytes, dict[int, int]]:
    """A dump of ``n`` pages of ~9 kB of word salad (several 100 kB bz2 blocks at level 1);
    page id -> the offset just past its ``</page>``."""
    import random

    rnd = random.Random(5)
    words = [f"w{rnd.randrange(10**6)}" for _ in range(5000)]
    pages = [
        PageSpec(i, f"Page {i}", [Rev(i * 10, "2024-01-01T00:00:00Z",
                                      " ".join(rnd.choices(words, k=1200)), model="wikitext")])
        for i in range(1, n + 1)
    ]
    xml = render(pages, dbname="enwiki").encode()
    ends, pos = {}, 0
    for page in pages:
        pos = xml.index(b"</page>", pos) + len(b"</page>")
        ends[page.page_id] = pos
    return xml, ends


def read_until_error(dump: Dump) -> tuple[list[int], CorruptDumpError]:
    """Ids of the pages read to their end, and the error that stopped the reading."""
    done: list[int] = []
    with pytest.raises(CorruptDumpError) as info, dump:
        for page in dump:
            list(page)
            done.append(page.page_id)
    return done, info.value
