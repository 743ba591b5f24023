"""The curate stage of the registry: the paper's prompts to the configured LLMs, a
verdict per instance triple (``emerge_lib.curation.verdicts``), with its progress figures."""

from __future__ import annotations

from typing import TYPE_CHECKING

from emerge_lib.core.stage import Outcome, Stage, StageContext, StageFunction

if TYPE_CHECKING:
    from emerge_lib.core.schedule import SnapshotPlan


def _curate(ctx: StageContext, plan: SnapshotPlan, judges: tuple[str, ...] | None, *,
             final: bool) -> Outcome:
    from emerge_lib.curation.verdicts import build_verdicts

    report = build_verdicts(ctx.catalog, plan, ctx.cfg.curation, ctx.cfg.passages,
                            ctx.on_curation, judges, final=final)
    metrics: dict[str, float] = {"requests": report.requests, "asked": report.answered,
                                 "already answered": report.answered_before,
                                 "unparsed": report.unparsed, "left": report.left,
                                 "tokens out": report.tokens_out}
    if report.replayed:  # answers a killed run received, committed from its journal
        metrics["replayed"] = report.replayed
    if report.reasked_unparsed or report.reasked_degenerate:  # answer QA
        metrics["asked again: unparsed"] = report.reasked_unparsed
        metrics["asked again: degenerate"] = report.reasked_degenerate
    if report.seconds and report.answered:
        metrics["requests/s"] = report.answered / report.seconds
        metrics["tokens/s"] = report.tokens_out / report.seconds
    return Outcome({"verdicts": report.rows}, metrics, detail=report)


def _off(ctx: StageContext) -> str | None:
    return None if ctx.cfg.curation.enabled else (
        "curation is off (curation.enabled; --llm-url or --local-llm turn it on)")


def _whole(ctx: StageContext, plan: SnapshotPlan) -> Outcome:
    """The whole stage: every request, to both routes' models."""
    return _curate(ctx, plan, None, final=False)


def _judge(judge: str) -> StageFunction:
    """The step that asks one route's model only (its requests, both prompt types)."""
    def step(ctx: StageContext, plan: SnapshotPlan) -> Outcome:
        return _curate(ctx, plan, (judge,), final=False)

    return step


#: the two routes, each a step: the Airflow snapshot DAG runs them as two tasks, each in
#: its model's pool (emerge_lib.airflow.pools); a build runs the whole stage
CURATE = Stage(
    name="curate", scope="snapshot", reads=("instances", "passages", "verdicts"),
    writes=("verdicts",), settings=("curation", "passages"), run=_whole,
    summary="the paper's prompts to the configured LLMs: a verdict per instance triple",
    skip=_off, steps={judge: _judge(judge) for judge in ("additions", "deprecations")})


def _no_final(ctx: StageContext) -> str | None:
    return _off(ctx) or (None if ctx.cfg.curation.final_judge else
                         "no final judge (curation.final_judge is null)")


def _final_whole(ctx: StageContext, plan: SnapshotPlan) -> Outcome:
    """The final judge's every request (they all go to its route's model)."""
    return _curate(ctx, plan, None, final=True)


def _final_step(judge: str) -> StageFunction:
    """The step of one route: the final judge's requests when it is that route's model,
    none otherwise (the DAG's task of the other route's pool has nothing to ask)."""
    def step(ctx: StageContext, plan: SnapshotPlan) -> Outcome:
        return _curate(ctx, plan, (judge,), final=True)

    return step


#: the authors' s05 v9, after their test draw: the final judge (``curation.final_judge``,
#: their Llama-3.1-405B with prompt_v1) asked, in the paper's prompts, about every
#: operation of every line ``select`` kept; its verdicts are the release's gold. Resumable
#: and kill-safe as curate is (the same journal and MERGE into ``verdicts``), and a prompt
#: curate already asked of the same model is answered from the table, never asked again.
#: Its steps, one per route, are the DAG's tasks in each model's pool.
FINAL_JUDGE = Stage(
    name="final_judge", scope="snapshot",
    reads=("instances", "passages", "verdicts", "selection"), writes=("verdicts",),
    settings=("curation", "passages"), run=_final_whole,
    summary="the final judge's verdict on every operation of every kept line: the gold",
    skip=_no_final, steps={judge: _final_step(judge) for judge in ("additions", "deprecations")})
