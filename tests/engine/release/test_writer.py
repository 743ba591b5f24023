"""The release writer: EMERGE instance format, file layout, determinism, Parquet copies."""

from __future__ import annotations

import gzip
import json
import logging
import os
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from stagekit import run
from tablekit import put

from emerge_lib.catalog import Catalog, spec
from emerge_lib.formats.format import (
    MENTION_FIELDS,
    QUALIFIER_FIELDS,
    RELEASE_FIELDS,
    TRIPLE_FIELDS,
    FormatError,
    authors_timestamp_to_utc,
    dumps_line,
    hash_id,
    passage_record,
)
from emerge_lib.formats.layout import LISTING, PARQUET_TRIPLES, SPLITS, parquet_twin, split_path
from emerge_lib.formats.manifest import MANIFEST, read_manifest, verify_release
from emerge_lib.formats.schema import lines_table, read_jsonl, release_schema
from emerge_lib.release import windows
from emerge_lib.release.splits import validation_article
from emerge_lib.release.windows import ReleaseError

SNAP = "2024-01-01T00:00:00Z"
OLD = "2023-01-01T00:00:00Z"  # in the catalog, not released


def ts(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(UTC)


def mention(text: str, anchor: str, target: str, qid: str | None) -> dict[str, Any]:
    start = text.index(anchor)
    return {"start": start, "end": start + len(anchor), "anchor": anchor, "target": target,
            "qid": qid}


TEXT1 = "At the café, Ada Lovelace worked with Charles Babbage on the Analytical Engine in London."
P1 = {
    "snapshot": SNAP, "window": 1, "passage_id": "p1hash", "page_id": 10,
    "page_title": "Ada Lovelace", "page_qid": "Q7259", "rev_id": 111,
    "rev_timestamp": ts("2024-01-03T12:00:00Z"), "paragraph_idx": 2, "text": TEXT1,
    "mentions": [
        mention(TEXT1, "Charles Babbage", "Charles Babbage", "Q46633"),
        mention(TEXT1, "Analytical Engine", "Analytical Engine", "Q1857044"),
        mention(TEXT1, "London", "London", None),  # unresolved: not a release mention
    ],
}
TEXT2 = "Nova Lab was founded by Jane Roe in Paris."
P2 = {
    "snapshot": SNAP, "window": 1, "passage_id": "p2hash", "page_id": 20,
    "page_title": "Nova Lab", "page_qid": "Q900", "rev_id": 222,
    "rev_timestamp": ts("2024-01-05T00:00:00Z"), "paragraph_idx": 0, "text": TEXT2,
    "mentions": [mention(TEXT2, "Jane Roe", "Jane Roe", "Q901")],
}
P3 = {**P2, "passage_id": "p3hash", "paragraph_idx": 1}  # no instances: no line
P4 = {**P2, "window": 2, "passage_id": "p4hash", "rev_timestamp": ts("2024-01-10T00:00:00Z")}


def inst(p: dict, op: str, s: str, pr: str, o: str, **kw: Any) -> dict[str, Any]:
    row = {
        "snapshot": p["snapshot"], "window": p["window"], "passage_id": p["passage_id"],
        "op": op, "s": s, "p": pr, "o": o, "signal": None,
        "s_label": f"label {s}", "p_label": f"label {pr}", "o_label": f"label {o}",
        "emerging_head": False, "emerging_tail": False,
        "head_created_at": ts("2012-10-29T00:00:00Z"), "tail_created_at": ts("2013-01-02T03:04:05Z"),
        "lifespan_from": None, "lifespan_to": None,
        "qualifier_pid": None, "qualifier_label": None, "qualifier_at": None,
        "source_delta_type": None,
    }
    row.update(kw)
    return row


D_KW = {"signal": "qualifier:P582", "qualifier_pid": "P582", "qualifier_label": "end time",
        "qualifier_at": ts("2024-01-05T00:00:00Z"), "lifespan_from": ts("2020-05-01T00:00:00Z"),
        "lifespan_to": ts("2024-01-05T00:00:00Z")}
INSTANCES_W1 = [
    inst(P1, "E", "Q7259", "P1327", "Q46633", lifespan_from=ts("2024-01-04T00:00:00Z"),
         source_delta_type="all"),
    # one (s, p, o) under two ops: one entry, both ops (D first, as the authors write it),
    # the D row's signal and qualifier
    inst(P1, "D", "Q46633", "P800", "Q1857044", **D_KW, source_delta_type="wikipedia_intersection"),
    inst(P1, "E", "Q46633", "P800", "Q1857044", lifespan_from=ts("2020-05-01T00:00:00Z"),
         source_delta_type="wikipedia_intersection"),
    inst(P1, "X", "Q46633", "P27", "Q145"),
    inst(P2, "EE-KG", "Q900", "P17", "Q142", emerging_head=True,
         head_created_at=ts("2024-01-04T00:00:00Z"), source_delta_type="emerging"),
    inst({**P2, "passage_id": "ghost"}, "E", "Q1", "P2", "Q3"),  # no passage: an orphan
]
INSTANCES_W2 = [inst(P4, "EE", "Q900", "P112", "Q901", emerging_head=True,
                     source_delta_type="emerging")]


#: T_t: the X triple of P1 (one hop from its mention Q46633), a triple two hops from it,
#: one apart from every line; the E triple Q7259 P1327 Q46633 is not in T_t
KG = [("Q46633", "P27", "Q145"), ("Q145", "P31", "Q6256"), ("Q0", "P31", "Q5")]


def release_to(cat: Catalog, out: Path, windows: int = 2, days: float = 7,
               snapshots: tuple[str, ...] = (SNAP,), release: dict[str, Any] | None = None,
               **passages: Any) -> dict[str, Any]:
    """The release stage through the registry; returns its release.json."""
    run(cat, "release", release_dir=out, passages=passages, release=release or {},
        snapshots={"timestamps": list(snapshots), "windows": windows, "window_days": days})
    return json.loads((out / LISTING).read_text())


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory, spark) -> Catalog:
    """One small catalog for the module: passages/instances of two windows, the KG tables of
    the released snapshot and of an older one, and a table without a snapshot column."""
    cat = Catalog(tmp_path_factory.mktemp("release") / "warehouse", spark)
    put(cat, "passages", [P1, P2, P3, P4])
    put(cat, "instances", INSTANCES_W1 + INSTANCES_W2)
    put(cat, "kg_triples", [{"snapshot": SNAP, "s": s, "p": p, "o": o} for s, p, o in KG] +
        [{"snapshot": OLD, "s": f"Q{i}", "p": "P31", "o": "Q5"} for i in range(2)])
    put(cat, "entities", [{"snapshot": snap, "qid": "Q5", "title": "Human", "label": "human",
                           "description": "", "text_description": "Humans are…",
                           "created_at": ts("2012-10-29T00:00:00Z")} for snap in (SNAP, OLD)])
    put(cat, "relations", [{"snapshot": SNAP, "pid": "P31", "label": "instance of",
                            "description": "that class"}])
    cat.overwrite("stable_statements", cat.frame("stable_statements", [
        {"s": "Q1", "p": "P31", "o": "Q5", "valid_from": ts("2020-01-01T00:00:00Z"), "valid_to": None},
        {"s": "Q2", "p": "P31", "o": "Q5", "valid_from": ts("2021-01-01T00:00:00Z"), "valid_to": None},
    ]))
    return cat


