"""The catalog on the real embedded engine (Sail) with real Delta tables; its guarded writes
(the replace guard, counts from the log, merges, matched deletes and updates, nested
columns, concurrent writers) on each engine the project supports (``on_each_engine``:
the Spark 4 cluster too)."""

from __future__ import annotations

import socket
from datetime import UTC, datetime
from pathlib import Path

import pyarrow as pa
import pytest
from sparkkit import on_each_engine

from emerge_lib.catalog import TABLES, Catalog, CatalogError, TableSpec, spark_type, spec


def rows(snapshot: str, *triples: tuple[str, str, str]) -> list[dict]:
    return [{"snapshot": snapshot, "s": s, "p": p, "o": o} for s, p, o in triples]


def as_set(table: pa.Table) -> set[tuple]:
    return {(r["snapshot"], r["s"], r["p"], r["o"]) for r in table.to_pylist()}


def test_every_table_is_well_formed() -> None:
    assert {"statement_timeline", "item_timeline", "kg_triples", "instances"} <= set(TABLES)
    for name, s in TABLES.items():
        assert s.name == name
        assert s.producers, name
        assert s.description
        assert spark_type(s.schema.field(0).type)
        # the DDL mentions every column once
        assert all(s.ddl.count(f"`{c}` ") >= 1 for c in s.schema.names)
    assert spec("kg_triples").partition_by == ("snapshot",)
    assert spec("statement_timeline").write_mode == "merge"


def test_bad_specs_are_refused() -> None:
    schema = pa.schema([("a", pa.string())])
    with pytest.raises(CatalogError, match="not in its schema"):
        TableSpec("x", schema, "overwrite", ("x",), "d", partition_by=("b",))
    with pytest.raises(CatalogError, match="needs a key"):
        TableSpec("x", schema, "merge", ("x",), "d")
    with pytest.raises(CatalogError, match="no table named"):
        spec("nope")


def test_partition_replace_touches_only_its_partition(catalog: Catalog) -> None:
    jan, apr = "2024-01-01", "2024-04-01"
    catalog.replace_partition(
        "kg_triples", catalog.frame("kg_triples", rows(jan, ("Q1", "P1", "Q2"))), {"snapshot": jan}
    )
    catalog.replace_partition(
        "kg_triples",
        catalog.frame("kg_triples", rows(apr, ("Q1", "P1", "Q3"), ("Q4", "P2", "Q5"))),
        {"snapshot": apr},
    )
    catalog.replace_partition(
        "kg_triples", catalog.frame("kg_triples", rows(jan, ("Q9", "P9", "Q8"))), {"snapshot": jan}
    )
    expected = {(jan, "Q9", "P9", "Q8"), (apr, "Q1", "P1", "Q3"), (apr, "Q4", "P2", "Q5")}
    assert as_set(catalog.read_arrow("kg_triples")) == expected
    spark_rows = catalog.read("kg_triples").collect()
    assert {(r.snapshot, r.s, r.p, r.o) for r in spark_rows} == expected
    # rerunning the same task leaves the same table (idempotent)
    catalog.replace_partition(
        "kg_triples", catalog.frame("kg_triples", rows(jan, ("Q9", "P9", "Q8"))), {"snapshot": jan}
    )
    assert catalog.read_arrow("kg_triples").num_rows == 3


@on_each_engine
def test_rows_outside_the_partition_are_refused_and_nothing_is_written(catalog: Catalog) -> None:
    jan, apr = "2024-01-01", "2024-04-01"
    catalog.replace_partition(
        "kg_triples", catalog.frame("kg_triples", rows(jan, ("Q1", "P1", "Q2"))), {"snapshot": jan}
    )
    catalog.replace_partition(
        "kg_triples", catalog.frame("kg_triples", rows(apr, ("Q7", "P1", "Q2"))), {"snapshot": apr}
    )
    before = catalog.version("kg_triples")
    stray = catalog.frame("kg_triples", rows(jan, ("Q1", "P1", "Q3")) + rows(apr, ("Q6", "P6", "Q6")))
    with pytest.raises(CatalogError, match="outside the partition"):
        catalog.replace_partition("kg_triples", stray, {"snapshot": jan})
    assert catalog.version("kg_triples") == before
    assert as_set(catalog.read_arrow("kg_triples")) == {
        (jan, "Q1", "P1", "Q2"),
        (apr, "Q7", "P1", "Q2"),
    }
    with pytest.raises(CatalogError, match="exactly the partition columns"):
        catalog.replace_partition("delta_triples", catalog.frame("delta_triples", []), {"snapshot": jan})


