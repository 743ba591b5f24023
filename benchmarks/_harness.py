"""What every benchmark shares: where the repository and the ``emerge`` command are, CPU
seconds (this process and the children it waited for, or the children alone for the
command-line runs), repeated timed runs (``Figure``, ``measure``), the world a
benchmark runs on (``ensure_world``: ``emerge sample`` into a folder, once), and one
``emerge`` run watched stage by stage (``watch_emerge``: each stage's wall, CPU, rows and
the peak RSS of the whole process tree while it ran), with ``loglog_slope`` to say how a
figure grows with the input.

A benchmark is run as ``python benchmarks/NAME.py``: Python puts this folder first on
``sys.path``, so ``import _harness`` needs no path tricks, and emerge_lib is the
installed package (``make`` installs it editable).
"""

from __future__ import annotations

import contextlib
import math
import os
import re
import resource
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from emerge_lib.core.resources import cpu_count, cpu_seconds

__all__ = ["EMERGE", "REPO", "Figure", "StageLine", "Watched", "children_cpu", "cpu_count",
           "cpu_seconds", "emerge", "ensure_world", "loglog_slope", "measure", "parse_stage_line",
           "watch_emerge"]

REPO = Path(__file__).resolve().parents[1]
#: the ``emerge`` command of this environment: the path a user runs
EMERGE = next((p for p in (Path(sys.executable).with_name("emerge"),
                           REPO / ".venv" / "bin" / "emerge") if p.exists()), Path("emerge"))


def children_cpu() -> float:
    """CPU seconds of waited-for children only (the subprocess figures: the CLI runs)."""
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return kids.ru_utime + kids.ru_stime


def emerge(*args: str, check: bool = True, **kwargs) -> subprocess.CompletedProcess:
    """The ``emerge`` command as a user runs it, in a process of its own."""
    return subprocess.run([str(EMERGE), *args], check=check, **kwargs)


def ensure_world(world: Path, sample_args: Sequence[str], *, marker: str = "world.json",
                 note: str = "") -> float | None:
    """``emerge sample --out WORLD SAMPLE_ARGS…`` unless ``world`` holds one already (its
    ``marker`` file); returns the generation seconds (None: the world was there)."""
    if (world / marker).exists():
        return None
    cmd = [str(EMERGE), "sample", "--out", str(world), *sample_args]
    print(f"no world at {world}; generating it{note}:\n  {' '.join(cmd)}", flush=True)
    started = time.monotonic()
    subprocess.run(cmd, check=True)
    return time.monotonic() - started


@dataclass
class Figure:
    """Repeated runs of one thing over ``xml_bytes`` of input: wall and CPU seconds each."""

    name: str
    xml_bytes: int
    revisions: int | None = None
    walls: list[float] = field(default_factory=list)
    cpus: list[float] = field(default_factory=list)
    note: str = ""

    @property
    def best(self) -> int:
        return min(range(len(self.walls)), key=self.walls.__getitem__)

    @property
    def wall(self) -> float:
        return self.walls[self.best]

    @property
    def cpu(self) -> float:
        """CPU seconds of the best (fastest) run."""
        return self.cpus[self.best]

    @property
    def cores_used(self) -> float:
        """CPU / wall of the best run: how many cores it kept busy."""
        return self.cpu / self.wall

    @property
    def mb_s(self) -> float:
        return self.xml_bytes / 1e6 / self.wall

    @property
    def mb_cpu_s(self) -> float:
        return self.xml_bytes / 1e6 / min(self.cpus)

    def spread(self) -> str:
        rates = sorted(self.xml_bytes / 1e6 / w for w in self.walls)
        return "/".join(f"{r:.0f}" for r in rates)


def measure(fig: Figure, repeat: int, fn: Callable[[], object],
            clock: Callable[[], float] = cpu_seconds) -> Figure:
    """Run ``fn`` ``repeat`` times, recording each run's wall and CPU (``clock``)."""
    for _ in range(repeat):
        c, t = clock(), time.perf_counter()
        fn()
        fig.walls.append(time.perf_counter() - t)
        fig.cpus.append(clock() - c)
        print(f"  {fig.name}: {fig.walls[-1]:.1f} s, CPU {fig.cpus[-1]:.1f} s "
              f"({fig.cpus[-1] / fig.walls[-1]:.2f} cores), "
              f"{fig.xml_bytes / 1e6 / fig.walls[-1]:.1f} MB/s", flush=True)
    return fig


# ----------------------------------------------------------------------------- one watched run
#: the runner's one line per stage (``StageResult.brief``): ``stage NAME[ STEP][ SNAPSHOT]:
#: WHAT in 12.3s[, RATE][, 1.87 cores][ (NOTE)]``
_STAGE = re.compile(r"\bstage (?P<name>[a-z_]+(?: [a-z_]+)?)(?: (?P<snapshot>\d{4}-\d\d-\d\d\S*))?: "
                    r"(?P<what>.*) in (?P<seconds>\d+(?:\.\d+)?)s(?P<rest>.*)$")
_ROWS = re.compile(r"(\w+) ([\d,]+) rows")
_CORES = re.compile(r", (\d+(?:\.\d+)?) cores")


@dataclass
class StageLine:
    """One stage of a watched run: what its log line says, and what the watcher saw."""

    name: str
    snapshot: str | None
    seconds: float
    cores: float | None  # None: the line gives none (a stage under a second)
    rows: dict[str, int]
    tree_cpu: float = 0.0  # CPU seconds of the whole process tree at that instant
    cpu: float = 0.0  # the stage's CPU seconds (filled in by watch_emerge)
    peak_rss: int = 0  # bytes, the process tree's largest sampled RSS while it ran
    start_rss: int = 0  # bytes, the tree's RSS as it began (what earlier stages left)
    peak_own: int = 0  # bytes, the command's own process (the embedded engine lives there)
    peak_child: int = 0  # bytes, its largest child (an extraction worker)

    @property
    def key(self) -> str:
        return f"{self.name} {self.snapshot}" if self.snapshot else self.name