@pytest.fixture(scope="module")
def released(warehouse: Catalog, tmp_path_factory) -> tuple[Path, dict[str, Any]]:
    out = tmp_path_factory.mktemp("out")
    return out, release_to(warehouse, out)


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines()]


PREFIX = "Excerpt from the Wikipedia page describing Ada Lovelace: "


def test_one_line_exactly(released) -> None:
    out, _ = released
    recs = {r["passage_id"]: r for r in lines(out / "corpus" / "snapshot_2024-01-01" / "delta_2024-01-08.jsonl")}
    got = recs["p1hash"]
    off = len(PREFIX)
    cb, ae = TEXT1.index("Charles Babbage"), TEXT1.index("Analytical Engine")
    expected = {
        "hash_id": hash_id(SNAP, 1, 10, "p1hash"),
        "passage": PREFIX + TEXT1,
        "mentions": [
            {"mention_text": "Ada Lovelace", "target_entity": "Ada_Lovelace", "start_char": 43,
             "end_char": 55, "qid": "Q7259"},
            {"mention_text": "Charles Babbage", "target_entity": "Charles_Babbage",
             "start_char": off + cb, "end_char": off + cb + 15, "qid": "Q46633"},
            {"mention_text": "Analytical Engine", "target_entity": "Analytical_Engine",
             "start_char": off + ae, "end_char": off + ae + 17, "qid": "Q1857044"},
        ],
        "revision_id": 111,
        "revision_date": "2024-01-03T12:00:00Z",
        "revision_timestamp": 1704283200,
        "anchor_title": "Ada Lovelace",
        "anchor_page_id": 10,
        "anchor_page_qid": "Q7259",
        "paragraph_idx": 2,
        "delta_dates": ["2024-01-01", "2024-01-08"],
        "delta_timestamps": [1704067200, 1704672000],
        "tkgu_triples": [
            {
                "triple": ["Q46633", "P27", "Q145"],
                "triple_labels": ["label Q46633", "label P27", "label Q145"],
                "tkgu_operations": ["x-triples"],
                "emerging_head": False, "emerging_tail": False,
                "head_creation_date": "2012-10-29", "head_creation_timestamp": 1351468800,
                "tail_creation_date": "2013-01-02", "tail_creation_timestamp": 1357095845,
                "triple_lifespan_date": [None, None], "triple_lifespan_timestamp": [None, None],
                "llm_assessment": [], "human_assessment": [],
                "qualifier_info": {}, "deprecation_signal": None, "asserted_operations": None,
            },
            {
                "triple": ["Q46633", "P800", "Q1857044"],
                "triple_labels": ["label Q46633", "label P800", "label Q1857044"],
                "tkgu_operations": ["d-triples", "e-triples"],
                "emerging_head": False, "emerging_tail": False,
                "head_creation_date": "2012-10-29", "head_creation_timestamp": 1351468800,
                "tail_creation_date": "2013-01-02", "tail_creation_timestamp": 1357095845,
                "triple_lifespan_date": ["2020-05-01", "2024-01-05"],
                "triple_lifespan_timestamp": [1588291200, 1704412800],
                "llm_assessment": [], "human_assessment": [],
                "source_delta_type": "wikipedia_intersection",
                "qualifier_info": {"qualifier_qid": "P582", "qualifier_label": "end time",
                                   "qualifier_date": "2024-01-05",
                                   "qualifier_timestamp": 1704412800},
                "deprecation_signal": "qualifier:P582", "asserted_operations": None,
            },
            {
                "triple": ["Q7259", "P1327", "Q46633"],
                "triple_labels": ["label Q7259", "label P1327", "label Q46633"],
                "tkgu_operations": ["e-triples"],
                "emerging_head": False, "emerging_tail": False,
                "head_creation_date": "2012-10-29", "head_creation_timestamp": 1351468800,
                "tail_creation_date": "2013-01-02", "tail_creation_timestamp": 1357095845,
                "triple_lifespan_date": ["2024-01-04", None],
                "triple_lifespan_timestamp": [1704326400, None],
                "llm_assessment": [], "human_assessment": [], "source_delta_type": "all",
                "qualifier_info": {}, "deprecation_signal": None, "asserted_operations": None,
            },
        ],
        "predictions": {},
        "passage_id": "p1hash",
        "window": 1,
        "paragraph_offset": off,
    }
    assert got == expected
    # the authors' field order leads each line
    assert list(got)[: len(RELEASE_FIELDS)] == list(RELEASE_FIELDS)


