"""The release stage of the registry: every configured snapshot's EMERGE-format files
(``emerge_lib.release.writer``) into the context's release folder."""

from __future__ import annotations

from emerge_lib.catalog.specs import TABLES
from emerge_lib.core.stage import Outcome, Stage, StageContext
from emerge_lib.formats.layout import KG_SNAPSHOT_TABLES

#: what a release reads (each at the Delta version it had when the release started, logged):
#: every released table among them
RELEASE_READS = ("instances", "passages", "verdicts", "selection", "validation_results",
                 "ingested_files", "kg_triples", "entities", "relations", "reconciled_logs")
assert {n for n, s in TABLES.items() if s.released} <= set(RELEASE_READS)
assert set(KG_SNAPSHOT_TABLES) <= {n for n, s in TABLES.items() if s.released}


def _release(ctx: StageContext, _: None) -> Outcome:
    from emerge_lib.release.writer import write_release

    assert ctx.release_dir is not None  # _no_folder skips a context without one
    summary = write_release(ctx.catalog, ctx.release_dir, ctx.cfg.plans(), ctx.cfg.passages,
                            ctx.cfg.curation, ctx.cfg.validation, ctx.cfg.dataset_settings(),
                            RELEASE_READS, ctx.cfg.release)
    return Outcome(summary.rows(), {"files": len(summary.files), "carried_files": summary.carried,
                                    "carried_mb": round(summary.carried_bytes / 1e6, 1)},
                   note=summary.carry, detail=summary)


def _no_folder(ctx: StageContext) -> str | None:
    return None if ctx.release_dir is not None else "no release folder given (--out)"


RELEASE = Stage(
    name="release", scope="release", reads=RELEASE_READS, writes=(),
    settings=("snapshots", "stability", "passages", "deltas", "align", "qualifiers", "curation",
              "selection", "validation", "release", "dumps"),  # dumps: synthetic, for the card
    run=_release, summary="the EMERGE-format release (JSONL + Parquet + manifest.json) of "
    "every configured snapshot", skip=_no_folder)
