"""What a maintainer opens from a snapshot run's tasks in the UI: operator extra links on
the validate, release and publish tasks (``ReleaseStep``), and the small web app of the
api-server that serves what they point at. Registered by the top-level plugin,
plugins/emerge.py (AIRFLOW__CORE__PLUGINS_FOLDER; `make airflow` and the compose
deployment set it).

- **Validation results** (validate, release): the release's ``validation/results.json``,
  the gate's checks and their outcome per snapshot;
- **Dataset card** (release): the release's ``card.html`` (its README.md as a page);
- **Published manifest** (publish): the ``manifest.json`` of the published version, read
  from S3 where the publish put it.

Airflow 3 asks a plugin's links in the api-server (the worker never runs them): a link
reads the run's release (the release task's return value: folder, version, files,
verdict) from the metadata database and shows only once its target exists (the UI hides
a link without a URL). The app (``/emerge`` on the api-server) serves files of that
folder only, to callers who may read the DAG's runs (the REST API's own check; the UI's
session cookie carries it).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, ClassVar
from urllib.parse import quote

from airflow.sdk import BaseOperatorLink

from emerge_lib.airflow.operators import ReleaseStep

#: where plugins/emerge.py mounts the app on the api-server
URL_PREFIX = "/emerge"


def task_result(dag_id: str, run_id: str, task_id: str) -> dict[str, Any] | None:
    """A task's return value (XCom) in a run, from the metadata database (the
    api-server's side), or None."""
    from airflow.models.xcom import XComModel
    from airflow.utils.session import create_session

    with create_session() as session:
        row = session.execute(XComModel.get_many(
            key="return_value", run_id=run_id, dag_ids=dag_id, task_ids=task_id,
            map_indexes=-1).with_only_columns(XComModel.value)).first()
    if row is None:
        return None
    value = row[0]
    while isinstance(value, str):  # stored as JSON text, sometimes twice
        try:
            value = json.loads(value)
        except ValueError:
            return None
    return value if isinstance(value, dict) else None


def run_url(dag_id: str, run_id: str, tail: str) -> str:
    return f"{URL_PREFIX}/runs/{quote(dag_id, safe='')}/{quote(run_id, safe='')}/{tail}"


class _ReleaseFileLink(BaseOperatorLink):
    """A file of the run's release folder, on the tasks of ``tasks``."""

    operators: ClassVar[list[type]] = [ReleaseStep]
    tasks: ClassVar[tuple[str, ...]] = ()
    path: ClassVar[str] = ""

    def get_link(self, operator: Any, *, ti_key: Any) -> str:
        if ti_key.task_id not in self.tasks:
            return ""
        release = task_result(ti_key.dag_id, ti_key.run_id, "release")
        folder = (release or {}).get("release_dir")
        if not folder or not (Path(folder) / self.path).is_file():
            return ""
        return run_url(ti_key.dag_id, ti_key.run_id, f"files/{self.path}")


class ValidationResultsLink(_ReleaseFileLink):
    name = "Validation results"
    tasks = ("validate", "release")
    path = "validation/results.json"


class DatasetCardLink(_ReleaseFileLink):
    name = "Dataset card"
    tasks = ("release",)
    path = "card.html"


class PublishedManifestLink(BaseOperatorLink):
    operators: ClassVar[list[type]] = [ReleaseStep]
    name = "Published manifest"

    def get_link(self, operator: Any, *, ti_key: Any) -> str:
        if ti_key.task_id != "publish":
            return ""
        published = task_result(ti_key.dag_id, ti_key.run_id, "publish")
        if not (published or {}).get("manifest"):
            return ""
        return run_url(ti_key.dag_id, ti_key.run_id, "published/manifest.json")


LINKS = [ValidationResultsLink(), DatasetCardLink(), PublishedManifestLink()]


def _inside(folder: Path, rel: str) -> Path | None:
    """``folder/rel`` when it is a file inside ``folder`` (no way out through ``..`` or a
    link), else None."""
    root = folder.resolve()
    path = (root / rel).resolve()
    return path if path.is_relative_to(root) and path.is_file() else None


def published_manifest(uri: str) -> bytes:
    """The manifest.json the publish task wrote to ``uri`` (s3://bucket/key), read with
    the deployment's S3 settings (the configuration, the emerge_s3 connection)."""
    from emerge_lib.airflow.hooks import EmergeS3, connection_overrides
    from emerge_lib.core.config import load_config
    from emerge_lib.pipeline.runs import CONFIG_ENV
    from emerge_lib.publish import client_for
    from emerge_lib.publish.s3 import S3Location

    cfg = load_config(os.environ.get(CONFIG_ENV) or None, overrides=connection_overrides())
    where = S3Location.parse(uri)
    client = client_for(cfg, EmergeS3().session())
    return client.get_object(Bucket=where.bucket, Key=where.prefix)["Body"].read()


def app() -> Any:
    """The api-server's app behind the links (mounted at ``URL_PREFIX``)."""
    from airflow.api_fastapi.auth.managers.models.resource_details import DagAccessEntity
    from airflow.api_fastapi.core_api.security import requires_access_dag
    from fastapi import Depends, FastAPI, HTTPException
    from fastapi.responses import FileResponse, Response

    web = FastAPI(title="emerge releases", docs_url=None, redoc_url=None, openapi_url=None)
    may_read = [Depends(requires_access_dag("GET", DagAccessEntity.RUN))]

    @web.get("/runs/{dag_id}/{run_id}/files/{path:path}", dependencies=may_read)
    def release_file(dag_id: str, run_id: str, path: str) -> FileResponse:
        release = task_result(dag_id, run_id, "release") or {}
        folder = release.get("release_dir")
        found = _inside(Path(folder), path) if folder else None
        if found is None:
            raise HTTPException(404, f"{path}: not in the release of {dag_id} {run_id}")
        return FileResponse(found)

    @web.get("/runs/{dag_id}/{run_id}/published/manifest.json", dependencies=may_read)
    def manifest(dag_id: str, run_id: str) -> Response:
        published = task_result(dag_id, run_id, "publish") or {}
        if not published.get("manifest"):
            raise HTTPException(404, f"{dag_id} {run_id} published nothing")
        try:
            body = published_manifest(published["manifest"])
        except Exception as exc:  # the store's answer, as one line
            raise HTTPException(502, f"{published['manifest']}: {type(exc).__name__}: "
                                     f"{exc}") from exc
        return Response(body, media_type="application/json")

    return web