def test_offsets_and_fields_of_every_line(released) -> None:
    out, _ = released
    recs = [r for f in sorted((out / "corpus" / "snapshot_2024-01-01").glob("delta_*.jsonl")) for r in lines(f)]
    assert len(recs) == 3
    for r in recs:
        assert set(RELEASE_FIELDS) <= set(r)
        assert "''" not in r["passage"]
        for m in r["mentions"]:
            assert set(m) == set(MENTION_FIELDS)
            assert r["passage"][m["start_char"] : m["end_char"]] == m["mention_text"]
        assert r["mentions"][0]["qid"] == r["anchor_page_qid"]  # the article's own item
        for t in r["tkgu_triples"]:
            assert set(TRIPLE_FIELDS) - {"source_delta_type"} <= set(t)
            assert ("source_delta_type" in t) == (t["tkgu_operations"] != ["x-triples"])
            assert set(t["qualifier_info"]) in (set(), set(QUALIFIER_FIELDS))
    nova = next(r for r in recs if r["passage_id"] == "p2hash")
    assert nova["tkgu_triples"][0]["tkgu_operations"] == ["ee-kg-triples"]
    assert nova["tkgu_triples"][0]["source_delta_type"] == "emerging"
    assert nova["tkgu_triples"][0]["emerging_head"] is True


