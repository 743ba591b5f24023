"""The relational stages of the registry: configuration → each transform's parameters,
and its rows as the stage's outcome. Stability keeps a whole table (and records what it
was built from, so snapshot runs side by side do not rewrite it, and the next run
recomputes only the keys changed since); the others run per snapshot t and write that
snapshot's partitions."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from emerge_lib.catalog.storage import read_state, write_state
from emerge_lib.core.stage import Outcome, Stage, StageContext

if TYPE_CHECKING:
    from emerge_lib.core.schedule import SnapshotPlan

log = logging.getLogger(__name__)


def _windows(table: str, rows: dict[int, int]) -> Outcome:
    return Outcome({table: sum(rows.values())}, {"windows": len(rows)})


def _stability(ctx: StageContext, _: None) -> Outcome:
    from emerge_lib.transform.stability import build_stable_statements, built_from

    catalog, settings = ctx.catalog, ctx.cfg.stability
    resolve = ctx.cfg.deltas.resolve_redirects
    state = built_from(catalog, settings, resolve)
    last = read_state(catalog, "stability")
    if (catalog.exists("stable_statements") and last == state
            and settings.rebuild == "auto"):
        return Outcome({}, note="up to date")
    run = build_stable_statements(catalog, settings, resolve, state=state, last=last)
    write_state(catalog, "stability", state)
    if run.touched is None:
        return Outcome({"stable_statements": run.rows}, note=f"full rebuild: {run.full_reason}")
    return Outcome({"stable_statements": run.rows},
                   {"keys touched": run.touched, "rows deleted": run.deleted,
                    "rows inserted": run.inserted}, note="incremental")


def _snapshot(ctx: StageContext, plan: SnapshotPlan) -> Outcome:
    from emerge_lib.transform.snapshot import build_snapshot, require_kg_coverage

    require_kg_coverage(ctx.catalog, plan, ctx.cfg.dumps.wikidata.wiki)
    return Outcome(build_snapshot(ctx.catalog, plan, ctx.cfg.deltas.resolve_redirects))


def _deltas(ctx: StageContext, plan: SnapshotPlan) -> Outcome:
    from emerge_lib.transform.deltas import build_deltas

    return _windows("delta_triples", build_deltas(ctx.catalog, plan, ctx.cfg.qualifiers,
                                                  ctx.cfg.deltas))


def _passages(ctx: StageContext, plan: SnapshotPlan) -> Outcome:
    from emerge_lib.transform.passages import build_passages

    rows = build_passages(ctx.catalog, plan, ctx.cfg.passages, ctx.cfg.stability,
                          ctx.cfg.deltas.resolve_redirects)
    if not sum(rows.values()):
        log.warning("passages %s: no new passage in any window; does the Wikipedia history "
                    "reach into (t, τ_n]?", plan.key)
    return _windows("passages", rows)


def _align(ctx: StageContext, plan: SnapshotPlan) -> Outcome:
    from emerge_lib.transform.align import build_instances

    cfg = ctx.cfg
    rows, left_out = build_instances(ctx.catalog, plan, cfg.passages, cfg.qualifiers,
                                     cfg.align, cfg.deltas)
    outcome = _windows("instances", rows)
    names = {"lines": "aligned lines", "relations": "left out outside R_t"}
    outcome.metrics.update({names.get(k, f"left out by {k.upper()}"): v
                            for k, v in left_out.items()})
    return outcome


def _select(ctx: StageContext, plan: SnapshotPlan) -> Outcome:
    from emerge_lib.transform.select import build_selection

    cfg = ctx.cfg
    return _windows("selection", build_selection(ctx.catalog, plan, cfg.selection, cfg.curation,
                                                 cfg.passages))


STABILITY = Stage(
    name="stability", scope="global", reads=("statement_timeline", "item_timeline"),
    writes=("stable_statements",), settings=("stability", "deltas"), run=_stability,
    summary="the 168 h KG stability rule over statement_timeline")
SNAPSHOT = Stage(
    name="snapshot", scope="snapshot",
    reads=("stable_statements", "item_timeline", "property_timeline", "page_timeline",
           "paragraph_timeline", "ingested_files"),
    writes=("kg_triples", "entities", "relations"),
    settings=("snapshots", "dumps", "deltas"),
    run=_snapshot,
    summary="G_t: T_t, V_t and R_t of a snapshot")
DELTAS = Stage(
    name="deltas", scope="snapshot",
    reads=("statement_timeline", "stable_statements", "item_timeline"),
    writes=("delta_triples",), settings=("snapshots", "qualifiers", "deltas"),
    run=_deltas,
    summary="the cumulative KG delta of every window, with operation candidates")
PASSAGES = Stage(
    name="passages", scope="snapshot",
    reads=("paragraph_timeline", "page_timeline", "item_timeline", "paragraph_coverage",
           "page_watermarks", "ingested_files"),
    writes=("passages",), settings=("snapshots", "passages", "stability", "deltas"),
    run=_passages,
    summary="new paragraphs of every window, links resolved to QIDs")
ALIGN = Stage(
    name="align", scope="snapshot",
    reads=("passages", "delta_triples", "kg_triples", "relations", "stable_statements",
           "statement_timeline", "item_timeline", "property_timeline", "page_timeline",
           "paragraph_timeline"),
    writes=("instances",), settings=("snapshots", "passages", "qualifiers", "align", "deltas"),
    run=_align,
    summary="passages × deltas → the TKGU instances")
SELECT = Stage(
    name="select", scope="snapshot", reads=("instances", "passages", "verdicts"),
    writes=("selection",), settings=("selection", "curation", "passages"), run=_select,
    summary="near-duplicate passages removed, the seeded stratified test split drawn")
