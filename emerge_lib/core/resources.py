"""What this process may use and has used: cores (affinity-aware) and CPU seconds
(threads and reaped children included), the figures every stage and file log line
reports."""

from __future__ import annotations

import os


def cpu_count() -> int:
    """Cores this process may use (respects affinity masks, unlike ``os.cpu_count``)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - non-Linux
        return max(1, os.cpu_count() or 1)


def cpu_seconds() -> float:
    """User + system CPU seconds of this process (threads included: an embedded engine's,
    a decoder's) and of its reaped children (a worker pool, an external decompressor)."""
    try:
        import resource
    except ImportError:  # not on this platform: no CPU figures
        return 0.0
    me, children = (resource.getrusage(who) for who in
                    (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
    return me.ru_utime + me.ru_stime + children.ru_utime + children.ru_stime