def test_sail_trap_dynamic_overwrite_replaces_whole_table(catalog: Catalog, spark) -> None:
    """Characterizes the Sail 0.7 trap the catalog avoids (docs/architecture.md, "The
    catalog and its write modes").

    If this starts failing, Sail fixed dynamic partition overwrite; the catalog's guard
    stays correct either way.
    """
    path = catalog.path("kg_triples")
    df = catalog.frame("kg_triples", rows("a", ("Q1", "P1", "Q2")) + rows("b", ("Q3", "P1", "Q4")))
    df.write.format("delta").partitionBy("snapshot").save(path)
    only_a = catalog.frame("kg_triples", rows("a", ("Q5", "P1", "Q6")))
    (
        only_a.write.format("delta")
        .mode("overwrite")
        .option("partitionOverwriteMode", "dynamic")
        .partitionBy("snapshot")
        .save(path)
    )
    assert as_set(catalog.read_arrow("kg_triples")) == {("a", "Q5", "P1", "Q6")}


@on_each_engine
def test_merge_updates_and_inserts_on_the_key(catalog: Catalog) -> None:
    ts = datetime(2024, 1, 1, tzinfo=UTC)
    first = [{"wiki": "wikidatawiki", "page_id": 1, "title": "Q1", "last_rev_id": 10, "last_timestamp": ts}]
    catalog.merge("page_watermarks", catalog.frame("page_watermarks", first))
    second = [
        {"wiki": "wikidatawiki", "page_id": 1, "title": "Q1", "last_rev_id": 12, "last_timestamp": ts},
        {"wiki": "wikidatawiki", "page_id": 2, "title": "Q2", "last_rev_id": 3, "last_timestamp": ts},
    ]
    catalog.merge("page_watermarks", catalog.frame("page_watermarks", second))
    catalog.merge("page_watermarks", catalog.frame("page_watermarks", second))  # idempotent
    got = sorted(
        (r["page_id"], r["last_rev_id"], r["last_timestamp"])
        for r in catalog.read_arrow("page_watermarks").to_pylist()
    )
    assert got == [(1, 12, ts), (2, 3, ts)]
    dup = second + [second[0]]
    with pytest.raises(CatalogError, match="duplicate merge key"):
        catalog.merge("page_watermarks", catalog.frame("page_watermarks", dup))


@on_each_engine
def test_nested_qualifiers_round_trip(catalog: Catalog) -> None:
    q = {"pid": "P580", "kind": "time", "time": "+2001-00-00T00:00:00Z", "precision": 9,
         "instant": datetime(2001, 1, 1, tzinfo=UTC), "item": None}
    row = {"s": "Q1", "p": "P39", "o": "Q2", "statement_id": "Q1$a", "rank": "preferred",
           "version_hash": "h1",
           "qualifiers": [q], "valid_from": datetime(2020, 5, 1, 12, 30, tzinfo=UTC),
           "valid_to": None, "rev_from": 7, "rev_to": None, "s_bucket": 3}
    catalog.merge("statement_timeline", catalog.frame("statement_timeline", [row]))
    (back,) = catalog.read_arrow("statement_timeline").to_pylist()
    assert back == row


def test_conform_refuses_wrong_columns(catalog: Catalog, spark) -> None:
    df = spark.createDataFrame([("x", "Q1")], "snapshot string, s string")
    with pytest.raises(CatalogError, match="missing"):
        catalog.conform("kg_triples", df)


