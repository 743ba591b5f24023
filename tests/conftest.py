"""Shared fixtures. Real third-party samples live in ../shared/realdata (never copied here)."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
REALDATA = REPO.parent / "shared" / "realdata"


@pytest.fixture(scope="session")
def realdata() -> Path:
    """The folder of real dump samples; tests that need it skip cleanly when it is absent."""
    if not REALDATA.is_dir():
        pytest.skip(f"real samples not found at {REALDATA}")
    return REALDATA


@pytest.fixture(scope="session")
def spark():
    """One embedded Sail Spark Connect server for the whole test session, stopped at the end."""
    from emerge_lib.engine import spark_session

    with spark_session("embedded") as session:
        yield session


@pytest.fixture()
def catalog(tmp_path: Path, spark):
    from emerge_lib.tables import Catalog

    return Catalog(tmp_path / "warehouse", spark)


@pytest.fixture(scope="session")
def sample_world(tmp_path_factory) -> Path:
    """A small generated world (both wikis, two dump dates, planted truth), made once."""
    from emerge_lib.sample import SampleSpec, generate_world

    out = tmp_path_factory.mktemp("world")
    generate_world(out, SampleSpec(seed=1, items=300, articles=120, revisions=3))
    return out
