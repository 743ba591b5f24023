"""snapshots.rebuild: new (pipeline.built): a snapshot a build left whole is kept, with no
steps, until the settings that shape its rows, its windows or its rows change; adding a
snapshot or writing another one's rows keeps it."""

from __future__ import annotations

from stagekit import context

from emerge_lib.catalog import Catalog
from emerge_lib.pipeline import built
from emerge_lib.pipeline.runner import build_steps, snapshot_tables

T, T2, T3 = "2024-01-01T00:00:00Z", "2024-04-01T00:00:00Z", "2024-07-01T00:00:00Z"
TABLES = ["kg_triples"]


def _write(catalog: Catalog, snapshot: str, triples: list[tuple[str, str, str]]) -> None:
    catalog.replace_partition("kg_triples", catalog.frame("kg_triples", [
        {"snapshot": snapshot, "s": s, "p": p, "o": o} for s, p, o in triples]),
        {"snapshot": snapshot})


def test_a_snapshot_built_whole_is_kept_until_its_settings_or_rows_change(
        catalog: Catalog) -> None:
    new = {"timestamps": [T, T2], "rebuild": "new"}
    ctx = context(catalog, snapshots=new)
    plan = ctx.cfg.plans()[0]
    _write(catalog, T, [("Q1", "P1", "Q2"), ("Q2", "P1", "Q3")])
    _write(catalog, T2, [("Q1", "P1", "Q2")])
    assert built.kept(ctx, plan, TABLES) is None  # never recorded: built
    built.record(ctx, plan, TABLES)
    assert "kept as built by emerge" in (built.kept(ctx, plan, TABLES) or "")
    # another snapshot's rows, a snapshot added, the same rows in new files: still kept
    _write(catalog, T2, [("Q9", "P1", "Q2")])
    _write(catalog, T, [("Q2", "P1", "Q3"), ("Q1", "P1", "Q2")])
    assert built.kept(context(catalog, snapshots={**new, "timestamps": [T, T2, T3]}), plan,
                      TABLES) is not None
    # a setting that shapes rows, other windows, a table more: built again
    assert built.kept(context(catalog, snapshots=new, passages={"min_tokens": 3}), plan,
                      TABLES) is None
    other = context(catalog, snapshots={**new, "windows": 4})
    assert built.kept(other, other.cfg.plans()[0], TABLES) is None
    assert built.kept(ctx, plan, [*TABLES, "entities"]) is None
    # how files are written, and the other settings a build takes, are not its rows' shape
    assert built.kept(context(catalog, snapshots=new, release={"workers": 2},
                              selection={"workers": 2}), plan, TABLES) is not None
    # its rows changed (a stage run on it alone since): built again
    _write(catalog, T, [("Q1", "P1", "Q2")])
    assert built.kept(ctx, plan, TABLES) is None


def test_a_kept_snapshot_has_no_steps_in_a_build(catalog: Catalog) -> None:
    new = {"timestamps": [T, T2], "rebuild": "new"}
    ctx = context(catalog, snapshots=new)
    first, second = ctx.cfg.plans()
    tables = snapshot_tables(ctx)
    assert {"kg_triples", "delta_triples", "passages", "instances", "selection"} <= set(tables)
    assert {p.key for _, p in build_steps(ctx) if p is not None} == {T, T2}
    for name in tables:  # what a build of T left (none of its tables exists yet here)
        assert catalog.version(name) is None
    built.record(ctx, first, tables)
    steps = build_steps(ctx)
    assert {p.key for _, p in steps if p is not None} == {T2}
    assert [n for n, p in steps if p is not None] == [n for n, p in build_steps(
        context(catalog, snapshots={**new, "rebuild": "all"})) if p is not None and p.key == T2]
    # rebuild: all builds every snapshot, whatever was recorded
    assert {p.key for _, p in build_steps(context(catalog, snapshots={**new, "rebuild": "all"}))
            if p is not None} == {T, T2}


def test_a_release_names_the_history_a_kept_snapshot_was_built_from(catalog: Catalog) -> None:
    """The record names the history the snapshot was built from; once the warehouse holds
    a newer one (a quarter's increments), a release marks the snapshot with the older."""
    from emerge_lib.release.provenance import built_earlier, history

    def held() -> list[dict]:
        return history(catalog, {n: catalog.version(n)
                                 for n in ("ingested_files", "reconciled_logs")})

    def files(rows: list[tuple[str, str]]) -> None:
        catalog.merge("ingested_files", catalog.frame("ingested_files", [
            {"wiki": "wikidatawiki", "dump_date": d, "dump_file": f} for d, f in rows]))

    files([("20240220", "wikidatawiki-20240220-pages-meta-history1.xml-p1p9.bz2")])
    ctx = context(catalog, snapshots={"timestamps": [T], "rebuild": "new"})
    plan = ctx.cfg.plans()[0]
    _write(catalog, T, [("Q1", "P1", "Q2")])
    built.record(ctx, plan, TABLES)
    assert built_earlier(catalog, [T, T2], held()) == []  # the same history; T2: no record
    files([("20240519", "wikidatawiki-20240519-pages-meta-hist-incr.xml.bz2")])
    assert built.kept(ctx, plan, TABLES) is not None  # kept as built, and said so:
    assert built_earlier(catalog, [T, T2], held()) == [{"snapshot": T, "history": [
        {"wiki": "wikidatawiki", "revisions_before": "2024-02-20",
         "deletions_known_to": "2024-02-20"}]}]
