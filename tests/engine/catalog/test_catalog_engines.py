"""Where Sail and Apache Spark with Delta Lake differ in what the catalog relies on, each
difference measured on both engines (``on_each_engine``), next to the catalog's one code
path that handles it, switched by what the engine reports (``EngineTraits``):
docs/architecture.md, "Sail and Spark", names each with its test here."""

from __future__ import annotations

import gc
import threading
from pathlib import Path

import pytest
from sparkkit import on_each_engine
from tablekit import stmt

from emerge_lib.catalog import Catalog, CatalogError, spec
from emerge_lib.catalog.catalog import _GUARD_MARK, _guard_detail
from emerge_lib.core.engine import EngineTraits, engine_traits

JAN, APR = "2024-01-01T00:00:00Z", "2024-04-01T00:00:00Z"


def kg(snapshot: str, *subjects: str) -> list[dict]:
    return [{"snapshot": snapshot, "s": s, "p": "P1", "o": "Q2"} for s in subjects]


@pytest.mark.spark
def test_the_engine_says_what_it_is(spark, spark4) -> None:
    """Both report Spark's API version; only Spark's version() begins with it."""
    assert engine_traits(spark4) == EngineTraits("spark", spark4.version)
    sail = engine_traits(spark)
    assert sail.name == "sail" and sail.version != spark.version
    assert engine_traits(spark4).path("s3://b/w/t") == "s3a://b/w/t"  # Hadoop's S3A
    assert sail.path("s3://b/w/t") == "s3://b/w/t" and sail.path("/w/t") == "/w/t"


@on_each_engine
def test_replace_where_with_a_row_outside_its_predicate(catalog: Catalog) -> None:
    """Delta-Spark refuses the write (DELTA_REPLACE_WHERE_MISMATCH), Sail writes the stray
    row; the catalog's guard refuses it first on both, with one message."""
    catalog.replace_partition("kg_triples", catalog.frame("kg_triples", kg(JAN, "Q1")),
                              {"snapshot": JAN})
    stray = catalog.frame("kg_triples", kg(JAN, "Q3") + kg(APR, "Q4"))
    raw = (stray.write.format("delta").mode("overwrite")
           .option("replaceWhere", f"snapshot = '{JAN}'").partitionBy("snapshot"))
    if catalog.traits.name == "spark":
        with pytest.raises(Exception, match="DELTA_REPLACE_WHERE_MISMATCH"):
            raw.save(catalog.spark_path("kg_triples"))
        assert catalog.read_arrow("kg_triples").num_rows == 1
    else:
        raw.save(catalog.spark_path("kg_triples"))
        assert {r["s"] for r in catalog.read_arrow("kg_triples").to_pylist()} == {"Q3", "Q4"}
    with pytest.raises(CatalogError) as info:
        catalog.replace_partition("kg_triples", stray, {"snapshot": JAN})
    assert str(info.value).endswith(f"e.g. a row with snapshot = {APR}; nothing was written")


def test_the_guard_message_is_the_same_from_either_engine() -> None:
    """Spark wraps raise_error's message in its error class and appends the SQLSTATE."""
    sail = f"{_GUARD_MARK} snapshot = a, window = 9\n"
    spark = (f"[USER_RAISED_EXCEPTION] {_GUARD_MARK} snapshot = a, window = 9 SQLSTATE: "
             "P0001\n\nJVM stacktrace: …")
    assert _guard_detail(sail) == _guard_detail(spark) == "snapshot = a, window = 9"


@on_each_engine
def test_replace_where_on_a_path_without_a_table(catalog: Catalog) -> None:
    """Spark creates the table, Sail refuses: the catalog's first write of a table is an
    append (``_create_or``), the same on both."""
    frame = catalog.frame("kg_triples", kg(JAN, "Q1"))
    raw = (frame.write.format("delta").mode("overwrite")
           .option("replaceWhere", f"snapshot = '{JAN}'").partitionBy("snapshot"))
    if catalog.traits.name == "spark":
        raw.save(catalog.spark_path("kg_triples"))
        assert catalog.read_arrow("kg_triples").num_rows == 1
    else:
        with pytest.raises(Exception):  # noqa: B017  (Sail's message is its own)
            raw.save(catalog.spark_path("kg_triples"))
        assert not catalog.exists("kg_triples")
    assert catalog.replace_partition("relations", catalog.frame("relations", [
        {"snapshot": JAN, "pid": "P1", "label": "x", "description": None}]),
        {"snapshot": JAN}) == 1


