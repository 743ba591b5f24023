"""Unlinked repeat mentions (their s03 ``coreference_regex``): later plain-text occurrences
of a revision's earlier anchors become mentions, as the authors' expression makes them."""

from __future__ import annotations

import random
import re

import pytest

from emerge_lib.text.repeats import Span, anchor_pool, repeat_mentions

pytestmark = pytest.mark.unit


def _spans(text: str, *links: tuple[str, str]) -> list[Span]:
    """The spans of ``links`` (anchor, target), each at the anchor's first occurrence."""
    return [Span(text.index(a), text.index(a) + len(a), a, t) for a, t in links]


def test_the_title_and_earlier_anchors_are_found_outside_links_in_their_order() -> None:
    first = "Aarhus University lies in Aarhus, a city of Denmark."
    earlier = [_spans(first, ("Aarhus", "Aarhus"), ("Denmark", "Denmark"))]
    pool = anchor_pool("Aarhus University", earlier)
    assert list(pool) == ["Aarhus University", "Aarhus", "Denmark"]
    text = "The Aarhus University campus faces Aarhus and the Kingdom of Denmark; Aarhusian art."
    links = _spans(text, ("Kingdom of Denmark", "Denmark"))
    got = repeat_mentions(text, links, pool)
    assert [(text[m.start:m.end], m.target) for m in got] == [
        ("Aarhus University", "Aarhus University"),  # the title: the first alternative
        ("Aarhus", "Aarhus"),
        ("Aarhus", "Aarhus"),  # inside "Aarhusian": no word boundary, as in theirs
    ]  # "Denmark" inside the link to the Kingdom is not matched
    assert all(text[m.start:m.end] == m.anchor for m in got)


def test_the_first_alternative_wins_not_the_longest_and_a_later_link_retargets() -> None:
    earlier = [[Span(0, 6, "Aarhus", "Aarhus")],
               [Span(0, 17, "Aarhus University", "Aarhus University"),
                Span(20, 26, "Aarhus", "Aarhus Municipality")]]
    pool = anchor_pool(None, earlier)
    assert pool == {"Aarhus": "Aarhus Municipality", "Aarhus University": "Aarhus University"}
    got = repeat_mentions("Aarhus University grew.", [], pool)
    assert got == [Span(0, 6, "Aarhus", "Aarhus Municipality")]


def test_nothing_without_an_earlier_new_paragraph() -> None:
    assert anchor_pool("Aarhus", []) == {}
    assert repeat_mentions("Aarhus again.", [], {}) == []
    assert anchor_pool("T", [[Span(0, 0, "", "X")]]) == {"T": "T"}  # no empty anchor


def _wikitext(text: str, links: list[Span]) -> str:
    out, cursor = [], 0
    for m in sorted(links):
        out += [text[cursor:m.start], f"[[{m.target}|{m.anchor}]]"]
        cursor = m.end
    return "".join([*out, text[cursor:]])


def _theirs(wikitext: str, pool: dict[str, str]) -> list[tuple[str, str]]:
    """The authors' complete_with_coref_regex (EXTR:563-623), restated: the links it adds,
    read back from the replaced wikitext."""
    pattern = r"(?<!\[\[)(" + "|".join(re.escape(a) for a in pool) + r")(?![^\[]*\]\])"
    marked = re.sub(pattern, lambda m: f"[[\x00{pool[m.group(0)]}|{m.group(0)}]]", wikitext)
    return [(t, a) for t, a in re.findall(r"\[\[\x00([^|]*)\|([^\]]*)\]\]", marked)]


@pytest.mark.parametrize("seed", range(40))
def test_the_same_links_as_their_expression_on_the_wikitext(seed: int) -> None:
    rng = random.Random(seed)
    words = ["Aarhus", "Aarhus University", "Denmark", "art", "Art", "of", "the", "Jutland",
             "Aarhusian", "city", "University", "Den"]
    pool = {a: f"T{i}" for i, a in enumerate(rng.sample(words[:8], rng.randint(1, 6)))}
    tokens = [rng.choice(words) for _ in range(rng.randint(5, 30))]
    text = " ".join(tokens)
    links, cursor = [], 0
    for _ in range(rng.randint(0, 4)):  # some tokens are links
        word = rng.choice(tokens)
        at = text.find(word, cursor)
        if at < 0:
            break
        links.append(Span(at, at + len(word), word, f"L{len(links)}"))
        cursor = at + len(word) + 1
    got = repeat_mentions(text, links, pool)
    assert [(m.target, m.anchor) for m in got] == _theirs(_wikitext(text, links), pool)
