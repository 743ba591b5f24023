"""Stability recomputes only the keys touched since its last run (transform/stability.py):
after each planted change of the timelines the table equals a full rebuild row for row,
and the run recomputed exactly the planted keys."""

from __future__ import annotations

import shutil
from datetime import UTC, datetime, timedelta

import pytest
from sparkkit import on_each_engine
from stagekit import run

from emerge_lib.catalog import Catalog
from emerge_lib.catalog.storage import read_state

T0 = datetime(2024, 1, 1, tzinfo=UTC)


def day(n: float) -> datetime:
    return T0 + timedelta(days=n)


def row(s: str, p: str, o: str, start: float, end: float | None, sid: str = "a") -> dict:
    return {"s": s, "p": p, "o": o, "statement_id": f"{s}${p}{sid}", "rank": "normal",
            "version_hash": f"{s}{p}{o}{sid}", "qualifiers": [], "valid_from": day(start),
            "valid_to": None if end is None else day(end), "rev_from": int(start * 100),
            "rev_to": None, "s_bucket": int(s[1:]) % 4}


def item(qid: str, start: float, end: float | None = None, redirect: str | None = None) -> dict:
    return {"qid": qid, "valid_from": day(start), "valid_to": None if end is None else day(end),
            "rev_from": int(start * 100) + int(qid[1:]), "enwiki_title": qid,
            "redirect_to": redirect, "qid_bucket": 0}


BASE = [
    row("Q1", "P1", "Q2", 0, None),                              # stable, open
    row("Q1", "P2", "Q3", 0, None),                              # closed later: 2 days
    row("Q1", "P3", "Q2", 0, 10), row("Q1", "P3", "Q2", 20, None),  # a 10-day gap: 2 rows
    row("Q4", "P1", "Q2", 0, None), row("Q4", "P2", "Q1", 5, None),  # Q4 is deleted later
    row("Q5", "P1", "Q7", 0, None), row("Q6", "P1", "Q8", 0, None),  # Q7 merged into Q8
    row("Q7", "P1", "Q2", 0, None),
    *[row(f"Q{n}", "P9", "Q1", 0, None) for n in range(10, 30)],   # never touched
]


def stable(catalog: Catalog) -> list[str]:
    return sorted(map(repr, catalog.read_arrow("stable_statements").to_pylist()))


def full_rebuild(catalog: Catalog, tmp_path, **settings) -> list[str]:
    """The table a full rebuild of the same warehouse gives (on a copy of it)."""
    copy = tmp_path / f"full{len(list(tmp_path.iterdir()))}"
    shutil.copytree(catalog.warehouse, copy)
    other = Catalog(copy, catalog.spark)
    result = run(other, "stability", stability={"rebuild": "full", **settings})
    assert result.note == "full rebuild: stability.rebuild is full"
    return stable(other)


def step(catalog: Catalog, tmp_path, touched: int) -> None:
    """An incremental run recomputing ``touched`` keys; the table a full rebuild gives."""
    result = run(catalog, "stability")
    assert (result.note, result.metrics["keys touched"]) == ("incremental", touched)
    assert stable(catalog) == full_rebuild(catalog, tmp_path)


@on_each_engine
def test_incremental_runs_equal_full_rebuilds(catalog: Catalog, tmp_path) -> None:
    tl = "statement_timeline"
    catalog.merge(tl, catalog.frame(tl, BASE))
    catalog.merge("item_timeline", catalog.frame("item_timeline", [
        item(f"Q{n}", 0) for n in [1, 2, 3, 4, 5, 6, 7, 8, *range(10, 30)]]))
    first = run(catalog, "stability")
    assert first.note == "full rebuild: no stable_statements yet"
    assert run(catalog, "stability").note == "up to date"
    before = stable(catalog)

    # a new key
    catalog.merge(tl, catalog.frame(tl, [row("Q1", "P4", "Q3", 30, None)]))
    step(catalog, tmp_path, 1)
    assert len(stable(catalog)) == len(before) + 1

    # a closure that shortens a presence below 168 h: its stable row disappears
    catalog.merge(tl, catalog.frame(tl, [row("Q1", "P2", "Q3", 0, 2)]))
    step(catalog, tmp_path, 1)
    assert not [r for r in catalog.read_arrow("stable_statements").to_pylist()
                if r["p"] == "P2" and r["s"] == "Q1"]

    # a reopen that fills the 10-day gap: one stable row instead of two
    catalog.merge(tl, catalog.frame(tl, [row("Q1", "P3", "Q2", 9, 21, sid="b")]))
    step(catalog, tmp_path, 1)
    assert len([r for r in catalog.read_arrow("stable_statements").to_pylist()
                if r["p"] == "P3"]) == 1

    # a deleted item: its rows leave the timeline, its keys' stable rows go with them
    catalog.delete_matching(tl, catalog.session().createDataFrame([("Q4",)], "s string"),
                            on=["s"])
    step(catalog, tmp_path, 2)
    assert not [r for r in catalog.read_arrow("stable_statements").to_pylist()
                if r["s"] == "Q4"]

    # a merge: Q7 becomes a redirect to Q8; the keys with Q7 as subject or object are
    # read as Q8's (under the old targets and the new: 2 + 2), the rest untouched
    catalog.merge("item_timeline", catalog.frame("item_timeline", [
        item("Q7", 0, 40), item("Q7", 40, redirect="Q8")]))
    step(catalog, tmp_path, 4)
    assert {(r["s"], r["o"]) for r in catalog.read_arrow("stable_statements").to_pylist()
            if "Q8" in (r["s"], r["o"]) or "Q7" in (r["s"], r["o"])} == {
        ("Q5", "Q8"), ("Q8", "Q2"), ("Q6", "Q8")}

    # nothing changed: nothing is recomputed
    assert run(catalog, "stability").note == "up to date"

    # a settings change rebuilds the whole table
    changed = run(catalog, "stability", stability={"kg_hours": 24})
    assert changed.note == "full rebuild: settings changed since the last run (kg_hours)"
    assert stable(catalog) == full_rebuild(catalog, tmp_path, kg_hours=24)
    assert run(catalog, "stability").note == "full rebuild: settings changed since the " \
        "last run (kg_hours)"  # back to 168 h: whole again
    assert stable(catalog) == full_rebuild(catalog, tmp_path)


