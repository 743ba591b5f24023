"""What every built release must answer to, whoever reads it: ``datasets.load_dataset``
over the folder, DuckDB over its Parquet, mlcroissant over croissant.json, the Hub card's
YAML, and ``load_release``; each compared with the release's own JSONL, the truth a
reader of the authors' files sees. Shared by the e2e and system tests (a release built
from a world, the demo's, one downloaded back from S3)."""

from __future__ import annotations

import json
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime
from itertools import islice
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from emerge_lib.formats.card import split_name
from emerge_lib.formats.croissant import write_croissant
from emerge_lib.formats.format import dumps_line, passage_record
from emerge_lib.formats.layout import (
    CROISSANT,
    PARQUET_TRIPLES,
    corpus_path,
    evaluation_path,
    kg_parquet_path,
    parquet_twin,
)
from emerge_lib.formats.manifest import content_version, file_entries, read_manifest, write_manifest
from emerge_lib.formats.schema import dated_snapshot, write_lines


@dataclass
class Truth:
    """A release's JSONL, counted: per snapshot folder, lines; per operation, instances."""

    lines: Counter[str] = field(default_factory=Counter)  # snapshot_D → corpus lines
    evaluation: Counter[str] = field(default_factory=Counter)  # snapshot_D → evaluation lines
    ops: Counter[str] = field(default_factory=Counter)  # corpus: operation name → instances
    evaluation_ops: Counter[str] = field(default_factory=Counter)
    triples: int = 0  # corpus triples
    hash_ids: set[str] = field(default_factory=set)


def jsonl_truth(release: Path) -> Truth:
    truth = Truth()
    for section, lines, ops in (("corpus", truth.lines, truth.ops),
                                ("evaluation_set", truth.evaluation, truth.evaluation_ops)):
        for path in sorted(release.glob(f"{section}/snapshot_*/delta_*.jsonl")):
            for line in path.read_text(encoding="utf-8").splitlines():
                record = json.loads(line)
                lines[path.parent.name] += 1
                for t in record["tkgu_triples"]:
                    ops.update(t["tkgu_operations"])
                if section == "corpus":
                    truth.triples += len(record["tkgu_triples"])
                    truth.hash_ids.add(record["hash_id"])
    return truth


def check_datasets(release: Path, truth: Truth, cache: Path) -> dict[str, int]:
    """``datasets.load_dataset(RELEASE)``: the default config has a split per snapshot and
    ``test``, each with as many rows as its JSONL lines; the triples config one row per
    triple. Returns rows per split."""
    import datasets

    loaded = datasets.load_dataset(str(release), cache_dir=str(cache))
    want = {split_name(snap): n for snap, n in truth.lines.items()}
    if truth.evaluation:
        want["test"] = sum(truth.evaluation.values())
    got = {name: split.num_rows for name, split in loaded.items()}
    assert got == want, (got, want)
    triples = datasets.load_dataset(str(release), "triples", cache_dir=str(cache))
    assert sum(s.num_rows for s in triples.values()) == truth.triples
    first = next(iter(loaded.values()))
    triple = first.features["tkgu_triples"].feature  # typed, not inferred
    assert triple["qualifier_info"]["qualifier_date"].dtype == "date32"
    assert triple["llm_assessment"].feature["llm_assessment"].dtype == "bool"
    return got


def check_duckdb(release: Path, truth: Truth) -> dict[str, int]:
    """DuckDB's counts per operation equal the JSONL's, the corpus and the evaluation set."""
    from emerge_lib.hub import open_release
    from emerge_lib.hub.query import run

    opened = open_release(release)
    _, rows = run(opened, "SELECT operation, count(*) FROM operations GROUP BY ALL")
    assert dict(rows) == dict(truth.ops)
    if truth.evaluation:
        _, rows = run(opened, "SELECT operation, count(*) FROM evaluation_operations "
                              "GROUP BY ALL")
        assert dict(rows) == dict(truth.evaluation_ops)
    _, rows = run(opened, "SELECT snapshot, count(*) FROM lines GROUP BY ALL")
    assert {f"snapshot_{d}": n for d, n in rows} == dict(truth.lines)
    return dict(truth.ops)


