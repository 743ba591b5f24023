"""emerge's DAGs on a real local Airflow (`make airflow`'s script: api-server, scheduler,
dag-processor, triggerer, LocalExecutor), driven through the REST API as the UI drives it,
with the default settings: the newcomer path of docs/operations.md. Every DAG unpaused
(the scheduled runs wait deferred for dumps the world does not have, holding nothing);
the first ingest (mapped extraction, the timelines Asset); a backfill of two quarters with
two runs side by side (their instances are the planted truth, exactly; stability is not
rewritten); a custom manual run beside the waiting scheduled run; a
rerun of one task (tables unchanged); a retry beside its stuck try; the grid view in headless Chromium; the evaluation
DAG on two release Asset events; a backfill no dump covers, failing at once. Slow: one
Airflow for the module."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import psutil
import pytest
from airflowkit import LocalAirflow
from worlds import SMALL

from emerge_lib.catalog import Catalog
from emerge_lib.formats.manifest import verify_release
from emerge_lib.pipeline.runs import SnapshotRun
from emerge_lib.sample.compare import built as produced
from emerge_lib.sample.compare import planted as expected

SNAPSHOTS = ("2024-01-01T00:00:00Z", "2024-04-01T00:00:00Z")  # two quarter starts
SUCCESS_ICON = "M20 6 9 17l-5-5"  # the grid's check mark (lucide "check") on a successful task
RELEASED = ("instances", "passages", "kg_triples", "entities", "relations", "delta_triples")
#: the newcomer path's runs, by step: (DAG, run ids), for their task instances' times
RUNS: dict[str, tuple[str, list[str]]] = {}


@pytest.fixture(scope="module")
def world(tmp_path_factory, worlds) -> Path:
    out = tmp_path_factory.mktemp("airflow") / "world"
    shutil.copytree(worlds.world(SMALL), out)  # its warehouse and releases go inside it
    # the deployment's configuration: the world's mirror and snapshots, and an evaluation
    # of oracle predictions (written once a release exists)
    cfg = (out / "config.yaml").read_text()
    (out / "config.yaml").write_text(cfg + "evaluation:\n  predictions: [predictions.jsonl]\n"
                                     "  metrics: [recall]\n  out: evaluation\n")
    return out


@pytest.fixture(scope="module")
def airflow(world: Path, tmp_path_factory):
    home = tmp_path_factory.mktemp("airflow-home")
    instance = LocalAirflow(home, {
        "EMERGE_CONFIG": str(world / "config.yaml"),
        "EMERGE__WAREHOUSE": str(world / "warehouse"),
        "EMERGE_RELEASE_ROOT": str(world / "releases"),
    })
    instance.start()
    try:
        yield instance
    finally:
        pids = instance.pids()
        took = instance.stop()
        print(f"newcomer path: make airflow-stop took {took:.1f}s")
        assert took < 15, f"stopping Airflow took {took:.0f}s"
        assert set(pids) >= {"api-server", "scheduler", "dag-processor", "triggerer"}
        for name, pid in pids.items():  # every component stopped by its PID (a zombie
            # waiting for its reaper, the container's init, has stopped)
            assert not running(pid), name


def running(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


@pytest.fixture(scope="module")
def warehouse(world: Path) -> Catalog:
    return Catalog(str(world / "warehouse"))


def table_rows(catalog: Catalog) -> dict[str, list]:
    return {t: sorted(map(repr, (sorted(r.items()) for r in catalog.read_arrow(t).to_pylist())))
            for t in RELEASED}


def quarterly(logical_date: str, months: set[int]) -> bool:
    """A logical date at 00:00 UTC on the 1st of one of ``months``, not in the future."""
    when = datetime.fromisoformat(logical_date.replace("Z", "+00:00"))
    return (when.day, when.hour, when.minute) == (1, 0, 0) and when.month in months and \
        when <= datetime.now(UTC) and when.utcoffset() == timedelta(0)


def test_an_ingest_run_triggered_through_the_rest_api(airflow: LocalAirflow,
                                                      warehouse: Catalog, world: Path) -> None:
    # unpaused (as docs/operations.md says), emerge_dumps' schedule starts the run of the
    # latest quarter's dump, which the world's mirror does not have: it waits deferred for
    # it, in the triggerer, and holds no run of emerge_ingest (scheduled on its Asset)
    scheduled = airflow.unpause("emerge_dumps")
    assert quarterly(scheduled["logical_date"], {3, 6, 9, 12})
    assert scheduled["tasks"]["wait_for_dump"] == "deferred"
    assert airflow.unpause("emerge_ingest") == {}
    started = time.monotonic()
    run_id = airflow.trigger("emerge_ingest")  # the default configuration's dump dates
    airflow.wait("emerge_ingest", [run_id], timeout=1500)
    print(f"newcomer path: the first ingest took {time.monotonic() - started:.0f}s")
    RUNS["first ingest"] = ("emerge_ingest", [run_id])
    # the ingest uses every core inside Airflow: the stage lines of its tasks (one per
    # extract task and commit) report the cores each used
    lines = [ln for log in (airflow.home / "logs" / "dag_id=emerge_ingest" /
                            f"run_id={run_id}").rglob("*.log")
             for ln in log.read_text(errors="replace").splitlines()
             if "stage ingest_" in ln and " cores" in ln]
    cores = [float(m) for ln in lines for m in re.findall(r"([0-9.]+) cores", ln)]
    print("newcomer path: ingest stage lines:",
          *[re.sub(r'^.*"event":"|".*$', "", ln) for ln in lines], sep="\n  ")
    # (the figure on a bigger world: benchmarks/airflow_ingest.py)
    assert cores and all(0 < c <= (os.cpu_count() or 1) + 0.5 for c in cores), cores
    # the run's last task reports the ingest as a whole (tasks side by side each report
    # their share): the CPU seconds of its ten steps' stages over the time any of them ran
    (whole,) = [json.loads(ln)["event"] for log in (
        airflow.home / "logs" / "dag_id=emerge_ingest" / f"run_id={run_id}" /
        "task_id=stability").rglob("*.log") for ln in log.read_text().splitlines()
        if "ingest run:" in ln]
    print(f"newcomer path: {whole}")
    m = re.fullmatch(r"ingest run: 10 stage\(s\) of its tasks ran for ([0-9.]+)s in all, "
                     r"([0-9.]+) CPU-s: ([0-9.]+) cores", whole)
    assert m and 0 < float(m[3]) <= (os.cpu_count() or 1) + 0.5, whole
    waiting = airflow.tasks("emerge_dumps", scheduled["dag_run_id"])
    assert [t["state"] for t in waiting if t["task_id"] == "wait_for_dump"] == ["deferred"]
    tasks = airflow.tasks("emerge_ingest", run_id)
    # the oldest dump's 4 files are far below dumps.extract_group_mb (256): one extract
    # task, its pool on every core (mapping over many groups: e2e/ingest/test_stage.py)
    mapped = [t for t in tasks if t["task_id"] == "wikidata.extract"]
    assert len(mapped) == 1 and all(t["state"] == "success" for t in mapped)
    files = {p.name for p in (world / "mirror").rglob("*.7z")}  # dumps.prefer: 7z
    stored = warehouse.read_arrow("ingested_files").to_pylist()
    assert {r["dump_file"] for r in stored} == files and not any(r["error"] for r in stored)
    assert warehouse.row_count("stable_statements") > 0
    events = airflow.get("/assets/events", order_by="-timestamp")["asset_events"]
    timelines = [e for e in events if e["uri"] == "emerge://warehouse/timelines"]
    assert timelines and timelines[0]["extra"]["files"] == {
        "wikidata": len(list((world / "mirror" / "wikidatawiki").rglob("*.7z"))),
        "wikipedia": len(list((world / "mirror" / "enwiki").rglob("*.7z")))}
    # both dump dates' extraction was mapped: the newer date's after the older one's commit
    states = {(t["task_id"], t["map_index"]): t["state"] for t in tasks}
    for kind in ("wikidata", "wikipedia"):
        assert states[(f"{kind}.extract_newer", 0)] == "success"
        assert states[(f"{kind}.commit_newer", -1)] == "success"
    # a second run finds every file done: no group to map, nothing newer, nothing read
    again = airflow.trigger("emerge_ingest")
    airflow.wait("emerge_ingest", [again], timeout=600)
    states = {t["task_id"]: t["state"] for t in airflow.tasks("emerge_ingest", again)}
    for kind in ("wikidata", "wikipedia"):
        assert states[f"{kind}.commit"] == "success", states
        for task in ("extract", "extract_newer", "commit_newer"):
            assert states[f"{kind}.{task}"] == "skipped", states
    events = airflow.get("/assets/events", order_by="-timestamp")["asset_events"]
    timelines = [e for e in events if e["uri"] == "emerge://warehouse/timelines"]
    assert timelines[0]["extra"]["files"] == {"wikidata": 0, "wikipedia": 0}
    assert {r["dump_file"] for r in warehouse.read_arrow("ingested_files").to_pylist()} == files


def test_a_backfill_of_two_quarters_side_by_side(airflow: LocalAirflow, warehouse: Catalog,
                                                 world: Path) -> None:
    # the latest quarter's run waits for its data (and keeps waiting: backfill runs do not
    # count against the DAG's max_active_runs)
    scheduled = airflow.unpause("emerge_snapshot")
    assert quarterly(scheduled["logical_date"], {1, 4, 7, 10})
    assert scheduled["tasks"]["wait_for_inputs"] == "deferred"
    stability = warehouse.version("stable_statements")
    backfill = airflow.post("/backfills", {
        "dag_id": "emerge_snapshot", "from_date": SNAPSHOTS[0], "to_date": SNAPSHOTS[1],
        "max_active_runs": 2, "reprocess_behavior": "none", "run_backwards": False,
        "dag_run_conf": {}})
    assert backfill["max_active_runs"] == 2
    runs = [r for r in airflow.wait("emerge_snapshot", count=2, timeout=1800)
            if r["run_type"] == "backfill"]
    assert sorted(r["logical_date"][:10] for r in runs) == ["2024-01-01", "2024-04-01"]
    assert all(r["run_type"] == "backfill" for r in runs)
    (a, b) = sorted((r["start_date"], r["end_date"]) for r in runs)
    assert b[0] < a[1], "the two backfill runs did not run side by side"
    print(f"newcomer path: the two-quarter backfill took {seconds(a[0], b[1]):.0f}s")
    RUNS["backfill"] = ("emerge_snapshot", [r["dag_run_id"] for r in runs])
    assert warehouse.version("stable_statements") == stability  # the ingest DAG's alone
    # what the two runs built side by side is the world's planted truth, exactly (that the
    # DAG's tasks build `emerge build`'s bytes is system/demo/test_dagtest.py's), and each
    # release verifies against its manifest and says how the gate ruled
    got, _ = produced(warehouse)
    assert got == expected(world) and {k[3] for k in got} == {"X", "E", "EE", "EE-KG", "D"}
    for t in SNAPSHOTS:
        released = world / "releases" / f"snapshot_{t[:10]}"
        assert verify_release(released).ok
        manifest = json.loads((released / "manifest.json").read_text())
        assert manifest["validation"]["success"] is True, manifest["validation"]
        lines = [json.loads(x) for f in released.glob("corpus/snapshot_*/delta_*.jsonl")
                 for x in f.read_text().splitlines()]
        # the instances of the lines select kept (s07's guards refuse one planted line)
        snap = [("snapshot", "=", t)]
        kept = {(r["window"], r["passage_id"]) for r in warehouse.read_arrow(
            "selection", filters=snap).to_pylist() if r["kept"]}
        assert sum(len(tr["tkgu_operations"]) for line in lines
                   for tr in line["tkgu_triples"]) == sum(
            (r["window"], r["passage_id"]) in kept
            for r in warehouse.read_arrow("instances", filters=snap).to_pylist())


def seconds(start: str, end: str) -> float:
    return (datetime.fromisoformat(end) - datetime.fromisoformat(start)).total_seconds()


def test_a_custom_run_goes_on_beside_the_waiting_scheduled_run(airflow: LocalAirflow,
                                                                world: Path) -> None:
    """A manual run with a custom snapshot and windows, while the DAGs are unpaused (the
    scheduled run of the latest quarter waits deferred beside it): it does not queue."""
    scheduled = [r for r in airflow.runs("emerge_snapshot") if r["run_type"] == "scheduled"]
    assert scheduled and scheduled[0]["state"] == "running"
    run_id = airflow.trigger("emerge_snapshot", {"snapshot": "2024-01-15T00:00:00Z",
                                                 "windows": 2})
    (run,) = airflow.wait("emerge_snapshot", [run_id], timeout=900)
    print(f"newcomer path: the custom run took {seconds(run['start_date'], run['end_date']):.0f}s")
    RUNS["custom run"] = ("emerge_snapshot", [run_id])
    release = world / "releases" / "snapshot_2024-01-15"
    deltas = sorted(p.name for p in release.glob("corpus/snapshot_2024-01-15/delta_*.jsonl"))
    assert deltas == ["delta_2024-01-22.jsonl", "delta_2024-01-29.jsonl"]
    assert [t["state"] for t in airflow.tasks("emerge_snapshot", scheduled[0]["dag_run_id"])
            if t["task_id"] == "wait_for_inputs"] == ["deferred"]


def test_the_releases_are_the_celery_executors(airflow: LocalAirflow, world: Path,
                                               request) -> None:
    """The same world, configuration and code under the CeleryExecutor
    (test_dags_celery.py) gives the same three releases, file for file: whichever of
    the two modules finishes second compares (and says the step times beside)."""
    from airflowkit import (
        code_key,
        file_step_times,
        release_digests,
        same_release_as_the_other_executor,
        step_times,
    )

    mine = release_digests(world / "releases")
    cache = Path(request.config.cache.mkdir("emerge-executors"))
    print(file_step_times(cache, "local", {
        phase: step_times(airflow, dag_id, ids) for phase, (dag_id, ids) in RUNS.items()},
        code_key(repr(SMALL))))
    other = same_release_as_the_other_executor(cache, "local", mine, code_key(repr(SMALL)))
    if other is None:
        print("newcomer path: the CeleryExecutor's releases of this code are not filed yet: "
              "test_dags_celery.py compares when it finishes")
        return
    name, theirs = other
    assert mine == theirs, f"the {name} executor's releases differ"
    print(f"newcomer path: the releases are the {name} executor's, file for file")


def test_rerunning_one_task_leaves_the_tables_unchanged(airflow: LocalAirflow,
                                                        warehouse: Catalog,
                                                        world: Path) -> None:
    run_id = "backfill__2024-04-01T00:00:00+00:00"
    before = table_rows(warehouse)
    release = world / "releases" / "snapshot_2024-04-01"
    files = {p: p.read_bytes() for p in release.rglob("*") if p.is_file()}
    version = warehouse.version("delta_triples")
    airflow.post("/dags/emerge_snapshot/clearTaskInstances", {
        "dry_run": False, "dag_run_id": run_id, "task_ids": ["deltas"], "only_failed": False,
        "reset_dag_runs": True, "include_downstream": False})
    airflow.wait("emerge_snapshot", [run_id], timeout=900)
    deltas = next(t for t in airflow.tasks("emerge_snapshot", run_id) if t["task_id"] == "deltas")
    assert deltas["try_number"] == 2 and deltas["state"] == "success"
    assert warehouse.version("delta_triples") > version  # it did write again...
    assert table_rows(warehouse) == before  # ...the same rows
    assert {p: p.read_bytes() for p in files} == files


def test_a_retry_beside_its_stuck_try(airflow: LocalAirflow, warehouse: Catalog,
                                     world: Path, tmp_path: Path) -> None:
    """A try Airflow gave up on (its worker lost its heartbeat) that goes on running beside
    the retry the scheduler starts. The stuck try is the task's body run outside the
    scheduler's books (tests/kits/stuck_try.py: the same run's params, logical date and
    chosen dump, the same configuration and warehouse; no state reported), started first;
    the retry is the scheduler's, asked for at once through the REST API. Both finish, each having
    written, and the tables and the release are those of one run."""
    run_id = "backfill__2024-04-01T00:00:00+00:00"
    before = table_rows(warehouse)
    release = world / "releases" / "snapshot_2024-04-01"
    files = {p: p.read_bytes() for p in release.rglob("*") if p.is_file()}
    version = warehouse.version("instances")
    tries = {t["task_id"]: t["try_number"] for t in airflow.tasks("emerge_snapshot", run_id)}
    run = airflow.get(f"/dags/emerge_snapshot/dagRuns/{run_id}")
    params = {name: p["default"] for name, p in SnapshotRun.params_of("snapshot").items()}
    params.update(run["conf"] or {})
    chosen = airflow.client.get(f"/dags/emerge_snapshot/dagRuns/{run_id}/taskInstances/"
                                "wait_for_inputs/xcomEntries/dump_date")
    if chosen.status_code != 404:  # the dump the run's wait chose for it to ingest, if any
        chosen.raise_for_status()
        params["dump_date"] = chosen.json()["value"]
    (tmp_path / "run.json").write_text(json.dumps({"params": params,
                                                   "logical_date": run["logical_date"]}))
    script = Path(__file__).parents[1] / "kits" / "stuck_try.py"
    stuck = subprocess.Popen([sys.executable, str(script), "align", str(tmp_path / "run.json")],
                             env=airflow.cli_env(), stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True)
    try:
        airflow.post("/dags/emerge_snapshot/clearTaskInstances", {
            "dry_run": False, "dag_run_id": run_id, "task_ids": ["align"],
            "only_failed": False, "reset_dag_runs": True, "include_downstream": False})
        airflow.wait("emerge_snapshot", [run_id], timeout=900)
        output, _ = stuck.communicate(timeout=900)
    finally:
        stuck.kill()
    assert stuck.returncode == 0, output[-3000:]
    assert "stage align" in output, output[-3000:]  # the stuck try ran the stage itself
    align = next(t for t in airflow.tasks("emerge_snapshot", run_id) if t["task_id"] == "align")
    assert (align["try_number"], align["state"]) == (tries["align"] + 1, "success")
    assert warehouse.version("instances") >= version + 2  # both wrote...
    assert table_rows(warehouse) == before  # ...and the tables hold one run's rows
    assert {p: p.read_bytes() for p in files} == files


def test_the_grid_view_shows_the_runs(airflow: LocalAirflow, world: Path, tmp_path: Path) -> None:
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        pytest.skip("Debian's chromium is not installed (.ci/run installs it)")
    url = f"{airflow.url}/dags/emerge_snapshot"  # the grid is the DAG page's first view
    flags = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
             "--window-size=1600,1000", "--virtual-time-budget=25000"]
    png = tmp_path / "emerge_snapshot-grid.png"
    shot = subprocess.run([*flags, f"--screenshot={png}", url], capture_output=True, text=True,
                          timeout=240)
    assert png.is_file() and png.stat().st_size > 10_000, shot.stderr[-2000:]
    dom = subprocess.run([*flags, "--dump-dom", url], capture_output=True, text=True,
                         timeout=240).stdout
    (tmp_path / "grid.html").write_text(dom)
    # the runs' state: no failed run or task in the overview, a cell per task instance of
    # every run (the backfill's two, the custom run, the scheduled run waiting), and the
    # success mark on exactly the task instances that succeeded
    text = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", dom))
    assert "0 Failed Tasks" in text and "0 Failed Runs" in text, text[:3000]
    succeeded = 0
    runs = airflow.runs("emerge_snapshot")
    assert sorted(r["run_type"] for r in runs) == ["backfill", "backfill", "manual",
                                                   "scheduled"]
    for run in runs:
        assert f'href="/dags/emerge_snapshot/runs/{run["dag_run_id"]}' in dom
        for ti in airflow.tasks("emerge_snapshot", run["dag_run_id"]):
            assert f'data-testid="grid-{run["dag_run_id"]}-{ti["task_id"]}"' in dom
            succeeded += ti["state"] == "success"
    check_mark = re.findall(r'data-testid="task-state-badge"[^>]*><svg[^>]*><path d="([^"]+)"',
                            dom).count(SUCCESS_ICON)
    assert check_mark == succeeded > 0  # every successful task shows the success icon
    kept = world / "emerge_snapshot-grid.png"
    shutil.copy(png, kept)
    print(f"grid view: {kept}")
    if os.environ.get("EMERGE_SCREENSHOTS"):  # docs/images/, refreshed by hand (docs/operations.md)
        shutil.copy(png, Path(os.environ["EMERGE_SCREENSHOTS"]) / "airflow-snapshot-grid.png")


def test_the_release_task_links_to_its_card_and_validation_results(
        airflow: LocalAirflow, tmp_path: Path) -> None:
    """plugins/emerge.py under the real api-server: the release task's page (the grid
    beside it) shows the Dataset card and Validation results links, which open the
    release's card.html and validation/results.json; a screenshot in headless Chromium."""
    import httpx

    run_id = "backfill__2024-01-01T00:00:00+00:00"
    links = airflow.get(f"/dags/emerge_snapshot/dagRuns/{run_id}/taskInstances/release/"
                        "links")["extra_links"]
    assert links["Published manifest"] is None  # nothing was published
    for name, check in (("Dataset card", "EMERGE"), ("Validation results", '"snapshots"')):
        assert links[name] and links[name].startswith("/emerge/runs/emerge_snapshot/"), links
        page = httpx.get(airflow.url + links[name], timeout=60)
        assert page.status_code == 200 and check in page.text, (name, page.status_code)
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        pytest.skip("Debian's chromium is not installed (.ci/run installs it)")
    # the task's Details tab draws its Extra Links (its first tab is the log)
    url = f"{airflow.url}/dags/emerge_snapshot/runs/{run_id}/tasks/release/details"
    flags = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
             "--window-size=1600,1000", "--virtual-time-budget=25000"]
    dom = subprocess.run([*flags, "--dump-dom", url], capture_output=True, text=True,
                         timeout=240).stdout
    for name in ("Dataset card", "Validation results"):  # the buttons, with their targets
        assert re.search(rf'<a [^>]*href="{re.escape(links[name])}"[^>]*>{name}</a>', dom), name
    assert "Published manifest" not in dom  # a link without a target is not drawn
    png = tmp_path / "emerge_snapshot-release-links.png"
    shot = subprocess.run([*flags, f"--screenshot={png}", url], capture_output=True, text=True,
                          timeout=240)
    assert png.is_file() and png.stat().st_size > 10_000, shot.stderr[-2000:]
    if os.environ.get("EMERGE_SCREENSHOTS"):  # docs/images/, refreshed by hand
        shutil.copy(png, Path(os.environ["EMERGE_SCREENSHOTS"]) / "airflow-release-links.png")


