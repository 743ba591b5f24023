"""`airflow dags test emerge_incr` (every task in one process, no scheduler) on a generated
world with increments: a run reads the day before its logical date from the mirror's
other/incr into a warehouse holding the full dump, for both wikis; run again, it reads
nothing; neither run rebuilds the stable statements whole (the base ingest's stability
recorded what it was built from)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

from emerge_lib.airflow.home import airflow_command, airflow_env
from emerge_lib.catalog import Catalog
from emerge_lib.sample import SampleSpec, generate_world


def test_a_daily_run_ingests_the_day_before(tmp_path: Path) -> None:
    world = tmp_path / "world"
    generate_world(world, SampleSpec(seed=3, items=30, articles=8, revisions=1,
                                     increments=True))
    wh = tmp_path / "wh"
    base = subprocess.run(
        [sys.executable, "-m", "emerge_lib.cli", "ingest", "-c", str(world / "config.yaml"),
         "--warehouse", str(wh), "--workers", "1",
         "--wikidata", *map(str, sorted(world.glob("mirror/wikidatawiki/20240220/*.bz2"))),
         "--wikipedia", *map(str, sorted(world.glob("mirror/enwiki/20240220/*.bz2")))],
        capture_output=True, text=True, timeout=600)
    assert base.returncode == 0, base.stderr[-2000:]
    home = tmp_path / "airflow"
    home.mkdir()
    env = airflow_env(home, EMERGE_INCR_START="2024-02-20",
                      EMERGE_CONFIG=str(world / "config.yaml"), EMERGE__WAREHOUSE=str(wh),
                      AIRFLOW_CONN_EMERGE_ENGINE=json.dumps({
                          "conn_type": "generic", "host": "embedded",
                          "extra": {"mode": "local"}}))
    airflow = str(airflow_command())
    migrate = subprocess.run([airflow, "db", "migrate"], env=env, capture_output=True,
                             text=True, timeout=600)
    assert migrate.returncode == 0, migrate.stderr[-2000:]

    def day(logical: str) -> str:
        proc = subprocess.run([airflow, "dags", "test", "emerge_incr", logical], env=env,
                              capture_output=True, text=True, timeout=900)
        log = proc.stdout + proc.stderr
        assert proc.returncode == 0 and "state=success" in log, log[-4000:]
        assert "stage ingest_wikidata" in log, log[-4000:]  # the task ran
        # stability continues from what the base ingest's run recorded: never whole
        assert re.search(r"stage stability: .*\((up to date|incremental)\)", log) and \
            "full rebuild" not in log, log[-4000:]
        return log

    day("2024-02-21")
    files = Catalog(wh).read_arrow("ingested_files").to_pylist()
    incr = sorted((r["wiki"], r["dump_date"]) for r in files if "incr" in r["dump_file"])
    assert incr == [("enwiki", "20240220"), ("wikidatawiki", "20240220")]
    assert all(r["error"] is None for r in files)
    again = day("2024-02-21")
    assert "already ingested" in again
    assert Catalog(wh).read_arrow("ingested_files").num_rows == len(files)
