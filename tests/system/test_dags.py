"""The DAG files and the Airflow glue, without a scheduler: they import cleanly (DagBag and
the CLI), the snapshot DAG is the stage registry in its order, params validate, the
snapshot of a run is resolved from params, an Asset event or the logical date (never
``{{ ds }}``), only retryable errors are retried, and connections become configuration."""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from datetime import datetime, timedelta
from pathlib import Path
from types import SimpleNamespace

import pytest
from repo import REPO


@pytest.fixture(scope="module")
def dagbag():
    from airflow.dag_processing.dagbag import DagBag

    return DagBag(dag_folder=str(REPO / "dags"))


def test_the_dag_files_import_without_errors(dagbag) -> None:
    assert dagbag.import_errors == {}
    assert set(dagbag.dag_ids) == {"emerge_dumps", "emerge_ingest", "emerge_snapshot",
                                   "emerge_evaluate", "emerge_incr"}


def test_the_incr_dag_is_one_task_a_day_caught_up_in_order(dagbag) -> None:
    """emerge_incr: daily at midnight, missed days caught up, one run at a time (a writer
    of the timelines), one task that emits the timelines Asset; the run of a day's
    midnight reads the increment of the day before."""
    import pendulum

    from emerge_lib.airflow.assets import TIMELINES
    from emerge_lib.airflow.runtime import incr_day

    dag = dagbag.dags["emerge_incr"]
    assert dag.catchup and dag.max_active_runs == 1
    assert (dag.timetable.expression, str(dag.timetable.timezone)) == ("0 0 * * *", "UTC")
    (task,) = dag.tasks
    assert task.task_id == "ingest_increment" and task.retries == 12
    assert [a.name for a in task.outlets] == [TIMELINES.name]
    assert incr_day({"logical_date": pendulum.datetime(2024, 3, 1, tz="UTC")}) == "20240229"


def test_the_cli_lists_no_import_errors(airflow_db) -> None:
    proc = subprocess.run([str(Path(sys.executable).parent / "airflow"), "dags",
                           "list-import-errors", "--local", "-o", "json"],
                          capture_output=True, text=True, timeout=300, env=os.environ.copy())
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert json.loads(proc.stdout.strip().splitlines()[-1] or "[]") == []


def test_the_snapshot_dag_is_the_registry_in_order(dagbag) -> None:
    from airflow.sdk import CronTriggerTimetable

    from emerge_lib.airflow.assets import PUBLISHED, RELEASE, TIMELINES
    from emerge_lib.pipeline.registry import STAGES

    dag = dagbag.dags["emerge_snapshot"]
    # publish follows the rest; evaluate and reconcile are not part of a build
    stages = [name for name, st in STAGES.items() if st.in_build and name != "publish"]
    assert stages[:3] == ["ingest_wikidata", "ingest_wikipedia", "stability"]
    assert stages.index("snapshot") < stages.index("curate") < stages.index("release")
    # the final judge asks after the selection (the kept lines), before the gate
    assert stages.index("select") + 1 == stages.index("final_judge") < stages.index("validate")
    # curate and the final judge are two tasks side by side each, one per model, each in
    # its model's pool and queue
    llm = {name: {f"{name}_{judge}" for judge in ("additions", "deprecations")}
           for name in ("curate", "final_judge")}
    order = ["wait_for_inputs", *stages, "publish"]
    steps = [llm.get(name, {name}) for name in order]
    assert set(dag.task_ids) == set().union(*steps)
    for upstream, downstream in zip(steps, steps[1:], strict=False):
        for name in downstream:
            assert dag.get_task(name).upstream_task_ids == upstream, name
    for name in set().union(*steps[1:]):
        task = dag.get_task(name)
        assert task.trigger_rule == "none_failed", name  # a skipped curate does not stop it
        assert task.retries == 3 and task.retry_exponential_backoff, name
        assert task.execution_timeout and task.execution_timeout <= timedelta(days=3), name
    for name in llm:
        for judge in ("additions", "deprecations"):
            task = dag.get_task(f"{name}_{judge}")
            assert task.pool == task.queue == f"emerge_llm_{judge}"
    asking = set().union(*llm.values())
    assert {t.pool for t in dag.tasks if t.task_id not in asking} == {"default_pool"}
    assert {t.queue for t in dag.tasks if t.task_id not in asking} == {"default"}
    # every built release is an event (emerge_evaluate follows it), every published one too
    assert dag.get_task("release").outlets == [RELEASE]
    assert dag.get_task("publish").outlets == [PUBLISHED]
    assert dag.get_task("wait_for_inputs").inlets == [TIMELINES]
    assert isinstance(dag.timetable, CronTriggerTimetable)
    assert (dag.timetable.expression, str(dag.timetable.timezone)) == ("0 0 1 1,4,7,10 *", "UTC")
    # a scheduled run waiting for its dump leaves room for manual runs beside it
    assert dag.max_active_runs == 4 and dag.catchup is False


