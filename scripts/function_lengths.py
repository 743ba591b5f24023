"""`make lint`'s function-length check: no function of emerge_lib is longer than LIMIT
lines (its ``def`` to its last line, docstring included), but the declarative SQL builders
of EXCEPTIONS, which are mostly one query's text. Prints the longest functions with
``--top N``."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
LIMIT = 120
#: declarative SQL builders: a query's text, its inputs and its write, in one place
EXCEPTIONS = {
    "emerge_lib/transform/align.py:build_instances",
    "emerge_lib/transform/deltas.py:build_deltas",
}


def lengths() -> list[tuple[int, str]]:
    """(lines, ``path:function``) of every function of emerge_lib, longest first."""
    out = []
    for path in sorted((REPO / "emerge_lib").rglob("*.py")):
        rel = path.relative_to(REPO).as_posix()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                end = node.end_lineno or node.lineno
                out.append((end - node.lineno + 1, f"{rel}:{node.name}"))
    return sorted(out, reverse=True)


def main(argv: list[str]) -> int:
    found = lengths()
    if argv[1:2] == ["--top"]:
        for n, name in found[: int(argv[2])]:
            print(f"{n:5d}  {name}{'  (SQL builder)' if name in EXCEPTIONS else ''}")
        return 0
    long = [(n, name) for n, name in found if n > LIMIT and name not in EXCEPTIONS]
    for n, name in long:
        print(f"{name}: {n} lines, over {LIMIT} (scripts/function_lengths.py): cut it by job")
    stale = EXCEPTIONS - {name for n, name in found if n > LIMIT}
    for name in sorted(stale):
        print(f"{name}: in EXCEPTIONS but not over {LIMIT} lines (or gone): take it out")
    return 1 if long or stale else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
