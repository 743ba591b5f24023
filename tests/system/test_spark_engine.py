"""The same build on Apache Spark 4 with Delta Lake: a standalone cluster of a master, two
workers and the Spark Connect server (kits/sparkkit.py: one for the test session, stopped
by PID at its end), reached through ``engine.url`` as a user would.

- The tiny world of one dump date (every planted case, every stage: ingest, stability,
  snapshot, deltas, passages, align, select, the Great Expectations gate, the release:
  kits/worlds.py's TINY1) built end to end on
  Spark, its extraction in the cluster's Python workers (``dumps.executor: spark``, through
  mapInArrow), gives every release file byte for byte and every table row for row as the
  embedded Sail build with the process pool.
- The warehouse and the ingest staging on S3 (the session's SeaweedFS): Sail embedded,
  Sail's local-cluster mode and Spark (s3a://, through `airflow dags test` with the
  ``emerge_engine`` connection naming the Spark Connect server) give the local-disk
  release, byte for byte.

Each Spark build is a few minutes on a busy 2-core machine (a Delta operation costs Spark
about a CPU-second however small the table: docs/performance.md), so the S3 build and the
Airflow path share one build, and the gate runs on the local-disk one only.
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
from emerge_lib.core.engine import EngineTraits, engine_traits

pytestmark = pytest.mark.spark

T = "2024-01-01T00:00:00Z"
GATE = {"validation": {"enabled": True}}
NO_GATE = {"validation": {"enabled": False}}
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


def emerge(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "emerge_lib.cli", *args],
                          env={**os.environ, "PYTHONHASHSEED": "0", **env},
                          capture_output=True, text=True, timeout=1800)


def test_the_engine_says_what_it_is(spark, spark4) -> None:
    """Sail and Spark both report Spark's API version; only Spark's version() begins with
    it, so the traits (what the catalog switches on) come from the engine itself."""
    assert engine_traits(spark4) == EngineTraits("spark", spark4.version)
    sail = engine_traits(spark)
    assert sail.name == "sail" and sail.version != spark.version
    assert engine_traits(spark4).path("s3://b/w/t") == "s3a://b/w/t"
    assert sail.path("s3://b/w/t") == "s3://b/w/t"


def test_spark_builds_the_release_and_the_tables_sail_builds(tmp_path: Path, worlds,
                                                             spark_url: str) -> None:
    sail = worlds.built(TINY1, GATE)
    world = worlds.world(TINY1)
    proc = emerge("build", "-c", str(world / "config.yaml"), "--warehouse",
                  str(tmp_path / "warehouse"), "--out", str(tmp_path / "release"),
                  env={"EMERGE__ENGINE__URL": spark_url, "EMERGE__DUMPS__EXECUTOR": "spark",
                       "EMERGE__VALIDATION__ENABLED": "true"})
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert "engine: spark 4." in proc.stderr
    assert "stage validate" in proc.stderr and "checks passed" in proc.stderr
    assert_same_release(tmp_path / "release", sail.release)
    ours, theirs = Catalog(tmp_path / "warehouse"), Catalog(sail.warehouse)
    for name in TABLES:
        assert table_rows(ours, name) == table_rows(theirs, name), name
    # the extraction ran in the cluster's Python workers, and Spark wrote protocol 1/2
    # tables delta-rs reads: no deletion vectors
    from deltalake import DeltaTable

    protocol = DeltaTable(str(tmp_path / "warehouse" / "statement_timeline")).protocol()
    assert (protocol.min_reader_version, protocol.min_writer_version) == (1, 2)


def _s3_settings(server: Any, bucket: str, root: str) -> dict[str, str]:
    key, secret = server.credentials["admin"]
    return {"EMERGE__WAREHOUSE": f"s3://{bucket}/{root}/warehouse",
            "EMERGE__DUMPS__STAGING": f"s3://{bucket}/{root}/staging",
            "EMERGE__S3__ENDPOINT_URL": server.endpoint_url,
            "EMERGE__S3__ACCESS_KEY_ID": key, "EMERGE__S3__SECRET_ACCESS_KEY": secret,
            # the staging's pyarrow file system and the Sail server read the process's
            "AWS_ACCESS_KEY_ID": key, "AWS_SECRET_ACCESS_KEY": secret,
            "AWS_ENDPOINT_URL": server.endpoint_url, "AWS_REGION": server.region,
            "AWS_ALLOW_HTTP": "true", "EMERGE__VALIDATION__ENABLED": "false"}


def test_a_warehouse_on_s3_gives_the_same_release_on_sail_and_on_spark(
        tmp_path: Path, worlds, s3_server, spark_url: str) -> None:
    from emerge_lib.airflow.home import airflow_command, airflow_env

    want = worlds.built(TINY1, NO_GATE).release
    world = worlds.world(TINY1)
    s3_server.create_bucket("warehouse")
    config = str(world / "config.yaml")
    for mode in ("local", "local-cluster"):  # Sail embedded, in both of its modes
        proc = emerge("build", "-c", config, "--out", str(tmp_path / f"sail-{mode}"),
                      env={**_s3_settings(s3_server, "warehouse", f"sail-{mode}"),
                           "EMERGE__ENGINE__MODE": mode})
        assert proc.returncode == 0, proc.stderr[-4000:]
        assert_same_release(tmp_path / f"sail-{mode}", want)
    objects = s3_server.client().list_objects_v2(Bucket="warehouse", Prefix="sail-local/")
    assert any("/warehouse/instances/_delta_log/" in o["Key"] for o in objects["Contents"])

    # Spark (s3a://) through the Airflow snapshot DAG, every task in one process
    host, port = spark_url.removeprefix("sc://").split(":")
    env = airflow_env(tmp_path / "airflow", **_s3_settings(s3_server, "warehouse", "spark"),
                      AIRFLOW_CONN_EMERGE_ENGINE=json.dumps(
                          {"conn_type": "generic", "host": host, "port": int(port)}))
    (tmp_path / "airflow").mkdir()
    airflow = str(airflow_command())
    migrate = subprocess.run([airflow, "db", "migrate"], env=env, capture_output=True,
                             text=True, timeout=600)
    assert migrate.returncode == 0, migrate.stderr[-2000:]
    conf = {"snapshot": T, "config": config, "release_dir": str(tmp_path / "spark"),
            "curate": False, "publish": False}
    proc = subprocess.run([airflow, "dags", "test", "emerge_snapshot", "2024-01-01",
                           "-c", json.dumps(conf)], env=env, capture_output=True, text=True,
                          timeout=1800)
    log = proc.stdout + proc.stderr
    assert proc.returncode == 0 and "state=success" in log, log[-4000:]
    assert "engine: spark 4." in log
    assert_same_release(tmp_path / "spark", want)
    objects = s3_server.client().list_objects_v2(Bucket="warehouse", Prefix="spark/")
    assert any("/warehouse/instances/_delta_log/" in o["Key"] for o in objects["Contents"])