def test_emerge_is_a_provider_whose_connection_types_airflow_lists() -> None:
    """The Airflow glue is found through the installed package's provider entry point
    (no plugins folder on sys.path): the connection form offers emerge's two types."""
    from airflow.providers_manager import ProvidersManager
    from airflow.sdk.providers_manager_runtime import ProvidersManagerTaskRuntime

    assert "emerge-tkgu" in ProvidersManager().providers
    hooks = ProvidersManagerTaskRuntime().hooks
    assert hooks["emerge_engine"].hook_class_name == "emerge_lib.airflow.hooks.EngineHook"
    assert hooks["emerge_llm"].hook_class_name == "emerge_lib.airflow.hooks.LLMWorkersHook"
    assert hooks["emerge_llm"].hook_name == "emerge LLM workers"


def test_params_are_the_runs_declaration(dagbag) -> None:
    """Each DAG's params are generated from SnapshotRun's fields: the same names,
    defaults and descriptions, so the trigger form and the tasks read one definition."""
    from emerge_lib.pipeline.runs import SnapshotRun

    for dag_id, which in (("emerge_snapshot", "snapshot"), ("emerge_ingest", "ingest")):
        declared = SnapshotRun.params_of(which)
        params = dagbag.dags[dag_id].params
        assert set(declared) <= set(params), dag_id
        for name, p in declared.items():
            assert params.get_param(name).description == p["description"], name
            assert params[name] == p["default"], name
    assert set(dagbag.dags["emerge_ingest"].params) - set(SnapshotRun.params_of("ingest")) == {
        "max_tasks"}


def test_params_have_valid_defaults_and_refuse_bad_values(dagbag) -> None:
    from airflow.sdk.exceptions import ParamValidationError

    def merged(params, values):
        out = copy.deepcopy(params)
        out.update(values)  # each value is checked as it is set
        return out

    dag = dagbag.dags["emerge_snapshot"]
    assert dag.params.validate()["snapshot"] is None  # a scheduled run takes the logical date
    expected = {"snapshot", "windows", "window_days", "wikidata_files", "wikipedia_files",
                "mirror", "dump_date", "config", "curate", "publish", "release_to",
                "release_dir"}
    assert set(dag.params) == expected
    ok = merged(dag.params, {"snapshot": "2024-04-01T00:00:00Z", "windows": 3,
                                "wikidata_files": ["a.bz2"], "curate": True,
                                "release_to": "s3://emerge/releases"})
    assert ok.validate()["windows"] == 3
    for bad in ({"dump_date": "2024-06"}, {"windows": 0}, {"release_to": "/tmp/x"},
                {"wikidata_files": "a.bz2"}, {"publish": "yes"}, {"curate": "yes"}):
        with pytest.raises(ParamValidationError):
            merged(dag.params, bad).validate()
    ingest = dagbag.dags["emerge_ingest"]
    assert ingest.params.validate()["max_tasks"] <= 1024
    with pytest.raises(ParamValidationError):
        merged(ingest.params, {"max_tasks": 1025}).validate()


def test_the_ingest_dag_maps_extraction_and_emits_the_timelines(dagbag) -> None:
    from airflow.sdk.definitions.mappedoperator import MappedOperator

    from emerge_lib.airflow.assets import DUMPS, TIMELINES

    dag = dagbag.dags["emerge_ingest"]
    for kind in ("wikidata", "wikipedia"):
        assert isinstance(dag.get_task(f"{kind}.extract"), MappedOperator)
        assert dag.get_task(f"{kind}.plan").upstream_task_ids == {"wait_for_dump"}
        # the next dump date's extraction is mapped too, after the older one's commit
        newer = dag.get_task(f"{kind}.extract_newer")
        assert isinstance(newer, MappedOperator)
        assert newer.upstream_task_ids == {f"{kind}.commit"}
        commit_newer = dag.get_task(f"{kind}.commit_newer")
        assert commit_newer.upstream_task_ids == {f"{kind}.extract_newer", f"{kind}.plan"}
        assert commit_newer.trigger_rule == "all_success"  # skipped with no newer date
    assert dag.get_task("stability").upstream_task_ids == {"wikidata.commit_newer",
                                                            "wikipedia.commit_newer"}
    assert dag.get_task("wikipedia.extract").upstream_task_ids == {"wikipedia.plan"}
    assert dag.get_task("stability").outlets == [TIMELINES]
    # started by the dumps Asset: no run of the writer of the timelines waits weeks for a
    # dump; the quarterly wait is emerge_dumps'
    assert [a.name for a in dag.timetable.asset_condition.objects] == ["emerge_dumps"]
    assert dag.max_active_runs == 1
    dumps = dagbag.dags["emerge_dumps"]
    assert dumps.timetable.expression == "0 0 1 3,6,9,12 *"
    assert dumps.get_task("announce").outlets == [DUMPS]
    assert dumps.get_task("announce").upstream_task_ids == {"wait_for_dump"}
    evaluate = dagbag.dags["emerge_evaluate"]
    assert [a.name for a in evaluate.timetable.asset_condition.objects] == ["emerge_release"]


