"""Packaging: extras per part, so `pip install emerge-tkgu[eval]` brings no Spark and no Airflow,
and what the library imports is declared."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
import tomllib
from pathlib import Path

from repo import REPO

PROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
HEAVY = {"pysail", "pyspark-client", "deltalake", "apache-airflow", "great-expectations"}
#: import name -> distribution name, where they differ
DIST = {"yaml": "pyyaml", "pyspark": "pyspark-client", "indexed_bzip2": "indexed-bzip2",
        "great_expectations": "great-expectations", "airflow": "apache-airflow",
        "sentence_transformers": "sentence-transformers", "markdown_it": "markdown-it-py",
        "sklearn": "scikit-learn"}


def names(requirements: list[str]) -> set[str]:
    return {re.split(r"[\[<>=!~ ;]", r, maxsplit=1)[0].lower() for r in requirements}


def extra(name: str) -> set[str]:
    out: set[str] = set()
    for req in PROJECT["optional-dependencies"][name]:
        m = re.fullmatch(r"emerge-tkgu\[([a-z0-9,-]+)\]", req)
        if m:
            for inner in m.group(1).split(","):
                out |= extra(inner)
        else:
            out |= names([req])
    return out


def test_the_core_and_the_scorer_bring_no_engine_and_no_airflow() -> None:
    core = names(PROJECT["dependencies"])
    assert core and not core & HEAVY
    assert not (core | extra("eval")) & HEAVY
    assert not (core | extra("hub")) & HEAVY  # a researcher reading a release
    assert {"pysail", "pyspark-client", "deltalake"} <= extra("build")
    assert {"apache-airflow", "pysail"} <= extra("airflow")
    assert extra("all") >= HEAVY


def test_every_imported_package_is_declared() -> None:
    stdlib = set(sys.stdlib_module_names) | {"emerge_lib", "_native", "_crc32"}
    # every extra counts: `relik` lives in an environment of its own, outside `all`
    declared = names(PROJECT["dependencies"]).union(
        *(extra(name) for name in PROJECT["optional-dependencies"]))
    imported: set[str] = set()
    for path in (REPO / "emerge_lib").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                imported |= {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                imported.add(node.module.split(".")[0])
    missing = {m for m in imported - stdlib if DIST.get(m, m).lower() not in declared}
    assert missing == set()


def test_the_cli_and_the_configuration_work_without_the_engine(tmp_path: Path) -> None:
    """`emerge --help` and `emerge config` import neither Spark, Sail, Delta nor Airflow."""
    script = """
import importlib.abc, sys
class Blocked(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {"pyspark", "pysail", "deltalake", "airflow", "great_expectations"}:
            raise ImportError(f"{name} is not installed here")
sys.meta_path.insert(0, Blocked())
from emerge_lib.cli import main
assert main(["config"]) == 0
try:
    main(["--help"])
except SystemExit as exc:
    assert exc.code == 0
import emerge_lib.core.schedule, emerge_lib.core.errors, emerge_lib.core.config
"""
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          cwd=tmp_path, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "warehouse:" in proc.stdout and "emerge build" not in proc.stderr


def test_release_format_and_manifest_errors_are_emerge_errors_and_stay_pure(
        tmp_path: Path) -> None:
    """Their errors are in the EmergeError family (the CLI prints one line; Airflow does
    not retry them), and both modules still import nothing outside the standard library,
    so the scorer and a release reader need neither Spark nor pyarrow."""
    script = """
import sys
before = set(sys.modules)  # what site and .pth files loaded
import emerge_lib.formats.manifest, emerge_lib.formats.format
from emerge_lib.core.errors import EmergeError
from emerge_lib.formats.manifest import ManifestError
from emerge_lib.formats.format import FormatError
assert issubclass(ManifestError, EmergeError) and not ManifestError("x").retryable
assert issubclass(FormatError, EmergeError) and issubclass(FormatError, ValueError)
outside = sorted({m.split(".")[0] for m in set(sys.modules) - before}
                 - set(sys.stdlib_module_names) - {"emerge_lib"})
assert outside == [], outside
"""
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          cwd=tmp_path, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
