"""The ingest stages as separate steps (what the ingest DAG maps), each through
``run_stage``: plan → extract per group (JSON in, JSON out, any process) → commit, giving
the tables the one-process ingest gives; a rerun of the commit changes nothing."""

from __future__ import annotations

import json
from pathlib import Path

from stagekit import context
from worlds import SMALL

from emerge_lib.catalog import Catalog
from emerge_lib.pipeline.runner import run_stage

TABLES = ("statement_timeline", "item_timeline", "property_timeline", "page_timeline",
          "paragraph_timeline", "paragraph_coverage", "page_watermarks", "ingest_rejects")


def files(world: Path, wiki: str) -> list[str]:
    """The files the world's configuration ingests (its mirror's preferred format, 7z)."""
    return [str(p) for p in sorted((world / "mirror" / wiki).glob("*/*.7z"))]


def rows(catalog: Catalog, table: str) -> list[tuple]:
    data = catalog.read_arrow(table).to_pylist()
    return sorted(tuple(sorted((k, str(v)) for k, v in r.items() if k not in (
        "ingested_at", "seconds"))) for r in data)


def test_steps_give_the_tables_of_the_one_process_ingest(worlds, tmp_path: Path,
                                                         spark) -> None:
    world = worlds.world(SMALL)
    base = world / "config.yaml"
    whole = Catalog(worlds.ingested(SMALL), spark)  # the one-process ingest of these files

    steps = Catalog(tmp_path / "steps", spark)
    for kind, wiki in (("wikidata", "wikidatawiki"), ("wikipedia", "enwiki")):
        # a file per group at most (no minimum size), two groups at most
        ctx = context(steps, **{kind: files(world, wiki)}, base=base,
                      dumps={"extract_group_mb": 0})
        stage = f"ingest_{kind}"
        grouped_by_size = run_stage(context(steps, **{kind: files(world, wiki)}, base=base),
                                    stage, step="plan", max_groups=2).detail
        assert len(grouped_by_size["groups"]) == 1  # the defaults: 256 MB a group at least
        planned = json.loads(json.dumps(
            run_stage(ctx, stage, step="plan", max_groups=2).detail))
        by_date: dict[str, list[str]] = {}
        for f in planned["plan"]["files"]:
            by_date.setdefault(f["dump_date"], []).append(Path(f["path"]).name)
        oldest, newer = sorted(by_date)
        assert len(planned["groups"]) == 2  # grouped: never more tasks than asked
        grouped = sorted(Path(f["path"]).name for g in planned["groups"] for f in g["files"])
        assert grouped == sorted(by_date[oldest])  # the oldest dump date is mapped...
        assert sorted(planned["later"]) == sorted(by_date[newer])  # ...the newer follows
        staged = [json.loads(json.dumps(run_stage(ctx, stage, step="extract", group=g).detail))
                  for g in planned["groups"]]
        result = run_stage(ctx, stage, step="commit", plan=planned["plan"], summaries=staged,
                           newer=None)
        assert result.metrics["files"] == len(planned["plan"]["files"])
        versions = {t: steps.version(t) for t in TABLES if steps.exists(t)}
        again = run_stage(ctx, stage, step="commit", plan=planned["plan"],
                          summaries=staged, newer=None)  # a rerun of the commit task
        assert again.rows == {} and {t: steps.version(t) for t in versions} == versions
        assert run_stage(ctx, stage, step="plan",
                         max_groups=256).detail["groups"] == []  # all done now
    ingested = [t for t in TABLES if steps.exists(t)]
    assert "statement_timeline" in ingested and "paragraph_timeline" in ingested
    for table in ingested:
        assert rows(steps, table) == rows(whole, table), table


def test_the_newer_dump_date_is_handed_to_mapped_extract_steps(worlds, tmp_path: Path,
                                                               spark) -> None:
    """The ingest DAG's way (``commit`` with ``newer``): the older dump date's commit
    extracts nothing of the newer one but groups its files, which extract steps extract
    after it (from the watermarks it committed); a second commit commits them and judges
    the rejects. The tables are those of the one-process ingest."""
    world = worlds.world(SMALL)
    whole = Catalog(worlds.ingested(SMALL), spark)
    steps = Catalog(tmp_path / "steps", spark)
    for kind, wiki in (("wikidata", "wikidatawiki"), ("wikipedia", "enwiki")):
        ctx = context(steps, **{kind: files(world, wiki)}, base=world / "config.yaml")
        stage = f"ingest_{kind}"
        planned = json.loads(json.dumps(run_stage(ctx, stage, step="plan", max_groups=256).detail))
        staged = [run_stage(ctx, stage, step="extract", group=g).detail
                  for g in planned["groups"]]
        first = run_stage(ctx, stage, step="commit", plan=planned["plan"],
                          summaries=json.loads(json.dumps(staged)), newer=4)
        newer = sorted(Path(f["path"]).name for g in first.detail["next"] for f in g["files"])
        assert newer == sorted(planned["later"]) and len(first.detail["next"]) == 1
        assert "extracted next" in first.note
        committed = {r["dump_file"] for r in steps.read_arrow(
            "ingested_files", filters=[("wiki", "=", wiki)]).to_pylist()}
        assert committed and not committed & set(newer)  # none of them extracted here
        staged = [run_stage(ctx, stage, step="extract", group=g).detail
                  for g in first.detail["next"]]
        last = run_stage(ctx, stage, step="commit", plan=planned["plan"],
                         summaries=json.loads(json.dumps(staged)), newer=None)
        assert first.metrics["files"] + last.metrics["files"] == len(planned["plan"]["files"])
        assert run_stage(ctx, stage, step="plan",
                         max_groups=256).detail["groups"] == []  # all done now
    for table in TABLES:
        assert rows(steps, table) == rows(whole, table), table