def test_assets_are_declared_once() -> None:
    hits = [str(p.relative_to(REPO)) for folder in ("dags", "emerge_lib")
            for p in (REPO / folder).rglob("*.py") if "Asset(" in p.read_text()]
    assert hits == ["emerge_lib/airflow/assets.py"]


def test_a_step_input_named_plan_reaches_the_step(tmp_path: Path) -> None:
    """The ingest DAG's commit tasks hand their step an input named ``plan`` (the plan as
    JSON): it goes to the step, not to the door's snapshot argument."""
    from emerge_lib.airflow.runtime import _through_the_door
    from emerge_lib.core.config import Config
    from emerge_lib.pipeline.context import open_context

    with open_context(Config(warehouse=str(tmp_path / "wh")), engine=False) as ctx:
        result = _through_the_door(ctx, "ingest_wikidata", None, "commit", plan=None,
                                   summaries=[], newer=None)
    assert result.step == "commit" and result.note == "no input files"


def test_the_snapshot_of_a_run() -> None:
    from airflow.sdk.exceptions import AirflowFailException

    from emerge_lib.airflow.runtime import resolve_snapshot

    quarter = datetime(2024, 4, 1, tzinfo=datetime.now().astimezone().tzinfo).astimezone()
    event = SimpleNamespace(extra={"snapshot": "2023-10-01T00:00:00Z"})
    assert resolve_snapshot({"params": {"snapshot": "2024-07-01T00:00:00Z"},
                             "logical_date": quarter}) == "2024-07-01T00:00:00Z"
    assert resolve_snapshot({"params": {}, "logical_date": None,
                             "triggering_asset_events": {"a": [event]}}) == "2023-10-01T00:00:00Z"
    assert resolve_snapshot({"params": {"snapshot": None},
                             "logical_date": quarter}) == quarter.isoformat()
    with pytest.raises(AirflowFailException, match="params.snapshot"):
        resolve_snapshot({"params": {}, "logical_date": None})  # a manual run without one


def test_only_retryable_errors_are_retried() -> None:
    from airflow.sdk.exceptions import AirflowFailException

    from emerge_lib.airflow.runtime import verdicts
    from emerge_lib.catalog import CommitConflictError
    from emerge_lib.core.errors import EmergeError, InputError

    with pytest.raises(CommitConflictError), verdicts():
        raise CommitConflictError("lost a commit race")
    with pytest.raises(EmergeError), verdicts():
        raise EmergeError("mirror down", retryable=True)
    for exc in (InputError("bad file"), ValueError("a bug")):
        with pytest.raises(AirflowFailException) as info, verdicts():
            raise exc
        assert str(exc) in str(info.value)


