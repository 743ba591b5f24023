"""A researcher's install, as docs/evaluation.md gives it: the sdist and the wheel built
from this checkout (``python -m build``: the wheel is built from the sdist, so the sdist
is complete), the wheel with ``[eval]`` and no other extra installed by pip into a fresh
virtual environment, and ``emerge evaluate`` run there on a release.

What it proves: the distribution (emerge-tkgu) builds, declares what the scorer imports,
ships its package data, and installs the ``emerge`` command, which scores a release with
no Spark, Sail, Delta, Airflow or Great Expectations present. To stay cheap it does not
download torch again: torch 2.13.0 and its own dependencies are linked into the fresh
environment from this one (pip then finds them installed, as after the docs' first
line), pip resolves everything else itself (from its cache when warm), pinned by
constraints.txt, and the paper's model comes from the verified cache ``make models``
fills (``$EMERGE_MODEL_CACHE``), as a second install finds it.
"""

from __future__ import annotations

import importlib.metadata as md
import json
import os
import re
import subprocess
import sys
import tarfile
import venv
from pathlib import Path

from hubkit import small_release
from packaging.requirements import Requirement
from repo import REPO

from emerge_lib.evaluation.models import ensure

DIST = "emerge-tkgu"
ABSENT = ("pyspark", "pysail", "deltalake", "airflow", "great_expectations", "xllamacpp")


def run(cmd: list[str], timeout: float, **kw) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, **kw)
    assert proc.returncode == 0, f"{cmd[:4]}: {(proc.stdout + proc.stderr)[-3000:]}"
    return proc


def norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def closure(name: str) -> list[md.Distribution]:
    """``name`` and what it requires here, recursively, extras included (torch asks for
    ``cuda-toolkit[cublas,…]``), markers evaluated."""
    seen: dict[tuple[str, str], md.Distribution] = {}
    todo = [(name, "")]
    while todo:
        key = todo.pop()
        if key in seen:
            continue
        dist = seen[key] = md.distribution(key[0])
        for text in dist.requires or ():
            req = Requirement(text)
            if req.marker is None or req.marker.evaluate({"extra": key[1]}):
                todo += [(req.name, "")] + [(req.name, extra) for extra in req.extras]
    return list({norm(d.metadata["Name"]): d for d in seen.values()}.values())


def link_installed(dists: list[md.Distribution], site: Path) -> list[str]:
    """Symlink each distribution's top-level files and its metadata (its RECORD lists
    both) into ``site``, unless the fresh environment has that distribution already (its
    own pip and setuptools); a folder several share (``nvidia/``) is linked once."""
    present = {norm(p.name.split("-")[0]) for p in site.glob("*.dist-info")}
    linked = []
    for dist in dists:
        if norm(dist.metadata["Name"]) in present:
            continue
        home = Path(str(dist.locate_file("")))
        for top in {Path(str(f)).parts[0] for f in dist.files or ()} - {"..", "__pycache__"}:
            if (home / top).exists() and not (site / top).exists():
                (site / top).symlink_to(home / top)
        linked.append(dist.metadata["Name"])
    return linked


def test_the_wheel_with_eval_installs_into_a_fresh_environment_and_scores(tmp_path: Path) -> None:
    dist = tmp_path / "dist"
    run([sys.executable, "-m", "build", "--outdir", str(dist), str(REPO)], timeout=900)
    sdist = next(dist.glob("emerge_tkgu-*.tar.gz"))
    wheel = next(dist.glob("emerge_tkgu-*.whl"))
    with tarfile.open(sdist) as tar:
        names = {n.split("/", 1)[1] for n in tar.getnames() if "/" in n}
    assert {"README.md", "setup.py", "pyproject.toml",
            "emerge_lib/core/presets/paper.yaml"} <= names
    assert any(n.startswith("emerge_lib/dumps/native/") and n.endswith(".c") for n in names)

    env_dir = tmp_path / "fresh"
    venv.create(env_dir, with_pip=True)
    py = env_dir / "bin" / "python"
    site = Path(run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                    timeout=60).stdout.strip())
    linked = link_installed(closure("torch"), site)
    assert "torch" in linked
    run([str(py), "-m", "pip", "install", "--quiet", "--no-compile", "-c",
         str(REPO / "constraints.txt"),
         f"{wheel}[eval]"], timeout=1500)
    installed = {norm(line.split("==")[0]) for line in run(
        [str(py), "-m", "pip", "list", "--format=freeze"], timeout=120).stdout.splitlines()}
    assert {DIST, "sentence-transformers", "torch", "aiohttp"} <= installed
    # no other extra came along: none of the builder's, Airflow's or the local LLM's parts
    absent = run([str(py), "-c", "import importlib.util; print([m for m in "
                  f"{list(ABSENT)!r} if importlib.util.find_spec(m)])"], timeout=60)
    assert absent.stdout.strip() == "[]"
    where = run([str(py), "-c", "import emerge_lib; print(emerge_lib.__file__)"], timeout=60,
                cwd=tmp_path, env={**os.environ, "PYTHONPATH": ""})
    assert where.stdout.startswith(str(env_dir))  # the installed wheel, not this checkout

    release = small_release(tmp_path / "release")
    gold = [json.loads(x) for f in sorted(release.glob("evaluation_set/*/*.jsonl"))
            for x in f.read_text().splitlines()]
    assert gold
    predictions = tmp_path / "oracle.jsonl"  # every gold triple, exactly
    predictions.write_text("".join(json.dumps({"hash_id": r["hash_id"], "model": "oracle",
                                               "predicted": [{"triple": t["triple"],
                                                              "triple_labels": t["triple_labels"],
                                                              "operation": None}
                                                             for t in r["tkgu_triples"]]}) + "\n"
                                   for r in gold))
    model = ensure()  # the paper's model, verified, where `make models` put it
    env = {**os.environ, "EMERGE_MODEL_CACHE": str(model.path.parent), "HF_HUB_OFFLINE": "1",
           "PYTHONPATH": ""}
    out = tmp_path / "results"
    scored = run([str(env_dir / "bin" / "emerge"), "evaluate", "--gold", str(release),
                  "--predictions", str(predictions), "--out", str(out)],
                 timeout=900, env=env, cwd=tmp_path)
    assert "recall" in scored.stdout.lower()
    rows = json.loads((out / "summary.json").read_text())
    overall = {(r["metric"], r["operation"]): r["value"] for r in rows if r["snapshot"] == "all"}
    assert overall and set(overall.values()) == {1.0}
    # every column by default, the authors' QID P/R/F1 and prediction-side completeness too
    assert {m for m, _ in overall} == {"recall", "completeness", "qid_precision", "qid_recall",
                                       "qid_f1", "pred_completeness"}
    # the package data came through the sdist and the wheel: a preset loads
    preset = run([str(env_dir / "bin" / "emerge"), "config", "-c", "paper"], timeout=120,
                 env=env, cwd=tmp_path)
    assert "warehouse:" in preset.stdout
