"""`make lint` fails on what it promises to refuse: an upward import between rooms (the
import contracts of pyproject.toml, on a copy of emerge_lib with one planted) and a new
escape from the type checker (`Any` or `type: ignore` past typing-ratchet.json)."""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

REPO = Path(__file__).resolve().parents[3]


def _typecheck() -> ModuleType:
    spec = importlib.util.spec_from_file_location("typecheck", REPO / "scripts" / "typecheck.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _copy(tmp_path: Path) -> Path:
    """emerge_lib and the contracts, in a folder of their own."""
    shutil.copytree(REPO / "emerge_lib", tmp_path / "emerge_lib",
                    ignore=shutil.ignore_patterns("__pycache__", "*.so"))
    shutil.copy(REPO / "pyproject.toml", tmp_path / "pyproject.toml")
    return tmp_path


def _lint_imports(root: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(Path(sys.executable).with_name("lint-imports")), "--no-cache"],
                          cwd=root, env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin"},
                          capture_output=True, text=True, timeout=300, check=False)


def test_the_contracts_hold_on_the_tree_and_refuse_a_planted_upward_import(tmp_path) -> None:
    root = _copy(tmp_path)
    clean = _lint_imports(root)
    assert clean.returncode == 0, clean.stdout[-2000:]
    # core is the ground floor: it may not reach up into the release's reader (hub)
    (root / "emerge_lib" / "core" / "planted.py").write_text("import emerge_lib.hub.load\n")
    broken = _lint_imports(root)
    assert broken.returncode != 0
    assert "BROKEN" in broken.stdout and "emerge_lib.core.planted" in broken.stdout


def test_a_new_any_or_type_ignore_fails_the_typecheck(tmp_path, monkeypatch,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    typecheck = _typecheck()
    (tmp_path / "emerge_lib").mkdir()
    module = tmp_path / "emerge_lib" / "m.py"
    module.write_text("from typing import Any\n\n\ndef f(x: Any) -> int:\n    return 1\n")
    ratchet = tmp_path / "typing-ratchet.json"
    ratchet.write_text(json.dumps({"Any annotations": 1, "type: ignore": 0}))
    monkeypatch.setattr(typecheck, "REPO", tmp_path)
    monkeypatch.setattr(typecheck, "ESCAPES", ratchet)
    assert typecheck.escapes() == {"Any annotations": 1, "type: ignore": 0}
    assert typecheck.check_escapes()
    module.write_text(module.read_text() + "\n\ndef g() -> Any:\n    return 1  # type: ignore\n")
    assert typecheck.escapes() == {"Any annotations": 2, "type: ignore": 1}
    assert not typecheck.check_escapes()
    said = capsys.readouterr().out
    assert "more Any annotations lines" in said and "more type: ignore lines" in said


def test_the_repositorys_escapes_are_within_the_ratchet() -> None:
    typecheck = _typecheck()
    allowed = json.loads((REPO / "typing-ratchet.json").read_text())
    assert all(n <= allowed[name] for name, n in typecheck.escapes().items())
