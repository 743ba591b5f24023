"""The benchmark harness reads the runner's stage lines as the runner writes them
(``StageResult.brief``), fits log-log slopes, and attributes a watched run's CPU and
memory to the stage that was running."""

from __future__ import annotations

import sys
import textwrap

import pytest
from repo import REPO

from emerge_lib.core.stage import StageResult

BENCH = REPO / "benchmarks"
sys.path.insert(0, str(BENCH))
import _harness  # noqa: E402


def test_stage_lines_are_read_as_the_runner_writes_them() -> None:
    ingest = StageResult("ingest_wikidata", None, {"statement_timeline": 1_286_942,
                                                   "item_timeline": 112_757},
                         73.6, {"MB": 2911.6, "files": 6, "revisions": 199_805}, "", None, 32.4)
    line = _harness.parse_stage_line(f"2026-12-02 19:28:33,392 INFO x: stage {ingest.brief()}")
    assert line is not None
    assert (line.name, line.snapshot, line.seconds) == ("ingest_wikidata", None, 73.6)
    assert line.rows == {"statement_timeline": 1_286_942, "item_timeline": 112_757}
    assert line.cores == pytest.approx(32.4 / 73.6, abs=0.005)

    snap = StageResult("align", "2024-01-01T00:00:00Z", {"instances": 90_302}, 57.9,
                       {"windows": 5, "left out by R1": 186_949}, "", None, 86.1)
    line = _harness.parse_stage_line("stage " + snap.brief())
    assert (line.name, line.snapshot, line.rows) == ("align", "2024-01-01T00:00:00Z",
                                                      {"instances": 90_302})
    assert line.key == "align 2024-01-01T00:00:00Z"

    quick = StageResult("stability", None, {}, 0.4, {}, "up to date", None, 0.3)
    line = _harness.parse_stage_line("stage " + quick.brief())
    assert (line.name, line.seconds, line.cores, line.rows) == ("stability", 0.4, None, {})
    assert _harness.parse_stage_line("INFO building into warehouse /tmp/x") is None


def test_loglog_slope() -> None:
    xs = [100.0, 200.0, 400.0]
    assert _harness.loglog_slope(xs, [3 * x for x in xs]) == pytest.approx(1.0)
    assert _harness.loglog_slope(xs, [0.5 * x**2 for x in xs]) == pytest.approx(2.0)
    assert _harness.loglog_slope(xs, [7.0, 7.0, 7.0]) == pytest.approx(0.0)
    assert _harness.loglog_slope([100.0], [1.0]) is None
    assert _harness.loglog_slope(xs, [0.0, 0.0, 5.0]) is None  # one usable point


def test_a_watched_run_gives_each_stage_its_cpu_and_memory(tmp_path, monkeypatch) -> None:
    """A stand-in command that burns CPU in its first stage and holds 300 MB in its
    second: the CPU goes to the first, the memory peak to the second."""
    script = tmp_path / "fake-emerge"
    script.write_text(textwrap.dedent(f"""\
        #!{sys.executable}
        import time
        end = time.process_time() + 0.6
        while time.process_time() < end:
            pass
        print("x INFO emerge_lib.pipeline.runner: stage burn: t 10 rows in 0.6s", flush=True)
        block = bytearray(300 * 2**20)
        for i in range(0, len(block), 4096):
            block[i] = 1
        time.sleep(0.6)
        print("x INFO emerge_lib.pipeline.runner: stage hold: t 20 rows in 0.6s", flush=True)
    """))
    script.chmod(0o755)
    monkeypatch.setattr(_harness, "EMERGE", script)
    watched = _harness.watch_emerge([], interval=0.05)
    assert watched.returncode == 0
    burn, hold = watched.stages
    assert (burn.name, burn.rows, hold.rows) == ("burn", {"t": 10}, {"t": 20})
    assert burn.cpu >= 0.5 and hold.cpu < burn.cpu
    assert hold.peak_rss - burn.peak_rss >= 250 * 2**20
    assert hold.peak_own == hold.peak_rss and hold.peak_child == 0  # no child process
    assert hold.peak_rss - hold.start_rss >= 250 * 2**20  # it rose while the stage ran
    assert watched.peak_rss >= hold.peak_rss
    assert watched.cpu >= burn.cpu
