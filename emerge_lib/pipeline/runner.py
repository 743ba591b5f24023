"""The one door every stage goes through, and a whole build.

The CLI, the demo, the tests and the Airflow tasks all call stages through
:func:`run_stage` (or :func:`build_dataset`, a loop over the registry): it resolves the
snapshot's plan, hands the stage its view of the context (only the settings sections it
declares), refuses a stage that has nothing to do (its ``skip`` says why), runs the
stage or one of its mapped steps, measures wall and CPU seconds (this process and the
workers it reaped), and logs the one-line brief. So timing, CPU figures and the log line
exist once, here, for the mapped ingest's steps and the evaluation too.

A snapshot is built by one run at a time (``catalog.storage.snapshot_lock``): a snapshot
stage holds its snapshot's lock (curate's two steps, one per model, share it and each
holds its own step's), a whole build holds its snapshots' locks from its first step to
its last, so a second build of the same snapshot (or an Airflow retry beside its
stuck try) waits, then rebuilds the same rows, instead of rewriting them between the
first one's validation and its release.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from datetime import datetime
from typing import Any

from emerge_lib.catalog.specs import TABLES
from emerge_lib.catalog.storage import snapshot_lock, timelines_lock
from emerge_lib.core.engine import engine_activity
from emerge_lib.core.errors import EmergeError
from emerge_lib.core.resources import cpu_seconds
from emerge_lib.core.schedule import SnapshotPlan
from emerge_lib.core.stage import StageContext, StageResult
from emerge_lib.pipeline.registry import STAGES, stage

log = logging.getLogger(__name__)


def run_stage(ctx: StageContext, name: str,
              snapshot: SnapshotPlan | datetime | str | None = None, *,
              step: str | None = None, **inputs: Any) -> StageResult:
    """Run one stage (or its mapped ``step``, with that step's ``inputs``); a snapshot
    stage needs ``snapshot`` (a plan, or t with the configured windows), the others
    refuse one. A stage that does not apply to ``ctx`` is refused with its reason (a
    caller that skips instead asks ``Stage.applies`` first). Logs the stage's brief."""
    st = stage(name)
    if st.scope == "snapshot":
        if snapshot is None:
            raise EmergeError(f"stage {name} runs per snapshot: give the snapshot t")
        plan = snapshot if isinstance(snapshot, SnapshotPlan) else ctx.cfg.plan(snapshot)
    elif snapshot is not None:
        raise EmergeError(f"stage {name} is not per snapshot; it takes no snapshot")
    else:
        plan = None
    wikis = [] if st.scope == "ingest" else read_wikis(ctx, st.reads)
    ctx = st.view(ctx)  # the stage sees only the settings sections it declares
    if step is None:
        why = st.skip(ctx)
        if why is not None:
            raise EmergeError(f"stage {name}: {why}")
        run = st.run
    elif step in st.steps:
        run = st.steps[step]
    else:
        raise EmergeError(f"stage {name} has no step {step!r}"
                          + (f"; steps: {', '.join(st.steps)}" if st.steps else ""))
    started, cpu_started = time.monotonic(), cpu_seconds()
    label = " ".join(x for x in (f"stage {name}", step, plan.key if plan else None) if x)
    locked = [plan.key] if plan is not None else []
    with snapshot_lock(ctx.catalog.warehouse, locked, step=step), \
            timelines_lock(ctx.catalog.warehouse, wikis, mode="read"), engine_activity(label):
        outcome = run(ctx, plan, **inputs)
    result = StageResult(name, plan.key if plan else None, outcome.rows,
                         time.monotonic() - started, outcome.metrics, outcome.note,
                         outcome.detail, cpu_seconds() - cpu_started, step)
    log.info("stage %s", result.brief())
    return result


def read_wikis(ctx: StageContext, reads: tuple[str, ...]) -> list[str]:
    """The wikis whose ingest writes a table of ``reads``: a stage reading them holds
    their timelines' read lock while it runs (``timelines_lock``)."""
    wiki = {"ingest_wikidata": ctx.cfg.dumps.wikidata.wiki,
            "ingest_wikipedia": ctx.cfg.dumps.wikipedia.wiki}
    return sorted({wiki[p] for name in reads for p in TABLES[name].producers if p in wiki})


def build_steps(ctx: StageContext) -> list[tuple[str, SnapshotPlan | None]]:
    """The (stage, snapshot) steps of a whole build, in the registry's order: every stage
    of a build that applies to ``ctx`` (ingest what inputs exist, stability, every
    configured snapshot's stages, the release when a folder is given, its publication
    when ``publish.to`` is set). With ``snapshots.rebuild: new``, a snapshot already
    built whole, with the same settings and rows, has no steps (``pipeline.built``).
    Evaluation is not part of a build: the evaluation DAG and ``emerge evaluate`` ask
    for it."""
    from emerge_lib.pipeline import built

    plans = ctx.cfg.plans()
    if not plans:
        raise EmergeError("no snapshot timestamps configured (snapshots.timestamps / --snapshot)")
    applying = [st for st in STAGES.values() if st.in_build and st.applies(ctx)]
    steps: list[tuple[str, SnapshotPlan | None]] = [
        (st.name, None) for st in applying if st.scope in ("ingest", "global")]
    tables = snapshot_tables(ctx)
    for p in plans:
        why = built.kept(ctx, p, tables) if ctx.cfg.snapshots.rebuild == "new" else None
        if why is not None:  # said once, by build_dataset (a caller counts steps first)
            log.debug("snapshot %s: %s", p.key, why)
            continue
        steps += [(st.name, p) for st in applying if st.scope == "snapshot"]
    steps += [(st.name, None) for st in applying if st.scope == "release"]
    return steps


def snapshot_tables(ctx: StageContext) -> list[str]:
    """The tables the snapshot stages of a build of ``ctx`` write (each per snapshot)."""
    return sorted({t for st in STAGES.values()
                   if st.in_build and st.scope == "snapshot" and st.applies(ctx)
                   for t in st.writes})


def build_dataset(ctx: StageContext,
                  on_step: Callable[[str, SnapshotPlan | None], None] | None = None,
                  on_result: Callable[[StageResult], None] | None = None) -> list[StageResult]:
    """Every step of :func:`build_steps`, in order; returns their results. After a
    snapshot's last step, what it left is recorded (``pipeline.built.record``), so a
    later build with ``snapshots.rebuild: new`` can keep it."""
    from emerge_lib.pipeline import built

    results = []
    steps = build_steps(ctx)
    last = {plan.key: i for i, (_, plan) in enumerate(steps) if plan is not None}
    for kept in (p.key for p in ctx.cfg.plans() if p.key not in last):
        log.info("snapshot %s: kept as built (snapshots.rebuild: new): its stages do not "
                 "run", kept)
    tables = snapshot_tables(ctx)
    with snapshot_lock(ctx.catalog.warehouse, [p.key for p in ctx.cfg.plans()]):
        for i, (name, plan) in enumerate(steps):
            if on_step:
                on_step(name, plan)
            result = run_stage(ctx, name, plan)
            results.append(result)
            if plan is not None and last[plan.key] == i:
                built.record(ctx, plan, tables)
            if on_result:
                on_result(result)
    return results
