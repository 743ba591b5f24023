"""Repository contracts that import-linter cannot hold (its contracts, in pyproject.toml,
hold the room table of docs/architecture.md: `make lint`): only ``__init__.py`` and
``cli.py`` at the library's root, every room in the contracts and in the table, the
Airflow glue an installed provider, DAG files that stay thin, tests in tiers."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

from repo import REPO

ROOMS = ("core", "catalog", "text", "dumps", "sample", "formats", "ingest", "curation",
         "transform", "validation", "release", "publish", "evaluation", "hub", "annotation",
         "pipeline", "airflow", "demo", "commands")
LIBRARY = REPO / "emerge_lib"
HEAVY = ("pyspark", "pysail", "deltalake", "torch", "sentence_transformers", "great_expectations")


def test_only_init_and_cli_sit_at_the_library_root() -> None:
    loose = sorted(p.name for p in LIBRARY.glob("*.py"))
    assert loose == ["__init__.py", "cli.py"]
    assert sorted(p.name for p in LIBRARY.iterdir() if p.is_dir() and p.name != "__pycache__"
                  ) == sorted(ROOMS)


def _contracts() -> list[dict[str, Any]]:
    return tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["importlinter"][
        "contracts"]


def test_every_room_is_in_the_import_contracts_and_in_the_documented_table() -> None:
    """The layers contract places every room (``exhaustive``); each room has a forbidden
    contract naming what it may not import; docs/architecture.md's table says the same."""
    contracts = _contracts()
    layers = next(c for c in contracts if c["type"] == "layers"
                  and c["containers"] == ["emerge_lib"])
    placed = {room.strip() for layer in layers["layers"] for room in layer.split("|")}
    assert placed == set(ROOMS) | {"cli"}
    forbidden = {c["source_modules"][0].removeprefix("emerge_lib."): c for c in contracts
                 if c["type"] == "forbidden" and len(c["source_modules"]) == 1}
    assert set(ROOMS) <= set(forbidden)
    rows = re.findall(r"^\| `(\w+)` \| ([^|]*) \|$",
                      (REPO / "docs" / "architecture.md").read_text(), re.M)
    table = {room: set(re.findall(r"\b[a-z]+\b", re.sub(r"\([^)]*\)", "", allowed)))
             - {"nothing", "of", "emerge"} for room, allowed in rows}
    for room in ROOMS:
        banned = {m.removeprefix("emerge_lib.").split(".")[0]
                  for m in forbidden[room]["forbidden_modules"]
                  if not m.startswith("emerge_lib.airflow.")}
        assert table[room] == set(ROOMS) - banned - {room}, room


def test_the_airflow_glue_is_an_installed_provider_and_one_thin_plugin() -> None:
    """The glue is an installed provider package, not a folder on sys.path: the plugins
    folder holds one thin file, the plugin that registers emerge_lib.airflow.links."""
    assert "emerge_lib.airflow.provider:get_provider_info" in (REPO / "pyproject.toml").read_text()
    assert sorted(p.name for p in (REPO / "plugins").iterdir()
                  if p.name != "__pycache__") == ["emerge.py"]
    tree = ast.parse((REPO / "plugins" / "emerge.py").read_text())
    imported = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
                and node.module} | {a.name for node in ast.walk(tree)
                                    if isinstance(node, ast.Import) for a in node.names}
    assert {n for n in imported if n.startswith("emerge_lib")} == {"emerge_lib.airflow.links"}
    # Airflow refuses a provider whose package name is not its distribution's
    import tomllib

    from emerge_lib.airflow.provider import get_provider_info

    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["name"]
    assert get_provider_info()["package-name"] == project == "emerge-tkgu"
    assert f"airflow providers get {project}" in (REPO / "Dockerfile").read_text()


