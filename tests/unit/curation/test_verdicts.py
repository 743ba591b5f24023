"""Which requests curation plans (emerge_lib.curation.verdicts.plan_requests), on hand-made
instance rows: a D that carries a qualifier is judged by the deprecations model alone, as
the authors' s07 judges a triple with a non-empty ``qualifier_info`` (S07:109-112), an
end qualifier or a removal's start qualifier alike."""

from __future__ import annotations

from emerge_lib.core.config import CurationSettings, PassageSettings
from emerge_lib.curation.prompts import DEPRECATION
from emerge_lib.curation.verdicts import plan_requests

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
