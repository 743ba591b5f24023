"""The sample of ``emerge annotate export`` on a hand-made release (no engine): N questions
per operation, round robin over the delta files, a two-operation triple asked under both
prompts and counted for both operations, seeded, and the files it writes."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from emerge_lib.annotation.release import AnnotationError, ReleaseIndex
from emerge_lib.annotation.sample import draw, export
from emerge_lib.formats.format import ASSERTION, DEPRECATION, OP_NAMES
from emerge_lib.formats.manifest import write_manifest

OPS = list(OP_NAMES.values())


def _line(hid: str, triples: list[tuple[str, list[str]]], snapshot: str) -> dict:
    return {"hash_id": hid, "passage": f"Passage {hid}.", "mentions": [],
            "delta_dates": [snapshot, snapshot], "predictions": {},
            "tkgu_triples": [{"triple": [f"Q{i + 1}", "P1", f"Q{i + 100}"],
                              "triple_labels": [f"s{i}", "rel", f"o{i}"],
                              "tkgu_operations": ops, "human_assessment": [],
                              "llm_assessment": []} for i, (_, ops) in enumerate(triples)]}


@pytest.fixture()
def release(tmp_path: Path) -> Path:
    """Two snapshots, two delta files each; 40 lines, X common, D+E two-op triples."""
    root = tmp_path / "release"
    files = []
    n = 0
    for snap in ("2024-01-01", "2025-01-01"):
        for delta in ("a", "b"):
            rel = f"corpus/snapshot_{snap}/delta_{delta}.jsonl"
            path = root / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            lines = []
            for _ in range(10):
                n += 1
                kinds = [("x", ["x-triples"]), ("x", ["x-triples"])]
                kinds.append(("e", ["d-triples", "e-triples"]) if n % 3 == 0 else
                             ("ee", ["ee-triples"]) if n % 3 == 1 else ("k", ["ee-kg-triples"]))
                lines.append(_line(f"{snap[:4]}{delta}{n:03d}", kinds, snap))
            path.write_text("".join(json.dumps(x) + "\n" for x in lines))
            files.append(rel)
    write_manifest(root, files, meta={})
    return root


def test_n_per_operation_round_robin_and_two_operation_triples(release: Path) -> None:
    index = ReleaseIndex.open(release)
    sample = draw(index, per_op=4, seed=1)
    assert all(sample.counts[op] == 4 for op in OPS)
    # the D+E triple is asked twice: assertion (counts for E) and deprecation (for D)
    asked = Counter((rec["hash_id"], tuple(t["triple"])) for rec, t, _ in sample.questions)
    kinds = {(rec["hash_id"], tuple(t["triple"])): [] for rec, t, _ in sample.questions}
    for rec, t, kind in sample.questions:
        kinds[(rec["hash_id"], tuple(t["triple"]))].append(kind)
    two = [k for k, v in kinds.items() if len(v) == 2]
    assert two and all(kinds[k] == [ASSERTION, DEPRECATION] for k in two)
    assert max(asked.values()) == 2
    # the first lines come one from each delta file in turn: both snapshots are drawn
    firsts = [rec["hash_id"][:5] for rec, _, _ in sample.questions[:12]]
    assert {"2024a", "2024b", "2025a", "2025b"} <= set(firsts)
    assert set(sample.per_snapshot) == {"2024-01-01", "2025-01-01"}
    # seeded: the same seed draws the same, another seed another
    again = draw(index, per_op=4, seed=1)
    key = [(r["hash_id"], t["triple"], k) for r, t, k in sample.questions]
    assert key == [(r["hash_id"], t["triple"], k) for r, t, k in again.questions]
    other = draw(index, per_op=4, seed=2)
    assert key != [(r["hash_id"], t["triple"], k) for r, t, k in other.questions]
    # more than the release has: what there is (e-triples come only from D+E triples)
    big = draw(index, per_op=100, seed=1)
    assert big.counts["e-triples"] == big.counts["d-triples"] == 13
    assert big.counts["x-triples"] == 80


def test_export_writes_tasks_config_lines_and_the_draw(release: Path, tmp_path: Path) -> None:
    sample = export(release, tmp_path / "out", per_op=3, seed=5)
    out = tmp_path / "out"
    tasks = json.loads((out / "tasks.json").read_text())
    assert len(tasks) == len(sample.questions)
    assert {t["data"]["definition_relation"] for t in tasks} == {"<NOT FOUND>"}
    lines = [json.loads(x) for x in (out / "instances_to_annotate.jsonl").read_text().splitlines()]
    assert {x["hash_id"] for x in lines} == {t["data"]["hash_id"] for t in tasks}
    assert all("predictions" not in x for x in lines)
    summary = json.loads((out / "sample.json").read_text())
    assert summary["counts"] == {op: 3 for op in OPS} and summary["seed"] == 5
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    export(release, out, per_op=3, seed=5)
    assert before == {p.name: p.read_bytes() for p in out.iterdir()}
    with pytest.raises(AnnotationError, match="not a release folder"):
        export(tmp_path / "nowhere", out, per_op=3, seed=5)