def test_layout_sorting_and_summary(released) -> None:
    out, summary = released
    w1 = out / "corpus" / "snapshot_2024-01-01" / "delta_2024-01-08.jsonl"
    w2 = out / "corpus" / "snapshot_2024-01-01" / "delta_2024-01-15.jsonl"
    ids = [r["hash_id"] for r in lines(w1)]
    assert ids == sorted(ids) and {r["passage_id"] for r in lines(w1)} == {"p1hash", "p2hash"}
    assert [r["passage_id"] for r in lines(w2)] == ["p4hash"]
    assert lines(w2)[0]["delta_dates"] == ["2024-01-01", "2024-01-15"]
    assert lines(w2)[0]["delta_timestamps"] == [1704067200, 1705276800]
    assert summary["lines"] == {"corpus/snapshot_2024-01-01/delta_2024-01-08.jsonl": 2,
                                "corpus/snapshot_2024-01-01/delta_2024-01-15.jsonl": 1}
    assert summary["ops"] == {"D": 1, "E": 2, "EE": 1, "EE-KG": 1, "X": 1}
    assert summary["orphan_instances"] == 1 and summary["anchor_mismatches"] == 0
    text = w1.read_text(encoding="utf-8")
    assert "café" in text and "\\u" not in text  # UTF-8, not escaped
    assert not list(out.rglob(".*.tmp-*"))


def test_rerun_is_byte_identical(released, warehouse: Catalog, tmp_path: Path) -> None:
    out, _ = released
    release_to(warehouse, tmp_path)
    for rel in ("corpus/snapshot_2024-01-01/delta_2024-01-08.jsonl",
                "corpus/snapshot_2024-01-01/delta_2024-01-15.jsonl", LISTING, MANIFEST,
                "kg_snapshots/snapshot_2024-01-01/kg_triples.parquet", "parquet/instances.parquet",
                "kg_snapshots/kg_snapshot_2024-01-01.tsv.gz",
                *(split_path(SNAP, split) for split in SPLITS),
                "parquet/context/snapshot_2024-01-01/delta_2024-01-08.parquet",
                "parquet/context/snapshot_2024-01-01/relation_priors.parquet"):
        assert (tmp_path / rel).read_bytes() == (out / rel).read_bytes(), rel


def test_only_released_tables_at_pinned_versions(released, warehouse: Catalog) -> None:
    out, summary = released
    snap = out / "kg_snapshots" / "snapshot_2024-01-01"
    assert pq.read_table(snap / "kg_triples.parquet").num_rows == 3  # not the older snapshot's
    assert pq.read_table(snap / "entities.parquet").column("snapshot").to_pylist() == [
        date.fromisoformat(SNAP[:10])]  # t as a date, as in the lines (the catalog: a string)
    assert pq.read_table(snap / "relations.parquet").num_rows == 1
    # T_t also as the authors' evaluator reads it: head, relation, tail per line, sorted
    tsv = gzip.decompress((out / "kg_snapshots" / "kg_snapshot_2024-01-01.tsv.gz").read_bytes())
    assert [tuple(row.split("\t")) for row in tsv.decode().splitlines()] == sorted(
        (r["s"], r["p"], r["o"]) for r in pq.read_table(snap / "kg_triples.parquet").to_pylist())
    # internal tables (timelines, stable_statements, passages) stay in the warehouse; beside
    # instances, parquet/ holds the lines' typed twins, their triples, splits and context
    assert sorted(p.name for p in (out / "parquet").iterdir()) == [
        "context", "corpus", "instances.parquet", "splits", "triples"]
    for rel in ("corpus/snapshot_2024-01-01/delta_2024-01-08.jsonl",
                "corpus/snapshot_2024-01-01/delta_2024-01-15.jsonl"):
        twin = pq.read_table(out / parquet_twin(rel))
        assert twin.equals(lines_table(read_jsonl(out / rel)))  # the same lines, typed
        assert pq.read_table(out / parquet_twin(rel, PARQUET_TRIPLES)).num_rows == sum(
            len(r["tkgu_triples"]) for r in read_jsonl(out / rel))
        assert summary["parquet_rows"][parquet_twin(rel)] == summary["lines"][rel]
    assert pq.read_table(out / "parquet" / "instances.parquet").num_rows == 7
    assert pq.read_schema(out / "parquet" / "instances.parquet").equals(  # snapshot: a date
        release_schema(spec("instances").schema))
    assert summary["parquet_rows"]["parquet/instances.parquet"] == 7
    # no Delta version in the release: a rerun makes new ones, not a new release
    assert "versions" not in summary
    written = sorted(p.relative_to(out).as_posix() for p in out.rglob("*")
                     if p.is_file() and p.name not in (LISTING, MANIFEST))
    assert sorted(summary["files"]) == written
    # manifest.json lists every file written (release.json included) with its checksum
    manifest = read_manifest(out)
    assert [f["path"] for f in manifest["files"]] == sorted([*written, LISTING])
    assert verify_release(out).ok and "delta_versions" not in manifest
    assert manifest["files"][[f["path"] for f in manifest["files"]].index(
        "parquet/instances.parquet")]["rows"] == 7
    assert warehouse.read_arrow("kg_triples").num_rows == 5  # the old snapshot was left out


