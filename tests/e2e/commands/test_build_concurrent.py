"""Concurrency as a contract: `emerge build` runs side by side give the tables and the
release of one run, or refuse cleanly. Each case runs real `emerge build` processes on the
TINY world (one snapshot) with the gate on, and compares against one build alone:

- two builds of one snapshot into one fresh warehouse: the second waits for the first's
  snapshot lock; both exit 0, no table holds a row twice, both releases equal one run's;
- two builds into the same ``--out`` (two warehouses): the second waits for the lock on
  the folder, then writes its own release whole; it equals one run's and its manifest;
- a build beside a rebuild (one with the dumps, one from the warehouse alone): both exit
  0 with the release of one run;
- an Airflow retry beside its stuck try: every snapshot stage run twice at once through
  the one door (``run_stage``, what a task calls), then the release: instances as one run,
  the release publishable (tests/system holds the DAGs themselves).

Before: duplicated rows (a first write that was an append in both builds), a mixed release
folder exiting 0, and a release "not publishable" said in a WARNING line with rc 0.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from worlds import TINY

from emerge_lib.catalog import Catalog
from emerge_lib.formats.manifest import read_manifest, verify_release

SNAPSHOT = "2024-01-01T00:00:00Z"
#: tables every case checks for a row held twice (the catalog's first writes raced)
TABLES = ("kg_triples", "entities", "relations", "delta_triples", "passages", "instances",
          "selection", "validation_results", "statement_timeline", "ingested_files")
#: a rebuild from the warehouse alone (no dump dates to ingest)
FROM_WAREHOUSE = {"EMERGE__DUMPS__WIKIDATA__DATES": "[]", "EMERGE__DUMPS__WIKIPEDIA__DATES": "[]"}


def _start(world: Path, warehouse: Path, out: Path, **env: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "emerge_lib.cli", "build", "-c", str(world / "config.yaml"),
         "--warehouse", str(warehouse), "--out", str(out), "--snapshot", SNAPSHOT],
        env={**os.environ, "PYTHONHASHSEED": "0", **env},
        stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def _finish(*procs: subprocess.Popen[bytes]) -> list[str]:
    errs = []
    for proc in procs:
        _, err = proc.communicate(timeout=900)
        assert proc.returncode == 0, err.decode()[-3000:]
        errs.append(err.decode())
    return errs


def _files(folder: Path) -> dict[str, bytes]:
    from buildkit import release_files  # the validation run time is a fact of the run

    return release_files(folder)


def _same_release(got: Path, want: dict[str, bytes]) -> None:
    files = _files(got)
    assert sorted(files) == sorted(want)
    assert [n for n in want if files[n] != want[n]] == []
    manifest = read_manifest(got)
    assert manifest["validation"]["success"] is True
    assert verify_release(got, [f["path"] for f in manifest["files"]]).ok
    assert not [p for p in got.parent.iterdir() if ".writing" in p.name]


def _no_row_twice(warehouse: Path, alone: Path) -> None:
    catalog, one = Catalog(warehouse), Catalog(alone)
    for name in TABLES:
        rows = catalog.read_arrow(name).to_pylist()
        keys = [tuple(sorted((k, str(v)) for k, v in r.items()
                             if k not in ("ingested_at", "seconds", "validated_at")))
                for r in rows]
        assert len(keys) == len(set(keys)), f"{name} holds a row twice"
        assert len(rows) == one.row_count(name), name


@pytest.fixture(scope="module")
def alone(worlds) -> tuple[Path, Path, dict[str, bytes]]:
    """One build alone, the gate on: (the world, its warehouse, its release files)."""
    built = worlds.built(TINY, {"validation": {"enabled": True}})
    return built.world, built.warehouse, _files(built.release)


def test_two_builds_of_one_snapshot_into_a_fresh_warehouse(alone, tmp_path: Path) -> None:
    world, single, release = alone
    errs = _finish(_start(world, tmp_path / "wh", tmp_path / "a"),
                   _start(world, tmp_path / "wh", tmp_path / "b"))
    assert any("is building it; waiting" in e for e in errs)  # the second one waited
    _no_row_twice(tmp_path / "wh", single)
    for out in ("a", "b"):
        _same_release(tmp_path / out, release)


def test_two_builds_into_the_same_out(alone, tmp_path: Path) -> None:
    import shutil

    world, single, release = alone
    for warehouse in ("wh1", "wh2"):
        shutil.copytree(single, tmp_path / warehouse)
    errs = _finish(_start(world, tmp_path / "wh1", tmp_path / "rel", **FROM_WAREHOUSE),
                   _start(world, tmp_path / "wh2", tmp_path / "rel", **FROM_WAREHOUSE))
    assert any("is writing it; waiting" in e for e in errs)  # one waited for the other
    _same_release(tmp_path / "rel", release)
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        ".rel.carry.json", ".rel.lock", "rel", "wh1", "wh2"]


def test_a_build_beside_a_rebuild(alone, tmp_path: Path) -> None:
    import shutil

    world, single, release = alone
    shutil.copytree(single, tmp_path / "wh")
    _finish(_start(world, tmp_path / "wh", tmp_path / "build"),
            _start(world, tmp_path / "wh", tmp_path / "rebuild", **FROM_WAREHOUSE))
    _no_row_twice(tmp_path / "wh", single)
    for out in ("build", "rebuild"):
        _same_release(tmp_path / out, release)


def test_a_retry_beside_its_stuck_try(alone, tmp_path: Path, spark) -> None:
    """What Airflow does when it retries a task whose first try is still running: the
    same stage of the same snapshot twice at once through the one door."""
    import shutil

    from emerge_lib.core.config import load_config
    from emerge_lib.core.stage import StageContext
    from emerge_lib.pipeline.registry import STAGES
    from emerge_lib.pipeline.runner import run_stage

    world, single, release = alone
    shutil.copytree(single, tmp_path / "wh")
    cfg = load_config(world / "config.yaml", overrides={
        "warehouse": str(tmp_path / "wh"), "snapshots": {"timestamps": [SNAPSHOT]},
        "dumps": {"wikidata": {"dates": []}, "wikipedia": {"dates": []}}})
    plan = cfg.plans()[0]
    ctx = StageContext(cfg, Catalog.for_config(cfg, spark), release_dir=tmp_path / "rel")
    for st in STAGES.values():
        if st.scope != "snapshot" or not st.in_build or not st.applies(ctx):
            continue
        failures: list[BaseException] = []

        def attempt(name: str = st.name, failures: list[BaseException] = failures) -> None:
            try:
                run_stage(ctx, name, plan)
            except BaseException as exc:  # noqa: BLE001 - the test reports it below
                failures.append(exc)

        tries = [threading.Thread(target=attempt) for _ in range(2)]
        for t in tries:
            t.start()
        for t in tries:
            t.join(600)
        assert failures == [], st.name
    run_stage(ctx, "release")
    _no_row_twice(tmp_path / "wh", single)
    _same_release(tmp_path / "rel", release)
