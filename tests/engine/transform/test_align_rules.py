"""The authors' selection rules (docs/data-model.md "Which aligned passages are lines"), each
on hand-made tables: a case the rule removes and a near miss it keeps, with the rule alone
on (the no-selection-rules preset plus that rule's setting), then all of them together (the
defaults).

t = 2024-01-01, two windows of 7 days (τ_1 = day 7, τ_2 = day 14), a one-hour KG
stability span. Items Q1-Q12 exist since day -100 with an article each (page p is Qp's);
Q20 is new on day 2; Q21 and Q22 are new on day 3, and an old item (Q30, day -100) is
merged into Q21 on day 4, a younger one (Q31, day 5) into Q22 on day 6. Properties P1-P7
and P582 exist since day -100, P8 since day 2 (after t: not in R_t).
"""

from __future__ import annotations

from typing import Any

import pytest
from stagekit import run
from tablekit import T, day, item_row, page_row, paragraph, stmt, words

from emerge_lib.catalog import Catalog

NONE = {"snapshots": {"timestamps": [T], "windows": 2, "window_days": 7},
        "stability": {"kg_hours": 1, "passage_minutes": 30}}  # over -c no-selection-rules
SECOND = 1 / 86400

STATEMENTS = [
    # R2a: removed on day 3 and added back on day 20 (after τ_2, within 15 years) / never
    stmt("Q1", "P1", "Q2", -50, 3), stmt("Q1", "P1", "Q2", 20, None, sid="b"),
    stmt("Q1", "P2", "Q3", -50, 3),
    # R2b: an end qualifier dated day 5 (added on day 4): D by qualifier in both windows
    stmt("Q2", "P3", "Q4", -50, 4), stmt("Q2", "P3", "Q4", 4, None, end_at=5),
    # R5: an end qualifier dated day 6 on Q3's statement about Q12
    stmt("Q3", "P4", "Q12", -50, 5), stmt("Q3", "P4", "Q12", 5, None, end_at=6),
    # R1: unchanged (X) / added on day 4 (E)
    stmt("Q5", "P5", "Q6", -50, None), stmt("Q7", "P6", "Q8", 4, None),
    stmt("Q7", "P7", "Q9", -50, None),
    # R3: Q20's triples with old entities, removed on day 114, on day 193, never
    stmt("Q20", "P1", "Q7", 2, 114), stmt("Q20", "P2", "Q8", 2, 193),
    stmt("Q20", "P3", "Q9", 2, None), stmt("Q20", "P4", "Q10", 2, None),
    # R4: additions of the two new items that absorbed a merged one
    stmt("Q21", "P1", "Q4", 3, None), stmt("Q21", "P2", "Q6", 3, None),
    stmt("Q22", "P1", "Q5", 3, None),
    # R5: one addition seen among six mentioned entities, among four
    stmt("Q11", "P1", "Q12", 2, None),
    # R_t: additions with P8, a property created on day 2 (not in R_t), and with P5
    stmt("Q9", "P8", "Q10", 4, None), stmt("Q9", "P5", "Q11", 4, None),
]


def merged(qid: str, created: float, into: str, on: float, rev: int) -> list[dict[str, Any]]:
    """An item without an article, redirected to ``into`` from day ``on``."""
    return [item_row(qid, created, on, None, rev, created=created),
            {**item_row(qid, on, None, None, rev + 1, created=created), "redirect_to": into}]


ITEMS = [item_row(f"Q{i}", -100, None, f"Title {i}", i) for i in range(1, 13)] + [
    item_row("Q20", 2, None, "Title 20", 200, created=2),
    item_row("Q21", 3, None, "Title 21", 210, created=3),
    item_row("Q22", 3, None, "Title 22", 220, created=3),
    *merged("Q30", -100, "Q21", 4, 300), *merged("Q31", 5, "Q22", 6, 310),
]
PROPS = [{"pid": f"P{i}", "valid_from": day(-100), "valid_to": None, "rev_from": i,
          "label_en": f"prop {i}", "description_en": "d", "datatype": "wikibase-item"}
         for i in range(1, 8)] + [{"pid": "P582", "valid_from": day(-100), "valid_to": None,
                                   "rev_from": 582, "label_en": "end time",
                                   "description_en": "d", "datatype": "time"},
                                  {"pid": "P8", "valid_from": day(2), "valid_to": None,
                                   "rev_from": 8, "label_en": "prop 8", "description_en": "d",
                                   "datatype": "wikibase-item"}]
ARTICLES = {p: f"Title {p}" for p in [*range(1, 13), 20, 21, 22]}


def para(page: int, key: str, first: float, *qids: int) -> dict[str, Any]:
    names = [f"Title {q}" for q in qids]
    return paragraph(page, key, words(30, *names), first, None, [(n, n) for n in names])