def test_connections_become_configuration(monkeypatch) -> None:
    from airflow.sdk import BaseHook, Connection
    from airflow.sdk.exceptions import AirflowNotFoundException

    from emerge_lib.airflow import hooks

    conns = {
        "emerge_engine": Connection(conn_id="emerge_engine", conn_type="generic",
                                    host="sail.internal", port=50051, password="tok",
                                    extra=json.dumps({"params": {"use_ssl": "true"}})),
        "emerge_llm": Connection(conn_id="emerge_llm", conn_type="http", host="vllm", port=8000,
                                 extra=json.dumps({"concurrency": 256, "deprecations": {
                                     "url": "http://vllm-405b:8000/v1",
                                     "api_key": "nested-route-key-0123"}})),
        "emerge_s3": Connection(conn_id="emerge_s3", conn_type="aws", login="key",
                                password="secret", extra=json.dumps(
                                    {"endpoint_url": "http://127.0.0.1:8333",
                                     "region_name": "eu-west-1"})),
    }

    def get(conn_id):
        if conn_id not in conns:
            raise AirflowNotFoundException(conn_id)
        return conns[conn_id]

    monkeypatch.setattr(BaseHook, "get_connection", classmethod(lambda cls, c: get(c)))
    got = hooks.connection_overrides()
    assert got["engine"] == {"url": "sc://sail.internal:50051/;use_ssl=true;token=tok"}
    curation = got["curation"]
    assert curation["concurrency"] == 256
    assert curation["additions"] == {"url": "http://vllm:8000/v1"}
    assert curation["deprecations"] == {"url": "http://vllm-405b:8000/v1",
                                        "api_key": "nested-route-key-0123"}
    # the connections' secrets, a route's own key too, masked by emerge and by Airflow
    from airflow.sdk._shared.secrets_masker import redact as airflow_redact

    from emerge_lib.core.logs import redact

    for secret in ("secret", "nested-route-key-0123"):  # (a shorter one masks no word)
        line = f"an error quoting {secret}!"
        assert secret not in airflow_redact(line) and secret not in redact(line), secret
    assert got["s3"] == {"endpoint_url": "http://127.0.0.1:8333", "region": "eu-west-1",
                         "access_key_id": "key", "secret_access_key": "secret"}
    from emerge_lib.pipeline.runs import SnapshotRun

    cfg = SnapshotRun.from_params({}, "2024-04-01", got).settings()  # the config accepts them
    assert cfg.engine.url.startswith("sc://sail.internal") and cfg.s3.region == "eu-west-1"
    assert cfg.curation.deprecations.url == "http://vllm-405b:8000/v1"
    assert cfg.curation.deprecations.name == "Meta-Llama-3.1-405B"  # the judge keeps its name
    conns["emerge_engine"] = Connection(conn_id="emerge_engine", conn_type="generic",
                                        host="embedded", extra='{"mode": "local-cluster"}')
    assert hooks.EngineHook().overrides() == {"engine": {"url": "embedded",
                                                         "mode": "local-cluster"}}
    conns.clear()
    assert hooks.connection_overrides() == {}  # no connections: the configuration decides


def test_a_task_resolves_its_run_once(tmp_path: Path, monkeypatch) -> None:
    """The publish, release and stability tasks (a publish task read the YAML four times
    and asked the connections twice): the run is built once from the context
    (runtime.task_run: each connection asked once, the configuration file read once) and
    the task bodies take it; the stage itself is stood in for here."""
    import yaml
    from airflow.sdk import BaseHook, Connection
    from airflow.sdk.exceptions import AirflowNotFoundException

    from emerge_lib.airflow import runtime
    from emerge_lib.airflow.assets import PUBLISHED, RELEASE, TIMELINES
    from emerge_lib.airflow.operators import ReleaseStep

    config = tmp_path / "emerge.yaml"
    config.write_text(f"# the run's file\nwarehouse: {tmp_path / 'wh'}\n")
    monkeypatch.setenv("EMERGE_CONFIG", str(config))
    monkeypatch.setenv("EMERGE_RELEASE_ROOT", str(tmp_path / "releases"))
    asked: list[str] = []
    reads: list[str] = []

    def get(cls, conn_id):
        asked.append(conn_id)
        if conn_id != "emerge_s3":
            raise AirflowNotFoundException(conn_id)
        return Connection(conn_id="emerge_s3", conn_type="aws", login="key", password="secret",
                          extra=json.dumps({"endpoint_url": "http://127.0.0.1:8333"}))

    safe_load = yaml.safe_load

    def counted(text, *a, **k):
        if isinstance(text, str) and text.startswith("# the run's file"):
            reads.append(text)
        return safe_load(text, *a, **k)

    monkeypatch.setattr(BaseHook, "get_connection", classmethod(get))
    monkeypatch.setattr(yaml, "safe_load", counted)
    stepped: list[tuple[str, runtime.TaskRun]] = []
    summary = SimpleNamespace(out_dir=tmp_path / "releases" / "snapshot_2024-04-01",
                              manifest={"version": "v1"}, files=["a", "b"], validation={
                                  "success": True}, version="v1", target="s3://b/p",
                              uploaded_files=2, files_count=2, already_published=False)

    def step(name, tr, **kwargs):
        stepped.append((name, tr))
        summary.files = 2 if name == "publish" else ["a", "b"]
        return SimpleNamespace(detail=summary, rows=1, seconds=0.5,
                               to_dict=lambda: {"stage": name})

    monkeypatch.setattr(runtime, "_step", step)
    events = {a: SimpleNamespace(extra=None) for a in (PUBLISHED, RELEASE, TIMELINES)}
    snap = {"params": {"snapshot": "2024-04-01T00:00:00Z", "publish": True,
                       "release_to": "s3://b/p"}, "outlet_events": events}
    for stage, asset in (("publish", PUBLISHED), ("release", RELEASE)):
        asked.clear(), reads.clear(), stepped.clear()
        ReleaseStep(task_id=stage, emerge_stage=stage, outlets=[asset]).execute(snap)
        assert sorted(asked) == ["emerge_engine", "emerge_llm", "emerge_s3"], stage
        assert len(reads) == 1, stage
        ((name, tr),) = stepped
        assert name == stage and tr.cfg.s3.endpoint_url == "http://127.0.0.1:8333"
        assert tr.s3_session is not None and tr.run.snapshot == "2024-04-01T00:00:00Z"
        assert events[asset].extra["release_dir"] == str(
            tmp_path / "releases" / "snapshot_2024-04-01")
    asked.clear(), reads.clear(), stepped.clear()

    class TI:
        def xcom_pull(self, task_ids, key):
            return [] if isinstance(task_ids, list) else {"metrics": {"files": 2}}

    ingest = {"params": {"dump_date": "20240601"}, "ti": TI(), "outlet_events": events}
    runtime.stability_task(runtime.task_run(ingest, snapshot=False), TIMELINES)
    assert sorted(asked) == ["emerge_engine", "emerge_llm", "emerge_s3"] and len(reads) == 1
    ((name, tr),) = stepped
    assert name == "stability" and tr.cfg.dumps.wikidata.dates == ["20240601"]
    assert events[TIMELINES].extra["files"] == {"wikidata": 4, "wikipedia": 4}


