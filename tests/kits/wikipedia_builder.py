"""Tiny hand-written enwiki history dumps (wikitext) for exact, readable tests."""

from __future__ import annotations

from pathlib import Path

from dumpbuilder import PageSpec, Rev
from dumpbuilder import render as render_dump
from dumpbuilder import write_bz2 as write_dump

HEADER = """<mediawiki xmlns="http://www.mediawiki.org/xml/export-0.11/" version="0.11" xml:lang="en">
  <siteinfo>
    <sitename>Wikipedia</sitename>
    <dbname>enwiki</dbname>
    <base>https://en.wikipedia.org/wiki/Main_Page</base>
    <generator>MediaWiki 1.42.0-wmf.1</generator>
    <case>first-letter</case>
    <namespaces>
      <namespace key="0" case="first-letter" />
      <namespace key="1" case="first-letter">Talk</namespace>
      <namespace key="118" case="first-letter">Draft</namespace>
    </namespaces>
  </siteinfo>
"""


def WRev(rev_id: int, timestamp: str, text: str | None, comment: str | None = None,  # noqa: N802
         model: str = "wikitext") -> Rev:
    """A wikitext revision (``text`` None = deleted text)."""
    return Rev(rev_id, timestamp, text, model=model, comment=comment)


WPage = PageSpec  # page_id, title, revisions, ns, redirect


def render(pages: list[PageSpec], close: bool = True) -> str:
    return render_dump(pages, close=close, header=HEADER)


def write_bz2(path: Path, pages: list[PageSpec], **kw) -> Path:
    return write_dump(path, pages, header=HEADER, **kw)


def para(*sentences: str) -> str:
    """A paragraph of wikitext from sentences (joined by spaces)."""
    return " ".join(sentences)


def article(*paragraphs: str, infobox: bool = True) -> str:
    """An article: optional infobox, paragraphs separated by blank lines, a category."""
    head = "{{Infobox thing\n| name = X\n}}\n" if infobox else ""
    return head + "\n\n".join(paragraphs) + "\n\n[[Category:Things]]\n"


# -- a hand-written history of five pages (the engine tier's Wikipedia ingest tests) --
A = "'''Alpha''' is a town in [[Gamma]] on the [[river Delta|Delta]]."
B = "It was founded by [[John Smith]] in 1850."
B2 = "It was founded by [[John Smith]] in 1851."
C = "In 2024 it joined the [[Union of towns|union]] with [[Beta (town)|Beta]]."
AV = "Alpha is the WORST town ever lol."
D = "A '''thing''' is an [[object]]."
E = "Things are [[Counting|countable]]."
MOVE = "Alice moved page [[Old name]] to [[New name]]: better name"


def world_v1() -> list[WPage]:
    return [
        WPage(1, "New name", [
            WRev(101, "2023-06-01T00:00:00Z", article(A, B)),
            WRev(102, "2023-12-20T00:00:00Z", article(A, B2)),
            WRev(105, "2024-01-03T00:00:00Z", article(A, B2), comment=MOVE),
            WRev(106, "2024-01-05T10:00:00Z", article(A, B2, C)),
            WRev(107, "2024-01-06T12:00:00Z", article(AV, B2, C), comment="lol"),
            WRev(108, "2024-01-06T12:05:00Z", article(A, B2, C), comment="Reverted vandalism"),
            WRev(109, "2024-02-01T00:00:00Z", article(A, C)),
        ]),
        # the redirect the move left at the old title carries the same comment
        WPage(2, "Old name", [WRev(104, "2024-01-03T00:00:00Z", "#REDIRECT [[New name]]",
                                   comment=MOVE)], redirect="New name"),
        # a draft moved into the articles (old comment wording); revisions out of order
        WPage(3, "Thing", [
            WRev(201, "2023-12-25T00:00:00Z", article(D, infobox=False)),
            WRev(203, "2024-01-04T00:00:00Z", article(D, E, infobox=False),
                 comment="moved [[Draft:Thing]] to [[Thing]]"),
            WRev(202, "2024-01-02T00:00:00Z", article(D, E, infobox=False)),
        ]),
        # redirect variants real pages use; a deleted text; a tag-only redirect
        WPage(4, "Redirects", [
            WRev(301, "2023-01-01T00:00:00Z", "#redirect[[target one]]"),
            WRev(302, "2023-02-01T00:00:00Z", "#REDIRECT:[[Target_two#Section|label]]"),
            WRev(303, "2023-03-01T00:00:00Z", None),
            WRev(304, "2023-04-01T00:00:00Z", "  #Redirect\n[[Wikipedia:Sandbox]]"),
            WRev(305, "2023-05-01T00:00:00Z", "#WEITERLEITUNG [[Ziel]]"),
        ], redirect="Ziel drei"),
        WPage(5, "Talk:Thing", [WRev(401, "2024-01-02T00:00:00Z", "chat")], ns=1),
    ]
