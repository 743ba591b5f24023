"""The daily adds/changes ingest: the increments of a date range from the configured
mirror into the timelines, then the stability rule (``emerge ingest --incr``, the
``emerge_incr`` DAG's daily task: one day each).

Why its own door: the increments are not dump dates of the configuration but days, read
from ``other/incr`` and continued from the warehouse (``ingest.wikidata.extract``,
``ingest.wikipedia.extract``); the stages that commit them are the ordinary ingest
stages, fed the day's files as paths. A wiki of which the warehouse holds no full dump
has nothing to continue: its increments are not read (a first ingest reads a full dump).
After the days, the newest logging dump of each wiki that the timelines reach is applied
(``ingest.reconcile``: the deletions and restorations the increments lack).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING

from emerge_lib.core.stage import StageContext, StageResult
from emerge_lib.pipeline.context import open_context
from emerge_lib.pipeline.registry import stage
from emerge_lib.pipeline.runner import run_stage

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from emerge_lib.core.config import Config
    from emerge_lib.dumps.mirror import ProgressFactory
    from emerge_lib.ingest.plan import Kind

log = logging.getLogger(__name__)

KINDS: tuple[Kind, ...] = ("wikidata", "wikipedia")


def ingest_increments(cfg: Config, first: str, last: str, *,
                      spark: SparkSession | None = None,
                      progress_factory: ProgressFactory | None = None,
                      kinds: Sequence[Kind] = KINDS) -> list[StageResult]:
    """Ingest the increments of ``first`` … ``last`` (YYYYMMDD, inclusive), day by day
    (each day's file is one batch of the ingest, committed before the next is read), then
    rebuild the stable statements. Days the warehouse holds are not read again; days
    before its newest full dump are left out (``ingest.plan.increment_refs``)."""
    from emerge_lib.ingest.plan import increment_refs

    results: list[StageResult] = []
    paths: dict[str, list[str]] = {}
    with open_context(cfg, spark=spark) as probe:
        for kind in kinds:
            if not _has_full_dump(probe, kind):
                log.warning("%s: the warehouse holds no full dump of it: its increments have "
                            "nothing to continue and are not read; ingest a full dump first",
                            kind)
                continue
            paths[kind] = [str(r.path) for r in increment_refs(
                cfg, probe.catalog, kind, first, last, progress_factory)]
    if not any(paths.values()):
        log.info("no increment of %s..%s to ingest (before the newest full dump)", first, last)
    with open_context(cfg, spark=spark, wikidata=paths.get("wikidata") or None,
                      wikipedia=paths.get("wikipedia") or None) as ctx:
        results += _run(ctx, kinds)
    return results


def _has_full_dump(ctx: StageContext, kind: Kind) -> bool:
    from emerge_lib.ingest.files import DumpFileRef
    from emerge_lib.ingest.plan import wiki_of

    names = ctx.catalog.read_arrow("ingested_files", filters=[
        ("wiki", "=", wiki_of(ctx.cfg, kind))], columns=["dump_file", "error"]).to_pylist()
    return any(r["error"] is None and not DumpFileRef.of(r["dump_file"]).increment
               for r in names)


def _run(ctx: StageContext, kinds: Sequence[Kind]) -> list[StageResult]:
    """The days, then the logging dump the timelines now reach (``reconcile``: each wiki's
    newest one on the mirror not yet applied), then the stable statements."""
    out = []
    for kind in kinds:
        if ctx.inputs(kind):
            out.append(run_stage(ctx, f"ingest_{kind}"))
    touched = False
    if stage("reconcile").applies(ctx):
        reconciled = run_stage(ctx, "reconcile", logs=None)
        out.append(reconciled)
        wikidata = ctx.cfg.dumps.wikidata.wiki
        touched = any(r.wiki == wikidata and not r.skipped for r in reconciled.detail or ())
    if ("wikidata" in kinds and ctx.inputs("wikidata")) or touched:
        out.append(run_stage(ctx, "stability"))
    return out
