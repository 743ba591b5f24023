"""The whole build on a large generated world: seconds, rows and peak memory per stage.

Issue 6: a generated world with >= 1 M item-valued statements and >= 100 k passages, built
end to end (ingest -> stability -> snapshot -> deltas -> passages -> align -> release) on
the embedded Sail engine by ``emerge_lib.pipeline.runner.build_dataset`` (what `emerge build` runs,
with its defaults: dumps.workers 0 = one extraction process per core). The world comes from the
sample generator's opt-in bench mode (``--bench-statements``: extra item-valued
statements per filler item, objects being items with articles; ``--bench-passages``:
linked filler paragraphs appended inside the snapshots' windows), so the passages and
align stages have real work. At --scale 1 (defaults):

    emerge sample --out /tmp/emerge-bench-world --items 100000 --articles 50000 \\
        --revisions 2 --bench-statements 9 --bench-passages 130000 \\
        --dump-date 20240520 --compress-level 1 --jobs 2 --quiet

(one dump date: history dumps are cumulative, so the build ingests the one newest dump;
bz2 level 1 because generation is bound by bz2 compression and the reader's cost does
not depend on the level). A missing world is generated first, with that command scaled.

Per stage it prints wall seconds, CPU seconds (this process and its children: the
ingest pool; the Sail engine runs in-process), the rows the stage produced, and the peak
RSS sampled every 0.2 s over this process plus all its children (psutil), then the
ru_maxrss high-water marks of this process and of its waited-for children.

Baseline, measured in the same run on the same tables: T_t of the first snapshot computed
naively in pure Python (read stable_statements and item_timeline with deltalake, replay
the intervals at t into sets, join in dicts) against the engine's ``triples_at`` for the
same t; both counts are printed and must agree.

    .venv/bin/python benchmarks/build_dataset.py [--world DIR] [--scale 0.25] [--explain]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager, suppress
from datetime import datetime
from pathlib import Path
from typing import Any

import psutil
from _harness import cpu_seconds
from _harness import ensure_world as harness_world

from emerge_lib.catalog import Catalog
from emerge_lib.core.config import load_config
from emerge_lib.core.engine import spark_session
from emerge_lib.core.schedule import as_utc
from emerge_lib.core.stage import StageContext
from emerge_lib.pipeline.runner import build_dataset

FULL = {"items": 100_000, "articles": 50_000, "revisions": 2, "bench_statements": 9,
        "bench_passages": 130_000}
DUMP_DATE = "20240520"  # covers the default snapshots' windows + 168 h
TARGET_STATEMENTS = 1_000_000
TARGET_PASSAGES = 100_000


# ----------------------------------------------------------------------------- the world
def world_command(world: Path, scale: float, jobs: int) -> list[str]:
    """The ``emerge sample`` arguments of the bench world at this scale."""
    n = {k: (v if k in ("revisions", "bench_statements") else max(1000, round(v * scale)))
         for k, v in FULL.items()}
    return ["--items", str(n["items"]), "--articles", str(n["articles"]),
            "--revisions", str(n["revisions"]), "--bench-statements", str(n["bench_statements"]),
            "--bench-passages", str(n["bench_passages"]), "--dump-date", DUMP_DATE,
            "--compress-level", "1", "--jobs", str(jobs), "--quiet"]


def ensure_world(world: Path, scale: float, jobs: int) -> float | None:
    """Generate the world when missing; returns the generation seconds (None: cached)."""
    return harness_world(world, world_command(world, scale, jobs))


def newest_files(world: Path, wiki: str) -> list[Path]:
    """The newest dump date's history files of one wiki (history dumps are cumulative)."""
    root = world / "mirror" / wiki
    date = sorted(p.name for p in root.iterdir() if p.is_dir())[-1]
    return sorted((root / date).glob("*pages-meta-history*.bz2"))


# ----------------------------------------------------------------------------- memory
class RssSampler:
    """Peak RSS of this process plus all its children, per labelled phase (a thread)."""

    def __init__(self, interval: float = 0.2) -> None:
        self.interval = interval
        self.proc = psutil.Process()
        self.phase = "setup"
        self.peaks: dict[str, int] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def rss(self) -> int:
        total = self.proc.memory_info().rss
        for child in self.proc.children(recursive=True):
            with suppress(psutil.Error):
                total += child.memory_info().rss
        return total

    def _run(self) -> None:
        while not self._stop.is_set():
            self.sample()
            self._stop.wait(self.interval)

    def sample(self) -> None:
        now = self.rss()
        self.peaks[self.phase] = max(self.peaks.get(self.phase, 0), now)

    def start(self) -> None:
        self._thread.start()

    def enter(self, phase: str) -> None:
        self.sample()
        self.phase = phase
        self.sample()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


