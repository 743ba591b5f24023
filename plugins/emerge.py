"""emerge's Airflow plugin: the links a maintainer follows from a snapshot run's tasks:
validate → its validation results, release → the dataset card (and the validation
results), publish → the published release's manifest; and the api-server app that serves
them at /emerge. Found through AIRFLOW__CORE__PLUGINS_FOLDER (`make airflow` and
docker-compose.yaml point it here); the code is emerge_lib/airflow/links.py."""

from __future__ import annotations

from airflow.plugins_manager import AirflowPlugin

from emerge_lib.airflow.links import LINKS, URL_PREFIX, app


class EmergePlugin(AirflowPlugin):
    name = "emerge"
    operator_extra_links = LINKS
    fastapi_apps = [{"app": app(), "url_prefix": URL_PREFIX, "name": "emerge releases"}]
