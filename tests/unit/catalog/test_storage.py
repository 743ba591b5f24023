"""The locks of a snapshot's writers: one run builds a snapshot at a time, the lock dies
with its holder, and a run that holds it already asks again for free."""

from __future__ import annotations

import logging
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from emerge_lib.catalog.storage import snapshot_lock, timelines_lock

SNAP = "2024-01-01T00:00:00Z"


def _holder(warehouse: Path) -> subprocess.Popen[str]:
    """A process that takes the snapshot's lock and keeps it until killed."""
    code = ("import sys, time\n"
            "from emerge_lib.catalog.storage import snapshot_lock\n"
            f"with snapshot_lock({str(warehouse)!r}, [{SNAP!r}]):\n"
            "    print('held', flush=True)\n"
            "    time.sleep(120)\n")
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
    return proc


def test_a_second_run_waits_and_a_killed_holder_frees_the_lock(tmp_path: Path,
                                                               caplog) -> None:
    holder = _holder(tmp_path)
    got = threading.Event()

    def second() -> None:
        with snapshot_lock(str(tmp_path), [SNAP, "2024-04-01T00:00:00Z"]):
            got.set()

    caplog.set_level(logging.WARNING)
    thread = threading.Thread(target=second, daemon=True)
    thread.start()
    assert not got.wait(1.5), "the second run did not wait for the first"
    assert f"pid {holder.pid} is building it; waiting" in caplog.text
    holder.kill()  # kill -9: the kernel drops its flock
    holder.wait()
    assert got.wait(10), "a killed holder still blocks the snapshot"
    thread.join(5)


def test_the_holder_asks_again_for_free_and_other_snapshots_are_free(tmp_path: Path) -> None:
    with snapshot_lock(str(tmp_path), [SNAP]):
        with snapshot_lock(str(tmp_path), [SNAP]):  # a stage inside its build
            pass
        done = threading.Event()

        def other() -> None:  # another snapshot of the same warehouse is not held
            with snapshot_lock(str(tmp_path), ["2024-04-01T00:00:00Z"]):
                done.set()

        threading.Thread(target=other, daemon=True).start()
        assert done.wait(5)
        blocked = threading.Event()

        def same() -> None:  # another thread is another run: it waits
            with snapshot_lock(str(tmp_path), [SNAP]):
                blocked.set()

        thread = threading.Thread(target=same, daemon=True)
        thread.start()
        assert not blocked.wait(1)
    assert blocked.wait(5)  # released at the end of the outer hold
    thread.join(5)


def _hold(warehouse: str, step: str | None) -> tuple[threading.Event, threading.Event]:
    """Take the snapshot's lock (for ``step``) in a thread; (got it, let it go)."""
    got, release = threading.Event(), threading.Event()

    def take() -> None:
        with snapshot_lock(warehouse, [SNAP], step=step):
            got.set()
            release.wait(10)

    threading.Thread(target=take, daemon=True).start()
    return got, release


def test_two_steps_of_a_snapshot_go_together_and_a_build_or_the_same_step_waits(
        tmp_path: Path) -> None:
    """Curate's two models' steps share the snapshot (one waiting on a busy model must not
    hold the other); the same step again, or the whole snapshot, waits for them."""
    wh = str(tmp_path)
    additions, let_additions = _hold(wh, "additions")
    assert additions.wait(5)
    deprecations, let_deprecations = _hold(wh, "deprecations")
    assert deprecations.wait(5), "the other model's step waited for this one"
    again, let_again = _hold(wh, "additions")
    build, let_build = _hold(wh, None)
    assert not again.wait(1) and not build.wait(0.1)
    let_additions.set()
    assert again.wait(5) and not build.wait(0.5)  # a step still holds the snapshot
    let_deprecations.set()
    let_again.set()
    assert build.wait(5)
    step, let_step = _hold(wh, "deprecations")
    assert not step.wait(1), "a step went on inside a build of its snapshot"
    let_build.set()
    assert step.wait(5)
    let_step.set()


@pytest.mark.parametrize("warehouse", ["s3://bucket/wh", "s3://bucket/other"])
def test_an_s3_warehouse_is_locked_on_this_machine(warehouse: str) -> None:
    from emerge_lib.catalog.storage import _lock_folder

    folder = _lock_folder(warehouse)
    assert "://" not in str(folder) and folder != _lock_folder(warehouse + "x")
    started = time.monotonic()
    with snapshot_lock(warehouse, [SNAP]):
        assert any(folder.glob("snapshot-*.lock"))
    assert time.monotonic() - started < 5


def _waits(warehouse: str, wikis: list[str], mode: str) -> tuple[threading.Event, threading.Event]:
    """Take the timelines lock in a thread; (got it, let it go)."""
    got, release = threading.Event(), threading.Event()

    def take() -> None:
        with timelines_lock(warehouse, wikis, mode=mode):  # type: ignore[arg-type]
            got.set()
            release.wait(10)

    threading.Thread(target=take, daemon=True).start()
    return got, release


def test_stages_read_the_timelines_together_and_never_beside_their_ingest(tmp_path: Path) -> None:
    """An ingest's commit is a delete then a merge: a stage reading between them saw pages
    without coverage. Readers share; the ingest waits for them, and they for it; another
    wiki's ingest is free."""
    wh = str(tmp_path)
    with timelines_lock(wh, ["enwiki", "wikidatawiki"], mode="read"):
        other_reader, let_go = _waits(wh, ["enwiki"], "read")
        assert other_reader.wait(5), "two readers did not share"
        let_go.set()
        ingest, let_ingest_go = _waits(wh, ["enwiki"], "write")
        assert not ingest.wait(1.0), "an ingest wrote beside a reading stage"
    assert ingest.wait(5), "the ingest did not start once the stage finished"
    reader, let_reader_go = _waits(wh, ["enwiki"], "read")
    assert not reader.wait(1.0), "a stage read beside an ingest's commit"
    elsewhere, let_elsewhere_go = _waits(wh, ["wikidatawiki"], "write")
    assert elsewhere.wait(5), "another wiki's ingest waited"
    let_ingest_go.set()
    assert reader.wait(5)
    let_reader_go.set()
    let_elsewhere_go.set()


def test_a_stage_holds_the_read_lock_of_the_wikis_whose_tables_it_reads() -> None:
    from types import SimpleNamespace

    from emerge_lib.core.config import Config
    from emerge_lib.pipeline.registry import STAGES
    from emerge_lib.pipeline.runner import read_wikis

    ctx = SimpleNamespace(cfg=Config())
    wikis = {name: read_wikis(ctx, st.reads) for name, st in STAGES.items()}  # type: ignore[arg-type]
    assert wikis["stability"] == ["wikidatawiki"]
    assert wikis["passages"] == ["enwiki", "wikidatawiki"]
    assert wikis["curate"] == wikis["publish"] == []
