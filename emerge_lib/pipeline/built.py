"""Which snapshots a whole build keeps as they were built (``snapshots.rebuild: new``).

Under the released data's rules a quarter can change any older snapshot's rows: a D
counts only when its key is not present again within 15 years (R2a), an EE-KG addition
only when it is still in the KG 182.5 days on (R3), creation times and merges are read
at the end of the ingested history (R4, the final redirects). So ``rebuild: all`` (the
default) builds every configured snapshot again from the whole history, as a build from
scratch does. ``rebuild: new`` keeps what was released instead: a snapshot whose stages
all ran in an earlier build is not built again while

- the settings that shape its rows are those it was built with (``settings_key``: the
  manifest's settings but the snapshot list and the release's own),
- its windows are the same, and
- every table its stages write holds, for it, exactly the rows that build left
  (``Catalog.partition_digest``: a stage run on it since, or a kill in the middle of
  its stages, makes it built again).

Its rows stay those of the history it was built from; the release carries its files (or
writes them again from those rows), so a quarter builds only its new snapshot. What each
build left is a state file per snapshot (``_state/built-<t>.json``), written after the
snapshot's last stage, with the history it was built from (a release whose history is
newer names it: ``release.provenance.built_earlier``); the code that built it is recorded
but not compared: a newer emerge keeps history as it was released (``rebuild: all`` once
rebuilds it).
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Sequence
from typing import Any

from emerge_lib.catalog.storage import built_state, read_state, write_state
from emerge_lib.core.schedule import SnapshotPlan
from emerge_lib.core.stage import StageContext
from emerge_lib.core.version import __version__

log = logging.getLogger(__name__)


def settings_key(ctx: StageContext) -> str:
    """A hash of the settings that shape a snapshot's rows: the release's settings
    (``Config.dataset_settings``) without the list of snapshots (adding one leaves the
    others as they are) and the release's own section (how files are written)."""
    settings = ctx.cfg.dataset_settings()
    settings.pop("release", None)
    settings["snapshots"] = {k: v for k, v in settings["snapshots"].items()
                             if k != "timestamps"}
    return hashlib.sha256(json.dumps(settings, sort_keys=True, default=str)
                          .encode("utf-8")).hexdigest()


def _digests(ctx: StageContext, plan: SnapshotPlan, tables: Sequence[str]) -> dict[str, Any]:
    catalog = ctx.catalog
    return {name: catalog.partition_digest(name, catalog.version(name), plan.key)
            for name in sorted(tables)}


def record(ctx: StageContext, plan: SnapshotPlan, tables: Sequence[str]) -> None:
    """What the build that just ran every stage of ``plan`` left: its settings, windows,
    the digests of its rows in ``tables`` (the tables its stages write) and the history it
    was built from (``release.provenance.history``: a release of it says so when that is
    not the history the release holds)."""
    from emerge_lib.release.provenance import history

    catalog = ctx.catalog
    versions = {n: catalog.version(n) for n in ("ingested_files", "reconciled_logs")}
    write_state(catalog, built_state(plan.key), {
        "snapshot": plan.key, "settings": settings_key(ctx),
        "windows": [plan.window_count, plan.window_days],
        "digests": _digests(ctx, plan, tables), "emerge": __version__,
        "history": history(catalog, versions)})


def kept(ctx: StageContext, plan: SnapshotPlan, tables: Sequence[str]) -> str | None:
    """Why ``plan``'s stages need not run again (``snapshots.rebuild: new``), or None when
    they must: never built whole, other settings or windows, or its rows changed since."""
    state = read_state(ctx.catalog, built_state(plan.key))
    if state is None or state.get("snapshot") != plan.key:
        return None
    if state.get("settings") != settings_key(ctx):
        log.info("snapshot %s: built again (the settings that shape its rows changed)",
                 plan.key)
        return None
    if state.get("windows") != [plan.window_count, plan.window_days]:
        return None
    if state.get("digests") != _digests(ctx, plan, tables):
        log.info("snapshot %s: built again (its rows changed since it was built)", plan.key)
        return None
    return f"kept as built by emerge {state.get('emerge')} (snapshots.rebuild: new)"