@contextmanager
def phase(sampler: RssSampler, name: str, rows: list[tuple]) -> Iterator[dict[str, Any]]:
    """Time a phase outside build_dataset and record it like a stage."""
    sampler.enter(name)
    box: dict[str, Any] = {}
    cpu, started = cpu_seconds(), time.monotonic()
    yield box
    rows.append((name, time.monotonic() - started, cpu_seconds() - cpu, box.get("rows"),
                 sampler.peaks.get(name, 0)))


# ----------------------------------------------------------------------------- baseline
def naive_triples(catalog: Catalog, t: datetime) -> int:
    """T_t by replaying intervals in pure Python: what the snapshot stage replaces."""
    items = catalog.read_arrow("item_timeline").select(
        ["qid", "valid_from", "valid_to", "enwiki_title", "redirect_to"]).to_pylist()
    v: set[str] = set()
    for r in items:
        if (r["valid_from"] <= t and (r["valid_to"] is None or r["valid_to"] > t)
                and r["enwiki_title"] is not None and r["redirect_to"] is None):
            v.add(r["qid"])
    keys = catalog.read_arrow("stable_statements").to_pylist()
    out = {(r["s"], r["p"], r["o"]) for r in keys
           if r["valid_from"] <= t and (r["valid_to"] is None or r["valid_to"] > t)
           and r["s"] in v and r["o"] in v}
    return len(out)


# ----------------------------------------------------------------------------- report
def fmt_rows(result: Any) -> str:
    if hasattr(result, "rows") and hasattr(result, "brief"):  # pipeline.StageResult
        result = result.rows
    if isinstance(result, dict):
        if all(isinstance(x, int) for x in result.values()):
            return f"{sum(result.values()):,} ({', '.join(f'{k}={v:,}' for k, v in result.items())})"
        return ", ".join(f"{k}={v:,}" if isinstance(v, int) else f"{k}={v}" for k, v in result.items())
    if isinstance(result, int):
        return f"{result:,}"
    if hasattr(result, "lines") and hasattr(result, "files"):  # release.ReleaseSummary
        return f"{sum(result.lines.values()):,} JSONL lines, {len(result.files)} files"
    return "" if result is None else str(result)


def print_table(rows: list[tuple]) -> None:
    print(f"\n{'stage':<34} {'wall s':>8} {'cpu s':>8} {'peak RSS':>9}  rows")
    for name, wall, cpu, result, peak in rows:
        print(f"{name:<34} {wall:8.1f} {cpu:8.1f} {peak / 2**30:7.2f} G  {fmt_rows(result)}")


def table_rows(catalog: Catalog, name: str) -> int:
    """Row count from the Delta log's file statistics (no data read)."""
    return catalog.row_count(name)


