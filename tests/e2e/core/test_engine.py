"""One code path from the embedded engine to a cluster: a world built on Sail's
local-cluster mode (driver and workers over RPC, as on a cluster) gives byte-identical
release files to the local mode; two builds of different snapshots into one warehouse,
side by side, both succeed and equal the builds one after the other."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from worlds import TINY, TINY2

from emerge_lib.catalog import Catalog
from emerge_lib.core.config import load_config
from emerge_lib.core.engine import resolve_mode, spark_session
from emerge_lib.core.stage import StageContext
from emerge_lib.pipeline.runner import build_dataset

#: the Great Expectations gate is not what these tests are about (its own tests run it)
NO_GATE = {"validation": {"enabled": False}}


def release_files(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def build_in(world: Path, mode: str, warehouse: Path, out: Path) -> dict[str, bytes]:
    cfg = load_config(world / "config.yaml", overrides={
        **NO_GATE, "warehouse": str(warehouse), "engine": {"mode": mode}})
    with spark_session(cfg.engine, cfg.s3) as spark:
        assert spark.conf.get("spark.sql.session.timeZone") == "UTC"
        build_dataset(StageContext(cfg, Catalog.for_config(cfg, spark), release_dir=out))
    return release_files(out)


def test_engine_mode_comes_from_the_config_or_the_environment(monkeypatch) -> None:
    monkeypatch.delenv("SAIL_MODE", raising=False)
    assert resolve_mode(None) == "local"
    monkeypatch.setenv("SAIL_MODE", "local-cluster")
    assert resolve_mode(None) == "local-cluster" and resolve_mode("local") == "local"
    from emerge_lib.core.engine import EngineError

    with pytest.raises(EngineError, match="must be one of"):
        resolve_mode("kubernetes")


def test_local_cluster_mode_builds_byte_identical_release_files(tmp_path: Path, worlds) -> None:
    """The tiny world (every planted case, one snapshot) built end to end, ingest
    included, on Sail's local-cluster mode equals its build on the local mode (the
    session's, from the same ingest steps)."""
    local = release_files(worlds.built(TINY, NO_GATE).release)
    cluster = build_in(worlds.world(TINY), "local-cluster", tmp_path / "wh-cluster",
                       tmp_path / "rel-cluster")
    assert any(name.endswith(".jsonl") and data for name, data in local.items())
    assert sorted(cluster) == sorted(local)
    differ = [name for name in local if cluster[name] != local[name]]
    assert differ == []


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