def test_published_releases_are_evaluated(airflow: LocalAirflow, world: Path) -> None:
    from emerge_lib.evaluation.data import read_gold

    lines = []
    for t in SNAPSHOTS:
        for i in read_gold(world / "releases" / f"snapshot_{t[:10]}"):
            lines.append(json.dumps({"hash_id": i.hash_id, "model": "oracle", "predicted": [
                {"triple": list(x.triple), "operation": None} for x in i.triples]}))
    (world / "predictions.jsonl").write_text("\n".join(lines) + "\n")
    airflow.unpause("emerge_evaluate")
    release = next(a for a in airflow.get("/assets")["assets"] if a["name"] == "emerge_release")
    # what emerge_snapshot's publish task emits, one event per quarter; each posted once
    # the run of the one before exists (an event that lands while the scheduler creates a
    # run can miss that run and the next: an Airflow race, not the DAG's)
    for t in SNAPSHOTS:
        folder = world / "releases" / f"snapshot_{t[:10]}"
        version = json.loads((folder / "manifest.json").read_text())["version"]
        event = airflow.post("/assets/events", {"asset_id": release["id"], "extra": {
            "snapshot": t, "release_dir": str(folder), "version": version}})
        deadline = time.monotonic() + 300
        while not airflow.event_runs(event["id"]):
            assert time.monotonic() < deadline, f"no evaluation run for {t}"
            time.sleep(2)
    deadline = time.monotonic() + 900
    summaries: dict[str, list[Path]] = {}
    while time.monotonic() < deadline:
        runs = airflow.runs("emerge_evaluate")
        summaries = {t: list((world / "evaluation" / t[:10]).glob("*/summary.json"))
                     for t in SNAPSHOTS}
        if runs and all(r["state"] in ("success", "failed") for r in runs) and all(
                summaries.values()):
            break
        time.sleep(3)
    for r in runs:
        assert r["state"] == "success", airflow.explain("emerge_evaluate", r["dag_run_id"])
        assert r["run_type"] == "asset_triggered"
    assert len(runs) == 2
    for t in SNAPSHOTS:
        assert len(summaries[t]) == 1, t
        rows = json.loads(summaries[t][0].read_text())
        recall = {r["operation"]: r["value"] for r in rows
                  if r["model"] == "oracle" and r["metric"] == "recall"}
        assert recall and set(recall.values()) == {1.0}, (t, recall)  # the oracle's