def test_the_wait_defers_to_a_trigger_that_never_blocks_the_event_loop(tmp_path: Path) -> None:
    """The trigger polls the mirror's dumpstatus.json in a thread: while the dump is
    in progress the triggerer's loop keeps running other coroutines; it fires when the
    dump is done, and reports a failed dump job as a failure."""
    import asyncio

    from emerge_lib.airflow.triggers import InputsTrigger

    date = "20240520"
    for wiki in ("wikidatawiki", "enwiki"):
        folder = tmp_path / "mirror" / wiki / date
        folder.mkdir(parents=True)
        (folder / "dumpstatus.json").write_text(json.dumps(
            {"jobs": {"metahistorybz2dump": {"status": "in-progress", "files": {}}}}))
    overrides = {"dumps": {"mirror": (tmp_path / "mirror").as_uri()}}
    trigger = InputsTrigger("dump", None, overrides, dump_date=date, poll_s=0.2)
    classpath, kwargs = trigger.serialize()
    assert classpath == "emerge_lib.airflow.triggers.InputsTrigger"
    assert InputsTrigger(**kwargs).serialize() == (classpath, kwargs)  # round-trips

    def set_status(status: str) -> None:
        for wiki in ("wikidatawiki", "enwiki"):
            path = tmp_path / "mirror" / wiki / date / "dumpstatus.json"
            path.write_text(json.dumps({"jobs": {"metahistorybz2dump": {"status": status,
                                                                        "files": {}}}}))

    async def scenario(final: str) -> tuple[dict, int]:
        ticks = 0
        done = asyncio.Event()

        async def ticker() -> None:
            nonlocal ticks
            while not done.is_set():
                ticks += 1
                await asyncio.sleep(0.05)

        async def finish_later() -> None:
            await asyncio.sleep(1.0)
            set_status(final)

        tick = asyncio.create_task(ticker())
        later = asyncio.create_task(finish_later())
        event = await asyncio.wait_for(anext(InputsTrigger(**kwargs).run()), timeout=60)
        done.set()
        await tick
        await later
        return event.payload, ticks

    payload, ticks = asyncio.run(scenario("done"))
    assert payload == {"status": "ready", "dump_date": "20240520"} and ticks >= 10  # it waited
    set_status("in-progress")
    payload, _ = asyncio.run(scenario("failed"))
    assert payload["status"] == "failed" and "failed" in payload["reason"]


