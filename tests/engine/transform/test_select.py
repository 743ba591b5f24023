"""The select stage: near-duplicate lines and the test split, on lines with planted truth."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime
from typing import Any

from stagekit import run

from emerge_lib.catalog import Catalog
from emerge_lib.transform.select import (
    Line,
    candidate_pairs,
    deduplicate,
    draw_evaluation_set,
    edit_distance,
    jaccard,
    tokens,
)

BASE = ("The observatory was founded in 1921 by the astronomer Maria Keller, who directed it "
        "for thirty years and catalogued more than four thousand variable stars in the "
        "southern sky before the war interrupted the survey.")


def line(pid: str, text: str, page: int, ops: dict[str, int], triples: int | None = None,
         sig: str | None = None) -> Line:
    return Line(pid, f"h-{pid}", page, text,
                frozenset({(op, (sig or pid, "P1", "Q1")) for op in ops}),
                Counter(ops), triples if triples is not None else sum(ops.values()),
                tokens(text))


def test_similarities_are_s07s() -> None:
    assert jaccard(tokens("a cat sat on the mat"), tokens("the cat sat on a mat")) == 1.0
    assert tokens("I am A Cat, a cat!") == {"am", "cat"}  # 2+ word characters, lower case
    assert edit_distance("abcd", "abcd") == 0.0
    assert edit_distance("abcd", "wxyz") == 0.5  # 4 substitutions over 8 characters
    assert edit_distance("", "") == 0.0


def test_near_duplicates_are_dropped_in_rank_order() -> None:
    """Planted: b is a light edit of a (same article); c shares a's triples but says
    something else; d repeats a's text on another article; e is unrelated. a ranks first
    (a supported D), so b and d go as duplicates of a; c and e stay."""
    other = ("Northam railway station opened in 1899 on the coastal line; its wooden "
             "building burned down in 1950 and a concrete hall replaced it three years later.")
    lines = [
        line("a", BASE, 1, {"D": 1, "E": 1}),
        line("b", BASE.replace("thirty", "thirty-one").replace("war", "second war"), 1,
             {"E": 2}),
        line("c", other, 2, {"D": 1, "E": 1}, sig="a"),
        line("d", BASE + " It closed in 1990.", 3, {"X": 1}),
        line("e", "Completely different words about rivers, bridges and harbour cranes here.",
             4, {"E": 1}),
    ]
    fates = deduplicate(lines, 0.5, 0.2, True)
    assert {p for p, f in fates.items() if f.kept} == {"a", "c", "e"}
    assert fates["b"].duplicate_of == "a" and fates["d"].duplicate_of == "a"
    assert fates["b"].jaccard > 0.5 and fates["b"].edit_distance < 0.2
    assert fates["c"].duplicate_of is None
    assert [fates[p].rank for p in "acbed"] == sorted(f.rank for f in fates.values())
    # the blocks pair every planted duplicate; unrelated lines are not compared
    neighbours = candidate_pairs(lines, 0.5)
    assert {1, 3} <= neighbours[0] and 4 not in neighbours[0]
    # dedup off: everything kept, ranks unchanged
    assert all(f.kept for f in deduplicate(lines, 0.5, 0.2, False).values())


def test_edit_distance_alone_drops_a_reworded_copy() -> None:
    """Token sets far apart (many words changed) but the characters close: the edit
    distance rule drops it, as s07's pass does."""
    a = "aaaa bbbb cccc dddd eeee ffff gggg hhhh iiii jjjj"
    b = "aaab bbbc cccd dddf eeeg fffh gggi hhhj iiik jjjl"
    lines = [line("a", a, 1, {"E": 2}), line("b", b, 1, {"E": 1})]
    assert jaccard(lines[0].tokens, lines[1].tokens) == 0.0
    fates = deduplicate(lines, 0.5, 0.2, True)
    assert not fates["b"].kept and fates["b"].edit_distance < 0.2


def test_the_test_split_is_stratified_seeded_and_reproducible() -> None:
    """Planted: 30 lines with an asserted D, 60 with EE-KG, 10 EE, 200 E, 50 with nothing
    asserted. 100 are drawn: 40 with D first, EE-KG up to 40, all 10 EE, E up to 40, then
    filled; never a line without a supported triple."""
    lines = ([line(f"d{i}", f"d {i}", i, {"D": 1}) for i in range(30)]
             + [line(f"k{i}", f"k {i}", i, {"EE-KG": 1}) for i in range(60)]
             + [line(f"n{i}", f"n {i}", i, {"EE": 1}) for i in range(10)]
             + [line(f"e{i}", f"e {i}", i, {"E": 1}) for i in range(200)]
             + [line(f"z{i}", f"z {i}", i, {}) for i in range(50)])
    fates = deduplicate(lines, 0.5, 0.2, False)
    drawn = draw_evaluation_set(lines, fates, "0:t:1", 100, 40, ["D", "EE-KG", "EE", "E"])
    count = Counter(p[0] for p in drawn)
    assert len(drawn) == 100 and count["z"] == 0
    assert count["d"] == 30 and count["k"] >= 40 and count["n"] == 10 and count["e"] >= 20
    assert drawn == draw_evaluation_set(lines, fates, "0:t:1", 100, 40,
                                        ["D", "EE-KG", "EE", "E"])
    assert drawn != draw_evaluation_set(lines, fates, "1:t:1", 100, 40,
                                        ["D", "EE-KG", "EE", "E"])
    # a dropped duplicate is never drawn
    fates["d0"] = type(fates["d0"])(False, fates["d0"].rank, "d1", 1.0, 0.0)
    assert "d0" not in draw_evaluation_set(lines, fates, "0:t:1", 100, 40, ["D"])


