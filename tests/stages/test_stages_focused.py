"""Deltas, passages and align on small hand-made tables: each rule on a case a reader can
check by eye (the generated worlds test them together, at scale), under both settings:
DESIGN.md §1.1-1.2 (``DESIGN``) and what the released data shows (the defaults, §1.3).

The snapshot is t = 2024-01-01 with two windows of 7 days (τ_1 = day 7, τ_2 = day 14);
the KG stability span is one hour here, so presence is the raw timeline's, with touching
intervals joined (stability has its own tests). Every item was created on day -100 but
Q12, created on day 2.
"""

from __future__ import annotations

from typing import Any

import pytest
from stagekit import run
from tablekit import T, day, item_row, page_row, paragraph, stmt, words

from emerge_lib.catalog import Catalog

# the authors' selection rules are off here (the no-selection-rules preset, under these
# settings): these cases test the delta and alignment semantics row by row (each rule has
# its own cases: test_selection_rules.py)
BASE = {"base": "no-selection-rules",
        "snapshots": {"timestamps": [T], "windows": 2, "window_days": 7},
        "stability": {"kg_hours": 1, "passage_minutes": 30}}
DESIGN = {**BASE, "passages": {"windows": "first_appearance"},
          "deltas": {"emerging": "not_in_snapshot", "deprecate_window_additions": False}}
RELEASED = BASE  # the defaults, but the selection rules


STATEMENTS = [
    stmt("Q1", "P1", "Q2", -50, None),  # unchanged: T_t, never in the delta
    stmt("Q1", "P2", "Q3", -50, 2),  # removed on day 2
    stmt("Q1", "P3", "Q4", -50, 9), stmt("Q1", "P3", "Q4", 9, None, rank="deprecated"),
    # an end qualifier dated day 3, added on day 5
    stmt("Q1", "P4", "Q5", -50, 5), stmt("Q1", "P4", "Q5", 5, None, end_at=3),
    # deprecated with an end qualifier inside window 1: the qualifier is the signal
    stmt("Q1", "P5", "Q6", -50, 1), stmt("Q1", "P5", "Q6", 1, None, rank="deprecated", end_at=2),
    # deprecated on day 3 (rank), then removed on day 10
    stmt("Q1", "P6", "Q7", -50, 3), stmt("Q1", "P6", "Q7", 3, 10, rank="deprecated"),
    stmt("Q1", "P7", "Q8", -50, None, end_at=-5),  # ended before t: still in T_t
    stmt("Q2", "P1", "Q3", 2, None),  # added: E
    # Q10 (created long ago) enters V on day 3: EE by V_t, E by its creation time
    stmt("Q2", "P2", "Q10", 1, None),
    stmt("Q11", "P1", "Q1", -50, None),  # Q11 leaves V on day 4: neither D nor X
    # one key, two statements: present throughout, no change
    stmt("Q3", "P1", "Q4", -50, 5, sid="a"), stmt("Q3", "P1", "Q4", -50, None, sid="b"),
    # one key, two statements: gone once the second ends on day 6
    stmt("Q3", "P2", "Q5", -50, 4, sid="a"), stmt("Q3", "P2", "Q5", 3, 6, sid="b"),
    stmt("Q4", "P1", "Q5", 8, None),  # added in window 2 only
    # added on day 2 with an end qualifier dated day 4: an addition, and (released) also D
    stmt("Q5", "P1", "Q6", 2, None, end_at=4),
    # Q12 is new (created day 2): its statement added then is EE, ended on day 5 as well;
    # it also starts (P580) on day 2: an EE-KG+D triple reports the D's end qualifier
    stmt("Q12", "P1", "Q1", 2, None, end_at=5, start_at=2),
    # additions with a start qualifier (P580): reported only when dated inside the
    # (cumulative) window: day -3 never, day 4 in both windows, day 9 in window 2 only
    stmt("Q6", "P1", "Q7", 2, None, start_at=-3),
    stmt("Q6", "P2", "Q7", 2, None, start_at=4),
    stmt("Q6", "P3", "Q7", 2, None, start_at=9),
]
ITEMS = [item_row(f"Q{i}", -100, None, f"Title {i}", i) for i in range(1, 10)] + [
    item_row("Q10", -100, 3, None, 100), item_row("Q10", 3, None, "Title 10", 101),
    item_row("Q11", -100, 4, "Title 11", 110), item_row("Q11", 4, None, None, 111),
    item_row("Q12", 2, None, "Title 12", 120, created=2),
]
PROPS = [{"pid": f"P{i}", "valid_from": day(-100), "valid_to": None, "rev_from": i,
          "label_en": f"prop {i}", "description_en": "d", "datatype": "wikibase-item"}
         for i in range(1, 8)] + [
    {"pid": pid, "valid_from": day(-100), "valid_to": None, "rev_from": int(pid[1:]),
     "label_en": label, "description_en": "d", "datatype": "time"}
    for pid, label in (("P580", "start time"), ("P582", "end time"))]


