"""The dataset end to end on generated worlds: instances equal the planted truth exactly.

Seeds 1 to 5 of `emerge sample` are built on the embedded engine (ingest of both dump
dates, stability, snapshots, deltas, passages, alignment, release) through the stage
registry; every instance of truth.jsonl must come out, nothing else, and nothing from
traps.jsonl, under both semantics (the defaults: truth.jsonl; the DESIGN §1.1-1.2 rule:
truth-design.jsonl). Each seed's world is generated and ingested once (kits/worlds.py);
the two semantics differ only after the ingest, so each is built from a copy of it.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from worlds import NO_INGEST, SEED1, TINY2

from emerge_lib.catalog import Catalog
from emerge_lib.core.config import load_config
from emerge_lib.core.stage import StageContext
from emerge_lib.pipeline.runner import build_dataset
from emerge_lib.sample.compare import DESIGN_SETTINGS
from emerge_lib.sample.compare import built as produced
from emerge_lib.sample.compare import planted as expected

# (seed, semantics): "released" is the default configuration (what the released data
# shows, truth.jsonl), on seeds 1-5; "design" the DESIGN §1.1-1.2 rule
# (truth-design.jsonl), on seeds 1 and 2 (the semantics differ after the ingest only: a
# third seed adds nothing the released runs of seeds 3-5 do not already check). Each
# seed's world is ingested once; each semantics is built from a copy of it.
SEEDS = [pytest.param((s, v), id=f"seed{s}" + ("" if v == "released" else f"-{v}"))
         for s in (1, 2, 3, 4, 5) for v in ("released", "design")
         if v == "released" or s <= 2]


@pytest.fixture(scope="module", params=SEEDS)
def built(request, worlds, spark):
    seed, variant = request.param
    done = worlds.built(replace(SEED1, seed=seed),
                        DESIGN_SETTINGS if variant == "design" else None)
    return done.world, done.catalog(spark), variant, done.release


def test_instances_equal_truth(built) -> None:
    world, catalog, variant, _ = built
    got, _ = produced(catalog)
    want = expected(world, variant)
    assert {op for *_, op, _s, _p, _o, _sig in [(*k[:3], k[3], *k[4:]) for k in want]} == {
        "X", "E", "EE", "EE-KG", "D"}
    assert {k[7] for k in want if k[3] == "D"} >= {"removed", "rank"}
    assert any((k[7] or "").startswith("qualifier:") for k in want)
    assert sorted(want - got) == [], "missing instances"
    assert sorted(got - want) == [], "unexpected instances"


def test_no_trap_appears(built) -> None:
    world, catalog, variant, _ = built
    got, passages = produced(catalog)
    texts = {(p["snapshot"], p["text"]) for p in passages.values()}
    in_window = {(p["snapshot"], p["window"], p["text"]) for p in passages.values()}
    name = "traps.jsonl" if variant == "released" else f"traps-{variant}.jsonl"
    traps = [json.loads(line) for line in (world / name).read_text().splitlines()]
    assert traps
    for trap in traps:
        if trap.get("op"):
            # the trapped instance must not come from the trap's page (the same triple may
            # rightly come from another passage, and then truth lists it)
            hits = {k for k in got if (k[0], k[1], k[3], k[4], k[5], k[6]) ==
                    (trap["snapshot"], trap["window"], trap["op"], trap["s"], trap["p"], trap["o"])
                    and trap.get("page_id") in (None, k[2])}
            assert not hits - expected(world, variant), trap
        if trap.get("paragraph") and trap.get("window"):
            assert (trap["snapshot"], trap["window"], trap["paragraph"]) not in in_window, trap
        elif trap.get("paragraph"):
            assert (trap["snapshot"], trap["paragraph"]) not in texts, trap


def test_release_lines_match_instances(built) -> None:
    _, catalog, _, release = built
    lines = [json.loads(line) for f in sorted(release.glob("snapshot_*/delta_*.jsonl"))
             for line in f.read_text().splitlines()]
    released = sum(len(t["tkgu_operations"]) for line in lines for t in line["tkgu_triples"])
    assert released == catalog.row_count("instances")
    for line in lines:
        for m in line["mentions"]:
            assert line["passage"][m["start_char"]:m["end_char"]] == m["mention_text"]


def test_rebuild_is_identical_and_window_change_needs_no_reingest(tmp_path, worlds,
                                                                   spark) -> None:
    """A build from the warehouse alone (no dump dates) rewrites byte-identical release
    files; other windows and a new snapshot inside the ingested ranges re-read nothing."""
    first = worlds.copy(worlds.built(TINY2), tmp_path)
    catalog = Catalog(first.warehouse, spark)
    before, _ = produced(catalog)

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
    files = sorted(first.release.rglob("*.jsonl"))
    assert files
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
    # a longer window 1 ((t, t+10d]) holds at least the instances window 1 had at 7 days
    week1 = {k[:1] + k[2:] for k in before if k[1] == 1}
    assert week1 <= {k[:1] + k[2:] for k in produced(catalog)[0] if k[1] == 1}


def test_emerge_build_command(worlds, tmp_path: Path, capsys, monkeypatch) -> None:
    """`emerge build` on a world's dump files: every planted instance is released."""
    from emerge_lib.cli import main

    sample_world = worlds.world(TINY2)
    # the gate is not what this test is about (the gate's tests, the demo's and the
    # scheduler's run it): the command with the defaults otherwise
    monkeypatch.setenv("EMERGE__VALIDATION__ENABLED", "false")

    mirror = sample_world / "mirror"
    args = ["build", "-c", str(sample_world / "config.yaml"), "--out", str(tmp_path / "rel"),
            "--warehouse", str(tmp_path / "wh"),
            "--wikidata", *map(str, sorted(mirror.glob("wikidatawiki/*/*.bz2"))),
            "--wikipedia", *map(str, sorted(mirror.glob("enwiki/*/*.bz2")))]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "release" in out and str(tmp_path / "rel") in out
    files = sorted((tmp_path / "rel").glob("snapshot_*/delta_*.jsonl"))
    assert [f.parent.name for f in files].count("snapshot_2024-01-01") == 5
    released = sum(len(t["tkgu_operations"]) for f in files for line in f.read_text().splitlines()
                   for t in json.loads(line)["tkgu_triples"])
    truth_rows = (sample_world / "truth.jsonl").read_text().splitlines()  # one per paragraph
    assert released == len(truth_rows) and {k[3] for k in expected(sample_world)} >= {"D", "E"}
