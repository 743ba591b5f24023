"""The hand-made KG and Wikipedia history of the focused tests (tests/engine/transform:
deltas, passages, align), row by row under docs/semantics.md §1.1-1.2 (``DESIGN``) and what the
released data shows (``RELEASED``), the authors' selection rules off (their own cases:
test_align_rules.py). The KGs are built once per worker (tests/engine/transform/conftest.py)."""

from __future__ import annotations

from typing import Any

from stagekit import run
from tablekit import T, day, item_row, page_row, paragraph, stmt, words

from emerge_lib.catalog import Catalog

# the authors' selection rules are off here (the no-selection-rules preset, under these
# settings): these cases test the delta and alignment semantics row by row (each rule has
# its own cases: engine/transform/test_align_rules.py)
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


START_QUALIFIERS = {  # (window, p) -> the start qualifier an addition (Q6, p, Q7) reports
    (1, "P1"): (None, None), (2, "P1"): (None, None),  # P580 dated before t: never
    (1, "P2"): ("P580", day(4)), (2, "P2"): ("P580", day(4)),  # inside window 1 (and 2)
    (1, "P3"): (None, None), (2, "P3"): ("P580", day(9)),  # after τ_1: window 2 only
}


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
