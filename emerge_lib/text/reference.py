"""Reference paragraph extraction with mwparserfromhell (slow; for tests and benchmarks).

An independent implementation of the rules of `wikitext.extract_paragraphs` on top of
mwparserfromhell's parse tree, used to cross-check the fast scanner on real articles.
It shares only the title rules (`text.titles`). It returns (text, mentions) pairs,
where mentions are (start, end, anchor, target) tuples.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterable
from typing import Any

from emerge_lib.text.titles import is_redirect, link_namespace, name_set, normalize_title

_TRANSPARENT = "\ue100"  # a comment: neither text nor a paragraph break
_MARKUP = "\ue101"  # something rendered as non-text (template, table, file, ref...)
_LINK_OPEN = "\ue102"
_LINK_CLOSE = "\ue103"
_BREAK = "\ue104"  # a removed block-level tag: separates words like a space
_LIST_ITEM = "\ue105"  # an HTML list item or table cell: its line is not a paragraph
_MARKERS = _TRANSPARENT + _MARKUP + _LINK_OPEN + _LINK_CLOSE + _BREAK + _LIST_ITEM

_DROP_TAGS = name_set(
    """
    ref references math chem ce gallery pre syntaxhighlight source score timeline imagemap
    hiero graph templatedata templatestyles mapframe maplink inputbox categorytree section
    indicator charinsert poem includeonly dynamicpagelist rss quiz phonos langconvert table
    """
)
_BLOCK_TAGS = name_set("br hr p div blockquote center ul ol dl caption h1 h2 h3 h4 h5 h6")
_ITEM_TAGS = name_set("li dd dt tr td th")
_TRAIL = re.compile(r"[a-z]+")


def _render(nodes: Iterable[Any], targets: list[str], in_link: bool) -> str:
    """Flatten mwparserfromhell nodes to text with paragraph and link markers."""
    from mwparserfromhell import nodes as mw

    out: list[str] = []
    pending_trail = False
    for node in nodes:
        if pending_trail:
            pending_trail = False
            if isinstance(node, mw.Text):
                trail = _TRAIL.match(node.value)
                if trail:
                    close = out.pop()
                    out.append(trail.group())
                    out.append(close)
                    out.append(node.value[trail.end() :])
                    continue
        if isinstance(node, mw.Text):
            out.append(node.value)
        elif isinstance(node, mw.Wikilink):
            title = str(node.title)
            kind = link_namespace(title)
            if kind in ("file", "category", "interlanguage"):
                out.append(_MARKUP)
                continue
            if node.text is not None and str(node.text).strip():
                anchor = _render(node.text.nodes, targets, True)
            else:
                anchor = html.unescape(title.strip().removeprefix(":"))
            target = normalize_title(title) if kind is None else None
            if target is not None and not in_link:
                targets.append(target)
                out.extend((_LINK_OPEN, anchor, _LINK_CLOSE))
                pending_trail = True
            else:
                out.append(anchor)
        elif isinstance(node, mw.ExternalLink):
            if node.brackets:
                out.append(_render(node.title.nodes, targets, True) if node.title else "")
            else:
                out.append(str(node.url))
        elif isinstance(node, mw.Comment):
            out.append(_TRANSPARENT)
        elif isinstance(node, mw.HTMLEntity):
            out.append(node.normalize())
        elif isinstance(node, mw.Heading):
            out.append("=" + _MARKUP)
        elif isinstance(node, mw.Tag):
            out.append(_render_tag(node, targets, in_link))
        else:  # Template, Argument, and anything unexpected
            out.append(_MARKUP)
    return "".join(out)


def _render_tag(node: Any, targets: list[str], in_link: bool) -> str:
    markup = str(node.wiki_markup) if node.wiki_markup is not None else None
    name = str(node.tag).strip().lower()
    if markup in ("*", "#", ":", ";", "----"):
        return str(markup)
    if name == "nowiki":
        return html.unescape(str(node.contents)) if node.contents is not None else ""
    if name in _DROP_TAGS:
        return _MARKUP
    inner = _render(node.contents.nodes, targets, in_link) if node.contents is not None else ""
    if name in _ITEM_TAGS:
        return _LIST_ITEM + inner + _BREAK
    if name in _BLOCK_TAGS:
        return _BREAK + inner + _BREAK
    return inner


def _line_kind(line: str) -> str:
    if not line.strip():
        return "blank"
    if line[0] in "*#:;=" + _LIST_ITEM or line.startswith("----"):
        return "skip"
    visible = any(not ch.isspace() and ch not in _MARKERS for ch in line)
    if visible:
        return "skip" if line[0] in " \t" else "text"
    if all(ch.isspace() or ch == _TRANSPARENT for ch in line):
        return "transparent"
    return "markup"


def _finish(raw: str, targets: list[str]) -> tuple[str, list[tuple[int, int, str, str]]]:
    """Whitespace-normalize a rendered paragraph and place its link markers."""
    text: list[str] = []
    length = 0
    space = False
    opened: list[int] = []
    spans: list[tuple[int, int]] = []
    for piece in re.split("([" + _LINK_OPEN + _LINK_CLOSE + "])", raw):
        if piece == _LINK_OPEN:
            opened.append(-1)
            continue
        if piece == _LINK_CLOSE:
            spans.append((opened.pop(), length))
            continue
        piece = piece.replace(_TRANSPARENT, "").replace(_MARKUP, "").replace(_BREAK, " ")
        piece = piece.replace(_LIST_ITEM, "")
        for word_match in re.finditer(r"\S+|\s+", piece):
            word = word_match.group()
            if word.isspace():
                space = True
                continue
            if length and space:
                text.append(" ")
                length += 1
            space = False
            if opened and opened[-1] < 0:
                opened[-1] = length
            text.append(word)
            length += len(word)
    plain = "".join(text)
    mentions = [
        (start, end, plain[start:end], target)
        for (start, end), target in zip(spans, targets, strict=True)
        if start >= 0 and end > start
    ]
    return plain, mentions


def reference_paragraphs(wikitext: str) -> list[tuple[str, list[tuple[int, int, str, str]]]]:
    """(text, mentions) of each paragraph, by the same rules, via mwparserfromhell."""
    import mwparserfromhell

    if not wikitext or is_redirect(wikitext):
        return []
    code = mwparserfromhell.parse(wikitext)
    targets: list[str] = []
    rendered = _render(code.nodes, targets, False)
    paragraphs: list[tuple[str, list[tuple[int, int, str, str]]]] = []
    run: list[str] = []
    target_at = 0

    def flush() -> None:
        nonlocal target_at
        if not run:
            return
        raw = "\n".join(run)
        count = raw.count(_LINK_OPEN)
        plain, mentions = _finish(raw, targets[target_at : target_at + count])
        target_at += count
        run.clear()
        if plain:
            paragraphs.append((plain, mentions))

    for line in rendered.split("\n"):
        kind = _line_kind(line)
        if kind == "text":
            run.append(line)
            continue
        if kind == "transparent":
            continue
        flush()
        target_at += line.count(_LINK_OPEN)
    flush()
    return paragraphs
