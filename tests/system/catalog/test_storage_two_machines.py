"""Two machines building one snapshot into one ``s3://`` warehouse at once. The locks a
build takes (a snapshot's, a wiki's timelines') are files of its machine's temporary
folder when the warehouse is on S3, so builds on two machines do not wait for each other:
what keeps them correct is the catalog's writes themselves (a table created empty, then
guarded replaces and merges on keys) and the release's check that its snapshot did not
change after its validation. Two `emerge build` processes, each with a temporary folder
of its own (its "machine"), on the session's SeaweedFS: no table holds a row twice, and
each run either exits 0 with the release of one build alone or exits non-zero in one
line, after which a rerun gives that release."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from buildkit import (
    GATE,
    assert_same_release,
    assert_same_tables,
    build,
    s3_catalog,
    s3_settings,
)
from worlds import TINY1

from emerge_lib.catalog import Catalog


def test_two_machines_build_one_snapshot_into_one_s3_warehouse(tmp_path: Path, worlds,
                                                               s3_server) -> None:
    alone = worlds.built(TINY1, GATE)
    world = worlds.world(TINY1)
    s3_server.create_bucket("machines")
    settings = s3_settings(s3_server, "machines", "shared")
    runs = []
    for machine in ("a", "b"):
        (tmp_path / f"tmp-{machine}").mkdir()
        env = {**os.environ, "PYTHONHASHSEED": "0", **settings,
               "TMPDIR": str(tmp_path / f"tmp-{machine}")}
        runs.append(subprocess.Popen(
            [sys.executable, "-m", "emerge_lib.cli", "build", "-c", str(world / "config.yaml"),
             "--out", str(tmp_path / f"release-{machine}")],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    outcomes = [(run.wait(1200), run.communicate()[1]) for run in runs]
    for machine, (code, err) in zip("ab", outcomes, strict=True):
        assert "Traceback" not in err, err[-3000:]
        if code != 0:  # refused in one line; the rerun (alone now) gives the release
            lines = [x for x in err.splitlines() if x.startswith("emerge:")]
            assert len(lines) == 1, err[-3000:]
            build(world, tmp_path / f"release-{machine}",
                  {**settings, "TMPDIR": str(tmp_path / f"tmp-{machine}")})
        assert_same_release(tmp_path / f"release-{machine}", alone.release)
    assert_same_tables(s3_catalog(settings), Catalog(alone.warehouse))
