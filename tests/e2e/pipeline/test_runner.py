"""The dataset end to end on generated worlds: instances equal the planted truth exactly.

Seeds 1 and 2 of `emerge sample` are built on the embedded engine (ingest of both dump
dates, stability, snapshots, deltas, passages, alignment, release) through the stage
registry; every instance of truth.jsonl must come out, nothing else, and nothing from
traps.jsonl: both seeds with the defaults (truth.jsonl), seed 1 also under the docs/semantics.md
§1.1-1.2 rule (truth-design.jsonl; the rules differ after the ingest only, and every
seed plants every kind of case, which the checks assert). Each seed's world is generated
and ingested once (kits/worlds.py); each semantics is built from a copy of it. Seeds 3
to 5 are in test_runner_more_seeds.py, so that the suite's two workers share the
builds; the checks themselves are in kits/worldchecks.py.
"""

from __future__ import annotations

import pytest
import worldchecks
from worldchecks import built_world, seeds

built = pytest.fixture(scope="module", params=seeds((1, 2), design=(1,), unselected=(1,)))(built_world)


def test_instances_equal_truth(built: tuple) -> None:
    worldchecks.instances_equal_truth(built)


def test_no_trap_appears(built: tuple) -> None:
    worldchecks.no_trap_appears(built)


def test_release_lines_match_instances(built: tuple) -> None:
    worldchecks.release_lines_match_instances(built)


def test_planted_line_fates(built: tuple) -> None:
    worldchecks.planted_line_fates(built)
