"""A real local Airflow for tests: the `make airflow` script (api-server, scheduler,
dag-processor, triggerer as separate processes; the LocalExecutor, or the CeleryExecutor
with a worker, Redis and Postgres) on a free port, driven through the REST API as the UI
drives it, and stopped by PID."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "scripts" / "airflow-local.sh"
DONE = {"success", "failed"}
#: emerge's DAGs that run on an Asset's events, not on a clock
ASSET_SCHEDULED = {"emerge_ingest", "emerge_evaluate"}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class LocalAirflow:
    """``executor``: ``local`` or ``celery`` (AIRFLOW_EXECUTOR). ``login``: the REST API
    as docs/operations.md shows it, a token from ``/auth/token`` for the admin user (else
    every caller is an admin: the UI and the API without logging in)."""

    def __init__(self, home: Path, env: dict[str, str], executor: str = "local",
                 login: bool = False) -> None:
        self.home = home
        self.port = free_port()
        self.executor, self.login = executor, login
        bin_dir = str(Path(sys.executable).parent)
        base = {k: v for k, v in os.environ.items() if not k.startswith("AIRFLOW__")}
        self.env = {**base, "AIRFLOW_HOME": str(home), "AIRFLOW_PORT": str(self.port),
                    "AIRFLOW_EXECUTOR": executor,
                    "VENV_BIN": bin_dir, "PATH": f"{bin_dir}:{os.environ.get('PATH', '')}",
                    # DAGs start paused, as in a deployment, and a test unpauses what it runs
                    "AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION": "True",
                    "AIRFLOW__CORE__PARALLELISM": "3",
                    # a PostgreSQL cluster (when installed) of this test alone, removed after
                    "EMERGE_PG_DIR": f"/tmp/emerge-airflow-pg/test-{self.port}", **env}
        if not login:  # tests drive the API and the UI without logging in
            self.env["AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_ALL_ADMINS"] = "True"
        self.url = f"http://127.0.0.1:{self.port}"
        self.client = httpx.Client(base_url=self.url + "/api/v2", timeout=120)

    def token(self, user: str = "admin") -> str:
        """A JWT for ``user`` from ``POST /auth/token`` (docs/operations.md): its password
        is in the file the simple auth manager generated on the first start."""
        passwords = json.loads((self.home /
                                "simple_auth_manager_passwords.json.generated").read_text())
        resp = httpx.post(f"{self.url}/auth/token", json={"username": user,
                                                          "password": passwords[user]},
                          timeout=60)
        resp.raise_for_status()
        return resp.json()["access_token"]

    def _script(self, action: str) -> str:
        proc = subprocess.run(["bash", str(SCRIPT), action], env=self.env, capture_output=True,
                              text=True, timeout=900)
        if proc.returncode != 0:
            raise RuntimeError(f"airflow-local.sh {action} failed:\n{proc.stdout}\n{proc.stderr}")
        return proc.stdout

    def start(self) -> LocalAirflow:
        self._script("start")
        if self.login:
            self.client.headers["Authorization"] = f"Bearer {self.token()}"
        deadline = time.monotonic() + 300
        dag_files = len(list((REPO / "dags").glob("emerge_*.py")))
        while time.monotonic() < deadline:  # the dag-processor has parsed every DAG
            dags = self.get("/dags").get("dags", [])
            if len(dags) >= dag_files:
                return self
            time.sleep(2)
        raise RuntimeError(f"the {dag_files} DAGs were not parsed within 300s")

    def stop(self) -> float:
        """`make airflow-stop`'s script; returns the seconds it took."""
        started = time.monotonic()
        self._script("stop")
        took = time.monotonic() - started
        shutil.rmtree(self.env["EMERGE_PG_DIR"], ignore_errors=True)
        return took

    def cli_env(self) -> dict[str, str]:
        """The environment in which the `airflow` command talks to this Airflow (its
        database, DAG folder and API: `airflow-local.sh env`, docs/operations.md)."""
        import shlex

        exports = dict(shlex.split(line.removeprefix("export "))[0].split("=", 1)
                       for line in self._script("env").splitlines()
                       if line.startswith("export "))
        return {**self.env, **exports}

    def pids(self) -> dict[str, int]:
        return {p.stem: int(p.read_text()) for p in (self.home / "run").glob("*.pid")}

    def get(self, path: str, **params: Any) -> Any:
        resp = self.client.get(path, params=params)
        resp.raise_for_status()
        return resp.json()

    def post(self, path: str, body: dict[str, Any]) -> Any:
        resp = self.client.post(path, json=body)
        if resp.status_code >= 400:
            raise RuntimeError(f"POST {path}: {resp.status_code} {resp.text}")
        return resp.json()

    def put(self, path: str, body: dict[str, Any] | None = None) -> Any:
        resp = self.client.put(path, json=body or {})
        if resp.status_code >= 400:
            raise RuntimeError(f"PUT {path}: {resp.status_code} {resp.text}")
        return resp.json()

    def patch(self, path: str, body: dict[str, Any]) -> Any:
        resp = self.client.patch(path, json=body)
        if resp.status_code >= 400:
            raise RuntimeError(f"PATCH {path}: {resp.status_code} {resp.text}")
        return resp.json()

    def unpause(self, dag_id: str) -> dict[str, Any]:
        """Unpause a DAG; a time-scheduled one's schedule then creates the run of the
        latest interval (catchup is off), which is returned once its first task waits
        deferred (a trigger polls for its inputs; no worker slot is held). {} for an
        Asset-scheduled DAG."""
        self.patch(f"/dags/{dag_id}", {"is_paused": False})
        if dag_id in ASSET_SCHEDULED:
            return {}
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline:
            scheduled = [r for r in self.runs(dag_id) if r["run_type"] == "scheduled"]
            if scheduled:
                run = scheduled[0]
                states = {t["task_id"]: t["state"] for t in self.tasks(dag_id, run["dag_run_id"])}
                if "deferred" in states.values():
                    return {**run, "tasks": states}
                assert "failed" not in states.values(), self.explain(dag_id, run["dag_run_id"])
            time.sleep(2)
        raise AssertionError(f"{dag_id}: no scheduled run waiting deferred within 600s")

    def event_runs(self, event_id: int) -> list[str]:
        """The runs an asset event has triggered so far. Airflow 3.3's /assets/events
        answers 500 while a run it created has no start date yet (its response model
        requires one): that is "not yet", asked again."""
        try:
            events = self.get("/assets/events", limit=100)["asset_events"]
        except httpx.HTTPStatusError as exc:
            if exc.response.status_code != 500:
                raise
            return []
        return [r["run_id"] for e in events if e["id"] == event_id
                for r in e.get("created_dagruns") or []]

    def trigger(self, dag_id: str, conf: dict[str, Any] | None = None) -> str:
        run = self.post(f"/dags/{dag_id}/dagRuns", {"logical_date": None, "conf": conf or {}})
        return run["dag_run_id"]

    def runs(self, dag_id: str) -> list[dict[str, Any]]:
        return self.get(f"/dags/{dag_id}/dagRuns", order_by="run_after", limit=100)["dag_runs"]

    def wait(self, dag_id: str, run_ids: list[str] | None = None, count: int = 1,
             timeout: float = 1200) -> list[dict[str, Any]]:
        """Wait until the runs (or ``count`` runs) are done; on a failure, say which task
        failed and the end of its log."""
        deadline = time.monotonic() + timeout
        while True:
            runs = [r for r in self.runs(dag_id) if r["run_type"] != "scheduled" and (
                run_ids is None or r["dag_run_id"] in run_ids)]
            if len(runs) >= count and all(r["state"] in DONE for r in runs):
                for r in runs:
                    if r["state"] != "success":
                        raise AssertionError(self.explain(dag_id, r["dag_run_id"]))
                return runs
            if time.monotonic() > deadline:
                raise AssertionError(f"{dag_id} runs not done within {timeout}s: "
                                     f"{[(r['dag_run_id'], r['state']) for r in runs]}")
            time.sleep(3)

    def tasks(self, dag_id: str, run_id: str) -> list[dict[str, Any]]:
        return self.get(f"/dags/{dag_id}/dagRuns/{run_id}/taskInstances",
                        limit=200)["task_instances"]

    def explain(self, dag_id: str, run_id: str) -> str:
        lines = [f"{dag_id} {run_id}:"]
        for ti in self.tasks(dag_id, run_id):
            lines.append(f"  {ti['task_id']}[{ti['map_index']}] {ti['state']}")
            if ti["state"] == "failed":
                folder = (self.home / "logs" / f"dag_id={dag_id}" / f"run_id={run_id}" /
                          f"task_id={ti['task_id']}")
                for log in sorted(folder.rglob("*.log"))[-1:]:
                    lines.append(log.read_text(errors="replace")[-3000:])
        return "\n".join(lines)


