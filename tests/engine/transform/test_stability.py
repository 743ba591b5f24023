"""The KG stability rule on hand-made statement intervals (docs/semantics.md §1.2 item 2)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from stagekit import run

from emerge_lib.catalog import Catalog
from emerge_lib.transform.snapshot import triples_at

T0 = datetime(2024, 1, 1, tzinfo=UTC)


def day(n: float) -> datetime:
    return T0 + timedelta(days=n)


def row(s: str, p: str, o: str, start: float, end: float | None, rank: str = "normal",
        sid: str = "x") -> dict:
    return {"s": s, "p": p, "o": o, "statement_id": f"{s}${sid}", "rank": rank,
            "version_hash": f"{s}{p}{o}{sid}{rank}{start}", "qualifiers": [],
            "valid_from": day(start), "valid_to": None if end is None else day(end),
            "rev_from": int(start * 100), "rev_to": None, "s_bucket": 0}


def test_fill_short_absences_then_drop_short_presences(catalog: Catalog) -> None:
    rows = [
        row("Q1", "P1", "Q2", 0, 10),  # 10 days: kept
        row("Q1", "P2", "Q2", 0, 2),  # 2 days, then gone: an edit war, dropped
        row("Q1", "P3", "Q2", 0, 5), row("Q1", "P3", "Q2", 7, None),  # 2-day gap filled
        row("Q1", "P4", "Q2", 0, 3), row("Q1", "P4", "Q2", 4, 6),  # 6 days after filling: dropped
        row("Q1", "P5", "Q2", 30, None),  # open at the end of the dump: long
        row("Q1", "P6", "Q2", 0, 20, rank="deprecated"),  # never present
        row("Q1", "P7", "Q2", 0, 10, sid="a"), row("Q1", "P7", "Q2", 5, 15, sid="b"),  # one key
        row("Q1", "P8", "Q2", 0, 8), row("Q1", "P8", "Q2", 15, 30),  # exactly 7-day gap: kept apart
        row("Q1", "P9", "Q2", 0, 9, rank="normal"), row("Q1", "P9", "Q2", 9, 12, rank="preferred"),
        row("Q1", "P10", "Q2", 3, 3),  # zero length: nothing
    ]
    catalog.merge("statement_timeline", catalog.frame("statement_timeline", rows))
    assert run(catalog, "stability").rows == {"stable_statements": 7}
    got = sorted(
        (r["p"], r["valid_from"], r["valid_to"])
        for r in catalog.read_arrow("stable_statements").to_pylist()
    )
    assert got == sorted([
        ("P1", day(0), day(10)),
        ("P3", day(0), None),
        ("P5", day(30), None),
        ("P7", day(0), day(15)),
        ("P8", day(0), day(8)),
        ("P8", day(15), day(30)),
        ("P9", day(0), day(12)),
    ])
    # rerun: nothing changed, nothing is rebuilt
    version = catalog.version("stable_statements")
    assert run(catalog, "stability").note == "up to date"
    assert catalog.version("stable_statements") == version
    assert catalog.read_arrow("stable_statements").num_rows == len(got)
    # a shorter span keeps the 2-day presence and splits P3
    run(catalog, "stability", stability={"kg_hours": 24})
    p = sorted((r["p"], r["valid_from"]) for r in catalog.read_arrow("stable_statements").to_pylist())
    assert ("P2", day(0)) in p and ("P3", day(7)) in p


def test_triples_at_needs_both_ends_in_v(catalog: Catalog) -> None:
    catalog.merge("statement_timeline", catalog.frame("statement_timeline", [
        row("Q1", "P1", "Q2", 0, None), row("Q1", "P1", "Q3", 0, None), row("Q1", "P1", "Q4", 0, None),
    ]))
    items = [
        {"qid": "Q1", "valid_from": day(0), "valid_to": None, "rev_from": 1, "enwiki_title": "One"},
        {"qid": "Q2", "valid_from": day(0), "valid_to": day(20), "rev_from": 2, "enwiki_title": "Two"},
        {"qid": "Q2", "valid_from": day(20), "valid_to": None, "rev_from": 3, "enwiki_title": None},
        {"qid": "Q3", "valid_from": day(0), "valid_to": None, "rev_from": 4, "enwiki_title": None},
        {"qid": "Q4", "valid_from": day(0), "valid_to": day(20), "rev_from": 5, "enwiki_title": "Four"},
        {"qid": "Q4", "valid_from": day(20), "valid_to": None, "rev_from": 6, "redirect_to": "Q2"},
    ]
    catalog.merge("item_timeline", catalog.frame("item_timeline", items))
    # QIDs as they were (Q4 becomes a redirect on day 20: it leaves V)
    run(catalog, "stability", base="no-selection-rules")
    at10 = {tuple(r) for r in triples_at(catalog, day(10), resolve=False).collect()}
    assert at10 == {("Q1", "P1", "Q2"), ("Q1", "P1", "Q4")}
    assert {tuple(r) for r in triples_at(catalog, day(25), resolve=False).collect()} == set()
    assert len(triples_at(catalog, day(25), all_items=True, resolve=False).collect()) == 3
    # read through the final redirects (the defaults): Q4 is Q2 all along
    run(catalog, "stability")
    assert {tuple(r) for r in triples_at(catalog, day(10), resolve=True).collect()} == {
        ("Q1", "P1", "Q2")}


def test_two_results_of_triples_at_can_be_used_together(catalog: Catalog) -> None:
    """Each result binds its own frames (no shared view names a later call rebinds)."""
    catalog.merge("statement_timeline", catalog.frame("statement_timeline", [
        row("Q1", "P1", "Q2", 0, 10), row("Q1", "P1", "Q3", 0, None), row("Q1", "P1", "Q4", 20, None),
        row("P5", "P1", "Q2", 0, None),  # a property page's statement: not an item's
    ]))
    items = [{"qid": q, "valid_from": day(0), "valid_to": None, "rev_from": i, "enwiki_title": q}
             for i, q in enumerate(["Q1", "Q2", "Q3", "Q4"])]
    catalog.merge("item_timeline", catalog.frame("item_timeline", items))
    run(catalog, "stability", stability={"kg_hours": 0})
    early, late = triples_at(catalog, day(5), resolve=True), triples_at(catalog, day(25),
                                                                       resolve=True)
    assert {tuple(r) for r in early.subtract(late).collect()} == {("Q1", "P1", "Q2")}
    assert {tuple(r) for r in late.subtract(early).collect()} == {("Q1", "P1", "Q4")}
    everything = triples_at(catalog, day(5), all_items=True, resolve=True)
    assert {tuple(r) for r in everything.collect()} == {("Q1", "P1", "Q2"), ("Q1", "P1", "Q3")}