def test_splits_by_article_in_time_order(released) -> None:
    """No draw here (no select run): test is empty and each article's lines, its passages'
    later-window repeats included, go to train or validation by a hash of its page_id."""
    out, summary = released
    expect = {page: "validation" if validation_article(page, 0.1) else "train"
              for page in (10, 20)}
    got = {split: pq.read_table(out / split_path(SNAP, split)).to_pylist() for split in SPLITS}
    assert {r["passage_id"]: split for split, rows in got.items() for r in rows} == {
        "p1hash": expect[10], "p2hash": expect[20], "p4hash": expect[20]}
    for rows in got.values():  # time order: window, then the revision
        assert [(r["window"], r["revision_timestamp"]) for r in rows] == sorted(
            (r["window"], r["revision_timestamp"]) for r in rows)
    lines_of = {split: sum(1 for pid in ("p1hash", "p2hash", "p4hash")
                           if {"p1hash": expect[10]}.get(pid, expect[20]) == split)
                for split in SPLITS}
    assert summary["splits"] == {
        "lines": lines_of, "excluded": {},
        "articles": {split: sum(1 for page in (10, 20) if expect[page] == split)
                     for split in SPLITS}}
    assert read_manifest(out)["splits"] == summary["splits"]


def test_context_is_the_planted_neighbourhood(released, warehouse: Catalog,
                                              tmp_path: Path) -> None:
    """P1 mentions Q46633: its one-hop context is its X triple, and the E triple is not
    in T_t; a second hop adds the triple two away; the relation priors count T_t."""
    out, _ = released
    rel = "parquet/context/snapshot_2024-01-01/delta_2024-01-08.parquet"

    def context(root: Path) -> dict[str, dict[str, Any]]:
        rows = pq.read_table(root / rel).to_pylist()
        return {r["hash_id"]: r for r in rows}

    p1 = hash_id(SNAP, 1, 10, "p1hash")
    one = context(out)
    assert one[p1]["seeds"] == ["Q7259", "Q46633", "Q1857044"]
    assert [(t["s"], t["p"], t["o"], t["hop"]) for t in one[p1]["context_triples"]] == [
        ("Q46633", "P27", "Q145", 1)]
    assert (one[p1]["context_total"], one[p1]["truncated"], one[p1]["hops"]) == (1, False, 1)
    assert one[hash_id(SNAP, 1, 20, "p2hash")]["context_triples"] == []
    priors = pq.read_table(out / "parquet/context/snapshot_2024-01-01/relation_priors.parquet")
    assert [(r["pid"], r["label"], r["triples"]) for r in priors.to_pylist()] == [
        ("P31", "instance of", 2), ("P27", None, 1)]
    release_to(warehouse, tmp_path, release={"context": {"hops": 2}})
    two = context(tmp_path)[p1]
    assert [(t["s"], t["p"], t["o"], t["hop"], t["p_label"]) for t in two["context_triples"]] \
        == [("Q46633", "P27", "Q145", 1, None), ("Q145", "P31", "Q6256", 2, "instance of")]
    capped = tmp_path / "capped"
    release_to(warehouse, capped, release={"context": {"hops": 2, "max_triples": 0}})
    assert (context(capped)[p1]["context_triples"], context(capped)[p1]["truncated"]) == (
        [], True)


def test_snapshot_is_one_type_in_every_table_of_the_release(released) -> None:
    """t is a date in every Parquet file of the release (the lines' delta_dates[0], the
    triples', the KG tables' and the instances'), in the Hub's features and in
    croissant.json; so the tables join on it (the catalog keeps its string key)."""
    import datasets
    import pandas as pd

    from emerge_lib.formats.layout import CROISSANT

    out, _ = released
    files = sorted(out.rglob("*.parquet"))
    with_snapshot = {f.relative_to(out).as_posix(): pq.read_schema(f) for f in files
                     if "snapshot" in pq.read_schema(f).names}
    assert {p.split("/")[-1] for p in with_snapshot} >= {
        "kg_triples.parquet", "entities.parquet", "relations.parquet", "instances.parquet",
        "delta_2024-01-08.parquet"}  # the triples' twins
    for rel, schema in with_snapshot.items():
        assert schema.field("snapshot").type == pa.date32(), rel
        assert datasets.Features.from_arrow_schema(schema)["snapshot"] == \
            datasets.Value("date32"), rel
    doc = json.loads((out / CROISSANT).read_text())
    types = {f["@id"]: f["dataType"] for rs in doc["recordSet"] for f in rs["field"]
             if f["@id"].endswith("/snapshot")}
    assert set(types) >= {"triples/snapshot", "kg_triples/snapshot", "entities/snapshot",
                          "relations/snapshot"}
    assert set(types.values()) == {"sc:Date"}
    # the merge that returned no row: the triples of the lines against T_t, on snapshot
    triples = pd.read_parquet(out / PARQUET_TRIPLES)
    kg = pd.read_parquet(out / "kg_snapshots" / "snapshot_2024-01-01" / "kg_triples.parquet")
    instances = pd.read_parquet(out / "parquet" / "instances.parquet")
    assert len(triples.merge(kg[["snapshot"]].drop_duplicates(), on="snapshot")) == len(triples)
    assert len(instances.merge(kg[["snapshot"]].drop_duplicates(), on="snapshot")) == \
        len(instances) > 0