def test_embedded_engine_leaves_nothing_running() -> None:
    from emerge_lib.core.engine import embedded_server

    with embedded_server() as url:
        port = int(url.rsplit(":", 1)[1])
        with socket.create_connection(("127.0.0.1", port), timeout=2):
            pass
    with pytest.raises(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
        pass


@on_each_engine
def test_replace_partitions_of_a_snapshot_in_one_transaction(catalog: Catalog) -> None:
    def inst(snapshot: str, window: int, s: str) -> dict:
        return {"snapshot": snapshot, "window": window, "passage_id": "p", "op": "E",
                "s": s, "p": "P1", "o": "Q9"}

    other = [inst("b", 1, "Q7")]
    catalog.replace_partitions("instances", catalog.frame("instances", other), {"snapshot": "b"},
                               "window", [1])
    first = [inst("a", 1, "Q1"), inst("a", 2, "Q2"), inst("a", 5, "Q5")]
    counts = catalog.replace_partitions("instances", catalog.frame("instances", first),
                                        {"snapshot": "a"}, "window", range(1, 6))
    assert counts == {1: 1, 2: 1, 3: 0, 4: 0, 5: 1}
    # rebuilt with 3 windows: window 5 must not survive, snapshot b is untouched
    again = [inst("a", 1, "Q1"), inst("a", 3, "Q3")]
    catalog.replace_partitions("instances", catalog.frame("instances", again), {"snapshot": "a"},
                               "window", range(1, 4), clear_others=True)
    rows = {(r["snapshot"], r["window"], r["s"]) for r in catalog.read_arrow("instances").to_pylist()}
    assert rows == {("a", 1, "Q1"), ("a", 3, "Q3"), ("b", 1, "Q7")}
    before = catalog.version("instances")
    # the guard runs while the rows are written: the refusal names the stray row's
    # partition values, and the failed write commits nothing
    with pytest.raises(CatalogError, match="outside the partition.*snapshot = a, window = 9"):
        catalog.replace_partitions("instances", catalog.frame("instances", [inst("a", 9, "Q9")]),
                                   {"snapshot": "a"}, "window", range(1, 4))
    with pytest.raises(CatalogError, match="window = NULL"):
        catalog.replace_partitions(
            "instances", catalog.frame("instances", [inst("a", 1, "Q1"), {**inst("a", 1, "Q2"),
                                                                            "window": None}]),
            {"snapshot": "a"}, "window", range(1, 4))
    assert catalog.version("instances") == before
    assert len(rows) == catalog.read_arrow("instances").num_rows
    # the counts come from the commit's file statistics: two files in one window add up
    counts = catalog.replace_partitions(
        "instances", catalog.frame("instances", [inst("a", 2, f"Q{i}") for i in range(7)]
                                   ).repartition(2), {"snapshot": "a"}, "window", [2, 3])
    assert counts == {2: 7, 3: 0}


def test_remote_engine_url_connects_to_any_spark_connect_server(tmp_path) -> None:
    """`engine.url: sc://host:port` reaches a server started elsewhere (here: a Sail one)."""
    from emerge_lib.core.engine import embedded_server, spark_session

    with embedded_server() as url, spark_session(url) as remote:
        assert url.startswith("sc://127.0.0.1:")
        catalog = Catalog(tmp_path / "wh", remote)
        catalog.replace_partition(
            "kg_triples", catalog.frame("kg_triples", rows("t", ("Q1", "P1", "Q2"))), {"snapshot": "t"}
        )
        assert as_set(catalog.read_arrow("kg_triples")) == {("t", "Q1", "P1", "Q2")}
        assert remote.conf.get("spark.sql.session.timeZone") == "UTC"


def test_each_write_method_is_refused_for_a_table_of_another_write_mode(catalog: Catalog) -> None:
    kg = catalog.frame("kg_triples", rows("a", ("Q1", "P1", "Q2")))
    with pytest.raises(CatalogError, match="replace_partition, not by merge"):
        catalog.merge("kg_triples", kg)
    with pytest.raises(CatalogError, match="not by overwrite"):
        catalog.overwrite("kg_triples", kg)
    with pytest.raises(CatalogError, match="not by merge"):
        catalog.delete_matching("kg_triples", kg, on=["s"])
    stable = catalog.frame("stable_statements", [])
    with pytest.raises(CatalogError, match="not by replace_partition"):
        catalog.replace_partition("stable_statements", stable, {})
    assert not catalog.exists("kg_triples") and not catalog.exists("stable_statements")


def _marks(*pairs: tuple[int, int]) -> list[dict]:
    ts = datetime(2024, 1, 1, tzinfo=UTC)
    return [{"wiki": "w", "page_id": p, "title": f"Q{p}", "last_rev_id": r, "last_timestamp": ts}
            for p, r in pairs]


@on_each_engine
def test_delete_and_update_matching(catalog: Catalog, engine) -> None:
    spark = engine
    catalog.merge("page_watermarks", catalog.frame("page_watermarks", _marks((1, 10), (2, 20), (3, 30))))
    keys = spark.createDataFrame([("w", 2), ("w", 9)], "wiki string, page_id bigint")
    catalog.delete_matching("page_watermarks", keys, on=["wiki", "page_id"])
    updates = spark.createDataFrame([(1, 11), (3, 29)], "page_id bigint, rev bigint")
    # only rows matching the whole condition change: page 3 is not below 29
    catalog.update_matching("page_watermarks", updates,
                            "t.page_id = s.page_id AND t.last_rev_id < s.rev",
                            {"last_rev_id": "s.rev"})
    got = sorted((r["page_id"], r["last_rev_id"]) for r in catalog.read_arrow("page_watermarks").to_pylist())
    assert got == [(1, 11), (3, 30)]
    with pytest.raises(CatalogError, match="unknown columns"):
        catalog.update_matching("page_watermarks", updates, "t.page_id = s.page_id", {"nope": "1"})


def test_an_empty_merge_commits_nothing(catalog: Catalog) -> None:
    catalog.merge("page_watermarks", catalog.frame("page_watermarks", _marks((1, 10))))
    before = catalog.version("page_watermarks")
    assert catalog.merge("page_watermarks", catalog.frame("page_watermarks", [])) == 0
    assert catalog.version("page_watermarks") == before


def test_row_counts_come_from_the_log_and_reads_pin_a_version(catalog: Catalog) -> None:
    catalog.replace_partition("kg_triples", catalog.frame("kg_triples", rows("a", ("Q1", "P1", "Q2"))),
                              {"snapshot": "a"})
    v0 = catalog.version("kg_triples")
    catalog.replace_partition("kg_triples", catalog.frame(
        "kg_triples", rows("b", ("Q1", "P1", "Q3"), ("Q2", "P1", "Q3"))), {"snapshot": "b"})
    assert catalog.row_count("kg_triples") == 3 == catalog.read_arrow("kg_triples").num_rows
    assert catalog.row_count("kg_triples", version=v0) == 1
    assert as_set(catalog.read_arrow("kg_triples", version=v0)) == {("a", "Q1", "P1", "Q2")}
    assert catalog.row_count("relations") == 0  # a missing table


def test_a_lost_commit_race_is_retried_and_the_last_loss_is_retryable(catalog: Catalog) -> None:
    from emerge_lib.catalog import CommitConflictError

    calls: list[int] = []

    def flaky() -> str:
        calls.append(1)
        if len(calls) < 3:
            raise RuntimeError("Failed to commit transaction: 0")
        return "done"

    assert catalog._committed("kg_triples", "test", flaky) == "done" and len(calls) == 3
    impatient = Catalog(catalog.warehouse, catalog.spark, commit_attempts=2)
    calls.clear()
    with pytest.raises(CommitConflictError, match="kg_triples") as info:
        impatient._committed("kg_triples", "test", flaky)
    assert info.value.retryable and len(calls) == 2
    with pytest.raises(ValueError, match="other"):  # any other error is not retried
        catalog._committed("kg_triples", "test", lambda: (_ for _ in ()).throw(ValueError("other")))


@on_each_engine
def test_concurrent_writers_to_disjoint_partitions_all_land_once(catalog: Catalog) -> None:
    """Sail 0.7 lets one of several simultaneous commits win and fails the others
    ("Failed to commit transaction"); the catalog retries them, so every writer lands."""
    from concurrent.futures import ThreadPoolExecutor

    catalog.replace_partition("kg_triples", catalog.frame("kg_triples", rows("s0", ("Q0", "P0", "Q0"))),
                              {"snapshot": "s0"})
    writers = 4

    def write(i: int) -> int:
        own = Catalog(catalog.warehouse, catalog.spark)  # per-task catalog, shared engine
        frame = own.frame("kg_triples", rows(f"s{i}", *[(f"Q{i}", "P1", f"Q{j}") for j in range(5)]))
        return own.replace_partition("kg_triples", frame, {"snapshot": f"s{i}"})

    with ThreadPoolExecutor(writers) as pool:
        assert list(pool.map(write, range(1, writers + 1))) == [5] * writers
    got = catalog.read_arrow("kg_triples").to_pylist()
    assert len(got) == 1 + 5 * writers
    assert len({(r["snapshot"], r["s"], r["o"]) for r in got}) == len(got)


def test_a_process_that_reads_and_exits_exits_cleanly(tmp_path: Path) -> None:
    """deltalake's file system handler on pyarrow's thread pool aborted the interpreter at
    exit (SIGABRT, "terminate called without an active exception") in most processes that
    exited soon after a threaded read, as `emerge demo` did; reads are single-threaded."""
    import subprocess
    import sys

    from deltalake import write_deltalake

    rows = [{"snapshot": "2024-01-01T00:00:00Z", "s": f"Q{i}", "p": "P31", "o": "Q5"}
            for i in range(1, 2001)]
    write_deltalake(str(tmp_path / "kg_triples"), pa.Table.from_pylist(
        rows, schema=spec("kg_triples").schema), partition_by=["snapshot"])
    code = ("from emerge_lib.catalog import Catalog\n"
            f"t = Catalog({str(tmp_path)!r}).read_arrow('kg_triples', "
            "filters=[('snapshot', '=', '2024-01-01T00:00:00Z')])\n"
            "print(t.num_rows)")
    for _ in range(4):
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                              timeout=120)
        assert (done.returncode, done.stdout.strip()) == (0, "2000"), done.stderr[-500:]
    # the rare abort left (1 run in ~1,000 under load) came from deltalake's Python file
    # system handler on pyarrow's I/O threads: a local table is read without it
    from pyarrow.fs import LocalFileSystem

    assert isinstance(Catalog(tmp_path).dataset("kg_triples").filesystem, LocalFileSystem)


