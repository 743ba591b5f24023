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