def test_a_backfill_run_finds_its_backfill_and_its_cancel() -> None:
    """Which backfill a waiting run belongs to (the API's records: the active one holding
    its logical date, else the newest holding it) and the one line its cancel gives; the
    real cancel under the scheduler: system/test_dags_scheduler.py."""
    from emerge_lib.airflow.backfills import cancel_reason, pick

    def record(id_: int, start: str, end: str, completed: str | None = None) -> dict:
        return {"id": id_, "dag_id": "emerge_snapshot", "from_date": f"{start}T00:00:00Z",
                "to_date": f"{end}T00:00:00Z", "completed_at": completed, "is_paused": False}

    done = record(1, "2024-01-01", "2024-10-01", "2024-12-01T10:00:00.123Z")
    active = record(2, "2024-07-01", "2024-10-01")
    other = record(3, "2025-01-01", "2025-04-01", "2025-05-01T00:00:00Z")
    when = datetime.fromisoformat("2024-10-01T00:00:00+00:00")
    assert pick([done, active, other], when) == active
    assert pick([done, other], when) == done  # cancelled meanwhile
    assert pick([other], when) is None
    assert cancel_reason(active) is None
    assert cancel_reason(done) == ("backfill 1 of emerge_snapshot (2024-01-01 to 2024-10-01) "
                                   "was cancelled at 2024-12-01 10:00:00 UTC")


def test_the_ingest_run_line_counts_the_machine_time_of_its_tasks_once() -> None:
    """Two tasks side by side each report their share of the cores; the run's line adds
    their CPU seconds over the time any of them ran (overlaps counted once)."""
    from emerge_lib.airflow.runtime import run_cores

    spans = [{"cpu_seconds": 2.0, "start": 10.0, "end": 12.0},  # two tasks side by side,
             {"cpu_seconds": 1.8, "start": 10.5, "end": 12.5},  # one core each
             None,  # a skipped task
             {"cpu_seconds": 1.5, "start": 20.0, "end": 21.0}]  # alone, later
    assert run_cores(spans) == (3, 5.3, 3.5)
    assert run_cores([]) == (0, 0, 0.0)


def test_the_dump_a_run_ingests() -> None:
    """An ingest run: the newest dump of its triggering dumps events, else a scheduled
    run's logical date's day; a snapshot run: the dump its wait chose (XCom), for every task but the
    wait itself; params win over both."""
    from emerge_lib.airflow.runtime import snapshot_run

    class TI:
        def __init__(self, task_id: str) -> None:
            self.task_id = task_id

        def xcom_pull(self, task_ids: str, key: str) -> str | None:
            assert (task_ids, key) == ("wait_for_inputs", "dump_date")
            return "20240601"

    events = {"emerge_dumps": [SimpleNamespace(extra={"dump_date": "20240301"}),
                               SimpleNamespace(extra={"dump_date": "20240601"})]}
    quarter = datetime(2024, 9, 1, tzinfo=datetime.now().astimezone().tzinfo)
    assert snapshot_run({"params": {}, "triggering_asset_events": events},
                        snapshot=False).dump_date == "20240601"
    scheduled = SimpleNamespace(run_type="scheduled")  # emerge_dumps' runs
    assert snapshot_run({"params": {}, "logical_date": quarter, "dag_run": scheduled},
                        snapshot=False).dump_date == "20240901"
    # a manual run's logical date is when it was triggered, not a dump: the configured ones
    assert snapshot_run({"params": {}, "logical_date": quarter,
                         "dag_run": SimpleNamespace(run_type="manual")},
                        snapshot=False).dump_date is None
    assert snapshot_run({"params": {"dump_date": "20231201"}, "logical_date": quarter},
                        snapshot=False).dump_date == "20231201"
    snap = {"params": {"snapshot": "2024-04-01T00:00:00Z"}}
    assert snapshot_run({**snap, "ti": TI("ingest_wikidata")}).dump_date == "20240601"
    assert snapshot_run({**snap, "ti": TI("wait_for_inputs")}).dump_date is None
    assert snapshot_run({"params": {**snap["params"], "wikidata_files": ["a.bz2"]},
                         "ti": TI("ingest_wikidata")}).dump_date is None


