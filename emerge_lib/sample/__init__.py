"""The sample world: a synthetic Wikimedia dump mirror with planted, known TKGU truth.

``generate_world(out, SampleSpec(...))`` writes a mirror laid out like dumps.wikimedia.org
(two dump dates, history files split by page-id range in bz2 and 7z, dumpstatus.json,
md5/sha1 sums), ``truth.jsonl`` (the instances docs/semantics.md §1.1-1.2 implies),
``traps.jsonl`` (what must not appear, and why), ``config.yaml`` and ``world.json``. See docs/dumps.md.
"""

from __future__ import annotations

from emerge_lib.sample.world import (
    DEFAULT_SNAPSHOTS,
    PlanError,
    SampleSpec,
    World,
    WorldReport,
    generate_world,
)

__all__ = ["DEFAULT_SNAPSHOTS", "PlanError", "SampleSpec", "World", "WorldReport", "generate_world"]
