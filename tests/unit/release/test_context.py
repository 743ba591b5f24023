"""The k-hop KG context (emerge_lib/release/context.py) on a planted graph: exact triples,
hops, order, cap, and the relation priors."""

from __future__ import annotations

from datetime import date

import pyarrow as pa

from emerge_lib.release.context import Graph, priors, seeds_of

#: Q1 - Q2 - Q3 - Q4 a chain by P1; Q1 P2 "1999" a literal (not walked through), and
#: "1999" also the object of Q9 (so walking through literals would reach Q9)
KG = [("Q1", "P1", "Q2"), ("Q2", "P1", "Q3"), ("Q3", "P1", "Q4"), ("Q1", "P2", "1999"),
      ("Q9", "P2", "1999"), ("Q5", "P1", "Q1")]


def table(rows: list[tuple[str, str, str]]) -> pa.Table:
    return pa.table({c: [r[i] for r in rows] for i, c in enumerate(("s", "p", "o"))})


def test_seeds_are_the_article_then_its_mentions_once() -> None:
    assert seeds_of("Q1", [{"qid": "Q2"}, {"qid": None}, {"qid": "Q1"}, {"qid": "Q3"}]) == [
        "Q1", "Q2", "Q3"]
    assert seeds_of(None, None) == []


def test_hops_both_ways_in_order_and_not_through_literals() -> None:
    one = Graph(table(KG), ["Q1"], 1).around(["Q1"], 1, 50)
    assert one == ([("Q1", "P1", "Q2", 1), ("Q1", "P2", "1999", 1), ("Q5", "P1", "Q1", 1)], 3)
    graph = Graph(table(KG), ["Q1", "Q4"], 2)
    assert graph.around(["Q1"], 2, 50) == ([
        ("Q1", "P1", "Q2", 1), ("Q1", "P2", "1999", 1), ("Q5", "P1", "Q1", 1),
        ("Q2", "P1", "Q3", 2)], 4)
    assert graph.around(["Q4"], 2, 50) == ([("Q3", "P1", "Q4", 1), ("Q2", "P1", "Q3", 2)], 2)
    assert graph.around(["Q404"], 2, 50) == ([], 0)


def test_the_cap_keeps_the_nearest_and_stops_the_walk() -> None:
    graph = Graph(table(KG), ["Q1"], 3)
    assert graph.around(["Q1"], 3, 2) == ([("Q1", "P1", "Q2", 1), ("Q1", "P2", "1999", 1)], 3)
    assert graph.around(["Q1"], 3, 4) == ([
        ("Q1", "P1", "Q2", 1), ("Q1", "P2", "1999", 1), ("Q5", "P1", "Q1", 1),
        ("Q2", "P1", "Q3", 2)], 4)


def test_relation_priors_count_every_relation_most_first() -> None:
    got = priors(date(2024, 1, 1), table(KG), {"P1": "follows", "P3": "unused"}).to_pylist()
    assert [(r["pid"], r["label"], r["triples"], r["share"]) for r in got] == [
        ("P1", "follows", 4, 4 / 6), ("P2", None, 2, 2 / 6), ("P3", "unused", 0, 0.0)]