@pytest.mark.parametrize("how", ["replace", "merge"])
def test_two_first_writes_of_a_new_table_side_by_side_land_once(catalog: Catalog,
                                                                how: str) -> None:
    """Two writers of one partition into a table that does not exist yet (two builds of
    one snapshot into a fresh warehouse): both found no table and both appended, so every
    row was there twice. The table is created empty first (two empty creates add no row),
    then each writer's guarded replace or MERGE runs: the table holds the rows once."""
    from concurrent.futures import ThreadPoolExecutor

    name = "kg_triples" if how == "replace" else "verdicts"
    for attempt in range(3):  # the race is narrow: a few rounds, each on a fresh table
        warehouse = Path(catalog.warehouse) / f"round{attempt}"

        def write(_: int, warehouse: Path = warehouse) -> None:
            own = Catalog(warehouse, catalog.spark)
            if how == "replace":
                frame = own.frame(name, rows("s1", *[("Q1", "P1", f"Q{j}") for j in range(50)]))
                own.replace_partition(name, frame, {"snapshot": "s1"})
            else:
                frame = own.frame(name, [_verdict(j) for j in range(50)])
                own.merge(name, frame)

        with ThreadPoolExecutor(2) as pool:
            list(pool.map(write, range(2)))
        assert Catalog(warehouse).read_arrow(name).num_rows == 50


