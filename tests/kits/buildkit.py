"""Builds compared: a release's files byte for byte and a warehouse's tables row for row,
`emerge build` in a process of its own, and the settings of a warehouse and ingest
staging on the session's S3 server (SeaweedFS), for the builds of one world on each
engine, mode and storage (tests/e2e/core/test_engine.py, tests/system/core/)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from emerge_lib.catalog import TABLES, Catalog

#: the Great Expectations gate on: the release then holds its verdict
GATE = {"validation": {"enabled": True}}
#: columns that say when, how long or in which files, not what: the only ones allowed to
#: differ (a validation's fingerprints are its engine's digests of the rows checked: Sail's
#: and Spark's may differ for the same rows)
RUN_COLUMNS = {"ingested_at", "seconds", "validated_at", "fingerprints"}


def release_files(folder: Path) -> dict[str, bytes]:
    """A release's files by path, as they are: a release holds nothing of the clock (when
    the tables' checks ran is the warehouse's record, as in RUN_COLUMNS), so two builds of
    one world, into two warehouses, at two times, must give the same bytes."""
    return {p.relative_to(folder).as_posix(): p.read_bytes()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def assert_same_release(got: Path, want: Path) -> None:
    """Every file of ``want`` (the manifest's and the rest) is in ``got``, byte for byte,
    and no other."""
    a, b = release_files(got), release_files(want)
    assert any(name.endswith(".jsonl") and data for name, data in b.items())
    assert sorted(a) == sorted(b), sorted(set(a) ^ set(b))
    differ = [name for name in b if a[name] != b[name]]
    assert differ == [], differ


def table_rows(catalog: Catalog, name: str) -> list[tuple[str, ...]]:
    """A table's rows, order-free, without the columns that record the run."""
    table = catalog.read_arrow(name)
    keep = [c for c in table.column_names if c not in RUN_COLUMNS]
    return sorted(tuple(json.dumps(r[c], default=str, sort_keys=True) for c in keep)
                  for r in table.select(keep).to_pylist())


def assert_same_tables(ours: Catalog, theirs: Catalog) -> None:
    """Every table of the catalog, row for row (read through delta-rs)."""
    for name in TABLES:
        assert table_rows(ours, name) == table_rows(theirs, name), name


def emerge(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "emerge_lib.cli", *args],
                          env={**os.environ, "PYTHONHASHSEED": "0", **env},
                          capture_output=True, text=True, timeout=1800)


def build(world: Path, out: Path, env: dict[str, str]) -> Path:
    """`emerge build` of the world (its ingest included) into ``out``, the gate on."""
    proc = emerge("build", "-c", str(world / "config.yaml"), "--out", str(out),
                  env={"EMERGE__VALIDATION__ENABLED": "true", **env})
    assert proc.returncode == 0, proc.stderr[-4000:]
    return out


def s3_settings(server: Any, bucket: str, root: str) -> dict[str, str]:
    """The environment of a build whose warehouse and staging are under s3://bucket/root."""
    key, secret = server.credentials["admin"]
    return {"EMERGE__WAREHOUSE": f"s3://{bucket}/{root}/warehouse",
            "EMERGE__DUMPS__STAGING": f"s3://{bucket}/{root}/staging",
            "EMERGE__S3__ENDPOINT_URL": server.endpoint_url,
            "EMERGE__S3__ACCESS_KEY_ID": key, "EMERGE__S3__SECRET_ACCESS_KEY": secret,
            # the staging's pyarrow file system and the Sail server read the process's
            "AWS_ACCESS_KEY_ID": key, "AWS_SECRET_ACCESS_KEY": secret,
            "AWS_ENDPOINT_URL": server.endpoint_url, "AWS_REGION": server.region,
            "AWS_ALLOW_HTTP": "true", "EMERGE__VALIDATION__ENABLED": "true"}


def s3_catalog(settings: dict[str, str]) -> Catalog:
    """The warehouse of a build on S3, read through delta-rs as the catalog reads it."""
    return Catalog(settings["EMERGE__WAREHOUSE"], storage_options={
        k: v for k, v in settings.items() if k.startswith("AWS_")})
