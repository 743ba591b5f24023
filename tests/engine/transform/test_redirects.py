"""Item merges read through the final redirects (emerge_lib.transform.redirects), as the
authors' s02 does, on hand-made timelines: a merge inside the window and one before t,
each with a statement re-pointed from the merged item to the surviving one after t.

t = 2024-01-01, two windows of 7 days. Q2 ("Old", in V) is merged into Q3 on day 3, which
takes its sitelink; Q1's statement about Q2 is re-pointed to Q3 on day 4, and Q2's own
statement moves to Q3 with the merge. Q5 was merged into Q6 on day -10; Q1's statement
about Q5 is re-pointed to Q6 on day 5. Q7's statement to Q4, added on day 2, is the near
miss: a real addition either way."""

from __future__ import annotations

from typing import Any

import pytest
from stagekit import run
from tablekit import T, day, item_row, stmt

from emerge_lib.catalog import Catalog
from emerge_lib.transform.redirects import final_targets, items

STATEMENTS = [
    stmt("Q1", "P1", "Q2", -50, 4), stmt("Q1", "P1", "Q3", 4, None),  # re-pointed, window
    stmt("Q2", "P2", "Q4", -50, 3), stmt("Q3", "P2", "Q4", 3, None),  # moved by the merge
    stmt("Q1", "P3", "Q5", -50, 5), stmt("Q1", "P3", "Q6", 5, None),  # merged before t
    stmt("Q7", "P1", "Q4", 2, None),  # the near miss: added
]


def redirected(qid: str, start: float, title: str | None, on: float, into: str,
               rev: int) -> list[dict[str, Any]]:
    return [item_row(qid, start, on, title, rev),
            {**item_row(qid, on, None, None, rev + 1), "redirect_to": into}]


ITEMS = [item_row(f"Q{i}", -100, None, f"Title {i}", i) for i in (1, 4, 7)] + [
    *redirected("Q2", -100, "Old", 3, "Q3", 20),
    item_row("Q3", -100, 3, None, 30), item_row("Q3", 3, None, "Old", 31),
    *redirected("Q5", -100, "Five", -10, "Q6", 50),
    item_row("Q6", -100, -10, None, 60), item_row("Q6", -10, None, "Five", 61),
]
PROPS = [{"pid": p, "valid_from": day(-100), "valid_to": None, "rev_from": int(p[1:]),
          "label_en": p, "description_en": "d", "datatype": "wikibase-item"}
         for p in ("P1", "P2", "P3")]


@pytest.fixture(scope="module")
def built(tmp_path_factory, spark) -> dict[str, Catalog]:
    out = {}
    for name, base in (("resolved", None), ("unresolved", "no-selection-rules")):
        catalog = Catalog(tmp_path_factory.mktemp("redirects") / name, spark)
        catalog.merge("statement_timeline", catalog.frame("statement_timeline", STATEMENTS))
        catalog.merge("item_timeline", catalog.frame("item_timeline", ITEMS))
        catalog.merge("property_timeline", catalog.frame("property_timeline", PROPS))
        for stage in ("stability", "snapshot", "deltas"):
            run(catalog, stage, None if stage == "stability" else T, base=base,
                snapshots={"timestamps": [T], "windows": 2, "window_days": 7},
                stability={"kg_hours": 1, "passage_minutes": 30})
        out[name] = catalog
    return out


def delta(catalog: Catalog) -> set[tuple]:
    return {(r["window"], r["op"], r["s"], r["p"], r["o"])
            for r in catalog.read_arrow("delta_triples").to_pylist()}


def snapshot(catalog: Catalog, table: str, *columns: str) -> set[tuple]:
    return {tuple(r[c] for c in columns) for r in catalog.read_arrow(table).to_pylist()}


def test_a_merge_is_invisible_to_the_deltas(built) -> None:
    resolved, unresolved = built["resolved"], built["unresolved"]
    near_miss = {(w, "E", "Q7", "P1", "Q4") for w in (1, 2)}
    # read through the final redirects, the re-pointed statements were there all along
    assert delta(resolved) == near_miss
    # without: each re-pointing is an addition (and Q2's statement moved by the merge)
    assert delta(unresolved) == near_miss | {
        (w, "E", s, p, o) for w in (1, 2) for s, p, o in (
            ("Q1", "P1", "Q3"), ("Q3", "P2", "Q4"), ("Q1", "P3", "Q6"))}
    # T_t and V_t are keyed by the surviving items; Q3 is in V_t by Q2's sitelink
    assert snapshot(resolved, "kg_triples", "s", "p", "o") == {
        ("Q1", "P1", "Q3"), ("Q3", "P2", "Q4"), ("Q1", "P3", "Q6")}
    assert snapshot(resolved, "entities", "qid", "title") == {
        ("Q1", "Title 1"), ("Q4", "Title 4"), ("Q7", "Title 7"), ("Q3", "Old"),
        ("Q6", "Five")}
    assert snapshot(unresolved, "kg_triples", "s", "p", "o") == {
        ("Q1", "P1", "Q2"), ("Q2", "P2", "Q4")}  # Q5 was a redirect at t: out of V


def test_the_surviving_items_timeline_has_one_state_at_a_time(built) -> None:
    catalog = built["resolved"]
    assert {(r["qid"], r["target"]) for r in final_targets(catalog).collect()} == {
        ("Q2", "Q3"), ("Q5", "Q6")}
    def naive(n: float | None) -> object:  # Spark's collect gives naive UTC datetimes
        return None if n is None else day(n).replace(tzinfo=None)

    rows = sorted((r["qid"], r["valid_from"], r["valid_to"], r["enwiki_title"])
                  for r in items(catalog, True).collect() if r["qid"] in ("Q2", "Q3"))
    # Q2's state (in V, "Old") until the merge, then Q3's own; no Q2 left
    assert rows == [("Q3", naive(-100), naive(3), "Old"), ("Q3", naive(3), None, "Old")]
    created = {r["qid"]: r["created_at"] for r in items(catalog, True).collect()}
    assert created["Q3"] == naive(-100)
