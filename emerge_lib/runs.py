"""One orchestrated snapshot run: what a run of the Airflow snapshot DAG asks for (its
params), turned into the configuration and the stage context every task of the run uses.

The library knows nothing of Airflow: the DAG's glue resolves the snapshot (params, an
Asset event, or the logical date of a scheduled or backfill run), adds what connections
say (engine, LLM workers, S3), and hands the rest here. Precedence, lowest first: the
YAML file (``config``, else ``$EMERGE_CONFIG``), ``EMERGE__*`` variables, connections,
then the run's own params.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from emerge_lib.config import Config, ConfigError, deep_merge, load_config
from emerge_lib.schedule import parse_utc
from emerge_lib.tables import Catalog

CONFIG_ENV = "EMERGE_CONFIG"  # the YAML a deployment runs with, unless a run names one
RELEASE_ROOT_ENV = "EMERGE_RELEASE_ROOT"  # where runs write releases without release_dir


def _iso(value: Any) -> str:
    try:
        return parse_utc(value).strftime("%Y-%m-%dT%H:%M:%SZ")
    except ValueError as exc:
        raise ConfigError(f"snapshot: {exc}") from None


def covered_quarter(dump_date: str, windows: int, window_days: float) -> str | None:
    """The newest quarter start t whose windows a dump of ``dump_date`` covers (τ_n at or
    before the dump date): the snapshot a quarterly ingest adds."""
    from datetime import UTC, datetime, timedelta

    try:
        day = datetime.strptime(dump_date, "%Y%m%d").replace(tzinfo=UTC)
    except ValueError:
        raise ConfigError(f"dump_date must be YYYYMMDD, not {dump_date!r}") from None
    latest = day - timedelta(days=windows * window_days)
    quarter = datetime(latest.year, 3 * ((latest.month - 1) // 3) + 1, 1, tzinfo=UTC)
    return quarter.strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(frozen=True)
class SnapshotRun:
    """The params of one snapshot run (None: the configuration's value)."""

    snapshot: str | None  # None: an ingest run (no snapshot of its own)
    weeks: int | None = None
    window_days: float | None = None
    wikidata_files: tuple[str, ...] = ()
    wikipedia_files: tuple[str, ...] = ()
    mirror: str | None = None
    dump_date: str | None = None
    config: str | None = None
    curate: bool | None = None
    publish: bool = False
    release_to: str | None = None
    release_dir: str | None = None
    overrides: Mapping[str, Any] = field(default_factory=dict)  # from connections
    # an ingest run: the snapshots whose Wikipedia ranges to keep (empty: the configured
    # ones, plus the newest quarter start the dump of ``dump_date`` covers)
    snapshots: tuple[str, ...] = ()

    @classmethod
    def from_params(cls, params: Mapping[str, Any], snapshot: Any,
                    overrides: Mapping[str, Any] | None = None) -> SnapshotRun:
        """From a params mapping (unknown keys ignored); the snapshot as an ISO timestamp."""
        known = {k: params.get(k) for k in ("weeks", "window_days", "mirror", "dump_date",
                                            "config", "curate", "release_to", "release_dir")}
        return cls(snapshot=None if snapshot is None else _iso(snapshot),
                   snapshots=tuple(_iso(t) for t in params.get("snapshots") or ()),
                   wikidata_files=tuple(map(str, params.get("wikidata_files") or ())),
                   wikipedia_files=tuple(map(str, params.get("wikipedia_files") or ())),
                   publish=bool(params.get("publish")), overrides=dict(overrides or {}),
                   **known)

    def config_path(self) -> str | None:
        return self.config or os.environ.get(CONFIG_ENV) or None

    def settings(self) -> Config:
        """The run's configuration: the file, the environment, connections, then params."""
        base = load_config(self.config_path())
        if self.snapshot is not None:
            timestamps = [self.snapshot]
        elif self.snapshots:
            timestamps = list(self.snapshots)
        else:
            timestamps = [_iso(t) for t in base.snapshots.timestamps]
            if self.dump_date:
                windows = self.weeks or base.snapshots.windows
                days = self.window_days or base.snapshots.window_days
                newest = covered_quarter(self.dump_date, windows, days)
                if newest and newest not in timestamps:
                    timestamps.append(newest)
        params: dict[str, Any] = {"snapshots": {"timestamps": timestamps}}
        if self.weeks is not None:
            params["snapshots"]["windows"] = self.weeks
        if self.window_days is not None:
            params["snapshots"]["window_days"] = self.window_days
        dumps: dict[str, Any] = {}
        if self.mirror:
            dumps["mirror"] = self.mirror
        if self.dump_date:
            for kind in ("wikidata", "wikipedia"):
                wiki = getattr(base.dumps, kind).wiki
                dumps[kind] = {"wiki": wiki, "dates": [self.dump_date]}
        if dumps:
            params["dumps"] = dumps
        if self.curate is not None:
            params["curation"] = {"enabled": self.curate}
        if self.publish and self.release_to:
            params["publish"] = {"to": self.release_to}
        return load_config(self.config_path(),
                           overrides=deep_merge(dict(self.overrides), params))

    def release_folder(self, cfg: Config) -> Path:
        """``release_dir``, else ``$EMERGE_RELEASE_ROOT/snapshot_YYYY-MM-DD``, else
        ``releases/snapshot_YYYY-MM-DD`` beside a local warehouse: one folder per snapshot,
        so runs side by side never write the same files."""
        if self.release_dir:
            return Path(self.release_dir)
        name = f"snapshot_{(self.snapshot or 'none')[:10]}"
        root = os.environ.get(RELEASE_ROOT_ENV)
        if root:
            return Path(root) / name
        if "://" not in cfg.warehouse:
            return Path(cfg.warehouse).resolve().parent / "releases" / name
        return Path(tempfile.gettempdir()) / "emerge-releases" / name

    def inputs(self, kind: str) -> Sequence[str] | None:
        files = self.wikidata_files if kind == "wikidata" else self.wikipedia_files
        return list(files) or None

    def context(self, cfg: Config, catalog: Catalog, **extra: Any):
        """The StageContext of this run's tasks."""
        from emerge_lib.pipeline import StageContext

        return StageContext(cfg, catalog, self.inputs("wikidata"), self.inputs("wikipedia"),
                            release_dir=self.release_folder(cfg), **extra)
