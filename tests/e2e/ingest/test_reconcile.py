"""The reconciliation over full dumps alone: a newer full dump read over an older one adds
and rewrites pages but removes none, so the pages deleted between them keep their rows;
the newer run's logging dump, given by path (`emerge ingest --wikipedia/--wikidata
…-pages-logging.xml.gz`), removes exactly those, and the timelines equal those of the
newer full dump alone. A logging dump newer than what the timelines reach is refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from ingestkit import ingest_wikidata, ingest_wikipedia

from emerge_lib.catalog import Catalog
from emerge_lib.cli import main
from emerge_lib.sample import SampleSpec, generate_world

SPEC = SampleSpec(seed=3, items=30, articles=8, revisions=1, logging=True)
TIMELINES = ("statement_timeline", "item_timeline", "property_timeline", "page_timeline",
             "paragraph_timeline")


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("reconcile") / "world"
    generate_world(out, SPEC)
    return out


def _ingest(catalog: Catalog, world: Path, *dates: str) -> None:
    about = json.loads((world / "world.json").read_text())
    for date in dates:
        ingest_wikidata(catalog, sorted((world / "mirror" / "wikidatawiki" / date).glob("*.bz2")),
                        max_reject_ratio=1.0)
        ingest_wikipedia(catalog, sorted((world / "mirror" / "enwiki" / date).glob("*.bz2")),
                         snapshots=about["snapshots"], windows=5, window_days=7,
                         max_reject_ratio=1.0)


def _differ(got: Catalog, want: Catalog) -> dict[str, set[str]]:
    out = {}
    for name in TIMELINES:
        rows: list[dict[str, list[str]]] = [{}, {}]
        for side, catalog in zip(rows, (got, want), strict=True):
            for r in catalog.read_arrow(name).to_pylist():
                key = str(r["page_id"] if "page_id" in r else next(iter(r.values())))
                side.setdefault(key, []).append(repr(r))
        a, b = ({k: sorted(v) for k, v in side.items()} for side in rows)
        out[name] = {k for k in set(a) | set(b) if a.get(k) != b.get(k)}
    return out


def _reconcile(world: Path, warehouse: Path, date: str) -> int:
    logs = [world / "mirror" / w / date / f"{w}-{date}-pages-logging.xml.gz"
            for w in ("wikidatawiki", "enwiki")]
    return main(["ingest", "-c", str(world / "config.yaml"), "--warehouse", str(warehouse),
                 "--wikidata", str(logs[0]), "--wikipedia", str(logs[1])])


def test_the_logging_dump_removes_what_a_newer_full_dump_keeps(world: Path, tmp_path: Path,
                                                               spark, capsys) -> None:
    about = json.loads((world / "world.json").read_text())
    d0, d1 = about["dumps"]["dates"][0], about["dumps"]["dates"][-1]
    planted = about["logging"]
    both = Catalog(tmp_path / "both", spark)
    _ingest(both, world, d0, d1)
    fresh = Catalog(tmp_path / "fresh", spark)
    _ingest(fresh, world, d1)
    deleted_pages = {str(r["page_id"]) for r in planted["deleted"] if r["wiki"] == "enwiki"}
    deleted_items = {r["title"] for r in planted["deleted"] if r["wiki"] == "wikidatawiki"}
    before = _differ(both, fresh)
    # the restored article came with the newer dump; the deleted ones stayed
    assert before == {"statement_timeline": deleted_items, "item_timeline": deleted_items,
                      "property_timeline": set(), "page_timeline": deleted_pages,
                      "paragraph_timeline": deleted_pages}

    assert _reconcile(world, tmp_path / "both", d1) == 0
    assert all(not differ for differ in _differ(both, fresh).values())
    marks = [{k: v for k, v in r.items() if k not in ("dump_date", "dump_file")}
             for r in both.read_arrow("page_watermarks").to_pylist()]
    assert sorted(map(repr, marks)) == sorted(
        repr({k: v for k, v in r.items() if k not in ("dump_date", "dump_file")})
        for r in fresh.read_arrow("page_watermarks").to_pylist())
    recorded = both.read_arrow("reconciled_pages").to_pylist()
    assert sorted((r["wiki"], r["page_id"]) for r in recorded if r["action"] == "deleted") == \
        sorted((r["wiki"], r["page_id"]) for r in planted["deleted"])
    # the restored page is held (the newer dump brought it): marked, and kept as it is
    assert [(r["title"], r["page_id"]) for r in recorded if r["action"] == "needs_full_dump"] \
        == [(r["title"], r["page_id"]) for r in planted["restored"]]
    # known to d1 now: given again, it is not applied again
    assert _reconcile(world, tmp_path / "both", d1) == 0
    assert both.read_arrow("reconciled_pages").num_rows == len(recorded)
    assert sorted(r["dump_date"] for r in both.read_arrow("reconciled_logs").to_pylist()) == \
        [d1, d1]

    # timelines of d0 alone do not reach d1: refused, one line
    older = Catalog(tmp_path / "older", spark)
    _ingest(older, world, d0)
    capsys.readouterr()
    assert _reconcile(world, tmp_path / "older", d1) == 1
    said = [line for line in capsys.readouterr().err.splitlines()
            if line.startswith("emerge:")]
    assert len(said) == 1 and f"the wikidatawiki timelines reach {d0}" in said[0], said
    assert not older.exists("reconciled_logs")