@on_each_engine
def test_partition_columns_are_stored_where_the_engine_puts_them(catalog: Catalog) -> None:
    """Sail stores a partitioned table's partition columns last, Spark where the frame had
    them (first, as declared); reads through the catalog give the declared order on both,
    and the tables are protocol 1/2 without deletion vectors (delta-rs reads them)."""
    from deltalake import DeltaTable

    catalog.replace_partition("kg_triples", catalog.frame("kg_triples", kg(JAN, "Q1")),
                              {"snapshot": JAN})
    stored = DeltaTable(catalog.path("kg_triples")).schema().to_arrow().names
    assert stored == (["snapshot", "s", "p", "o"] if catalog.traits.name == "spark"
                      else ["s", "p", "o", "snapshot"])
    assert catalog.read_arrow("kg_triples").column_names == ["snapshot", "s", "p", "o"]
    # a delete (a matched MERGE) leaves no deletion vector for delta-rs to trip on
    rows = [stmt("Q1", "P1", "Q2", -5, None), stmt("Q3", "P1", "Q2", -5, None)]
    catalog.merge("statement_timeline", catalog.frame("statement_timeline", rows))
    catalog.delete_matching("statement_timeline",
                            catalog.frame("statement_timeline", rows[:1]), ["s", "p", "o"])
    assert [r["s"] for r in catalog.read_arrow("statement_timeline").to_pylist()] == ["Q3"]
    protocol = DeltaTable(catalog.path("statement_timeline")).protocol()
    assert (protocol.min_reader_version, protocol.min_writer_version) == (1, 2)
    assert not protocol.reader_features


@on_each_engine
def test_a_materialized_frame_lives_until_the_next_cleanup(catalog: Catalog,
                                                           tmp_path: Path) -> None:
    """Spark keeps a local checkpoint (and releases it when its DataFrame object is
    collected, even while a frame of spark.sql over it is in use); Sail's cache() is a
    no-op and localCheckpoint fails, so there a scratch Delta table holds the rows. Either
    lives until the catalog's next cleanup."""
    spark = catalog.session()
    kept = catalog.materialize(spark.range(5).selectExpr("id", "id % 2 AS k"))
    query = spark.sql("SELECT k, count(*) AS n FROM {t} GROUP BY k ORDER BY k", t=kept)
    del kept
    gc.collect()
    assert [tuple(r) for r in query.collect()] == [(0, 3), (1, 2)]
    scratch = tmp_path / "warehouse" / "_scratch"
    assert scratch.is_dir() == (catalog.traits.name == "sail")
    catalog.clean_scratch()
    assert not any(scratch.glob("*")) if scratch.is_dir() else True


@pytest.mark.spark
def test_a_checkpoint_stays_on_its_own_session_when_another_is_active(
        spark, spark4, tmp_path: Path) -> None:
    """PySpark binds a checkpoint's result to the thread's active session; with Sail's
    active, a plan over a Spark 4 checkpoint went to Sail ("remote checkpoint relation
    does not exist"), as in a test process that opened Sail's session first."""
    from pyspark.sql.connect.session import SparkSession

    local = SparkSession._active_session
    before = getattr(local, "session", None)
    local.session = spark  # Sail's, as when its fixture ran first
    try:
        catalog = Catalog(tmp_path / "warehouse", spark4)
        first = catalog.materialize(spark4.range(10).selectExpr("id", "id % 3 AS k"))
        assert first.sparkSession is spark4
        second = catalog.materialize(first.filter("k = 0").select("id"))  # over the first
        assert sorted(r.id for r in second.collect()) == [0, 3, 6, 9]
        assert SparkSession.active() is spark  # put back
    finally:
        local.session = before


