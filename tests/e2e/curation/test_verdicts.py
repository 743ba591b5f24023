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

import shutil
from pathlib import Path

import pytest
from curatekit import (
    ADDITIONS_LLM,
    DEPRECATIONS_LLM,
    curate_all,
    curated_ctx,
    emerge,
    expected_rows,
    final_expected,
    released_triples,
    requests_of,
    verdict_keys,
)
from worlds import TINY

from emerge_lib.catalog import Catalog
from emerge_lib.curation.answers import parse_answer
from emerge_lib.curation.client import EndpointError
from emerge_lib.curation.journal import Journal, journal_folder
from emerge_lib.curation.prompts import ASSERTION, DEPRECATION
from emerge_lib.curation.stub import StubServer
from emerge_lib.pipeline.runner import run_stage


@pytest.fixture(scope="module")
def world(worlds) -> Path:
    return worlds.world(TINY)


@pytest.fixture()
def built(worlds, tmp_path: Path, spark) -> Catalog:
    """A copy of the built world (no curation) in a warehouse of this test's own."""
    return Catalog(worlds.copy(worlds.built(TINY, release=False), tmp_path).warehouse, spark)


def asked_once(ctx) -> list:
    """Requests whose prompt no other request shares (a fault aimed at its text meets it)."""
    asked = requests_of(ctx)
    return [r for r in asked if [a.prompt for a in asked].count(r.prompt) == 1]


def judged_by(t: dict) -> dict[tuple[str, str], bool | None]:
    return {(a["llm_name"], a["llm_prompt_type"]): a["llm_assessment"] for a in t["llm_assessment"]}


def no_end_qualifier(t: dict) -> bool:
    """A D judged by both models: one without a qualifier (a removal whose statement
    carries a start qualifier inside its window has one, S07:109-112)."""
    return not t["qualifier_info"]


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
                                                            worlds) -> None:
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
    assert parse_answer(raw[(once[1].llm_name, once[1].sha)], len(once[1].triples), once[1].single)
    # attempts: every HTTP request of the verdict, transient failures and re-asks alike
    drilled = {(r.llm_name, r.sha) for r in once[:len(drills)]}
    for r in stored:
        assert r["attempts"] == (2 if (r["llm_name"], r["prompt_sha"]) in drilled else 1)

    # an endpoint that is down: nothing recorded, a retryable error, then a rerun completes
    pristine = worlds.built(TINY, release=False).warehouse
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
    # (the configured judges' rule: no final judge, whose verdicts would be the gold)
    with StubServer(contrary={ADDITIONS_LLM}) as stub:
        ctx = curated_ctx(built, world, stub.url, retries=0, final_judge=None)
        garbled = next(r for r in asked_once(ctx) if r.prompt_type == ASSERTION)
        stub.script(["prose"], prompt_with=garbled.prompt)
        curate_all(ctx)
    run_stage(ctx, "release")
    triples = released_triples(ctx.release_dir)
    nulls = [t for t in triples if None in judged_by(t).values()]
    assert {tuple(t["triple"]) for t in nulls} == set(garbled.triples)
    assert all(judged_by(t)[(ADDITIONS_LLM, ASSERTION)] is None for t in nulls)
    # the unparsed assertion fails the triple's additions; a D beside one (a
    # two-operation triple) is judged on its own verdicts (S07:98-121); a triple with
    # nothing judged is null
    for t in nulls:
        ops = t["tkgu_operations"]
        if "d-triples" not in ops:
            assert t["asserted_operations"] is None
        else:
            assert set(t["asserted_operations"]) <= {"d-triples"} and len(ops) > 1
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


def test_the_cli_curates_and_builds_with_llm_url(worlds, world: Path, tmp_path: Path,
                                                 spark) -> None:
    config = str(world / "config.yaml")
    warehouse = worlds.copy(worlds.built(TINY, release=False), tmp_path).warehouse
    ctx = curated_ctx(Catalog(warehouse, spark), world, "http://127.0.0.1:9/v1")
    requests, rows = expected_rows(ctx)
    with StubServer() as stub:
        done = emerge("curate", "-c", config, "--warehouse", str(warehouse), "--llm-url",
                      stub.url, "--out", str(tmp_path / "rel"))
        assert done.returncode == 0, done.stderr[-2000:]
        # curate's requests, then the final judge's about the kept lines (select ran)
        final, final_rows = final_expected(ctx)
        assert final and stub.requests == requests + final
    assert "release" in done.stdout
    curated = released_triples(tmp_path / "rel")
    assert curated and all({a["llm_name"] for a in t["llm_assessment"]} <= {
        ADDITIONS_LLM, DEPRECATIONS_LLM} and t["llm_assessment"] for t in curated)
    with StubServer() as stub:
        done = emerge("build", "-c", config, "--warehouse", str(tmp_path / "wh2"), "--out",
                      str(tmp_path / "rel2"), "--llm-url", stub.url)
        assert done.returncode == 0, done.stderr[-2000:]
        assert stub.requests == requests + final
    assert Catalog(tmp_path / "wh2", spark).row_count("verdicts") == rows + final_rows
    built = released_triples(tmp_path / "rel2")
    assert [t["llm_assessment"] for t in built] == [t["llm_assessment"] for t in curated]




def test_a_curated_release_keeps_only_lines_with_a_supported_delta_triple(
        built: Catalog, world: Path, tmp_path: Path) -> None:
    """The authors' s07 after curation (the defaults): no X-only line, no line without a
    delta triple its judges support, and every kept line with all its triples (the
    unsupported ones with their verdicts); what the rule left out is counted."""
    import json

    from emerge_lib.formats.format import OP_NAMES

    with StubServer() as stub:
        ctx = curated_ctx(built, world, stub.url)
        curate_all(ctx)
    for plan in ctx.cfg.plans():
        run_stage(ctx, "select", plan)
    run_stage(ctx, "release")
    release = Path(ctx.release_dir)
    lines = [json.loads(x) for f in sorted(release.glob("corpus/snapshot_*/delta_*.jsonl"))
             for x in f.read_text().splitlines()]
    delta = {OP_NAMES[op] for op in ("E", "EE", "EE-KG", "D")}
    assert lines
    for line in lines:
        ops = [set(t["tkgu_operations"]) for t in line["tkgu_triples"]]
        assert any(o & delta for o in ops), "an X-only line"
        assert any(set(t["asserted_operations"] or ()) & delta for t in line["tkgu_triples"])
    # each kept line holds every triple it was aligned with, supported or not
    instances = built.read_arrow("instances").to_pylist()
    for line in lines:
        want = sorted((r["s"], r["p"], r["o"], OP_NAMES[r["op"]]) for r in instances
                      if (r["window"], r["passage_id"]) == (line["window"], line["passage_id"]))
        got = sorted((*t["triple"], op) for t in line["tkgu_triples"]
                     for op in t["tkgu_operations"])
        assert got == want
    unsupported = [t for line in lines for t in line["tkgu_triples"]
                   if not set(t["asserted_operations"] or ()) & set(t["tkgu_operations"])]
    assert unsupported and all(t["llm_assessment"] for t in unsupported)
    selection = built.read_arrow("selection").to_pylist()
    left_out = json.loads((release / "release.json").read_text())["left_out"]
    assert left_out.get("unsupported", 0) == sum(r["reason"] == "unsupported" for r in selection) > 0