def test_one_evaluation_run_loops_over_every_triggering_event(world: Path, monkeypatch) -> None:
    """Events that arrive between two runs become one run: the task scores each."""
    from types import SimpleNamespace

    from emerge_lib.airflow.assets import RELEASE
    from emerge_lib.airflow.runtime import evaluate_task

    monkeypatch.setenv("EMERGE_CONFIG", str(world / "config.yaml"))
    monkeypatch.setattr("emerge_lib.airflow.hooks.connection_overrides", lambda: {})
    events = []
    for t in SNAPSHOTS:
        folder = world / "releases" / f"snapshot_{t[:10]}"
        events.append(SimpleNamespace(extra={"snapshot": t, "release_dir": str(folder),
                                             "version": "merged"}))
    out = evaluate_task({"params": {}, "triggering_asset_events": {RELEASE: events}}, RELEASE)
    assert [o["snapshot"] for o in out] == list(SNAPSHOTS)
    for t in SNAPSHOTS:
        assert (world / "evaluation" / t[:10] / "merged" / "summary.json").is_file()


def test_cancelling_a_backfill_ends_its_waiting_run(airflow: LocalAirflow, world: Path) -> None:
    """A backfill run waiting (deferred) for a dump still being written: Airflow's cancel
    fails only queued runs, so the wait's trigger watches the backfill through the REST
    API (the emerge_airflow_api connection `make airflow` sets) and ends the run itself,
    naming the backfill."""
    for wiki in ("wikidatawiki", "enwiki"):  # a dump the mirror lists, still being written
        folder = world / "mirror" / wiki / "20241201"
        folder.mkdir(parents=True)
        (folder / "dumpstatus.json").write_text(json.dumps({"version": "0.8", "jobs": {
            "metahistorybz2dump": {"status": "in-progress", "updated": "2024-12-02 10:00:00",
                                   "files": {}}}}))
    backfill = airflow.post("/backfills", {
        "dag_id": "emerge_snapshot", "from_date": "2024-10-01T00:00:00Z",
        "to_date": "2024-10-01T00:00:00Z", "max_active_runs": 1, "reprocess_behavior": "none",
        "run_backwards": False, "dag_run_conf": {"dump_date": "20241201"}})
    deadline = time.monotonic() + 120
    while True:
        runs = [r for r in airflow.runs("emerge_snapshot") if r["run_type"] == "backfill"
                and r["logical_date"].startswith("2024-10-01")]
        states = {t["task_id"]: t["state"] for t in (
            airflow.tasks("emerge_snapshot", runs[0]["dag_run_id"]) if runs else [])}
        if states.get("wait_for_inputs") == "deferred":
            break
        assert "failed" not in states.values(), airflow.explain("emerge_snapshot",
                                                                runs[0]["dag_run_id"])
        assert time.monotonic() < deadline, f"the backfill run does not wait: {states}"
        time.sleep(2)
    run_id = runs[0]["dag_run_id"]
    cancelled = time.monotonic()
    assert airflow.put(f"/backfills/{backfill['id']}/cancel")["completed_at"]
    while (run := next(r for r in airflow.runs("emerge_snapshot")
                       if r["dag_run_id"] == run_id))["state"] == "running":
        assert time.monotonic() < cancelled + 60, "the cancelled backfill's run still waits"
        time.sleep(2)
    took = time.monotonic() - cancelled
    print(f"newcomer path: a cancelled backfill's waiting run failed {took:.0f}s after the "
          "cancel")
    assert run["state"] == "failed"
    states = {t["task_id"]: t["state"] for t in airflow.tasks("emerge_snapshot", run_id)}
    assert states["wait_for_inputs"] == "failed" and states["snapshot"] != "success"
    logs = "".join(p.read_text(errors="replace") for p in (
        airflow.home / "logs" / "dag_id=emerge_snapshot" / f"run_id={run_id}").rglob("*.log"))
    assert "a cancel of it ends this wait" in logs, logs[-3000:]  # the task, deferring
    assert (f"stopped waiting: backfill {backfill['id']} of emerge_snapshot (2024-10-01 to "
            "2024-10-01) was cancelled at") in logs, logs[-3000:]  # the task, resumed


