"""The leak-free splits on a release built from a generated world (seed 1, the authors'
selection and two-stage test draw, 4 lines per delta file: with their 100 the draw takes
every line of this small world, and test every article): train, validation and test share no article and no
passage, test is the evaluation set, and every corpus line is in exactly one split or is
counted out; the context has a row per corpus line."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from worlds import SEED1

from emerge_lib.formats.layout import SPLITS


@pytest.fixture(scope="module")
def release(worlds) -> Path:
    return worlds.built(SEED1, {"selection": {"evaluation_per_delta": 4}}).release


def rows(release: Path, pattern: str, columns: list[str]) -> list[dict]:
    return [r for f in sorted(release.glob(pattern))
            for r in pq.read_table(f, columns=columns).to_pylist()]


def test_splits_are_disjoint_and_every_line_is_placed_or_counted(release: Path) -> None:
    keys = ["hash_id", "anchor_page_id", "passage_id", "window", "revision_timestamp"]
    corpus = rows(release, "parquet/corpus/*/*.parquet", keys)
    drawn = {r["hash_id"] for r in rows(release, "parquet/evaluation_set/*/*.parquet",
                                        ["hash_id"])}
    split = {s: rows(release, f"parquet/splits/*/{s}.parquet", keys) for s in SPLITS}
    assert drawn and split["train"], "the world must draw a test split and leave a train"
    assert {r["hash_id"] for r in split["test"]} == drawn  # test is the authors' draw
    for i, a in enumerate(SPLITS):
        for b in SPLITS[i + 1:]:
            assert not {r["anchor_page_id"] for r in split[a]} & \
                {r["anchor_page_id"] for r in split[b]}, (a, b)
            assert not {r["passage_id"] for r in split[a]} & \
                {r["passage_id"] for r in split[b]}, (a, b)
    placed = Counter(r["hash_id"] for s in SPLITS for r in split[s])
    assert max(placed.values()) == 1  # no line in two splits
    test_pages = {r["anchor_page_id"] for r in split["test"]}
    out = [r for r in corpus if r["hash_id"] not in placed]
    assert all(r["anchor_page_id"] in test_pages for r in out)  # only a test article's
    manifest = json.loads((release / "manifest.json").read_text())
    assert manifest["splits"]["lines"] == {s: len(split[s]) for s in SPLITS}
    assert manifest["splits"]["excluded"] == ({"article in test": len(out)} if out else {})
    assert len(placed) + len(out) == len(corpus)
    for s in SPLITS:  # time order inside each snapshot's file
        for f in sorted(release.glob(f"parquet/splits/*/{s}.parquet")):
            order = [(r["window"], r["revision_timestamp"]) for r in pq.read_table(
                f, columns=["window", "revision_timestamp"]).to_pylist()]
            assert order == sorted(order), f


def test_context_has_a_row_per_corpus_line_within_the_cap(release: Path) -> None:
    corpus = {r["hash_id"] for r in rows(release, "parquet/corpus/*/*.parquet", ["hash_id"])}
    context = rows(release, "parquet/context/*/delta_*.parquet",
                   ["hash_id", "context_triples", "context_total", "truncated"])
    assert {r["hash_id"] for r in context} == corpus and len(context) == len(corpus)
    assert all(len(r["context_triples"]) <= 50 for r in context)
    assert any(r["context_triples"] for r in context)
    assert all(r["truncated"] == (r["context_total"] > len(r["context_triples"]))
               for r in context)
    kg = {(r["s"], r["p"], r["o"]) for r in rows(release, "kg_snapshots/*/kg_triples.parquet",
                                                 ["s", "p", "o"])}
    assert all((t["s"], t["p"], t["o"]) in kg for r in context for t in r["context_triples"])
