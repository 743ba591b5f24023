"""Which requests curation plans (emerge_lib.curation.verdicts.plan_requests), on hand-made
instance rows: a D that carries a qualifier is judged by the deprecations model alone, as
the authors' s07 judges a triple with a non-empty ``qualifier_info`` (S07:109-112), an
end qualifier or a removal's start qualifier alike. The final judge (the authors' s05 v9)
asks every operation of the kept lines only, and decides a line once it judged it whole."""

from __future__ import annotations

from emerge_lib.core.config import CurationSettings, PassageSettings
from emerge_lib.curation.prompts import ASSERTION, DEPRECATION
from emerge_lib.curation.verdicts import (
    FINAL,
    final_operations,
    final_requests,
    final_verdicts,
    plan_requests,
)

SMALL, LARGE = "Meta-Llama-3.1-8B", "Meta-Llama-3.1-405B"


def d_row(passage: str, o: str, signal: str, qualifier: str | None) -> dict:
    return {"window": 1, "passage_id": passage, "op": "D", "s": "Q1", "p": "P1", "o": o,
            "signal": signal, "qualifier_pid": qualifier, "s_label": "One", "p_label": "rel",
            "o_label": o}


def judges_of(rows: list[dict]) -> dict[str, set[str]]:
    """passage → the models asked the deprecation prompt about it."""
    passages = [{"window": 1, "passage_id": p, "page_title": "T", "text": f"text {p}"}
                for p in {r["passage_id"] for r in rows}]
    out: dict[str, set[str]] = {}
    for req in plan_requests(CurationSettings(), PassageSettings(), rows, passages):
        assert req.prompt_type == DEPRECATION
        for _, pid in req.targets:
            out.setdefault(pid, set()).add(req.llm_name)
    return out


def test_a_removal_with_a_start_qualifier_is_judged_by_one_model() -> None:
    asked = judges_of([
        d_row("start", "Q2", "removed", "P580"),  # only a start qualifier: one judge
        d_row("end", "Q3", "qualifier:P582", "P582"),  # an end qualifier: one judge
        d_row("rank", "Q4", "rank", "P580"),
        d_row("bare", "Q5", "removed", None),  # the near miss: no qualifier, both judge
    ])
    assert asked == {"start": {LARGE}, "end": {LARGE}, "rank": {LARGE}, "bare": {LARGE, SMALL}}


def test_a_request_of_one_triple_is_a_single_triple_prompt() -> None:
    rows = [d_row("one", "Q2", "removed", "P580"),
            d_row("two", "Q3", "removed", "P580"), d_row("two", "Q4", "removed", "P580")]
    passages = [{"window": 1, "passage_id": p, "page_title": "T", "text": f"text {p}"}
                for p in ("one", "two")]
    for settings, singles in ((CurationSettings(), {"one"}),
                              (CurationSettings(single_prompts=False), set())):
        reqs = plan_requests(settings, PassageSettings(), rows, passages)
        assert {pid for r in reqs if r.single for _, pid in r.targets} == singles
        one = next(r for r in reqs if r.targets == [(1, "one")])
        assert ("\n1. (One, rel, Q2)\n" in one.prompt) != one.single


def line_rows() -> tuple[list[dict], list[dict]]:
    """Three lines: an E beside a D without qualifier ("kept"), a D with one ("also"),
    and an E on a line the selection dropped ("dropped")."""
    e = {**d_row("kept", "Q9", "", None), "op": "E", "signal": None}
    rows = [e, d_row("kept", "Q2", "removed", None), d_row("also", "Q3", "removed", "P582"),
            {**e, "passage_id": "dropped", "o": "Q8", "o_label": "Q8"}]
    passages = [{"window": 1, "passage_id": p, "page_title": "T", "text": f"text {p}"}
                for p in ("kept", "also", "dropped")]
    return rows, passages


