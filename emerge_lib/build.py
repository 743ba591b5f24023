"""The dataset, end to end: ingest → stability → snapshot → deltas → passages → align → release.

Each stage is a pure function of catalog tables writing its own partitions, so the same
call rebuilds identical tables, and a new snapshot or window length reuses the ingested
timelines (only a snapshot outside the ingested paragraph ranges needs more Wikipedia
ingest, and says so).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from emerge_lib.config import Config
from emerge_lib.schedule import iso
from emerge_lib.tables import Catalog

log = logging.getLogger(__name__)


@dataclass
class BuildReport:
    stages: list[tuple[str, float, Any]] = field(default_factory=list)

    def add(self, name: str, seconds: float, result: Any) -> None:
        self.stages.append((name, seconds, result))
        log.info("stage %s: %.1fs %s", name, seconds, result)


def _timed(report: BuildReport, name: str, fn: Callable[[], Any],
           progress: Callable[[str], None] | None) -> Any:
    if progress:
        progress(name)
    started = time.monotonic()
    result = fn()
    report.add(name, time.monotonic() - started, result)
    return result


def build_dataset(
    cfg: Config,
    catalog: Catalog,
    wikidata: Sequence[str | Path] = (),
    wikipedia: Sequence[str | Path] = (),
    out: str | Path | None = None,
    workers: int = 1,
    progress: Callable[[str], None] | None = None,
) -> BuildReport:
    """Run every stage for the configured snapshots; ingest only when files are given."""
    from emerge_lib.stages.align import build_instances
    from emerge_lib.stages.deltas import build_deltas
    from emerge_lib.stages.ingest_wikidata import ingest_wikidata
    from emerge_lib.stages.ingest_wikipedia import ingest_wikipedia, ranges_from_config
    from emerge_lib.stages.passages import build_passages
    from emerge_lib.stages.snapshot import build_snapshot
    from emerge_lib.stages.stability import build_stable_statements

    report = BuildReport()
    s = cfg.snapshots
    if not s.timestamps:
        raise ValueError("no snapshot timestamps configured (snapshots.timestamps / --snapshot)")
    if wikidata:
        _timed(report, "ingest_wikidata", lambda: _ingest_summary(ingest_wikidata(
            catalog, wikidata, wiki=cfg.dumps.wikidata.wiki, workers=workers,
            max_reject_ratio=cfg.dumps.max_reject_ratio)), progress)
    if wikipedia:
        _timed(report, "ingest_wikipedia", lambda: _ingest_summary(ingest_wikipedia(
            catalog, wikipedia, ranges=ranges_from_config(cfg), wiki=cfg.dumps.wikipedia.wiki,
            workers=workers, max_reject_ratio=cfg.dumps.max_reject_ratio)), progress)
    _timed(report, "stability",
           lambda: build_stable_statements(catalog, cfg.stability.kg_hours), progress)
    for t in s.timestamps:
        key = iso(t)
        _timed(report, f"snapshot {key}", lambda t=t: build_snapshot(catalog, t), progress)
        _timed(report, f"deltas {key}", lambda t=t: build_deltas(
            catalog, t, s.windows, s.window_days, cfg.qualifiers.end, cfg.qualifiers.start),
            progress)
        _timed(report, f"passages {key}", lambda t=t: build_passages(
            catalog, t, s.windows, s.window_days, cfg.passages,
            cfg.stability.passage_minutes), progress)
        _timed(report, f"align {key}", lambda t=t: build_instances(
            catalog, t, s.windows, s.window_days, cfg.passages.article_entity_counts),
            progress)
    if out is not None:
        from emerge_lib.stages.release import write_release

        _timed(report, "release", lambda: write_release(
            catalog, out, list(s.timestamps), s.windows, s.window_days,
            title_prefix=cfg.passages.title_prefix), progress)
    return report


def _ingest_summary(report: Any) -> dict[str, Any]:
    return {"files": len(report.files), "pages": report.pages, "revisions": report.revisions,
            "rejects": report.rejects}
