"""Wikitext -> plain-text paragraphs with link mentions (docs/semantics.md §1.1 Passages,
§1.2 item 6).

A fast scanner, not a full MediaWiki parser: three linear passes over the page find
opaque regions (comments, extension tags, templates, tables, file links), then logical
lines outside them are classified and runs of text lines are cleaned into paragraphs.
Every regex is possessive or bounded so adversarial input stays linear in time.
The rules are documented in docs/wikitext.md; `emerge_lib.text.reference` is an independent
mwparserfromhell implementation of the same rules used to check this one.
"""

from __future__ import annotations

import hashlib
import html
import re
from dataclasses import dataclass, field

from emerge_lib.text.titles import (
    LANGUAGE_PREFIXES,
    is_redirect,
    link_namespace,
    name_set,
    normalize_title,
    redirect_target,
)

__all__ = [
    "Mention",
    "Paragraph",
    "extract_paragraphs",
    "is_redirect",
    "markup_ratio",
    "normalize_title",
    "paragraph_hash",
    "redirect_target",
]

MARKUP_CHARS = "{}[]|=<>"

# An opaque span of the page: (start, end, kind, inner start, inner end).
Region = tuple[int, int, int, int, int]


@dataclass(frozen=True, slots=True)
class Mention:
    """A link anchor in a paragraph's plain text: `text[start:end] == anchor`."""

    start: int
    end: int
    anchor: str
    target: str  # normalized article title (not yet redirect-resolved)


@dataclass(frozen=True, slots=True)
class Paragraph:
    """One plain-text paragraph of a revision; `hash` is its identity across revisions."""

    index: int  # position among the paragraphs extracted from the revision
    block_index: int  # index of the blank-line-separated raw block it came from
    text: str
    mentions: list[Mention] = field(default_factory=list)
    tokens: int = 0
    markup_ratio: float = 0.0
    hash: str = ""
    raw_start: int = 0  # the raw block's character span in the wikitext
    raw_end: int = 0


def paragraph_hash(text: str) -> str:
    """Stable identity of a whitespace-normalized plain text (16 hex digits of BLAKE2b)."""
    return hashlib.blake2b(text.encode("utf-8"), digest_size=8).hexdigest()


def markup_ratio(raw: str) -> float:
    """Share of the characters `{ } [ ] | = < >` in a raw wikitext block."""
    if not raw:
        return 0.0
    return sum(raw.count(ch) for ch in MARKUP_CHARS) / len(raw)


# --------------------------------------------------------------------------------------
# Pass 1: preprocessor regions (comments, extension tags, templates), as MediaWiki's
# preprocessor sees them: comments and tag bodies are opaque to brace matching.

# Extension tags whose content is not paragraph text (dropped with their content).
_DROP_TAGS = name_set(
    """
    ref references math chem ce gallery pre syntaxhighlight source score timeline imagemap
    hiero graph templatedata templatestyles mapframe maplink inputbox categorytree section
    indicator charinsert poem includeonly dynamicpagelist rss quiz phonos langconvert
    """
)
_EXT_TAGS = _DROP_TAGS | {"nowiki"}

# Region kinds.
_DROP, _COMMENT, _NOWIKI, _TEMPLATE, _TABLE = 0, 1, 2, 3, 4

_PRE_TOKEN = re.compile(
    r"<!--|<(" + "|".join(sorted(_EXT_TAGS, key=len, reverse=True)) + r")(?=[\s/>])"
    r"|\{\{++|\}\}++",
    re.IGNORECASE,
)
_TAG_REST = re.compile(r"[^<>]*+>")  # attributes stop at `<`: a miss costs O(1) amortized
_COMMENT_END = "-->"


class _CloseFinder:
    """Finds the next `</name>` after a position; remembers misses so repeated unclosed
    tags cost O(1) each (linear total instead of quadratic)."""

    __slots__ = ("_text", "_patterns", "_next")

    def __init__(self, text: str) -> None:
        self._text = text
        self._patterns: dict[str, re.Pattern[str]] = {}
        self._next: dict[str, tuple[int, int, int]] = {}  # name -> (from, start, end)

    def find(self, name: str, pos: int) -> tuple[int, int] | None:
        cached = self._next.get(name)
        if cached is not None and cached[0] <= pos and (cached[1] < 0 or cached[1] >= pos):
            return None if cached[1] < 0 else (cached[1], cached[2])
        pattern = self._patterns.get(name)
        if pattern is None:
            pattern = re.compile(r"</" + name + r"\s*>", re.IGNORECASE)
            self._patterns[name] = pattern
        match = pattern.search(self._text, pos)
        if match is None:
            self._next[name] = (pos, -1, -1)
            return None
        self._next[name] = (pos, match.start(), match.end())
        return match.start(), match.end()


