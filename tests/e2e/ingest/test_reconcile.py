"""The reconciliation over full dumps alone. A newer full dump ingested completely (every
file its dumpstatus.json lists) removes the pages it lacks: the timelines and watermarks
equal those of the newer dump alone, the count is the planted deletions, also after a
kill; a partial one (one file), or one whose file list is unknown (files given without
their dumpstatus.json), removes nothing, and then the newer run's logging dump, given by
path (`emerge ingest --wikipedia/--wikidata …-pages-logging.xml.gz`), removes exactly
those. A logging dump newer than what the timelines reach is refused; a world without
deletions loses nothing."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from ingestkit import ingest_wikidata, ingest_wikipedia, killed_before
from stagekit import ingest

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


def _ingest(catalog: Catalog, world: Path, *dates: str, bare: Path | None = None) -> None:
    """Each date's bz2 files by path, in their mirror folder (beside dumpstatus.json), or
    copied into ``bare`` without it (the dump's file list unknown)."""
    about = json.loads((world / "world.json").read_text())
    for date in dates:
        files = {}
        for wiki in ("wikidatawiki", "enwiki"):
            files[wiki] = sorted((world / "mirror" / wiki / date).glob("*.bz2"))
            if bare is not None:
                (bare / wiki).mkdir(parents=True, exist_ok=True)
                files[wiki] = [Path(shutil.copy(f, bare / wiki)) for f in files[wiki]]
        ingest_wikidata(catalog, files["wikidatawiki"], max_reject_ratio=1.0)
        ingest_wikipedia(catalog, files["enwiki"], snapshots=about["snapshots"], windows=5,
                         window_days=7, max_reject_ratio=1.0)


def _stage(catalog: Catalog, world: Path, wiki: str, files: list[Path]) -> dict[str, float]:
    """One wiki's ingest stage on ``files``; its metrics."""
    about = json.loads((world / "world.json").read_text())
    if wiki == "wikidatawiki":
        return ingest(catalog, "wikidata", files, dumps={"max_reject_ratio": 1.0}).metrics
    return ingest(catalog, "wikipedia", files, dumps={"max_reject_ratio": 1.0},
                  snapshots={"timestamps": about["snapshots"], "windows": 5,
                             "window_days": 7}).metrics


def _marks(catalog: Catalog) -> list[str]:
    """The watermarks but which dump wrote them (an unchanged page keeps the older's)."""
    return sorted(repr({k: v for k, v in r.items() if k not in ("dump_date", "dump_file")})
                  for r in catalog.read_arrow("page_watermarks").to_pylist())


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
    _ingest(both, world, d0)
    _ingest(both, world, d1, bare=tmp_path / "bare")  # the newer dump's file list unknown
    assert not both.exists("reconciled_pages")
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
    assert _marks(both) == _marks(fresh)
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


def test_a_newer_complete_full_dump_removes_what_it_lacks(world: Path, tmp_path: Path,
                                                          spark) -> None:
    """20240220 then 20240520 (all files, from the mirror's folders): the timelines and
    watermarks of 20240520 alone, the deleted article and item included; each wiki's
    ingest killed in the reconciliation (before its record; before its last write), then
    run again: the same tables, the same count."""
    about = json.loads((world / "world.json").read_text())
    d0, d1 = about["dumps"]["dates"][0], about["dumps"]["dates"][-1]
    planted = about["logging"]["deleted"]
    both = Catalog(tmp_path / "both", spark)
    _ingest(both, world, d0)
    files = {w: sorted((world / "mirror" / w / d1).glob("*.bz2"))
             for w in ("wikidatawiki", "enwiki")}
    metrics = {}
    for wiki, table in (("wikidatawiki", "reconciled_logs"), ("enwiki", "reconciled_pages")):
        with killed_before(table):
            _stage(both, world, wiki, files[wiki])
        metrics[wiki] = _stage(both, world, wiki, files[wiki])
    item = next(r["title"] for r in planted if r["wiki"] == "wikidatawiki")
    # killed before its last write, the rerun removed nothing more: the same count
    assert {w: m["pages changed"] for w, m in metrics.items()} == {
        w: sum(r["wiki"] == w for r in planted) for w in files} == {
        "wikidatawiki": 1, "enwiki": 1}
    fresh = Catalog(tmp_path / "fresh", spark)
    _ingest(fresh, world, d1)
    assert all(not differ for differ in _differ(both, fresh).values())
    assert _marks(both) == _marks(fresh)
    assert item not in {r["qid"] for r in both.read_arrow("item_timeline").to_pylist()}
    recorded = both.read_arrow("reconciled_pages").to_pylist()
    assert sorted((r["wiki"], r["page_id"], r["title"], r["action"]) for r in recorded) == \
        sorted((r["wiki"], r["page_id"], r["title"], "absent_from_full_dump") for r in planted)
    for r in recorded:  # the file whose page range holds it
        lo, hi = (int(x) for x in r["dump_file"].rsplit("-p", 1)[1].split(".")[0].split("p"))
        assert lo <= r["page_id"] <= hi and r["dump_date"] == d1, r
    logs = both.read_arrow("reconciled_logs").to_pylist()
    assert sorted((r["wiki"], r["dump_date"], r["deleted"]) for r in logs) == [
        ("enwiki", d1, 1), ("wikidatawiki", d1, 1)]
    # the deletions are known to d1: its logging dump, given by path, changes nothing
    assert _reconcile(world, tmp_path / "both", d1) == 0
    assert all(not differ for differ in _differ(both, fresh).values())
    assert both.read_arrow("reconciled_pages").num_rows == len(recorded)
    # given again: done, nothing decided
    assert "pages changed" not in _stage(both, world, "enwiki", files["enwiki"])


def test_a_partial_full_dump_removes_nothing(world: Path, tmp_path: Path, spark) -> None:
    """One file of the newer Wikidata dump (the one holding the deleted item) removes
    nothing; its other files, ingested later, complete it: then the item goes."""
    about = json.loads((world / "world.json").read_text())
    d0, d1 = about["dumps"]["dates"][0], about["dumps"]["dates"][-1]
    item = next(r for r in about["logging"]["deleted"] if r["wiki"] == "wikidatawiki")
    catalog = Catalog(tmp_path / "part", spark)
    files = sorted((world / "mirror" / "wikidatawiki" / d0).glob("*.bz2"))
    _stage(catalog, world, "wikidatawiki", files)
    newer = sorted((world / "mirror" / "wikidatawiki" / d1).glob("*.bz2"))
    assert len(newer) > 1
    holding = [f for f in newer if f"-p{(item['page_id'] - 1) // 50 * 50 + 1}p" in f.name]
    assert len(holding) == 1, holding
    qids = lambda: {r["qid"] for r in catalog.read_arrow("item_timeline").to_pylist()}  # noqa: E731
    assert "pages changed" not in _stage(catalog, world, "wikidatawiki", holding)
    assert item["title"] in qids() and not catalog.exists("reconciled_pages")
    metrics = _stage(catalog, world, "wikidatawiki", [f for f in newer if f not in holding])
    assert metrics["pages changed"] == 1 and item["title"] not in qids()


def test_a_world_without_deletions_loses_nothing(tmp_path: Path, spark) -> None:
    """The default world (no logging, no deletion): both dates, every file: nothing
    removed, the count 0."""
    world = tmp_path / "world"
    generate_world(world, SampleSpec(seed=3, items=30, articles=8, revisions=1))
    d0, d1 = json.loads((world / "world.json").read_text())["dumps"]["dates"]
    catalog = Catalog(tmp_path / "plain", spark)
    _ingest(catalog, world, d0)
    for wiki in ("wikidatawiki", "enwiki"):
        marks = catalog.read_arrow("page_watermarks", filters=[("wiki", "=", wiki)]).num_rows
        metrics = _stage(catalog, world, wiki,
                         sorted((world / "mirror" / wiki / d1).glob("*.bz2")))
        assert metrics["pages changed"] == 0, wiki
        assert catalog.read_arrow("page_watermarks",
                                  filters=[("wiki", "=", wiki)]).num_rows >= marks
    assert catalog.read_arrow("reconciled_pages").num_rows == 0
    assert sorted((r["wiki"], r["deleted"]) for r in
                  catalog.read_arrow("reconciled_logs").to_pylist()) == [
        ("enwiki", 0), ("wikidatawiki", 0)]


def _decisions(catalog: Catalog) -> list[str]:
    """reconciled_pages but the logging dump's file names."""
    return sorted(repr({k: v for k, v in r.items() if k != "dump_file"})
                  for r in catalog.read_arrow("reconciled_pages").to_pylist())


def test_a_logging_dump_in_parts_reconciles_as_the_whole_one(world: Path, tmp_path: Path,
                                                              spark) -> None:
    """The largest wikis publish their logging dump in parts (pages-logging1..N.xml.gz):
    found on the mirror as one dump (the reconcile stage, as `emerge ingest --incr` and the
    emerge_incr DAG run it), or given by path in any order, the parts reconcile as the
    unsplit file does, and the dump is one reconciled_logs row naming every part."""
    from stagekit import context

    from emerge_lib.dumps.mirror import Mirror
    from emerge_lib.pipeline.runner import run_stage

    split = tmp_path / "split"
    generate_world(split, SampleSpec(**{**SPEC.__dict__, "logging_parts": 3}))
    about = json.loads((world / "world.json").read_text())
    d0, d1 = about["dumps"]["dates"][0], about["dumps"]["dates"][-1]
    parts = {w: Mirror((split / "mirror").as_uri()).logging_dump(w, d1)
             for w in ("wikidatawiki", "enwiki")}
    assert {w: [f.name for f in fs] for w, fs in parts.items()} == {
        w: [f"{w}-{d1}-pages-logging{k}.xml.gz" for k in (1, 2, 3)] for w in parts}
    whole = Catalog(tmp_path / "whole", spark)
    _ingest(whole, world, d0)
    _ingest(whole, world, d1, bare=tmp_path / "bare-whole")
    assert _reconcile(world, tmp_path / "whole", d1) == 0
    for name, how in (("mirror", "the stage"), ("paths", "the command")):
        cat = Catalog(tmp_path / name, spark)
        _ingest(cat, split, d0)
        _ingest(cat, split, d1, bare=tmp_path / f"bare-{name}")
        if how == "the stage":
            result = run_stage(context(cat, base=split / "config.yaml"), "reconcile", logs=None)
            assert result.metrics["logging dumps"] == 2
        else:
            folder = split / "mirror"
            assert main(["ingest", "-c", str(split / "config.yaml"), "--warehouse", str(cat.warehouse),
                         "--wikidata", *(str(folder / "wikidatawiki" / d1 / f.name)
                                         for f in parts["wikidatawiki"][::-1]),
                         "--wikipedia", *(str(folder / "enwiki" / d1 / f.name)
                                          for f in parts["enwiki"])]) == 0
        assert all(not differ for differ in _differ(cat, whole).values()), how
        assert _marks(cat) == _marks(whole)
        assert _decisions(cat) == _decisions(whole) != []
        logs = {r["wiki"]: r for r in cat.read_arrow("reconciled_logs").to_pylist()}
        for wiki, files in parts.items():
            assert logs[wiki]["dump_file"] == " ".join(f.name for f in files), how
            assert logs[wiki]["sha1"] == (" ".join(str(f.sha1) for f in files)
                                          if how == "the stage" else None)
    # a part left out is refused by name, before anything is read
    folder = split / "mirror" / "enwiki" / d1
    assert main(["ingest", "-c", str(split / "config.yaml"), "--warehouse",
                 str(tmp_path / "paths"), "--wikipedia",
                 *(str(folder / f.name) for f in parts["enwiki"][::2])]) == 1
