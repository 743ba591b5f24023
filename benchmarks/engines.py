"""Sail and Apache Spark 4, stage by stage: the relational stages of the bench world at two
sizes on Sail embedded (local mode), Sail's local-cluster mode (driver and two workers as
actors over RPC) and a Spark 4.2 standalone cluster with Delta Lake 4.4 (a master, two
workers of one core each, the Spark Connect server: scripts/spark-local.sh, started here
and stopped by PID at the end), in one run, the engines alternating.

Each size's world (benchmarks/scale.py's bench world, generated when missing) is ingested
once, on Sail embedded (`emerge ingest`: the extraction is the same Python on every
engine). Then, for every round, size and engine in turn, a copy of that warehouse without
its stable statements is built by `emerge build` with no dump date to read and the gate
off: stability, then per snapshot snapshot, deltas, passages, align and select, the
stages the engine runs (select's near-duplicate pass is Python on the driver), then the
release (the driver's Python, reading the tables through delta-rs: listed apart).

Per stage: wall seconds from the stage's own log line, and CPU seconds of everything
that ran it: the `emerge` process tree (Sail runs inside it), plus on Spark the cluster's
driver, executors and their Python workers (sampled at each stage line; the master and
workers' bookkeeping is not counted). Printed side by side, with Spark's ratio to Sail
embedded; every derived table of the three engines is compared row for row (an
order-free fingerprint), and their release files byte for byte.

    .venv/bin/python benchmarks/engines.py                          # sizes 0.05 0.2, 1 round
    .venv/bin/python benchmarks/engines.py --sizes 0.1 0.4 --repeat 2 --json out.json
    .venv/bin/python benchmarks/engines.py --engines sail spark --validate

``--validate`` builds with the gate on (validate after each snapshot's select), and for
Spark each stage's CPU is also printed split into the `emerge` process (the driver: its
Python, Great Expectations, the Connect client) and the cluster (the rows): where the
stage's work runs when the engine is not in the driver's process.

Needs `make spark` (without it the script says so and exits 0, as `make bench` runs it).
The load average is printed before each build: on a shared machine compare the ratios of
one run, not absolute times.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from _harness import REPO, ensure_world, processes_cpu, watch_emerge
from scale import (
    CLUSTER_ENV,
    DERIVED,
    load_average,
    release_digest,
    sample_args,
    table_fingerprint,
    world_dir,
)

ENGINES = ("sail", "sail-cluster", "spark")
STAGES = ("stability", "snapshot", "deltas", "passages", "align", "select", "release")
SPARK_LOCAL = REPO / "scripts" / "spark-local.sh"


@dataclass
class Run:
    """One engine's build of one size: per stage (summed over snapshots) wall and CPU."""

    engine: str
    scale: float
    load: float
    wall: float
    cpu: float
    stages: dict[str, dict[str, float]]  # wall, cpu; driver and engine: cpu's two parts
    tables: dict[str, str]
    release: dict[str, str]


# ----------------------------------------------------------------------------- the cluster
class SparkCluster:
    """The Spark 4 standalone cluster of this run, in a folder of its own."""

    def __init__(self, home: Path) -> None:
        self.home = home
        self.env = {**os.environ, "SPARK_LOCAL_HOME": str(home)}
        self.url = ""

    def start(self) -> None:
        started = time.monotonic()
        proc = subprocess.run([str(SPARK_LOCAL), "start"], env=self.env, capture_output=True,
                              text=True, timeout=1200)
        if proc.returncode != 0:
            raise SystemExit(f"Spark did not start:\n{proc.stdout}{proc.stderr}")
        port = (self.home / "run" / "connect.port").read_text().strip()
        self.url = f"sc://127.0.0.1:{port}"
        print(f"Spark up in {time.monotonic() - started:.0f} s at {self.url}", flush=True)

    def stop(self) -> None:
        subprocess.run([str(SPARK_LOCAL), "stop"], env=self.env, capture_output=True,
                       text=True, timeout=300)

    def cpu(self) -> float:
        """CPU seconds of the Connect server's and the executors' process trees (the
        executors are the workers' children; the daemons themselves are left out)."""
        import psutil

        total = 0.0
        for pid_file in (self.home / "run").glob("spark-*.pid"):
            try:
                daemon = psutil.Process(int(pid_file.read_text()))
                procs = ([daemon, *daemon.children(recursive=True)]
                         if "SparkConnectServer" in pid_file.name
                         else daemon.children(recursive=True))
            except (psutil.Error, ValueError):
                continue
            total += processes_cpu(procs)
        return total


