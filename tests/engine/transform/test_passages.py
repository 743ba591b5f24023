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
