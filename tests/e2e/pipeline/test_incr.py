"""The issue's promise on a generated world: a full dump of D0, then the daily adds/changes
increments up to D1 (found on the world's mirror by `emerge ingest --incr`), give the
timelines an ingest of D1's full dump alone gives."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from ingestkit import ingest_wikidata

from emerge_lib.catalog import Catalog
from emerge_lib.cli import main
from emerge_lib.sample import SampleSpec, generate_world

#: TINY2 (both default snapshots: the second one's planted edits fall between the dumps)
SPEC = SampleSpec(seed=3, items=30, articles=8, revisions=1, increments=True)


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("incr-world") / "world"
    generate_world(out, SPEC)
    return out


def _rows(catalog: Catalog, name: str, drop: tuple[str, ...] = ()) -> dict[str, list[str]]:
    """A table's rows, every column but ``drop``, by entity (its first column)."""
    out: dict[str, list[str]] = {}
    for r in catalog.read_arrow(name).to_pylist():
        key = str(next(iter(r.values())))
        out.setdefault(key, []).append(repr({k: v for k, v in r.items() if k not in drop}))
    return {k: sorted(v) for k, v in out.items()}


def test_wikidata_increments_give_the_full_dumps_timelines(world: Path, tmp_path: Path,
                                                           spark) -> None:
    dates = json.loads((world / "world.json").read_text())["dumps"]["dates"]
    d0, d1 = dates[0], dates[-1]
    mirror = world / "mirror"
    days = sorted(d.name for d in (mirror / "other" / "incr" / "wikidatawiki").iterdir())
    assert (days[0], len(days)) == (d0, 90)

    catalog = Catalog(tmp_path / "incr", spark)
    ingest_wikidata(catalog, sorted((mirror / "wikidatawiki" / d0).glob("*.bz2")),
                    max_reject_ratio=1.0)
    stored = set(catalog.read_arrow("page_watermarks", columns=["page_id"]).column(0).to_pylist())
    started = time.monotonic()
    # from a day long before D0: the days the full dump of D0 holds are left out
    assert main(["ingest", "-c", str(world / "config.yaml"), "--warehouse",
                 str(tmp_path / "incr"), "--workers", "1", "--incr",
                 f"20231201:{days[-1]}"]) == 0
    seconds = time.monotonic() - started
    files = catalog.read_arrow("ingested_files").to_pylist()
    assert sorted(r["dump_date"] for r in files if "incr" in r["dump_file"]) == days
    assert catalog.read_arrow("stable_statements").num_rows > 0
    continued = {r["page_id"] for r in catalog.read_arrow("page_watermarks").to_pylist()
                 if "incr" in r["dump_file"]} & stored
    assert len(continued) >= 10  # pages the full dump of D0 had, continued by increments
    fresh = Catalog(tmp_path / "fresh", spark)
    ingest_wikidata(fresh, sorted((mirror / "wikidatawiki" / d1).glob("*.bz2")),
                    max_reject_ratio=1.0)

    refused = {r["title"] for r in catalog.read_arrow("ingest_rejects").to_pylist()
               if r["reason"] == "partial_history"}
    print(f"{len(days)} increments in {seconds:.1f}s; refused: {sorted(refused)}")
    for name in ("statement_timeline", "item_timeline", "property_timeline"):
        got, want = _rows(catalog, name), _rows(fresh, name)
        assert set(got) == set(want), name
        differ = {k for k in want if got[k] != want[k]}
        assert differ == set(), (name, sorted(differ))
    marks = {"page_watermarks": ("dump_date", "dump_file")}
    for name, drop in marks.items():
        assert _rows(catalog, name, drop) == _rows(fresh, name, drop)
    assert not refused
