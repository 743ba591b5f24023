"""The scorer on a real release of ours, built from a small sample world through the
stage registry: every released instance is a gold triple of its operation, an oracle
scores 1 and nothing scores 0, the same release with the [compat] date-only dates and
the authors' assessment shapes reads the same, and the same world curated (an
OpenAI-compatible stub with planted verdicts) is scored ``llm-asserted`` without flags by
its ``asserted_operations``."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from worlds import SEED1

from emerge_lib.catalog import Catalog
from emerge_lib.core.config import RELEASED_LLM
from emerge_lib.core.errors import InputError
from emerge_lib.core.stage import StageContext
from emerge_lib.curation import endpoint_overrides
from emerge_lib.curation.stub import StubServer
from emerge_lib.evaluation.adapters.common import release_dictionaries
from emerge_lib.evaluation.adapters.relik import inventory
from emerge_lib.evaluation.data import ASSERTION, DEPRECATION, OPS, gold_files, read_gold
from emerge_lib.evaluation.metrics import Settings
from emerge_lib.evaluation.run import evaluate
from emerge_lib.formats.format import OP_NAMES
from emerge_lib.pipeline.runner import run_stage


@pytest.fixture(scope="module")
def release(worlds) -> Path:
    """The seed-1 world built with the defaults: its release (shared, read-only)."""
    return worlds.built(SEED1).release


class PlantedVerdicts(StubServer):
    """The stub, with verdicts that depend on the judge: the deprecations model
    (405B) says YES to everything, the additions model (8B) NO to every deprecation
    prompt (and, as the stub does, NO to additions whose subject starts with "No")."""

    def _answer(self, method, path, body, fault):
        status, payload = super()._answer(method, path, body, fault)
        if method == "POST":
            request = json.loads(body)
            prompt = request["messages"][-1]["content"]
            msg = payload["choices"][0]["message"]
            def flip(old: str, new: str) -> str:  # a list's items, or a single verdict
                return re.sub(rf"^((?:\d+\. )?){old} ", rf"\g<1>{new} ", msg["content"],
                              flags=re.M)

            if request["model"] == RELEASED_LLM["deprecations"]:
                msg["content"] = flip("NO", "YES")
            elif "no longer valid" in prompt:
                msg["content"] = flip("YES", "NO")
        return status, payload


@pytest.fixture(scope="module")
def curated(worlds, spark, tmp_path_factory) -> Path:
    """The same world (a copy), curated through the stage registry against the planted
    stub, and released again: the released names are ours (8B additions, 405B
    deprecations)."""
    built = worlds.copy(worlds.built(SEED1), tmp_path_factory.mktemp("curated"))
    out = built.warehouse.parent / "curated"
    with PlantedVerdicts() as stub:
        # the configured judges' rule (no final judge): a final judge's verdicts would be
        # the gold (tests/e2e/curation/test_stage.py)
        cfg = built.config(curation=endpoint_overrides(stub.url, flush_seconds=0.2,
                                                       final_judge=None))
        ctx = StageContext(cfg, Catalog(built.warehouse, spark), release_dir=out)
        for plan in cfg.plans():
            run_stage(ctx, "curate", plan)
        run_stage(ctx, "release")
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
    # a release with a test split is read through its evaluation_set/ (the authors' layout)
    drawn = sorted(f for f in listing["files"] if f.startswith("evaluation_set/"))
    assert drawn and [f.relative_to(release).as_posix() for f in files] == drawn
    instances = read_gold(release)
    assert len(instances) == sum(listing["lines"][f] for f in drawn)
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
    paper = {k: v for k, v in values.items() if k[1] in ("recall", "completeness")}
    assert paper == {("oracle", "recall"): {1.0}, ("oracle", "completeness"): {1.0},
                     ("nothing", "recall"): {0.0}, ("nothing", "completeness"): {0.0}}
    # the authors' further columns: the oracle finds every gold triple of each instance
    # (QID recall 1) but predicts each with operation null, so under another operation of
    # its instance it is a wrong prediction (QID precision and prediction-side
    # completeness below 1); "nothing" predicts nothing: 0, and no prediction-side value
    assert values[("oracle", "qid_recall")] == {1.0}
    assert all(0 < v < 1 for v in values[("oracle", "qid_precision")] - {1.0})
    assert 0 < min(values[("oracle", "pred_completeness")]) < 1
    assert all(values[("nothing", m)] == {0.0} for m in ("qid_precision", "qid_recall", "qid_f1"))
    assert ("nothing", "pred_completeness") not in values
    ops = {r["operation"] for r in result.rows}
    assert ops == set(OPS)
    assert (tmp_path / "out" / "scores.png").stat().st_size > 1000


#: the names our releases record (emerge_lib.core.config.RELEASED_LLM), per prompt type
OURS = {ASSERTION: RELEASED_LLM["additions"], DEPRECATION: RELEASED_LLM["deprecations"]}


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
                    {"llm_name": OURS[k], "llm_assessment": True,
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
    result = evaluate(tmp_path / "compat", [preds], Settings(
        metrics=("recall",), gold_filter="llm-asserted", assessors=OURS))
    assert {r["value"] for r in result.rows if r["model"] == "oracle"} == {1.0}
    assert sum(r["n_gold"] for r in result.rows if r["snapshot"] == "all"
               and r["model"] == "oracle") == sum(len(i.gold(op)) for i in after for op in OPS)


def test_an_evaluation_set_folder_is_preferred(release: Path, tmp_path: Path) -> None:
    data = tmp_path / "data"
    snap = sorted(release.glob("corpus/snapshot_*"))[0]
    shutil.copytree(snap, data / "evaluation_set" / snap.name)
    shutil.copytree(release, data / "corpus")
    assert {f.parent.parent.name for f in gold_files(data)} == {"evaluation_set"}
    assert {f.parent.parent.name for f in gold_files(tmp_path)} == {"evaluation_set"}


def test_the_release_dictionaries_feed_relik_inventories(release: Path) -> None:
    snap = sorted(release.glob("kg_snapshots/snapshot_*"))[0].name.removeprefix("snapshot_")
    d = release_dictionaries(release, snap)
    assert d.relations and d.entities
    inv = inventory(d, "cie")
    assert len(inv.relations) + inv.collisions >= len(d.relations)
    assert all(inv.pid_of[doc["text"]] == doc["metadata"]["pid"] for doc in inv.relations)


def _raw_triples(files: list[Path]) -> list[tuple[str, dict]]:
    return [(json.loads(line)["hash_id"], t) for f in files
            for line in f.read_text().splitlines() for t in json.loads(line)["tkgu_triples"]]


def _n_gold(rows, model: str = "oracle") -> dict[str, int]:
    return {r["operation"]: r["n_gold"] for r in rows
            if r["model"] == model and r["snapshot"] == "all"}


def _pairs(raw, keep) -> int:
    return len({(h, tuple(t["triple"])) for h, t in raw if keep(t)})


def test_llm_asserted_on_our_curated_release_needs_no_flags(curated: Path, release: Path,
                                                            tmp_path: Path) -> None:
    """Our release records additions as judged by 8B: the authors' 405B names would be
    refused; the per-triple asserted_operations decide, with the configured rule for D
    (405B and, without a qualifier, 8B too: a removal carrying its statement's start
    qualifier is judged by 405B alone, S07:109-112)."""
    from emerge_lib.cli import main

    # the whole corpus (the release's corpus/snapshot_*/delta_*.jsonl): the planted verdicts
    corpus = sorted(curated.glob("corpus/snapshot_*/delta_*.jsonl"))
    raw = _raw_triples(corpus)
    assert raw and all(t["asserted_operations"] is not None for _, t in raw)
    d = [t for _, t in raw if "d-triples" in t["tkgu_operations"]]
    qualified = [t for t in d if t["qualifier_info"]]
    assert qualified and len(qualified) < len(d)  # the world has both kinds
    # planted: 405B said YES to every D, 8B NO; only qualified D triples are asserted
    assert all("d-triples" in t["asserted_operations"] for t in qualified)
    assert not any("d-triples" in t["asserted_operations"] for t in d if t not in qualified)
    rejected = [t for _, t in raw if t["triple_labels"][0].startswith("No")
                and set(t["tkgu_operations"]) - {"d-triples"}]
    assert rejected  # additions the 8B stub said NO to

    preds = oracle(read_gold(corpus), tmp_path / "p.jsonl")
    auto = evaluate(corpus, [preds], Settings(metrics=("recall",), gold_filter="llm-asserted"))
    n_auto = _n_gold(auto.rows)
    assert n_auto == {op: n for op in OPS if (n := _pairs(
        raw, lambda t, op=op: OP_NAMES[op] in t["asserted_operations"]))}
    assert n_auto["D"] == _pairs(raw, lambda t: t in qualified)
    assert {r["value"] for r in auto.rows if r["model"] == "oracle"} == {1.0}
    assert auto.run["assessors"].startswith("asserted_operations")
    # naming the assessors reads their verdicts instead: 405B passed every D triple
    named = evaluate(corpus, [preds], Settings(metrics=("recall",), gold_filter="llm-asserted",
                                               assessors=OURS))
    assert _n_gold(named.rows)["D"] == _pairs(raw, lambda t: t in d) > n_auto["D"]
    with pytest.raises(InputError, match="no gold triple has a triple_assertion verdict by "
                                         "'Meta-Llama-3.1-405B'"):
        evaluate(corpus, [preds], Settings(metrics=("recall",), gold_filter="llm-asserted",
                                           assessors={ASSERTION: "Meta-Llama-3.1-405B",
                                                      DEPRECATION: "Meta-Llama-3.1-405B"}))

    # the command on the release folder as a user gives it (its evaluation_set/ when the
    # release has one), no assessor flags
    used = _raw_triples(gold_files(curated))
    preds = oracle(read_gold(curated), tmp_path / "q.jsonl")
    out = tmp_path / "out"
    assert main(["evaluate", "--gold", str(curated), "--predictions", str(preds),
                 "--metrics", "recall", "--gold-filter", "llm-asserted", "--out", str(out)]) == 0
    rows = json.loads((out / "summary.json").read_text())
    assert _n_gold(rows) == {op: n for op in OPS if (n := _pairs(
        used, lambda t, op=op: OP_NAMES[op] in t["asserted_operations"]))}
    # the uncurated release: every asserted_operations is null, refused in one line
    with pytest.raises(InputError, match="not curated"):
        evaluate(release, [oracle(read_gold(release), tmp_path / "r.jsonl")],
                 Settings(metrics=("recall",), gold_filter="llm-asserted"))


def test_human_filter_on_our_release_is_refused(release: Path, tmp_path: Path, capsys) -> None:
    from emerge_lib.cli import main

    preds = oracle(read_gold(release), tmp_path / "p.jsonl")
    rc = main(["evaluate", "--gold", str(release), "--predictions", str(preds), "--metrics",
               "recall", "--gold-filter", "human", "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert rc != 0 and "human_annotation/solved_disagreements.jsonl" in err
    assert len(err.strip().splitlines()) == 1 and not (tmp_path / "out").exists()


def test_scores_per_delta_through_the_cli(release: Path, tmp_path: Path) -> None:
    """`emerge evaluate --by delta`: a column per delta file of the release (its snapshot
    and window end), the oracle's recall 1.0 in each."""
    import json

    from emerge_lib.cli import main

    preds = oracle(read_gold(release), tmp_path / "p.jsonl")
    assert main(["evaluate", "--gold", str(release), "--predictions", str(preds), "--metrics",
                 "recall", "--by", "delta", "--out", str(tmp_path / "out")]) == 0
    (summary,) = (tmp_path / "out").rglob("summary.json")
    rows = json.loads(summary.read_text())
    deltas = {f"{f.parent.name.removeprefix('snapshot_')}→"
              f"{f.stem.removeprefix('delta_')}"
              for f in release.glob("corpus/snapshot_*/delta_*.jsonl") if f.stat().st_size}
    assert {r["snapshot"] for r in rows} == deltas | {"all"} and len(deltas) >= 2
    assert {(r["model"], r["value"]) for r in rows} == {("oracle", 1.0), ("nothing", 0.0)}
