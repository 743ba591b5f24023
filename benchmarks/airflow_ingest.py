"""How many cores the ingest uses inside Airflow, beside the same ingest from the command
line, on one generated world, in one run.

The path a user runs: `make airflow`'s script (api-server, scheduler, dag-processor,
triggerer, LocalExecutor) with the default settings, `emerge_ingest` runs triggered
through the REST API, each into a fresh warehouse of its own (the run's ``config``
param: the world's configuration with another warehouse), and, as the baseline, `emerge
ingest` on the same configuration, the two taking turns (``--runs``: pairs), so a
machine shared with other work slows both alike. Printed per run: every task's stage line
(its wall and the cores it used), the run's line (``run``: the stability task's figure for
the ingest as a whole, its steps' CPU seconds over the time any of them ran: tasks side by
side each report only their share), its place on the run's timeline (when it was queued,
started and ended, seconds from the run's start: what is task start-up and what is
waiting), the run's wall from its start to its end, and the command's stage lines; then
the range over the runs.

    .venv/bin/python benchmarks/airflow_ingest.py --world /tmp/bench-airflow-world --runs 3

A missing world is generated first (a few minutes): Wikidata files of 500 pages, each a
fraction of a second of extraction, over two dump dates.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

import httpx
import yaml
from _harness import EMERGE, REPO, cpu_count, ensure_world

SCRIPT = REPO / "scripts" / "airflow-local.sh"
STAGE = re.compile(r"stage (ingest_\w+ \w+|ingest_\w+|stability)\b.*? in ([0-9.]+)s.*?"
                   r"(?:, ([0-9.]+) cores)?(?: \(.*\))?$")
#: the stability task's line on the run as a whole (emerge_lib.airflow.runtime)
RUN = re.compile(r"ingest (run): \d+ stage\(s\) of its tasks ran for ([0-9.]+)s in all, "
                 r"[0-9.]+ CPU-s: ([0-9.]+) cores")

Line = tuple[str, float, float]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def stage_lines(text: str) -> list[Line]:
    """(stage, seconds, cores) of every stage line in a log (Airflow's JSON or plain)."""
    out = []
    for raw in text.splitlines():
        line = json.loads(raw).get("event", "") if raw.startswith("{") else raw
        if m := STAGE.search(line) or RUN.search(line):
            out.append((m.group(1), float(m.group(2)), float(m.group(3) or 0)))
    return out


def world_config(world: Path, warehouse: Path, out: Path) -> Path:
    """The world's configuration with its own warehouse, every path absolute."""
    cfg = yaml.safe_load((world / "config.yaml").read_text())
    cfg["warehouse"] = str(warehouse)
    cfg["dumps"]["mirror"] = (world / "mirror").as_uri()
    cfg["dumps"]["download_dir"] = str(world / "downloads")
    out.write_text(yaml.safe_dump(cfg))
    return out


def seconds_between(a: str | None, b: str | None) -> float:
    if not a or not b:
        return float("nan")
    return (datetime.fromisoformat(b) - datetime.fromisoformat(a)).total_seconds()


class Airflow:
    """`make airflow`'s script on a free port, driven through the REST API."""

    def __init__(self, home: Path, world: Path) -> None:
        self.home, self.port = home, free_port()
        bin_dir = str(Path(sys.executable).parent)  # this environment's airflow
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("AIRFLOW__")}
        self.env.update({
            "AIRFLOW_HOME": str(home), "AIRFLOW_PORT": str(self.port), "VENV_BIN": bin_dir,
            "PATH": f"{bin_dir}:{os.environ.get('PATH', '')}",
            "EMERGE_CONFIG": str(world / "config.yaml"),
            "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_ALL_ADMINS": "True",
            # the postgres user must reach it: not under a private temporary folder
            "EMERGE_PG_DIR": f"/tmp/emerge-airflow-pg/bench-{self.port}"})
        self.api = httpx.Client(base_url=f"http://127.0.0.1:{self.port}/api/v2", timeout=120)

    def __enter__(self) -> Airflow:
        subprocess.run(["bash", str(SCRIPT), "start"], env=self.env, check=True,
                       stdout=subprocess.DEVNULL)
        deadline = time.monotonic() + 300
        while len(self.api.get("/dags").json().get("dags", [])) < 4:
            assert time.monotonic() < deadline, "the DAGs were not parsed"
            time.sleep(2)
        self.api.patch("/dags/emerge_ingest", json={"is_paused": False}).raise_for_status()
        return self

    def __exit__(self, *exc: object) -> None:
        subprocess.run(["bash", str(SCRIPT), "stop"], env=self.env, stdout=subprocess.DEVNULL)
        shutil.rmtree(self.env["EMERGE_PG_DIR"], ignore_errors=True)

    def ingest(self, config: Path) -> tuple[float, list[Line], list[str]]:
        """One emerge_ingest run on ``config``: its wall, stage lines and task timeline."""
        run = self.api.post("/dags/emerge_ingest/dagRuns", json={
            "logical_date": None, "conf": {"config": str(config)}}).json()
        run_id = run["dag_run_id"]
        while True:
            state = self.api.get(f"/dags/emerge_ingest/dagRuns/{run_id}").json()
            if state["state"] in ("success", "failed"):
                break
            time.sleep(2)
        assert state["state"] == "success", f"the ingest run failed: see {self.home / 'logs'}"
        wall = seconds_between(state["start_date"], state["end_date"])
        folder = self.home / "logs" / "dag_id=emerge_ingest" / f"run_id={run_id}"
        lines = [s for log in sorted(folder.rglob("*.log"))
                 for s in stage_lines(log.read_text(errors="replace"))]
        tis = self.api.get(f"/dags/emerge_ingest/dagRuns/{run_id}/taskInstances",
                           params={"limit": 200}).json()["task_instances"]
        timeline = []
        for ti in sorted(tis, key=lambda t: t["start_date"] or ""):
            name = ti["task_id"] + (f"[{ti['map_index']}]" if ti["map_index"] >= 0 else "")
            timeline.append(
                f"{name:<28} queued {seconds_between(state['start_date'], ti['queued_when']):5.1f}"
                f"  start {seconds_between(state['start_date'], ti['start_date']):5.1f}"
                f"  end {seconds_between(state['start_date'], ti['end_date']):5.1f}")
        return wall, lines, timeline


