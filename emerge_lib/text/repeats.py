"""Unlinked repeat mentions: Wikipedia links an entity where it first occurs, and later
plain-text occurrences of the same anchor name it too.

The authors' passage extraction (their s03 ``coreference_regex``, on in their run) keeps,
per revision, the anchors of the new paragraphs it has read so far (the page's title,
from the "Excerpt from the Wikipedia page describing [[title]]" prefix, then each
paragraph's links in order; a later link with the same anchor re-targets it) and, before
reading the next new paragraph's links, turns every occurrence of one of those anchors
outside a link into a link: one regular expression, the anchors in the order they were
first seen as alternatives, case-sensitive and without word boundaries (so an anchor
inside a longer word counts, as in theirs), not preceded by ``[[`` and not followed by
``]]`` before the next ``[``.

Here the paragraph is plain text with its link spans: the same expression runs over each
stretch of text between two links (no match can cross a link, in theirs either), and
each match becomes a mention of the anchor's target.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import NamedTuple

__all__ = ["Span", "anchor_pool", "repeat_mentions"]


class Span(NamedTuple):
    """A mention as the passages hold it: ``text[start:end] == anchor``."""

    start: int
    end: int
    anchor: str
    target: str


def anchor_pool(title: str | None, earlier: Iterable[Sequence[Span]]) -> dict[str, str]:
    """The anchors the authors' expression looks for in a paragraph: the page title (when
    any earlier new paragraph was read), then the anchors of ``earlier`` (the mentions of
    the revision's earlier new paragraphs, in paragraph order), each anchor at its first
    place, with the target it was last linked to."""
    pool: dict[str, str] = {}
    for mentions in earlier:
        if title and not pool:
            pool[title] = title
        for m in sorted(mentions, key=lambda m: (m.start, m.end)):
            if m.anchor:  # an empty alternative would match everywhere
                pool[m.anchor] = m.target
    return pool


def _expression(pool: dict[str, str]) -> re.Pattern[str]:
    alternatives = "|".join(re.escape(anchor) for anchor in pool)
    return re.compile(rf"(?<!\[\[)({alternatives})(?![^\[]*\]\])")


def repeat_mentions(text: str, mentions: Sequence[Span], pool: dict[str, str]) -> list[Span]:
    """The mentions the authors' expression adds to ``text`` (whose links are
    ``mentions``), in text order; none when ``pool`` is empty."""
    if not pool:
        return []
    expression = _expression(pool)
    found: list[Span] = []
    cursor = 0
    for gap_end, next_start in [*((m.start, m.end) for m in sorted(mentions)),
                                (len(text), len(text))]:
        if gap_end > cursor:
            for match in expression.finditer(text, cursor, gap_end):
                found.append(Span(match.start(), match.end(), match.group(0),
                                  pool[match.group(0)]))
        cursor = max(cursor, next_start)
    return found
