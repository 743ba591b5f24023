"""The issue's promise on a generated world: a full dump of D0, then the daily adds/changes
increments up to D1 (found on the world's mirror by `emerge ingest --incr`), give the
timelines an ingest of D1's full dump alone gives, for both wikis, but for the pages only
the logging dump reveals (a deleted article and item, a restored article); with D1's
logging dump reconciled (by `emerge ingest --incr`, also after a kill), every page but the
restored one, which is marked as needing the next full dump; and the stable statements
the increments' runs recompute for the keys they touched equal a whole rebuild from D1's
dump."""

from __future__ import annotations

import json
import logging
import shutil
import time
from pathlib import Path

import pytest
from buildkit import emerge, release_files
from ingestkit import ingest_wikidata, ingest_wikipedia, killed_before
from stagekit import run

from emerge_lib.catalog import Catalog
from emerge_lib.cli import main
from emerge_lib.core.config import load_config
from emerge_lib.pipeline.incr import ingest_increments
from emerge_lib.sample import SampleSpec, generate_world

#: TINY2 (both default snapshots: the second one's planted edits fall between the dumps)
SPEC = SampleSpec(seed=3, items=30, articles=8, revisions=1, increments=True, logging=True)
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


def _without_logging(world: Path, out: Path) -> Path:
    """The world's mirror as it was before its newest logging dump was published (the job
    missing from dumpstatus.json); returns the config of that copy."""
    shutil.copytree(world, out, ignore=shutil.ignore_patterns("downloads", "warehouse"))
    for status in (out / "mirror").glob("*/*/dumpstatus.json"):
        jobs = json.loads(status.read_text())
        if status.parent.name == json.loads((world / "world.json").read_text())[
                "dumps"]["dates"][-1]:
            jobs["jobs"].pop("xmlpagelogsdump")
        status.write_text(json.dumps(jobs) + "\n")
    return out / "config.yaml"


def _differ(got: Catalog, want: Catalog) -> dict[str, set[str]]:
    out = {}
    for tables in TIMELINES.values():
        for name in tables:
            a, b = _rows(got, name), _rows(want, name)
            out[name] = {k for k in set(a) | set(b) if a.get(k) != b.get(k)}
    return out