def kg_catalog(spark, folder, settings: dict[str, Any]) -> Catalog:
    catalog = Catalog(folder, spark)
    catalog.merge("statement_timeline", catalog.frame("statement_timeline", STATEMENTS))
    catalog.merge("item_timeline", catalog.frame("item_timeline", ITEMS))
    catalog.merge("property_timeline", catalog.frame("property_timeline", PROPS))
    for stage in ("stability", "snapshot", "deltas"):
        run(catalog, stage, None if stage == "stability" else T, **settings)
    return catalog


@pytest.fixture(scope="module")
def kg(tmp_path_factory, spark) -> Catalog:
    return kg_catalog(spark, tmp_path_factory.mktemp("focused") / "design", DESIGN)


@pytest.fixture(scope="module")
def kg_released(tmp_path_factory, spark) -> Catalog:
    return kg_catalog(spark, tmp_path_factory.mktemp("focused") / "released", RELEASED)


def deltas(catalog: Catalog) -> set[tuple]:
    return {(r["window"], r["s"], r["p"], r["o"], r["op"], r["signal"])
            for r in catalog.read_arrow("delta_triples").to_pylist()}


BOTH_WINDOWS = {("Q1", "P2", "Q3", "D", "removed"), ("Q1", "P4", "Q5", "D", "qualifier:P582"),
                ("Q2", "P1", "Q3", "E", None), ("Q3", "P2", "Q5", "D", "removed"),
                ("Q1", "P5", "Q6", "D", "qualifier:P582"), ("Q5", "P1", "Q6", "E", None),
                ("Q12", "P1", "Q1", "EE", None), ("Q6", "P1", "Q7", "E", None),
                ("Q6", "P2", "Q7", "E", None), ("Q6", "P3", "Q7", "E", None)}
ONE_WINDOW = {
    (1, "Q1", "P6", "Q7", "D", "rank"),  # rank over removed: both hold at τ_1
    (2, "Q1", "P6", "Q7", "D", "removed"),  # gone from s's state at τ_2
    (2, "Q1", "P3", "Q4", "D", "rank"),
    (2, "Q4", "P1", "Q5", "E", None),
}


def test_delta_operations_and_signals(kg: Catalog) -> None:
    both = BOTH_WINDOWS | {("Q2", "P2", "Q10", "EE", None)}  # Q10 is not in V_t
    assert deltas(kg) == {(w, *r) for r in both for w in (1, 2)} | ONE_WINDOW


def test_released_deltas_date_emerging_by_creation_and_end_window_additions(
        kg_released: Catalog) -> None:
    both = BOTH_WINDOWS | {
        ("Q2", "P2", "Q10", "E", None),  # Q10 existed before t: not emerging
        ("Q5", "P1", "Q6", "D", "qualifier:P582"),  # added and ended inside the window
        ("Q12", "P1", "Q1", "D", "qualifier:P582"),
    }
    assert deltas(kg_released) == {(w, *r) for r in both for w in (1, 2)} | ONE_WINDOW
    rows = {(r["window"], r["s"], r["op"]): r for r in kg_released.read_arrow("delta_triples").to_pylist()}
    d = rows[(1, "Q12", "D")]
    assert (d["emerging_head"], d["emerging_tail"]) == (True, False)  # the addition's flags
    assert (d["qualifier_pid"], d["qualifier_at"], d["lifespan_from"]) == ("P582", day(5), day(2))


def test_delta_details(kg: Catalog) -> None:
    rows = {(r["window"], r["s"], r["p"], r["o"]): r for r in kg.read_arrow("delta_triples").to_pylist()}
    ee = rows[(1, "Q2", "P2", "Q10")]
    assert (ee["emerging_head"], ee["emerging_tail"]) == (False, True)
    # the lifespan is the key's stable presence, from its statement on day 1
    assert (ee["lifespan_from"], ee["lifespan_to"]) == (day(1), None)
    d = rows[(2, "Q1", "P4", "Q5")]
    assert (d["qualifier_pid"], d["qualifier_at"]) == ("P582", day(3))
    assert (d["lifespan_from"], d["lifespan_to"]) == (day(-50), None)
    assert rows[(1, "Q2", "P1", "Q3")]["head_created_at"] == day(-100)
    kg_t = {(r["s"], r["p"], r["o"]) for r in kg.read_arrow("kg_triples").to_pylist()}
    assert ("Q1", "P7", "Q8") in kg_t and ("Q11", "P1", "Q1") in kg_t  # T_t
    assert ("Q2", "P2", "Q10") not in kg_t  # Q10 not in V_t


