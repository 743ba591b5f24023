"""The curate stage of the registry: the paper's prompts to the configured LLMs, a
verdict per instance triple (``emerge_lib.curation.verdicts``), with its progress figures."""

from __future__ import annotations

from typing import TYPE_CHECKING

from emerge_lib.core.stage import Outcome, Stage, StageContext, StageFunction

if TYPE_CHECKING:
    from emerge_lib.core.schedule import SnapshotPlan


def _curate(ctx: StageContext, plan: SnapshotPlan, judges: tuple[str, ...] | None) -> Outcome:
    from emerge_lib.curation.verdicts import build_verdicts

    report = build_verdicts(ctx.catalog, plan, ctx.cfg.curation, ctx.cfg.passages,
                            ctx.on_curation, judges)
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
    return _curate(ctx, plan, None)


def _judge(judge: str) -> StageFunction:
    """The step that asks one route's model only (its requests, both prompt types)."""
    def step(ctx: StageContext, plan: SnapshotPlan) -> Outcome:
        return _curate(ctx, plan, (judge,))

    return step


#: the two routes, each a step: the Airflow snapshot DAG runs them as two tasks, each in
#: its model's pool (emerge_lib.airflow.pools); a build runs the whole stage
CURATE = Stage(
    name="curate", scope="snapshot", reads=("instances", "passages", "verdicts"),
    writes=("verdicts",), settings=("curation", "passages"), run=_whole,
    summary="the paper's prompts to the configured LLMs: a verdict per instance triple",
    skip=_off, steps={judge: _judge(judge) for judge in ("additions", "deprecations")})
