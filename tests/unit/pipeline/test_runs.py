"""A snapshot run's params → its configuration (what every Airflow task runs with)."""

from __future__ import annotations

from pathlib import Path

import pytest

from emerge_lib.core.config import ConfigError
from emerge_lib.pipeline.runs import SnapshotRun, covered_quarter


def test_params_override_the_file_the_environment_and_connections(tmp_path: Path,
                                                                 monkeypatch) -> None:
    config = tmp_path / "emerge.yaml"
    config.write_text("warehouse: wh\nsnapshots:\n  timestamps: [2020-01-01T00:00:00Z]\n"
                      "  windows: 4\ncuration:\n  enabled: true\n")
    monkeypatch.setenv("EMERGE_CONFIG", str(config))
    monkeypatch.setenv("EMERGE__CURATION__CONCURRENCY", "8")
    run = SnapshotRun.from_params(
        {"windows": None, "window_days": 10, "dump_date": "20240601", "curate": False,
         "mirror": "file:///mirror", "wikidata_files": ["a.bz2"], "unknown": 1},
        "2024-04-01", overrides={"engine": {"url": "sc://sail:50051"},
                                 "curation": {"concurrency": 2}})
    cfg = run.settings()
    assert run.snapshot == "2024-04-01T00:00:00Z"
    assert [t.isoformat() for t in cfg.snapshots.timestamps] == ["2024-04-01T00:00:00+00:00"]
    assert (cfg.snapshots.windows, cfg.snapshots.window_days) == (4, 10)  # file, then param
    assert cfg.dumps.mirror == "file:///mirror"
    assert cfg.dumps.wikidata.dates == cfg.dumps.wikipedia.dates == ["20240601"]
    assert cfg.curation.enabled is False  # the param wins over the file
    assert cfg.curation.concurrency == 2  # the connection wins over the environment
    assert cfg.engine.url == "sc://sail:50051"
    assert cfg.warehouse == str((tmp_path / "wh").resolve())
    assert run.inputs("wikidata") == ["a.bz2"] and run.inputs("wikipedia") is None
    assert SnapshotRun.from_params({"curate": None}, "2024-04-01").settings().curation.enabled
    # a run's dump date is read from the wikis the file names (the file is read once)
    config.write_text("dumps:\n  wikipedia:\n    wiki: simplewiki\n    dates: ['20200101']\n")
    dumps = SnapshotRun.from_params({"dump_date": "20240601"}, "2024-04-01").settings().dumps
    assert (dumps.wikidata.wiki, dumps.wikipedia.wiki) == ("wikidatawiki", "simplewiki")
    assert dumps.wikidata.dates == dumps.wikipedia.dates == ["20240601"]


def test_release_folders_are_per_snapshot(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.delenv("EMERGE_CONFIG", raising=False)
    monkeypatch.setenv("EMERGE__WAREHOUSE", str(tmp_path / "wh"))
    run = SnapshotRun.from_params({}, "2024-04-01T00:00:00Z")
    cfg = run.settings()
    assert run.release_folder(cfg) == tmp_path / "releases" / "snapshot_2024-04-01"
    monkeypatch.setenv("EMERGE_RELEASE_ROOT", str(tmp_path / "root"))
    assert run.release_folder(cfg) == tmp_path / "root" / "snapshot_2024-04-01"
    given = SnapshotRun.from_params({"release_dir": str(tmp_path / "x")}, "2024-04-01")
    assert given.release_folder(cfg) == tmp_path / "x"


def test_an_ingest_run_keeps_the_quarter_its_dump_covers(monkeypatch) -> None:
    monkeypatch.delenv("EMERGE_CONFIG", raising=False)
    assert covered_quarter("20240601", 5, 7) == "2024-04-01T00:00:00Z"  # 06-01 - 35 d
    assert covered_quarter("20240501", 5, 7) == "2024-01-01T00:00:00Z"  # not yet 04-01
    run = SnapshotRun.from_params({"dump_date": "20240901"}, None)
    assert [t.isoformat() for t in run.settings().snapshots.timestamps] == [
        "2024-07-01T00:00:00+00:00"]
    given = SnapshotRun.from_params({"snapshots": ["2019-01-01", "2019-04-01"]}, None)
    assert len(given.settings().snapshots.timestamps) == 2
    with pytest.raises(ConfigError, match="snapshot"):
        SnapshotRun.from_params({}, "not a date")
    with pytest.raises(ConfigError, match="dump_date"):
        covered_quarter("2024-06", 5, 7)


def test_the_old_name_of_windows_is_read_with_one_line_saying_the_new_one(caplog) -> None:
    """``weeks`` counted windows (each ``window_days`` long): it is ``windows`` now, the
    old param still read; ``emerge build --weeks`` likewise."""
    from emerge_lib.cli import build_parser

    with caplog.at_level("WARNING"):
        run = SnapshotRun.from_params({"weeks": 3}, "2024-04-01")
    assert run.windows == 3 and run.settings().snapshots.windows == 3
    assert len(caplog.records) == 1 and "params.windows" in caplog.text
    assert SnapshotRun.from_params({"weeks": 3, "windows": 2}, "2024-04-01").windows == 2
    assert "weeks" not in SnapshotRun.params_of("snapshot")
    args = build_parser().parse_args(["build", "--out", "x", "--weeks", "3"])
    assert args.windows == 3
