"""The issue's promise on a generated world: a full dump of D0, then the daily adds/changes
increments up to D1 (found on the world's mirror by `emerge ingest --incr`), give the
timelines an ingest of D1's full dump alone gives, for both wikis; and the stable
statements the increments' run recomputes for the keys they touched equal a whole
rebuild from D1's dump."""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path

import pytest
from ingestkit import ingest_wikidata, ingest_wikipedia
from stagekit import run

from emerge_lib.catalog import Catalog
from emerge_lib.cli import main
from emerge_lib.sample import SampleSpec, generate_world

#: TINY2 (both default snapshots: the second one's planted edits fall between the dumps)
SPEC = SampleSpec(seed=3, items=30, articles=8, revisions=1, increments=True)
TIMELINES = {"wikidatawiki": ("statement_timeline", "item_timeline", "property_timeline"),
             "enwiki": ("page_timeline", "paragraph_timeline")}


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("incr-world") / "world"
    generate_world(out, SPEC)
    return out


def _rows(catalog: Catalog, name: str, drop: tuple[str, ...] = (),
          wiki: str | None = None) -> dict[str, list[str]]:
    """A table's rows, every column but ``drop``, by entity or page (its first column)."""
    out: dict[str, list[str]] = {}
    for r in catalog.read_arrow(name).to_pylist():
        if wiki is not None and r.get("wiki") != wiki:
            continue
        key = str(r["page_id"] if "page_id" in r else next(iter(r.values())))
        out.setdefault(key, []).append(repr({k: v for k, v in r.items() if k not in drop}))
    return {k: sorted(v) for k, v in out.items()}


def _ingest(catalog: Catalog, world: Path, date: str) -> None:
    about = json.loads((world / "world.json").read_text())
    mirror = world / "mirror"
    ingest_wikidata(catalog, sorted((mirror / "wikidatawiki" / date).glob("*.bz2")),
                    max_reject_ratio=1.0)
    ingest_wikipedia(catalog, sorted((mirror / "enwiki" / date).glob("*.bz2")),
                     snapshots=about["snapshots"], windows=5, window_days=7,
                     max_reject_ratio=1.0)


def test_increments_give_the_full_dumps_timelines(world: Path, tmp_path: Path, spark,
                                                  capfd: pytest.CaptureFixture[str]) -> None:
    dates = json.loads((world / "world.json").read_text())["dumps"]["dates"]
    d0, d1 = dates[0], dates[-1]
    days = sorted(d.name for d in (world / "mirror" / "other" / "incr" / "enwiki").iterdir())
    assert (days[0], len(days)) == (d0, 90)

    catalog = Catalog(tmp_path / "incr", spark)
    _ingest(catalog, world, d0)
    stored = {r["page_id"] for r in catalog.read_arrow("page_watermarks").to_pylist()}
    assert run(catalog, "stability").note == "full rebuild: no stable_statements yet"
    capfd.readouterr()
    started = time.monotonic()
    # from a day long before D0: the days the full dump of D0 holds are left out
    assert main(["ingest", "-c", str(world / "config.yaml"), "--warehouse",
                 str(tmp_path / "incr"), "--incr",  # the defaults: a process per core
                 f"20231201:{days[-1]}"]) == 0
    seconds = time.monotonic() - started
    logged = capfd.readouterr().err
    for handler in list(logging.getLogger().handlers):  # the command's, on the captured
        if type(handler) is logging.StreamHandler:       # stderr this test's end closes
            logging.getLogger().removeHandler(handler)
    files = catalog.read_arrow("ingested_files").to_pylist()
    for wiki in TIMELINES:
        assert sorted(r["dump_date"] for r in files
                      if r["wiki"] == wiki and "incr" in r["dump_file"]) == days
    assert catalog.read_arrow("stable_statements").num_rows > 0
    fresh = Catalog(tmp_path / "fresh", spark)
    _ingest(fresh, world, d1)
    # the increments' stability run recomputed the keys they touched, not the table
    touched = [line for line in logged.splitlines() if "keys touched since timeline" in line]
    assert len(touched) == 1 and "full rebuild" not in logged, logged[-2000:]
    run(fresh, "stability")
    assert sorted(map(repr, catalog.read_arrow("stable_statements").to_pylist())) == \
        sorted(map(repr, fresh.read_arrow("stable_statements").to_pylist()))

    refused = {r["title"] for r in catalog.read_arrow("ingest_rejects").to_pylist()
               if r["reason"] == "partial_history"}
    marks = catalog.read_arrow("page_watermarks").to_pylist()
    continued = {(r["wiki"], r["page_id"]) for r in marks if "incr" in r["dump_file"]
                 and r["page_id"] in stored}
    print(f"2 x {len(days)} increments in {seconds:.1f}s; {len(continued)} pages continued; "
          f"refused: {sorted(refused)}; {touched[0].split(': ', 1)[-1]}")
    for wiki, tables in TIMELINES.items():
        assert len({p for w, p in continued if w == wiki}) >= 10, wiki
        for name in tables:
            got, want = _rows(catalog, name), _rows(fresh, name)
            differ = {k for k in set(got) | set(want) if got.get(k) != want.get(k)}
            assert differ == set(), (name, sorted(differ))
        drop = ("dump_date", "dump_file")
        assert _rows(catalog, "page_watermarks", drop, wiki) == \
            _rows(fresh, "page_watermarks", drop, wiki)
    assert not refused
