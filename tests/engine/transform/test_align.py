"""Alignment (emerge_lib/transform/align.py) on small hand-made tables (kits/focusedkit.py): each rule on a case a
reader can check by eye (the generated worlds test them together, at scale), under both settings:
docs/semantics.md §1.1-1.2 (``DESIGN``) and what the released data shows (the defaults, §1.3).

The snapshot is t = 2024-01-01 with two windows of 7 days (τ_1 = day 7, τ_2 = day 14);
the KG stability span is one hour here, so presence is the raw timeline's, with touching
intervals joined (stability has its own tests). Every item was created on day -100 but
Q12, created on day 2."""

from __future__ import annotations

from typing import Any

import pytest
from focusedkit import (
    DESIGN,
    RELEASED,
    START_QUALIFIERS,
    with_passages,
)
from stagekit import run
from tablekit import T, day, page_row, paragraph, words

from emerge_lib.catalog import Catalog


def instances_of(catalog: Catalog) -> set[tuple]:
    return {(r["window"], r["passage_id"].split("-", 1)[1], r["op"], r["s"], r["p"], r["o"])
            for r in catalog.read_arrow("instances").to_pylist()}


DESIGN_INSTANCES = {
    # page 1 mentions Q1 (its own item), Q2, Q3
    (1, "new-w1", "X", "Q1", "P1", "Q2"),
    (1, "new-w1", "D", "Q1", "P2", "Q3"),
    (1, "new-w1", "E", "Q2", "P1", "Q3"),
    (2, "new-w2", "X", "Q1", "P1", "Q2"),
    (2, "new-w2", "D", "Q1", "P2", "Q3"),
    (2, "new-w2", "E", "Q2", "P1", "Q3"),
    # page 2 mentions Q2 and Q3
    (1, "one-link", "E", "Q2", "P1", "Q3"),
    # page 9 mentions Q9 and Q10: Q10 is emerging, Q2 is in V_t and not mentioned
    (1, "ee-kg", "EE-KG", "Q2", "P2", "Q10"),
    # page 3 mentions Q3 (its own item), Q1 and Q5: D, and not also X
    (1, "pair-q1-q5", "D", "Q1", "P4", "Q5"),
    (1, "pair-q1-q5", "D", "Q1", "P2", "Q3"),
    (1, "pair-q1-q5", "D", "Q3", "P2", "Q5"),
    # page 8 mentions Q8 and Q1
    (1, "x-ended", "X", "Q1", "P7", "Q8"),
    # page 12 mentions Q12 (new) and Q9: Q1 is old and not mentioned
    (1, "ee-kg-d", "EE-KG", "Q12", "P1", "Q1"),
    # page 6 mentions Q6 and Q7
    (1, "start-quals", "E", "Q6", "P1", "Q7"),
    (1, "start-quals", "E", "Q6", "P2", "Q7"),
    (1, "start-quals", "E", "Q6", "P3", "Q7"),
}


def test_alignment_of_every_operation(kg: Catalog) -> None:
    catalog = with_passages(kg, DESIGN, "design-align")
    assert instances_of(catalog) == DESIGN_INSTANCES
    labels = {(r["op"], r["s_label"], r["p_label"], r["o_label"])
              for r in catalog.read_arrow("instances").to_pylist()}
    assert ("EE-KG", "label Q2", "prop 2", "label Q10") in labels


@pytest.fixture(scope="module")
def aligned_released(kg_released: Catalog) -> Catalog:
    return with_passages(kg_released, RELEASED, "released-align")


