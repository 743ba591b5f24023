"""The checks every built world passes, shared by the world files of tests/e2e/pipeline.

Each test_runner*.py file has its own ``built`` fixture (its seeds) and runs these checks
in its tests: pytest-xdist runs a file whole on one worker, so the seeds are split over
files to spread over the cores. ``built`` is (world, catalog, variant, release).
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest
from worlds import SEED1

from emerge_lib.sample.compare import VARIANT_SETTINGS
from emerge_lib.sample.compare import built as produced
from emerge_lib.sample.compare import planted as expected


def seeds(released: tuple[int, ...], design: tuple[int, ...] = (),
          unselected: tuple[int, ...] = ()) -> list[Any]:
    """The (seed, semantics) parameters of a world file: "released" is the default
    configuration (what the released data shows, the authors' selection rules included:
    truth.jsonl), "design" the docs/semantics.md §1.1-1.2 rule (truth-design.jsonl),
    "unselected" the
    no-selection-rules preset (truth-unselected.jsonl)."""
    return [pytest.param((s, "released"), id=f"seed{s}") for s in released] + [
        pytest.param((s, "design"), id=f"seed{s}-design") for s in design] + [
        pytest.param((s, "unselected"), id=f"seed{s}-unselected") for s in unselected]


def built_world(request: pytest.FixtureRequest, worlds: Any, spark: Any) -> tuple:
    """The ``built`` fixture's body: the seed's world ingested once (kits/worlds.py) and
    built under the variant's settings."""
    seed, variant = request.param
    done = worlds.built(replace(SEED1, seed=seed), VARIANT_SETTINGS[variant])
    return done.world, done.catalog(spark), variant, done.release


def instances_equal_truth(built: tuple) -> None:
    world, catalog, variant, _ = built
    got, _ = produced(catalog)
    want = expected(world, variant)
    assert {op for *_, op, _s, _p, _o, _sig in [(*k[:3], k[3], *k[4:]) for k in want]} == {
        "X", "E", "EE", "EE-KG", "D"}
    assert {k[7] for k in want if k[3] == "D"} >= {"removed", "rank"}
    assert any((k[7] or "").startswith("qualifier:") for k in want)
    assert sorted(want - got) == [], "missing instances"
    assert sorted(got - want) == [], "unexpected instances"


def no_trap_appears(built: tuple) -> None:
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


def release_lines_match_instances(built: tuple) -> None:
    """The release holds the instances of the lines select kept (a line s07's guards
    refuse keeps its instances in the table, not in the release)."""
    _, catalog, _, release = built
    lines = [json.loads(line) for f in sorted(release.glob("corpus/snapshot_*/delta_*.jsonl"))
             for line in f.read_text().splitlines()]
    released = sum(len(t["tkgu_operations"]) for line in lines for t in line["tkgu_triples"])
    kept = {(r["snapshot"], r["window"], r["passage_id"])
            for r in catalog.read_arrow("selection").to_pylist() if r["kept"]}
    assert released == sum((r["snapshot"], r["window"], r["passage_id"]) in kept
                           for r in catalog.read_arrow("instances").to_pylist())
    for line in lines:
        for m in line["mentions"]:
            assert line["passage"][m["start_char"]:m["end_char"]] == m["mention_text"]


#: the planted lines whose fate is select's, by the tag their truth rows carry: the
#: reason select gives under the authors' rules (None: kept); every line is kept without
SELECTED_AS = {"guard-title-colon": "guard:table-markup", "title-colon-kept": None}


def planted_line_fates(built: tuple) -> None:
    """Each planted line s07's guards decide has the fate their code gives it: the
    title-colon case goes as table markup under the authors' reading, its near miss
    stays; both stay where the guards are off (the unselected and design builds)."""
    world, catalog, variant, _ = built
    truth = [json.loads(line) for line in (world / (
        "truth.jsonl" if variant == "released" else f"truth-{variant}.jsonl")).read_text(
    ).splitlines()]
    passage = {(p["snapshot"], p["window"], p["text"]): p["passage_id"]
               for p in catalog.read_arrow("passages").to_pylist()}
    fate = {(r["snapshot"], r["window"], r["passage_id"]): (r["kept"], r["reason"])
            for r in catalog.read_arrow("selection").to_pylist()}
    seen = set()
    for r in truth:
        for tag in set(r["tags"]) & set(SELECTED_AS):
            key = (r["snapshot"], r["window"], passage[(r["snapshot"], r["window"],
                                                        r["paragraph"])])
            reason = SELECTED_AS[tag] if variant == "released" else None
            assert fate[key] == (reason is None, reason), (tag, key)
            seen.add(tag)
    assert seen == set(SELECTED_AS)