def test_a_backfill_on_a_fresh_warehouse_ingests_the_covering_dump(tmp_path: Path,
                                                                   monkeypatch) -> None:
    """The snapshot wait on a warehouse that holds nothing: a backfill or manual run is
    ready at once with the covering dump handed to its ingest tasks (XCom); a snapshot
    no listed dump covers fails at once; the scheduled run waits for the warehouse."""
    from airflow.sdk.exceptions import AirflowFailException, TaskDeferred

    from emerge_lib.airflow.waits import WaitForInputs

    for wiki in ("wikidatawiki", "enwiki"):
        for date in ("20240220", "20240520"):
            folder = tmp_path / "mirror" / wiki / date
            folder.mkdir(parents=True)
            (folder / "dumpstatus.json").write_text(json.dumps(
                {"jobs": {"metahistorybz2dump": {"status": "done", "files": {}}}}))
    config = tmp_path / "config.yaml"
    config.write_text(f"warehouse: {tmp_path / 'wh'}\ndumps:\n  mirror: file://mirror\n")
    monkeypatch.setenv("EMERGE_CONFIG", str(config))
    monkeypatch.setattr("emerge_lib.airflow.hooks.connections", lambda: ({}, None))

    class TI:
        task_id = "wait_for_inputs"

        def __init__(self) -> None:
            self.pushed: dict[str, str] = {}

        def xcom_push(self, key: str, value: str) -> None:
            self.pushed[key] = value

    def context(snapshot: str, run_type: str) -> dict:
        return {"params": {"snapshot": snapshot}, "ti": TI(),
                "dag_run": SimpleNamespace(run_type=run_type)}

    wait = WaitForInputs(task_id="wait_for_inputs", what="snapshot")
    for kind in ("backfill", "manual"):
        ctx = context("2024-01-01T00:00:00Z", kind)  # its last window ends 2024-02-05
        assert wait.execute(ctx) == "ready" and ctx["ti"].pushed == {"dump_date": "20240220"}
    with pytest.raises(AirflowFailException, match="needs wikidatawiki and enwiki dumps from "
                       "20240805 or later .*lists: 20240220, 20240520"):
        wait.execute(context("2024-07-01T00:00:00Z", "backfill"))
    with pytest.raises(TaskDeferred) as deferred:  # the ingest DAG brings the warehouse
        wait.execute(context("2024-01-01T00:00:00Z", "scheduled"))
    assert (deferred.value.trigger.what, deferred.value.trigger.poll_s) == ("warehouse", 60)


def test_celery_hands_no_running_task_to_a_second_worker(dagbag) -> None:
    """Redis hands a task not acknowledged within the visibility timeout to another
    worker (task_acks_late does not stop it): the deployment's timeout (and `make
    airflow`'s, the same) exceeds every task's execution_timeout."""
    import yaml

    compose = yaml.safe_load((REPO / "docker-compose.yaml").read_text())
    timeout = int(compose["x-airflow-env"][
        "AIRFLOW__CELERY_BROKER_TRANSPORT_OPTIONS__VISIBILITY_TIMEOUT"])
    script = (REPO / "scripts" / "airflow-local.sh").read_text()
    assert f"AIRFLOW__CELERY_BROKER_TRANSPORT_OPTIONS__VISIBILITY_TIMEOUT={timeout}\n" in script
    longest = max(t.execution_timeout for dag in dagbag.dags.values() for t in dag.tasks
                  if t.execution_timeout is not None)
    assert longest.total_seconds() < timeout, (longest, timeout)


def test_curations_pools_have_a_slot_per_server() -> None:
    from emerge_lib.airflow.pools import LLM_POOLS, pools
    from emerge_lib.core.config import load_config

    cfg = load_config(None, overrides={"curation": {"additions": {"workers": 3}}})
    got = pools(cfg)
    assert set(got) == set(LLM_POOLS.values()) == {"emerge_llm_additions",
                                                   "emerge_llm_deprecations"}
    assert got["emerge_llm_additions"]["slots"] == 3
    assert got["emerge_llm_deprecations"]["slots"] == 1  # the default: one server
    assert "Meta-Llama-3.1-405B" in got["emerge_llm_deprecations"]["description"]


def test_the_trigger_form_requires_nothing_and_curate_has_three_states(dagbag) -> None:
    """Airflow's form marks a param required unless its type allows null, and draws a
    boolean as a two-state toggle: every param of a snapshot run is optional (empty: the
    configuration's, or nothing), and curate is a select of three (the configuration's,
    on, off) that the REST API also takes as null, true or false."""
    from emerge_lib.pipeline.runs import SnapshotRun

    dag = dagbag.dags["emerge_snapshot"]
    for name in dag.params:
        schema = dag.params.get_param(name).schema
        assert "null" in schema["type"], (name, schema["type"])
    curate = dag.params.get_param("curate").schema
    assert curate["enum"] == [None, True, False]
    assert set(curate["values_display"]) == {"null", "true", "false"}
    for value in (None, True, False):
        params = copy.deepcopy(dag.params)
        params["curate"] = value
        assert params.validate()["curate"] is value
    for conf, expect in (({"curate": None}, None), ({"curate": True}, True),
                         ({"curate": False}, False)):
        assert SnapshotRun.from_params({**conf, "wikidata_files": None, "publish": None},
                                       "2024-01-01").curate is expect
    run = SnapshotRun.from_params({"wikidata_files": None, "publish": None}, "2024-01-01")
    assert run.wikidata_files == () and run.publish is False


