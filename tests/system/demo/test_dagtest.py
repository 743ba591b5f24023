"""`airflow dags test emerge_snapshot` (dag.test(): every task in one process, no
scheduler) on a generated world, with the embedded engine and curation by the real local
llama.cpp server reached through the ``emerge_llm`` Airflow connection, builds the same
release as `emerge build` on the same files with the same LLM: every file byte for byte."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from buildkit import assert_same_release
from worlds import SMALL

from emerge_lib.airflow.home import airflow_command, airflow_env

T = "2024-01-01T00:00:00Z"


def test_dags_test_builds_the_release_emerge_build_builds(tmp_path: Path, worlds, llm) -> None:
    world = worlds.world(SMALL)
    config = tmp_path / "config.yaml"  # every request (27: 22 to the additions model, 5 to
    # the deprecations model), answered one at a time: no budget (curation.max_requests),
    # which the DAG's two curate tasks, one per model, would each spend apart (the
    # validation gate is off, both sides alike; the backfill test of
    # system/test_dags_scheduler.py runs the DAG's validate task; answer QA off: it asks a
    # degenerate answer again by sampling, which two runs need not answer alike)
    config.write_text((world / "config.yaml").read_text().replace(
        "file://mirror", f"file://{world}/mirror") + "curation:\n"
        "  concurrency: 1\n  flush_seconds: 0.5\n  reasks: 0\nvalidation:\n  enabled: false\n")
    wikidata = [str(p) for p in sorted((world / "mirror").glob("wikidatawiki/*/*.bz2"))]
    wikipedia = [str(p) for p in sorted((world / "mirror").glob("enwiki/*/*.bz2"))]
    airflow = str(airflow_command())
    server = llm  # the session's server: both sides ask the same one
    # `emerge build` as a user runs it (a process of its own)
    built = subprocess.run(
        [sys.executable, "-m", "emerge_lib.cli", "build", "-c", str(config), "--snapshot", T,
         "--out", str(tmp_path / "built"), "--warehouse", str(tmp_path / "wh-built"),
         "--wikidata", *wikidata, "--wikipedia", *wikipedia, "--llm-url", server.url,
         "--llm-backend", "llamacpp", "--llm-model", server.model],
        capture_output=True, text=True, timeout=900)
    assert built.returncode == 0, built.stderr[-3000:]
    host, port = server.host_port
    env = airflow_env(
        tmp_path / "airflow", EMERGE__WAREHOUSE=str(tmp_path / "wh-dag"),
        AIRFLOW_CONN_EMERGE_LLM=json.dumps({
            "conn_type": "emerge_llm", "host": host, "port": port,
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
    # byte for byte, but for the validation run time each warehouse's gate recorded
    assert_same_release(dag, built)
    judged = [a for f in dag.glob("corpus/snapshot_*/delta_*.jsonl") for line in f.read_text().splitlines()
              for t in json.loads(line)["tkgu_triples"] for a in t["llm_assessment"]]
    assert judged and {a["llm_name"] for a in judged} == {server.model}