def _preprocess(text: str) -> list[Region]:
    """Regions (start, end, kind, inner_start, inner_end) of comments, extension tags and
    templates, possibly nested; unclosed `{{` stays literal as in MediaWiki."""
    regions: list[Region] = []
    closes = _CloseFinder(text)
    stack: list[list[int]] = []  # [position of the brace run, braces left]
    n = len(text)
    pos = 0
    search = _PRE_TOKEN.search
    while True:
        match = search(text, pos)
        if match is None:
            break
        start = match.start()
        token = match.group()
        first = token[0]
        if token == "<!--":
            close = text.find(_COMMENT_END, start + 4)
            end = n if close < 0 else close + 3  # unclosed: runs to the end, as MediaWiki
            regions.append((start, end, _COMMENT, end, end))
            pos = end
        elif first == "<":
            name = match.group(1).lower()
            rest = _TAG_REST.match(text, match.end())
            if rest is None:
                pos = match.end()
                continue
            open_end = rest.end()
            if text[open_end - 2] == "/":  # self-closing <ref name="x" />
                regions.append((start, open_end, _DROP, open_end, open_end))
                pos = open_end
                continue
            closing = closes.find(name, open_end)
            if closing is None:  # unclosed: the tag is literal text (removed when cleaning)
                pos = open_end
                continue
            kind = _NOWIKI if name == "nowiki" else _DROP
            regions.append((start, closing[1], kind, open_end, closing[0]))
            pos = closing[1]
        elif first == "{":
            stack.append([start, len(token)])
            pos = match.end()
        else:
            remaining = len(token)
            at = start
            while remaining >= 2 and stack:
                entry = stack[-1]
                braces = entry[1]
                take = 3 if remaining >= 3 and braces >= 3 else 2
                regions.append(
                    (entry[0] + braces - take, at + take, _TEMPLATE, entry[0] + braces, at)
                )
                at += take
                remaining -= take
                entry[1] = braces - take
                if entry[1] < 2:
                    stack.pop()
            pos = match.end()
    return regions


def _outermost(regions: list[Region]) -> list[Region]:
    """Keep outermost regions; partially overlapping ones are merged into a dropped span."""
    regions.sort(key=lambda r: (r[0], -r[1]))
    merged: list[Region] = []
    for region in regions:
        if merged and region[0] < merged[-1][1]:
            last = merged[-1]
            if region[1] > last[1]:
                merged[-1] = (last[0], region[1], _DROP, region[1], region[1])
            continue
        merged.append(region)
    return merged


# --------------------------------------------------------------------------------------
# Pass 2: structure outside preprocessor regions: tables and file/image links (whose
# captions may hold nested links and line breaks).

_TABLE_TOKENS = r"^[ \t:]*+\{\||^[ \t]*+\|(?=\})"
# Outside file links only table marks and file-link starts matter (ordinary links are
# left to the inline cleaner); inside one, every `[[` and `]]` is followed.
_STRUCT_IDLE = re.compile(
    _TABLE_TOKENS + r"|\[\[(?=[ \t_]*+(?i:file|image)[ \t_]*+:)", re.MULTILINE
)
_STRUCT_IN_FILE = re.compile(_TABLE_TOKENS + r"|\[\[|\]\]", re.MULTILINE)
_TABLE_END_TEMPLATES = frozenset({"end", "s-end", "col-end", "end table", "table end", "endtable"})
_TEMPLATE_NAME = re.compile(r"\{\{\s*+([^|{}\n]*+)")
_LINK_TARGET = re.compile(r"[^\[\]|\n<>{}]*+")