START_QUALIFIERS = {  # (window, p) -> the start qualifier an addition (Q6, p, Q7) reports
    (1, "P1"): (None, None), (2, "P1"): (None, None),  # P580 dated before t: never
    (1, "P2"): ("P580", day(4)), (2, "P2"): ("P580", day(4)),  # inside window 1 (and 2)
    (1, "P3"): (None, None), (2, "P3"): ("P580", day(9)),  # after τ_1: window 2 only
}


@pytest.mark.parametrize("fixture", ["kg", "kg_released"])
def test_start_qualifiers_only_when_dated_inside_the_window(fixture: str, request) -> None:
    catalog = request.getfixturevalue(fixture)
    got = {(r["window"], r["p"]): (r["qualifier_pid"], r["qualifier_at"])
           for r in catalog.read_arrow("delta_triples").to_pylist()
           if (r["s"], r["o"], r["op"]) == ("Q6", "Q7", "E")}
    assert got == START_QUALIFIERS


# -- passages ------------------------------------------------------------------------------
ARTICLE = {p: f"Title {p}" for p in range(1, 13)}  # page p is the article of item Qp
LINKS = [("Title 2", "Title 2"), ("Title 3", "Title 3")]
PARAGRAPHS = [
    paragraph(1, "new-w1", words(30, "Title 2", "Title 3"), 2, None, LINKS),  # window 1
    paragraph(1, "new-w2", words(30, "Title 2", "Title 3"), 9, None, LINKS),  # window 2
    paragraph(1, "old", words(30, "Title 2", "Title 3"), -10, None, LINKS),  # present at t
    paragraph(1, "reverted", words(30, "Title 2", "Title 3"), 3, 3.01, LINKS),  # 14 minutes
    paragraph(1, "gone-by-tau", words(30, "Title 2", "Title 3"), 4, 6, LINKS),  # not at τ_1
    paragraph(1, "short", words(24, "Title 2", "Title 3"), 2, None, LINKS),  # < 25 tokens
    paragraph(1, "long", words(1001, "Title 2", "Title 3"), 2, None, LINKS),  # > 1000 tokens
    paragraph(1, "markup", words(30, "Title 2", "Title 3"), 2, None, LINKS, markup=0.6),
    # one linked entity plus the article's own item: 2 only when the article counts
    paragraph(2, "one-link", words(30, "Title 3"), 2, None, [("Title 3", "Title 3")]),
    paragraph(9, "ee-kg", words(30, "Title 10"), 5, None, [("Title 10", "Title 10")]),
    paragraph(3, "pair-q1-q5", words(30, "Title 1", "Title 5"), 6, None,
              [("Title 1", "Title 1"), ("Title 5", "Title 5")]),
    # Q8's article mentions Q1: the X triple (Q1, P7, Q8) ended before t
    paragraph(8, "x-ended", words(30, "Title 1"), 3, None, [("Title 1", "Title 1")]),
    # Q12's article mentions Q9 only: (Q12, P1, Q1) is EE-KG here
    paragraph(12, "ee-kg-d", words(30, "Title 9"), 3, None, [("Title 9", "Title 9")]),
    # Q6's article gains a link to Q7 with the three start-qualified additions
    paragraph(6, "start-quals", words(30, "Title 7"), 2, None, [("Title 7", "Title 7")]),
]


def with_passages(kg: Catalog, settings: dict[str, Any], name: str,
                  pages: list[dict[str, Any]] = (), paragraphs: list[dict[str, Any]] = ()
                  ) -> Catalog:
    """A copy of the KG fixture plus page and paragraph timelines (and ``pages``,
    ``paragraphs``) with coverage for the snapshot, built through passages and align
    under ``settings``."""
    catalog = Catalog(f"{kg.warehouse}-{name}", kg.spark)
    for table in ("statement_timeline", "item_timeline", "property_timeline"):
        catalog.merge(table, catalog.frame(table, kg.read_arrow(table)))
    articles = [page_row(p, title) for p, title in ARTICLE.items()]
    catalog.merge("page_timeline", catalog.frame("page_timeline", [*articles, *pages]))
    catalog.merge("paragraph_timeline", catalog.frame("paragraph_timeline",
                                                      [*PARAGRAPHS, *paragraphs]))
    # what the Wikipedia ingest leaves: the pages' file covered the snapshot's range
    catalog.merge("page_watermarks", catalog.frame("page_watermarks", [
        {"wiki": "enwiki", "page_id": p, "title": ARTICLE[p], "last_rev_id": p,
         "last_timestamp": day(-100), "dump_file": "enwiki-f1"} for p in ARTICLE]))
    catalog.merge("paragraph_coverage", catalog.frame("paragraph_coverage", [
        {"wiki": "enwiki", "dump_file": "enwiki-f1", "dump_date": "", "range_from": day(0),
         "range_to": day(15), "ingested_at": day(0)}]))
    for stage in ("stability", "snapshot", "deltas", "passages", "align"):
        run(catalog, stage, None if stage == "stability" else T, **settings)
    return catalog


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
