"""The Apache Spark 4 standalone cluster of the tests (scripts/spark-local.sh: a master, two
workers and the Spark Connect server with Delta Lake, on 127.0.0.1): started once for the
whole test session, on first use, and stopped by PID when the session ends.

One cluster for every process of the session: pytest-xdist's workers share the folder
above their own temporary folders (the controller's), and the first worker that needs
the cluster starts it there under a file lock; the others find it running. The process
owning that folder (the controller, or the only process without xdist) stops it in
``pytest_sessionfinish`` (tests/conftest.py), after every worker has finished.

Outside CI a machine without ``make spark`` (or without Java) skips the Spark tests; in
CI (``CI=true``) that is a failure: ``make test`` installs it.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
from pathlib import Path

import pytest

#: a test on each engine the project supports: Sail embedded and the Spark 4 cluster
#: (marked ``spark``: `make test-fast` leaves it out); its ``engine`` and ``catalog``
#: fixtures (tests/conftest.py) are that engine's
on_each_engine = pytest.mark.parametrize(
    "engine", ["sail", pytest.param("spark", marks=pytest.mark.spark)], indirect=True)

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "scripts" / "spark-local.sh"
SPARK_VENV = REPO / ".venv-spark"


def missing() -> str | None:
    """Why the cluster cannot start here (None: it can)."""
    if shutil.which("java") is None:
        return "Java 17 is not installed"
    if not (SPARK_VENV / ".installed").is_file():
        return "Spark is not installed (make spark)"
    return None


def shared_folder(factory: pytest.TempPathFactory, config: pytest.Config) -> Path:
    """The temporary folder every process of this session shares: the controller's own
    (an xdist worker's is a folder below it)."""
    base = factory.getbasetemp()
    return base.parent if hasattr(config, "workerinput") else base


def _home(shared: Path) -> Path:
    return shared / "spark-local"


#: the test cluster's settings for tables of a few hundred rows: the optimizer's adaptive
#: re-planning and the generated code (compiled per query, on the driver and in every
#: executor) cost more than they save there; without them a build of the tiny world took
#: 201 instead of 253-262 CPU-seconds of the cluster (docs/performance.md)
SMALL_DATA = ("--conf spark.sql.adaptive.enabled=false --conf spark.sql.codegen.wholeStage=false"
              " --conf spark.sql.codegen.factoryMode=NO_CODEGEN")


def _run(action: str, home: Path, timeout: float) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "SPARK_LOCAL_HOME": str(home),
           "SPARK_EXTRA_CONF": f"{SMALL_DATA} {os.environ.get('SPARK_EXTRA_CONF', '')}"}
    return subprocess.run([str(SCRIPT), action], env=env, capture_output=True, text=True,
                          timeout=timeout)


def url(factory: pytest.TempPathFactory, config: pytest.Config) -> str:
    """The sc:// URL of the session's cluster, started now if no process has yet."""
    why = missing()
    if why:
        if os.environ.get("CI"):
            pytest.fail(f"{why}: make test installs it")
        pytest.skip(why)
    home = _home(shared_folder(factory, config))
    home.mkdir(parents=True, exist_ok=True)
    with open(home.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        port = home / "run" / "connect.port"
        if _run("status", home, 60).stdout.count(": running") == 4 and port.is_file():
            return f"sc://127.0.0.1:{port.read_text().strip()}"
        started = _run("start", home, 900)
        if started.returncode != 0:
            pytest.fail(f"the Spark cluster did not start:\n{started.stdout}{started.stderr}")
        return f"sc://127.0.0.1:{port.read_text().strip()}"


def stop(factory: pytest.TempPathFactory) -> None:
    """Stop the session's cluster by its PIDs, if one was started (the owning process)."""
    base = getattr(factory, "_basetemp", None)  # None: this session made no folder
    if base is None:
        return
    home = _home(Path(base))
    if (home / "run").is_dir():
        _run("stop", home, 120)
