"""Seeds 3 to 5 of the generated worlds, built with the defaults: the checks of
test_runner.py (kits/worldchecks.py) on three more worlds, in a file of their own so
that pytest-xdist runs them beside seeds 1 and 2, not after them."""

from __future__ import annotations

import pytest
import worldchecks
from worldchecks import built_world, seeds

built = pytest.fixture(scope="module", params=seeds((3, 4, 5)))(built_world)


def test_instances_equal_truth(built: tuple) -> None:
    worldchecks.instances_equal_truth(built)


def test_no_trap_appears(built: tuple) -> None:
    worldchecks.no_trap_appears(built)


def test_release_lines_match_instances(built: tuple) -> None:
    worldchecks.release_lines_match_instances(built)


def test_planted_line_fates(built: tuple) -> None:
    worldchecks.planted_line_fates(built)
