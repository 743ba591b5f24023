"""Repository contracts: one room per layer, each importing only the rooms below it; no
import cycle; only the Airflow room imports Airflow; DAG files stay thin."""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
LIBRARY = REPO / "emerge_lib"
HEAVY = ("pyspark", "pysail", "deltalake", "torch", "sentence_transformers", "great_expectations")

#: which rooms each room may import (besides itself, and emerge_lib's root package).
#: Read top-down, this is docs/architecture.md's picture of the house.
ALLOWED: dict[str, set[str]] = {
    "core": set(),
    "catalog": {"core"},
    "text": set(),
    "dumps": {"core"},
    "sample": {"core", "dumps"},
    "release.format": {"core"},
    "release.manifest": {"core"},
    "release.about": set(),
    "release.schema": {"core", "release.format"},
    "release.card": {"core", "release.format", "release.about", "release.schema"},
    "release.croissant": {"core", "release.format", "release.about"},
    "ingest": {"core", "catalog", "dumps", "text"},
    "curation": {"core", "catalog", "release.format"},
    "transform": {"core", "catalog", "ingest", "curation", "release.format"},
    "validation": {"core", "catalog", "curation", "release.format"},
    "release": {"core", "catalog", "curation", "validation", "release.format",
                "release.manifest", "release.card", "release.about", "release.schema",
                "release.croissant"},
    "publish": {"core", "release.manifest"},
    "hub": {"core", "publish", "release.format", "release.manifest", "release.schema",
            "release.about"},
    "evaluation": {"core", "curation", "release.format", "release.manifest"},
    "annotation": {"core", "curation", "validation", "release", "release.format",
                   "release.manifest", "release.card"},
    "pipeline": {"core", "catalog", "dumps", "ingest", "transform", "curation", "validation",
                 "release", "publish", "evaluation"},
    # publish: the UI's link to a published manifest reads it with the publish room's client
    "airflow": {"core", "catalog", "pipeline", "publish"},
    "demo": {"core", "catalog", "curation", "pipeline", "publish", "release.manifest",
             "sample", "airflow.home"},
    "commands": {"core", "catalog", "curation", "demo", "evaluation", "hub", "ingest",
                 "pipeline", "publish", "release.card", "release.format", "release.manifest",
                 "sample", "transform", "annotation", "airflow.home"},
    "cli": {"core", "commands"},
    # the package root: its version, and the one-line loader re-exported (imported lazily)
    "emerge_lib": {"core", "hub"},
}
#: modules of a room that another room may import without the room's rules applying to
#: it: the Airflow room's throw-away home imports nothing of Airflow
ALONE = {"airflow.home", "release.format", "release.manifest", "release.card",
         "release.schema", "release.about", "release.croissant"}


def python_files(folder: str) -> list[Path]:
    return sorted((REPO / folder).rglob("*.py"))


def module_of(path: Path) -> str:
    return ".".join(path.relative_to(REPO).with_suffix("").parts).removesuffix(".__init__")


def room_of(module: str) -> str:
    """``emerge_lib.ingest.wikidata.extract`` → ``ingest``; the release's file-only modules
    and the Airflow home are rooms of their own."""
    parts = module.split(".")[1:]
    if not parts:
        return ""
    two = ".".join(parts[:2])
    return two if two in ALONE else parts[0]


def _type_checking(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)


