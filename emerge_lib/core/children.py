"""Children that die with their parent: a server emerge starts (the local llama.cpp
server, the local S3 server ``weed``, an external decompressor) must not outlive the
command that started it, whatever ends that command. A ``kill -9`` runs no cleanup, so the
kernel does it: :func:`dying_with_parent` launches the command through a few lines of
Python that set ``PR_SET_PDEATHSIG`` (SIGKILL when the parent dies) and then ``exec`` it,
so the server itself carries the setting (``exec`` keeps it). The launcher, not a
``preexec_fn``: code run between fork and exec can deadlock in a process with threads
(Sail's, the engine's watchdog), a separate interpreter cannot. A pool's workers set it
themselves (:func:`die_with`, an initializer).

The kernel's "parent" is the *thread* that started the child: start a server from a
thread that lives as long as it is needed (the commands' main thread). Elsewhere than
Linux the command runs as it is, and the commands' own cleanup (Ctrl-C, SIGTERM) stops it.
"""

from __future__ import annotations

import os
import sys

#: set the death signal, refuse to run if the parent is already gone (the race between
#: fork and prctl), then become the command
_LAUNCHER = (
    "import ctypes, os, sys\n"
    "ctypes.CDLL(None, use_errno=True).prctl(1, 9, 0, 0, 0)\n"  # PR_SET_PDEATHSIG, SIGKILL
    "os.getppid() == int(sys.argv[1]) or os._exit(137)\n"
    "os.execvp(sys.argv[2], sys.argv[2:])\n"
)
PR_SET_PDEATHSIG = 1


def dying_with_parent(cmd: list[str]) -> list[str]:
    """``cmd`` (its first item a path to the program) launched so that it is killed when
    this process dies; ``cmd`` unchanged where the kernel has no such setting."""
    if not sys.platform.startswith("linux"):
        return cmd
    return [sys.executable, "-I", "-S", "-c", _LAUNCHER, str(os.getpid()), *cmd]


def die_with(parent: int) -> None:
    """In a worker process (a fork pool's initializer): be killed when ``parent`` dies,
    and end now if it already has; SIGTERM (the pool's own way to end it) ends it, even
    where the parent had made it an exception (emerge's cleanup)."""
    import signal

    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    if not sys.platform.startswith("linux"):
        return
    import ctypes

    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:
        os._exit(137)