def test_a_backfill_no_dump_covers_fails_at_once_naming_the_dump(airflow: LocalAirflow) -> None:
    """2024-07-01's last window ends 2024-08-05: the world's dumps (20240220, 20240520)
    cannot cover it, so its backfill run fails in its wait, at once, saying so."""
    started = time.monotonic()
    airflow.post("/backfills", {
        "dag_id": "emerge_snapshot", "from_date": "2024-07-01T00:00:00Z",
        "to_date": "2024-07-01T00:00:00Z", "max_active_runs": 1, "reprocess_behavior": "none",
        "run_backwards": False, "dag_run_conf": {}})
    deadline = started + 120
    while True:
        runs = [r for r in airflow.runs("emerge_snapshot") if r["run_type"] == "backfill"
                and r["logical_date"].startswith("2024-07-01")]
        if runs and runs[0]["state"] in ("success", "failed"):
            break
        assert time.monotonic() < deadline, f"the uncovered backfill still runs: {runs}"
        time.sleep(2)
    took = time.monotonic() - started
    print(f"newcomer path: the uncovered backfill failed after {took:.0f}s")
    assert runs[0]["state"] == "failed"
    states = {t["task_id"]: t["state"] for t in airflow.tasks("emerge_snapshot",
                                                              runs[0]["dag_run_id"])}
    assert states["wait_for_inputs"] == "failed" and states["snapshot"] != "success"
    log = airflow.explain("emerge_snapshot", runs[0]["dag_run_id"])
    assert "needs wikidatawiki and enwiki dumps from 20240805 or later" in log, log
    assert "the configured dump dates: 20240220, 20240520" in log, log
