"""Answer QA on a curated world (emerge_lib.curation.quality through the curate stage):
a rerun asks again what was stored UNPARSED or degenerate, bounded by
``curation.reasks``, keeps the ask's number and what each new answer replaced; it asks
nothing else, and a third run asks nothing."""

from __future__ import annotations

import json
from pathlib import Path

from curatekit import curate_all, curated_ctx, requests_of
from worlds import TINY

from emerge_lib.catalog import Catalog
from emerge_lib.curation.stub import StubServer
from emerge_lib.pipeline.runner import run_stage


def test_a_rerun_asks_again_what_was_unparsed_or_degenerate(worlds, tmp_path: Path,
                                                           spark) -> None:
    world = worlds.world(TINY)
    catalog = Catalog(worlds.copy(worlds.built(TINY, release=False), tmp_path).warehouse, spark)
    with StubServer() as stub:
        ctx = curated_ctx(catalog, world, stub.url, retries=1)
        asked = requests_of(ctx)
        once = [r for r in asked if [a.prompt for a in asked].count(r.prompt) == 1]
        unparsed, garbage, stubborn = once[:3]
        stub.script(["prose"] * 2, prompt_with=unparsed.prompt)  # both tries: UNPARSED
        stub.script(["loop"], prompt_with=garbage.prompt)  # parses, degenerate
        stub.script(["prose"] * 4, prompt_with=stubborn.prompt)  # UNPARSED twice over
        first = curate_all(ctx)
        n = stub.requests
        assert sum(r.detail.unparsed for r in first) == 2
        second = curate_all(ctx)
        # the three answers, asked once each (the unparsed ones after the retries)
        assert stub.requests == n + 1 + 1 + 2
        assert sum(r.detail.reasked_unparsed for r in second) == 2
        assert sum(r.detail.reasked_degenerate for r in second) == 1
        assert sum(r.metrics.get("asked again: degenerate", 0) for r in second) == 1
        n = stub.requests
        third = curate_all(ctx)  # the stubborn one was asked twice: spent
        assert stub.requests == n and all(r.metrics["asked"] == 0 for r in third)
    rows = {(r["llm_name"], r["prompt_sha"]): r for r in catalog.read_arrow("verdicts").to_pylist()}
    got = {name: rows[(req.llm_name, req.sha)] for name, req in (
        ("unparsed", unparsed), ("garbage", garbage), ("stubborn", stubborn))}
    assert got["unparsed"]["verdict"] in ("YES", "NO") and got["unparsed"]["ask_round"] == 2
    assert json.loads(got["unparsed"]["replaced"])["why"] == "unparsed"
    was = json.loads(got["garbage"]["replaced"])
    assert was["why"].startswith("degenerate: ") and "repeated_token" in was["why"]
    assert was["raw_answer"].split("\n")[0].endswith("again again") and was["ask_round"] == 1
    assert "again" not in got["garbage"]["explanation"] and got["garbage"]["ask_round"] == 2
    assert got["stubborn"]["verdict"] == "UNPARSED" and got["stubborn"]["ask_round"] == 2
    others = [r for key, r in rows.items() if key not in {
        (q.llm_name, q.sha) for q in (unparsed, garbage, stubborn)}]
    assert others and {(r["ask_round"], r["replaced"]) for r in others} == {(1, None)}
    # the release counts, per judge, the verdicts whose answer replaced such a one
    run_stage(ctx, "release")
    manifest = json.loads((Path(ctx.release_dir) / "manifest.json").read_text())
    again = [j["asked_again"] for j in manifest["curation"]["judges"]]
    stored = catalog.read_arrow("verdicts").to_pylist()
    for kind in ("unparsed", "degenerate"):
        want = sum(r["ask_round"] == 2 and (json.loads(r["replaced"])["why"] == "unparsed") == (
            kind == "unparsed") for r in stored)
        assert sum(a[kind] for a in again) == want > 0
    card = (Path(ctx.release_dir) / "README.md").read_text()
    assert "asked again: degenerate" in card