def states(airflow: LocalAirflow, dag_id: str, run_id: str) -> dict[str, str]:
    """Every task instance's state in a run: ``task_id`` (``task_id[i]`` when mapped)."""
    return {(t["task_id"] if t["map_index"] < 0 else f"{t['task_id']}[{t['map_index']}]"):
            t["state"] for t in airflow.tasks(dag_id, run_id)}


def task_log(airflow: LocalAirflow, dag_id: str, run_id: str, task_id: str) -> list[dict]:
    """A task's log records (its last try), as the UI shows them."""
    folder = (airflow.home / "logs" / f"dag_id={dag_id}" / f"run_id={run_id}" /
              f"task_id={task_id}")
    logs = sorted(folder.rglob("attempt=*.log"))
    assert logs, f"no log in {folder}"
    out = []
    for line in logs[-1].read_text(errors="replace").splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:
            out.append({"level": "info", "event": line})
    return out


#: the snapshot runs of the newcomer path (docs/operations.md): the backfill's two
#: quarters and the custom run
NEWCOMER_RELEASES = ("snapshot_2024-01-01", "snapshot_2024-04-01", "snapshot_2024-01-15")


def release_digests(releases: Path) -> dict[str, dict[str, Any]]:
    """Each newcomer release as its manifest states it: the content version and every
    file's sha256."""
    out = {}
    for name in NEWCOMER_RELEASES:
        manifest = json.loads((releases / name / "manifest.json").read_text())
        out[name] = {"version": manifest["version"],
                     "files": {f["path"]: f["sha256"] for f in manifest["files"]}}
    return out