def cli_ingest(config: Path) -> tuple[float, list[Line]]:
    started = time.monotonic()
    proc = subprocess.run([str(EMERGE), "ingest", "-c", str(config)], capture_output=True,
                          text=True, check=True)
    return time.monotonic() - started, stage_lines(proc.stderr)


def span(values: list[float]) -> str:
    return f"{min(values):.2f}-{max(values):.2f}" if values else "none"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--world", type=Path, default=Path("/tmp/bench-airflow-world"))
    p.add_argument("--items", type=int, default=6000)
    p.add_argument("--runs", type=int, default=2, help="Airflow and command runs, in turn")
    args = p.parse_args()
    ensure_world(args.world, ["--items", str(args.items), "--articles", "400",
                              "--revisions", "6", "--pages-per-file", "500", "--quiet"])
    scratch = Path(tempfile.mkdtemp(prefix="emerge-bench-airflow-"))
    walls: dict[str, list[float]] = {"airflow": [], "cli": []}
    cores: dict[str, list[float]] = {}
    try:
        with Airflow(scratch / "airflow", args.world) as airflow:
            for i in range(args.runs):
                config = world_config(args.world, scratch / f"airflow-wh-{i}",
                                      scratch / f"airflow-{i}.yaml")
                wall, lines, timeline = airflow.ingest(config)
                walls["airflow"].append(wall)
                print(f"emerge_ingest under Airflow ({cpu_count()} cores), run {i + 1}: "
                      f"{wall:.1f}s from start to success")
                for name, seconds, used in lines:
                    print(f"  {name:<28} {seconds:7.1f}s {used:5.2f} cores")
                    if used:  # the line gives cores from 1 s of work
                        cores.setdefault(f"airflow {name}", []).append(used)
                print("  timeline (seconds from the run's start):", *timeline, sep="\n    ")
                config = world_config(args.world, scratch / f"cli-wh-{i}",
                                      scratch / f"cli-{i}.yaml")
                cli_wall, cli_lines = cli_ingest(config)
                walls["cli"].append(cli_wall)
                print(f"emerge ingest (the baseline, same world), run {i + 1}: {cli_wall:.1f}s")
                for name, seconds, used in cli_lines:
                    print(f"  {name:<28} {seconds:7.1f}s {used:5.2f} cores")
                    if used:  # the line gives cores from 1 s of work
                        cores.setdefault(f"cli {name}", []).append(used)
        print(f"over {args.runs} runs: Airflow {span(walls['airflow'])}s, emerge ingest "
              f"{span(walls['cli'])}s; cores per stage line (those of 1 s or more):")
        for name, used in cores.items():
            print(f"  {name:<36} {span(used)}")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