def _structure(text: str, pre: list[Region]) -> list[Region]:
    """Table and file-link regions found in the gaps between preprocessor regions."""
    regions: list[Region] = []
    n = len(text)
    table_depth = 0
    table_start = 0
    links: list[tuple[int, bool]] = []  # `[[` open since a file link: (position, is a file)
    closed_since_open = True  # a `]]` was seen since the last `[[`
    gap_start = 0
    for i in range(len(pre) + 1):
        gap_end = pre[i][0] if i < len(pre) else n
        pos = gap_start
        while pos < gap_end:
            match = (_STRUCT_IN_FILE if links else _STRUCT_IDLE).search(text, pos, gap_end)
            if match is None:
                break
            token = match.group()
            pos = match.end()
            if token.endswith("{|"):
                if table_depth == 0:
                    table_start = match.start()
                table_depth += 1
            elif token.endswith("|"):  # `|` of a `|}` at line start
                if table_depth > 0 and pos < n and text[pos] == "}":
                    pos += 1
                    table_depth -= 1
                    if table_depth == 0:
                        regions.append((table_start, pos, _TABLE, pos, pos))
            elif token == "[[":
                # MediaWiki extends an open file link over the following `[[` pieces
                # only while each piece holds a `]]`; otherwise the file link is literal.
                if links and not closed_since_open and not links[-1][1]:
                    links.clear()
                target = _LINK_TARGET.match(text, pos)
                assert target is not None  # the pattern matches the empty string too
                is_file = link_namespace(target.group()) == "file"
                if links or is_file:
                    links.append((match.start(), is_file))
                closed_since_open = False
            else:  # `]]`, inside a file link
                closed_since_open = True
                start, is_file = links.pop()
                if is_file:
                    regions.append((start, pos, _DROP, pos, pos))
        if i < len(pre):
            region = pre[i]
            if table_depth > 0 and region[2] == _TEMPLATE:
                name = _TEMPLATE_NAME.match(text, region[0])
                if name and name.group(1).strip().lower().replace("_", " ") in _TABLE_END_TEMPLATES:
                    table_depth -= 1
                    if table_depth == 0:
                        regions.append((table_start, region[1], _TABLE, region[1], region[1]))
            gap_start = region[1]
    if table_depth > 0:  # unclosed table: MediaWiki keeps the rest of the page inside it
        regions.append((table_start, n, _TABLE, n, n))
    return regions


# --------------------------------------------------------------------------------------
# Pass 3: logical lines (split at newlines outside regions) and their classification.

_BLANK, _TEXT, _MARKUP, _TRANSPARENT, _SKIP = range(5)

_HTML_LIST_LINE = re.compile(r"</?(?:li|dd|dt|tr|td|th)\b", re.IGNORECASE)

_INTERLANGUAGE = "|".join(sorted((re.escape(p) for p in LANGUAGE_PREFIXES), key=len, reverse=True))
# What renders as nothing: whitespace, tags, categories, interlanguage links,
# behaviour switches, quote marks. A line is text when something else follows.
_INVISIBLE = re.compile(
    r"(?:\s++|<[^<>\n]*+>|'{2,}+|(?-i:__[A-Z]++__)"
    r"|\[\[[ \t_]*+(?:category|" + _INTERLANGUAGE + r")[ \t_]*+:[^\[\]\n]*+\]\])*+",
    re.IGNORECASE,
)


def _lines(text: str, regions: list[Region]) -> list[tuple[int, int, int, int]]:
    """Logical lines (start, end, first region index, end region index) split at newlines
    that are outside every region."""
    lines: list[tuple[int, int, int, int]] = []
    line_start = 0
    first_region = 0
    n = len(text)
    for i in range(len(regions) + 1):
        gap_start = regions[i - 1][1] if i else 0
        gap_end = regions[i][0] if i < len(regions) else n
        newline = text.find("\n", gap_start, gap_end)
        while newline >= 0:
            lines.append((line_start, newline, first_region, i))
            line_start = newline + 1
            first_region = i
            newline = text.find("\n", line_start, gap_end)
    lines.append((line_start, n, first_region, len(regions)))
    return lines


def _classify(text: str, line: tuple[int, int, int, int], regions: list[Region]) -> int:
    """Whether a logical line is paragraph text, a break, or transparent (comments only)."""
    start, end, r0, r1 = line
    if start == end or (r0 == r1 and text[start:end].isspace()):
        return _BLANK
    first_at = start
    region = r0
    while region < r1 and regions[region][0] == first_at and regions[region][2] == _COMMENT:
        first_at = regions[region][1]  # comments go before the line is looked at
        region += 1
    first = text[first_at] if first_at < end else " "
    if first in "*#:;=":
        return _SKIP  # list item, indentation, definition, heading
    if first == "<" and _HTML_LIST_LINE.match(text, first_at, end):
        return _SKIP  # an HTML list item or table row
    if text.startswith("----", first_at):
        return _SKIP  # horizontal rule
    visible = False
    only_comments = True
    pos = start
    for i in range(r0, r1 + 1):
        gap_end = regions[i][0] if i < r1 else end
        if pos < gap_end:
            invisible = _INVISIBLE.match(text, pos, gap_end)
            assert invisible is not None  # the pattern matches the empty string too
            if invisible.end() < gap_end:
                visible = True
                break
            if not text[pos:gap_end].isspace():
                only_comments = False
        if i < r1:
            if regions[i][2] == _NOWIKI and regions[i][4] > regions[i][3]:
                visible = True
                break
            if regions[i][2] != _COMMENT:
                only_comments = False
            pos = regions[i][1]
    if visible:
        if first in " \t":
            return _SKIP  # a line starting with a space is preformatted text
        return _TEXT
    if only_comments:
        return _BLANK if text[start:end].isspace() else _TRANSPARENT
    return _MARKUP