SNAP = "2024-01-01T00:00:00Z"


def _passage(pid: str, page: int, text: str) -> dict[str, Any]:
    return {"snapshot": SNAP, "window": 1, "passage_id": pid, "page_id": page,
            "page_title": f"Page {page}", "page_qid": f"Q{page}", "rev_id": page,
            "rev_timestamp": datetime(2024, 1, 3, tzinfo=UTC), "paragraph_idx": 0,
            "text": text, "mentions": []}


def _instance(pid: str, op: str, s: str) -> dict[str, Any]:
    return {"snapshot": SNAP, "window": 1, "passage_id": pid, "op": op, "s": s, "p": "P1",
            "o": "Q2", "signal": "removed" if op == "D" else None}


def test_the_stage_writes_every_line_and_the_release_leaves_duplicates_out(
        catalog: Catalog, tmp_path) -> None:
    from tablekit import put

    put(catalog, "passages", [_passage("a", 1, BASE),
                              _passage("b", 1, BASE.replace("thirty", "forty")),
                              _passage("c", 3, "A short unrelated passage about river ferries.")])
    put(catalog, "instances", [_instance("a", "D", "Q1"), _instance("b", "E", "Q1"),
                               _instance("c", "E", "Q3")])
    snapshots = {"timestamps": [SNAP], "windows": 2}
    result = run(catalog, "select", SNAP, snapshots=snapshots)
    assert result.rows == {"selection": 3}
    rows = {r["passage_id"]: r for r in catalog.read_arrow("selection").to_pylist()}
    assert rows["b"]["kept"] is False and rows["b"]["duplicate_of"] == "a"
    assert rows["a"]["kept"] and rows["c"]["kept"]
    assert {p for p, r in rows.items() if r["evaluation_set"]} == {"a", "c"}  # uncurated: all
    run(catalog, "release", release_dir=tmp_path, snapshots=snapshots,
        validation={"enabled": False})
    corpus = (tmp_path / "corpus" / "snapshot_2024-01-01" / "delta_2024-01-08.jsonl").read_text()
    evaluation = (tmp_path / "evaluation_set" / "snapshot_2024-01-01" / "delta_2024-01-08.jsonl")
    assert corpus.count("\n") == 2 and '"passage_id":"b"' not in corpus
    assert evaluation.read_text().count("\n") == 2
    import pyarrow.parquet as pq

    released = pq.read_table(tmp_path / "parquet" / "instances.parquet").column(
        "passage_id").to_pylist()
    assert sorted(released) == ["a", "c"]  # the Parquet holds what the JSONL holds
    # rerun: the same rows
    run(catalog, "select", SNAP, snapshots=snapshots)
    assert {r["passage_id"]: r for r in catalog.read_arrow("selection").to_pylist()} == rows


def test_windows_selected_in_processes_give_the_same_rows(catalog: Catalog, monkeypatch) -> None:
    """selection.workers: 3 selects each window in a spawned process: the rows are the
    one process's, window by window (a duplicate pair in window 1, another in window 2)."""
    from tablekit import put

    from emerge_lib.transform import select

    pools: list[int] = []  # the real pool, its size noted
    real = select.spawned_pool
    monkeypatch.setattr(select, "spawned_pool", lambda n: pools.append(n) or real(n))

    def in_window(row: dict[str, Any], window: int) -> dict[str, Any]:
        return {**row, "window": window, "passage_id": f"{row['passage_id']}{window}"}

    passages = [_passage("a", 1, BASE), _passage("b", 1, BASE.replace("thirty", "forty")),
                _passage("c", 3, "A short unrelated passage about river ferries.")]
    instances = [_instance("a", "D", "Q1"), _instance("b", "E", "Q1"), _instance("c", "E", "Q3")]
    put(catalog, "passages", [in_window(p, w) for w in (1, 2) for p in passages])
    put(catalog, "instances", [in_window(i, w) for w in (1, 2) for i in instances])
    snapshots = {"timestamps": [SNAP], "windows": 2}
    got = {}
    for workers in (1, 3):
        result = run(catalog, "select", SNAP, snapshots=snapshots,
                     selection={"workers": workers})
        assert result.rows == {"selection": 6}
        got[workers] = sorted(catalog.read_arrow("selection").to_pylist(),
                              key=lambda r: r["passage_id"])
    assert pools == [2]  # one process per window (2), for workers 3 only
    assert got[1] == got[3]
    assert {r["passage_id"]: r["duplicate_of"] for r in got[3] if not r["kept"]} == {
        "b1": "a1", "b2": "a2"}
