"""Tests call stages the way every other caller does: through the registry (run_stage)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from emerge_lib.catalog import Catalog
from emerge_lib.core.config import Config, load_config
from emerge_lib.core.stage import StageContext, StageResult
from emerge_lib.pipeline.runner import build_dataset, run_stage


def config(catalog: Catalog, base: str | Path | None = None, **sections: Any) -> Config:
    """The default (or ``base``) configuration on the catalog's warehouse, with overrides
    (``snapshots={"windows": 2}``, ``dumps={"max_reject_ratio": 1.0}``, ...)."""
    return load_config(base, overrides={**sections, "warehouse": catalog.warehouse})


def context(catalog: Catalog, wikidata: Sequence[str | Path] | None = None,
            wikipedia: Sequence[str | Path] | None = None, release_dir: str | Path | None = None,
            base: str | Path | None = None, **sections: Any) -> StageContext:
    return StageContext(config(catalog, base, **sections), catalog, wikidata, wikipedia,
                        release_dir)


def run(catalog: Catalog, stage: str, snapshot: Any = None, **kwargs: Any) -> StageResult:
    """``run_stage`` on a context built from ``kwargs`` (see ``context``)."""
    return run_stage(context(catalog, **kwargs), stage, snapshot)


def ingest(catalog: Catalog, kind: str, files: Sequence[str | Path], **sections: Any):
    """Run one wiki's ingest stage on ``files``; returns the stage result."""
    key = "wikidata" if kind == "wikidata" else "wikipedia"
    return run(catalog, f"ingest_{key}", **{key: list(map(str, files))}, **sections)


def build(catalog: Catalog, **kwargs: Any) -> list[StageResult]:
    return build_dataset(context(catalog, **kwargs))