def test_dag_files_do_no_heavy_work_at_import() -> None:
    files = sorted((REPO / "dags").glob("*.py"))
    assert len(files) == 5
    # one interpreter runs every file in turn (as the dag-processor does); a heavy module
    # is blamed on the first file after which it is loaded
    code = (
        "import runpy, sys, time\n"
        f"for path in {[str(p) for p in files]!r}:\n"
        "    t = time.monotonic()\n"
        "    runpy.run_path(path)\n"
        f"    heavy = [m for m in {HEAVY!r} if m in sys.modules]\n"
        "    print(repr((path, heavy, time.monotonic() - t)))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO
    ).stdout.strip().splitlines()
    results = [ast.literal_eval(line) for line in out if line.startswith("(")]
    assert len(results) == len(files)
    for path, heavy, seconds in results:
        name = Path(path).name
        assert heavy == [], f"{name} imports {heavy} at parse time"
        assert seconds < 30, f"{name} took {seconds:.1f}s to import"


def test_tests_sit_in_tiers_by_room_with_their_helpers_in_kits() -> None:
    """A module's tests are found from its path: emerge_lib/ROOM/…/MODULE.py is tested in
    tests/TIER/ROOM/…/test_MODULE.py (or test_MODULE_PART.py; a package's tests are named
    after it); the root's cli.py and the DAG files of dags/ in tests/TIER/test_cli.py and
    test_dags*.py; whole-repository contracts in tests/unit/repository/, the benchmarks'
    harness in tests/unit/benchmarks/. Kits hold helpers, never a test."""
    tests = REPO / "tests"
    assert sorted(p.name for p in tests.glob("*.py")) == ["conftest.py"]
    modules = {p.relative_to(LIBRARY).with_suffix("").as_posix().removesuffix("/__init__")
               for p in LIBRARY.rglob("*.py")} | {"dumps/native"}
    strays = []
    for tier in ("unit", "engine", "e2e", "system"):
        files = list((tests / tier).rglob("test_*.py"))
        assert files, tier
        for path in files:
            rel = path.relative_to(tests / tier)
            name = rel.stem.removeprefix("test_")
            room = rel.parent.as_posix()
            if room in ("repository", "benchmarks") or (room == "." and (
                    name == "cli" or name.split("_")[0] == "dags")):
                continue
            wanted = [m for m in modules if m.startswith(f"{room}/") and (
                name == m.removeprefix(f"{room}/") or name.startswith(f"{m.removeprefix(room + '/')}_"))]
            if not wanted:
                strays.append(str(path.relative_to(tests)))
    assert strays == []
    for kit in (tests / "kits").rglob("*.py"):
        assert not kit.name.startswith("test_"), kit
        assert "\ndef test_" not in kit.read_text(encoding="utf-8"), kit


def test_layout_exists() -> None:
    for p in ["dags", "emerge_lib", "tests", "docs", "docker-compose.yaml",
              "Dockerfile", "requirements.txt", "Makefile", ".ci/run", "pyproject.toml"]:
        assert (REPO / p).exists(), p
    readme = (REPO / "README.md").read_text()
    first_block = readme.split("```bash\n", 1)[1].split("```", 1)[0]
    commands = [line.split("#")[0].strip() for line in first_block.splitlines() if line.strip()]
    assert commands == ["make demo", "make test"]  # the newcomer's two set-up commands
    assert "make test" in (REPO / ".ci/run").read_text()


