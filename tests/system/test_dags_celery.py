"""The newcomer path of docs/operations.md under the CeleryExecutor, the deployment's
(`AIRFLOW_EXECUTOR=celery make airflow`: a Celery worker beside the scheduler,
dag-processor, triggerer and api-server, on a private Redis and Postgres, each stopped by
its PID), with the default configuration and the REST API as the docs show it (a token
from /auth/token, then the calls): every DAG unpaused, the first ingest (mapped
extraction on the worker), a backfill of two quarters, a custom run; every task
instance's state asserted and every task run by the Celery worker; the releases the same
as the LocalExecutor's (test_dags_scheduler.py; whichever module finishes second
compares); the release task's one line and no ERROR line in a successful task; the UI's
links served; curation's per-model pools: a run whose deprecations model is busy holds
that pool and not another snapshot's additions; docker-compose.yaml's executor settings
are the ones this ran with. Slow: one Airflow for the module."""

from __future__ import annotations

import json
import re
import shutil
import time
from datetime import datetime
from pathlib import Path

import httpx
import psutil
import pytest
import yaml
from airflowkit import (
    LocalAirflow,
    code_key,
    file_step_times,
    release_digests,
    same_release_as_the_other_executor,
    states,
    step_times,
    task_log,
)
from repo import REPO
from worlds import SMALL

from emerge_lib.curation.stub import StubServer

SNAPSHOTS = ("2024-01-01T00:00:00Z", "2024-04-01T00:00:00Z")
DAGS = ("emerge_dumps", "emerge_ingest", "emerge_snapshot", "emerge_evaluate")
#: the snapshot DAG's tasks that do nothing with the default configuration: curation is
#: off, and there is nowhere to publish
SKIPPED = {"curate_additions", "curate_deprecations", "final_judge_additions",
           "final_judge_deprecations", "publish"}
TIMES: dict[str, float] = {}
#: the newcomer path's runs, by step: (DAG, run ids), for their task instances' times
RUNS: dict[str, tuple[str, list[str]]] = {}


@pytest.fixture(scope="module")
def world(tmp_path_factory, worlds) -> Path:
    out = tmp_path_factory.mktemp("celery") / "world"
    shutil.copytree(worlds.world(SMALL), out)  # the default configuration: the world's
    return out


@pytest.fixture(scope="module")
def llms():
    """The two curation routes, each a stub of its own (the deprecations model can be held
    busy); used only by the pools test's runs, which turn curation on."""
    with StubServer() as additions, StubServer() as deprecations:
        yield {"additions": additions, "deprecations": deprecations}


@pytest.fixture(scope="module")
def airflow(world: Path, llms, tmp_path_factory):
    home = tmp_path_factory.mktemp("celery-home")
    instance = LocalAirflow(home, {
        "EMERGE_CONFIG": str(world / "config.yaml"),
        "EMERGE__WAREHOUSE": str(world / "warehouse"),
        "EMERGE_RELEASE_ROOT": str(world / "releases"),
        # where the two models are served (curation itself stays off: the configuration's)
        "AIRFLOW_CONN_EMERGE_LLM": json.dumps({"conn_type": "emerge_llm", "extra": {
            judge: {"url": stub.url} for judge, stub in llms.items()}}),
    }, executor="celery", login=True)
    started = time.monotonic()
    instance.start()
    TIMES["start"] = time.monotonic() - started
    try:
        yield instance
    finally:
        pids = instance.pids()
        took = instance.stop()
        print(f"celery newcomer path: make airflow-stop took {took:.1f}s")
        print("celery newcomer path: " + ", ".join(f"{k} {v:.0f}s" for k, v in TIMES.items()))
        assert took < 30, f"stopping Airflow took {took:.0f}s"
        assert set(pids) >= {"api-server", "scheduler", "dag-processor", "triggerer",
                             "worker", "redis"}
        for name, pid in pids.items():  # every component stopped by its PID
            assert not running(pid), name


