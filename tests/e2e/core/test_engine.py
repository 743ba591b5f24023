"""One code path from the embedded engine to a cluster: a world built on Sail's
local-cluster mode (driver and workers over RPC, as on a cluster) gives byte-identical
release files and the same tables as the local mode (one of the six builds of one release:
tests/system/core/test_engine_*.py build it on S3 and on Spark 4); two builds of different snapshots into one warehouse,
side by side, both succeed and equal the builds one after the other."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from buildkit import GATE, assert_same_release, assert_same_tables, release_files
from worlds import TINY1, TINY2

from emerge_lib.catalog import Catalog
from emerge_lib.core.config import load_config
from emerge_lib.core.engine import resolve_mode, spark_session
from emerge_lib.core.stage import StageContext
from emerge_lib.pipeline.runner import build_dataset


def build_in(world: Path, mode: str, warehouse: Path, out: Path) -> None:
    cfg = load_config(world / "config.yaml", overrides={
        **GATE, "warehouse": str(warehouse), "engine": {"mode": mode}})
    with spark_session(cfg.engine, cfg.s3) as spark:
        assert spark.conf.get("spark.sql.session.timeZone") == "UTC"
        build_dataset(StageContext(cfg, Catalog.for_config(cfg, spark), release_dir=out))


def test_engine_mode_comes_from_the_config_or_the_environment(monkeypatch) -> None:
    monkeypatch.delenv("SAIL_MODE", raising=False)
    assert resolve_mode(None) == "local"
    monkeypatch.setenv("SAIL_MODE", "local-cluster")
    assert resolve_mode(None) == "local-cluster" and resolve_mode("local") == "local"
    from emerge_lib.core.engine import EngineError

    with pytest.raises(EngineError, match="must be one of"):
        resolve_mode("kubernetes")


def test_local_cluster_mode_builds_byte_identical_release_files(tmp_path: Path, worlds) -> None:
    """The tiny world of one dump date (every planted case, every stage, the gate on) built
    end to end, ingest included, on Sail's local-cluster mode equals its build on the
    local mode (the session's, from the same ingest steps): every release file, every
    table."""
    local = worlds.built(TINY1, GATE)
    build_in(worlds.world(TINY1), "local-cluster", tmp_path / "wh-cluster",
             tmp_path / "rel-cluster")
    assert_same_release(tmp_path / "rel-cluster", local.release)
    assert_same_tables(Catalog(tmp_path / "wh-cluster"), Catalog(local.warehouse))


def _emerge(*args: str) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PYTHONHASHSEED": "0", "EMERGE__VALIDATION__ENABLED": "false"}
    return subprocess.Popen([sys.executable, "-m", "emerge_lib.cli", *args], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def test_two_builds_of_different_snapshots_into_one_warehouse_side_by_side(tmp_path: Path,
                                                                           worlds) -> None:
    world = worlds.world(TINY2)
    config = str(world / "config.yaml")
    snapshots = load_config(world / "config.yaml").snapshots.timestamps
    assert len(snapshots) == 2
    one, two = (t.strftime("%Y-%m-%dT%H:%M:%SZ") for t in snapshots)

    def build(warehouse: Path, out: Path, snapshot: str) -> subprocess.Popen[bytes]:
        return _emerge("build", "-c", config, "--warehouse", str(warehouse), "--out", str(out),
                       "--snapshot", snapshot)

    shared = tmp_path / "shared"
    side_by_side = [build(shared, tmp_path / "a", one), build(shared, tmp_path / "b", two)]
    for proc in side_by_side:
        _, err = proc.communicate(timeout=600)
        assert proc.returncode == 0, err.decode()[-3000:]
    for out, snapshot in ((tmp_path / "seq-a", one), (tmp_path / "seq-b", two)):
        proc = build(tmp_path / "sequential", out, snapshot)
        _, err = proc.communicate(timeout=600)
        assert proc.returncode == 0, err.decode()[-3000:]
    for parallel, sequential in (("a", "seq-a"), ("b", "seq-b")):
        got, want = release_files(tmp_path / parallel), release_files(tmp_path / sequential)
        # the commits' order differs, so do the Delta versions: no file records them, every
        # byte is the same (release.json and manifest.json too)
        assert sorted(got) == sorted(want) and [n for n in want if got[n] != want[n]] == []
        assert "manifest.json" in got and "release.json" in got
    catalog = Catalog(shared)
    for name in ("statement_timeline", "paragraph_timeline", "instances", "ingested_files"):
        rows = catalog.read_arrow(name).to_pylist()
        keys = [tuple(sorted((k, str(v)) for k, v in r.items() if k != "ingested_at"
                             and k != "seconds")) for r in rows]
        assert len(keys) == len(set(keys)), f"{name} holds a row twice"
        assert len(rows) == Catalog(tmp_path / "sequential").row_count(name), name