# --------------------------------------------------------------------------------------
# Inline cleaning of a paragraph (its regions already removed).

# Private-use stand-ins for markup characters inside <nowiki>, mapped back at the end;
# one character each so offsets are unchanged.
_NOWIKI_ESCAPE = str.maketrans({c: chr(0xE000 + ord(c)) for c in "[]{}<>|'_"})
_NOWIKI_UNESCAPE = str.maketrans({chr(0xE000 + ord(c)): c for c in "[]{}<>|'_"})

_PROTOCOLS = (
    r"(?:https?|ftps?|mailto|news|irc|ircs|gopher|nntp|telnet|worldwind|svn|git|mms|sftp|"
    r"ssh|xmpp|sips?|tel|urn|geo|magnet|matrix|bitcoin):|//"
)
_INLINE_TOKEN = re.compile(
    # the common link, `[[Title|plain label]]trail`, in one step (groups 1-3)
    r"\[\[([^\[\]|\n<>{}'&_\x00]*+)(?:\|([^\[\]\n<>{}'&_\x00]*+))?\]\]([a-z]*+)"
    r"|\[\[|\[(?=(?i:" + _PROTOCOLS + r"))|'{2,}+|</?[A-Za-z][A-Za-z0-9]*+(?:[\s/][^<>]*+)?>"
    r"|&(?:#[0-9]{1,7}|#[xX][0-9a-fA-F]{1,6}|[A-Za-z][A-Za-z0-9]{1,31});|__[A-Z]++__"
)
_WIKILINK = re.compile(r"\[\[([^\[\]|\n<>{}]*+)(?:\|((?:[^\[\]]|\[(?!\[)|\](?!\]))*+))?\]\]")
_EXTLINK = re.compile(
    r"\[(?:" + _PROTOCOLS + r")[^\]\s<>\"\[]*+(?:[ \t\u3000]++([^\[\]\n]*+))?\]",
    re.IGNORECASE,
)
_LINK_TRAIL = re.compile(r"[a-z]++")
_TAG_NAME = re.compile(r"</?([A-Za-z][A-Za-z0-9]*+)")

# HTML tags MediaWiki allows (Sanitizer); the tag is removed, its content kept.
_HTML_TAGS = _EXT_TAGS | name_set(
    """
    abbr b bdi bdo big blockquote br caption center cite code data dd del dfn div dl dt em
    font h1 h2 h3 h4 h5 h6 hr i ins kbd li link mark meta ol p q rb rp rt rtc ruby s samp
    small span strike strong sub sup table td th time tr tt u ul var wbr noinclude
    onlyinclude includeonly
    """
)
# Tags that separate words when removed.
_BLOCK_TAGS = name_set(
    "br hr p div blockquote center li ul ol dl dd dt table tr td th caption h1 h2 h3 h4 h5 h6"
)


# Stands where a template, tag or table was removed: renders as nothing, but keeps the
# markup on both sides apart (`''{{lang|la|x}}''` is two italic marks, not four quotes).
_GAP = "\x00"


class _Out:
    """Collects plain text with whitespace normalized on the fly, so mention offsets are
    final as soon as they are recorded."""

    __slots__ = ("parts", "length", "pending", "mentions", "literal_quotes")

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.length = 0
        self.pending = False
        self.mentions: list[tuple[int, int, str]] = []
        self.literal_quotes: frozenset[int] = frozenset()

    def add(self, s: str) -> int:
        """Append text; returns where its first word landed, or -1 if it was only spaces."""
        if _GAP in s:
            s = s.replace(_GAP, "")
        words = s.split()
        if not words:
            if s:
                self.pending = True
            return -1
        if self.length and (self.pending or s[0].isspace()):
            self.parts.append(" ")
            self.length += 1
        start = self.length
        chunk = words[0] if len(words) == 1 else " ".join(words)
        self.parts.append(chunk)
        self.length += len(chunk)
        self.pending = s[-1].isspace()
        return start


