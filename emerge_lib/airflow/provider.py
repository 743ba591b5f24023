"""emerge as an Airflow provider package: the ``apache_airflow_provider`` entry point
(pyproject.toml) that Airflow's providers manager reads in every process, registering the
connection types of emerge's hooks, so the UI's connection form offers them and nothing
has to be put on ``sys.path`` by hand. The package name must be the distribution's."""

from __future__ import annotations

from typing import Any


def get_provider_info() -> dict[str, Any]:
    return {
        "package-name": "emerge-tkgu",
        "name": "emerge",
        "description": "Builds, extends and publishes the EMERGE benchmark from Wikimedia "
                       "history dumps: the engine and LLM-worker connections of its DAGs.",
        "connection-types": [
            {"connection-type": "emerge_engine",
             "hook-class-name": "emerge_lib.airflow.hooks.EngineHook"},
            {"connection-type": "emerge_llm",
             "hook-class-name": "emerge_lib.airflow.hooks.LLMWorkersHook"},
        ],
    }