def code_key(*extra: str) -> str:
    """What a release depends on here: the library, the DAGs, the plugin."""
    import hashlib

    digest = hashlib.sha256("\n".join(extra).encode())
    for root in ("emerge_lib", "dags", "plugins"):
        for p in sorted((REPO / root).rglob("*")):
            if p.suffix in (".py", ".c") and p.is_file():
                digest.update(p.relative_to(REPO).as_posix().encode())
                digest.update(p.read_bytes())
    return digest.hexdigest()[:16]


def same_release_as_the_other_executor(cache: Path, executor: str,
                                       digests: dict[str, Any], key: str
                                       ) -> tuple[str, dict[str, Any]] | None:
    """The newcomer path under the LocalExecutor (test_dags_scheduler.py) and under the
    CeleryExecutor (test_dags_celery.py) build the same releases: each module files its
    releases' digests here (the session's cache, shared by pytest-xdist's workers) for
    this code, and the second to finish compares them with the first's. Returns (the
    other executor, its digests), or None when it has not filed any for this code yet
    (then it compares when it finishes)."""
    import fcntl

    cache.mkdir(parents=True, exist_ok=True)
    other = "celery" if executor == "local" else "local"
    with open(cache / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        (cache / f"{executor}.json").write_text(json.dumps({"key": key, "releases": digests}))
        theirs = cache / f"{other}.json"
        if theirs.is_file():
            filed = json.loads(theirs.read_text())
            if filed["key"] == key:
                return other, filed["releases"]
    return None


def step_times(airflow: LocalAirflow, dag_id: str, run_ids: list[str]) -> dict[str, Any]:
    """What Airflow's task instances of these runs record: per task, ``run`` (its
    duration; mapped instances and runs summed) and ``wait`` (queued until started: the
    executor's hand-over), and ``wall``, the runs as a whole (first start to last end)."""
    from datetime import datetime

    def secs(a: str, b: str) -> float:
        return (datetime.fromisoformat(b) - datetime.fromisoformat(a)).total_seconds()

    tasks: dict[str, dict[str, float]] = {}
    runs = [r for r in airflow.runs(dag_id) if r["dag_run_id"] in run_ids]
    for run_id in run_ids:
        for ti in airflow.tasks(dag_id, run_id):
            if ti["state"] != "success":
                continue
            row = tasks.setdefault(ti["task_id"], {"run": 0.0, "wait": 0.0})
            row["run"] += ti["duration"] or 0.0
            if ti.get("queued_when") and ti.get("start_date"):
                row["wait"] += max(0.0, secs(ti["queued_when"], ti["start_date"]))
    wall = secs(min(r["start_date"] for r in runs), max(r["end_date"] for r in runs))
    return {"wall": wall, "tasks": tasks}


def file_step_times(cache: Path, executor: str, phases: dict[str, Any], key: str) -> str:
    """File the newcomer path's step times (:func:`step_times` per phase) beside the
    releases' digests, and say them beside the other executor's for this code where
    filed (their figures depend on the machine's load then: read, not asserted)."""
    cache.mkdir(parents=True, exist_ok=True)
    (cache / f"{executor}-steps.json").write_text(json.dumps({"key": key, "phases": phases}))
    other = "celery" if executor == "local" else "local"
    theirs = cache / f"{other}-steps.json"
    filed = json.loads(theirs.read_text()) if theirs.is_file() else {}
    both = {executor: phases, other: filed.get("phases") if filed.get("key") == key else None}
    lines = [f"step times (s, run / queued-to-start), {executor} | {other}:"]
    for phase, mine in phases.items():
        other_phase = (both[other] or {}).get(phase) or {"wall": float("nan"), "tasks": {}}
        lines.append(f"  {phase}: wall {mine['wall']:.0f} | {other_phase['wall']:.0f}")
        for task, row in mine["tasks"].items():
            o = other_phase["tasks"].get(task, {"run": float("nan"), "wait": float("nan")})
            lines.append(f"    {task}: {row['run']:.1f}/{row['wait']:.1f} | "
                         f"{o['run']:.1f}/{o['wait']:.1f}")
    return "\n".join(lines)