_QUOTE_RUN = re.compile(r"'{2,}+")


def _apostrophes_kept(s: str) -> frozenset[int]:
    """Start positions of the bold marks that MediaWiki's doQuotes renders as an apostrophe
    plus an italic mark: on a line with an odd number of both bold and italic marks, the
    first bold after a one-letter word, else after a longer word, else after a space."""
    kept: set[int] = set()
    line_start = 0
    for line in s.split("\n"):
        bold: list[int] = []
        italics = bolds = 0
        for run in _QUOTE_RUN.finditer(line):
            count = len(run.group())
            if count == 2:
                italics += 1
            elif count in (3, 4):
                bolds += 1
                bold.append(run.start())
            else:
                italics += 1
                bolds += 1
        if italics % 2 and bolds % 2:
            choice: dict[str, int] = {}
            for at in bold:
                x1 = line[at - 1] if at >= 1 else ""
                x2 = line[at - 2] if at >= 2 else ""
                kind = "space" if x1 == " " else "single" if x2 == " " else "multi"
                choice.setdefault(kind, at)
            for kind in ("single", "multi", "space"):
                if kind in choice:
                    kept.add(line_start + choice[kind])
                    break
        line_start += len(line) + 1
    return frozenset(kept)


def _emit(s: str, pos: int, end: int, out: _Out, in_link: bool) -> int:
    """Clean s[pos:end] into out; returns the first word's offset (or -1)."""
    first = -1
    search = _INLINE_TOKEN.search
    while pos < end:
        match = search(s, pos, end)
        token_start = match.start() if match else end
        if token_start > pos:
            at = out.add(s[pos:token_start])
            if first < 0:
                first = at
        if match is None:
            break
        token = match.group()
        pos = match.end()
        at = -1
        lead = token[0]
        title = match.group(1)
        if title is not None:
            at = _emit_simple_link(match, out) if not in_link else out.add(token)
        elif token == "[[":
            link = None if in_link else _WIKILINK.match(s, token_start, end)
            if link is None:
                at = out.add("[[")
            else:
                at, pos = _emit_link(s, link, end, out)
        elif lead == "[":
            ext = _EXTLINK.match(s, token_start, end)
            if ext is None:
                at = out.add("[")
            else:
                pos = ext.end()
                if ext.group(1):
                    at = _emit(s, ext.start(1), ext.end(1), out, True)
        elif lead == "'":
            count = len(token)
            literal = count - 5 if count > 5 else 1 if count == 4 else 0
            if token_start in out.literal_quotes:
                literal += 1
            if literal:
                at = out.add("'" * literal)
        elif lead == "<":
            tag = _TAG_NAME.match(token)
            assert tag is not None  # a token that opens with "<" is a tag (_TOKEN)
            name = tag.group(1).lower()
            if name not in _HTML_TAGS:
                at = out.add(token)
            elif name in _BLOCK_TAGS:
                out.add(" ")
        elif lead == "&":
            decoded = _ENTITIES.get(token)
            if decoded is None:
                decoded = _ENTITIES.setdefault(token, html.unescape(token))
            at = out.add(decoded)
        # `__NOTOC__`-style behaviour switches render as nothing
        if first < 0 and at >= 0:
            first = at
    return first


_ENTITIES: dict[str, str] = {}


def _emit_simple_link(match: re.Match[str], out: _Out) -> int:
    """Emit a link whose title and label need no cleaning; same rules as `_emit_link`."""
    title, label, trail = match.groups()
    if not title.strip():
        return out.add(match.group())
    kind = link_namespace(title)
    if kind in ("file", "category", "interlanguage"):
        return out.add(trail) if trail else -1
    if label is None or not label.strip():
        label = title.strip().removeprefix(":")
    first = out.add(label + trail if trail else label)
    if first >= 0 and kind is None:
        target = normalize_title(title)
        if target is not None:
            out.mentions.append((first, out.length, target))
    return first