@on_each_engine
def test_a_list_column_from_local_rows_through_replace_where(catalog: Catalog) -> None:
    """Sail's replaceWhere refuses list elements named otherwise than in the table's files
    (a frame from local rows); Spark takes it: on Sail only it goes through a scratch
    table."""
    mention = {"start": 0, "end": 3, "anchor": "One", "target": "One", "qid": "Q1"}
    row = {**dict.fromkeys(spec("passages").schema.names), "snapshot": JAN, "window": 1,
           "passage_id": "p1", "page_id": 1, "text": "One two", "mentions": [mention]}
    for attempt in range(2):  # a new table, then beside its own files
        counts = catalog.replace_partitions("passages", catalog.frame("passages", [row]),
                                            {"snapshot": JAN}, "window", [1, 2])
        assert counts == {1: 1, 2: 0}, attempt
    (back,) = catalog.read_arrow("passages").to_pylist()
    assert back["mentions"] == [mention]
    assert catalog.traits.replace_where_any_lists == (catalog.traits.name == "spark")


@on_each_engine
def test_concurrent_merges_into_different_partitions_all_land(catalog: Catalog) -> None:
    """Delta-Spark's optimistic commit refuses the second of two MERGEs into different
    partitions of one table (ConcurrentAppendException: the match reads the whole table),
    Sail the second of any two commits; the catalog retries both kinds."""
    catalog.merge("statement_timeline", catalog.frame("statement_timeline",
                                                      [stmt("Q0", "P1", "Q2", -5, None)]))
    errors: list[BaseException] = []

    def write(i: int) -> None:
        own = Catalog(catalog.warehouse, catalog.spark)
        rows = [{**stmt(f"Q{i}{j}", "P1", "Q2", -5, None), "s_bucket": i} for j in range(3)]
        try:
            own.merge("statement_timeline", own.frame("statement_timeline", rows))
        except BaseException as exc:  # noqa: BLE001  (reported below)
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(i,)) for i in (1, 2, 3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    got = catalog.read_arrow("statement_timeline").to_pylist()
    assert len(got) == 10 and len({r["s"] for r in got}) == 10


@on_each_engine
def test_a_filter_on_a_column_the_log_keeps_no_bounds_of(catalog: Catalog) -> None:
    """Delta-Spark keeps no minimum or maximum of a boolean column in the Delta log (Sail
    does); delta-rs's pyarrow fragments then bound the column by nulls, and a filter on
    it found no row at all: the release kept the near-duplicates Sail's left out. The
    catalog's reads know a file by its partition values only (``_arrow_dataset``)."""
    import pyarrow as pa
    from deltalake import DeltaTable
    from pyarrow import compute as pc

    rows = [{**dict.fromkeys(spec("selection").schema.names), "snapshot": JAN, "window": w,
             "passage_id": f"p{w}{kept}", "kept": kept, "rank": 1, "evaluation_set": False}
            for w in (1, 2) for kept in (True, False)]
    catalog.replace_partitions("selection", catalog.frame("selection", rows), {"snapshot": JAN},
                               "window", [1, 2])
    log = DeltaTable(catalog.path("selection"))
    actions = pa.table(log.get_add_actions(flatten=True))
    bounded = "min.kept" in actions.column_names and actions["min.kept"].null_count == 0
    assert bounded == (catalog.traits.name == "sail")
    raw = log.to_pyarrow_dataset().to_table(filter=pc.field("kept") == False)  # noqa: E712
    assert raw.num_rows == (2 if bounded else 0)
    left_out = catalog.read_arrow("selection", filters=[("kept", "=", False)])
    assert sorted(left_out["passage_id"].to_pylist()) == ["p1False", "p2False"]
    assert catalog.read_arrow("selection", filters=[("window", "=", 2), ("kept", "=", True)]
                              )["passage_id"].to_pylist() == ["p2True"]
