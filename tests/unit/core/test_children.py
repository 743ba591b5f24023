"""Children that die with their parent: a command launched through the launcher, and a
fork pool's worker, are killed by the kernel when the process that started them is."""

from __future__ import annotations

import signal
import subprocess
import sys

import psutil

PARENT = """
import multiprocessing, os, subprocess, sys, time
from emerge_lib.core.children import die_with, dying_with_parent

def nap(_):
    time.sleep(120)

server = subprocess.Popen(dying_with_parent(["sleep", "120"]))
pool = multiprocessing.get_context("fork").Pool(2, initializer=die_with,
                                                 initargs=(os.getpid(),))
pool.map_async(nap, range(2))
time.sleep(1)
print(server.pid, *[p.pid for p in pool._pool], flush=True)
time.sleep(120)
"""


def test_a_killed_parent_takes_its_server_and_its_pool_workers_along() -> None:
    parent = subprocess.Popen([sys.executable, "-c", PARENT], stdout=subprocess.PIPE,
                              text=True)
    assert parent.stdout is not None
    pids = [int(p) for p in parent.stdout.readline().split()]
    children = [psutil.Process(p) for p in pids]
    assert len(children) == 3 and children[0].name() == "sleep"  # the command, exec'd
    parent.send_signal(signal.SIGKILL)
    parent.wait()
    _, alive = psutil.wait_procs(children, timeout=10)
    assert alive == []


def test_the_launcher_refuses_to_run_for_a_parent_already_gone() -> None:
    from emerge_lib.core.children import dying_with_parent

    cmd = dying_with_parent(["true"])
    cmd[cmd.index("true") - 1] = "1"  # as if its parent were init: it was reparented
    assert subprocess.run(cmd).returncode == 137
