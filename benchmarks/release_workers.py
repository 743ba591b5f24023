"""The release stage with its files written by one process or several (``release.workers``,
release/units.py; issue 44, "the driver's part").

On the warehouse of ``benchmarks/release_carry.py`` (built there: ``--warehouse DIR``), in
this process (the embedded Sail engine), for each number of workers in turn, ``--rounds``
times:

1. the N + 1 snapshots written whole into a fresh folder (``carry_unchanged: false``);
2. the first N into another folder, then the N + 1 carrying: the quarter's case (timed: the
   second release only); with one worker each unit's CPU is timed too (thread CPU; the
   shared ones, the splits and each snapshot's statistics on the card, among them), and
   with any number the wall seconds of the shared steps left in the driver (the release
   suites, the plots, croissant.json with the card and manifest).

Each release's wall and CPU seconds (this process and its reaped workers; after one
untimed release, so that no run pays the process's one-time imports and Great
Expectations' set-up) and the load average are printed, and each folder is compared, byte for byte, with one worker's.
``--kg-rows N`` first measures the largest units' per-row rates at a size where start-up
does not count: T_t's Parquet and TSV and V_t's Parquet of a synthetic snapshot of N
triples (N / 4 entities), one process, tables written with deltalake (no engine).
``--shared-rates COPIES`` last times the shared units per line, one process, on the
N + 1 snapshots' release written whole, its line files COPIES times over (each copy's
ids its own): each snapshot's statistics on the card (with what a worker sends back,
pickled; and what it costs a carried snapshot, whose record the carry sidecar keeps) and
the splits.

    .venv/bin/python benchmarks/release_workers.py --warehouse DIR [--world DIR]
        [--workers 1 2] [--rounds 3] [--kg-rows 2000000] [--shared-rates 50]
"""

from __future__ import annotations

import argparse
import json
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
#: the shared steps that stay in the driver: the release suites (Spark, GX), the card's
#: plots, then croissant.json (its check), the card's text and the manifest
DRIVER = ("_validate", "plotted", "_describe")
timed: list[tuple[str, float]] = []


def _timing(name: str, fn: Any, clock: Any = time.thread_time) -> Any:
    def run(reads: Any, *args: Any) -> Any:
        started = clock()
        try:
            return fn(reads, *args)
        finally:
            timed.append((name, clock() - started))
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


def _replicated(out: Path, copies: int, keys: list[str]) -> dict[str, int]:
    """``out``'s line files (JSONL and their lines' Parquet twins) ``copies`` times over
    into ``out / "x"``, each copy's hash_ids, passage_ids, pages and triples made its own
    (so the statistics' sets and the splits' articles grow with it); returns the lines
    per file, as release.json's ``lines``."""
    import json

    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    from emerge_lib.formats.layout import LISTING, parquet_twin

    lines: dict[str, int] = json.loads((out / LISTING).read_text(encoding="utf-8"))["lines"]
    into = out / "x"
    for rel in lines:
        (into / rel).parent.mkdir(parents=True, exist_ok=True)
        with (out / rel).open(encoding="utf-8") as fh:
            recs = [json.loads(line) for line in fh if line.strip()]
        with (into / rel).open("w", encoding="utf-8") as fh:
            for k in range(copies):
                for rec in recs:
                    fh.write(json.dumps({
                        **rec, "hash_id": f"{rec['hash_id']}-{k}",
                        "passage_id": f"{rec['passage_id']}-{k}",
                        "tkgu_triples": [{**t, "triple": [f"{t['triple'][0]}-{k}",
                                                          *t["triple"][1:]]}
                                         for t in rec["tkgu_triples"]]}) + "\n")
        twin = pq.read_table(out / parquet_twin(rel))
        parts = []
        for k in range(copies):
            part = twin.set_column(twin.schema.get_field_index("hash_id"), "hash_id",
                                   pc.binary_join_element_wise(twin["hash_id"],
                                                               pa.scalar(f"-{k}"), ""))
            page = part.schema.get_field_index("anchor_page_id")
            parts.append(part.set_column(page, part.schema.field(page), pc.add(
                part["anchor_page_id"], pa.scalar(k * 10**8, part.schema.field(page).type))))
        (into / parquet_twin(rel)).parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.concat_tables(parts), into / parquet_twin(rel))
        lines[rel] *= copies
    return lines


