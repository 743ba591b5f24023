"""Deltas (emerge_lib/transform/deltas.py) on small hand-made tables (kits/focusedkit.py): each rule on a case a
reader can check by eye (the generated worlds test them together, at scale), under both settings:
docs/semantics.md §1.1-1.2 (``DESIGN``) and what the released data shows (the defaults, §1.3).

The snapshot is t = 2024-01-01 with two windows of 7 days (τ_1 = day 7, τ_2 = day 14);
the KG stability span is one hour here, so presence is the raw timeline's, with touching
intervals joined (stability has its own tests). Every item was created on day -100 but
Q12, created on day 2."""

from __future__ import annotations

import pytest
from focusedkit import START_QUALIFIERS
from tablekit import day

from emerge_lib.catalog import Catalog


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


@pytest.mark.parametrize("fixture", ["kg", "kg_released"])
def test_start_qualifiers_only_when_dated_inside_the_window(fixture: str, request) -> None:
    catalog = request.getfixturevalue(fixture)
    got = {(r["window"], r["p"]): (r["qualifier_pid"], r["qualifier_at"])
           for r in catalog.read_arrow("delta_triples").to_pylist()
           if (r["s"], r["o"], r["op"]) == ("Q6", "Q7", "E")}
    assert got == START_QUALIFIERS


@pytest.fixture(scope="module")
def removals(tmp_path_factory, spark):
    """Removals with and without a start qualifier, built under the defaults and under
    the no-selection-rules preset: window → (s, p, o) → (signal, qualifier_pid, at)."""
    from stagekit import run
    from tablekit import T, item_row, stmt

    statements = [
        # removed on day 9; its statement at t starts on day 3 (inside window 1) / day 20
        stmt("Q1", "P1", "Q2", -50, 9, start_at=3), stmt("Q1", "P2", "Q3", -50, 9, start_at=20),
        stmt("Q1", "P3", "Q4", -50, 9),  # the near miss: no qualifier at all
        # set to deprecated rank on day 9, starting on day 4; one ended on day 10
        stmt("Q2", "P1", "Q3", -50, 9, start_at=4),
        stmt("Q2", "P1", "Q3", 9, None, rank="deprecated", start_at=4),
        stmt("Q3", "P1", "Q4", -50, 9, start_at=4), stmt("Q3", "P1", "Q4", 9, None, start_at=4,
                                                         end_at=10),
    ]
    items = [item_row(f"Q{i}", -100, None, f"Title {i}", i) for i in range(1, 5)]
    props = [{"pid": p, "valid_from": day(-100), "valid_to": None, "rev_from": int(p[1:]),
              "label_en": p, "description_en": "d", "datatype": "wikibase-item"}
             for p in ("P1", "P2", "P3")]
    out = {}
    for name, base in (("defaults", None), ("preset", "no-selection-rules")):
        catalog = Catalog(tmp_path_factory.mktemp("removals") / name, spark)
        catalog.merge("statement_timeline", catalog.frame("statement_timeline", statements))
        catalog.merge("item_timeline", catalog.frame("item_timeline", items))
        catalog.merge("property_timeline", catalog.frame("property_timeline", props))
        for stage in ("stability", "snapshot", "deltas"):
            run(catalog, stage, None if stage == "stability" else T, base=base,
                snapshots={"timestamps": [T], "windows": 2, "window_days": 7},
                stability={"kg_hours": 1, "passage_minutes": 30})
        out[name] = {(r["window"], r["s"], r["p"], r["o"]): (
            r["signal"], r["qualifier_pid"], r["qualifier_at"])
            for r in catalog.read_arrow("delta_triples").to_pylist() if r["op"] == "D"}
    return out


def test_a_removal_carries_the_start_qualifier_of_its_statement_at_t(removals) -> None:
    """Their qualifier_info (S06B:215-225, from any qualifier event, DELTAS:109-114): a
    removed or rank-deprecated statement whose start qualifier is dated inside the window
    carries it; an end qualifier wins; the preset's removals carry none."""
    got = removals["defaults"]
    assert got[(2, "Q1", "P1", "Q2")] == ("removed", "P580", day(3))
    assert got[(2, "Q2", "P1", "Q3")] == ("rank", "P580", day(4))
    assert got[(2, "Q1", "P2", "Q3")] == ("removed", None, None)  # dated after τ_2
    assert got[(2, "Q1", "P3", "Q4")] == ("removed", None, None)  # no qualifier
    assert got[(2, "Q3", "P1", "Q4")] == ("qualifier:P582", "P582", day(10))
    assert set(got) == set(removals["preset"]) == {
        (2, "Q1", "P1", "Q2"), (2, "Q1", "P2", "Q3"), (2, "Q1", "P3", "Q4"),
        (2, "Q2", "P1", "Q3"), (2, "Q3", "P1", "Q4")}
    assert {v[1] for k, v in removals["preset"].items() if k[1:] != ("Q3", "P1", "Q4")} == {
        None}
