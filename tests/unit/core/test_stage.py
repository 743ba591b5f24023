"""The stage contract (emerge_lib/core/stage.py): a stage sees only the settings sections it
declares, is declared with keywords, and its functions have no defaults."""

from __future__ import annotations

import inspect

import pytest

from emerge_lib.core.config import Config
from emerge_lib.core.stage import Outcome, Stage, StageContext, UndeclaredSettingsError
from emerge_lib.curation.verdicts import build_verdicts
from emerge_lib.evaluation.run import evaluate_release
from emerge_lib.ingest.plan import plan_ingest
from emerge_lib.ingest.run import finish_ingest, run_ingest
from emerge_lib.pipeline.registry import STAGES
from emerge_lib.publish.upload import publish_release
from emerge_lib.release.writer import write_release
from emerge_lib.transform.align import build_instances
from emerge_lib.transform.deltas import build_deltas
from emerge_lib.transform.passages import build_passages
from emerge_lib.transform.select import build_selection, deduplicate
from emerge_lib.transform.snapshot import build_snapshot
from emerge_lib.transform.stability import build_stable_statements
from emerge_lib.validation.validate import validate_snapshot


def _nothing(ctx: StageContext, _: None) -> Outcome:
    return Outcome()


def _stage(**changes: object) -> Stage:
    fields: dict[str, object] = {"name": "x", "scope": "global", "reads": (), "writes": (),
                                 "settings": ("passages",), "run": _nothing, "summary": "x"}
    return Stage(**{**fields, **changes})  # type: ignore[arg-type]


def test_a_stage_sees_only_the_settings_sections_it_declares() -> None:
    cfg = Config()
    ctx = StageContext(cfg, None)  # type: ignore[arg-type]
    seen = _stage().view(ctx)
    assert seen.cfg.passages == cfg.passages and seen.cfg.warehouse == cfg.warehouse
    with pytest.raises(UndeclaredSettingsError, match=r"stage x reads curation\.enabled .*"
                       r"add 'curation' to its Stage\(settings=…\)"):
        _ = seen.cfg.curation.enabled
    with pytest.raises(UndeclaredSettingsError, match="the curation settings"):
        bool(seen.cfg.curation)
    with pytest.raises(UndeclaredSettingsError, match="snapshots"):
        seen.cfg.plans()  # a method of the configuration reads through the view too
    assert ctx.cfg.curation.enabled is False  # the context handed in is untouched


def test_skip_sees_the_same_view_as_the_stage() -> None:
    def skip(ctx: StageContext) -> str | None:
        return None if ctx.cfg.curation.enabled else "off"

    with pytest.raises(UndeclaredSettingsError):
        _stage(skip=skip).applies(StageContext(Config(), None))  # type: ignore[arg-type]
    assert _stage(skip=skip, settings=("curation",)).why_not(
        StageContext(Config(), None)) == "off"  # type: ignore[arg-type]


def test_a_stage_is_declared_with_keywords() -> None:
    with pytest.raises(TypeError):
        Stage("x", "global", (), (), (), _nothing, "x")  # type: ignore[misc]


@pytest.mark.parametrize("function", [
    build_stable_statements, build_snapshot, build_deltas, build_passages, build_instances,
    build_verdicts, build_selection, deduplicate, validate_snapshot, write_release,
    run_ingest, plan_ingest, finish_ingest, publish_release, evaluate_release], ids=lambda f: f.__name__)
def test_what_a_stage_calls_has_no_defaults(function: object) -> None:
    """Every value a stage hands its room is said at the call, none left to a default."""
    defaults = [p.name for p in inspect.signature(function).parameters.values()  # type: ignore[arg-type]
                if p.default is not inspect.Parameter.empty]
    assert defaults == []


def test_no_stage_function_has_defaults() -> None:
    for st in STAGES.values():
        for name, function in {"run": st.run, **st.steps}.items():
            defaults = [p.name for p in inspect.signature(function).parameters.values()
                        if p.default is not inspect.Parameter.empty]
            assert defaults == [], f"{st.name} {name}"
