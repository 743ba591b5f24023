"""Rebuilding from the warehouse alone, and `emerge build` on a world's dump files (the
small TINY2 world: what is checked is the rebuild and the command, not the world)."""

from __future__ import annotations

import json
from pathlib import Path

from worlds import NO_INGEST, TINY2

from emerge_lib.catalog import Catalog
from emerge_lib.core.config import load_config
from emerge_lib.core.stage import StageContext
from emerge_lib.pipeline.runner import build_dataset
from emerge_lib.sample.compare import built as produced
from emerge_lib.sample.compare import planted as expected


def test_rebuild_is_identical_and_window_change_needs_no_reingest(tmp_path, worlds,
                                                                   spark) -> None:
    """A build from the warehouse alone (no dump dates) rewrites byte-identical release
    files; other windows and a new snapshot inside the ingested ranges re-read nothing."""
    first = worlds.copy(worlds.built(TINY2), tmp_path)
    catalog = Catalog(first.warehouse, spark)
    before, _ = produced(catalog)
    passages_before = catalog.read_arrow("passages").to_pylist()
    instances_version = catalog.version("instances")

    def build(out=None, **snapshots) -> None:
        overrides = {**NO_INGEST, "validation": {"enabled": False},
                     "warehouse": str(first.warehouse)}
        if snapshots:
            overrides["snapshots"] = snapshots
        cfg = load_config(first.world / "config.yaml", overrides=overrides)
        build_dataset(StageContext(cfg, catalog, release_dir=out))

    build(tmp_path / "r2")
    after, _ = produced(catalog)
    assert before == after
    # every file: the JSONL, the Parquet, release.json and the manifest (the rebuild wrote
    # new Delta versions of the same rows; no file depends on them)
    files = sorted(f for f in first.release.rglob("*") if f.is_file())
    assert {f.name for f in files} >= {"release.json", "manifest.json"}
    assert any(f.suffix == ".jsonl" for f in files)
    assert catalog.version("instances") > instances_version
    for f in files:
        assert f.read_bytes() == (tmp_path / "r2" / f.relative_to(first.release)).read_bytes()
    versions = {n: catalog.version(n) for n in ("statement_timeline", "paragraph_timeline")}
    # three windows of 10 days fit inside the ingested paragraph ranges: no re-ingest
    build(windows=3, window_days=10)
    assert {n: catalog.version(n) for n in versions} == versions
    for table in ("delta_triples", "passages", "instances"):
        windows = {r["window"] for r in catalog.read_arrow(table).to_pylist()}
        assert windows <= {1, 2, 3}, table  # the 5-window build left no stale windows
    assert {r["window"] for r in catalog.read_arrow("delta_triples").to_pylist()} == {1, 2, 3}
    # a new snapshot inside the ingested ranges: no re-ingest either
    build(timestamps=["2024-01-02T00:00:00Z"], windows=4)
    assert {n: catalog.version(n) for n in versions} == versions
    assert {r["snapshot"] for r in catalog.read_arrow("delta_triples").to_pylist()} >= {
        "2024-01-02T00:00:00Z"}
    # a longer window 1 ((t, t+10d]) holds at least the passages window 1 had at 7 days
    # (not all their lines: a removal or an addition that falls into the longer window
    # may make the authors' rules leave a line out, R2b and R5)
    def week1(passages: list[dict]) -> set[tuple]:
        return {(p["page_id"], p["text"]) for p in passages
                if p["window"] == 1 and p["snapshot"] == "2024-01-01T00:00:00Z"}

    assert week1(passages_before)
    assert week1(passages_before) <= week1(catalog.read_arrow("passages").to_pylist())


def test_emerge_build_command(worlds, tmp_path: Path, capsys, monkeypatch) -> None:
    """`emerge build` on a world's dump files: every planted instance is released; the
    same command again (nothing changed: every snapshot's stages run again and write the
    same rows into new Delta files; their checks are kept) carries every file of the
    release over, linked, and says so (issue 44: the fingerprints follow the rows, not
    their files); with ``snapshots.rebuild: new``, no snapshot's stage runs at all."""
    from emerge_lib.cli import main

    sample_world = worlds.world(TINY2)

    mirror = sample_world / "mirror"
    args = ["build", "-c", str(sample_world / "config.yaml"), "--out", str(tmp_path / "rel"),
            "--warehouse", str(tmp_path / "wh"),
            "--wikidata", *map(str, sorted(mirror.glob("wikidatawiki/*/*.bz2"))),
            "--wikipedia", *map(str, sorted(mirror.glob("enwiki/*/*.bz2")))]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "release" in out and str(tmp_path / "rel") in out
    files = sorted((tmp_path / "rel").glob("corpus/snapshot_*/delta_*.jsonl"))
    assert [f.parent.name for f in files].count("snapshot_2024-01-01") == 5
    released = sum(len(t["tkgu_operations"]) for f in files for line in f.read_text().splitlines()
                   for t in json.loads(line)["tkgu_triples"])
    truth_rows = [json.loads(x) for x in (sample_world / "truth.jsonl").read_text().splitlines()]
    # one per paragraph, but the lines s07's guards refuse (their title reading)
    guarded = [r for r in truth_rows if "guard-title-colon" in r["tags"]]
    assert guarded and released == len(truth_rows) - len(guarded)
    assert {k[3] for k in expected(sample_world)} >= {"D", "E"}

    rel = tmp_path / "rel"
    first = {p.relative_to(rel).as_posix(): (p.stat().st_ino, p.read_bytes())
             for p in sorted(rel.rglob("*")) if p.is_file()}
    instances = Catalog(tmp_path / "wh").version("instances")
    checked = Catalog(tmp_path / "wh").version("validation_results")
    assert checked is not None  # the gate ran on the first build
    assert main(args) == 0
    out = capsys.readouterr().out
    assert Catalog(tmp_path / "wh").version("instances") > instances  # written again
    # every snapshot's checks passed on these same rows: kept, not run again, so the
    # files that show when they ran (the card, the checks page) are carried too
    assert Catalog(tmp_path / "wh").version("validation_results") == checked
    again = {p.relative_to(rel).as_posix(): (p.stat().st_ino, p.read_bytes())
             for p in sorted(rel.rglob("*")) if p.is_file()}
    assert again == first  # every file: the same inode, the same bytes
    assert f"(carried {len(first)} files" in out, out[-2000:]
    # snapshots.rebuild: new (a quarter builds only its new snapshot): both snapshots were
    # built whole with these settings and keep their rows, so no snapshot stage runs
    wh = Catalog(tmp_path / "wh")
    tables = ("kg_triples", "delta_triples", "passages", "instances", "selection",
              "validation_results")
    versions = {name: wh.version(name) for name in tables}
    monkeypatch.setenv("EMERGE__SNAPSHOTS__REBUILD", "new")
    assert main(args) == 0
    out = capsys.readouterr().out
    assert {name: Catalog(tmp_path / "wh").version(name) for name in tables} == versions
    kept = {p.relative_to(rel).as_posix(): (p.stat().st_ino, p.read_bytes())
            for p in sorted(rel.rglob("*")) if p.is_file()}
    assert kept == first and f"(carried {len(first)} files" in out, out[-2000:]
