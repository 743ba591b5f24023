"""The same build on Apache Spark 4 with Delta Lake: a standalone cluster of a master, two
workers and the Spark Connect server (kits/sparkkit.py: one for the test session, stopped
by PID at its end), reached as a deployment would, with the warehouse on local disk and on
S3 (the session's SeaweedFS).

The tiny world of one dump date (every planted case, every stage: ingest, stability,
snapshot, deltas, passages, align, select, the Great Expectations gate, the release:
kits/worlds.py's TINY1) built on Sail embedded, local disk, is the reference; six builds
give its release, every file byte for byte, and its tables row for row:

- Sail embedded in its local mode on S3, and in its local-cluster mode on local disk and
  on S3 (`emerge build`);
- Spark on local disk (`emerge build`, the extraction in the process pool), and on S3
  through `airflow dags test emerge_snapshot` (every task in one process), the extraction
  in the cluster's Python workers (``dumps.executor: spark``, mapInArrow): its timelines
  are the process pool's.

A Delta operation costs Spark about a CPU-second however small the table
(docs/performance.md, "Sail and Spark"), so a Spark build of even this world is minutes
of CPU: two, each covering several paths at once. The catalog's writes on Spark are
tested one by one in tests/stages (``on_each_engine``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from worlds import TINY1

from emerge_lib.catalog import TABLES, Catalog

T = "2024-01-01T00:00:00Z"
GATE = {"validation": {"enabled": True}}
#: columns that say when, how long or in which files, not what: the only ones allowed to
#: differ (a validation's fingerprints name the Delta data files it checked)
RUN_COLUMNS = {"ingested_at", "seconds", "validated_at", "fingerprints"}


def release_files(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def assert_same_release(got: Path, want: Path) -> None:
    a, b = release_files(got), release_files(want)
    assert any(name.endswith(".jsonl") and data for name, data in b.items())
    assert sorted(a) == sorted(b)
    assert [name for name in b if a[name] != b[name]] == []


def table_rows(catalog: Catalog, name: str) -> list[tuple]:
    """A table's rows, order-free, without the columns that record the run."""
    table = catalog.read_arrow(name)
    keep = [c for c in table.column_names if c not in RUN_COLUMNS]
    return sorted(tuple(json.dumps(r[c], default=str, sort_keys=True) for c in keep)
                   for r in table.select(keep).to_pylist())


def assert_same_tables(ours: Catalog, theirs: Catalog) -> None:
    for name in TABLES:
        assert table_rows(ours, name) == table_rows(theirs, name), name


def s3_catalog(settings: dict[str, str]) -> Catalog:
    """The warehouse of a build on S3, read through delta-rs as the catalog reads it."""
    return Catalog(settings["EMERGE__WAREHOUSE"], storage_options={
        k: v for k, v in settings.items() if k.startswith("AWS_")})


def emerge(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "emerge_lib.cli", *args],
                          env={**os.environ, "PYTHONHASHSEED": "0", **env},
                          capture_output=True, text=True, timeout=1800)


def _s3_settings(server: Any, bucket: str, root: str) -> dict[str, str]:
    key, secret = server.credentials["admin"]
    return {"EMERGE__WAREHOUSE": f"s3://{bucket}/{root}/warehouse",
            "EMERGE__DUMPS__STAGING": f"s3://{bucket}/{root}/staging",
            "EMERGE__S3__ENDPOINT_URL": server.endpoint_url,
            "EMERGE__S3__ACCESS_KEY_ID": key, "EMERGE__S3__SECRET_ACCESS_KEY": secret,
            # the staging's pyarrow file system and the Sail server read the process's
            "AWS_ACCESS_KEY_ID": key, "AWS_SECRET_ACCESS_KEY": secret,
            "AWS_ENDPOINT_URL": server.endpoint_url, "AWS_REGION": server.region,
            "AWS_ALLOW_HTTP": "true", "EMERGE__VALIDATION__ENABLED": "true"}


def _build(world: Path, out: Path, env: dict[str, str]) -> Path:
    proc = emerge("build", "-c", str(world / "config.yaml"), "--out", str(out),
                  env={"EMERGE__VALIDATION__ENABLED": "true", **env})
    assert proc.returncode == 0, proc.stderr[-4000:]
    return out


