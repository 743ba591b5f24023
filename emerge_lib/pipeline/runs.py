"""One orchestrated snapshot run: what a run of the Airflow snapshot DAG asks for (its
params), turned into the configuration and the stage context every task of the run uses.

The library knows nothing of Airflow: the DAG's glue resolves the snapshot (params, an
Asset event, or the logical date of a scheduled or backfill run), adds what connections
say (engine, LLM workers, S3), and hands the rest here. Precedence, lowest first: the
YAML file (``config``, else ``$EMERGE_CONFIG``), ``EMERGE__*`` variables, connections,
then the run's own params.
"""

from __future__ import annotations

import logging
import os
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from emerge_lib.core.config import Config, ConfigError, deep_merge, load_config
from emerge_lib.core.schedule import parse_utc

CONFIG_ENV = "EMERGE_CONFIG"  # the YAML a deployment runs with, unless a run names one
RELEASE_ROOT_ENV = "EMERGE_RELEASE_ROOT"  # where runs write releases without release_dir
log = logging.getLogger(__name__)


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


def param(default: Any = None, *, dags: tuple[str, ...] = ("snapshot", "ingest"),
          description: str | dict[str, str], **schema: Any) -> Any:
    """A run parameter: its default, the JSON schema of its value, its description (one
    per DAG where the two read it differently) and the DAGs whose runs take it. The
    Airflow DAGs' params are generated from these (``emerge_lib.airflow.params``), so a
    parameter is declared here once."""
    return field(default=default,
                 metadata={"dags": dags, "description": description, "schema": schema})


_NULL_STRING = ["null", "string"]
# optional in the trigger form (Airflow marks a param required unless its type allows null)
_FILES: dict[str, Any] = {"type": ["null", "array"], "items": {"type": "string"}}


