"""The same build on Apache Spark 4 with Delta Lake: a standalone cluster of a master, two
workers and the Spark Connect server (kits/sparkkit.py: one for the test session, stopped
by PID at its end), reached as a deployment would.

The tiny world of one dump date (every planted case, every stage: ingest, stability,
snapshot, deltas, passages, align, select, the Great Expectations gate, the release:
kits/worlds.py's TINY1) built on Sail embedded, local disk, is the reference, as for the
builds on Sail's other mode and on S3 (test_engine_sail.py, tests/e2e/core/test_engine.py).
Spark builds it twice: on local disk with `emerge build`, the extraction in the process
pool, and with the warehouse and the ingest staging on S3 (the session's SeaweedFS,
s3a://) through `airflow dags test emerge_snapshot` (every task in one process), the
extraction in the cluster's Python workers (``dumps.executor: spark``, mapInArrow). Both
give the reference's release, every file byte for byte, and its tables row for row: the
cluster's extraction gives the process pool's timelines.

A Delta operation costs Spark about a CPU-second however small the table
(docs/performance.md, "Sail and Spark"), so a Spark build of even this world is minutes
of CPU. The catalog's writes on Spark are tested one by one in tests/engine/catalog
(``on_each_engine``).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from buildkit import (
    GATE,
    assert_same_release,
    assert_same_tables,
    build,
    s3_catalog,
    s3_settings,
)
from worlds import TINY1

from emerge_lib.catalog import Catalog

pytestmark = pytest.mark.spark

T = "2024-01-01T00:00:00Z"


def test_spark_builds_on_s3_through_airflow_what_sail_builds(tmp_path: Path, worlds,
                                                             s3_server, spark_url: str) -> None:
    from emerge_lib.airflow.home import airflow_command, airflow_env

    sail = worlds.built(TINY1, GATE)
    world = worlds.world(TINY1)
    s3_server.create_bucket("spark")
    settings = s3_settings(s3_server, "spark", "airflow")
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
    objects = s3_server.client().list_objects_v2(Bucket="spark", Prefix="airflow/")
    assert any("/warehouse/statement_timeline/_delta_log/" in o["Key"]
               for o in objects["Contents"])


def test_spark_builds_on_local_disk_what_sail_builds(tmp_path: Path, worlds,
                                                     spark_url: str) -> None:
    from deltalake import DeltaTable

    sail = worlds.built(TINY1, GATE)
    warehouse = tmp_path / "warehouse"
    out = build(worlds.world(TINY1), tmp_path / "release", {
        "EMERGE__ENGINE__URL": spark_url, "EMERGE__WAREHOUSE": str(warehouse)})
    assert_same_release(out, sail.release)
    assert_same_tables(Catalog(warehouse), Catalog(sail.warehouse))
    # Spark's own layout (partition columns first; Sail stores them last), no deletion
    # vectors: protocol 1/2, which delta-rs reads
    kg = DeltaTable(str(warehouse / "kg_triples"))
    assert kg.schema().to_arrow().names[0] == "snapshot"
    assert (kg.protocol().min_reader_version, kg.protocol().min_writer_version) == (1, 2)
