"""The release stage with its files written by one process or several (``release.workers``,
release/units.py; issue 44, "the driver's part").

On the warehouse of ``benchmarks/release_carry.py`` (built there: ``--warehouse DIR``), in
this process (the embedded Sail engine), for each number of workers in turn, ``--rounds``
times:

1. the N + 1 snapshots written whole into a fresh folder (``carry_unchanged: false``);
2. the first N into another folder, then the N + 1 carrying: the quarter's case (timed: the
   second release only); with one worker each unit's CPU is timed too (thread CPU).

Each release's wall and CPU seconds (this process and its reaped workers; after one
untimed release, so that no run pays the process's one-time imports and Great
Expectations' set-up) and the load average are printed, and each folder is compared, byte for byte, with one worker's.
``--kg-rows N`` first measures the largest units' per-row rates at a size where start-up
does not count: T_t's Parquet and TSV and V_t's Parquet of a synthetic snapshot of N
triples (N / 4 entities), one process, tables written with deltalake (no engine).

    .venv/bin/python benchmarks/release_workers.py --warehouse DIR [--world DIR]
        [--workers 1 2] [--rounds 3] [--kg-rows 2000000]
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from _harness import cpu_seconds
from release_carry import SNAPSHOTS, files

import emerge_lib.release.writer as writer
from emerge_lib.catalog import Catalog, spec
from emerge_lib.core.config import load_config
from emerge_lib.core.engine import spark_session
from emerge_lib.core.stage import StageContext
from emerge_lib.pipeline.runner import run_stage
from emerge_lib.release.tables import write_kg_tsv, write_parquet

UNITS = ("write_window", "table_file", "kg_tsv", "context", "split_files", "card_stats")
timed: list[tuple[str, float]] = []


def _timing(name: str, fn: Any) -> Any:
    def run(reads: Any, *args: Any) -> Any:
        started = time.thread_time()
        try:
            return fn(reads, *args)
        finally:
            timed.append((name, time.thread_time() - started))
    return run


def kg_rates(rows: int) -> None:
    """CPU-s per million rows of T_t's Parquet and TSV and V_t's Parquet."""
    import pyarrow as pa
    from deltalake import write_deltalake

    rng, snap = random.Random(0), SNAPSHOTS[-1]
    root = Path(tempfile.mkdtemp(prefix="emerge-kg-rates-"))
    try:
        schema = spec("kg_triples").schema
        columns = {"snapshot": [snap] * rows,
                   "s": [f"Q{rng.randrange(1, 20_000_000)}" for _ in range(rows)],
                   "p": [f"P{rng.randrange(1, 2000)}" for _ in range(rows)],
                   "o": [f"Q{rng.randrange(1, 20_000_000)}" for _ in range(rows)]}
        write_deltalake(str(root / "kg_triples"),
                        pa.table(columns).select(schema.names).cast(schema),
                        partition_by=["snapshot"])
        entities, n = spec("entities").schema, rows // 4
        given = {"snapshot": [snap] * n, "qid": [f"Q{i}" for i in range(n)],
                 "title": [f"Title {i}" for i in range(n)],
                 "label": [f"label {i}" for i in range(n)], "description": ["a thing"] * n,
                 "text_description": ["A thing of some kind, described."] * n}
        write_deltalake(str(root / "entities"), pa.table(
            {c: given.get(c, pa.nulls(n, entities.field(c).type)) for c in entities.names}
        ).cast(entities), partition_by=["snapshot"])
        catalog, out = Catalog(str(root)), root / "out"
        out.mkdir()
        for name, write in (
                ("T_t Parquet", lambda: write_parquet(catalog, "kg_triples", out / "kg.parquet",
                                                      [snap], 0, {})),
                ("T_t TSV", lambda: write_kg_tsv(catalog, out / "kg.tsv.gz", snap, 0)),
                ("V_t Parquet", lambda: write_parquet(catalog, "entities", out / "e.parquet",
                                                      [snap], 0, {}))):
            cpu = cpu_seconds()
            written = write()
            used = cpu_seconds() - cpu
            print(f"{name}: {written} rows, {used:.1f} CPU-s, "
                  f"{used / written * 1e6:.2f} CPU-s per M rows", flush=True)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--world", type=Path, default=Path("/tmp/emerge-carry-world"))
    ap.add_argument("--warehouse", type=Path, required=True)
    ap.add_argument("--snapshots", type=int, default=4, choices=range(2, len(SNAPSHOTS) + 1))
    ap.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--kg-rows", type=int, default=0)
    args = ap.parse_args()
    if args.kg_rows:
        kg_rates(args.kg_rows)
    keys = list(SNAPSHOTS[-args.snapshots:])
    scratch = Path(tempfile.mkdtemp(prefix="emerge-release-workers-"))
    plain = {name: getattr(writer, name) for name in UNITS}
    differ = 0
    with spark_session() as spark:
        catalog = Catalog(str(args.warehouse), spark)

        def release(out: Path, snaps: list[str], workers: int, carry: bool) -> tuple[float, float]:
            cfg = load_config(args.world / "config.yaml", overrides={
                "warehouse": str(args.warehouse), "snapshots": {"timestamps": snaps},
                "release": {"carry_unchanged": carry, "workers": workers}})
            cpu, started = cpu_seconds(), time.monotonic()
            run_stage(StageContext(cfg, catalog, release_dir=out), "release")
            return time.monotonic() - started, cpu_seconds() - cpu

        release(scratch / "warm-up", keys[:1], 1, False)  # imports and GX's set-up, once
        for rnd in range(args.rounds):
            for workers in args.workers:
                whole, carried = scratch / f"whole-{workers}", scratch / f"carried-{workers}"
                for folder in (whole, carried):
                    shutil.rmtree(folder, ignore_errors=True)
                load = os.getloadavg()[0]
                wall, cpu = release(whole, keys, workers, False)
                print(f"round {rnd}, workers {workers}: {len(keys)} written whole: "
                      f"{wall:.1f} s, CPU {cpu:.1f} s (load {load:.1f})", flush=True)
                release(carried, keys[:-1], 1, True)
                timed.clear()
                for name in UNITS if workers == 1 else ():  # a pool's units are its own
                    setattr(writer, name, _timing(name, plain[name]))
                load = os.getloadavg()[0]
                try:
                    wall, cpu = release(carried, keys, workers, True)
                finally:
                    for name in UNITS:
                        setattr(writer, name, plain[name])
                units = (f"; {len(timed)} units {sum(t for _, t in timed):.1f} CPU-s, the "
                         f"largest {max(timed, key=lambda u: u[1])[1]:.2f}" if timed else "")
                print(f"round {rnd}, workers {workers}: {len(keys) - 1} carried + 1 written: "
                      f"{wall:.1f} s, CPU {cpu:.1f} s (load {load:.1f}){units}", flush=True)
                for kind in ("whole", "carried"):
                    a = files(scratch / f"{kind}-{args.workers[0]}")
                    b = files(scratch / f"{kind}-{workers}")
                    if a != b:
                        differ += 1
                        print(f"  {kind}: workers {workers} DIFFER from {args.workers[0]}")
    shutil.rmtree(scratch, ignore_errors=True)
    print("every release the same bytes as one worker's" if not differ else
          f"{differ} releases differ")
    return 1 if differ else 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    raise SystemExit(main())