def check_croissant(release: Path, truth: Truth, records: int = 3) -> dict[str, int]:
    """mlcroissant validates croissant.json and yields rows of every record set (a few:
    it reads slowly); its version is the manifest's."""
    import mlcroissant as mlc

    doc = json.loads((release / "croissant.json").read_text())
    assert doc["version"].endswith("+" + read_manifest(release)["version"])
    assert doc["datePublished"]
    dataset = mlc.Dataset(jsonld=str(release / "croissant.json"))
    assert not dataset.metadata.ctx.issues.warnings, dataset.metadata.ctx.issues.warnings
    got = {}
    for record_set in doc["recordSet"]:
        name = record_set["@id"]
        rows = list(islice(dataset.records(name), records))
        assert rows, name
        got[name] = len(rows)
    first = next(iter(dataset.records("corpus")))
    assert first["corpus/hash_id"].decode() in truth.hash_ids
    assert set(got) >= {"corpus", "triples", "kg_triples", "entities", "relations"}
    return got


def check_card(release: Path) -> list[str]:
    """The card's YAML parses with huggingface_hub, names every Parquet file with rows
    (and only files of the manifest), and states the manifest's version."""
    from huggingface_hub import DatasetCard

    card = DatasetCard.load(release / "README.md")
    named = sorted(p for config in card.data.configs for split in config["data_files"]
                   for p in split["path"])
    manifest = read_manifest(release)
    listed = {f["path"] for f in manifest["files"]}
    with_rows = sorted(p for p in listed if p.endswith(".parquet")
                       and pq.ParquetFile(release / p).metadata.num_rows)
    assert sorted(set(named)) == with_rows
    assert set(named) <= listed and card.data.license == "cc-by-sa-4.0"
    assert manifest["version"] in card.text
    assert [c["config_name"] for c in card.data.configs if c.get("default")] == ["corpus"]
    return named


def check_load_release(release: Path | str, truth: Truth, **kw: Any) -> dict[str, float]:
    """``load_release`` in every kind agrees with the JSONL and carries the version;
    returns the seconds of each call."""
    from emerge_lib.hub import load_release, version_of

    seconds = {}
    started = time.perf_counter()
    lines = load_release(release, **kw)
    seconds["lines"] = time.perf_counter() - started
    assert lines.num_rows == sum(truth.lines.values())
    version = version_of(lines)
    assert version is not None and len(version) == 16
    started = time.perf_counter()
    triples = load_release(release, kind="triples", format="pandas", **kw)
    seconds["triples"] = time.perf_counter() - started
    assert len(triples) == truth.triples and version_of(triples) == version
    exploded = Counter(op for ops in triples["tkgu_operations"] for op in ops)
    assert exploded == truth.ops
    if truth.evaluation:
        test = load_release(release, split="test", format="arrow", **kw)
        assert test.num_rows == sum(truth.evaluation.values()) and version_of(test) == version
    kg = load_release(release, kind="kg", format="arrow", **kw)
    assert kg.num_rows > 0 and kg.column_names[:4] == ["snapshot", "s", "p", "o"]
    pages = {split: set(load_release(release, split=split, format="arrow", **kw)
                        .column("anchor_page_id").to_pylist())
             for split in ("train", "validation", "test")}
    assert not (pages["train"] & pages["validation"] or pages["test"] & (
        pages["train"] | pages["validation"])), "the leak-free splits share an article"
    context = load_release(release, kind="context", format="arrow", **kw)
    assert set(context.column("hash_id").to_pylist()) == truth.hash_ids
    return seconds


def check_everything(release: Path, cache: Path) -> dict[str, Any]:
    truth = jsonl_truth(release)
    assert truth.lines and truth.ops
    return {"datasets": check_datasets(release, truth, cache),
            "duckdb": check_duckdb(release, truth),
            "croissant": check_croissant(release, truth),
            "card": check_card(release),
            "load_release": check_load_release(release, truth)}


# --- a small hand-made release -----------------------------------------------------------
SNAPS = ("2024-01-01T00:00:00Z", "2024-04-01T00:00:00Z")
TEXT = "Alma Keller founded Northam Observatory with Bruno Tal in Eastport."