@dataclass(frozen=True)
class SnapshotRun:
    """The params of one snapshot run (None: the configuration's value), each declared
    with its schema and description for the DAGs' trigger forms."""

    snapshot: str | None = param(
        dags=("snapshot",), type=_NULL_STRING,
        description="snapshot t, ISO 8601 (2024-04-01T00:00:00Z); empty: the logical date of "
                    "a scheduled or backfill run")  # None: an ingest run
    windows: int | None = param(
        dags=("snapshot",), type=["null", "integer"], minimum=1, maximum=52,
        description="windows per snapshot, each window_days long; empty: the "
                    "configuration's (5)")
    window_days: float | None = param(
        dags=("snapshot",), type=["null", "number"], exclusiveMinimum=0, maximum=366,
        description="window length in days; empty: the configuration's (7)")
    wikidata_files: tuple[str, ...] = param(
        (), **_FILES, description={
            "snapshot": "Wikidata history files (paths or URLs); empty: what the warehouse "
                        "holds (the ingest DAG's)",
            "ingest": "Wikidata history files (paths or URLs) instead of the mirror's"})
    wikipedia_files: tuple[str, ...] = param(
        (), **_FILES, description={
            "snapshot": "English Wikipedia history files (paths or URLs); empty: what the "
                        "warehouse holds",
            "ingest": "English Wikipedia history files instead of the mirror's"})
    mirror: str | None = param(type=_NULL_STRING, pattern=r"^(https?|file)://",
                               description="dump mirror; empty: the configuration's")
    dump_date: str | None = param(
        type=_NULL_STRING, pattern=r"^\d{8}$", description={
            "snapshot": "ingest this dump date (YYYYMMDD) of the mirror first, waiting until "
                        "it is done",
            "ingest": "the dump date (YYYYMMDD); empty: the logical date's day (scheduled "
                      "runs) or the configured dump dates"})
    config: str | None = param(
        type=_NULL_STRING,
        description="YAML configuration file; empty: $EMERGE_CONFIG, else defaults")
    # three states: the form's select (Airflow draws a boolean as a two-state toggle; the
    # "string" in the type only makes it a select: the values are null, true and false)
    curate: bool | None = param(
        dags=("snapshot",), type=["null", "string", "boolean"], enum=[None, True, False],
        values_display={"null": "the configuration's (curation.enabled)",
                        "true": "on: curate with the configured LLM workers",
                        "false": "off"},
        description="LLM curation on the GPU workers; empty: the configuration's")
    publish: bool = param(False, dags=("snapshot",), type=["null", "boolean"],
                          description="upload the release to S3 (empty: no)")
    release_to: str | None = param(
        dags=("snapshot",), type=_NULL_STRING, pattern=r"^s3://",
        description="s3://bucket/prefix; empty: the configuration's publish.to")
    release_dir: str | None = param(
        dags=("snapshot",), type=_NULL_STRING,
        description="local release folder; empty: $EMERGE_RELEASE_ROOT/snapshot_YYYY-MM-DD")
    # an ingest run: the snapshots whose Wikipedia ranges to keep (empty: the configured
    # ones, plus the newest quarter start the dump of ``dump_date`` covers)
    snapshots: tuple[str, ...] = param(
        (), dags=("ingest",), **_FILES,
        description="snapshot timestamps whose Wikipedia ranges to keep; empty: the "
                    "configured ones and the newest quarter the dump covers")
    overrides: Mapping[str, Any] = field(default_factory=dict)  # from connections

    @classmethod
    def params_of(cls, dag: str) -> dict[str, dict[str, Any]]:
        """The run parameters a DAG's runs take: name → {default, description, schema}."""
        out = {}
        for f in fields(cls):
            if dag not in f.metadata.get("dags", ()):
                continue
            text = f.metadata["description"]
            default = list(f.default) if isinstance(f.default, tuple) else f.default
            out[f.name] = {"default": default, "schema": dict(f.metadata["schema"]),
                           "description": text[dag] if isinstance(text, dict) else text}
        return out

    @classmethod
    def from_params(cls, params: Mapping[str, Any], snapshot: Any,
                    overrides: Mapping[str, Any] | None = None) -> SnapshotRun:
        """From a params mapping (unknown keys ignored); the snapshot as an ISO timestamp."""
        values: dict[str, Any] = {}
        if "weeks" in params and "windows" not in params:  # its name before it said what it counts
            log.warning("params.weeks is deprecated: it is params.windows (windows per "
                        "snapshot, each window_days long)")
            params = {**params, "windows": params["weeks"]}
        for f in fields(cls):
            if f.name in ("snapshot", "overrides") or f.name not in params:
                continue
            value = params[f.name]
            if isinstance(f.default, tuple):
                value = tuple(str(v) for v in value or ())
                if f.name == "snapshots":
                    value = tuple(_iso(v) for v in value)
            elif f.name == "publish":
                value = bool(value)
            values[f.name] = value
        return cls(snapshot=None if snapshot is None else _iso(snapshot),
                   overrides=dict(overrides or {}), **values)

    def config_path(self) -> str | None:
        return self.config or os.environ.get(CONFIG_ENV) or None

    def settings(self) -> Config:
        """The run's configuration: the file, the environment, connections, then params.
        The file is read once: what the params leave to it (the wikis a dump date is
        read from, the configured snapshots, where to publish) stays its."""
        snapshots: dict[str, Any] = {}
        if self.snapshot is not None:
            snapshots["timestamps"] = [self.snapshot]
        elif self.snapshots:
            snapshots["timestamps"] = list(self.snapshots)
        if self.windows is not None:
            snapshots["windows"] = self.windows
        if self.window_days is not None:
            snapshots["window_days"] = self.window_days
        params: dict[str, Any] = {"snapshots": snapshots}
        dumps: dict[str, Any] = {}
        if self.mirror:
            dumps["mirror"] = self.mirror
        if self.dump_date:
            dumps |= {kind: {"dates": [self.dump_date]} for kind in ("wikidata", "wikipedia")}
        if dumps:
            params["dumps"] = dumps
        if self.curate is not None:
            params["curation"] = {"enabled": self.curate}
        # publish.to is where this run publishes: the param's, else the configuration's,
        # and nowhere at all unless the run asks to publish
        if not self.publish or self.release_to:
            params["publish"] = {"to": self.release_to if self.publish else None}
        cfg = load_config(self.config_path(),
                          overrides=deep_merge(dict(self.overrides), params))
        if self.snapshot is None and not self.snapshots and self.dump_date:
            cfg = self._with_covered_quarter(cfg)
        return cfg

    def _with_covered_quarter(self, cfg: Config) -> Config:
        """An ingest run of a dump date keeps the configured snapshots' ranges and the
        newest quarter the dump covers (with the run's windows)."""
        from emerge_lib.core.config import SnapshotSettings

        s = cfg.snapshots
        timestamps = [_iso(t) for t in s.timestamps]
        newest = covered_quarter(str(self.dump_date), s.windows, s.window_days)
        if newest is None or newest in timestamps:
            return cfg
        return cfg.model_copy(update={"snapshots": SnapshotSettings(
            timestamps=[*timestamps, newest], windows=s.windows, window_days=s.window_days)})

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