@pytest.fixture(scope="module")
def s3_warehouse(s3_server):
    s3_server.create_bucket("warehouse")
    return s3_server


@pytest.mark.spark
def test_spark_builds_the_release_and_the_tables_sail_builds(tmp_path: Path, worlds,
                                                             s3_warehouse,
                                                             spark_url: str) -> None:
    from emerge_lib.airflow.home import airflow_command, airflow_env

    sail = worlds.built(TINY1, GATE)
    world = worlds.world(TINY1)
    settings = _s3_settings(s3_warehouse, "warehouse", "spark")
    host, port = spark_url.removeprefix("sc://").split(":")
    env = airflow_env(tmp_path / "airflow", **settings, EMERGE__DUMPS__EXECUTOR="spark",
                      AIRFLOW_CONN_EMERGE_ENGINE=json.dumps(
                          {"conn_type": "generic", "host": host, "port": int(port)}))
    (tmp_path / "airflow").mkdir()
    airflow = str(airflow_command())
    migrate = subprocess.run([airflow, "db", "migrate"], env=env, capture_output=True,
                             text=True, timeout=600)
    assert migrate.returncode == 0, migrate.stderr[-2000:]
    conf = {"snapshot": T, "config": str(world / "config.yaml"),
            "release_dir": str(tmp_path / "spark"), "curate": False, "publish": False}
    proc = subprocess.run([airflow, "dags", "test", "emerge_snapshot", "2024-01-01",
                           "-c", json.dumps(conf)], env=env, capture_output=True, text=True,
                          timeout=1800)
    log = proc.stdout + proc.stderr
    assert proc.returncode == 0 and "state=success" in log, log[-4000:]
    assert "engine: spark 4." in log and "checks passed" in log
    assert_same_release(tmp_path / "spark", sail.release)
    # the cluster's extraction gave the timelines Sail's process pool gave, and so on
    assert_same_tables(s3_catalog(settings), Catalog(sail.warehouse))
    # Spark wrote protocol 1/2 tables (no deletion vectors) through s3a://
    objects = s3_warehouse.client().list_objects_v2(Bucket="warehouse", Prefix="spark/")
    assert any("/warehouse/statement_timeline/_delta_log/" in o["Key"]
               for o in objects["Contents"])


@pytest.mark.spark
def test_spark_builds_them_on_local_disk_extracting_in_the_process_pool(
        tmp_path: Path, worlds, spark_url: str) -> None:
    sail = worlds.built(TINY1, GATE)
    warehouse = tmp_path / "warehouse"
    out = _build(worlds.world(TINY1), tmp_path / "release", {
        "EMERGE__ENGINE__URL": spark_url, "EMERGE__WAREHOUSE": str(warehouse)})
    assert_same_release(out, sail.release)
    assert_same_tables(Catalog(warehouse), Catalog(sail.warehouse))
    # Spark's own layout: partition columns first (Sail stores them last)
    from deltalake import DeltaTable

    assert DeltaTable(str(warehouse / "kg_triples")).schema().to_arrow().names[0] == "snapshot"


def test_sail_builds_them_in_both_modes_on_local_disk_and_s3(tmp_path: Path, worlds,
                                                             s3_warehouse) -> None:
    sail = worlds.built(TINY1, GATE)
    world = worlds.world(TINY1)
    warehouse = tmp_path / "local-cluster" / "warehouse"
    out = _build(world, tmp_path / "local-cluster" / "release", {
        "EMERGE__ENGINE__MODE": "local-cluster", "EMERGE__WAREHOUSE": str(warehouse)})
    assert_same_release(out, sail.release)
    assert_same_tables(Catalog(warehouse), Catalog(sail.warehouse))
    for mode in ("local", "local-cluster"):
        settings = _s3_settings(s3_warehouse, "warehouse", f"sail-{mode}")
        out = _build(world, tmp_path / f"sail-{mode}", {**settings,
                                                        "EMERGE__ENGINE__MODE": mode})
        assert_same_release(out, sail.release)
        assert_same_tables(s3_catalog(settings), Catalog(sail.warehouse))
    objects = s3_warehouse.client().list_objects_v2(Bucket="warehouse", Prefix="sail-local/")
    assert any("/warehouse/instances/_delta_log/" in o["Key"] for o in objects["Contents"])