def running(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def seconds(start: str, end: str) -> float:
    return (datetime.fromisoformat(end) - datetime.fromisoformat(start)).total_seconds()


def ran_on_the_worker(airflow: LocalAirflow, tis: list[dict]) -> None:
    """Each task instance went through the Celery worker (its log names each workload it
    executes, by the task instance's id) from the default queue, or its model's."""
    worker_log = (airflow.home / "logs" / "worker.log").read_text(errors="replace")
    for ti in tis:
        if ti["state"] in ("success", "failed"):
            assert ti["id"] in worker_log, f"{ti['task_id']} did not run on the worker"
            llm = ti["task_id"].startswith(("curate_", "final_judge_"))
            assert ti["queue"] == ("default" if not llm
                                   else f"emerge_llm_{ti['task_id'].rsplit('_', 1)[1]}")


def test_compose_runs_the_executor_this_runs(airflow: LocalAirflow) -> None:
    """docker-compose.yaml's executor settings are those this instance's components run
    with (`airflow-local.sh env` prints them), but for the hosts: the executor, the
    concurrency, the visibility timeout, the default queue; and its worker serves the
    queues compose's worker serves (asked through the broker)."""
    import subprocess
    import sys

    compose = yaml.safe_load((REPO / "docker-compose.yaml").read_text())
    env = compose["x-airflow-env"]
    printed = subprocess.run(["bash", str(REPO / "scripts" / "airflow-local.sh"), "env"],
                             env=airflow.env, capture_output=True, text=True, timeout=120)
    assert printed.returncode == 0, printed.stderr
    mine = dict(re.findall(r"^export (\w+)=(.*)$", printed.stdout, re.MULTILINE))
    for name in ("AIRFLOW__CORE__EXECUTOR", "AIRFLOW__CELERY__WORKER_CONCURRENCY",
                 "AIRFLOW__CELERY_BROKER_TRANSPORT_OPTIONS__VISIBILITY_TIMEOUT",
                 "AIRFLOW__OPERATORS__DEFAULT_QUEUE"):
        assert mine[name] == str(env[name]), name
    for conf in (mine, env):
        assert conf["AIRFLOW__CELERY__BROKER_URL"].startswith("redis://")
        assert conf["AIRFLOW__CELERY__RESULT_BACKEND"].startswith("db+postgresql://")
    command = compose["services"]["airflow-worker"]["command"]
    queues = set(command[command.index("--queues") + 1].split(","))
    asked = subprocess.run(
        [str(Path(sys.executable).parent / "celery"), "--app",
         "airflow.providers.celery.executors.celery_executor.app", "inspect", "active_queues",
         "--json", "--timeout", "30"],
        env={**airflow.env, **mine}, capture_output=True, text=True, timeout=300)
    assert asked.returncode == 0, asked.stderr[-2000:]
    replies = json.loads(asked.stdout.strip().splitlines()[-1])
    assert [set(q["name"] for q in qs) for qs in replies.values()] == [queues], replies


def test_every_dag_unpaused(airflow: LocalAirflow) -> None:
    """Step 1: the scheduled runs of the newest quarter wait deferred, in the triggerer
    (no worker slot), for a dump the world does not have."""
    for dag_id in DAGS:
        run = airflow.unpause(dag_id)
        if dag_id in ("emerge_dumps", "emerge_snapshot"):
            wait = "wait_for_dump" if dag_id == "emerge_dumps" else "wait_for_inputs"
            assert run["tasks"][wait] == "deferred", run
            assert {s for t, s in run["tasks"].items() if t != wait} == {None}, run
        else:
            assert run == {}


def test_the_first_ingest(airflow: LocalAirflow, world: Path) -> None:
    """Step 2, through the REST API with a token: both wikis' mapped extraction and
    commits of both dump dates, then stability, every task on the Celery worker."""
    started = time.monotonic()
    run_id = airflow.trigger("emerge_ingest")
    airflow.wait("emerge_ingest", [run_id], timeout=1800)
    TIMES["first ingest"] = time.monotonic() - started
    RUNS["first ingest"] = ("emerge_ingest", [run_id])
    print(f"celery newcomer path: the first ingest took {TIMES['first ingest']:.0f}s")
    expected = {"wait_for_dump": "success", "stability": "success"}
    for kind in ("wikidata", "wikipedia"):
        expected |= {f"{kind}.plan": "success", f"{kind}.extract[0]": "success",
                     f"{kind}.commit": "success", f"{kind}.extract_newer[0]": "success",
                     f"{kind}.commit_newer": "success"}
    assert states(airflow, "emerge_ingest", run_id) == expected
    ran_on_the_worker(airflow, airflow.tasks("emerge_ingest", run_id))
    files = {p.name for p in (world / "mirror").rglob("*.7z")}
    events = airflow.get("/assets/events", order_by="-timestamp")["asset_events"]
    (timelines,) = [e for e in events if e["uri"] == "emerge://warehouse/timelines"]
    assert sum(timelines["extra"]["files"].values()) == len(files)


def snapshot_states(airflow: LocalAirflow, run_id: str) -> dict[str, str]:
    got = states(airflow, "emerge_snapshot", run_id)
    expected = {t: ("skipped" if t in SKIPPED else "success") for t in got}
    assert got == expected, got
    # the wait, the 13 stages of a build, curate and the final judge as two tasks each
    assert len(got) == 16
    ran_on_the_worker(airflow, airflow.tasks("emerge_snapshot", run_id))
    return got


def test_a_backfill_of_two_quarters(airflow: LocalAirflow) -> None:
    """Step 3: two runs side by side, every task as the LocalExecutor runs it."""
    backfill = airflow.post("/backfills", {
        "dag_id": "emerge_snapshot", "from_date": SNAPSHOTS[0], "to_date": SNAPSHOTS[1],
        "max_active_runs": 2, "reprocess_behavior": "none", "run_backwards": False,
        "dag_run_conf": {}})
    assert backfill["max_active_runs"] == 2
    runs = [r for r in airflow.wait("emerge_snapshot", count=2, timeout=2400)
            if r["run_type"] == "backfill"]
    assert sorted(r["logical_date"][:10] for r in runs) == ["2024-01-01", "2024-04-01"]
    (a, b) = sorted((r["start_date"], r["end_date"]) for r in runs)
    assert b[0] < a[1], "the two backfill runs did not run side by side"
    TIMES["backfill"] = seconds(a[0], b[1])
    RUNS["backfill"] = ("emerge_snapshot", [r["dag_run_id"] for r in runs])
    print(f"celery newcomer path: the two-quarter backfill took {TIMES['backfill']:.0f}s")
    for run in runs:
        snapshot_states(airflow, run["dag_run_id"])


def test_a_custom_run(airflow: LocalAirflow, world: Path) -> None:
    """Step 4: a manual run of a custom snapshot beside the waiting scheduled run."""
    scheduled = [r for r in airflow.runs("emerge_snapshot") if r["run_type"] == "scheduled"]
    assert scheduled and scheduled[0]["state"] == "running"
    run_id = airflow.trigger("emerge_snapshot", {"snapshot": "2024-01-15T00:00:00Z",
                                                 "windows": 2})
    (run,) = airflow.wait("emerge_snapshot", [run_id], timeout=1200)
    TIMES["custom run"] = seconds(run["start_date"], run["end_date"])
    RUNS["custom run"] = ("emerge_snapshot", [run_id])
    print(f"celery newcomer path: the custom run took {TIMES['custom run']:.0f}s")
    snapshot_states(airflow, run_id)
    assert states(airflow, "emerge_snapshot", scheduled[0]["dag_run_id"])[
        "wait_for_inputs"] == "deferred"
    assert sorted(p.name for p in (world / "releases" / "snapshot_2024-01-15").glob(
        "corpus/snapshot_2024-01-15/delta_*.jsonl")) == ["delta_2024-01-22.jsonl",
                                                          "delta_2024-01-29.jsonl"]


def test_the_releases_are_the_local_executors(airflow: LocalAirflow, world: Path,
                                              request) -> None:
    """The same world, configuration and code under the LocalExecutor
    (test_dags_scheduler.py) gives the same three releases, file for file."""
    mine = release_digests(world / "releases")
    cache = Path(request.config.cache.mkdir("emerge-executors"))
    print(file_step_times(cache, "celery", {
        phase: step_times(airflow, dag_id, ids) for phase, (dag_id, ids) in RUNS.items()},
        code_key(repr(SMALL))))
    other = same_release_as_the_other_executor(cache, "celery", mine, code_key(repr(SMALL)))
    if other is None:
        print("celery newcomer path: the LocalExecutor's releases of this code are not "
              "filed yet: test_dags_scheduler.py compares when it finishes")
        return
    name, theirs = other
    assert mine == theirs, f"the {name} executor's releases differ"
    print(f"celery newcomer path: the releases are the {name} executor's, file for file "
          f"({', '.join(d['version'] for d in mine.values())})")


def test_the_release_task_says_what_it_built_and_no_success_logs_an_error(
        airflow: LocalAirflow, world: Path) -> None:
    for run in airflow.runs("emerge_snapshot"):
        if run["run_type"] == "scheduled":
            continue
        for ti in airflow.tasks("emerge_snapshot", run["dag_run_id"]):
            records = task_log(airflow, "emerge_snapshot", run["dag_run_id"], ti["task_id"])
            errors = [r["event"] for r in records if r.get("level") in ("error", "critical")]
            assert errors == [], (ti["task_id"], errors)
            if ti["state"] == "skipped":  # the reason, in the visible log
                assert any(str(r.get("event", "")).startswith(
                    (f"skipped: {ti['task_id']}", "skipped: curate", "skipped: final_judge"))
                           for r in records), ti["task_id"]
        built = airflow.get(f"/dags/emerge_snapshot/dagRuns/{run['dag_run_id']}/"
                            "taskInstances/release/xcomEntries/return_value")["value"]
        while isinstance(built, str):  # the stored JSON
            built = json.loads(built)
        folder = Path(built["release_dir"])
        (line,) = [r["event"] for r in task_log(airflow, "emerge_snapshot", run["dag_run_id"],
                                                "release")
                   if str(r.get("event", "")).startswith(f"release {folder}:")]
        manifest = json.loads((folder / "manifest.json").read_text())
        assert line == (f"release {folder}: version {manifest['version']}, "
                        f"{len(manifest['files'])} files, validation passed")
        assert built["snapshot"] and built["version"] == manifest["version"]
        assert built["files"] == len(manifest["files"]) and built["validation"] == "passed"


def release_events(airflow: LocalAirflow) -> list[dict]:
    """The release Asset's events. Airflow 3.3's /assets/events answers 500 while a run
    it created has no start date yet: that is "not yet", asked again."""
    deadline = time.monotonic() + 300
    while True:
        try:
            return [e for e in airflow.get("/assets/events", limit=100)["asset_events"]
                    if e["uri"].rstrip("/") == "emerge://releases"]  # Airflow adds a /
        except httpx.HTTPStatusError as exc:
            if exc.response.status_code != 500 or time.monotonic() > deadline:
                raise
            time.sleep(2)


def test_every_built_release_is_an_event_the_evaluation_follows(airflow: LocalAirflow) -> None:
    """Nothing is published (no publish.to), yet each release is an Asset event:
    emerge_evaluate runs on them (and skips, saying why: no predictions configured)."""
    events = release_events(airflow)
    assert sorted(e["extra"]["release_dir"].rsplit("/", 1)[-1] for e in events) == sorted(
        ["snapshot_2024-01-01", "snapshot_2024-04-01", "snapshot_2024-01-15"])
    deadline = time.monotonic() + 600
    while True:
        runs = airflow.runs("emerge_evaluate")
        if runs and all(r["state"] in ("success", "failed") for r in runs) and sum(
                len(airflow.get(f"/dags/emerge_evaluate/dagRuns/{r['dag_run_id']}/"
                                "upstreamAssetEvents")["asset_events"])
                for r in runs) == len(events):
            break
        assert time.monotonic() < deadline, runs
        time.sleep(3)
    for run in runs:
        assert run["state"] == "success" and run["run_type"] == "asset_triggered"
        assert states(airflow, "emerge_evaluate", run["dag_run_id"]) == {"evaluate": "skipped"}
        assert any("skipped: evaluate: no predictions configured" in str(r.get("event"))
                   for r in task_log(airflow, "emerge_evaluate", run["dag_run_id"],
                                     "evaluate"))


def test_the_release_links_open_the_card_and_the_validation_results(
        airflow: LocalAirflow) -> None:
    run_id = "backfill__2024-01-01T00:00:00+00:00"
    links = {}
    for task in ("validate", "release", "publish"):
        links[task] = airflow.get(f"/dags/emerge_snapshot/dagRuns/{run_id}/taskInstances/"
                                  f"{task}/links")["extra_links"]
    assert links["publish"] == {"Dataset card": None, "Published manifest": None,
                                "Validation results": None}  # nothing published
    assert links["validate"]["Dataset card"] is None
    card, results = links["release"]["Dataset card"], links["release"]["Validation results"]
    assert card.endswith("/files/card.html") and results == links["validate"][
        "Validation results"]
    token = airflow.client.headers["Authorization"]
    page = httpx.get(airflow.url + card, headers={"Authorization": token}, timeout=60)
    assert page.status_code == 200 and "EMERGE" in page.text
    checks = httpx.get(airflow.url + results, headers={"Authorization": token}, timeout=60)
    assert checks.status_code == 200 and "snapshots" in checks.json()
    assert httpx.get(airflow.url + card, timeout=60).status_code in (401, 403)  # no token
    outside = airflow.url + card.replace("card.html", "..%2F..%2Fconfig.yaml")
    assert httpx.get(outside, headers={"Authorization": token}, timeout=60).status_code == 404


def test_a_busy_deprecations_model_holds_its_pool_not_another_snapshots_additions(
        airflow: LocalAirflow, world: Path, llms) -> None:
    """Run A's deprecations model is busy (its stub holds every request): A's
    curate_deprecations holds the emerge_llm_deprecations pool's one slot. Run B, of
    another snapshot, curates its additions meanwhile (its own pool, its own queue) and
    its curate_deprecations waits for the slot; once the model answers, both finish."""
    pools = {p["name"]: p for p in airflow.get("/pools")["pools"]}
    assert pools["emerge_llm_additions"]["slots"] == pools["emerge_llm_deprecations"][
        "slots"] == 1  # the configuration's workers: one server each
    llms["deprecations"].hold()
    conf = {"curate": True}  # the quarters' five windows: both hold deprecations to judge
    a = airflow.trigger("emerge_snapshot", {**conf, "snapshot": SNAPSHOTS[0],
                                            "release_dir": str(world / "curated" / "a")})
    deadline = time.monotonic() + 1200
    while not (states(airflow, "emerge_snapshot", a).get("curate_deprecations") == "running"
               and llms["deprecations"].waiting):
        assert "failed" not in states(airflow, "emerge_snapshot", a).values(), \
            airflow.explain("emerge_snapshot", a)
        assert time.monotonic() < deadline, states(airflow, "emerge_snapshot", a)
        time.sleep(3)
    b = airflow.trigger("emerge_snapshot", {**conf, "snapshot": SNAPSHOTS[1],
                                            "release_dir": str(world / "curated" / "b")})
    while states(airflow, "emerge_snapshot", b).get("curate_additions") != "success":
        got = states(airflow, "emerge_snapshot", b)
        assert "failed" not in got.values(), airflow.explain("emerge_snapshot", b)
        assert time.monotonic() < deadline, got
        time.sleep(3)
    # B's additions are done while A still holds the deprecations model's slot, and B's
    # deprecations wait for it, scheduled (not queued: the pool is full)
    # (A's own additions too: its two curate tasks share the snapshot; one lock had A's
    # additions wait for A's deprecations, holding the additions slot B needed)
    assert states(airflow, "emerge_snapshot", a)["curate_deprecations"] == "running"
    assert states(airflow, "emerge_snapshot", a)["curate_additions"] == "success"
    assert states(airflow, "emerge_snapshot", b)["curate_deprecations"] == "scheduled"
    pool = airflow.get("/pools/emerge_llm_deprecations")
    assert pool["running_slots"] == 1 and pool["scheduled_slots"] >= 1, pool
    llms["deprecations"].release()
    airflow.wait("emerge_snapshot", [a, b], timeout=1800)
    tis = {run: {t["task_id"]: t for t in airflow.tasks("emerge_snapshot", run)}
           for run in (a, b)}
    assert tis[b]["curate_deprecations"]["start_date"] >= tis[a]["curate_deprecations"][
        "end_date"]  # one server: one curate task at a time
    for run in (a, b):
        assert {n: t["state"] for n, t in tis[run].items()} == {
            n: ("skipped" if n == "publish" else "success") for n in tis[run]}
        ran_on_the_worker(airflow, list(tis[run].values()))
        for judge in ("additions", "deprecations"):
            ti = tis[run][f"curate_{judge}"]
            assert ti["pool"] == ti["queue"] == f"emerge_llm_{judge}"
            line = [r["event"] for r in task_log(airflow, "emerge_snapshot", run,
                                                 f"curate_{judge}")
                    if re.match(rf"stage curate {judge} \d{{4}}", str(r.get("event")))]
            assert line and "requests" in line[0], line
    assert llms["deprecations"].requests and llms["additions"].requests