def parse_stage_line(line: str) -> StageLine | None:
    """The stage line of ``line``, or None."""
    m = _STAGE.search(line)
    if m is None:
        return None
    cores = _CORES.search(m["rest"])
    return StageLine(m["name"], m["snapshot"], float(m["seconds"]),
                     float(cores[1]) if cores else None,
                     {t: int(n.replace(",", "")) for t, n in _ROWS.findall(m["what"])})


@dataclass
class Watched:
    """One watched ``emerge`` run: its stages in order, totals, and the output's tail."""

    returncode: int
    wall: float
    cpu: float  # user + system of the command and every child it reaped
    peak_rss: int  # bytes, the process tree's largest sampled RSS
    stages: list[StageLine]
    log_tail: str

    def rest(self) -> tuple[float, float]:
        """Wall and CPU seconds outside every stage (start-up, the engine, exit)."""
        return (self.wall - sum(s.seconds for s in self.stages),
                self.cpu - sum(s.cpu for s in self.stages))


def _tree(proc) -> list:
    import psutil

    try:
        return [proc, *proc.children(recursive=True)]
    except psutil.Error:
        return [proc]


def _tree_cpu(proc) -> float:
    """CPU seconds of a process tree: every live process and the children each reaped."""
    return processes_cpu(_tree(proc))


def processes_cpu(procs) -> float:
    """CPU seconds of these processes and the children each reaped (gone ones count 0)."""
    import psutil

    total = 0.0
    for p in procs:
        try:
            t = p.cpu_times()
        except psutil.Error:
            continue
        total += t.user + t.system + t.children_user + t.children_system
    return total


def _tree_rss(proc) -> tuple[int, int, int]:
    """RSS of a process tree: (all of it, the process itself, its largest descendant)."""
    import psutil

    total = own = largest = 0
    for p in _tree(proc):
        with contextlib.suppress(psutil.Error):
            rss = p.memory_info().rss
            total += rss
            if p.pid == proc.pid:
                own = rss
            else:
                largest = max(largest, rss)
    return total, own, largest


def watch_emerge(args: Sequence[str], env: Mapping[str, str] | None = None,
                 interval: float = 0.1, echo: Callable[[str], None] | None = None) -> Watched:
    """Run ``emerge ARGS`` (``env`` added to this environment) and watch it: every
    ``interval`` seconds the RSS of its whole process tree (the command, the embedded
    engine's threads, the extraction pool), each sample counted to the stage then running
    (the one whose line comes next); each stage's CPU from its line (cores x seconds), or
    for a stage under a second (no cores given) from the process tree's CPU between its
    line and the previous one. Per stage, besides the tree's peak: its RSS when the stage
    began, and the peaks of the command's own process and of its largest child.
    ``echo`` sees every stage line as it comes."""
    import psutil

    lines: list[StageLine] = []
    samples: list[tuple[int, tuple[int, int, int]]] = []  # (running stage, _tree_rss)
    tail: list[str] = []
    cpu_before = children_cpu()
    started = time.monotonic()
    proc = subprocess.Popen([str(EMERGE), *args], env={**os.environ, **(env or {})},
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            errors="replace")
    watched = psutil.Process(proc.pid)
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            samples.append((len(lines), _tree_rss(watched)))
            done.wait(interval)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    assert proc.stdout is not None
    for text in proc.stdout:
        tail.append(text)
        del tail[:-200]
        stage = parse_stage_line(text)
        if stage is None:
            continue
        stage.tree_cpu = _tree_cpu(watched)
        samples.append((len(lines), _tree_rss(watched)))
        lines.append(stage)
        if echo:
            echo(text.rstrip())
    proc.wait()
    wall = time.monotonic() - started
    done.set()
    sampler.join()
    previous = 0.0  # a first stage without cores: its CPU includes the start-up
    for i, stage in enumerate(lines):
        stage.cpu = (stage.cores * stage.seconds if stage.cores is not None
                     else max(0.0, stage.tree_cpu - previous))
        previous = stage.tree_cpu
        mine = [b for j, b in samples if j == i]
        before = [b for j, b in samples if j == i - 1]  # its last: taken at the line
        if mine:
            stage.start_rss = (before or mine)[-1 if before else 0][0]
            stage.peak_rss, stage.peak_own, stage.peak_child = (max(b[k] for b in mine)
                                                                for k in range(3))
    return Watched(proc.returncode, wall, children_cpu() - cpu_before,
                   max((b[0] for _, b in samples), default=0), lines, "".join(tail))


def loglog_slope(xs: Sequence[float], ys: Sequence[float]) -> float | None:
    """The least-squares slope of log(y) on log(x): 1 grows as the input, 2 as its square,
    0 not at all. None with fewer than two usable points (a zero or a missing figure)."""
    pts = [(math.log(x), math.log(y)) for x, y in zip(xs, ys, strict=True) if x > 0 and y and y > 0]
    if len({x for x, _ in pts}) < 2:
        return None
    mx = sum(x for x, _ in pts) / len(pts)
    my = sum(y for _, y in pts) / len(pts)
    return (sum((x - mx) * (y - my) for x, y in pts)
            / sum((x - mx) ** 2 for x, _ in pts))
