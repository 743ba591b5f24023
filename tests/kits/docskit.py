"""The code blocks of a Markdown page, run as a reader would run them (the docs test,
tests/system/repository/test_docs.py).

A fenced block in ``bash``, ``sh``, ``console``, ``python`` or ``pycon`` runs unless the
line just above its fence is ``<!-- not run: REASON -->``. ``bash``/``sh``: a script that
must exit 0. ``console``: ``$ command`` lines (``\\`` continues one), each followed by what
it prints. ``python``: code; ``pycon``: ``>>>``/``...`` examples followed by what they
print, as the interactive interpreter shows it. A page's blocks run in order, its Python
in one interpreter, as a reader types them into one session beside a shell. Shown output must appear in
the real output line by line, in order (runs of whitespace count as one, ``…`` stands for
anything, lines not shown may come between): what a page shows is what the product says.
Run as a script (``python docskit.py BLOCKS.json RESULTS.json``), this file is that
session; :func:`problems` compares what it got with what the page shows.
"""

from __future__ import annotations

import contextlib
import io
import json
import re
import subprocess
import sys
import traceback
from dataclasses import dataclass
from pathlib import Path

RUNNABLE = {"bash", "sh", "console", "python", "pycon"}
FENCE = re.compile(r"^```(\S*)\s*$")
NOT_RUN = re.compile(r"^<!-- not run: (.+) -->$")


@dataclass
class Block:
    page: str
    line: int  # of its opening fence, 1-based
    lang: str
    text: str
    not_run: str | None  # the reason, when marked

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"


def blocks(path: Path) -> list[Block]:
    """The page's fenced blocks, each with the not-run reason above it, if any."""
    lines = path.read_text(encoding="utf-8").splitlines()
    out, i = [], 0
    while i < len(lines):
        fence = FENCE.match(lines[i])
        if not fence:
            i += 1
            continue
        end = next(j for j in range(i + 1, len(lines)) if lines[j].startswith("```"))
        mark = NOT_RUN.match(lines[i - 1].strip()) if i else None
        out.append(Block(path.name, i + 1, fence.group(1), "\n".join(lines[i + 1:end]),
                         mark.group(1) if mark else None))
        i = end + 1
    return out


def console_steps(text: str) -> list[tuple[str, str]]:
    """``(command, shown output)`` of each ``$`` line of a console block."""
    steps: list[tuple[str, list[str]]] = []
    lines = iter(text.splitlines())
    for line in lines:
        if line.startswith("$ "):
            cmd = line[2:]
            while cmd.endswith("\\"):
                cmd = cmd[:-1] + " " + next(lines).strip()
            steps.append((cmd, []))
        elif steps:
            steps[-1][1].append(line)
    return [(cmd, "\n".join(shown)) for cmd, shown in steps]


def pycon_examples(text: str) -> list[tuple[str, str]]:
    """``(source, shown output)`` of each ``>>>`` example of a pycon block."""
    examples: list[tuple[list[str], list[str]]] = []
    for line in text.splitlines():
        if line.startswith(">>> "):
            examples.append(([line[4:]], []))
        elif (line.startswith("... ") or line == "...") and examples and not examples[-1][1]:
            examples[-1][0].append(line[4:])
        elif examples:
            examples[-1][1].append(line)
    return [("\n".join(src), "\n".join(shown)) for src, shown in examples]


def missing_line(shown: str, actual: str) -> str | None:
    """The first shown line that the real output lacks (in order), or None."""
    def norm(line: str) -> str:
        return " ".join(line.split())

    got = [norm(line) for line in actual.splitlines()]
    i = 0
    for want in (norm(x) for x in shown.splitlines()):
        if not want or want == "…":
            continue
        pattern = re.compile(".*".join(re.escape(part) for part in want.split("…")))
        while i < len(got) and not pattern.fullmatch(got[i]):
            i += 1
        if i == len(got):
            return want
        i += 1
    return None


def _run_block(block: dict[str, str], namespace: dict[str, object]) -> dict[str, object]:
    """One block: each step's output (a console command's or a pycon example's; a shell
    step's exit status beside it), or the error that stopped it."""
    result: dict[str, object] = {"where": block["where"], "outputs": [], "status": []}
    if block["lang"] in ("bash", "sh", "console"):
        steps = console_steps(block["text"]) if block["lang"] == "console" else [
            (block["text"], "")]
        for cmd, _ in steps:
            proc = subprocess.run(["bash", "-euo", "pipefail", "-c", cmd], capture_output=True,
                                  text=True, timeout=1200)
            result["outputs"].append(proc.stdout)  # type: ignore[attr-defined]
            result["status"].append(proc.returncode)  # type: ignore[attr-defined]
            if proc.returncode:
                result["error"] = f"`{cmd[:80]}` exited {proc.returncode}: " \
                                  f"{(proc.stderr or proc.stdout)[-800:]}"
                break
        return result
    pycon = block["lang"] == "pycon"
    parts = pycon_examples(block["text"]) if pycon else [(block["text"], "")]
    try:
        for source, _ in parts:
            buf = io.StringIO()
            with contextlib.redirect_stdout(buf):
                exec(compile(source, block["where"], "single" if pycon else "exec"), namespace)
            result["outputs"].append(buf.getvalue())  # type: ignore[attr-defined]
    except Exception:
        result["error"] = traceback.format_exc(limit=-3)
    return result


def _session(blocks_file: str, results_file: str) -> None:
    """Run a page's blocks in order, its Python in one namespace; write a JSON result per
    block."""
    namespace: dict[str, object] = {"__name__": "__main__"}
    results = [_run_block(b, namespace) for b in json.loads(Path(blocks_file).read_text())]
    Path(results_file).write_text(json.dumps(results))


if __name__ == "__main__":
    _session(sys.argv[1], sys.argv[2])


def problems(block: Block, result: dict[str, object]) -> list[str]:
    """What went wrong with one block's run, one entry each."""
    if "error" in result:
        return [f"{block.where}: {result['error']}"]
    if block.lang == "console":
        shown = console_steps(block.text)
    elif block.lang == "pycon":
        shown = pycon_examples(block.text)
    else:
        return []  # a script: it ran, it shows no output
    out = []
    for (step, want), got in zip(shown, result["outputs"], strict=True):  # type: ignore[call-overload]
        if (missing := missing_line(want, got)) is not None:
            out.append(f"{block.where}: `{step[:80]}` did not show {missing!r}; it "
                       f"showed:\n{got[-1500:]}")
    return out
