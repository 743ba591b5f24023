"""The stage registry: one calling convention, lineage that agrees with the catalog, and no
stage wired anywhere else."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from repo import REPO
from stagekit import context

from emerge_lib.catalog import TABLES, Catalog
from emerge_lib.catalog.sql import window_of_sql
from emerge_lib.core.config import Config
from emerge_lib.core.errors import EmergeError
from emerge_lib.core.resources import cpu_seconds
from emerge_lib.core.schedule import SnapshotPlan, window_of
from emerge_lib.core.stage import StageContext, StageResult
from emerge_lib.pipeline.registry import STAGES
from emerge_lib.pipeline.runner import build_steps, run_stage


def test_catalog_lineage_is_the_registry_lineage() -> None:
    for name, spec in TABLES.items():
        writers = {s.name for s in STAGES.values() if name in s.writes}
        readers = {s.name for s in STAGES.values() if name in s.reads}
        assert set(spec.producers) == writers, name
        assert set(spec.consumers) == readers, name
    for st in STAGES.values():
        assert set(st.reads) | set(st.writes) <= set(TABLES), st.name
        assert set(st.settings) <= set(Config.model_fields), st.name
        assert st.summary


def test_the_registry_is_the_only_wiring() -> None:
    """Stage functions are called from their room's stage declaration (``stage.py``) only:
    no second copy of the wiring (config unpacked into stage arguments) in the CLI, the
    demo, the Airflow tasks, the tests or benchmarks. The ingest's sub-steps are called by
    its own driver and its stage's steps, and by the tests (and the benchmark) that
    exercise them one by one."""
    stage_functions = ["build_stable_statements", "build_snapshot", "build_deltas",
                       "build_passages", "build_instances", "build_verdicts", "build_selection",
                       "validate_snapshot", "write_release", "run_ingest", "publish_release",
                       "evaluate_release", "finish_ingest"]
    stages = {f"emerge_lib/{room}/stage.py" for room in (
        "ingest", "transform", "curation", "validation", "release", "publish", "evaluation")}
    defined_in = stages | {f"emerge_lib/transform/{m}.py" for m in (
        "stability", "snapshot", "deltas", "passages", "align", "select")} | {
        "emerge_lib/curation/verdicts.py", "emerge_lib/validation/validate.py",
        "emerge_lib/release/writer.py", "emerge_lib/ingest/run.py",
        "emerge_lib/publish/upload.py", "emerge_lib/evaluation/run.py"}
    sub_steps = ["plan_ingest", "extract", "commit", "check_rejects"]
    sub_steps_in = {"emerge_lib/ingest/stage.py", "emerge_lib/ingest/run.py",
                    "tests/engine/ingest/test_wikidata.py", "tests/engine/ingest/test_wikipedia.py",
                    "benchmarks/ingest_wikidata.py"}  # extraction alone, measured
    call = re.compile(r"\b(" + "|".join(stage_functions) + r")\(")
    steps = "|".join(sub_steps)  # common words: ingest.commit( or commit(, not conn.commit(
    sub_call = re.compile(rf"(?<![\w.])({steps})\(|\bingest\.({steps})\(")
    offenders = []
    for folder in ("emerge_lib", "tests", "benchmarks", "dags"):
        for path in sorted((REPO / folder).rglob("*.py")):
            rel = path.relative_to(REPO).as_posix()
            if rel == "tests/engine/pipeline/test_runner.py":
                continue
            for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                if line.lstrip().startswith(("def ", "#")):
                    continue
                if (call.search(line) and rel not in defined_in
                        or sub_call.search(line) and rel not in sub_steps_in):
                    offenders.append(f"{rel}:{n}: {line.strip()}")
    assert offenders == []


def test_run_stage_checks_the_snapshot_argument(catalog: Catalog) -> None:
    ctx = context(catalog)
    with pytest.raises(EmergeError, match="runs per snapshot"):
        run_stage(ctx, "deltas")
    with pytest.raises(EmergeError, match="takes no snapshot"):
        run_stage(ctx, "stability", "2024-01-01T00:00:00Z")
    with pytest.raises(EmergeError, match="no stage named 'nope'"):
        run_stage(ctx, "nope")


def test_build_steps_follow_the_inputs_and_the_snapshots(catalog: Catalog, tmp_path: Path) -> None:
    ctx = context(catalog, snapshots={"timestamps": ["2024-04-01T00:00:00Z", "2024-01-01T00:00:00Z"]},
                  release_dir=tmp_path)
    steps = [(name, plan.key if plan else None) for name, plan in build_steps(ctx)]
    per = ["snapshot", "deltas", "passages", "align", "select", "validate"]
    assert steps == [("stability", None)] + [
        (s, t) for t in ("2024-01-01T00:00:00Z", "2024-04-01T00:00:00Z") for s in per
    ] + [("release", None)]
    with_files = StageContext(ctx.cfg, catalog, wikipedia=["x.xml"])
    assert [n for n, _ in build_steps(with_files)][:2] == ["ingest_wikipedia", "stability"]
    with pytest.raises(EmergeError, match="no snapshot timestamps"):
        build_steps(context(catalog))


def test_a_result_is_one_line_and_plain_data() -> None:
    r = StageResult("deltas", "2024-01-01T00:00:00Z", {"delta_triples": 1200}, 2.0,
                    {"windows": 5}, detail=object())
    assert r.brief() == ("deltas 2024-01-01T00:00:00Z: delta_triples 1,200 rows, 5 windows "
                         "in 2.0s, 600 rows/s")
    assert "\n" not in r.brief()
    data = r.to_dict()
    assert "detail" not in data and json.loads(json.dumps(data))["rows"] == {"delta_triples": 1200}
    mb = StageResult("ingest_wikidata", None, {}, 4.0, {"MB": 100.0}, note="8 files already ingested")
    assert mb.brief() == "ingest_wikidata: nothing written in 4.0s, 25.0 MB/s (8 files already ingested)"
    busy = replace(mb, cpu_seconds=7.4)
    assert busy.brief() == ("ingest_wikidata: nothing written in 4.0s, 25.0 MB/s, 1.85 cores "
                            "(8 files already ingested)")
    assert busy.to_dict()["cpu_seconds"] == 7.4


def test_stage_cpu_counts_the_workers_it_reaped() -> None:
    """A stage's CPU figure includes its worker pool's processes (reaped when it ends),
    not only this process: else the ingest would report half a core on two."""
    before = cpu_seconds()
    burn = "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.6: pass"
    subprocess.run([sys.executable, "-c", burn], check=True)
    assert cpu_seconds() - before >= 0.5


@pytest.mark.parametrize("days", [7, 0.5, 10 / 3])
def test_window_membership_in_sql_equals_the_schedule(spark, days: float) -> None:
    plan = SnapshotPlan(datetime(2024, 1, 1, tzinfo=UTC), 4, days)
    ends = [w.end for w in plan.windows]
    probes = [plan.t - timedelta(seconds=1), plan.t, plan.t + timedelta(seconds=1)]
    for end in ends:  # both sides of every window end
        probes += [end - timedelta(seconds=1), end, end + timedelta(seconds=1)]
    frame = spark.createDataFrame([(i, ts) for i, ts in enumerate(probes)], "i int, ts timestamp")
    got = {r.i: r.k for r in spark.sql(
        f"SELECT i, {window_of_sql('ts', plan)} AS k FROM {{probes}}", probes=frame).collect()}
    assert got == {i: window_of(plan.t, ts, plan.window_count, plan.window_days)
                   for i, ts in enumerate(probes)}
    assert set(got.values()) == {None, 1, 2, 3, 4}


def test_every_delta_write_goes_through_the_catalog() -> None:
    """Raw MERGE/DataFrame writes and session-wide temp views appear only in the catalog."""
    raw = re.compile(r"MERGE INTO|\.write\.format|createOrReplaceTempView|\.saveAsTable\(")
    offenders = [
        f"{path.relative_to(REPO)}:{n}"
        for path in sorted((REPO / "emerge_lib").rglob("*.py"))
        if path.relative_to(REPO).as_posix() != "emerge_lib/catalog/catalog.py"
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if raw.search(line)
    ]
    assert offenders == []


def test_v_tau_is_written_once() -> None:
    """V_τ (an item state with an enwiki sitelink, not a redirect) is `_sql.in_v`; no stage
    writes the predicate out again, in SQL or with DataFrame columns."""
    again = re.compile(r"redirect_to\b[\"')\s]*(IS\s+NULL|\.isNull\(\))", re.IGNORECASE)
    offenders = [
        f"{path.relative_to(REPO)}:{n}: {line.strip()}"
        for path in sorted((REPO / "emerge_lib").rglob("*.py"))
        if path.relative_to(REPO).as_posix() != "emerge_lib/catalog/sql.py"
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if again.search(line)
    ]
    assert offenders == []


def test_the_ingest_steps_without_inputs_and_with_bad_arguments(catalog: Catalog) -> None:
    """The mapped steps go through the one door: a plan without inputs is empty, a commit
    of no plan writes nothing; bad group counts, unknown steps and stages are refused."""
    ctx = context(catalog)
    planned = run_stage(ctx, "ingest_wikidata", step="plan", max_groups=256)
    assert planned.detail == {"plan": None, "groups": [], "later": []}
    assert planned.step == "plan" and planned.brief().startswith("ingest_wikidata plan: ")
    assert run_stage(ctx, "ingest_wikidata", step="commit", plan=None, summaries=[],
                     newer=None).rows == {}
    with pytest.raises(EmergeError, match="max_groups"):
        run_stage(ctx, "ingest_wikidata", step="plan", max_groups=0)
    with pytest.raises(EmergeError, match="no step 'merge'; steps: plan, extract, commit"):
        run_stage(ctx, "ingest_wikidata", step="merge")
    with pytest.raises(EmergeError, match="no stage named 'ingest_commons'"):
        run_stage(ctx, "ingest_commons", step="plan", max_groups=256)


def test_a_stage_that_does_not_apply_is_refused_with_its_reason(catalog: Catalog,
                                                               tmp_path: Path) -> None:
    """One check per stage (``skip``) decides for the build, the commands and the Airflow
    tasks alike; run directly, a stage with nothing to do says why."""
    ctx = context(catalog, snapshots={"timestamps": ["2024-01-01T00:00:00Z"]})
    reasons = {name: st.skip(ctx) for name, st in STAGES.items()}
    assert {n for n, why in reasons.items() if why is None} == {
        "stability", "snapshot", "deltas", "passages", "align", "select", "validate"}
    for name, needle in (("ingest_wikidata", "no files given"), ("curate", "curation is off"),
                         ("release", "no release folder"), ("publish", "no release folder"),
                         ("evaluate", "no release folder"),
                         ("reconcile", "no dump ingested")):
        assert needle in reasons[name], name
        with pytest.raises(EmergeError, match=f"stage {name}: {needle}"):
            run_stage(ctx, name, "2024-01-01T00:00:00Z" if name == "curate" else None)
    released = context(catalog, release_dir=tmp_path, publish={"to": "s3://b/p"},
                       evaluation={"predictions": ["p.jsonl"]},
                       snapshots={"timestamps": ["2024-01-01T00:00:00Z"]})
    assert [n for n, _ in build_steps(released)][-2:] == ["release", "publish"]  # no evaluate
    assert STAGES["evaluate"].applies(released) and not STAGES["evaluate"].in_build
    off = context(catalog, release_dir=tmp_path, validation={"enabled": False},
                  snapshots={"timestamps": ["2024-01-01T00:00:00Z"]})
    assert "validate" not in [n for n, _ in build_steps(off)]
    assert "nowhere to publish" in STAGES["publish"].skip(off)