def test_released_alignment_two_operation_triples_and_sources(aligned_released: Catalog) -> None:
    catalog = aligned_released
    window_1 = {r for r in DESIGN_INSTANCES if r[0] == 1} - {
        (1, "ee-kg", "EE-KG", "Q2", "P2", "Q10")}  # Q10 is not emerging: no EE-KG
    window_1 |= {(1, "ee-kg-d", "D", "Q12", "P1", "Q1")}  # the addition ended in the window
    # cumulative: window 1's passages again in window 2, where new-w2 joins them
    window_2 = {(2, *r[1:]) for r in window_1} | {r for r in DESIGN_INSTANCES if r[0] == 2}
    assert instances_of(catalog) == window_1 | window_2
    rows = {(r["window"], r["passage_id"].split("-", 1)[1], r["op"], r["s"], r["p"]): r
            for r in catalog.read_arrow("instances").to_pylist()}
    x = rows[(1, "x-ended", "X", "Q1", "P7")]
    assert (x["qualifier_pid"], x["qualifier_at"], x["source_delta_type"]) == ("P582", day(-5), None)
    sources = {k[2:]: r["source_delta_type"] for k, r in rows.items() if k[0] == 1}
    assert sources == {
        ("X", "Q1", "P1"): None,
        ("X", "Q1", "P7"): None,
        # Q1's article links to Q3 at τ_1 (its new paragraph): the intersection delta
        ("D", "Q1", "P2"): "wikipedia_intersection",
        # Q2's article gains a link to Q3 on day 2, with the triple
        ("E", "Q2", "P1"): "wikipedia_intersection",
        # Q3's article links to Q5 at τ_1
        ("D", "Q3", "P2"): "wikipedia_intersection",
        ("D", "Q1", "P4"): "all",  # Q1's article never links to Q5; nobody is new
        # Q12's article links to neither end: found in the delta of new entities
        ("EE-KG", "Q12", "P1"): "emerging", ("D", "Q12", "P1"): "emerging",
        # Q6's article gains its link to Q7 on day 2, with the triples
        ("E", "Q6", "P1"): "wikipedia_intersection", ("E", "Q6", "P2"): "wikipedia_intersection",
        ("E", "Q6", "P3"): "wikipedia_intersection",
    }


def test_subject_links_follow_the_configured_redirect_hops(kg_released: Catalog) -> None:
    """Q1's article links to Q5 through a redirect (a short paragraph, no passage of its
    own): the D (Q1, P4, Q5) is found by the intersection delta when one redirect may be
    followed (the default), and not when passages.max_redirect_hops is 0."""
    alias = paragraph(1, "alias-link", words(10, "Alias 5"), -10, None, [("Alias 5", "Alias 5")])
    catalog = with_passages(kg_released, RELEASED, "hops", pages=[page_row(50, "Alias 5", "Title 5")],
                            paragraphs=[alias])

    def source() -> str:
        (found,) = {r["source_delta_type"] for r in catalog.read_arrow("instances").to_pylist()
                    if (r["window"], r["op"], r["s"], r["p"]) == (1, "D", "Q1", "P4")}
        return found

    assert source() == "wikipedia_intersection"
    run(catalog, "align", T, **{**RELEASED, "passages": {"max_redirect_hops": 0}})
    assert source() == "all"


def release_lines(catalog: Catalog, key: str) -> dict[int, dict[str, Any]]:
    """The release line of passage ``key`` in each window (what the release stage writes
    from these rows, through the same pure function)."""
    from emerge_lib.formats.format import passage_record

    instances = catalog.read_arrow("instances").to_pylist()
    return {p["window"]: passage_record(p, [r for r in instances if r["passage_id"] == p["passage_id"]
                                            and r["window"] == p["window"]], T, p["window"], 7)
            for p in catalog.read_arrow("passages").to_pylist()
            if p["passage_id"].split("-", 1)[1] == key}


def test_release_reports_start_qualifiers_dated_inside_the_window(aligned_released: Catalog) -> None:
    """A P580 dated before t is not in ``qualifier_info``; one inside the cumulative window
    is, from the window that holds its date on."""
    lines = release_lines(aligned_released, "start-quals")
    assert set(lines) == {1, 2}
    got = {(w, t["triple"][1]): t["qualifier_info"] for w, line in lines.items()
           for t in line["tkgu_triples"]}
    want = {k: {} if pid is None else {
        "qualifier_qid": pid, "qualifier_label": "start time", "qualifier_date": f"{at:%Y-%m-%d}",
        "qualifier_timestamp": int(at.timestamp())} for k, (pid, at) in START_QUALIFIERS.items()}
    assert got == want


def test_ee_kg_and_d_triple_reports_the_end_qualifier(aligned_released: Catalog) -> None:
    """(Q12, P1, Q1) is added on day 2 with a P580 dated day 2 and a P582 dated day 5: one
    entry, ``["ee-kg-triples", "d-triples"]``, whose qualifier is the D's end qualifier (as
    the authors' released EE-KG+D triples show P582), not the addition's start."""
    for line in release_lines(aligned_released, "ee-kg-d").values():
        (triple,) = line["tkgu_triples"]
        assert triple["tkgu_operations"] == ["ee-kg-triples", "d-triples"]
        assert triple["qualifier_info"] == {
            "qualifier_qid": "P582", "qualifier_label": "end time", "qualifier_date": "2024-01-06",
            "qualifier_timestamp": int(day(5).timestamp())}
        assert triple["deprecation_signal"] == "qualifier:P582"
