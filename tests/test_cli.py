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
    from emerge_lib.tables import TABLES

    assert main(["tables"]) == 0
    out = capsys.readouterr().out
    assert all(name in out for name in TABLES)
