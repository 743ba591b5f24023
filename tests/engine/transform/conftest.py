"""The focused tests' two hand-made KGs (kits/focusedkit.py), built once per worker for the
deltas, passages and align files."""

from __future__ import annotations

import pytest
from focusedkit import DESIGN, RELEASED, kg_catalog

from emerge_lib.catalog import Catalog


@pytest.fixture(scope="session")
def kg(tmp_path_factory, spark) -> Catalog:
    return kg_catalog(spark, tmp_path_factory.mktemp("focused") / "design", DESIGN)


@pytest.fixture(scope="session")
def kg_released(tmp_path_factory, spark) -> Catalog:
    return kg_catalog(spark, tmp_path_factory.mktemp("focused") / "released", RELEASED)
