"""The extraction pool inside any host process: a parent whose main script cannot be
imported again (Airflow's ``airflow`` entry point, a Jupyter kernel), a worker that is
killed, and a parent that is killed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import psutil
import pytest
from repo import KITS

from emerge_lib.ingest.files import IngestError
from emerge_lib.ingest.pool import run_workers

KITS = KITS


def _host(tmp_path: Path, body: str, refuse_reimport: bool = True) -> Path:
    """A main script running ``body``; by default one that refuses to be imported a second
    time, as Airflow's entry script fails (its blocked database URL) when a spawned child
    re-runs it; else a well-behaved one (``if __name__ == "__main__"``)."""
    script = tmp_path / "host.py"
    guard = ('if __name__ != "__main__":\n'
             '    raise SystemExit("host.py imported again as " + __name__)\n'
             if refuse_reimport else "")
    script.write_text(guard + textwrap.dedent(f"""\
        import sys
        sys.path.insert(0, {str(KITS)!r})
        from emerge_lib.ingest.pool import run_workers
        import poolkit
        if __name__ == "__main__":
        """) + textwrap.indent(textwrap.dedent(body), "    "))
    return script


def test_workers_start_without_importing_the_parents_main_script(tmp_path: Path) -> None:
    script = _host(tmp_path, """\
        done = run_workers(poolkit.whoami, [(i,) for i in range(4)], workers=2)
        print(sorted(n for n, _ in done), len({pid for _, pid in done}))
        """)
    run = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.split() == ["[0,", "1,", "2,", "3]", "2"]  # two workers, four jobs
    assert "imported again" not in run.stderr


def test_a_killed_worker_is_one_line_naming_the_signal() -> None:
    sys.path.insert(0, str(KITS))
    import poolkit

    with pytest.raises(IngestError) as err:
        run_workers(poolkit.die, [(1,), (2,)], workers=2)
    message = str(err.value)
    assert "worker process died" in message and "-9" in message and "\n" not in message
    assert "BrokenProcessPool" not in message and err.value.retryable


def test_workers_exit_within_seconds_of_their_parent_being_killed(tmp_path: Path) -> None:
    script = _host(tmp_path, """\
        run_workers(poolkit.sleep_long, [(i,) for i in range(2)], workers=2)
        """, refuse_reimport=False)
    parent = subprocess.Popen([sys.executable, str(script)], stderr=subprocess.PIPE)
    try:
        deadline, children = time.monotonic() + 60, []
        while time.monotonic() < deadline:
            children = psutil.Process(parent.pid).children(recursive=True)
            if len(children) >= 3:  # the resource tracker and two workers
                break
            time.sleep(0.1)
        assert len(children) >= 3, "the pool never started"
        time.sleep(1.0)  # the workers are in their job now
    finally:
        os.kill(parent.pid, signal.SIGKILL)
        parent.wait()
    gone, alive = psutil.wait_procs(children, timeout=10)
    assert alive == [], f"{len(alive)} of {len(children)} children outlived their parent"


def test_a_task_forked_from_a_celery_prefork_worker_starts_its_pool(tmp_path: Path) -> None:
    """The CeleryExecutor's worker runs a task in a fork of a daemonic billiard process:
    without ``allow_children`` the pool cannot start there (the daemon flag, then
    billiard's authkey); with it, it does (tests/system/test_dags_celery.py runs the
    mapped ingest under a real Celery worker)."""
    script = tmp_path / "prefork.py"
    script.write_text(textwrap.dedent(f"""\
        import os, sys
        sys.path.insert(0, {str(KITS)!r})
        import billiard
        import poolkit
        from emerge_lib.ingest.pool import run_workers

        def task(allow):  # what Airflow's supervisor does in a Celery pool process: fork
            pid = os.fork()
            if pid == 0:
                try:
                    if allow:
                        from emerge_lib.airflow.runtime import allow_children
                        allow_children()
                    done = run_workers(poolkit.whoami, [(1,), (2,)], workers=2)
                    print("pool ran", sorted(n for n, _ in done), flush=True)
                    os._exit(0)
                except BaseException as exc:
                    print("refused:", type(exc).__name__, exc, flush=True)
                    os._exit(1)
            os.waitpid(pid, 0)

        if __name__ == "__main__":
            for allow in (False, True):
                p = billiard.Process(target=task, args=(allow,), daemon=True)
                p.start()
                p.join(120)
        """))
    run = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                         timeout=300)
    lines = [ln for ln in run.stdout.splitlines() if ln.startswith(("refused", "pool ran"))]
    assert len(lines) == 2, run.stdout + run.stderr[-2000:]
    assert lines[0].startswith("refused:") and "daemonic" in lines[0], lines
    assert lines[1] == "pool ran [1, 2]", lines
