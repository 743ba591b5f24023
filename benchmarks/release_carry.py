"""The release of N + 1 snapshots with the carry-over (release/carry.py) against the same
release written whole (issue 44, "Incremental downstream").

A bench world of several snapshots (``emerge sample`` with the bench passages, one dump
date covering them all: history dumps are cumulative) is built once without a release
(``build_dataset``: ingest, stability, every snapshot's stages, validate); then, on that
warehouse, in this process (the embedded Sail engine), each snapshot's fingerprint timed
(its rows digested, ``Catalog.partition_digest``, nothing cached), then the release stage:

1. the first N snapshots into folder X (the release before the quarter);
2. all N + 1 into X, carrying (``release.carry_unchanged: true``, the default);
3. all N + 1 into a fresh folder Y with the carry-over off (the full rewrite);
4. all N + 1 into Y again with the carry-over off (the full rewrite over a release);
5. all N + 1 into X again, nothing changed;

then X and Y are compared file for file (they must be the same bytes). Each run's wall
and CPU seconds (this process: the engine runs in it) and what it carried are printed.

    .venv/bin/python benchmarks/release_carry.py [--world DIR] [--scale 0.25]
        [--snapshots 4] [--warehouse DIR (kept; an existing one is not built again)]
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from _harness import cpu_seconds, ensure_world

from emerge_lib.catalog import Catalog
from emerge_lib.core.config import load_config
from emerge_lib.core.engine import spark_session
from emerge_lib.core.stage import StageContext
from emerge_lib.pipeline.runner import build_dataset, run_stage

FULL = {"items": 100_000, "articles": 50_000, "bench_passages": 130_000}
#: quarterly snapshots, the last one's windows (5 × 7 days) + 168 h before the dump date
SNAPSHOTS = ("2023-04-01T00:00:00Z", "2023-07-01T00:00:00Z", "2023-10-01T00:00:00Z",
             "2024-01-01T00:00:00Z", "2024-04-01T00:00:00Z")
DUMP_DATE = "20240520"


def world_command(snapshots: int, scale: float) -> list[str]:
    n = {k: max(1000, round(v * scale)) for k, v in FULL.items()}
    return ["--items", str(n["items"]), "--articles", str(n["articles"]), "--revisions", "2",
            "--bench-statements", "9", "--bench-passages", str(n["bench_passages"]),
            *(a for t in SNAPSHOTS[-snapshots:] for a in ("--snapshot", t)),
            "--dump-date", DUMP_DATE, "--compress-level", "1", "--jobs", "2", "--quiet"]


def files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes()
            for p in sorted(root.rglob("*")) if p.is_file()}


def fingerprint_costs(warehouse: Path, spark: Any, keys: list[str]) -> None:
    """What a snapshot's fingerprint costs the release: its rows of the tables its files
    read, digested on the engine (``Catalog.partition_digest``), each snapshot with a
    fresh catalog (nothing cached), beside the names of their Delta files (what the
    fingerprint was before)."""
    from emerge_lib.release.carry import SNAPSHOT_READS

    for key in keys:
        catalog = Catalog(str(warehouse), spark)
        versions = {name: catalog.version(name) for name in SNAPSHOT_READS}
        cpu, started = cpu_seconds(), time.monotonic()
        names = [catalog._delta(n, v).file_uris(file_pruning_predicate=[("snapshot", "=", key)])
                 for n, v in versions.items() if v is not None]
        listed = time.monotonic() - started
        for name, version in versions.items():
            catalog.partition_digest(name, version, key)
        rows = sum(catalog.read_arrow(n, filters=[("snapshot", "=", key)], columns=["snapshot"],
                                      version=v).num_rows for n, v in versions.items()
                   if v is not None)
        print(f"0. fingerprint of {key}'s rows ({len(versions)} tables, {rows:,} rows, "
              f"{sum(map(len, names))} files): {time.monotonic() - started:.2f} s wall "
              f"(its files' names alone: {listed:.2f} s), CPU {cpu_seconds() - cpu:.2f} s "
              "(this process; the engine's threads are in it)", flush=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--world", type=Path, default=Path("/tmp/emerge-carry-world"))
    ap.add_argument("--scale", type=float, default=0.25)
    ap.add_argument("--snapshots", type=int, default=4, choices=range(2, len(SNAPSHOTS) + 1))
    ap.add_argument("--warehouse", type=Path, default=None)
    args = ap.parse_args()
    ensure_world(args.world, world_command(args.snapshots, args.scale))
    warehouse = args.warehouse or Path(tempfile.mkdtemp(prefix="emerge-carry-wh-"))
    keys = list(SNAPSHOTS[-args.snapshots:])
    x, y = warehouse.with_name(warehouse.name + "-X"), warehouse.with_name(warehouse.name + "-Y")
    for folder in (x, y):
        shutil.rmtree(folder, ignore_errors=True)
        for side in folder.parent.glob(f".{folder.name}.*"):
            side.unlink()
    rows: list[tuple[str, float, float, Any]] = []
    with spark_session() as spark:
        catalog = Catalog(str(warehouse), spark)
        if not (warehouse / "_built").is_file():
            cfg = load_config(args.world / "config.yaml", overrides={"warehouse": str(warehouse)})
            started = time.monotonic()
            build_dataset(StageContext(cfg, catalog))
            (warehouse / "_built").write_text("")
            print(f"build (no release): {time.monotonic() - started:.1f} s", flush=True)

        fingerprint_costs(warehouse, spark, keys)

        def release(name: str, out: Path, snaps: list[str], carry: bool) -> None:
            cfg = load_config(args.world / "config.yaml", overrides={
                "warehouse": str(warehouse), "snapshots": {"timestamps": snaps},
                "release": {"carry_unchanged": carry}})
            cpu, started = cpu_seconds(), time.monotonic()
            result = run_stage(StageContext(cfg, catalog, release_dir=out), "release")
            rows.append((name, time.monotonic() - started, cpu_seconds() - cpu, result))
            print(f"{name}: {rows[-1][1]:.1f} s, CPU {rows[-1][2]:.1f} s; {result.note}",
                  flush=True)

        n = len(keys) - 1
        release(f"1. {n} snapshots into X", x, keys[:-1], True)
        release(f"2. {n + 1} into X, carrying", x, keys, True)
        release(f"3. {n + 1} into Y, written whole", y, keys, False)
        release(f"4. {n + 1} into Y again, written whole", y, keys, False)
        release(f"5. {n + 1} into X again, nothing changed", x, keys, True)
    a, b = files(x), files(y)
    differ = sorted(set(a) ^ set(b)) + [k for k in a if k in b and a[k] != b[k]]
    size = sum(len(v) for v in b.values())
    print(f"\nrelease of {n + 1} snapshots: {len(b)} files, {size / 1e6:.1f} MB; X and Y "
          + ("identical, byte for byte" if not differ else f"DIFFER: {differ[:5]}"))
    print(f"\n{'run':<44} {'wall s':>7} {'CPU s':>7} {'carried':>8}  files")
    for name, wall, cpu, result in rows:
        print(f"{name:<44} {wall:7.1f} {cpu:7.1f} {int(result.metrics['carried_files']):>8}  "
              f"{int(result.metrics['files'])}")
    if args.warehouse is None:
        shutil.rmtree(warehouse, ignore_errors=True)
    return 1 if differ else 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    raise SystemExit(main())