def test_a_run_killed_before_its_record_reruns_to_the_same_table(catalog: Catalog,
                                                                 tmp_path) -> None:
    import emerge_lib.transform.stage as transform_stage

    tl = "statement_timeline"
    catalog.merge(tl, catalog.frame(tl, BASE))
    run(catalog, "stability", deltas={"resolve_redirects": False})
    recorded = read_state(catalog, "stability")
    catalog.merge(tl, catalog.frame(tl, [row("Q1", "P2", "Q3", 0, 2),
                                         row("Q9", "P1", "Q2", 1, None)]))
    real = transform_stage.write_state

    def killed(*args, **kwargs):
        raise KeyboardInterrupt("killed")

    transform_stage.write_state = killed  # type: ignore[assignment]
    try:
        with pytest.raises(KeyboardInterrupt):
            run(catalog, "stability", deltas={"resolve_redirects": False})
    finally:
        transform_stage.write_state = real  # type: ignore[assignment]
    assert read_state(catalog, "stability") == recorded  # the table was written, not the record
    written = stable(catalog)
    again = run(catalog, "stability", deltas={"resolve_redirects": False})
    assert (again.note, again.metrics["keys touched"]) == ("incremental", 2)
    assert (again.metrics["rows deleted"], again.metrics["rows inserted"]) == (0, 0)
    assert stable(catalog) == written
    other = tmp_path / "full-off"
    shutil.copytree(catalog.warehouse, other)
    full = Catalog(other, catalog.spark)
    run(full, "stability", deltas={"resolve_redirects": False}, stability={"rebuild": "full"})
    assert stable(catalog) == stable(full)


def test_what_cannot_be_read_incrementally_is_rebuilt_whole(catalog: Catalog,
                                                             tmp_path) -> None:
    from deltalake import DeltaTable

    from emerge_lib.catalog.storage import write_state

    tl, off = "statement_timeline", {"deltas": {"resolve_redirects": False}}
    catalog.merge(tl, catalog.frame(tl, BASE))
    run(catalog, "stability", **off)
    # a record an earlier emerge wrote (no table ids): rebuilt whole once
    old = {k: v for k, v in read_state(catalog, "stability").items() if not k.endswith("_id")}
    write_state(catalog, "stability", old)
    catalog.merge(tl, catalog.frame(tl, [row("Q9", "P1", "Q2", 1, None)]))
    assert run(catalog, "stability", **off).note == \
        "full rebuild: no record of the statement_timeline it was built from"
    # a file the change removed is gone (vacuumed): rebuilt whole, the same rows
    since = catalog.version(tl)
    catalog.merge(tl, catalog.frame(tl, [row("Q1", "P2", "Q3", 0, 2)]))
    gone = set(DeltaTable(catalog.path(tl), version=since).file_uris()) - set(
        DeltaTable(catalog.path(tl)).file_uris())
    assert gone
    for path in gone:
        (tmp_path / "warehouse" / tl / path.rsplit(f"/{tl}/", 1)[1]).unlink()
    result = run(catalog, "stability", **off)
    assert result.note.startswith("full rebuild: table statement_timeline: ")
    assert "gone from storage" in result.note
    assert not [r for r in catalog.read_arrow("stable_statements").to_pylist()
                if (r["s"], r["p"]) == ("Q1", "P2")]
    # forced: the setting
    forced = run(catalog, "stability", deltas={"resolve_redirects": False},
                 stability={"rebuild": "full"})
    assert forced.note == "full rebuild: stability.rebuild is full"