def test_the_final_judge_asks_every_operation_of_the_kept_lines_only() -> None:
    rows, passages = line_rows()
    settings = CurationSettings()
    final = final_requests(settings, PassageSettings(), rows, passages,
                           {(1, "kept"), (1, "also")})
    asked = {(pid, r.prompt_type, t) for r in final for _, pid in r.targets for t in r.triples}
    assert asked == {("kept", ASSERTION, ("Q1", "P1", "Q9")),
                     ("kept", DEPRECATION, ("Q1", "P1", "Q2")),
                     ("also", DEPRECATION, ("Q1", "P1", "Q3"))}
    assert {r.llm_name for r in final} == {LARGE} and {r.judge for r in final} == {
        "deprecations"} and {r.recorded_as for r in final} == {FINAL}
    # the same prompt curate asks the deprecations model is the same request (one answer)
    curate = {(r.llm_name, r.sha) for r in plan_requests(settings, PassageSettings(), rows,
                                                         passages)}
    same = {(r.llm_name, r.sha) for r in final} & curate
    assert {r.prompt_type for r in final if (r.llm_name, r.sha) in same} == {DEPRECATION}
    assert len(same) == 2  # kept's and also's deprecation prompts; kept's assertion is new
    # another route as the final judge; none at all
    other = final_requests(CurationSettings(final_judge="additions"), PassageSettings(), rows,
                           passages, {(1, "kept")})
    assert {r.llm_name for r in other} == {SMALL} and len(other) == 2
    assert final_requests(CurationSettings(final_judge=None), PassageSettings(), rows,
                          passages, {(1, "kept")}) == []


def verdict(pid: str, o: str, kind: str, said: str, sha: str) -> dict:
    return {"passage_id": pid, "s": "Q1", "p": "P1", "o": o, "llm_name": LARGE,
            "prompt_type": kind, "prompt_sha": sha, "verdict": said, "answered_at": 0}


def test_the_final_judge_decides_only_a_line_it_judged_whole() -> None:
    rows, passages = line_rows()
    final = final_requests(CurationSettings(), PassageSettings(), rows, passages,
                           {(1, "kept"), (1, "also")})
    sha = {(pid, r.prompt_type): r.sha for r in final for _, pid in r.targets}
    stored = [verdict("kept", "Q2", DEPRECATION, "YES", sha[("kept", DEPRECATION)]),
              verdict("also", "Q3", DEPRECATION, "NO", sha[("also", DEPRECATION)])]
    # "kept" lacks its assertion answer: not judged whole, so not the final judge's yet
    assert dict(final_verdicts(stored, final)) == {("also", "Q1", "P1", "Q3"): {
        DEPRECATION: False}}
    stored.append(verdict("kept", "Q9", ASSERTION, "NO", sha[("kept", ASSERTION)]))
    judged = final_verdicts(stored, final)
    assert judged[("kept", "Q1", "P1", "Q9")] == {ASSERTION: False}
    assert judged[("kept", "Q1", "P1", "Q2")] == {DEPRECATION: True}
    # D by the deprecation verdict, the others by the assertion verdict, missing or
    # unparsed: NO; nothing judged at all: unknown
    assert final_operations(["E", "D"], {ASSERTION: False, DEPRECATION: True}) == ["D"]
    assert final_operations(["E", "D"], {ASSERTION: True, DEPRECATION: None}) == ["E"]
    assert final_operations(["EE-KG"], {DEPRECATION: True}) is None
    assert final_operations(["X", "E"], {ASSERTION: True}) == ["X", "E"]


def test_each_ask_draws_with_a_seed_of_its_prompt_round_and_attempt() -> None:
    """A retry or a re-ask samples (temperature 0.7); unseeded, two builds of one world
    released different gold (the demo's recall moved 47.6 → 31.2 between runs). Each ask
    now sends a seed: the same for the same prompt, round and attempt in every run, another
    for each retry and each re-ask, within every server's 31 bits; the request body
    carries it as vLLM, llama.cpp and OpenAI take it."""
    from emerge_lib.curation.client import ChatClient, Endpoint
    from emerge_lib.curation.verdicts import answer_seed

    seeds = {(r, a): answer_seed("3f2a9c", r, a) for r in (1, 2) for a in (0, 1, 2)}
    assert len(set(seeds.values())) == 6
    assert seeds == {(r, a): answer_seed("3f2a9c", r, a) for r in (1, 2) for a in (0, 1, 2)}
    assert answer_seed("other", 1, 0) != seeds[(1, 0)]
    assert all(0 <= s < 2 ** 31 for s in seeds.values())
    body = ChatClient().payload(Endpoint("http://x/v1", "m", "vllm", None), "p", 1, False,
                                0.7, seed=seeds[(1, 1)])
    assert body["seed"] == seeds[(1, 1)] and body["temperature"] == 0.7
    assert "seed" not in ChatClient().payload(Endpoint("http://x/v1", "m", "vllm", None),
                                              "p", 1, False)