# ----------------------------------------------------------------------------- main
def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--world", type=Path, default=Path("/tmp/emerge-bench-world"))
    ap.add_argument("--scale", type=float, default=1.0,
                    help="fraction of the full world (items, articles, passages) to generate")
    ap.add_argument("--jobs", type=int, default=2, help="generator processes (default 2)")
    ap.add_argument("--warehouse", type=Path, default=None,
                    help="warehouse folder (default: a fresh temporary one, removed after)")
    ap.add_argument("--no-release", action="store_true", help="skip the release stage")
    ap.add_argument("--no-baseline", action="store_true", help="skip the pure-Python baseline")
    args = ap.parse_args()

    gen_s = ensure_world(args.world, args.scale, args.jobs)
    meta = json.loads((args.world / "world.json").read_text())
    print(f"world: {args.world} spec={meta['spec']} bench={'bench' in meta}")
    if gen_s is not None:
        print(f"generation: {gen_s:.1f} s")

    wikidata, wikipedia = newest_files(args.world, "wikidatawiki"), newest_files(args.world, "enwiki")
    xml = {f["name"]: f["xml_bytes"] for files in meta["dumps"]["files"].values() for f in files}
    wd_xml = sum(xml.get(p.name, 0) for p in wikidata) / 1e6
    en_xml = sum(xml.get(p.name, 0) for p in wikipedia) / 1e6
    print(f"input: {len(wikidata)} wikidata files ({wd_xml:,.0f} MB XML), "
          f"{len(wikipedia)} enwiki files ({en_xml:,.0f} MB XML)")

    warehouse = args.warehouse or Path(tempfile.mkdtemp(prefix="emerge-bench-wh-"))
    out = warehouse.parent / (warehouse.name + "-release")
    cfg = load_config(args.world / "config.yaml", overrides={"warehouse": str(warehouse)})
    sampler = RssSampler()
    sampler.start()
    rows: list[tuple] = []
    started, cpu0 = time.monotonic(), cpu_seconds()
    try:
        with ExitStack() as stack:
            with phase(sampler, "engine start", rows):
                spark = stack.enter_context(spark_session())
            catalog = Catalog(str(warehouse), spark)
            step: dict[str, Any] = {}

            def on_step(name: str, plan: Any) -> None:
                step["name"] = f"{name} {plan.key}" if plan is not None else name
                step["cpu"] = cpu_seconds()
                sampler.enter(step["name"])
                print(f"[{time.monotonic() - started:7.1f} s] {step['name']} ...", flush=True)

            def on_result(result: Any) -> None:
                rows.append((step["name"], result.seconds, cpu_seconds() - step["cpu"], result,
                             sampler.peaks.get(step["name"], 0)))

            ctx = StageContext(cfg, catalog, wikidata, wikipedia,
                               release_dir=None if args.no_release else out)
            build_dataset(ctx, on_step=on_step, on_result=on_result)
            sampler.enter("after")
            build_wall = sum(r[1] for r in rows if r[0] != "engine start")
            counts = {n: table_rows(catalog, n) for n in (
                "statement_timeline", "item_timeline", "page_timeline", "paragraph_timeline",
                "stable_statements", "kg_triples", "delta_triples", "passages", "instances")}
            st = catalog.read_arrow("statement_timeline").select(["s", "p", "o"])
            distinct_spo = st.group_by(["s", "p", "o"]).aggregate([]).num_rows
            del st
            base: dict[str, Any] = {}
            if not args.no_baseline:
                t = as_utc(cfg.snapshots.timestamps[0])
                from emerge_lib.transform.snapshot import triples_at

                with phase(sampler, "engine: T_t count (1 snapshot)", rows) as box:
                    box["rows"] = base["engine"] = triples_at(catalog, t, resolve=False).count()
                with phase(sampler, "baseline: T_t in pure Python", rows) as box:
                    box["rows"] = base["naive"] = naive_triples(catalog, t)
    finally:
        sampler.stop()
        total_wall, total_cpu = time.monotonic() - started, cpu_seconds() - cpu0

    print_table(rows)
    me = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    kids = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 2**20
    print(f"\nbuild total: {build_wall:.1f} s wall; whole run {total_wall:.1f} s wall, "
          f"{total_cpu:.1f} s CPU (self + children)")
    print(f"peak RSS sampled (self + children): {max(sampler.peaks.values()) / 2**30:.2f} GiB; "
          f"ru_maxrss self {me:.2f} GiB, largest child {kids:.2f} GiB")
    print("\ntable rows: " + ", ".join(f"{k}={v:,}" for k, v in counts.items()))
    print(f"item-valued statements: {distinct_spo:,} distinct (s, p, o) in statement_timeline, "
          f"{counts['statement_timeline']:,} timeline rows, {counts['stable_statements']:,} "
          "stable_statements rows")
    ok_st = distinct_spo >= TARGET_STATEMENTS
    ok_pa = counts["passages"] >= TARGET_PASSAGES
    print(f"targets: statements >= 1 M: {'yes' if ok_st else 'NO'}; "
          f"passages >= 100 k: {'yes' if ok_pa else 'NO'} ({counts['passages']:,})")
    if base:
        print(f"baseline T_t({cfg.snapshots.timestamps[0]}): engine {base['engine']:,} rows, "
              f"pure Python {base['naive']:,} rows ({'agree' if base['engine'] == base['naive'] else 'DIFFER'})")
    if args.warehouse is None:
        shutil.rmtree(warehouse, ignore_errors=True)
        shutil.rmtree(out, ignore_errors=True)
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    raise SystemExit(main())
