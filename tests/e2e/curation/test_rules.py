"""The judge rules on a curated sample world (emerge_lib.curation.rules through select):
what s07 does with a verdict it cannot read, on the planted two-operation triple.

The TINY world plants an addition ended inside its window (``window-addition-ended``: one
triple, E and D, in every window). The stub's deprecations model answers garbage that
never parses, so every D verdict of that model is UNPARSED: under the authors' reading
(S07:98-121) the triple's E still stands on the additions model's YES and its line is
kept; under the earlier whole-triple reading the line has no supported triple and goes.
The near miss: a line whose only triple is a D (``d-month``) goes under both.

It also plants a removal whose statement carries only a start qualifier dated inside its
window (``removal-start-qualifier``): one model judges it, as one with an end qualifier
(their non-empty ``qualifier_info``, S07:109-112); a removal without any (``removal-kept``)
is judged by both."""

from __future__ import annotations

import json
from pathlib import Path

from curatekit import ADDITIONS_LLM, DEPRECATIONS_LLM, curate_all, curated_ctx, requests_of
from worlds import TINY

from emerge_lib.catalog import Catalog
from emerge_lib.curation.stub import GARBLED_SUBJECT, StubServer
from emerge_lib.pipeline.runner import run_stage


def planted_lines(world: Path, scenario: str) -> set[tuple[str, int, str]]:
    """(snapshot, window, paragraph) of the truth's lines of one scenario."""
    rows = [json.loads(x) for x in (world / "truth.jsonl").read_text().splitlines() if x]
    return {(r["snapshot"], r["window"], r["paragraph"]) for r in rows
            if r["scenario"] == scenario}


def fates(ctx, catalog: Catalog, lines: set[tuple[str, int, str]]) -> set[tuple[bool, str | None]]:
    """The selection's (kept, reason) of those lines, after select ran under ``ctx``."""
    for plan in ctx.cfg.plans():
        run_stage(ctx, "select", plan)
    pid = {(p["snapshot"], p["window"], p["text"]): p["passage_id"]
           for p in catalog.read_arrow("passages").to_pylist()}
    wanted = {(s, w, pid[(s, w, text)]) for s, w, text in lines}
    found = {(r["snapshot"], r["window"], r["passage_id"]): (r["kept"], r["reason"])
             for r in catalog.read_arrow("selection").to_pylist()}
    assert wanted <= set(found)
    return {found[key] for key in wanted}


def test_an_unparsed_verdict_fails_only_its_operation(worlds, tmp_path: Path, spark) -> None:
    world = worlds.world(TINY)
    catalog = Catalog(worlds.copy(worlds.built(TINY, release=False), tmp_path).warehouse, spark)
    with StubServer(garbled={DEPRECATIONS_LLM}) as stub:
        ctx = curated_ctx(catalog, world, stub.url, retries=0)
        curate_all(ctx)
        earlier = curated_ctx(catalog, world, stub.url, unparsed_fails="triple")
    stored = catalog.read_arrow("verdicts").to_pylist()
    assert {r["verdict"] for r in stored if r["llm_name"] == DEPRECATIONS_LLM} == {"UNPARSED"}
    two_ops = planted_lines(world, "window-addition-ended")
    d_only = planted_lines(world, "d-month")
    assert len(two_ops) == 5 and d_only  # the passage in each cumulative window
    assert fates(ctx, catalog, two_ops) == {(True, None)}
    assert fates(ctx, catalog, d_only) == {(False, "unsupported")}
    # the earlier rule: the whole triple unknown, its line unsupported
    assert fates(earlier, catalog, two_ops) == {(False, "unsupported")}
    assert fates(earlier, catalog, d_only) == {(False, "unsupported")}


def test_a_removal_with_a_start_qualifier_is_judged_by_one_model(worlds, spark) -> None:
    world = worlds.world(TINY)
    catalog = Catalog(worlds.built(TINY, release=False).warehouse, spark)
    rows = [json.loads(x) for x in (world / "truth.jsonl").read_text().splitlines() if x]
    triple = {r["scenario"]: (r["s"], r["p"], r["o"]) for r in rows if r["op"] == "D"}
    asked: dict[tuple[str, str, str], set[str]] = {}
    for req in requests_of(curated_ctx(catalog, world, "http://127.0.0.1:9/v1")):
        if req.prompt_type == "triple_deprecation":
            for t in req.triples:
                asked.setdefault(t, set()).add(req.llm_name)
    assert asked[triple["removal-start-qualifier"]] == {DEPRECATIONS_LLM}
    assert asked[triple["removal-kept"]] == {DEPRECATIONS_LLM, ADDITIONS_LLM}
    instance = next(r for r in catalog.read_arrow("instances").to_pylist()
                    if (r["s"], r["p"], r["o"]) == triple["removal-start-qualifier"])
    assert (instance["signal"], instance["qualifier_pid"]) == ("removed", "P580")


def test_a_garbage_answer_planted_in_the_world_fails_only_its_operation(
        worlds, tmp_path: Path, spark) -> None:
    """The world plants the garbage (``unparsed-two-operations``: a headquarters entered
    and ended inside the window, E and D, its subject "Mumbles …", whose deprecation
    prompt the stub answers with prose when told the worlds' marker): no prompt or
    triple is named here. Under the
    authors' s07 the line stays on the E's YES; under ``unparsed_fails: triple`` it goes.
    The near miss, the other two-operation triple (``window-addition-ended``), parses and
    stays under both."""
    world = worlds.world(TINY)
    catalog = Catalog(worlds.copy(worlds.built(TINY, release=False), tmp_path).warehouse, spark)
    rows = [json.loads(x) for x in (world / "truth.jsonl").read_text().splitlines() if x]
    (planted,) = {(r["s"], r["p"], r["o"]) for r in rows
                  if r["scenario"] == "unparsed-two-operations" and r["op"] == "D"}
    with StubServer(garbage_for=GARBLED_SUBJECT) as stub:
        ctx = curated_ctx(catalog, world, stub.url, retries=0)
        assert ctx.cfg.curation.unparsed_fails == "operation"  # the default
        curate_all(ctx)
        earlier = curated_ctx(catalog, world, stub.url, unparsed_fails="triple")
    said: dict[tuple[str, str], set[str]] = {}
    for r in catalog.read_arrow("verdicts").to_pylist():
        if (r["s"], r["p"], r["o"]) == planted:
            said.setdefault((r["llm_name"], r["prompt_type"]), set()).add(r["verdict"])
    assert said == {(DEPRECATIONS_LLM, "triple_deprecation"): {"UNPARSED"},
                    (ADDITIONS_LLM, "triple_assertion"): {"YES"}}
    unparsed = {(r["s"], r["p"], r["o"]) for r in catalog.read_arrow("verdicts").to_pylist()
                if r["verdict"] == "UNPARSED"}
    assert unparsed == {planted}  # the world's one garbage answer, in each window
    garbled = planted_lines(world, "unparsed-two-operations")
    near_miss = planted_lines(world, "window-addition-ended")
    assert len(garbled) == len(near_miss) == 5  # the passage in each cumulative window
    assert fates(ctx, catalog, garbled) == {(True, None)}
    assert fates(ctx, catalog, near_miss) == {(True, None)}
    assert fates(earlier, catalog, garbled) == {(False, "unsupported")}
    assert fates(earlier, catalog, near_miss) == {(True, None)}
