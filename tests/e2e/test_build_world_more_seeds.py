"""Seeds 3 to 5 of the generated worlds, built with the defaults: the checks of
test_build_world.py (kits/worldchecks.py) on three more worlds, in a file of their own so
that pytest-xdist runs them beside seeds 1 and 2, not after them."""

from __future__ import annotations

import pytest
from worldchecks import (  # noqa: F401 (the tests this file runs on its seeds)
    built_world,
    seeds,
    test_instances_equal_truth,
    test_no_trap_appears,
    test_release_lines_match_instances,
)

built = pytest.fixture(scope="module", params=seeds((3, 4, 5)))(built_world)
