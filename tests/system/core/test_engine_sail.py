"""Sail embedded with the warehouse and the ingest staging on S3 (the session's
SeaweedFS), in both of its modes: `emerge build` of the tiny world of one dump date
(kits/worlds.py's TINY1, every stage, the gate on) gives the release of its local-disk
build, every file byte for byte, and its tables row for row, read back through delta-rs
on S3. With test_engine_spark.py (Spark 4 on local disk and S3) and
tests/e2e/core/test_engine.py (Sail's local-cluster mode on local disk): six builds,
one release."""

from __future__ import annotations

from pathlib import Path

from buildkit import GATE, assert_same_release, assert_same_tables, build, s3_catalog, s3_settings
from worlds import TINY1

from emerge_lib.catalog import Catalog


def test_sail_builds_the_same_on_s3_in_both_modes(tmp_path: Path, worlds, s3_server) -> None:
    sail = worlds.built(TINY1, GATE)
    world = worlds.world(TINY1)
    s3_server.create_bucket("sail")
    for mode in ("local", "local-cluster"):
        settings = s3_settings(s3_server, "sail", mode)
        out = build(world, tmp_path / mode, {**settings, "EMERGE__ENGINE__MODE": mode})
        assert_same_release(out, sail.release)
        assert_same_tables(s3_catalog(settings), Catalog(sail.warehouse))
    objects = s3_server.client().list_objects_v2(Bucket="sail", Prefix="local/")
    assert any("/warehouse/instances/_delta_log/" in o["Key"] for o in objects["Contents"])