def _emit_link(s: str, link: re.Match[str], end: int, out: _Out) -> tuple[int, int]:
    """Emit one `[[...]]` link with its trail (`[[dog]]s`); returns the first word's
    offset (or -1) and where scanning resumes."""
    title = link.group(1)
    if _GAP in title:
        title = title.replace(_GAP, "")
    if not title.strip():
        return out.add(link.group()), link.end()
    kind = link_namespace(title)
    if kind in ("file", "category", "interlanguage"):
        return -1, link.end()  # not rendered inline; following letters stay plain text
    label = link.group(2)
    if label is not None and label.strip():
        text_start, text_end = link.start(2), link.end(2)
    else:  # `[[Target]]` shows the target as written, without a leading colon
        text_start, text_end = link.start(1), link.end(1)
        while text_start < text_end and s[text_start] in " \t":
            text_start += 1
        if text_start < text_end and s[text_start] == ":":
            text_start += 1
    first = _emit(s, text_start, text_end, out, True)
    resume = link.end()
    trail = _LINK_TRAIL.match(s, resume, end)
    if trail is not None:
        resume = trail.end()
        at = out.add(trail.group())
        if first < 0:
            first = at
    if first >= 0 and kind is None:
        target = normalize_title(title)
        if target is not None:
            out.mentions.append((first, out.length, target))
    return first, resume


def _clean(
    text: str, start: int, end: int, regions: list[Region], r0: int, r1: int
) -> tuple[str, list[Mention]]:
    """Plain text and mentions of the raw span text[start:end] whose regions are r0..r1-1."""
    pieces: list[str] = []
    pos = start
    has_nowiki = False
    for i in range(r0, r1):
        region = regions[i]
        if region[0] > pos:
            pieces.append(text[pos : region[0]])
        if region[2] == _NOWIKI:
            pieces.append(text[region[3] : region[4]].translate(_NOWIKI_ESCAPE))
            has_nowiki = True
        elif region[2] != _COMMENT:
            pieces.append(_GAP)
        pos = region[1]
    if end > pos:
        pieces.append(text[pos:end])
    masked = "".join(pieces)
    out = _Out()
    if "'''" in masked:
        out.literal_quotes = _apostrophes_kept(masked)
    _emit(masked, 0, len(masked), out, False)
    plain = "".join(out.parts)
    if has_nowiki:
        plain = plain.translate(_NOWIKI_UNESCAPE)
    mentions = [Mention(a, b, plain[a:b], target) for a, b, target in out.mentions]
    return plain, mentions


def _regions(text: str) -> list[Region]:
    """All outermost opaque regions of a page, sorted and non-overlapping."""
    pre = _outermost(_preprocess(text))
    structure = _structure(text, pre)
    if not structure:
        return pre
    return _outermost(pre + structure)


def extract_paragraphs(wikitext: str) -> list[Paragraph]:
    """The plain-text paragraphs of a revision, in page order, with their mentions.

    A paragraph is a maximal run of text lines; blank lines, headings, list items,
    preformatted lines and lines holding only templates, tables, files or categories end
    it. Paragraphs whose plain text is empty are not returned. Redirect pages have none.
    """
    if not wikitext or is_redirect(wikitext):
        return []
    regions = _regions(wikitext)
    lines = _lines(wikitext, regions)
    paragraphs: list[Paragraph] = []
    block_index = 0
    previous_blank = True
    run: list[tuple[int, int, int, int]] = []
    run_block = 0

    def flush() -> None:
        if not run:
            return
        start, _, r0, _ = run[0]
        _, end, _, r1 = run[-1]
        # A multi-line template or table that opens the run (an infobox glued to the
        # lead) is not part of the paragraph's raw block.
        while (
            r0 < r1 and regions[r0][0] == start and wikitext.find("\n", start, regions[r0][1]) >= 0
        ):
            start = regions[r0][1]
            r0 += 1
            while start < end and wikitext[start] in " \t\n":
                start += 1
        plain, mentions = _clean(wikitext, start, end, regions, r0, r1)
        run.clear()
        if not plain:
            return
        paragraphs.append(
            Paragraph(
                index=len(paragraphs),
                block_index=run_block,
                text=plain,
                mentions=mentions,
                tokens=plain.count(" ") + 1,
                markup_ratio=markup_ratio(wikitext[start:end]),
                hash=paragraph_hash(plain),
                raw_start=start,
                raw_end=end,
            )
        )

    for line in lines:
        kind = _classify(wikitext, line, regions)
        if kind == _BLANK:
            flush()
            if not previous_blank:
                block_index += 1
            previous_blank = True
            continue
        previous_blank = False
        if kind == _TEXT:
            if not run:
                run_block = block_index
            run.append(line)
        elif kind != _TRANSPARENT:
            flush()
    flush()
    return paragraphs
