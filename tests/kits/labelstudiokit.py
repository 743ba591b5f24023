"""The real Label Studio server of the system tests: started once per session by
scripts/labelstudio-local.sh (its own virtualenv, `make labelstudio`; 127.0.0.1, a free
port, a generated token), stopped by its PID; and the few REST calls a project round
trip takes (httpx, emerge's own client: Label Studio's SDK lives in its venv)."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "scripts" / "labelstudio-local.sh"
VENV_BIN = REPO / ".venv-labelstudio" / "bin"


@dataclass
class LabelStudio:
    url: str
    token: str
    home: Path

    def client(self) -> httpx.Client:
        return httpx.Client(base_url=self.url, timeout=60,
                            headers={"Authorization": f"Token {self.token}"})


def starting(home: Path) -> subprocess.Popen:
    """Start the server in the background (a fresh data folder takes tens of seconds:
    Django's migrations); :func:`ready` waits for it."""
    if not (VENV_BIN / "label-studio").exists():
        if os.environ.get("CI"):
            pytest.fail("Label Studio is missing: make test installs it (make labelstudio)")
        pytest.skip("Label Studio is not installed here: make labelstudio")
    # the server dies with this test process, however it ends (a watchdog of the script)
    env = {**os.environ, "LABEL_STUDIO_HOME": str(home), "LS_VENV_BIN": str(VENV_BIN),
           "LS_PARENT_PID": str(os.getpid())}
    env.pop("LABEL_STUDIO_PORT", None)
    return subprocess.Popen([str(SCRIPT), "start"], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)


def ready(proc: subprocess.Popen, home: Path) -> LabelStudio:
    out, _ = proc.communicate(timeout=400)
    assert proc.returncode == 0, out
    run = home / "run"
    return LabelStudio(f"http://127.0.0.1:{(run / 'port').read_text().strip()}",
                       (run / "token").read_text().strip(), home)


def stop(home: Path) -> None:
    env = {**os.environ, "LABEL_STUDIO_HOME": str(home), "LS_VENV_BIN": str(VENV_BIN)}
    subprocess.run([str(SCRIPT), "stop"], env=env, capture_output=True, timeout=60)


def serve(home: Path) -> Iterator[subprocess.Popen]:
    proc = starting(home)
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.wait(timeout=400)
        stop(home)


def check(response: httpx.Response) -> Any:
    assert response.status_code < 300, f"{response.request.url}: {response.status_code} " \
                                       f"{response.text[:500]}"
    return response.json()