def line(snap: str, window: int, pid: str, ops: list[tuple[str, str, str]],
         verdict: bool | None = None, revised: datetime = datetime(2024, 1, 3, tzinfo=UTC)
         ) -> dict[str, Any]:
    """A release line of the passage ``pid`` (of the article ``len(pid)``, revised at
    ``revised``) with one triple per (op, s, o); ``verdict``: one judge's assertion of the
    first."""
    start = TEXT.index("Bruno Tal")
    passage = {"passage_id": pid, "page_id": len(pid), "page_title": "Alma Keller",
               "page_qid": "Q1", "rev_id": 3, "rev_timestamp": revised,
               "paragraph_idx": 0, "text": TEXT,
               "mentions": [{"start": start, "end": start + 9, "anchor": "Bruno Tal",
                             "target": "Bruno Tal", "qid": "Q7"}]}
    rows = [{"op": op, "s": s, "p": "P1", "o": o, "signal": "removed" if op == "D" else None,
             "s_label": s, "p_label": "p", "o_label": o, "emerging_head": op == "EE",
             "emerging_tail": False, "head_created_at": datetime(2020, 1, 1, tzinfo=UTC),
             "tail_created_at": None, "lifespan_from": datetime(2023, 1, 1, tzinfo=UTC),
             "lifespan_to": None, "qualifier_pid": None, "qualifier_label": None,
             "qualifier_at": None, "source_delta_type": "all"} for op, s, o in ops]
    curation = None
    if verdict is not None:
        key = (ops[0][1], "P1", ops[0][2])
        curation = {key: ([{"llm_name": "M", "llm_assessment": verdict,
                            "llm_prompt_type": "triple_assertion", "llm_prompt": "why"}],
                          [ops[0][0]] if verdict else [])}
    return passage_record(passage, rows, snap, window, 7, curation=curation)


def build_release(root: Path, lines: dict[tuple[str, int], list[dict[str, Any]]],
                  evaluation: dict[tuple[str, int], list[dict[str, Any]]],
                  meta: dict[str, Any] | None = None, derived: Any = None) -> Path:
    """A small release as the writer lays it out, from hand-made lines: the JSONL, their
    Parquet twins (through the writer's own functions), a KG snapshot, croissant.json
    (with the version) and the manifest (``meta``: e.g. a planted validation verdict);
    with ``derived`` (``ReleaseSettings``), the leak-free splits and the KG context too."""
    paths = []
    for (snap, k), records in sorted(lines.items()):
        for rel, recs in ((corpus_path(snap, k, 7), records),
                          *(((evaluation_path(snap, k, 7), evaluation[(snap, k)]),)
                            if (snap, k) in evaluation else ())):
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_text("".join(dumps_line(r) + "\n" for r in recs))
            (root / parquet_twin(rel)).parent.mkdir(parents=True, exist_ok=True)
            triples = None
            if rel.startswith("corpus/"):
                triples = root / parquet_twin(rel, PARQUET_TRIPLES)
                triples.parent.mkdir(parents=True, exist_ok=True)
                paths.append(parquet_twin(rel, PARQUET_TRIPLES))
            write_lines(root / parquet_twin(rel), recs, triples)
            paths += [rel, parquet_twin(rel)]
    for snap in {s for s, _ in lines}:
        rel = kg_parquet_path(snap, "kg_triples")
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(dated_snapshot(pa.table({  # t a date, as the writer converts it
            "snapshot": [snap] * 2, "s": ["Q1", "Q2"], "p": ["P1", "P1"],
            "o": ["Q2", "Q3"]})), root / rel)
        paths.append(rel)
    if derived is not None:
        paths += _derived(root, lines, evaluation, derived)
    if meta and "validation" in meta:  # the results the publish gate holds the files to
        from emerge_lib.formats.manifest import validated_files

        (root / "validation").mkdir(exist_ok=True)
        (root / "validation" / "results.json").write_text(json.dumps(
            {"success": True, "files": validated_files(root)}) + "\n")
        paths.append("validation/results.json")
    known = {e["path"]: e for e in file_entries(root, paths)}
    version = content_version(known.values())
    write_croissant(root, list(known.values()), version=version,
                    settings={"snapshots": {"windows": 2, "window_days": 7.0}}, dumps=[],
                    snapshots=sorted({s for s, _ in lines}),
                    judges=[{"llm_name": "M", "prompt_type": "triple_assertion",
                             "served_model": "m", "quantization": "bf16"}])
    manifest = write_manifest(root, [*paths, CROISSANT], meta=meta or {}, known=known)
    assert manifest["version"] == version
    return root


