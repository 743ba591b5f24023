"""Passages (emerge_lib/transform/passages.py) on small hand-made tables (kits/focusedkit.py): each rule on a case a
reader can check by eye (the generated worlds test them together, at scale), under both settings:
docs/semantics.md §1.1-1.2 (``DESIGN``) and what the released data shows (the defaults, §1.3).

The snapshot is t = 2024-01-01 with two windows of 7 days (τ_1 = day 7, τ_2 = day 14);
the KG stability span is one hour here, so presence is the raw timeline's, with touching
intervals joined (stability has its own tests). Every item was created on day -100 but
Q12, created on day 2."""

from __future__ import annotations

from focusedkit import (
    DESIGN,
    RELEASED,
    with_passages,
)
from tablekit import day

from emerge_lib.catalog import Catalog


def passages_of(catalog: Catalog) -> set[tuple]:
    return {(r["window"], r["passage_id"].split("-", 1)[1], tuple(sorted(
        m["qid"] for m in r["mentions"] if m["qid"]))) for r in catalog.read_arrow("passages").to_pylist()}


DESIGN_PASSAGES = {
    (1, "new-w1", ("Q2", "Q3")), (2, "new-w2", ("Q2", "Q3")),
    (1, "one-link", ("Q3",)),  # the article's own item Q2 makes it two
    (1, "ee-kg", ("Q10",)), (1, "pair-q1-q5", ("Q1", "Q5")),
    (1, "x-ended", ("Q1",)), (1, "ee-kg-d", ("Q9",)), (1, "start-quals", ("Q7",)),
}


def test_passage_windows_filters_and_entities(kg: Catalog) -> None:
    catalog = with_passages(kg, DESIGN, "design")
    assert passages_of(catalog) == DESIGN_PASSAGES
    rows = {r["passage_id"].split("-", 1)[1]: r for r in catalog.read_arrow("passages").to_pylist()}
    assert (rows["one-link"]["page_title"], rows["one-link"]["page_qid"]) == ("Title 2", "Q2")
    assert rows["new-w2"]["rev_timestamp"] == day(9)


def test_cumulative_windows_hold_every_passage_new_since_t(kg_released: Catalog) -> None:
    catalog = with_passages(kg_released, RELEASED, "cumulative")
    later = {(2, key, qids) for w, key, qids in DESIGN_PASSAGES if w == 1}
    assert passages_of(catalog) == DESIGN_PASSAGES | later


def test_passage_filters_follow_the_configuration(kg: Catalog) -> None:
    catalog = with_passages(kg, {**DESIGN, "passages": {
        "windows": "first_appearance", "article_entity_counts": False, "min_tokens": 20,
        "max_tokens": 1001, "max_markup_ratio": 0.7}}, "filters")
    got = {key for _, key, _ in passages_of(catalog)}
    # "short" and "long" and "markup" now pass; the single-link ones do not
    assert got == {"new-w1", "new-w2", "short", "long", "markup", "pair-q1-q5"}


def _revision_of_title_4() -> list[dict]:
    """Page 4's paragraphs, several new in one revision (by paragraph index): the
    earlier ones' anchors (and the title) name later unlinked repeats."""
    from tablekit import paragraph, words

    def para(key: str, idx: int, first: float, removed: float | None, names: tuple[str, ...],
             linked: tuple[str, ...], n: int = 30) -> dict:
        return paragraph(4, key, words(n, *names), first, removed,
                         [(x, x) for x in linked], idx=idx)

    return [
        para("intro", 0, 3, None, ("Title 5", "Title 6"), ("Title 5", "Title 6")),
        para("repeat", 1, 3, None, ("Title 5", "Title 7"), ("Title 7",)),
        para("repeat-title", 2, 3, None, ("Title 4", "Title 6"), ()),
        para("other-revision", 1, 4, None, ("Title 5", "Title 7"), ("Title 7",)),
        para("short", 0, 5, None, ("Title 8",), ("Title 8",), n=10),  # not read: < 25 tokens
        para("after-short", 1, 5, None, ("Title 8", "Title 9"), ("Title 9",)),
        para("reverted-intro", 0, 6, 6.01, ("Title 1",), ("Title 1",)),  # read, then reverted
        para("after-reverted", 1, 6, None, ("Title 1", "Title 3"), ("Title 3",)),
    ]


def test_unlinked_repeats_of_the_revisions_earlier_anchors_are_mentions(kg: Catalog) -> None:
    """Their s03 coreference_regex: a plain "Title 5" after a paragraph of the same
    revision linked it names Q5; the page's title names its own item; a paragraph of
    another revision, or one the passage filter drops, lends no anchor; one reverted
    within minutes was read all the same. Off: only the links."""
    mine = {(w, key): qids for w, key, qids in (
        (1, "intro", ("Q5", "Q6")), (1, "repeat", ("Q5", "Q7")),
        (1, "repeat-title", ("Q4", "Q6")), (1, "other-revision", ("Q7",)),
        (1, "after-short", ("Q9",)), (1, "after-reverted", ("Q1", "Q3")))}
    # on explicitly: DESIGN lies over the no-selection-rules preset, which turns them off
    catalog = with_passages(kg, {**DESIGN, "passages": {**DESIGN["passages"],
                                                        "repeat_mentions": True}},
                            "repeats", paragraphs=_revision_of_title_4())
    page_4 = {p["paragraph_hash"] for p in _revision_of_title_4()}
    got = {(w, key): qids for w, key, qids in passages_of(catalog) if key in page_4}
    assert got == mine  # "short" and "reverted-intro" are no passages themselves
    rows = {r["passage_id"].split("-", 1)[1]: r for r in catalog.read_arrow("passages").to_pylist()}
    text = rows["repeat"]["text"]
    assert [(text[m["start"]:m["end"]], m["anchor"], m["target"], m["qid"])
            for m in rows["repeat"]["mentions"]] == [
        ("Title 5", "Title 5", "Title 5", "Q5"), ("Title 7", "Title 7", "Title 7", "Q7")]
    off = with_passages(kg, {**DESIGN, "passages": {**DESIGN["passages"],
                                                    "repeat_mentions": False}},
                        "no-repeats", paragraphs=_revision_of_title_4())
    got = {(w, key): qids for w, key, qids in passages_of(off) if key in page_4}
    del mine[1, "repeat-title"]  # Q6 and no more: too few entities
    assert got == {**mine, (1, "repeat"): ("Q7",), (1, "after-reverted"): ("Q3",)}
