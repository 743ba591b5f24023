"""Our release reads like the authors' released EMERGE files: a reader written for theirs
(dates with date.fromisoformat, assessments keyed by name and prompt type, every key of
theirs accessed directly) reads their real instances and a release of ours alike."""

from __future__ import annotations

import json
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import pytest

from emerge_lib.release_format import SOURCE_DELTA_TYPES, authors_timestamp_to_utc

OPERATIONS = {"x-triples", "e-triples", "ee-triples", "ee-kg-triples", "d-triples"}


def read_like_the_authors(record: dict[str, Any]) -> dict[str, Any]:
    """What a loader written for their files does with one line (raises on anything else)."""
    d0, d1 = (date.fromisoformat(x) for x in record["delta_dates"])
    assert d0 < d1 and len(record["delta_timestamps"]) == 2
    revision = datetime.fromisoformat(record["revision_date"].replace("Z", "+00:00"))
    passage = record["passage"]
    for key in ("hash_id", "revision_id", "revision_timestamp", "anchor_title",
                "anchor_page_id", "anchor_page_qid", "paragraph_idx"):
        record[key]  # noqa: B018 - accessed directly, as their loader does
    for m in record["mentions"]:
        assert passage[m["start_char"]:m["end_char"]] == m["mention_text"]
        assert m["qid"].startswith("Q") and " " not in m["target_entity"]
    triples = []
    for t in record["tkgu_triples"]:
        s, p, o = t["triple"]
        assert set(t["tkgu_operations"]) <= OPERATIONS and len(t["triple_labels"]) == 3
        created = [date.fromisoformat(t[k]) for k in ("head_creation_date", "tail_creation_date")]
        lifespan = [date.fromisoformat(x) for x in t["triple_lifespan_date"] if x]
        for key in ("emerging_head", "emerging_tail", "head_creation_timestamp",
                    "tail_creation_timestamp", "triple_lifespan_timestamp"):
            t[key]  # noqa: B018
        verdicts = {(a["llm_name"], a["llm_prompt_type"]): (a["llm_assessment"], a["llm_prompt"])
                    for a in t["llm_assessment"]}
        humans = [(h["annotator_name"], h["prompt_type"], h["assessment"],
                   h["human_readable_triple"], h["definition_relation"])
                  for h in t["human_assessment"]]
        if t["tkgu_operations"] != ["x-triples"]:
            assert t["source_delta_type"] in SOURCE_DELTA_TYPES
        q = t["qualifier_info"]
        if q:
            date.fromisoformat(q["qualifier_date"])
            q["qualifier_qid"], q["qualifier_label"], q["qualifier_timestamp"]  # noqa: B018
        triples.append(((s, p, o), created, lifespan, verdicts, humans))
    return {"revision": revision, "triples": triples}


def dated_pairs(record: dict[str, Any]) -> list[tuple[str, int]]:
    """Every (date string, timestamp) pair of a line."""
    pairs = list(zip(record["delta_dates"], record["delta_timestamps"], strict=True))
    for t in record["tkgu_triples"]:
        pairs += [(t["head_creation_date"], t["head_creation_timestamp"]),
                  (t["tail_creation_date"], t["tail_creation_timestamp"])]
        pairs += [(a, b) for a, b in zip(t["triple_lifespan_date"], t["triple_lifespan_timestamp"],
                                         strict=True) if a is not None]
        if t["qualifier_info"]:
            pairs.append((t["qualifier_info"]["qualifier_date"],
                          t["qualifier_info"]["qualifier_timestamp"]))
    return pairs


def utc_date(seconds: int) -> str:
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%d")


@pytest.fixture(scope="module")
def theirs(realdata: Path) -> list[dict[str, Any]]:
    path = realdata / "emerge" / "solved_disagreements.sample.jsonl"
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


@pytest.fixture(scope="module")
def ours(sample_world: Path, tmp_path_factory, spark) -> list[dict[str, Any]]:
    """Every line of a release built from the generated world with the defaults."""
    from emerge_lib.config import load_config
    from emerge_lib.pipeline import StageContext, build_dataset
    from emerge_lib.tables import Catalog

    folder = tmp_path_factory.mktemp("compat")
    cfg = load_config(sample_world / "config.yaml", overrides={"warehouse": str(folder / "wh")})
    build_dataset(StageContext(cfg, Catalog(cfg.warehouse, spark), release_dir=folder / "rel"))
    return [json.loads(line) for f in sorted((folder / "rel").glob("snapshot_*/delta_*.jsonl"))
            for line in f.read_text(encoding="utf-8").splitlines()]


def test_their_reader_reads_their_files(theirs: list[dict[str, Any]]) -> None:
    read = [read_like_the_authors(r) for r in theirs]
    assert len(read) == 10 and sum(len(r["triples"]) for r in read) >= 40
    # their files key the assessors by name and prompt type (v1 entries carry no suffix)
    names = {name for r in read for *_, verdicts, _ in r["triples"] for name, _ in verdicts}
    assert {"Meta-Llama-3.1-8B", "Meta-Llama-3.1-405B"} <= names


def test_their_reader_reads_our_release(ours: list[dict[str, Any]]) -> None:
    assert ours
    read = [read_like_the_authors(r) for r in ours]
    ops = {op for r in ours for t in r["tkgu_triples"] for op in t["tkgu_operations"]}
    assert ops == OPERATIONS and read
    two = [t["tkgu_operations"] for r in ours for t in r["tkgu_triples"] if len(t["tkgu_operations"]) > 1]
    assert two and all(o in (["d-triples", "e-triples"], ["d-triples", "ee-triples"],
                             ["ee-kg-triples", "d-triples"]) for o in two)
    assert all(t["human_assessment"] == [] for r in ours for t in r["tkgu_triples"])
    # x-triples have no source_delta_type; the others one of the three deltas
    sources = {t.get("source_delta_type") for r in ours for t in r["tkgu_triples"]}
    assert sources <= {None, *SOURCE_DELTA_TYPES} and "emerging" in sources


def test_their_timestamps_are_paris_wall_clock_ours_are_utc(theirs, ours) -> None:
    """Their `*_timestamp` is the UTC wall clock read in Europe/Paris: converted back, every
    one lands on its `*_date`; ours are UTC already. A fixed one-hour shift would not do."""
    for r in theirs:
        for text, ts in dated_pairs(r):
            assert utc_date(authors_timestamp_to_utc(ts)) == text, (text, ts)
        revision = datetime.fromisoformat(r["revision_date"].replace("Z", "+00:00"))
        assert authors_timestamp_to_utc(r["revision_timestamp"]) == int(revision.timestamp())
    for r in ours:
        for text, ts in dated_pairs(r):
            assert utc_date(ts) == text
        revision = datetime.fromisoformat(r["revision_date"].replace("Z", "+00:00"))
        assert r["revision_timestamp"] == int(revision.timestamp())
