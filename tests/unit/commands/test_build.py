"""``emerge build`` refuses a snapshot its dumps cannot reach before anything starts: no
engine, no ingest, no warehouse made (it used to fail in the snapshot stage, after the
ingest and the engine's start-up)."""

from __future__ import annotations

import bz2
import time
from pathlib import Path

from emerge_lib.cli import main

DUMP = "wikidatawiki-20240520-pages-meta-history1.xml-p1p10.bz2"


def test_a_snapshot_after_the_dumps_is_refused_before_anything_starts(tmp_path: Path,
                                                                      capsys) -> None:
    dump = tmp_path / DUMP
    dump.write_bytes(bz2.compress(b"<mediawiki></mediawiki>\n"))
    config = tmp_path / "config.yaml"
    config.write_text("dumps:\n  wikidata: {wiki: wikidatawiki, dates: ['20240520']}\n")
    warehouse = tmp_path / "warehouse"
    for given in ([], ["--wikidata", str(dump)]):  # the configured dates, the files given
        started = time.monotonic()
        assert main(["build", "-c", str(config), "--warehouse", str(warehouse),
                     "--snapshot", "2030-01-01T00:00:00Z", "--out", str(tmp_path / "rel"),
                     *given]) == 1
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "(20240520) is older than 2030-02-05" in err, err
        assert "nothing was started" in err and time.monotonic() - started < 5
        assert not warehouse.exists() and not (tmp_path / "rel").exists()
    # a snapshot the dump reaches is not refused here (the build goes on to the ingest)
    from emerge_lib.core.config import load_config
    from emerge_lib.ingest.plan import refuse_uncovered_snapshots

    cfg = load_config(config, overrides={"warehouse": str(warehouse), "snapshots": {
        "timestamps": ["2024-04-01T00:00:00Z"]}})
    refuse_uncovered_snapshots(cfg, [str(dump)])
