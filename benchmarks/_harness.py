"""What every benchmark shares: where the repository and the ``emerge`` command are, CPU
seconds (this process and the children it waited for, or the children alone for the
command-line runs), repeated timed runs (``Figure``, ``measure``), and the world a
benchmark runs on (``ensure_world``: ``emerge sample`` into a folder, once).

A benchmark is run as ``python benchmarks/NAME.py``: Python puts this folder first on
``sys.path``, so ``import _harness`` needs no path tricks, and emerge_lib is the
installed package (``make`` installs it editable).
"""

from __future__ import annotations

import resource
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from emerge_lib.core.resources import cpu_count, cpu_seconds

__all__ = ["EMERGE", "REPO", "Figure", "children_cpu", "cpu_count", "cpu_seconds",
           "emerge", "ensure_world", "measure"]

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
