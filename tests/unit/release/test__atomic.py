"""The release folder's swap: each run stages into a folder of its own, under a lock on
the output that a second run waits for and a killed run leaves free."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

from emerge_lib.release._atomic import recover, release_lock, staging_of, swap_into_place


def test_each_run_stages_into_a_folder_of_its_own(tmp_path: Path) -> None:
    out = tmp_path / "rel"
    one, _ = staging_of(out)
    two, _ = staging_of(out)
    assert one != two and one.parent == out.parent and one.name.startswith(".rel.writing")


def test_recover_puts_the_old_release_back_and_drops_half_written_ones(tmp_path: Path) -> None:
    out = tmp_path / "rel"
    staging, old = staging_of(out)
    old.mkdir()
    (old / "manifest.json").write_text("old")
    staging.mkdir()  # a killed run's half-written release
    (tmp_path / ".rel.writing").mkdir()  # the fixed name of earlier versions
    (tmp_path / ".related").mkdir()  # not ours
    recover(out)
    assert (out / "manifest.json").read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == [".related", "rel"]


def test_a_second_writer_waits_for_the_first_and_a_kill_frees_it(tmp_path: Path) -> None:
    out = tmp_path / "rel"
    code = ("import time\nfrom pathlib import Path\n"
            "from emerge_lib.release._atomic import release_lock\n"
            f"with release_lock(Path({str(out)!r})):\n"
            "    print('held', flush=True)\n    time.sleep(120)\n")
    holder = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
    got = threading.Event()

    def second() -> None:
        with release_lock(out):
            staging, _ = staging_of(out)
            staging.mkdir()
            (staging / "f").write_text("mine")
            swap_into_place(staging, out)
            got.set()

    thread = threading.Thread(target=second, daemon=True)
    thread.start()
    assert not got.wait(1.5), "the second writer did not wait"
    holder.kill()
    holder.wait()
    assert got.wait(10)
    thread.join(5)
    assert (out / "f").read_text() == "mine"