# ----------------------------------------------------------------------------- one build
def ingested(root: Path, scale: float) -> Path:
    """The world of ``scale`` ingested once on Sail embedded (kept under the root)."""
    world = world_dir(root, scale)
    folder = root / f"ingested-{scale:g}"
    if (folder / "_complete").is_file():
        return folder
    shutil.rmtree(folder, ignore_errors=True)
    print(f"\n== ingest of scale {scale:g} (once, on Sail embedded)", flush=True)
    proc = subprocess.run([sys.executable, "-m", "emerge_lib.cli", "ingest", "-c",
                           str(world / "config.yaml"), "--warehouse", str(folder)],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"emerge ingest failed:\n{proc.stderr[-3000:]}")
    (folder / "_complete").write_text("")
    return folder


def config_for(root: Path, scale: float, *, validate: bool = False) -> Path:
    """The world's configuration with nothing to ingest and the gate off (on with
    ``validate``)."""
    world = world_dir(root, scale)
    path = world / "config-engines.yaml"
    text = (world / "config.yaml").read_text()
    path.write_text(text + f"validation:\n  enabled: {'true' if validate else 'false'}\n")
    return path


def build(root: Path, scale: float, engine: str, spark: SparkCluster | None, *,
          validate: bool = False) -> Run:
    run = root / "runs" / f"engines-{scale:g}-{engine}"
    shutil.rmtree(run, ignore_errors=True)
    shutil.copytree(ingested(root, scale), run)
    # stability runs again (its state names what it was built from)
    shutil.rmtree(run / "stable_statements", ignore_errors=True)
    (run / "_state" / "stability.json").unlink(missing_ok=True)
    env = {"EMERGE__DUMPS__WIKIDATA__DATES": "[]", "EMERGE__DUMPS__WIKIPEDIA__DATES": "[]"}
    if engine == "sail-cluster":
        # scale.py's two workers; 64 slots each: the release's read of a copied
        # warehouse asked for 67 ("task region requires 67 worker task slots")
        env.update(CLUSTER_ENV, SAIL_CLUSTER__WORKER_TASK_SLOTS="64",
                   EMERGE__ENGINE__MODE="local-cluster")
    elif engine == "spark":
        assert spark is not None
        env["EMERGE__ENGINE__URL"] = spark.url
    load = load_average()
    print(f"\n== scale {scale:g} on {engine} (load average {load:.1f})", flush=True)
    marks: list[float] = []  # the cluster's CPU at each stage line

    def seen(line: str) -> None:
        marks.append(spark.cpu() if spark is not None and engine == "spark" else 0.0)
        print("  " + line[line.find("stage "):], flush=True)

    before = spark.cpu() if spark is not None and engine == "spark" else 0.0
    out = root / "runs" / f"engines-{scale:g}-{engine}-release"
    shutil.rmtree(out, ignore_errors=True)
    watched = watch_emerge(["build", "-c", str(config_for(root, scale, validate=validate)),
                            "--warehouse",
                            str(run), "--out", str(out)], env=env, echo=seen)
    if watched.returncode != 0:
        raise SystemExit(f"emerge build on {engine} failed:\n{watched.log_tail[-3000:]}")
    after = spark.cpu() if spark is not None and engine == "spark" else 0.0
    stages: dict[str, dict[str, float]] = {}
    previous = before
    for line, mark in zip(watched.stages, marks, strict=True):
        extra, previous = mark - previous, mark
        agg = stages.setdefault(line.name, {"wall": 0.0, "cpu": 0.0, "driver": 0.0,
                                            "engine": 0.0})
        agg["wall"] += line.seconds
        agg["cpu"] += line.cpu + extra
        agg["driver"] += line.cpu
        agg["engine"] += extra
    tables = {t: table_fingerprint(run, t) for t in DERIVED}
    release = release_digest(out)
    shutil.rmtree(run, ignore_errors=True)
    shutil.rmtree(out, ignore_errors=True)
    return Run(engine, scale, load, watched.wall, watched.cpu + after - before, stages,
               tables, release)


