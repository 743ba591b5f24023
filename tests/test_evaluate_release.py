"""The scorer on a real release of ours, built from a small sample world through the
stage registry: every released instance is a gold triple of its operation, an oracle
scores 1 and nothing scores 0, and the same release with the [compat] date-only dates and
the authors' assessment shapes reads the same."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from emerge_lib.config import load_config
from emerge_lib.evaluation.adapters.common import release_dictionaries
from emerge_lib.evaluation.adapters.relik import inventory
from emerge_lib.evaluation.data import ASSERTION, DEPRECATION, OPS, gold_files, read_gold
from emerge_lib.evaluation.run import evaluate
from emerge_lib.pipeline import StageContext, build_dataset
from emerge_lib.sample import SampleSpec, generate_world
from emerge_lib.tables import Catalog


@pytest.fixture(scope="module")
def release(tmp_path_factory, spark) -> Path:
    world = tmp_path_factory.mktemp("evalworld")
    generate_world(world, SampleSpec(seed=1, items=260, articles=110, revisions=3))
    cfg = load_config(world / "config.yaml")
    out = world / "release"
    build_dataset(StageContext(cfg, Catalog(cfg.warehouse, spark), release_dir=out))
    return out


def oracle(instances, path: Path, model: str = "oracle") -> Path:
    with path.open("w") as fh:
        for i in instances:
            fh.write(json.dumps({"hash_id": i.hash_id, "model": model, "predicted": [
                {"triple": list(t.triple), "triple_labels": list(t.labels), "operation": None}
                for t in i.triples]}) + "\n")
            fh.write(json.dumps({"hash_id": i.hash_id, "model": "nothing", "predicted": []}) + "\n")
    return path


def test_our_release_is_read_as_released(release: Path) -> None:
    listing = json.loads((release / "release.json").read_text())
    files = gold_files(release)
    assert [f.relative_to(release).as_posix() for f in files] == sorted(
        f for f in listing["files"] if f.endswith(".jsonl"))
    instances = read_gold(release)
    assert len(instances) == sum(listing["lines"].values())
    # every released instance is one gold triple of its operation (no filter)
    assert {op: sum(len(i.gold(op)) for i in instances) for op in OPS} == {
        op: listing["ops"].get(op, 0) for op in OPS}
    assert all(v > 0 for v in listing["ops"].values())
    assert {i.snapshot for i in instances} == {s[:10] for s in listing["snapshots"]}


def test_oracle_and_empty_predictions(release: Path, tmp_path: Path) -> None:
    instances = read_gold(release)
    preds = oracle(instances, tmp_path / "p.jsonl")
    result = evaluate(release, [preds], embedding_model="all-MiniLM-L6-v2", out=tmp_path / "out")
    values = {(r["model"], r["metric"]): set() for r in result.rows}
    for r in result.rows:
        values[(r["model"], r["metric"])].add(r["value"])
    assert values == {("oracle", "recall"): {1.0}, ("oracle", "completeness"): {1.0},
                      ("nothing", "recall"): {0.0}, ("nothing", "completeness"): {0.0}}
    ops = {r["operation"] for r in result.rows}
    assert ops == set(OPS)
    assert (tmp_path / "out" / "scores.png").stat().st_size > 1000


def _compat(src: Path, dst: Path) -> None:
    """Our release as [compat] will write it: date-only *_date fields (revision_date kept),
    the authors' llm_assessment and human_assessment element shapes."""
    shutil.copytree(src, dst)
    for f in gold_files(dst):
        lines = []
        for line in f.read_text().splitlines():
            r = json.loads(line)
            r["delta_dates"] = [d[:10] for d in r["delta_dates"]]
            for t in r["tkgu_triples"]:
                for k in ("head_creation_date", "tail_creation_date"):
                    t[k] = t[k][:10] if t[k] else t[k]
                t["triple_lifespan_date"] = [d[:10] if d else d for d in t["triple_lifespan_date"]]
                kinds = [DEPRECATION if o == "d-triples" else ASSERTION for o in t["tkgu_operations"]]
                t["llm_assessment"] = [
                    {"llm_name": "Llama-3.1-8B-Instruct", "llm_assessment": True,
                     "llm_prompt_type": k, "llm_prompt": "YES"} for k in kinds]
                t["human_assessment"] = []
            lines.append(json.dumps(r, ensure_ascii=False))
        f.write_text("\n".join(lines) + "\n")


def test_date_only_release_reads_the_same(release: Path, tmp_path: Path) -> None:
    _compat(release, tmp_path / "compat")
    before, after = read_gold(release), read_gold(tmp_path / "compat")
    assert [(i.hash_id, i.snapshot, i.delta_end) for i in before] == [
        (i.hash_id, i.snapshot, i.delta_end) for i in after]
    assert [[(t.triple, t.ops) for t in i.triples] for i in before] == [
        [(t.triple, t.ops) for t in i.triples] for i in after]
    preds = oracle(after, tmp_path / "p.jsonl")
    ours = {ASSERTION: "Llama-3.1-8B-Instruct", DEPRECATION: "Llama-3.1-8B-Instruct"}
    from emerge_lib.evaluation.metrics import Settings

    result = evaluate(tmp_path / "compat", [preds], Settings(
        metrics=("recall",), gold_filter="llm-asserted", assessors=ours))
    assert {r["value"] for r in result.rows if r["model"] == "oracle"} == {1.0}
    assert sum(r["n_gold"] for r in result.rows if r["snapshot"] == "all"
               and r["model"] == "oracle") == sum(len(i.gold(op)) for i in after for op in OPS)


def test_an_evaluation_set_folder_is_preferred(release: Path, tmp_path: Path) -> None:
    data = tmp_path / "data"
    snap = sorted(release.glob("snapshot_*"))[0]
    shutil.copytree(snap, data / "evaluation_set" / snap.name)
    shutil.copytree(release, data / "corpus")
    assert {f.parent.parent.name for f in gold_files(data)} == {"evaluation_set"}
    assert {f.parent.parent.name for f in gold_files(tmp_path)} == {"evaluation_set"}


def test_the_release_dictionaries_feed_relik_inventories(release: Path) -> None:
    snap = sorted(release.glob("snapshot_*"))[0].name.removeprefix("snapshot_")
    d = release_dictionaries(release, snap)
    assert d.relations and d.entities
    inv = inventory(d, "cie")
    assert len(inv.relations) + inv.collisions >= len(d.relations)
    assert all(inv.pid_of[doc["text"]] == doc["metadata"]["pid"] for doc in inv.relations)