def _verdict(j: int) -> dict:
    return {"snapshot": "s1", "window": 1, "passage_id": f"p{j}", "s": "Q1", "p": "P1",
            "o": "Q2", "llm_name": "m", "prompt_type": "triple_assertion", "prompt_sha": "x",
            "verdict": "YES"}


@on_each_engine
def test_replace_keys_changes_only_the_rows_of_its_keys(catalog: Catalog) -> None:
    t = datetime(2024, 1, 1, tzinfo=UTC)
    name = "stable_statements"
    rows = [{"s": s, "p": "P1", "o": "Q9", "valid_from": t, "valid_to": None}
            for s in ("Q1", "Q2", "Q3")]
    catalog.overwrite(name, catalog.frame(name, rows))
    keys = catalog.session().createDataFrame([("Q1", "P1", "Q9"), ("Q2", "P1", "Q9")],
                                             "s string, p string, o string")
    new = catalog.frame(name, [{**rows[0], "valid_to": t}])  # Q1 changed, Q2 gone
    done = catalog.replace_keys(name, new, keys, ("s", "p", "o"))
    assert (done.deleted, done.inserted) == (2, 1)
    want = sorted([("Q1", t), ("Q3", None)], key=str)

    def got() -> list:
        return sorted(((r["s"], r["valid_to"]) for r in catalog.read_arrow(name).to_pylist()),
                      key=str)

    assert got() == want
    version = catalog.version(name)
    again = catalog.replace_keys(name, new, keys, ("s", "p", "o"))
    assert (again.deleted, again.inserted, catalog.version(name)) == (0, 0, version)
    outside = catalog.frame(name, [{**rows[2], "valid_to": t}])
    with pytest.raises(CatalogError, match=r"1 new row\(s\) outside the keys replaced, e\.g\. "
                                           r"s = Q3, p = P1, o = Q9; nothing was written"):
        catalog.replace_keys(name, outside, keys, ("s", "p", "o"))
    assert (got(), catalog.version(name)) == (want, version)


