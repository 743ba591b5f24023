"""``emerge query`` (emerge_lib/hub/query.py: DuckDB) on a small hand-made release
(kits/hubkit.py); files only, no engine."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hubkit import C4, small_release

from emerge_lib.cli import main
from emerge_lib.hub import open_release
from emerge_lib.hub.query import QueryError, render, run


@pytest.fixture()
def release(tmp_path: Path) -> Path:
    return small_release(tmp_path / "old")


def test_query_answers_counts_per_operation_and_a_passage(release: Path, capsys) -> None:
    opened = open_release(release)
    columns, rows = run(opened, "SELECT operation, count(*) AS n FROM operations "
                                "GROUP BY ALL ORDER BY ALL")
    assert columns == ["operation", "n"] and rows == [
        ("d-triples", 1), ("e-triples", 2), ("ee-kg-triples", 1), ("ee-triples", 1),
        ("x-triples", 2)]
    _, rows = run(opened, "SELECT operation, count(*) FROM evaluation_operations GROUP BY ALL")
    assert rows == [("d-triples", 1)]
    # window is a keyword of SQL: the column is "window"
    _, rows = run(opened, f"SELECT snapshot, \"window\", passage FROM lines "
                          f"WHERE hash_id = '{C4['hash_id']}'")
    assert [(str(s), w, p) for s, w, p in rows] == [("2024-04-01", 1, C4["passage"])]
    with pytest.raises(QueryError, match="nope"):
        run(opened, "SELECT * FROM nope")
    text = render(["a", "b"], [(1, None), ("x" * 80, [1])])
    assert text.splitlines()[2].split() == ["1", "NULL"] and "(2 rows)" in text
    assert text.splitlines()[3] == "x" * 59 + "…  [1]"  # cut at 60 characters
    assert render(["a"], [(1,)], "csv") == "a\n1\n"
    assert main(["query", "--release", str(release), "--format", "json",
                 "SELECT count(*) AS n FROM triples"]) == 0
    assert json.loads(capsys.readouterr().out) == {"n": 7}
    assert main(["query", "--release", str(release), "SELECT * FROM nope"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("emerge: ") and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("fmt", ["table", "csv", "json"])
def test_cell_text_cannot_drive_the_terminal(fmt: str) -> None:
    """A published release's text with ESC/CSI/OSC sequences (clear the screen, set the
    window title, OSC 52: write the clipboard) and C1 controls prints them as escapes."""
    from emerge_lib.hub.query import render

    evil = "a\x1b]52;c;ZXZpbA==\x07b\x1b[2J\x9b2J\x85\x7f\r"
    out = render(["text", "nested"], [[evil, {"k": evil}]], fmt)
    assert not [c for c in out if (ord(c) < 32 and c not in "\n\t") or 0x7f <= ord(c) <= 0x9f]
    assert "ZXZpbA==" in out  # the text itself is still there, readable
    if fmt == "json":
        import json

        assert json.loads(out)["text"] == evil  # and JSON still decodes to the same text


def test_the_release_tables_join_on_snapshot(release: Path) -> None:
    """``snapshot`` is a date in every view (the KG's included), so a join on it, in DuckDB
    or in pandas, finds the rows a string against a date did not."""
    from emerge_lib.hub import load_release

    opened = open_release(release)
    for view in ("lines", "triples", "kg_triples"):
        assert run(opened, f"SELECT DISTINCT typeof(snapshot) FROM {view}")[1] == [("DATE",)]
    _, rows = run(opened, "SELECT t.snapshot, count(*) FROM triples t JOIN kg_triples k "
                          "USING (snapshot) GROUP BY ALL ORDER BY ALL")
    assert [(str(s), n) for s, n in rows] == [("2024-01-01", 5 * 2), ("2024-04-01", 2 * 2)]
    triples = load_release(release, kind="triples", format="pandas")
    kg = load_release(release, kind="kg", format="pandas")
    assert len(triples.merge(kg[["snapshot"]].drop_duplicates(), on="snapshot")) == \
        len(triples) == 7


def test_the_splits_and_the_context_are_views(tmp_path: Path) -> None:
    """train, validation and test share no article; test is the evaluation set; every
    corpus line is in one split or is a line of a test article; context has a row a line."""
    from hubkit import split_release

    opened = open_release(split_release(tmp_path / "r"))
    _, rows = run(opened, "SELECT count(*) FROM (SELECT anchor_page_id FROM train INTERSECT "
                          "SELECT anchor_page_id FROM validation UNION ALL (SELECT "
                          "anchor_page_id FROM test INTERSECT SELECT anchor_page_id FROM "
                          "(SELECT * FROM train UNION ALL SELECT * FROM validation)))")
    assert rows == [(0,)]
    _, rows = run(opened, "SELECT hash_id FROM test EXCEPT SELECT hash_id FROM evaluation")
    assert rows == []
    _, rows = run(opened, "SELECT count(*) FROM lines WHERE hash_id NOT IN (SELECT hash_id "
                          "FROM train UNION ALL SELECT hash_id FROM validation UNION ALL "
                          "SELECT hash_id FROM test)")
    assert rows == [(1,)]  # A2: the repeat of the drawn A1, left out
    _, rows = run(opened, "SELECT count(*), sum(len(context_triples)) FROM context")
    assert rows == [(5, 5)]  # each line's article Q1: its one triple Q1 P1 Q2
    _, rows = run(opened, "SELECT pid, triples FROM relation_priors")
    assert rows == [("P1", 2)]