def shared_rates(out: Path, keys: list[str], copies: int) -> None:
    """CPU-s per M lines of the shared units, one process, on the line files of a release
    written whole (``out``) ``copies`` times over (so that no fixed cost counts): each
    snapshot's statistics on the card (its JSONL lines) with their pickled size (what a
    worker sends back), and the splits (every snapshot's lines' Parquet twins)."""
    import pickle

    from emerge_lib.core.config import SplitSettings
    from emerge_lib.formats.card import SnapshotStats, collect
    from emerge_lib.formats.layout import CORPUS, EVALUATION_SET, parquet_twin, snapshot_dir_name
    from emerge_lib.release.splits import drawn, merge_splits, write_snapshot_splits

    lines = _replicated(out, copies, keys)
    into = out / "x"
    for snap in keys:
        n = sum(v for rel, v in lines.items() if f"/{snapshot_dir_name(snap)}/" in rel)
        cpu = time.thread_time()
        stats = collect(into, [snap], {snap: {}})[0]  # the unit card_stats
        used = time.thread_time() - cpu
        size = len(pickle.dumps(stats))
        cpu = time.thread_time()  # a carried snapshot's: its record in the carry sidecar
        text = json.dumps(stats.record())
        assert SnapshotStats.from_record(json.loads(text)) == stats
        kept = time.thread_time() - cpu
        print(f"card statistics of {snap}: {n} lines ({stats.triples} triples), "
              f"{used:.2f} CPU-s, {used / n * 1e6:.1f} CPU-s per M lines; pickled "
              f"{size / 1e6:.2f} MB ({size / n:.0f} B a line); kept for a carried "
              f"snapshot (its JSON record, {len(text) / 1e6:.2f} MB, written and read): "
              f"{kept:.3f} CPU-s", flush=True)
    corpus = {snap: [parquet_twin(rel) for rel in lines
                     if rel.startswith(f"{CORPUS}/{snapshot_dir_name(snap)}/")] for snap in keys}
    evaluation = [parquet_twin(rel) for rel in lines if rel.startswith(f"{EVALUATION_SET}/")]
    total = sum(n for rel, n in lines.items() if rel.startswith(f"{CORPUS}/"))
    cpu = time.thread_time()
    test, pages = drawn(into, [f for files in corpus.values() for f in files], evaluation)
    used = time.thread_time() - cpu
    print(f"splits, the lines drawn into test (driver): {total} corpus lines, {used:.2f} "
          f"CPU-s, {used / total * 1e6:.1f} CPU-s per M lines", flush=True)
    parts = []
    for snap in keys:  # the unit split_files
        n = sum(v for rel, v in lines.items()
                if rel.startswith(f"{CORPUS}/{snapshot_dir_name(snap)}/"))
        cpu = time.thread_time()
        parts.append(write_snapshot_splits(into, snap, corpus[snap], test, pages,
                                           SplitSettings()))
        used = time.thread_time() - cpu
        print(f"splits of {snap}: {n} corpus lines, {used:.2f} CPU-s, "
              f"{used / n * 1e6:.1f} CPU-s per M lines", flush=True)
    print(f"splits: {merge_splits(parts)[0].record()}", flush=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--world", type=Path, default=Path("/tmp/emerge-carry-world"))
    ap.add_argument("--warehouse", type=Path, required=True)
    ap.add_argument("--snapshots", type=int, default=4, choices=range(2, len(SNAPSHOTS) + 1))
    ap.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--kg-rows", type=int, default=0)
    ap.add_argument("--shared-rates", type=int, default=0, metavar="COPIES")
    args = ap.parse_args()
    if args.kg_rows:
        kg_rates(args.kg_rows)
    keys = list(SNAPSHOTS[-args.snapshots:])
    scratch = Path(tempfile.mkdtemp(prefix="emerge-release-workers-"))
    plain = {name: getattr(writer, name) for name in UNITS + DRIVER}
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
                # a pool's units are its own: timed with one worker only
                for name in UNITS if workers == 1 else ():
                    setattr(writer, name, _timing(name, plain[name]))
                for name in DRIVER:  # wall: the engine's threads run the suites' queries
                    setattr(writer, name, _timing(name, plain[name], time.monotonic))
                load = os.getloadavg()[0]
                try:
                    wall, cpu = release(carried, keys, workers, True)
                finally:
                    for name in UNITS + DRIVER:
                        setattr(writer, name, plain[name])
                kinds = {name: sum(t for n, t in timed if n == name) for name in UNITS + DRIVER}
                pooled = [t for n, t in timed if n in UNITS]
                units = (f"; {len(pooled)} units {sum(pooled):.1f} CPU-s, the largest "
                         f"{max(pooled):.2f}" if pooled else "")
                units += "; " + ", ".join(f"{n} {t:.2f}" for n, t in kinds.items() if t)
                print(f"round {rnd}, workers {workers}: {len(keys) - 1} carried + 1 written: "
                      f"{wall:.1f} s, CPU {cpu:.1f} s (load {load:.1f}){units}", flush=True)
                for kind in ("whole", "carried"):
                    a = files(scratch / f"{kind}-{args.workers[0]}")
                    b = files(scratch / f"{kind}-{workers}")
                    if a != b:
                        differ += 1
                        print(f"  {kind}: workers {workers} DIFFER from {args.workers[0]}")
        if args.shared_rates:
            release(scratch / "rates", keys, 1, False)
            shared_rates(scratch / "rates", keys, args.shared_rates)
    shutil.rmtree(scratch, ignore_errors=True)
    print("every release the same bytes as one worker's" if not differ else
          f"{differ} releases differ")
    return 1 if differ else 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    raise SystemExit(main())