def _passage(n: int, **changed: object) -> dict[str, object]:
    """A passages row of snapshot 2024-01-01 (nested mentions, timestamps, NULLs)."""
    row: dict[str, object] = {
        "snapshot": "2024-01-01", "window": 1 + n % 2, "passage_id": f"p{n}", "page_id": n,
        "page_title": f"Page {n}", "page_qid": None, "rev_id": 100 + n,
        "rev_timestamp": datetime(2024, 1, 2, 3, 4, 5, 6, tzinfo=UTC), "paragraph_idx": 0,
        "text": f"text {n}", "mentions": [
            {"start": 0, "end": 4, "anchor": "text", "target": "Text", "qid": None},
            {"start": 5, "end": 6, "anchor": str(n), "target": str(n), "qid": f"Q{n}"}]}
    return {**row, **changed}


@on_each_engine
def test_a_partition_digest_follows_its_rows_not_its_files(catalog: Catalog) -> None:
    """The same rows written again (other files, another order) keep the digest; each kind
    of change planted in them changes it, to a digest of its own; other snapshots' writes
    leave it as it is."""
    jan, apr = "2024-01-01", "2024-04-01"

    def write(rows: list[dict[str, object]]) -> str | None:
        catalog.replace_partitions("passages", catalog.frame("passages", rows),
                                   {"snapshot": jan}, "window", [1, 2])
        return catalog.partition_digest("passages", catalog.version("passages"), jan)

    def files() -> list[str]:
        return catalog._delta("passages").file_uris(
            file_pruning_predicate=[("snapshot", "=", jan)])

    base = [_passage(n) for n in range(4)]
    assert catalog.partition_digest("passages", None, jan) is None  # no table
    first, first_files = write(base), files()
    assert first is not None and first_files
    again = write(list(reversed(base)))
    assert again == first and set(files()).isdisjoint(first_files)  # new files, same rows
    catalog.replace_partitions("passages", catalog.frame("passages", [
        {**_passage(9), "snapshot": apr}]), {"snapshot": apr}, "window", [2])
    assert catalog.partition_digest("passages", catalog.version("passages"), jan) == first
    m0, m1 = base[0]["mentions"]
    planted = {
        "a value": [_passage(0, text="text 0!"), *base[1:]],
        "a row added, a copy of one": [*base, base[0]],
        "a row removed": base[1:],
        "a NULL moved to another column": [_passage(0, page_title=None, page_qid="Page 0"),
                                           *base[1:]],
        "a microsecond": [_passage(0, rev_timestamp=datetime(2024, 1, 2, 3, 4, 5, 7,
                                                             tzinfo=UTC)), *base[1:]],
        "a nested NULL filled": [_passage(0, mentions=[{**m0, "qid": "Q1"}, m1]), *base[1:]],
        "a list's order": [_passage(0, mentions=[m1, m0]), *base[1:]],
        "a list emptied": [_passage(0, mentions=[]), *base[1:]],
        "a list NULL": [_passage(0, mentions=None), *base[1:]],
        "two rows' values swapped": [_passage(0, text="text 1"), _passage(1, text="text 0"),
                                     *base[2:]],
        "the partition emptied": [],
    }
    digests = {what: write(rows) for what, rows in planted.items()}
    assert first not in digests.values(), digests
    assert len(set(digests.values())) == len(planted), digests
    assert write(base) == first