def _derived(root: Path, lines: dict[tuple[str, int], list[dict[str, Any]]],
             evaluation: dict[tuple[str, int], list[dict[str, Any]]], settings: Any) -> list[str]:
    """The splits and context files, through the writer's own functions."""
    from emerge_lib.release.context import write_context
    from emerge_lib.release.splits import drawn, merge_splits, write_snapshot_splits

    corpus: dict[str, list[str]] = {}
    for snap, k in sorted(lines):
        corpus.setdefault(snap, []).append(corpus_path(snap, k, 7))
    tests = [parquet_twin(evaluation_path(s, k, 7)) for s, k in sorted(evaluation)]
    twins = {s: [parquet_twin(f) for f in fs] for s, fs in corpus.items()}
    test, pages = drawn(root, [f for fs in twins.values() for f in fs], tests)
    _, written = merge_splits([write_snapshot_splits(root, s, fs, test, pages, settings.splits)
                               for s, fs in sorted(twins.items())])
    written.update(write_context(root, corpus, settings.context))
    return sorted(written)


#: the lines of the small release the hub tests read (tests/unit/hub, formats/test_croissant)
A1 = line(SNAPS[0], 1, "a", [("E", "Q1", "Q2"), ("X", "Q1", "Q3")], verdict=True)
B1 = line(SNAPS[0], 1, "b", [("D", "Q2", "Q3")])
A2 = line(SNAPS[0], 2, "a", [("E", "Q1", "Q2"), ("X", "Q1", "Q3")], verdict=True)
C4 = line(SNAPS[1], 1, "c", [("EE", "Q9", "Q1"), ("EE-KG", "Q9", "Q2")])


def small_release(folder: Path) -> Path:
    """Two snapshots, three windows, four lines (one of them in an evaluation set)."""
    return build_release(folder, {(SNAPS[0], 1): [A1, B1], (SNAPS[0], 2): [A2],
                                  (SNAPS[1], 1): [C4]},
                         {(SNAPS[0], 1): [B1], (SNAPS[1], 1): []})


#: a release with splits and context: article 1 (A1 drawn into test; its repeat A2 left
#: out), article 2 (two windows of one passage) and article 3, revised in 2023, 2024, 2025
JAN = datetime(2024, 1, 3, tzinfo=UTC)
S_A1 = line(SNAPS[0], 1, "a", [("E", "Q1", "Q2")])
S_A2 = line(SNAPS[0], 2, "a", [("E", "Q1", "Q2")])
S_B1 = line(SNAPS[0], 1, "bb", [("E", "Q1", "Q3")], revised=datetime(2023, 6, 1, tzinfo=UTC))
S_B2 = line(SNAPS[0], 2, "bb", [("E", "Q1", "Q3")], revised=datetime(2023, 6, 1, tzinfo=UTC))
S_C1 = line(SNAPS[0], 1, "ccc", [("D", "Q1", "Q2")], revised=datetime(2025, 1, 1, tzinfo=UTC))


def split_release(folder: Path, validation_share: float = 0.5) -> Path:
    """One snapshot, two windows, three articles; its splits and context written."""
    from emerge_lib.core.config import ReleaseSettings

    return build_release(folder, {(SNAPS[0], 1): [S_A1, S_B1, S_C1], (SNAPS[0], 2): [S_A2, S_B2]},
                         {(SNAPS[0], 1): [S_A1], (SNAPS[0], 2): []},
                         derived=ReleaseSettings.model_validate(
                             {"splits": {"validation_share": validation_share}}))


# -- a release with its validation written (the checks page, emerge validate) ---------------
#: when a warehouse snapshot's checks ran (its own page shows it; a release's does not)
CHECKED_AT = "2026-12-01T10:00:00.123456+00:00"


