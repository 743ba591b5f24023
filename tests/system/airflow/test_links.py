"""plugins/emerge.py through Airflow's own plugin manager, without a server: it loads from
the plugins folder (`make airflow` and the compose deployment point
AIRFLOW__CORE__PLUGINS_FOLDER at it), registers its three links for the ReleaseStep
operator and its app at /emerge; Airflow's serializer attaches the links to validate,
release and publish and to no other task; each link shows once what it points at exists.
The links and the app under a real scheduler and api-server, and the screenshot:
tests/system/test_dags_scheduler.py."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest
from repo import REPO

NAMES = {"Validation results", "Dataset card", "Published manifest"}


@pytest.fixture(scope="module")
def dagbag():
    from airflow.dag_processing.dagbag import DagBag

    return DagBag(dag_folder=str(REPO / "dags"))


def test_airflow_loads_the_plugin_from_the_plugins_folder() -> None:
    from airflow import plugins_manager, settings

    assert Path(settings.PLUGINS_FOLDER) == REPO / "plugins"
    plugins, errors = plugins_manager._get_plugins()
    assert errors == {}, errors
    (emerge,) = [p for p in plugins if p.name == "emerge"]
    assert {link.name for link in plugins_manager.get_operator_extra_links()} >= NAMES
    assert {link.name for link in emerge.operator_extra_links} == NAMES
    apps, _ = plugins_manager.get_fastapi_plugins()
    assert [a["url_prefix"] for a in apps if a["name"] == "emerge releases"] == ["/emerge"]
    info = {p["name"]: p for p in plugins_manager.get_plugin_info()}
    assert info["emerge"]["operator_extra_links"]


def test_the_serialized_dag_has_the_links_on_the_release_steps_only(dagbag) -> None:
    """What the api-server holds: the DAG as the dag-processor serialized it, the plugin's
    links attached by operator class."""
    from airflow.serialization.serialized_objects import DagSerialization

    dag = DagSerialization.from_dict(DagSerialization.to_dict(dagbag.dags["emerge_snapshot"]))
    links = {t.task_id: set(t.extra_links) for t in dag.tasks if t.extra_links}
    assert links == {name: NAMES for name in ("validate", "release", "publish")}


def test_each_link_shows_once_its_target_exists(tmp_path: Path, monkeypatch) -> None:
    from emerge_lib.airflow import links

    release = tmp_path / "snapshot_2024-01-01"
    (release / "validation").mkdir(parents=True)
    results: dict[str, dict] = {}
    monkeypatch.setattr(links, "task_result", lambda dag, run, task: results.get(task))
    run_id = "backfill__2024-01-01T00:00:00+00:00"

    def link(cls, task_id: str) -> str:
        key = SimpleNamespace(dag_id="emerge_snapshot", run_id=run_id, task_id=task_id,
                              map_index=-1)
        return cls().get_link(None, ti_key=key)

    base = "/emerge/runs/emerge_snapshot/backfill__2024-01-01T00%3A00%3A00%2B00%3A00"
    assert link(links.DatasetCardLink, "release") == ""  # no release yet
    results["release"] = {"release_dir": str(release), "version": "v1"}
    assert link(links.DatasetCardLink, "release") == ""  # written, but no card
    (release / "card.html").write_text("<html>card</html>")
    (release / "validation" / "results.json").write_text(json.dumps({"snapshots": {}}))
    assert link(links.DatasetCardLink, "release") == f"{base}/files/card.html"
    assert link(links.DatasetCardLink, "validate") == ""  # the card is the release's
    for task in ("validate", "release"):
        assert link(links.ValidationResultsLink, task) == \
            f"{base}/files/validation/results.json"
    assert link(links.ValidationResultsLink, "publish") == ""
    assert link(links.PublishedManifestLink, "publish") == ""  # nothing published
    results["publish"] = {"manifest": "s3://releases/emerge/v/v1/manifest.json"}
    assert link(links.PublishedManifestLink, "publish") == f"{base}/published/manifest.json"


def test_the_app_serves_only_files_inside_the_release(tmp_path: Path) -> None:
    from emerge_lib.airflow.links import _inside

    release = tmp_path / "release"
    release.mkdir()
    (release / "card.html").write_text("card")
    (tmp_path / "secret.txt").write_text("no")
    (release / "escape").symlink_to(tmp_path / "secret.txt")
    assert _inside(release, "card.html") == (release / "card.html").resolve()
    for rel in ("../secret.txt", "escape", "/etc/passwd", "missing.html", "."):
        assert _inside(release, rel) is None, rel
