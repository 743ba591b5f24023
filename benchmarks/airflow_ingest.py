"""How many cores the ingest uses inside Airflow, beside the same ingest from the command
line, on one generated world, in one run.

The path a user runs: `make airflow`'s script (api-server, scheduler, dag-processor,
triggerer, LocalExecutor) with the default settings, an `emerge_ingest` run triggered
through the REST API, and, as the baseline, `emerge ingest` on the same configuration
into a warehouse of its own. Printed: every task's stage line (its wall and the cores it
used), the run's extraction and commit phases as a whole (CPU seconds of their tasks over
the phase's wall), the run's wall from trigger to success, and the command's stage lines.

    .venv/bin/python benchmarks/airflow_ingest.py --world /tmp/bench-airflow-world

A missing world is generated first (a few minutes): Wikidata files of 500 pages, each a
few seconds of extraction, over two dump dates.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import socket
import subprocess
import tempfile
import time
from datetime import datetime
from pathlib import Path

import httpx
from _harness import EMERGE, REPO, cpu_count, ensure_world

SCRIPT = REPO / "scripts" / "airflow-local.sh"
STAGE = re.compile(r"stage (ingest_\w+ \w+|ingest_\w+|stability)\b.*? in ([0-9.]+)s.*?"
                   r"(?:, ([0-9.]+) cores)?$")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def stage_lines(text: str) -> list[tuple[str, float, float]]:
    """(stage, seconds, cores) of every stage line in a log (Airflow's JSON or plain)."""
    out = []
    for raw in text.splitlines():
        line = json.loads(raw).get("event", "") if raw.startswith("{") else raw
        if m := STAGE.search(line):
            out.append((m.group(1), float(m.group(2)), float(m.group(3) or 0)))
    return out


def airflow_ingest(world: Path, home: Path) -> tuple[float, list[tuple[str, float, float]]]:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("AIRFLOW__")}
    env.update({"AIRFLOW_HOME": str(home), "AIRFLOW_PORT": str(port),
                "EMERGE_CONFIG": str(world / "config.yaml"),
                "EMERGE__WAREHOUSE": str(home / "warehouse"),
                "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_ALL_ADMINS": "True",
                # the postgres user must reach it: not under a private temporary folder
                "EMERGE_PG_DIR": f"/tmp/emerge-airflow-pg/bench-{port}"})
    subprocess.run(["bash", str(SCRIPT), "start"], env=env, check=True,
                   stdout=subprocess.DEVNULL)
    api = httpx.Client(base_url=f"http://127.0.0.1:{port}/api/v2", timeout=120)
    try:
        deadline = time.monotonic() + 300
        while len(api.get("/dags").json().get("dags", [])) < 4:
            assert time.monotonic() < deadline, "the DAGs were not parsed"
            time.sleep(2)
        api.patch("/dags/emerge_ingest", json={"is_paused": False}).raise_for_status()
        run = api.post("/dags/emerge_ingest/dagRuns",
                       json={"logical_date": None, "conf": {}}).json()
        run_id = run["dag_run_id"]
        while True:
            state = api.get(f"/dags/emerge_ingest/dagRuns/{run_id}").json()
            if state["state"] in ("success", "failed"):
                break
            time.sleep(3)
        assert state["state"] == "success", f"the ingest run failed: see {home / 'logs'}"
        wall = (datetime.fromisoformat(state["end_date"]) -
                datetime.fromisoformat(state["start_date"])).total_seconds()
        lines = [s for log in sorted((home / "logs" / "dag_id=emerge_ingest").rglob("*.log"))
                 for s in stage_lines(log.read_text(errors="replace"))]
        return wall, lines
    finally:
        subprocess.run(["bash", str(SCRIPT), "stop"], env=env, stdout=subprocess.DEVNULL)
        shutil.rmtree(env["EMERGE_PG_DIR"], ignore_errors=True)


def cli_ingest(world: Path, warehouse: Path) -> tuple[float, list[tuple[str, float, float]]]:
    started = time.monotonic()
    proc = subprocess.run([str(EMERGE), "ingest", "-c", str(world / "config.yaml"),
                           "--warehouse", str(warehouse)], capture_output=True, text=True,
                          check=True)
    return time.monotonic() - started, stage_lines(proc.stderr)


def phases(lines: list[tuple[str, float, float]]) -> str:
    out = []
    for step in ("extract", "commit"):
        picked = [(s, c) for name, s, c in lines if name.endswith(step)]
        cpu = sum(s * c for s, c in picked)
        out.append(f"{step}: {len(picked)} tasks, {sum(s for s, _ in picked):.1f} task-seconds, "
                   f"{cpu:.1f} CPU seconds")
    return "; ".join(out)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--world", type=Path, default=Path("/tmp/bench-airflow-world"))
    p.add_argument("--items", type=int, default=6000)
    args = p.parse_args()
    ensure_world(args.world, ["--items", str(args.items), "--articles", "400",
                              "--revisions", "6", "--pages-per-file", "500", "--quiet"])
    scratch = Path(tempfile.mkdtemp(prefix="emerge-bench-airflow-"))
    try:
        wall, lines = airflow_ingest(args.world, scratch / "airflow")
        print(f"emerge_ingest under Airflow ({cpu_count()} cores): {wall:.1f}s from start "
              f"to success; {phases(lines)}")
        for name, seconds, cores in lines:
            print(f"  {name:<28} {seconds:7.1f}s {cores:5.2f} cores")
        cli_wall, cli_lines = cli_ingest(args.world, scratch / "cli-warehouse")
        print(f"emerge ingest (the baseline, same world): {cli_wall:.1f}s")
        for name, seconds, cores in cli_lines:
            print(f"  {name:<28} {seconds:7.1f}s {cores:5.2f} cores")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
