"""Tiny hand-written enwiki history dumps (wikitext) for exact, readable tests."""

from __future__ import annotations

import bz2
from dataclasses import dataclass, field
from pathlib import Path
from xml.sax.saxutils import escape, quoteattr

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


@dataclass
class WRev:
    rev_id: int
    timestamp: str  # 2024-01-01T00:00:00Z
    text: str | None  # None = deleted text
    comment: str | None = None
    model: str = "wikitext"


@dataclass
class WPage:
    page_id: int
    title: str
    revisions: list[WRev] = field(default_factory=list)
    ns: int = 0
    redirect: str | None = None  # <redirect title="..."/>; "" = old-style empty tag


def render(pages: list[WPage], close: bool = True) -> str:
    out = [HEADER]
    for page in pages:
        out.append(f"  <page>\n    <title>{escape(page.title)}</title>\n    <ns>{page.ns}</ns>\n"
                   f"    <id>{page.page_id}</id>\n")
        if page.redirect is not None:
            attr = f" title={quoteattr(page.redirect)}" if page.redirect else ""
            out.append(f"    <redirect{attr} />\n")
        for rev in page.revisions:
            out.append(f"    <revision>\n      <id>{rev.rev_id}</id>\n"
                       f"      <timestamp>{rev.timestamp}</timestamp>\n"
                       "      <contributor><username>Tester</username><id>1</id></contributor>\n")
            if rev.comment is not None:
                out.append(f"      <comment>{escape(rev.comment)}</comment>\n")
            out.append(f"      <model>{rev.model}</model>\n      <format>text/x-wiki</format>\n")
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


def write_bz2(path: Path, pages: list[WPage], **kw) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(bz2.compress(render(pages, **kw).encode()))
    return path


def para(*sentences: str) -> str:
    """A paragraph of wikitext from sentences (joined by spaces)."""
    return " ".join(sentences)


def article(*paragraphs: str, infobox: bool = True) -> str:
    """An article: optional infobox, paragraphs separated by blank lines, a category."""
    head = "{{Infobox thing\n| name = X\n}}\n" if infobox else ""
    return head + "\n\n".join(paragraphs) + "\n\n[[Category:Things]]\n"