def test_a_rerun_removes_what_it_no_longer_releases(warehouse: Catalog, tmp_path: Path) -> None:
    release_to(warehouse, tmp_path, windows=2)
    old_layout = tmp_path / "parquet" / "statement_timeline.parquet"  # an earlier version's copy
    old_layout.write_bytes(b"x")
    mine = tmp_path / "notes.txt"  # not a release file: left alone
    mine.write_text("keep")
    listing = release_to(warehouse, tmp_path, windows=1)
    assert not (tmp_path / "corpus" / "snapshot_2024-01-01" / "delta_2024-01-15.jsonl").exists()
    for twin in ("corpus", "triples"):  # and its typed twins
        assert not (tmp_path / "parquet" / twin / "snapshot_2024-01-01" /
                    "delta_2024-01-15.parquet").exists()
    assert (tmp_path / "parquet" / "corpus" / "snapshot_2024-01-01" /
            "delta_2024-01-08.parquet").exists()
    assert not old_layout.exists() and mine.read_text() == "keep"
    assert (tmp_path / "corpus" / "snapshot_2024-01-01" / "delta_2024-01-08.jsonl").exists()
    assert "corpus/snapshot_2024-01-01/delta_2024-01-15.jsonl" not in listing["files"]


def test_crash_leaves_no_half_file(warehouse: Catalog, tmp_path: Path, monkeypatch) -> None:
    release_to(warehouse, tmp_path, windows=1)
    path = tmp_path / "corpus" / "snapshot_2024-01-01" / "delta_2024-01-08.jsonl"
    before = path.read_bytes()
    calls = 0

    def failing(*args: Any, **kw: Any) -> dict[str, Any]:
        nonlocal calls
        calls += 1
        if calls == 2:
            raise RuntimeError("crash mid-file")
        return passage_record(*args, **kw)

    monkeypatch.setattr(windows, "passage_record", failing)
    with pytest.raises(RuntimeError, match="mid-file"):
        release_to(warehouse, tmp_path, windows=1, title_prefix=False)
    assert path.read_bytes() == before
    assert not [p.name for p in path.parent.iterdir() if p.name.startswith(".")]  # no temp left


def files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes()
            for p in sorted(root.rglob("*")) if p.is_file()}


def test_workers_write_the_same_bytes(warehouse: Catalog, tmp_path: Path, caplog,
                                     monkeypatch) -> None:
    """release.workers: 3 (a pool of spawned processes, each unit a window, a KG table, a
    context, a table released whole, the splits or a snapshot's statistics on the card)
    writes the release that one process writes, the shared files included, and the
    workers' log lines reach the driver's log."""
    from emerge_lib.release import units

    one, three = tmp_path / "one", tmp_path / "three"
    release_to(warehouse, one, release={"workers": 1})
    submitted: list[str] = []
    submit = units.Units.submit

    def seen(self: units.Units, fn: Any, *args: Any) -> Any:  # the real submit, counted
        submitted.append(fn.__name__)
        return submit(self, fn, *args)

    monkeypatch.setattr(units.Units, "submit", seen)
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="emerge_lib"):
        release_to(warehouse, three, release={"workers": 3})
    a, b = files(one), files(three)
    assert sorted(a) == sorted(b) and len(b) > 20
    assert [name for name in b if a[name] != b[name]] == []
    shared = [n for n in b if n.startswith(("parquet/splits/", "plots/", "validation/"))
              or n in ("parquet/instances.parquet", "README.md", "croissant.json", MANIFEST)]
    assert len(shared) >= 11 and all(a[n] == b[n] for n in shared)
    # the shared units ran in the pool: the splits once, the card's statistics per snapshot
    assert submitted.count("split_files") == 1 and submitted.count("card_stats") == 1
    assert submitted.count("table_file") == 3 + len(
        [n for n in b if n.startswith("parquet/") and n.count("/") == 1])
    # the orphan instance's warning was made in a worker and logged here
    orphans = [r for r in caplog.records if "instances have no passage" in r.getMessage()]
    assert orphans and all(r.process != os.getpid() for r in orphans)