# ----------------------------------------------------------------------------- the report
def report(runs: list[Run], sizes: list[float], engines: tuple[str, ...] = ENGINES,
           stages: tuple[str, ...] = STAGES) -> bool:
    """The stages side by side, per size: each engine's median wall and CPU over the
    rounds, and Spark's ratio to Sail embedded; Spark's CPU per stage split into the
    driver's process and the cluster; then whether the tables agree."""
    from statistics import median

    ok = True
    for scale in sizes:
        mine = [r for r in runs if r.scale == scale]
        print(f"\n#### scale {scale:g}: wall s / CPU s per stage (median of "
              f"{len(mine) // len(engines)} round(s); snapshots added)")
        head = "".join(f"{e:>20}" for e in engines)
        print(f"{'stage':<12}{head}{'spark/sail wall':>17}{'CPU':>7}")
        for stage in (*stages, "whole build"):
            cells, figures = [], {}
            for e in engines:
                rs = [r for r in mine if r.engine == e]
                if stage == "whole build":
                    wall, cpu = median(r.wall for r in rs), median(r.cpu for r in rs)
                else:
                    wall = median(r.stages.get(stage, {}).get("wall", 0.0) for r in rs)
                    cpu = median(r.stages.get(stage, {}).get("cpu", 0.0) for r in rs)
                figures[e] = (wall, cpu)
                cells.append(f"{wall:9.1f} / {cpu:7.1f} ")
            sail, spark = figures.get("sail", (0.0, 0.0)), figures.get("spark", (0.0, 0.0))
            ratio = (f"{spark[0] / sail[0]:17.1f}{spark[1] / sail[1]:7.1f}"
                     if sail[0] > 0 and sail[1] > 0 and spark[0] > 0 else "")
            print(f"{stage:<12}{''.join(cells)}{ratio}")
        on_spark = [r for r in mine if r.engine == "spark"]
        if on_spark:
            print(f"\nscale {scale:g} on Spark 4: CPU s per stage in the emerge process (the "
                  "driver) / in the cluster (median)")
            for stage in stages:
                driver = median(r.stages.get(stage, {}).get("driver", 0.0) for r in on_spark)
                engine = median(r.stages.get(stage, {}).get("engine", 0.0) for r in on_spark)
                share = f"{driver / (driver + engine):6.0%}" if driver + engine else ""
                print(f"  {stage:<12}{driver:9.1f} / {engine:7.1f}   driver's share {share}")
        reference = mine[0]
        for r in mine[1:]:
            differ = [t for t in DERIVED if r.tables.get(t) != reference.tables.get(t)]
            files = sorted(set(r.release) ^ set(reference.release)) or [
                f for f in reference.release if r.release[f] != reference.release[f]]
            if differ or files:
                ok = False
                print(f"DIFFERENT on {r.engine} (scale {scale:g}): tables {differ}, "
                      f"release files {files[:5]}")
    if ok:
        print(f"\nevery derived table is the same on the {len(engines)} engines, row for row, and "
              "every release file byte for byte")
    return ok


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--root", type=Path, default=Path("/tmp/emerge-scale"),
                    help="worlds (world-SCALE) and run folders (default /tmp/emerge-scale)")
    ap.add_argument("--sizes", type=float, nargs=2, default=[0.05, 0.2],
                    help="two scales of the bench world (default 0.05 0.2)")
    ap.add_argument("--repeat", type=int, default=1, help="rounds (default 1)")
    ap.add_argument("--json", type=Path, default=None, help="write every figure here")
    ap.add_argument("--engines", nargs="+", choices=ENGINES, default=list(ENGINES),
                    help="the engines to build on (default: all three)")
    ap.add_argument("--validate", action="store_true",
                    help="the gate on: validate runs after each snapshot's select")
    args = ap.parse_args()
    engines = tuple(args.engines)
    stages = (*STAGES[:-1], "validate", STAGES[-1]) if args.validate else STAGES
    if not (REPO / ".venv-spark" / ".installed").is_file() or shutil.which("java") is None:
        print("engines.py: Spark is not installed here (make spark, and Java 17); skipped")
        return 0
    for scale in args.sizes:
        ensure_world(world_dir(args.root, scale), sample_args(scale),
                     note=f" (scale {scale:g})")
        ingested(args.root, scale)
    spark = SparkCluster(args.root / "spark-local")
    if "spark" in engines:
        spark.start()
    runs: list[Run] = []
    try:
        for r in range(args.repeat):
            print(f"\n######## round {r + 1} of {args.repeat}")
            for scale in args.sizes:
                # the engines alternate, each round in another order
                order = engines[r % len(engines):] + engines[:r % len(engines)]
                for engine in order:
                    runs.append(build(args.root, scale, engine, spark,
                                      validate=args.validate))
    finally:
        spark.stop()
    ok = report(runs, list(args.sizes), engines, stages)
    if args.json:
        args.json.write_text(json.dumps([asdict(r) for r in runs], indent=1))
        print(f"figures written to {args.json}")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
