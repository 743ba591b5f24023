"""`make lint`'s type check: mypy over emerge_lib (pyproject.toml's [tool.mypy]), held to a
ratchet.

The rooms pyproject.toml lists as strict must have no error at all. Every other file may
have at most as many errors (of the default checks) as ``mypy-ratchet.json`` records for
it: a new error fails, a fixed one should be locked in (``--update`` writes the counts
as they are; a count can only fall). Prints mypy's errors of the files over their count.
The escapes from the checker are held the same way: the lines of emerge_lib annotated
``Any`` (``x: Any``, ``-> Any``) and the ``type: ignore`` comments may not grow past
``typing-ratchet.json``.

    python scripts/typecheck.py            # check
    python scripts/typecheck.py --update   # after fixing errors: lower the ratchet
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
RATCHET = REPO / "mypy-ratchet.json"
ESCAPES = REPO / "typing-ratchet.json"
#: what counts as an escape from the type checker, per line of emerge_lib
ESCAPE_PATTERNS = {"Any annotations": re.compile(r":\s*Any\b|->\s*Any\b"),
                   "type: ignore": re.compile(r"#\s*type:\s*ignore")}
ERROR = re.compile(r"^(?P<path>emerge_lib/\S+\.py):\d+: error: ")


def _path(line: str) -> str:
    match = ERROR.match(line)
    return match["path"] if match else ""


def errors() -> tuple[Counter[str], list[str]]:
    """Errors per file, and mypy's error lines."""
    proc = subprocess.run([sys.executable, "-m", "mypy"], cwd=REPO, capture_output=True,
                          text=True, check=False)
    if proc.returncode not in (0, 1) or "error: " in proc.stderr:
        sys.exit(f"mypy did not run: {proc.stderr.strip() or proc.stdout.strip()}")
    lines = [line for line in proc.stdout.splitlines() if _path(line)]
    return Counter(_path(line) for line in lines), lines


def escapes() -> dict[str, int]:
    """Lines of emerge_lib matching each of ESCAPE_PATTERNS."""
    found = dict.fromkeys(ESCAPE_PATTERNS, 0)
    for path in sorted((REPO / "emerge_lib").rglob("*.py")):
        for line in path.read_text(encoding="utf-8").splitlines():
            for name, pattern in ESCAPE_PATTERNS.items():
                found[name] += bool(pattern.search(line))
    return found


def check_escapes() -> bool:
    """Print the escapes against typing-ratchet.json; False when one grew."""
    found, allowed = escapes(), json.loads(ESCAPES.read_text())
    grown = [name for name, n in found.items() if n > allowed.get(name, 0)]
    print("typecheck: " + ", ".join(f"{n} {name} (ratchet {allowed.get(name, 0)})"
                                    for name, n in found.items()))
    for name in grown:
        print(f"typecheck: more {name} lines in emerge_lib than typing-ratchet.json allows: "
              "type them instead")
    return not grown


def main(argv: list[str]) -> int:
    if argv[1:] == ["--update"]:
        counts, _ = errors()
        RATCHET.write_text(json.dumps(dict(sorted(counts.items())), indent=1) + "\n")
        found = escapes()
        ESCAPES.write_text(json.dumps(found, indent=1) + "\n")
        print(f"mypy-ratchet.json: {sum(counts.values())} errors in {len(counts)} files; "
              f"typing-ratchet.json: {found}")
        return 0
    escapes_ok = check_escapes()
    counts, lines = errors()
    allowed: dict[str, int] = json.loads(RATCHET.read_text())
    over = {path: n for path, n in counts.items() if n > allowed.get(path, 0)}
    for line in lines:
        if _path(line) in over:
            print(line)
    for path, n in sorted(over.items()):
        print(f"{path}: {n} type errors, the ratchet allows {allowed.get(path, 0)} "
              "(mypy-ratchet.json; a strict room allows none)")
    fallen = {path: n for path, n in allowed.items() if counts.get(path, 0) < n}
    if fallen and not over:
        print(f"typecheck: {sum(n - counts.get(p, 0) for p, n in fallen.items())} errors "
              "fewer than mypy-ratchet.json allows: lock it in with "
              "`python scripts/typecheck.py --update`")
    total = sum(counts.values())
    print(f"typecheck: {total} errors outside the strict rooms (ratchet {sum(allowed.values())})"
          if not over else "typecheck: failed")
    return 1 if over or not escapes_ok else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
