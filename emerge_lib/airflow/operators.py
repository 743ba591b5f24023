"""``ReleaseStep``: the snapshot DAG's validate, release and publish tasks, whose output a
maintainer opens from the UI (plugins/emerge.py links each to its validation results,
dataset card or published manifest: ``emerge_lib.airflow.links``). An operator class of
their own, so that the plugin's links attach to these three tasks and to no other (Airflow
attaches a plugin's operator links by operator class)."""

from __future__ import annotations

from typing import Any

from airflow.sdk import BaseOperator

#: the registry's stages that run as ReleaseStep tasks
RELEASE_STEPS = ("validate", "release", "publish")


class ReleaseStep(BaseOperator):
    """Runs registry stage ``emerge_stage`` (one of ``RELEASE_STEPS``) for this run; the
    release and publish steps emit their Asset's event (``outlets``)."""

    ui_color = "#e6f0fa"

    def __init__(self, *, emerge_stage: str, **kwargs: Any) -> None:
        if emerge_stage not in RELEASE_STEPS:
            raise ValueError(f"emerge_stage must be one of {RELEASE_STEPS}, not {emerge_stage!r}")
        super().__init__(**kwargs)
        self.emerge_stage = emerge_stage

    def execute(self, context: Any) -> dict[str, Any]:
        from emerge_lib.airflow import runtime

        tr = runtime.task_run(context)
        if self.emerge_stage == "release":
            return runtime.release_task(tr, self.outlets[0])
        if self.emerge_stage == "publish":
            return runtime.publish_task(tr, self.outlets[0])
        return runtime.run_stage_task(self.emerge_stage, tr)