def test_the_release_steps_are_the_plugins_operator(dagbag) -> None:
    from emerge_lib.airflow.operators import RELEASE_STEPS, ReleaseStep

    dag = dagbag.dags["emerge_snapshot"]
    steps = {t.task_id for t in dag.tasks if isinstance(t, ReleaseStep)}
    assert steps == set(RELEASE_STEPS) == {"validate", "release", "publish"}


def test_planted_secrets_appear_in_no_task_log(worlds, tmp_path: Path) -> None:
    """`airflow tasks test` of the snapshot DAG's two curate tasks (a task each, with
    Airflow's masking on, as in a worker's task log) against an endpoint that refuses
    every request quoting the key it was sent (the stub's "401"), with secrets planted in
    the EMERGE__* environment (the additions route's key, S3's), in the emerge_llm
    connection's extra (the deprecations route's own key) and in the emerge_s3
    connection: the refusal is in the task log, no secret is, nor in any file of the
    Airflow home (its database, its logs folder) or the warehouse. (The additions key from the
    environment was printed whole before Airflow's masker was told emerge's secrets.)"""
    from worlds import TINY

    from emerge_lib.airflow.home import airflow_command, airflow_env
    from emerge_lib.curation.stub import StubServer

    built = worlds.copy(worlds.built(TINY, release=False), tmp_path)
    planted = {"EMERGE__CURATION__ADDITIONS__API_KEY": "planted-env-llm-key-0123456789",
               "EMERGE__S3__SECRET_ACCESS_KEY": "planted-env-s3-secret-0123456789",
               "EMERGE__S3__ACCESS_KEY_ID": "planted-env-s3-key-id-0123456789"}
    in_connections = ("planted-extra-llm-key-0123456789", "planted-conn-s3-login-0123456789",
                      "planted-conn-s3-password-0123456789")
    airflow, home = str(airflow_command()), tmp_path / "airflow"
    home.mkdir()
    conf = {"snapshot": "2024-01-01T00:00:00Z", "config": str(built.world / "config.yaml"),
            "curate": True, "publish": False}
    outputs = []
    with StubServer() as stub:
        stub.faults.extend(["401"] * 10_000)
        host, port = stub.url.removeprefix("http://").removesuffix("/v1").rsplit(":", 1)
        env = airflow_env(
            home, EMERGE__WAREHOUSE=str(built.warehouse), EMERGE__VALIDATION__ENABLED="false",
            **planted,
            AIRFLOW_CONN_EMERGE_LLM=json.dumps({
                "conn_type": "emerge_llm", "host": host, "port": int(port),
                "extra": {"backend": "vllm", "deprecations": {"api_key": in_connections[0]}}}),
            AIRFLOW_CONN_EMERGE_S3=json.dumps({
                "conn_type": "aws", "login": in_connections[1], "password": in_connections[2],
                "extra": {"endpoint_url": "http://127.0.0.1:9", "region_name": "us-east-1"}}),
            AIRFLOW_CONN_EMERGE_ENGINE=json.dumps({"conn_type": "generic", "host": "embedded"}))
        for cmd in (["db", "migrate"], ["dags", "reserialize"]):
            proc = subprocess.run([airflow, *cmd], env=env, capture_output=True, text=True,
                                  timeout=600)
            assert proc.returncode == 0, proc.stderr[-2000:]
        for task in ("curate_additions", "curate_deprecations"):
            proc = subprocess.run([airflow, "tasks", "test", "emerge_snapshot", task,
                                   "2024-01-01", "-t", json.dumps(conf)], env=env,
                                  capture_output=True, text=True, timeout=900)
            outputs.append(proc.stdout + proc.stderr)
            # the keys were sent, refused, and the refusal is in the task's log, masked
            assert "invalid api key *** (key=***)" in outputs[-1], outputs[-1][-4000:]
    # (`tasks test` prints the task's log: its logs folder stays empty, its database holds
    # the rendered fields and XComs)
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert home / "airflow.db" in files
    for secret in (*planted.values(), *in_connections):
        for task, out in zip(("curate_additions", "curate_deprecations"), outputs, strict=True):
            assert secret not in out, f"{secret[:16]}… in the log of {task}"
        for path in files:
            assert secret.encode() not in path.read_bytes(), f"{secret[:16]}… in {path}"