def test_workers_0_starts_a_pool_only_for_a_large_release(warehouse: Catalog,
                                                        monkeypatch) -> None:
    """release.workers: 0 sizes what the snapshots to write read (their Parquet files):
    below AUTO_MIN_BYTES the driver writes alone; a number given is used as it is."""
    from emerge_lib.core.config import CurationSettings, PassageSettings
    from emerge_lib.release import units

    names = ("passages", "instances", "kg_triples", "entities", "relations", "verdicts")
    reads = windows.Reads(warehouse, {n: warehouse.version(n) for n in names},
                          PassageSettings(), CurationSettings())
    size = units.input_bytes(reads, [SNAP])
    assert 0 < size < units.AUTO_MIN_BYTES
    assert units.input_bytes(reads, ["2020-01-01T00:00:00Z"]) == 0  # no rows, no bytes
    assert units.Units(reads, 0, most=3).settle([SNAP]) == 1
    monkeypatch.setattr(units, "AUTO_MIN_BYTES", size)
    assert units.Units(reads, 0, most=3).settle([SNAP]) == 3
    assert units.Units(reads, 2, most=3).settle([SNAP]) == 2


def test_a_failing_worker_is_one_line_and_leaves_the_release(
        warehouse: Catalog, tmp_path: Path, spark) -> None:
    """A unit failing in a worker (an unknown op in window 2) raises the serial path's
    error, without the worker's traceback chained to it, and the release before stays
    as it was, with no staging folder or temporary file left."""
    out = tmp_path / "out"
    release_to(warehouse, out, release={"workers": 1})
    before = files(out)
    bad = Catalog(tmp_path / "bad", spark)
    put(bad, "passages", [P1, P2, P4])
    put(bad, "instances", INSTANCES_W1[:1] + [inst(P4, "ADD", "Q900", "P112", "Q901")])
    serial, pooled = _serial_and_pooled(bad, out)
    assert "unknown op 'ADD'" in str(pooled) and "\n" not in str(pooled)
    assert str(pooled) == str(serial)
    assert pooled.__cause__ is None and pooled.__suppress_context__
    assert files(out) == before
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".out.")
            and p.name not in (".out.lock", ".out.carry.json")] == []  # no staging left


def _serial_and_pooled(catalog: Catalog, out: Path) -> tuple[ReleaseError, ReleaseError]:
    """The error a release into ``out`` raises in one process, then in a pool of 3."""
    errors = []
    for workers in (1, 3):
        with pytest.raises(ReleaseError) as caught:
            release_to(catalog, out, release={"workers": workers})
        errors.append(caught.value)
    return errors[0], errors[1]


def test_a_failing_shared_unit_is_one_line_and_leaves_the_release(
        warehouse: Catalog, tmp_path: Path, monkeypatch) -> None:
    """A shared file's unit that fails (the splits, as a full disk fails them) raises its
    one line in one process and in a pool alike, and one whose worker is killed (a
    snapshot's statistics on the card, as the out-of-memory killer would) says so in one
    line; either way the release before stays as it was, with no staging folder left."""
    import poolkit

    from emerge_lib.release import writer

    out = tmp_path / "out"
    release_to(warehouse, out, release={"workers": 1})
    before = files(out)
    monkeypatch.setattr(writer, "split_files", poolkit.release_unit_fails)
    serial, pooled = _serial_and_pooled(warehouse, out)
    assert "no space left on device" in str(pooled) and "\n" not in str(pooled)
    assert str(pooled) == str(serial) and pooled.__cause__ is None
    monkeypatch.undo()
    monkeypatch.setattr(writer, "card_stats", poolkit.release_unit_dies)
    with pytest.raises(ReleaseError, match="a release worker process died") as caught:
        # written whole: a carried snapshot's statistics are the last release's, no unit
        release_to(warehouse, out, release={"workers": 3, "carry_unchanged": False})
    assert "\n" not in str(caught.value) and caught.value.retryable
    assert files(out) == before
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".out.")
            and p.name not in (".out.lock", ".out.carry.json")] == []  # no staging left


# --- the pure record function (no Spark) -------------------------------------------------