def test_compose_file_is_consistent() -> None:
    """No Docker engine here: check the compose file statically."""
    import yaml

    compose = yaml.safe_load((REPO / "docker-compose.yaml").read_text())
    services = compose["services"]
    assert {"postgres", "redis", "s3", "sail", "spark-connect", "airflow-init",
            "airflow-api-server", "airflow-scheduler", "airflow-dag-processor",
            "airflow-triggerer", "airflow-worker"} <= set(services)
    for name, svc in services.items():
        assert "image" in svc or "build" in svc, name
        for dep in svc.get("depends_on", []):
            assert dep in services, f"{name} depends on unknown {dep}"
        if name not in ("airflow-init", "airflow-cli"):
            assert "healthcheck" in svc, name
    for volume_user in services.values():
        for v in volume_user.get("volumes", []):
            src = v.split(":", 1)[0]
            assert src.startswith("./") or src in compose["volumes"], v
    assert services["spark-connect"]["profiles"] == ["spark"]
    assert (REPO / "config" / "emerge.yaml").is_file()
    # the gpu profile serves each curation route under the name the release records,
    # at the URL the emerge services are given
    from emerge_lib.core.config import RELEASED_LLM

    env = compose["x-airflow-env"]
    for judge, name in RELEASED_LLM.items():
        svc = services[f"vllm-{judge}"]
        assert svc["profiles"] == ["gpu"] and f"--served-model-name {name}" in svc["command"]
        assert env[f"EMERGE__CURATION__{judge.upper()}__URL"] == f"http://vllm-{judge}:8000/v1"
    assert "--tensor-parallel-size 8" in services["vllm-deprecations"]["command"]
    # one JWT secret and fernet key for every Airflow container, from the environment
    assert env["AIRFLOW__API_AUTH__JWT_SECRET"].startswith("${AIRFLOW_JWT_SECRET:?")
    assert env["AIRFLOW__CORE__FERNET_KEY"].startswith("${AIRFLOW_FERNET_KEY:?")
    # curation's pools, one per model, from the configuration's workers
    assert "emerge_lib.airflow.pools" in " ".join(services["airflow-init"]["command"])
    dockerfile = (REPO / "Dockerfile").read_text()
    assert dockerfile.startswith("# ") and "FROM apache/airflow:3.3.2" in dockerfile
    assert "requirements.txt" in dockerfile and "torch==2.13.0" in dockerfile


def test_the_local_llm_server_is_prebuilt_and_the_demo_waits_for_no_torch() -> None:
    """llama.cpp's server comes prebuilt (xllamacpp, pinned: its answers were checked
    against the compiled llama-cpp-python it replaced), so nothing compiles it, and the
    image has its OpenMP runtime; `make demo` installs the demo's requirements only (no
    torch: PyPI's Linux torch is the CUDA build, gigabytes), `make test` the rest."""
    demo = (REPO / "requirements-demo.txt").read_text()
    assert "\nxllamacpp==2026.10.11549\n" in demo
    assert not {"torch", "sentence-transformers"} & {
        line.split("==")[0].split(">")[0] for line in demo.splitlines()}
    assert (REPO / "requirements.txt").read_text().splitlines().count(
        "-r requirements-demo.txt") == 1
    dockerfile, makefile = (REPO / "Dockerfile").read_text(), (REPO / "Makefile").read_text()
    for text in (dockerfile, makefile, demo, (REPO / "requirements.txt").read_text()):
        assert "llama-cpp-python" not in text and "CMAKE_ARGS" not in text
    packages = dockerfile.split("apt-get install", 1)[1].split("&& rm", 1)[0].split()
    assert "libgomp1" in packages
    demo_rule = makefile.split("\n$(DEMO_STAMP):", 1)[1].split("\n\n", 1)[0]
    assert "-r requirements-demo.txt" in demo_rule and "torch" not in demo_rule
    assert "\ndemo: $(DEMO_STAMP)\n" in makefile and "\n$(STAMP): $(DEMO_STAMP)" in makefile



def test_citations_name_pages_of_the_repository() -> None:
    """The code and the docs cite the definitions as docs/semantics.md §…, the page that
    holds them here; a design file outside the repository is no citation a reader can
    follow (and `emerge sample --help` showed one)."""
    name = "DESIGN"  # spelled apart, so that this test does not find itself
    cited = re.compile(rf"{name}(\.md)?\s*§|{name}\.md|{name}'s")
    found = [f"{p.relative_to(REPO)}:{n}" for folder in ("emerge_lib", "dags", "scripts",
                                                          "benchmarks", "docs", "tests")
             for p in sorted((REPO / folder).rglob("*")) if p.suffix in (".py", ".md")
             for n, text in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
             if cited.search(text)]
    assert found == []
    sections = (REPO / "docs" / "semantics.md").read_text(encoding="utf-8")
    for section in ("### 1.1 ", "### 1.2 ", "### 1.3 "):
        assert section in sections
