"""The ingest stages as separate steps (what the ingest DAG maps): plan → extract per
group (JSON in, JSON out, any process) → commit, giving the tables the one-process ingest
gives; groups stay under Airflow's max_map_length; a rerun of the commit changes nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from stagekit import context, ingest

from emerge_lib.errors import EmergeError
from emerge_lib.pipeline import (
    MAX_MAP_LENGTH,
    commit_ingest,
    extract_ingest_group,
    plan_ingest_groups,
)
from emerge_lib.sample import SampleSpec, generate_world
from emerge_lib.tables import Catalog

TABLES = ("statement_timeline", "item_timeline", "property_timeline", "page_timeline",
          "paragraph_timeline", "paragraph_coverage", "page_watermarks", "ingest_rejects")


@pytest.fixture(scope="module")
def world(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("steps-world")
    generate_world(out, SampleSpec(seed=3, items=120, articles=60, revisions=2))
    return out


def files(world: Path, wiki: str) -> list[str]:
    return [str(p) for p in sorted((world / "mirror" / wiki).glob("*/*.bz2"))]


def rows(catalog: Catalog, table: str) -> list[tuple]:
    data = catalog.read_arrow(table).to_pylist()
    return sorted(tuple(sorted((k, str(v)) for k, v in r.items() if k not in (
        "ingested_at", "seconds"))) for r in data)


def test_steps_give_the_tables_of_the_one_process_ingest(world: Path, tmp_path: Path,
                                                         spark) -> None:
    base = world / "config.yaml"
    whole = Catalog(tmp_path / "whole", spark)
    ingest(whole, "wikidata", files(world, "wikidatawiki"), base=base)
    ingest(whole, "wikipedia", files(world, "enwiki"), base=base)

    steps = Catalog(tmp_path / "steps", spark)
    for kind, wiki in (("wikidata", "wikidatawiki"), ("wikipedia", "enwiki")):
        ctx = context(steps, **{kind: files(world, wiki)}, base=base)
        planned = json.loads(json.dumps(plan_ingest_groups(ctx, kind, max_groups=2)))
        by_date: dict[str, list[str]] = {}
        for f in planned["plan"]["files"]:
            by_date.setdefault(f["dump_date"], []).append(Path(f["path"]).name)
        oldest, newer = sorted(by_date)
        assert 0 < len(planned["groups"]) <= 2  # grouped: never more tasks than asked
        grouped = sorted(Path(f["path"]).name for g in planned["groups"] for f in g["files"])
        assert grouped == sorted(by_date[oldest])  # the oldest dump date is mapped...
        assert sorted(planned["later"]) == sorted(by_date[newer])  # ...the newer follows
        staged = [json.loads(json.dumps(extract_ingest_group(ctx, g)))
                  for g in planned["groups"]]
        result = commit_ingest(ctx, planned["plan"], staged)
        assert result.metrics["files"] == len(planned["plan"]["files"])
        versions = {t: steps.version(t) for t in TABLES if steps.exists(t)}
        again = commit_ingest(ctx, planned["plan"], staged)  # a rerun of the commit task
        assert again.rows == {} and {t: steps.version(t) for t in versions} == versions
        assert plan_ingest_groups(ctx, kind)["groups"] == []  # everything is done now
    for table in TABLES:
        assert rows(steps, table) == rows(whole, table), table


def test_plans_without_inputs_and_bad_group_counts(tmp_path: Path, spark) -> None:
    catalog = Catalog(tmp_path / "wh", spark)
    ctx = context(catalog)
    assert plan_ingest_groups(ctx, "wikidata") == {"plan": None, "groups": [], "later": []}
    assert commit_ingest(ctx, None, []).rows == {}
    with pytest.raises(EmergeError, match="max_groups"):
        plan_ingest_groups(ctx, "wikidata", max_groups=MAX_MAP_LENGTH + 1)
    with pytest.raises(EmergeError, match="no ingest"):
        plan_ingest_groups(ctx, "commons")
