from __future__ import annotations

import subprocess
import sys

import pytest

from emerge_lib.cli import build_parser, main


def subcommands() -> list[str]:
    parser = build_parser()
    action = next(a for a in parser._actions if a.dest == "command")
    return sorted(action.choices)


def test_emerge_help_runs_as_a_console_command() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "emerge_lib.cli", "--help"], capture_output=True, text=True, check=True
    ).stdout
    assert "EMERGE benchmark" in out
    for name in subcommands():
        assert name in out


@pytest.mark.parametrize("command", subcommands())
def test_every_subcommand_has_help(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main([command, "--help"])
    assert info.value.code == 0
    assert "usage: emerge " + command in capsys.readouterr().out


def test_config_command_reports_bad_files(tmp_path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "c.yaml"
    bad.write_text("snapshots: {windows: -1}\n")
    assert main(["config", "-c", str(bad)]) == 2
    assert "snapshots.windows" in capsys.readouterr().err
    good = tmp_path / "g.yaml"
    good.write_text("snapshots: {windows: 3}\n")
    assert main(["config", "-c", str(good)]) == 0
    assert "windows: 3" in capsys.readouterr().out


def test_tables_command_lists_the_catalog(capsys: pytest.CaptureFixture[str]) -> None:
    from emerge_lib.catalog import TABLES

    assert main(["tables"]) == 0
    out = capsys.readouterr().out
    assert all(name in out for name in TABLES)


@pytest.mark.parametrize("command", [["ingest"], ["build", "--snapshot", "2024-01-01T00:00:00Z"],
                                     ["inspect", "statements", "--at", "2024-01-01T00:00:00Z"]])
def test_the_default_workers_is_a_pool_of_one_process_per_core(
        command: list[str], tmp_path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """`dumps.workers: 0` (the default, no --workers) asks the ingest for one extraction
    process per usable core. The core count is planted (5), and the pool stops the run
    when it is constructed: no process starts, so one real core is enough."""
    from dumpbuilder import PageSpec, Rev, claim, item, write_bz2

    import emerge_lib.core.resources as resources
    import emerge_lib.ingest.run as ingest
    from emerge_lib.core.config import load_config
    from emerge_lib.core.errors import EmergeError

    assert load_config().dumps.workers == 0
    monkeypatch.setattr(resources, "cpu_count", lambda: 5)
    asked: list[int] = []

    class StopAtThePool(ingest.WorkerPool):
        def __init__(self, workers: int) -> None:
            asked.append(workers)
            raise EmergeError(f"a pool of {workers} processes")

    monkeypatch.setattr(ingest, "WorkerPool", StopAtThePool)
    dump = write_bz2(tmp_path / "wikidatawiki-20240201-pages-meta-history1.xml-p1p1.bz2", [
        PageSpec(1, "Q1", [Rev(1, "2023-12-01T00:00:00Z", item("Q1", [claim("P31", "Q5", "a")],
                                                              "One"))])])
    where = [] if command[0] == "inspect" else ["--warehouse", str(tmp_path / "wh")]
    out = ["--out", str(tmp_path / "release")] if command[0] == "build" else []
    assert main([*command, "--wikidata", str(dump), *where, *out]) == 1
    assert asked == [5]
    assert capsys.readouterr().err.strip().endswith("emerge: a pool of 5 processes")
