"""Shared fixtures. Real third-party samples live in ../shared/realdata (never copied here)."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
REALDATA = REPO.parent / "shared" / "realdata"

# Airflow reads its configuration when it is first imported: point every test that
# imports it (tests/test_airflow_*.py) at this repository's DAGs and plugins and at a
# throw-away home and database, never at a developer's own AIRFLOW_HOME.
AIRFLOW_TEST_HOME = Path(tempfile.mkdtemp(prefix="emerge-airflow-test-"))
os.environ.update({
    "AIRFLOW_HOME": str(AIRFLOW_TEST_HOME),
    "AIRFLOW__CORE__DAGS_FOLDER": str(REPO / "dags"),
    "AIRFLOW__CORE__PLUGINS_FOLDER": str(REPO / "plugins"),
    "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
    "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{AIRFLOW_TEST_HOME}/airflow.db",
})


@pytest.fixture(scope="session")
def realdata() -> Path:
    """The folder of real dump samples; tests that need it skip cleanly when it is absent."""
    if not REALDATA.is_dir():
        pytest.skip(f"real samples not found at {REALDATA}")
    return REALDATA


@pytest.fixture(scope="session")
def spark():
    """One embedded Sail Spark Connect server for the whole test session, stopped at the end."""
    from emerge_lib.engine import spark_session

    with spark_session("embedded") as session:
        yield session


@pytest.fixture()
def catalog(tmp_path: Path, spark):
    from emerge_lib.tables import Catalog

    return Catalog(tmp_path / "warehouse", spark)


@pytest.fixture(scope="session")
def sample_world(tmp_path_factory) -> Path:
    """A small generated world (both wikis, two dump dates, planted truth), made once."""
    from emerge_lib.sample import SampleSpec, generate_world

    out = tmp_path_factory.mktemp("world")
    generate_world(out, SampleSpec(seed=1, items=300, articles=120, revisions=3))
    return out


@pytest.fixture(scope="session")
def airflow_db() -> Path:
    """The test Airflow home with its (SQLite) metadata database migrated, once."""
    import subprocess
    import sys

    airflow = Path(sys.executable).parent / "airflow"
    proc = subprocess.run([str(airflow), "db", "migrate"], capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return AIRFLOW_TEST_HOME