PARAGRAPHS = [
    # R2b: the qualifier dated day 5 on (Q2, P3, Q4): a second before it, and at it
    para(2, "before-qualifier", 5 - SECOND, 4), para(4, "at-qualifier", 5, 2),
    # R2b: (Q1, P2, Q3) removed on day 3 (beside (Q3, P4, Q12), ended day 6) / alone
    para(3, "before-removal", 3 - SECOND, 1, 12), para(1, "at-removal", 3, 3),
    # R2a: (Q1, P1, Q2) removed on day 3, added back on day 20
    para(1, "readded", 4, 2),
    # R5: the same removal beside Q20 (new; its triples with Q7-Q10 are EE-KG here)
    para(1, "removal-and-new", 4, 3, 20),
    # R1: X only / X and E
    para(5, "x-only", 4, 6), para(7, "x-and-e", 5, 8, 9),
    # R1 and R3: only EE-KG (Q11 is unrelated to Q20) / EE-KG and EE (Q10)
    para(20, "ee-kg-only", 4, 11), para(20, "ee-kg-and-ee", 4, 10),
    # R4: the two new items' articles
    para(21, "merged-older", 5, 4), para(22, "merged-younger", 8, 5),
    # R5: (Q11, P1, Q12) among six mentioned entities / among four
    para(11, "sparse", 4, 12, 1, 4, 5, 6), para(12, "dense", 4, 11, 4, 5),
    # R_t: an addition with the new relation alone / beside one with a relation of R_t
    para(9, "new-relation", 4, 10), para(9, "new-and-known-relation", 4, 10, 11),
]


@pytest.fixture(scope="module")
def built(tmp_path_factory, spark):
    """Build the tables under ``settings`` (over the no-selection-rules preset, or over the
    defaults): (window, passage key,
    op, s, p, o) of every instance; each settings once."""
    cache: dict[str, set[tuple]] = {}

    def build(defaults: bool = False, **settings: Any) -> set[tuple]:
        key = repr((defaults, sorted(settings.items())))
        if key not in cache:
            folder = tmp_path_factory.mktemp("rules")
            catalog = Catalog(folder / "warehouse", spark)
            for table, rows in (("statement_timeline", STATEMENTS), ("item_timeline", ITEMS),
                                ("property_timeline", PROPS)):
                catalog.merge(table, catalog.frame(table, rows))
            catalog.merge("page_timeline", catalog.frame(
                "page_timeline", [page_row(p, title) for p, title in ARTICLES.items()]))
            catalog.merge("paragraph_timeline", catalog.frame("paragraph_timeline", PARAGRAPHS))
            catalog.merge("page_watermarks", catalog.frame("page_watermarks", [
                {"wiki": "enwiki", "page_id": p, "title": title, "last_rev_id": p,
                 "last_timestamp": day(-100), "dump_file": "enwiki-f1"}
                for p, title in ARTICLES.items()]))
            catalog.merge("paragraph_coverage", catalog.frame("paragraph_coverage", [
                {"wiki": "enwiki", "dump_file": "enwiki-f1", "dump_date": "",
                 "range_from": day(0), "range_to": day(15), "ingested_at": day(0)}]))
            base = None if defaults else "no-selection-rules"
            for stage in ("stability", "snapshot", "deltas", "passages", "align"):
                run(catalog, stage, None if stage == "stability" else T, base=base,
                    **{**NONE, **settings})
            cache[key] = {(r["window"], r["passage_id"].split("-", 1)[1], r["op"], r["s"],
                           r["p"], r["o"]) for r in catalog.read_arrow("instances").to_pylist()}
        return cache[key]

    return build


def lines(rows: set[tuple]) -> set[tuple[int, str]]:
    return {r[:2] for r in rows}


def test_r2a_a_removal_added_back_within_the_span_is_neither_d_nor_x(built) -> None:
    off, on = built(), built(deltas={"permanent_removal_years": 15})
    for w in (1, 2):
        assert (w, "at-removal", "D", "Q1", "P2", "Q3") in on  # never added back: D
        assert (w, "before-qualifier", "D", "Q2", "P3", "Q4") in on
    readded = {r for r in off if r[2:] == ("D", "Q1", "P1", "Q2")}
    assert readded == {(w, "readded", "D", "Q1", "P1", "Q2") for w in (1, 2)}
    assert not {r for r in on if r[3:] == ("Q1", "P1", "Q2")}
    # a span that ends before the re-addition (day 20): the removal counts again
    assert readded <= built(deltas={"permanent_removal_years": 5 / 365})


def test_r2b_a_passage_must_not_predate_the_latest_removal(built) -> None:
    off, on = built(), built(align={"passage_after_removal": True})
    assert {"before-qualifier", "at-qualifier", "before-removal", "at-removal"} <= {
        k for _, k in lines(off)}
    kept = {k for _, k in lines(on)}
    # a second before the qualifier's date goes; exactly at it stays (equal passes)
    assert "before-qualifier" not in kept and "at-qualifier" in kept
    # the removal of day 3 (and Q3's end qualifier of day 6): before both goes; the line
    # at the removal has no later qualifier among its triples and stays
    assert "before-removal" not in kept and "at-removal" in kept
    assert lines(on) == {line for line in lines(off) if line[1] not in (
        "before-qualifier", "before-removal")}


