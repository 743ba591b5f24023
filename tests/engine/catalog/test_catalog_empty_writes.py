"""Every write the catalog makes returns, whatever the frame holds, on each engine the
project supports (Sail embedded and the Spark 4 cluster): zero rows into a new table and
into an existing partition, partitioned and unpartitioned tables, every write mode (the
first write's create, the guarded replace, merge, overwrite, the matched delete and
update), from local rows and from a query that finds nothing. And an engine call that
gets no answer fails within its deadline, naming the stage, the table and the operation."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from sparkkit import on_each_engine
from tablekit import item_row, stmt

from emerge_lib.catalog import Catalog
from emerge_lib.core.config import EngineSettings
from emerge_lib.core.engine import EngineCallTimeout, EngineError, engine_activity, spark_session

JAN, APR = "2024-01-01T00:00:00Z", "2024-04-01T00:00:00Z"


def empty(catalog: Catalog, name: str, source: str):
    """A frame of ``name``'s schema with no row: local data, or a query finding nothing."""
    if source == "local":
        return catalog.frame(name, [])
    return catalog.read(name).filter("false") if catalog.exists(name) else \
        catalog.frame(name, []).filter("false")


def kg_row(snapshot: str, s: str) -> dict:
    return {"snapshot": snapshot, "s": s, "p": "P1", "o": "Q2"}


@on_each_engine
@pytest.mark.parametrize("source", ["local", "query"])
def test_zero_rows_into_a_new_partitioned_table(catalog: Catalog, source: str) -> None:
    assert catalog.replace_partition("kg_triples", empty(catalog, "kg_triples", source),
                                     {"snapshot": JAN}) == 0
    assert catalog.replace_partitions("delta_triples", empty(catalog, "delta_triples", source),
                                      {"snapshot": JAN}, "window", [1, 2, 3],
                                      clear_others=True) == {1: 0, 2: 0, 3: 0}
    # a list column goes through the scratch table: zero rows there too
    assert catalog.replace_partitions("passages", empty(catalog, "passages", source),
                                      {"snapshot": JAN}, "window", [1, 2]) == {1: 0, 2: 0}
    for name in ("kg_triples", "delta_triples", "passages"):
        assert catalog.exists(name) and catalog.read_arrow(name).num_rows == 0
        assert catalog.read(name).count() == 0


@on_each_engine
@pytest.mark.parametrize("source", ["local", "query"])
def test_zero_rows_into_an_existing_partition_clears_only_it(catalog: Catalog,
                                                            source: str) -> None:
    catalog.replace_partition("kg_triples", catalog.frame("kg_triples", [kg_row(JAN, "Q1")]),
                              {"snapshot": JAN})
    catalog.replace_partition("kg_triples", catalog.frame("kg_triples", [kg_row(APR, "Q7")]),
                              {"snapshot": APR})
    assert catalog.replace_partition("kg_triples", empty(catalog, "kg_triples", source),
                                     {"snapshot": JAN}) == 0
    assert [r["s"] for r in catalog.read_arrow("kg_triples").to_pylist()] == ["Q7"]
    # and zero rows into a partition that has none yet
    assert catalog.replace_partition("kg_triples", empty(catalog, "kg_triples", source),
                                     {"snapshot": "2024-07-01T00:00:00Z"}) == 0
    assert catalog.read_arrow("kg_triples").num_rows == 1


@on_each_engine
@pytest.mark.parametrize("source", ["local", "query"])
def test_zero_rows_through_overwrite_merge_delete_and_update(catalog: Catalog,
                                                            source: str) -> None:
    # unpartitioned overwrite: a new table, then over rows
    catalog.overwrite("stable_statements", empty(catalog, "stable_statements", source))
    assert catalog.exists("stable_statements")
    assert catalog.read_arrow("stable_statements").num_rows == 0
    # merge: nothing to merge commits nothing (a new table stays absent, reads as empty)
    for name in ("property_timeline", "statement_timeline"):  # unpartitioned, partitioned
        assert catalog.merge(name, empty(catalog, name, source)) == 0
        assert catalog.read_arrow(name).num_rows == 0
    rows = [stmt("Q1", "P1", "Q2", -5, None)]
    assert catalog.merge("statement_timeline", catalog.frame("statement_timeline", rows)) == 1
    assert catalog.merge("statement_timeline", empty(catalog, "statement_timeline", source)) == 0
    catalog.merge("item_timeline", catalog.frame("item_timeline", [item_row("Q1", -9, None,
                                                                            "One", 1)]))
    keys = empty(catalog, "statement_timeline", source).select("s", "p", "o")
    catalog.delete_matching("statement_timeline", keys, ["s", "p", "o"])
    updates = empty(catalog, "item_timeline", source)
    catalog.update_matching("item_timeline", updates, "t.qid = s.qid",
                            {"valid_to": "s.valid_from"})
    assert [r["s"] for r in catalog.read_arrow("statement_timeline").to_pylist()] == ["Q1"]
    assert catalog.read_arrow("item_timeline").to_pylist()[0]["valid_to"] is None
    stable = catalog.read("statement_timeline").selectExpr(
        "s", "p", "o", "valid_from", "valid_to")
    catalog.overwrite("stable_statements", stable)
    catalog.overwrite("stable_statements", empty(catalog, "stable_statements", source))
    assert catalog.read_arrow("stable_statements").num_rows == 0


@pytest.fixture(scope="module")
def impatient_spark():
    """An engine of its own whose calls may take two seconds (a test that times a call out
    must not touch the session the other tests share)."""
    with spark_session(EngineSettings(call_timeout_s=2)) as session:
        yield session


def test_a_call_with_no_answer_fails_in_one_line_naming_what_it_asked(
        impatient_spark, tmp_path: Path) -> None:
    catalog = Catalog(tmp_path / "warehouse", impatient_spark)
    endless = impatient_spark.range(10**11).selectExpr("sum(id * id % 7) AS s")
    started = time.monotonic()
    with engine_activity("stage deltas 2024-01-01T00:00:00Z"), \
            pytest.raises(EngineCallTimeout) as info:
        catalog._committed("delta_triples", "replace windows 1-5", endless.collect)
    assert time.monotonic() - started < 20
    text = str(info.value)
    assert text.startswith("stage deltas 2024-01-01T00:00:00Z, delta_triples: replace "
                           "windows 1-5 (a query): the engine gave no answer within 2s")
    assert "\n" not in text and info.value.retryable
    # the engine honoured the interrupt: the session goes on
    assert impatient_spark.sql("SELECT 1 AS x").collect()[0].x == 1
    with pytest.raises(EngineCallTimeout, match=r"a scratch table \(materialize\)"):
        catalog.materialize(endless)


def test_an_idle_session_lives_as_long_as_configured() -> None:
    """Sail ends a session idle for engine.session_timeout_s (its own default is 15
    minutes, which a curation-long pause exceeded); the setting reaches the server."""
    with spark_session(EngineSettings(session_timeout_s=1)) as short:
        short.sql("SELECT 1").collect()
        time.sleep(3)
        with pytest.raises(EngineError, match="the engine ended this session"):
            short.sql("SELECT 1").collect()
    with spark_session(EngineSettings(session_timeout_s=60)) as longer:
        longer.sql("SELECT 1").collect()
        time.sleep(3)
        assert longer.sql("SELECT 1 AS x").collect()[0].x == 1
