"""The evaluate stage of the registry: the configured predictions (``evaluation``
settings) scored against the context's release folder, into
``evaluation.out/<snapshot date>/<release version>`` (``emerge_lib.evaluation.run``).
It reads no table: the release files alone, like ``emerge evaluate``."""

from __future__ import annotations

from emerge_lib.core.stage import Outcome, Stage, StageContext


def _evaluate(ctx: StageContext, _: None, *, release_snapshot: str | None,
              version: str | None) -> Outcome:
    """``release_snapshot`` and ``version`` name the output folder (the release Asset's event
    gives both; None: the release's manifest's version)."""
    from emerge_lib.evaluation.run import evaluate_release

    assert ctx.release_dir is not None  # _nothing_to_score skips a context without one
    if version is None:
        from emerge_lib.formats.manifest import read_manifest

        version = read_manifest(ctx.release_dir).get("version")
    result = evaluate_release(ctx.cfg.evaluation, ctx.release_dir, release_snapshot, version)
    out = str(result.written[0].parent) if result.written else None
    return Outcome({}, {"result rows": len(result.rows)}, note=f"scores in {out}",
                   detail={"snapshot": release_snapshot, "version": version, "out": out,
                           "rows": result.rows})


def _nothing_to_score(ctx: StageContext) -> str | None:
    if ctx.release_dir is None:
        return "no release folder given"
    if not ctx.cfg.evaluation.predictions:
        return ("no predictions configured: set evaluation.predictions (JSONL files of "
                "{hash_id, model, predicted})")
    return None


EVALUATE = Stage(
    name="evaluate", scope="release", reads=(), writes=(), settings=("evaluation",),
    run=_evaluate, summary="the configured predictions scored against the release: recall "
    "and completeness per operation and snapshot", skip=_nothing_to_score, in_build=False)