def imports(path: Path) -> Iterator[str]:
    """Every module ``path`` imports, at any depth (functions too), but not those only for
    type checkers (``if TYPE_CHECKING:``): they never run."""
    skip: set[int] = set()
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if _type_checking(node):
            skip |= {id(n) for n in ast.walk(node)}
    modules = {module_of(p) for p in python_files("emerge_lib")}
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import):
            yield from (a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for a in node.names:  # a submodule named in the import is imported itself
                full = f"{node.module}.{a.name}"
                yield full if full in modules else node.module


def test_only_init_and_cli_sit_at_the_library_root() -> None:
    loose = sorted(p.name for p in LIBRARY.glob("*.py"))
    assert loose == ["__init__.py", "cli.py"]
    assert sorted(p.name for p in LIBRARY.iterdir() if p.is_dir() and p.name != "__pycache__"
                  ) == sorted({"core", "catalog", "text", "dumps", "sample", "ingest", "curation",
                               "transform", "validation", "release", "publish", "evaluation",
                               "hub", "annotation", "pipeline", "airflow", "demo", "commands"})


def test_each_room_imports_only_the_rooms_below_it() -> None:
    offenders = []
    for path in python_files("emerge_lib"):
        mine = room_of(module_of(path)) or "emerge_lib"
        allowed = ALLOWED.get(mine, ALLOWED.get(mine.split(".")[0], set()))
        if path.name == "cli.py" and path.parent == LIBRARY:
            allowed = ALLOWED["cli"]
        for name in imports(path):
            if not name.startswith("emerge_lib.") or name == "emerge_lib":
                continue
            theirs = room_of(name)
            if theirs in (mine, mine.split(".")[0]) or theirs.split(".")[0] == mine:
                continue
            if theirs not in allowed and theirs.split(".")[0] not in allowed:
                offenders.append(f"{path.relative_to(REPO)} imports {name} ({theirs})")
    assert offenders == []


def test_no_import_cycle_in_the_library() -> None:
    """Imports inside functions count: a cycle that works only because one side imports
    lazily is still a cycle."""
    modules = {module_of(p): p for p in python_files("emerge_lib")}
    edges = {m: {n for n in imports(p) if n in modules and n != m} for m, p in modules.items()}
    cycles, index, low, stack, on, counter = [], {}, {}, [], set(), [0]
    sys.setrecursionlimit(10_000)

    def visit(v: str) -> None:  # Tarjan's strongly connected components
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for v in edges:
        if v not in index:
            visit(v)
    assert cycles == []


def test_only_the_airflow_room_imports_airflow() -> None:
    offenders = []
    for path in python_files("emerge_lib"):
        if room_of(module_of(path)) == "airflow":
            continue
        for name in imports(path):
            if name == "airflow" or name.startswith("airflow."):
                offenders.append(str(path.relative_to(REPO)))
    assert offenders == []
    # and the Airflow glue is an installed provider package, not a folder on sys.path: the
    # plugins folder holds one thin file, the plugin that registers emerge_lib.airflow.links
    assert "emerge_lib.airflow.provider:get_provider_info" in (REPO / "pyproject.toml").read_text()
    assert sorted(p.name for p in (REPO / "plugins").iterdir()
                  if p.name != "__pycache__") == ["emerge.py"]
    plugin = REPO / "plugins" / "emerge.py"
    assert {n for n in imports(plugin) if n.startswith("emerge_lib")} == {"emerge_lib.airflow.links"}


def test_dag_files_do_no_heavy_work_at_import() -> None:
    files = python_files("dags")
    assert len(files) == 4
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


def test_tests_sit_in_tiers_with_their_helpers_in_kits() -> None:
    tests = REPO / "tests"
    loose = sorted(p.name for p in tests.glob("*.py"))
    assert loose == ["conftest.py"]
    for tier in ("unit", "stages", "e2e", "system"):
        assert list((tests / tier).glob("test_*.py")), tier
    assert not list((tests / "kits").glob("test_*.py"))


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


def test_llama_cpp_is_compiled_where_installed_and_for_any_x86_64_cpu() -> None:
    """requirements.txt builds llama-cpp-python from source: the image has the compilers,
    and both the image and `make` build it for any CPU (a native build on one machine
    can SIGILL on another, or on a VM that advertises AMX and refuses it)."""
    assert "llama-cpp-python" in (REPO / "requirements.txt").read_text()
    dockerfile = (REPO / "Dockerfile").read_text()
    packages = dockerfile.split("apt-get install", 1)[1].split("&& rm", 1)[0].split()
    assert {"g++", "cmake", "gcc"} <= set(packages)
    for text in (dockerfile, (REPO / "Makefile").read_text()):
        install = next(line for line in text.splitlines() if "-r requirements.txt" in line)
        assert 'CMAKE_ARGS="-DGGML_NATIVE=OFF' in install

