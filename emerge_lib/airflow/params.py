"""The DAGs' params, generated from the run's declaration (``SnapshotRun``'s fields:
default, schema, description), so the trigger form, the REST API's validation and the
tasks read one definition. Only what is Airflow's own is declared here: the limit on
mapped tasks."""

from __future__ import annotations

from typing import Any

from airflow.sdk import Param

#: Airflow's default ``[core] max_map_length``: a mapped task expands to at most this many
MAX_MAP_LENGTH = 1024


def dag_params(dag: str) -> dict[str, Param]:
    """The params of the ``snapshot`` or ``ingest`` DAG."""
    from emerge_lib.pipeline.runs import SnapshotRun

    out: dict[str, Any] = {
        name: Param(p["default"], description=p["description"], **p["schema"])
        for name, p in SnapshotRun.params_of(dag).items()}
    if dag == "ingest":
        out["max_tasks"] = Param(256, type="integer", minimum=1, maximum=MAX_MAP_LENGTH,
                                 description="at most this many extract tasks per wiki "
                                             "(files are grouped, balanced by size)")
    return out
