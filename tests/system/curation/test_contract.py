"""The full-vLLM tier of curation's request contract: the bodies the curate stage's client
sends (emerge_lib.curation.contract) through vLLM's own code in vLLM's own environment
(.venv-vllm: `make vllm-env`, 9.5 GB; `make test-vllm` runs this file with it), on the
CPU: ChatCompletionRequest takes each, none of our fields ignored; to_sampling_params
carries our temperature, max_tokens and constraint; the backend vLLM's "auto" picks is
xgrammar; the constraint as vLLM holds it, compiled by vLLM's xgrammar, accepts every
answer our parser reads and refuses the stub's garbage. And the JSON schema `make test`
checks the bodies against is the one this vLLM exports. Skipped where that environment is
not (CI: `make test` holds the bodies to the exported schema and the same xgrammar in
tests/unit/curation/test_contract.py)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from repo import REPO

from emerge_lib.curation import contract

SCRIPT = REPO / "scripts" / "vllm_contract.py"
SCHEMA = REPO / "tests" / "kits" / "vllm" / "ChatCompletionRequest.schema.json"


@pytest.fixture(scope="module")
def vllm_python() -> Path:
    python = Path(os.environ.get("EMERGE_VLLM_PYTHON") or REPO / ".venv-vllm" / "bin" / "python")
    if not python.is_file():
        pytest.skip(f"vLLM's own environment is not here ({python}): `make test-vllm` builds "
                    "it (make vllm-env, 9.5 GB) and runs this tier")
    return python


def run(python: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    proc = subprocess.run([str(python), str(SCRIPT), *args], capture_output=True, text=True,
                          timeout=900, env={**env, "VLLM_LOGGING_LEVEL": "WARNING"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc


def test_vllm_takes_every_body_and_its_xgrammar_reads_our_answers(vllm_python: Path,
                                                                  tmp_path: Path) -> None:
    bodies = contract.request_bodies()
    data = {"bodies": [{"label": b.label, "n": b.n, "body": b.body} for b in bodies],
            "accepted": contract.accepted_answers(), "garbage": contract.garbage_answers()}
    (tmp_path / "in.json").write_text(json.dumps(data))
    run(vllm_python, "check", str(tmp_path / "in.json"), str(tmp_path / "out.json"))
    report = json.loads((tmp_path / "out.json").read_text())
    print(f"vLLM {report['vllm']} (xgrammar {report['xgrammar']}): took {report['taken']} of "
          f"{report['bodies']} bodies, {report['answers_checked']} answer checks, "
          f"{len(report['failures'])} failures, in {report['seconds']}s")
    assert report["failures"] == []
    assert report["taken"] == report["bodies"] == len(bodies) and report["answers_checked"]
    exported = json.loads(SCHEMA.read_text())
    assert report["vllm"] == exported["vllm"] and report["xgrammar"] == exported["xgrammar"]


def test_the_schema_make_test_checks_against_is_this_vllms(vllm_python: Path,
                                                           tmp_path: Path) -> None:
    run(vllm_python, "schema", str(tmp_path / "schema.json"))
    fresh = json.loads((tmp_path / "schema.json").read_text())
    kept = json.loads(SCHEMA.read_text())
    assert fresh == kept, "re-export it: .venv-vllm/bin/python scripts/vllm_contract.py " \
                          f"schema {SCHEMA.relative_to(REPO)}"
