"""The end-to-end tier's world fixtures: the shared generated worlds of kits/worlds.py."""

from __future__ import annotations

from pathlib import Path

import pytest
from worlds import SEED1


@pytest.fixture(scope="session")
def sample_world(worlds) -> Path:
    """The seed-1 world (both wikis, two dump dates, planted truth), generated once; shared,
    read-only: write warehouses and releases elsewhere."""
    return worlds.world(SEED1)
