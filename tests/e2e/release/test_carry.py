"""The carry-over on a release of a generated world (seed 1, the test draw of
tests/e2e/release/test_splits.py, so the evaluation set and the splits, which cross
snapshots, are there; the release suites on): the first snapshot released, then both;
the second release carries the first snapshot's files and is, byte for byte, both
snapshots written whole."""

from __future__ import annotations

from pathlib import Path

import pytest
from worlds import SEED1

from emerge_lib.core.stage import StageContext, StageResult
from emerge_lib.formats.layout import snapshot_dir_name
from emerge_lib.pipeline.runner import run_stage
from emerge_lib.release.carry import sidecar_of


@pytest.fixture(scope="module")
def built(worlds, tmp_path_factory):
    variant = worlds.built(SEED1, {"selection": {"evaluation_per_delta": 4}})
    return worlds.copy(variant, tmp_path_factory.mktemp("carry"))


def files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes()
            for p in sorted(root.rglob("*")) if p.is_file()}


def test_the_second_snapshot_added_carries_the_first(built, tmp_path: Path, spark) -> None:
    catalog = built.catalog(spark)
    keys = [p.key for p in built.config().plans()]
    assert len(keys) == 2

    def release(out: Path, snapshots: list[str], carry: bool) -> StageResult:
        cfg = built.config(snapshots={"timestamps": snapshots},
                           release={"carry_unchanged": carry}, validation={"enabled": True})
        return run_stage(StageContext(cfg, catalog, release_dir=out), "release")

    out, whole = tmp_path / "release", tmp_path / "whole"
    release(out, keys[:1], True)
    first = snapshot_dir_name(keys[0])
    mine = {p.relative_to(out).as_posix(): p.stat().st_ino for p in out.rglob("*")
            if p.is_file() and first in p.as_posix() and "/splits/" not in p.as_posix()}
    assert any(rel.startswith("evaluation_set/") for rel in mine)  # the draw is carried too
    added = release(out, keys, True)
    release(whole, keys, False)
    a, b = files(out), files(whole)
    assert sorted(a) == sorted(b)
    assert [rel for rel in b if a[rel] != b[rel]] == []
    assert sidecar_of(out).read_bytes() == sidecar_of(whole).read_bytes()
    assert added.metrics["carried_files"] == len(mine)
    assert {rel: (out / rel).stat().st_ino for rel in mine} == mine  # linked, not written
