"""The docs run as written: every shell and Python block of the README,
docs/using-a-release.md and docs/evaluation.md runs, from the folder where a newcomer ran
`make demo`, on the release that `emerge demo --out demo` (what `make demo` runs once
installed: the snapshot DAG through Airflow, curation by the local llama.cpp server, the
local S3 server) has just made, and what a block shows is what the product prints
(tests/kits/docskit.py says how blocks are read and matched). A block that cannot run
here says so above its fence, with the reason; an example that drifts from the product
fails here.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from docskit import RUNNABLE, Block, blocks, problems
from repo import REPO

from emerge_lib.evaluation.models import ensure

PAGES = ["README.md", "docs/using-a-release.md", "docs/evaluation.md"]
BIN = Path(sys.executable).parent


@pytest.fixture(scope="module")
def newcomer(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """A folder where `emerge demo --out demo` ran (as `make demo` runs it, beside the
    checkout's .venv), and the environment a newcomer's shell there has (the venv's
    commands first on PATH, as after `source .venv/bin/activate`)."""
    home = tmp_path_factory.mktemp("newcomer")
    (home / ".venv").symlink_to(sys.prefix)  # the checkout's environment, as make made it
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
           "HF_HUB_OFFLINE": "1", "HF_HOME": str(home / ".hf"), "MPLBACKEND": "Agg",
           "EMERGE_MODEL_CACHE": str(ensure().path.parent)}  # `make models`' verified copy
    demo = subprocess.run([str(BIN / "emerge"), "demo", "--out", "demo"], cwd=home, env=env,
                          capture_output=True, text=True, timeout=2400)
    assert demo.returncode == 0, (demo.stdout + demo.stderr)[-4000:]
    assert (home / "demo" / "release" / "manifest.json").is_file()
    return home, env


def page_blocks() -> dict[str, list[Block]]:
    return {page: [b for b in blocks(REPO / page) if b.lang in RUNNABLE] for page in PAGES}


def test_every_block_runs_or_says_why_not() -> None:
    """Each page has its blocks; a block that is not run gives a reason, and a reason
    that names a test names one that exists."""
    found = page_blocks()
    assert all(found.values()), found
    for page, page_found in found.items():
        for block in page_found:
            if block.not_run is None:
                continue
            assert len(block.not_run.split()) >= 3, block.where
            for word in block.not_run.replace("(", " ").replace(")", " ").split():
                if word.startswith("tests/"):
                    assert (REPO / word.rstrip(",;:")).is_file(), (page, word)
    assert sum(b.not_run is None for b in found["docs/using-a-release.md"]) >= 5
    assert sum(b.not_run is None for b in found["docs/evaluation.md"]) >= 2
    assert sum(b.not_run is None for b in found["README.md"]) >= 1


@pytest.mark.parametrize("page", PAGES)
def test_the_page_runs_on_the_demo_release(page: str, newcomer) -> None:
    home, env = newcomer
    todo = [b for b in page_blocks()[page] if b.not_run is None]
    assert todo, f"{page}: no block to run"
    spec, out = home / f"{Path(page).stem}.blocks.json", home / f"{Path(page).stem}.out.json"
    spec.write_text(json.dumps([{"where": b.where, "lang": b.lang, "text": b.text}
                                for b in todo]))
    proc = subprocess.run([sys.executable, str(REPO / "tests" / "kits" / "docskit.py"),
                           str(spec), str(out)], cwd=home, env=env, capture_output=True,
                          text=True, timeout=2400)
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = json.loads(out.read_text())
    found = [p for block, result in zip(todo, results, strict=True)
             for p in problems(block, result)]
    assert found == [], "\n\n".join(found)