def test_prefix_off_keeps_paragraph_offsets() -> None:
    rec = passage_record(P1, INSTANCES_W1[:1], SNAP, 1, 7, title_prefix=False)
    assert rec["passage"] == TEXT1 and rec["paragraph_offset"] == 0
    assert [m["qid"] for m in rec["mentions"]] == ["Q46633", "Q1857044"]  # no title mention
    for m, src in zip(rec["mentions"], P1["mentions"], strict=False):
        assert (m["start_char"], m["end_char"]) == (src["start"], src["end"])
    # the line's identity does not depend on the prefix switch
    assert rec["hash_id"] == passage_record(P1, INSTANCES_W1[:1], SNAP, 1, 7)["hash_id"]


def test_ee_kg_and_d_line_lists_both_and_reports_the_end_qualifier() -> None:
    """An emerging entity's statement added inside the window with a start (P580) and an end
    (P582) qualifier both dated there: one entry, exactly ``["ee-kg-triples", "d-triples"]``
    whatever the row order, and ``qualifier_info`` is the D's end qualifier (the authors'
    released EE-KG+D triple carries P582), not the addition's start."""
    start = {"qualifier_pid": "P580", "qualifier_label": "start time",
             "qualifier_at": ts("2024-01-02T00:00:00Z")}
    rows = [inst(P2, "D", "Q900", "P17", "Q142", **D_KW, emerging_head=True,
                 source_delta_type="emerging"),
            inst(P2, "EE-KG", "Q900", "P17", "Q142", **start, emerging_head=True,
                 source_delta_type="emerging")]
    for order in (rows, rows[::-1]):
        line = json.loads(dumps_line(passage_record(P2, order, SNAP, 1, 7)))
        (triple,) = line["tkgu_triples"]
        assert triple["tkgu_operations"] == ["ee-kg-triples", "d-triples"]
        assert triple["qualifier_info"] == {"qualifier_qid": "P582", "qualifier_label": "end time",
                                            "qualifier_date": "2024-01-05",
                                            "qualifier_timestamp": 1704412800}
        assert triple["deprecation_signal"] == "qualifier:P582"
    # an addition alone keeps its start qualifier
    (alone,) = passage_record(P2, rows[1:], SNAP, 1, 7)["tkgu_triples"]
    assert alone["qualifier_info"]["qualifier_qid"] == "P580"


def test_hash_id_is_stable_and_distinguishes() -> None:
    h = hash_id("2024-01-01T00:00:00Z", 1, 10, "p1hash")
    assert h == hash_id(datetime(2024, 1, 1, tzinfo=UTC), 1, 10, "p1hash")
    assert h == hash_id("2024-01-01T01:00:00+01:00", 1, 10, "p1hash")
    assert len(h) == 32 and int(h, 16) >= 0
    assert len({h, hash_id(SNAP, 2, 10, "p1hash"), hash_id(SNAP, 1, 11, "p1hash"),
                hash_id(SNAP, 1, 10, "p1hasi"), hash_id(OLD, 1, 10, "p1hash")}) == 5


def test_non_day_windows_and_local_offsets_are_utc() -> None:
    rec = passage_record(P2, INSTANCES_W1[4:5], "2024-03-31T23:00:00-02:00", 2, 0.5)
    assert rec["delta_dates"] == ["2024-04-01", "2024-04-02"]  # UTC dates
    assert rec["delta_timestamps"] == [1711933200, 1712019600]  # exact, UTC


def test_authors_timestamps_are_paris_local_time() -> None:
    """Their 2019-01-01 (winter, +1 h) and 2019-07-01 (summer, +2 h) as true UTC."""
    assert authors_timestamp_to_utc(1546297200) == 1546300800
    assert authors_timestamp_to_utc(1561932000) == 1561939200


def test_bad_input_is_refused() -> None:
    bad = {**P2, "mentions": [{"start": 30, "end": 99, "anchor": "x", "target": "X", "qid": "Q1"}]}
    with pytest.raises(FormatError, match="outside"):
        passage_record(bad, [], SNAP, 1, 7)
    with pytest.raises(FormatError, match="unknown op"):
        passage_record(P2, [inst(P2, "ADD", "Q1", "P1", "Q2")], SNAP, 1, 7)


def test_clashing_file_names_are_refused(tmp_path: Path) -> None:
    cat = Catalog(tmp_path / "none")
    with pytest.raises(ReleaseError, match="same end date"):
        release_to(cat, tmp_path / "out", windows=3, days=0.25)
    with pytest.raises(ReleaseError, match="one per day"):
        release_to(cat, tmp_path / "out", windows=1, snapshots=(SNAP, "2024-01-01T12:00:00Z"))
