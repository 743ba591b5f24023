"""The human annotation round trip through the real Label Studio (1.23.2, its own
virtualenv, started once by scripts/labelstudio-local.sh): a curated, validated release of
the tiny world → ``emerge annotate export`` → a Label Studio project with the exported
labeling config and tasks → two annotators' answers through the REST API (users created,
``completed_by``) → the project's JSON export → ``emerge annotate import`` → the agreement
table. The release stays verified (every file's sha256) and validated."""

from __future__ import annotations

import json
import time
from pathlib import Path

import labelstudiokit
import pytest
from annotatekit import curated_release, emerge, planted

from emerge_lib.formats.manifest import read_manifest, verify_release


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """The server, starting in the background while the test builds its release."""
    home = tmp_path_factory.mktemp("labelstudio")
    started = time.monotonic()
    for proc in labelstudiokit.serve(home):
        yield proc, home, started


def test_export_annotate_in_label_studio_import_and_agree(server, worlds, spark,
                                                          tmp_path: Path) -> None:
    proc, home, started = server
    release = curated_release(worlds, spark, tmp_path)
    done = emerge("annotate", "export", "--release", str(release), "--per-op", "2",
                  "--seed", "7", "--out", str(tmp_path / "export"))
    assert done.returncode == 0, done.stderr
    tasks = json.loads((tmp_path / "export" / "tasks.json").read_text())
    ls = labelstudiokit.ready(proc, home)
    print(f"Label Studio answered {time.monotonic() - started:.1f}s after its start")
    check = labelstudiokit.check
    with ls.client() as client:
        project = check(client.post("/api/projects", json={
            "title": "emerge", "maximum_annotations": 2,
            "label_config": (tmp_path / "export" / "labeling_config.xml").read_text()}))
        imported = check(client.post(f"/api/projects/{project['id']}/import",
                                     params={"return_task_ids": "true"}, json=tasks))
        assert imported["task_count"] == len(tasks) >= 10
        users = {check(client.post("/api/users/", json={
            "email": f"{name}@emerge.local", "username": name}))["id"]: name
            for name in ("annotator_1", "annotator_2")}
        for task_id in imported["task_ids"]:
            data = check(client.get(f"/api/tasks/{task_id}"))["data"]
            for uid, name in users.items():
                choice = "YES" if planted({"data": data}, name) else "NO"
                check(client.post(f"/api/tasks/{task_id}/annotations/", json={
                    "completed_by": uid, "result": [{
                        "from_name": "verdict", "to_name": "passage", "type": "choices",
                        "value": {"choices": [choice]}}]}))
        exported = client.get(f"/api/projects/{project['id']}/export",
                              params={"exportType": "JSON", "download_all_tasks": "true"})
    assert exported.status_code == 200
    (tmp_path / "export.json").write_bytes(exported.content)

    done = emerge("annotate", "import", "--release", str(release), "--from",
                  str(tmp_path / "export.json"),
                  *(f"--annotator={uid}={name}" for uid, name in users.items()))
    assert done.returncode == 0, done.stderr
    check_release = verify_release(release)
    assert check_release.ok and not check_release.unlisted
    verdict = read_manifest(release)["validation"]
    assert verdict["success"] is True and verdict["human_annotation"]["success"] is True
    # every answer came home, in the authors' format, as the annotator gave it
    entries = {(line["hash_id"], tuple(t["triple"]), e["prompt_type"], e["annotator_name"]):
               e for line in map(json.loads, (release / "human_annotation" /
                                              "solved_disagreements.jsonl").open())
               for t in line["tkgu_triples"] for e in t["human_assessment"]}
    assert len(entries) == 2 * len(tasks)
    for task in tasks:
        d = task["data"]
        for name in users.values():
            e = entries[(d["hash_id"], tuple(d["triple"]), d["prompt_type"], name)]
            assert list(e) == ["annotator_name", "prompt_type", "assessment",
                               "human_readable_triple", "definition_relation"]
            assert e["assessment"] is planted(task, name)
            assert e["human_readable_triple"] == d["human_readable_triple"]
    done = emerge("annotate", "agreement", "--annotations", str(release), "--out",
                  str(tmp_path / "agreement"))
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "agreement" / "agreement.json").read_bytes() == \
        (release / "agreement" / "agreement.json").read_bytes()
    assert 'id="agreement"' in (release / "README.md").read_text()