def _check(check: str, success: bool, severity: str = "critical", unexpected: int | None = 0,
           observed: Any = None, **more: Any) -> dict[str, Any]:
    return {"check": check, "success": success, "raised": False, "severity": severity,
            "unexpected_count": unexpected, "observed": observed, **more}


def validation_results(failed: bool = True) -> tuple[dict[str, Any], dict[str, Any]]:
    """(results.json, the manifest's verdict) of a two-snapshot release: every status
    planted in the first snapshot (a check passed, a warning, a release-file check failed
    unless ``failed`` is False), the second all passed, a human annotation."""
    snap1, snap2 = SNAPS
    tables1 = [_check("s is an item id", True, suite="kg_triples"),
               _check("every required op is present (X, E, EE, EE-KG, D)", False, "warning",
                      None, "missing D; present E, X", suite="instances")]
    release1 = [_check("hash_id is unique per file", not failed, unexpected=2 if failed else 0,
                       observed=[{"hash_id": "a", "file": "corpus/x.jsonl"}] if failed else None),
                _check("revision_date is a full ISO 8601 UTC instant", True)]
    results = {"success": not failed, "snapshots": {
        snap1: {"tables": {"state": "passed", "checks": tables1},
                "release": {"success": not failed, "suites": {"lines": {
                    "success": not failed, "checks": release1}}}},
        snap2: {"tables": {"state": "passed",
                           "checks": [_check("s is an item id", True, suite="kg_triples")]},
                "release": {"success": True, "suites": {"lines": {"success": True, "checks": [
                    _check("hash_id is unique per file", True)]}}}}},
        "human_annotation": {"success": True, "suites": {"human_lines": {
            "success": True, "checks": [_check("every line has a verdict", True)]}}}}
    warning = "instances: every required op is present (X, E, EE, EE-KG, D) (missing D)"
    verdict: dict[str, Any] = {
        "success": not failed, "results": "validation/results.json",
        "page": "validation/index.html",
        "snapshots": {snap1: {"tables": "passed", "release": "failed" if failed else "passed",
                              "warnings": [warning]},
                      snap2: {"tables": "passed", "release": "passed"}}}
    if failed:
        verdict["reason"] = f"{snap1}: release files: 1 of 2 checks failed"
    return results, verdict


def validated_release(folder: Path, failed: bool = True) -> Path:
    """The small release with its validation as the writer leaves it: results.json, the
    checks page (validation/index.html) and the verdict in the manifest."""
    from emerge_lib.release.describe import validation_line
    from emerge_lib.validation.page import write_release_page

    root = small_release(folder)
    results, verdict = validation_results(failed)
    (root / "validation").mkdir()
    (root / "validation" / "results.json").write_text(json.dumps(results, indent=1) + "\n")
    paths = [f["path"] for f in read_manifest(root)["files"]] + ["validation/results.json"]
    version = write_manifest(root, paths, meta={"validation": verdict})["version"]
    write_release_page(root, verdict, version, validation_line(verdict))
    assert write_manifest(root, [*paths, "validation/index.html"],
                          meta={"validation": verdict})["version"] == version
    return root


def described(folder: Path, settings: dict[str, Any]) -> tuple[str, dict[str, Any], dict[str, Any]]:
    """The small release described as the build describes one (release.describe: croissant,
    card, manifest) with ``settings`` recorded: its card (README.md), croissant.json and
    manifest."""
    from emerge_lib.formats.card import prepare
    from emerge_lib.formats.layout import CARD, CARD_HTML, PLOTS
    from emerge_lib.release.describe import describe

    release = small_release(folder)
    kept = [f["path"] for f in read_manifest(release)["files"] if f["path"] != CROISSANT]
    prepared = prepare(release, list(SNAPS), {s: {"kg_triples": 2} for s in SNAPS})
    files = [*kept, *(f"{PLOTS}/{p}" for p in prepared.plots), CROISSANT, CARD, CARD_HTML]
    manifest = describe(release, prepared, files, {"settings": settings},
                        lambda known: {"success": True})
    return ((release / CARD).read_text(), json.loads((release / CROISSANT).read_text()),
            manifest)
