"""Opening a stage context: the configuration's catalog, with an engine session when the
stages need one, as one context manager (every command, the demo, the Airflow tasks and
the tests open it this way)."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from typing import TYPE_CHECKING, Any

from emerge_lib.catalog import Catalog
from emerge_lib.core.stage import StageContext

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from emerge_lib.core.config import Config

log = logging.getLogger(__name__)


@contextmanager
def open_context(cfg: Config, *, engine: bool = True, spark: SparkSession | None = None,
                 **fields: Any) -> Iterator[StageContext]:
    """The StageContext of ``cfg`` (``fields``: its inputs, release folder, callbacks).
    ``spark``: an open session to use; otherwise one is started on ``cfg.engine`` when a
    stage first needs it (a stage with nothing to do, or one that reads through deltalake
    only, never waits for an engine) and stopped on exit; ``engine=False``: never (the
    ingest's plan and extract steps, a release from stored files)."""
    if engine:  # the effective warehouse, wherever it came from (a flag, the env, a file)
        log.info("warehouse %s", cfg.warehouse)
    if spark is not None or not engine:
        yield StageContext(cfg, Catalog.for_config(cfg, spark), **fields)
        return
    from emerge_lib.core.engine import session_for

    with ExitStack() as stack:
        yield StageContext(cfg, Catalog.for_config(
            cfg, start_session=lambda: stack.enter_context(session_for(cfg))), **fields)