def test_r3_an_ee_kg_triple_must_persist_past_the_horizon(built) -> None:
    off, on = built(), built(align={"ee_kg_persistence_days": 182.5})
    ee_kg = {(r[0], r[3:]) for r in off if r[2] == "EE-KG" and r[1] == "ee-kg-and-ee"}
    assert ee_kg == {(w, t) for w in (1, 2) for t in (
        ("Q20", "P1", "Q7"), ("Q20", "P2", "Q8"), ("Q20", "P3", "Q9"))}
    kept = {(r[0], r[3:]) for r in on if r[2] == "EE-KG" and r[1] == "ee-kg-and-ee"}
    # removed on day 114 (before τ + 182.5 d): never; on day 193: past τ_1 + 182.5 d
    # (day 189.5), not past τ_2 + 182.5 d (day 196.5); never removed: always
    assert kept == {(1, ("Q20", "P2", "Q8")), (1, ("Q20", "P3", "Q9")),
                    (2, ("Q20", "P3", "Q9"))}


def test_r4_an_item_is_as_old_as_the_items_merged_into_it(built) -> None:
    off, on = built(), built(deltas={"creation_over_redirects": True})
    for w in (1, 2):
        # Q21 absorbed Q30 (day -100): not emerging, so E and no EE-KG
        assert (w, "merged-older", "EE", "Q21", "P1", "Q4") in off
        assert (w, "merged-older", "E", "Q21", "P1", "Q4") in on
        assert not {r for r in on if r[3] == "Q21" and r[2] in ("EE", "EE-KG")}
        assert (w, "merged-older", "EE-KG", "Q21", "P2", "Q6") in off
    # Q22 absorbed Q31 (day 5, younger): still emerging (its passage is in window 2)
    assert {r for r in on if r[3] == "Q22"} == {r for r in off if r[3] == "Q22"} == {
        (2, "merged-younger", "EE", "Q22", "P1", "Q5")}


def test_r1_a_line_needs_a_delta_triple_between_two_mentioned_entities(built) -> None:
    off, on = built(), built(align={"between_mentions": True})
    assert {"x-only", "ee-kg-only"} <= {k for _, k in lines(off)}
    assert {r[2] for r in off if r[1] == "x-only"} == {"X"}
    assert {r[2] for r in off if r[1] == "ee-kg-only"} == {"EE-KG"}
    assert {"x-and-e", "ee-kg-and-ee"} <= {k for _, k in lines(on)}  # the near misses
    assert lines(on) == {line for line in lines(off) if line[1] not in ("x-only", "ee-kg-only")}
    # a kept line keeps every row (its X and EE-KG too)
    assert {r for r in off if r[1] in ("x-and-e", "ee-kg-and-ee")} <= on


def test_r5_plain_removals_and_sparse_lines_are_not_interesting(built) -> None:
    off, on = built(), built(align={"interesting": True})
    kept = {k for _, k in lines(on)}
    # only a plain removal between its entities: goes ...
    assert "at-removal" in {k for _, k in lines(off)} and "at-removal" not in kept
    # ... unless an end qualifier (Q3's page) or an emerging entity (Q20) keeps it
    assert {"before-removal", "removal-and-new"} <= kept
    # one delta triple among six entities (1/6 ≤ 0.2) goes; among four (1/4) stays
    assert "sparse" not in kept and "dense" in kept


def test_the_defaults_are_every_rule_at_once(built) -> None:
    default = built(defaults=True)
    assert lines(default) == {(w, k) for w in (1, 2) for k in (
        "at-qualifier", "x-and-e", "ee-kg-and-ee", "merged-older", "dense",
        "removal-and-new", "new-and-known-relation")} | {(2, "merged-younger")}
    assert not {r for r in default if r[4] == "P8"}  # R_t
    assert not {r for r in default if r[3:] == ("Q1", "P1", "Q2")}  # R2a
    assert {r[3:] for r in default if r[2] == "EE-KG"} == {  # R3 (and R4: no Q21)
        ("Q20", "P2", "Q8"), ("Q20", "P3", "Q9"), ("Q20", "P4", "Q10")}  # Q10 unmentioned on page 1
    assert (1, "merged-older", "E", "Q21", "P1", "Q4") in default  # R4


def test_a_relation_outside_r_t_leaves_its_line(built) -> None:
    """s07's relation filter (S07:501-515): the P8 triple goes, and the line it was the
    only delta triple of; the line with a P5 addition beside it stays, without it."""
    off, on = built(), built(align={"relations_in_snapshot": True})
    for w in (1, 2):
        assert (w, "new-relation", "E", "Q9", "P8", "Q10") in off
        assert (w, "new-and-known-relation", "E", "Q9", "P8", "Q10") in off
        assert (w, "new-and-known-relation", "E", "Q9", "P5", "Q11") in on
    assert not {r for r in on if r[4] == "P8"}
    assert lines(on) == lines(off) - {(w, "new-relation") for w in (1, 2)}
    assert on == {r for r in off if r[4] != "P8"}