def test_increments_give_the_full_dumps_timelines(world: Path, tmp_path: Path, spark,
                                                  capfd: pytest.CaptureFixture[str]) -> None:
    about = json.loads((world / "world.json").read_text())
    dates = about["dumps"]["dates"]
    d0, d1 = dates[0], dates[-1]
    days = sorted(d.name for d in (world / "mirror" / "other" / "incr" / "enwiki").iterdir())
    assert (days[0], len(days)) == (d0, 90)

    catalog = Catalog(tmp_path / "incr", spark)
    _ingest(catalog, world, d0)
    stored = {r["page_id"] for r in catalog.read_arrow("page_watermarks").to_pylist()}
    assert run(catalog, "stability").note == "full rebuild: no stable_statements yet"
    capfd.readouterr()
    started = time.monotonic()
    # from a day long before D0: the days the full dump of D0 holds are left out; the
    # newest logging dump not yet published: nothing is reconciled
    assert main(["ingest", "-c", str(_without_logging(world, tmp_path / "before")),
                 "--warehouse", str(tmp_path / "incr"), "--incr",  # a process per core
                 f"20231201:{days[-1]}"]) == 0
    seconds = time.monotonic() - started
    logged = capfd.readouterr().err
    for handler in list(logging.getLogger().handlers):  # the command's, on the captured
        if type(handler) is logging.StreamHandler:       # stderr this test's end closes
            logging.getLogger().removeHandler(handler)
    # the increments' stability run recomputed the keys they touched, not the table
    touched = [line for line in logged.splitlines() if "keys touched since timeline" in line]
    assert len(touched) == 1 and "full rebuild" not in logged, logged[-2000:]
    files = catalog.read_arrow("ingested_files").to_pylist()
    for wiki in TIMELINES:
        assert sorted(r["dump_date"] for r in files
                      if r["wiki"] == wiki and "incr" in r["dump_file"]) == days
    assert catalog.read_arrow("stable_statements").num_rows > 0
    assert not catalog.exists("reconciled_logs")
    fresh = Catalog(tmp_path / "fresh", spark)
    _ingest(fresh, world, d1)

    refused = {r["title"] for r in catalog.read_arrow("ingest_rejects").to_pylist()
               if r["reason"] == "partial_history"}
    marks = catalog.read_arrow("page_watermarks").to_pylist()
    continued = {(r["wiki"], r["page_id"]) for r in marks if "incr" in r["dump_file"]
                 and r["page_id"] in stored}
    print(f"2 x {len(days)} increments in {seconds:.1f}s; {len(continued)} pages continued; "
          f"refused: {sorted(refused)}; {touched[0].split(': ', 1)[-1]}")
    for wiki in TIMELINES:
        assert len({p for w, p in continued if w == wiki}) >= 10, wiki
    assert not refused

    # without the logging dump: the timelines differ in exactly the planted pages
    planted = about["logging"]
    keys = {("enwiki" if r["wiki"] == "enwiki" else "wikidatawiki",
             str(r["page_id"]) if r["wiki"] == "enwiki" else r["title"])
            for r in planted["deleted"] + planted["restored"]}
    moved = planted["moved"][0]
    assert moved["moved"][:10].replace("-", "") >= d0  # the move is in the quarter
    assert ("enwiki", moved["page_id"]) in continued  # its null revision came in a day
    before = _differ(catalog, fresh)
    for wiki, tables in TIMELINES.items():
        for name in tables:
            mine = {k for w, k in keys if w == wiki}
            assert before[name] <= mine, (name, before[name])
    assert before["page_timeline"] == {str(r["page_id"]) for r in planted["deleted"]
                                       + planted["restored"] if r["wiki"] == "enwiki"}
    assert before["item_timeline"] == before["statement_timeline"] == {
        r["title"] for r in planted["deleted"] if r["wiki"] == "wikidatawiki"}

    # the logging dump of D1, reconciled by --incr (its days are done): killed before its
    # last write, then again: the same tables
    argv = ["ingest", "-c", str(world / "config.yaml"), "--warehouse", str(tmp_path / "incr"),
            "--incr", days[-1]]
    cfg = load_config(world / "config.yaml", {"warehouse": str(tmp_path / "incr")})
    with killed_before("reconciled_logs"):
        ingest_increments(cfg, days[-1], days[-1], spark=spark)
    assert not catalog.exists("reconciled_logs")
    results = {r.stage: r for r in ingest_increments(cfg, days[-1], days[-1], spark=spark)}
    # the metric: the pages whose state it changed, the planted deletions; the restoration
    assert (results["reconcile"].metrics["pages changed"],
            results["reconcile"].metrics["need full dump"]) == (
        len(planted["deleted"]), len(planted["restored"]))
    assert "stability" in results  # the deleted item's statements left the stable ones
    assert "full rebuild" not in results["stability"].note, results["stability"].note
    run(fresh, "stability")
    assert sorted(map(repr, catalog.read_arrow("stable_statements").to_pylist())) == \
        sorted(map(repr, fresh.read_arrow("stable_statements").to_pylist()))
    after = _differ(catalog, fresh)
    restored = {str(r["page_id"]) for r in planted["restored"]}
    for name, differ in after.items():
        assert differ <= restored, (name, sorted(differ))
    assert after["page_timeline"] == restored
    recorded = catalog.read_arrow("reconciled_pages").to_pylist()
    assert sorted((r["wiki"], r["title"], r["page_id"]) for r in recorded
                  if r["action"] == "deleted") == sorted(
        (r["wiki"], r["title"], r["page_id"]) for r in planted["deleted"])
    # the restored article: not in the warehouse (deleted before D0), named by its title
    assert sorted((r["wiki"], r["title"]) for r in recorded
                  if r["action"] == "needs_full_dump") == sorted(
        (r["wiki"], r["title"]) for r in planted["restored"])
    logs = {r["wiki"]: r for r in catalog.read_arrow("reconciled_logs").to_pylist()}
    assert {w: (r["dump_date"], r["deleted"], r["needs_full_dump"]) for w, r in logs.items()} \
        == {"enwiki": (d1, 1, 1), "wikidatawiki": (d1, 1, 0)}
    assert logs["enwiki"]["moves"] >= 1
    drop = ("dump_date", "dump_file")
    for wiki in TIMELINES:
        got = _rows(catalog, "page_watermarks", drop, wiki)
        want = _rows(fresh, "page_watermarks", drop, wiki)
        assert {k for k in set(got) | set(want) if got.get(k) != want.get(k)} <= restored
    # a third run: nothing left to reconcile; the logging dumps given by path (emerge
    # ingest --wikipedia/--wikidata …-pages-logging.xml.gz) apply again: nothing changes
    assert main(argv) == 0
    logs = [world / "mirror" / w / d1 / f"{w}-{d1}-pages-logging.xml.gz" for w in TIMELINES]
    assert main(["ingest", "-c", str(world / "config.yaml"), "--warehouse", str(tmp_path / "incr"),
                 "--wikidata", str(logs[0]), "--wikipedia", str(logs[1])]) == 0
    assert _differ(catalog, fresh) == after
    assert len(catalog.read_arrow("reconciled_pages").to_pylist()) == len(recorded)
    _same_releases(world, tmp_path, d0, d1)


def _same_releases(world: Path, tmp_path: Path, d0: str, d1: str) -> None:
    """`emerge build` (the gate on) of both warehouses, each configured with the dump it
    was built from: the same bytes, file for file, the manifest, the card and
    croissant.json included (``release.provenance: history``, the default: they name the
    history held, not the files that brought it). The restored page changes no released
    row (it names no entity), so the releases are equal."""
    both = f"'{d0}', '{d1}'"
    text = (world / "config.yaml").read_text()
    assert text.count(both) == 2  # the dates of both wikis
    out = {}
    for name, date in (("incr", d0), ("fresh", d1)):
        config = world / f"config-{name}.yaml"
        config.write_text(text.replace(both, f"'{date}'"))
        proc = emerge("build", "-c", str(config), "--warehouse", str(tmp_path / name),
                      "--out", str(tmp_path / f"release-{name}"),
                      env={"EMERGE__VALIDATION__ENABLED": "true"})
        assert proc.returncode == 0, proc.stderr[-4000:]
        out[name] = release_files(tmp_path / f"release-{name}")
    got, want = out["incr"], out["fresh"]
    assert sorted(got) == sorted(want) and any(n.endswith(".jsonl") for n in want)
    assert {n for n in want if got[n] != want[n]} == set()
    manifest = json.loads(got["manifest.json"])
    day = f"{d1[:4]}-{d1[4:6]}-{d1[6:8]}"
    assert "dumps" not in manifest and manifest["history"] == [
        {"wiki": wiki, "revisions_before": day, "deletions_known_to": day}
        for wiki in sorted(TIMELINES)]
    assert json.loads(got["croissant.json"])["datePublished"] == day
