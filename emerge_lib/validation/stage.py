"""The validate stage of the registry: the Great Expectations gate over a snapshot's
tables (``emerge_lib.validation.validate``); the release publishes only what passed."""

from __future__ import annotations

from typing import TYPE_CHECKING

from emerge_lib.core.stage import Outcome, Stage, StageContext

if TYPE_CHECKING:
    from emerge_lib.core.schedule import SnapshotPlan


def _validate(ctx: StageContext, plan: SnapshotPlan) -> Outcome:
    from emerge_lib.validation.suites import SuiteSettings
    from emerge_lib.validation.validate import Kept, validate_snapshot

    cfg = ctx.cfg
    report = validate_snapshot(ctx.catalog, plan, SuiteSettings(
        cfg.validation, cfg.deltas, cfg.passages, cfg.selection, cfg.curation),
        rerun=cfg.validation.rerun)
    if isinstance(report, Kept):
        return Outcome({"validation_results": 0}, {"checks kept": report.checks},
                       note=f"passed on these same rows at {report.validated_at}: kept",
                       detail=report)
    return Outcome({"validation_results": len(report.results)},
                   {"checks passed": sum(r.success for r in report.results)}, detail=report)


def _off(ctx: StageContext) -> str | None:
    return None if ctx.cfg.validation.enabled else "validation is off (validation.enabled)"


VALIDATE = Stage(
    name="validate", scope="snapshot",
    reads=("kg_triples", "entities", "relations", "passages", "instances", "selection",
           "verdicts"),
    writes=("validation_results",),
    settings=("validation", "deltas", "passages", "selection", "curation", "snapshots"),
    run=_validate, summary="the Great Expectations gate over the snapshot's tables", skip=_off)
