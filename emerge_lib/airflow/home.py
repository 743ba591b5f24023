"""A throw-away Airflow home running this checkout's DAGs: the environment of an
``airflow`` command (``dags test``, ``db migrate``) or of a test process that imports
Airflow, written once for the demo and the tests. It imports nothing of Airflow: it only
names the home, the DAGs folder and a SQLite database. emerge's own Airflow code is an
installed provider package, so nothing is put on ``sys.path``."""

from __future__ import annotations

import os
import sys
from pathlib import Path

#: the source checkout (the DAG files sit beside the library, not inside the package)
REPO = Path(__file__).resolve().parents[2]
DAGS = REPO / "dags"
#: the UI's links of emerge's tasks (plugins/emerge.py)
PLUGINS = REPO / "plugins"


def airflow_command() -> Path:
    """The ``airflow`` command of this environment."""
    return Path(sys.executable).parent / "airflow"


def available() -> bool:
    """Can Airflow run here (its command installed, the DAGs beside the library)?"""
    return airflow_command().is_file() and (DAGS / "emerge_snapshot.py").is_file()


def airflow_env(home: str | Path, **extra: str) -> dict[str, str]:
    """This process's environment without its ``AIRFLOW__*`` settings, pointed at a home
    of its own with this checkout's DAGs and plugins and a SQLite database in that home."""
    base = {k: v for k, v in os.environ.items() if not k.startswith("AIRFLOW__")}
    return {**base, "AIRFLOW_HOME": str(home),
            "AIRFLOW__CORE__DAGS_FOLDER": str(DAGS),
            "AIRFLOW__CORE__PLUGINS_FOLDER": str(PLUGINS),
            "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
            "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{home}/airflow.db", **extra}
