"""The ReLiK baseline adapter (emerge_lib/evaluation/adapters/relik.py): input building,
parsing relik's output objects, and the adapter against a stand-in with relik 1.0.7's API
(kits/fakes/relik)."""

from __future__ import annotations

import importlib.util
import json
import sys
from enum import Enum
from pathlib import Path
from typing import NamedTuple

import pytest
from repo import KITS, REPO

from emerge_lib.core.errors import EmergeError
from emerge_lib.evaluation.adapters.common import Dictionaries
from emerge_lib.evaluation.adapters.relik import candidates, inventory, parse_output
from emerge_lib.evaluation.data import OPS, instance_from_record
from emerge_lib.evaluation.metrics import Settings, score, summarize

if importlib.util.find_spec("relik") is not None:  # pragma: no cover - its own environment
    from relik.inference.data.objects import RelikOutput, Span, TaskType, Triplets
else:
    class Span(NamedTuple):  # relik.inference.data.objects.Span (1.0.7)
        start: int
        end: int
        label: str
        text: str

    class Triplets(NamedTuple):  # relik.inference.data.objects.Triplets (1.0.7)
        subject: Span
        label: str
        object: Span
        confidence: float

    class TaskType(Enum):
        SPAN = "span"
        TRIPLET = "triplet"
        BOTH = "both"

    class RelikOutput:  # the attributes the adapter reads (text, tokens, id, spans, triplets)
        def __init__(self, text, tokens, id, spans, triplets, candidates=None, windows=None):
            self.text, self.tokens, self.id = text, tokens, id
            self.spans, self.triplets = spans, triplets
            self.candidates, self.windows = candidates, windows


DICTS = Dictionaries(
    entities={"Q5": "Human", "Q43": "Turkey", "Q104666007": "Melih Bulu",
              "Q896267": "Boğaziçi University", "Q99": "Turkey"},
    relations={"P27": ("country of citizenship", "the object is a country that recognizes "
                                                  "the subject as its citizen"),
               "P108": ("employer", "person or organization for which the subject works"),
               "P1": ("employer", "a duplicate label")})


def test_relik_inputs_per_snapshot() -> None:
    re_inv = inventory(DICTS, "re")
    assert [(d["text"], d["id"], d["metadata"]["pid"]) for d in re_inv.relations] == [
        ("country of citizenship", 0, "P27"), ("employer", 1, "P108")]
    assert re_inv.entities == [] and re_inv.collisions == 1
    cie = inventory(DICTS, "cie")
    assert cie.qid_of == {"Human": "Q5", "Turkey": "Q43", "Melih Bulu": "Q104666007",
                          "Boğaziçi University": "Q896267"}
    assert cie.collisions == 2  # a duplicate relation label and a duplicate entity name
    c = candidates(3, cie, "cie", TaskType)
    assert set(c) == {TaskType.TRIPLET, TaskType.SPAN}
    assert len(c[TaskType.TRIPLET]) == 3 and c[TaskType.TRIPLET][2] == ["country of citizenship",
                                                                       "employer"]
    assert set(candidates(2, re_inv, "re", TaskType)) == {TaskType.TRIPLET}


def _output():
    text = "Melih Bulu, a Turkish academic, became rector of Boğaziçi University."
    bulu = Span(0, 10, "Melih Bulu", "Melih Bulu")
    turk = Span(14, 21, "Turkey", "Turkish")
    bogazici = Span(50, 69, "Boğaziçi University", "Boğaziçi University")
    rector = Span(39, 45, "--NME--", "rector")
    return RelikOutput(text=text, tokens=text.split(), id=0, spans=[bulu, turk, rector, bogazici],
                       triplets=[Triplets(bulu, "country of citizenship", turk, 0.91),
                                 Triplets(bulu, "employer", bogazici, 0.88),
                                 Triplets(rector, "employer", bogazici, 0.6),
                                 Triplets(bulu, "doctoral advisor", turk, 0.55)])


def test_relik_re_output_becomes_open_triples_for_four_operations() -> None:
    got = parse_output(_output(), "re")
    assert [p.labels for p in got] == [("Melih Bulu", "country of citizenship", "Turkish"),
                                       ("Melih Bulu", "employer", "Boğaziçi University"),
                                       ("rector", "employer", "Boğaziçi University"),
                                       ("Melih Bulu", "doctoral advisor", "Turkish")]
    assert {p.ops for p in got} == {frozenset({"X", "E", "EE", "EE-KG"})}
    assert all(p.triple is None for p in got)
    later = type("LaterRelikOutput", (), {"triples": _output().triplets})()  # newer relik
    assert [p.labels for p in parse_output(later, "re")] == [p.labels for p in got]


def test_relik_cie_output_is_linked_back_to_qids_and_scored() -> None:
    inv = inventory(DICTS, "cie")
    got = parse_output(_output(), "cie", inv)
    # --NME-- and a relation outside R_t give no triple
    assert [p.triple for p in got] == [("Q104666007", "P27", "Q43"),
                                       ("Q104666007", "P108", "Q896267")]
    inst = instance_from_record({"hash_id": "h", "delta_dates": ["2021-01-01", "2021-01-08"],
                                 "tkgu_triples": [
        {"triple": ["Q104666007", "P108", "Q896267"], "tkgu_operations": ["e-triples"],
         "triple_labels": ["Melih Bulu", "employer", "Boğaziçi University"]},
        {"triple": ["Q104666007", "P27", "Q43"], "tkgu_operations": ["x-triples"],
         "triple_labels": ["Melih Bulu", "country of citizenship", "Turkey"]}]}, "h")
    rows = summarize(score([inst], {"relik-cie": {"h": got}}, Settings(metrics=("recall",))),
                     ("recall",))
    assert {(r["operation"], r["snapshot"]): r["value"] for r in rows} == {
        ("X", "2021"): 1.0, ("X", "all"): 1.0, ("E", "2021"): 1.0, ("E", "all"): 1.0}
    assert "EE" in OPS


FAKES = KITS / "fakes"


@pytest.fixture()
def fake_relik(monkeypatch):
    """relik 1.0.7's API on sys.path for one test (the model cannot run here)."""
    if importlib.util.find_spec("relik") is not None:
        pytest.skip("relik is installed: the stand-in would not be the one imported")
    monkeypatch.syspath_prepend(str(FAKES))
    importlib.invalidate_caches()
    from relik.inference.annotator import Relik

    Relik.loads.clear()
    Relik.calls.clear()
    try:
        yield Relik
    finally:
        for name in [m for m in sys.modules if m == "relik" or m.startswith("relik.")]:
            del sys.modules[name]
        importlib.invalidate_caches()


#: a snapshot larger than the stand-in reader's slots (4 relations, 6 entities); the
#: planted triples use entities and relations far down the numeric order
WORLD = Dictionaries(
    entities={f"Q{i}": name for i, name in enumerate(
        ["Human", "Turkey", "India", "Ireland", "Snooker", "Kildare", "Lowell", "Ankara",
         "Istanbul", "Haliç University", "Melih Bulu", "Boğaziçi University", "Joe Gambardella",
         "University of Massachusetts Lowell"], start=1)},
    relations={f"P{i}": (label, f"definition of {label}") for i, label in enumerate(
        ["instance of", "country", "sport", "located in", "occupation", "employer",
         "educated at"], start=1)})


PASSAGES = {
    "bulu": ("Melih Bulu employer Boğaziçi University. Melih Bulu employer Haliç University.",
             [("Q11", "P6", "Q12"), ("Q11", "P6", "Q10")]),
    "joe": ("Joe Gambardella educated at University of Massachusetts Lowell. "
            "Joe Gambardella plays ice hockey.", [("Q13", "P7", "Q14")]),
}


def _relik_instances():
    return [instance_from_record({
        "hash_id": hid, "passage": text, "delta_dates": ["2021-01-01", "2021-01-08"],
        "tkgu_triples": [{"triple": list(t), "tkgu_operations": ["e-triples"],
                          "triple_labels": [WORLD.entities[t[0]], WORLD.relations[t[1]][0],
                                            WORLD.entities[t[2]]]} for t in triples]}, hid)
        for hid, (text, triples) in PASSAGES.items()]


def test_build_indexes_embeds_each_dictionary_with_the_models_retriever(
        fake_relik, tmp_path: Path) -> None:
    from emerge_lib.evaluation.adapters.relik import build_indexes

    inv = inventory(WORLD, "cie")
    paths = build_indexes("relik-ie/relik-cie-large", inv, tmp_path / "idx", "cie")
    assert paths == {"triplet": str(tmp_path / "idx" / "triplet"),
                     "span": str(tmp_path / "idx" / "span")}
    docs = [json.loads(x) for x in (tmp_path / "idx" / "triplet" / "documents.jsonl")
            .read_text().splitlines()]
    assert docs == [{"text": label, "id": i, "metadata": {"definition": desc, "pid": pid}}
                    for i, (pid, (label, desc)) in enumerate(WORLD.relations.items())]
    config = json.loads((tmp_path / "idx" / "triplet" / "config.yaml").read_text())
    assert config == {"metadata_fields": ["definition"], "separator": " <def> "}
    ents = [json.loads(x) for x in (tmp_path / "idx" / "span" / "documents.jsonl")
            .read_text().splitlines()]
    assert [(d["text"], d["metadata"]["qid"]) for d in ents] == [
        (name, qid) for qid, name in WORLD.entities.items()]
    assert [load["model"] for load in fake_relik.loads] == ["relik-ie/relik-cie-large"]
    # a rerun with the same model and documents loads and embeds nothing
    assert build_indexes("relik-ie/relik-cie-large", inv, tmp_path / "idx", "cie") == paths
    assert len(fake_relik.loads) == 1
    # another inventory (or model) is embedded again; RE has no entity index
    re_paths = build_indexes("relik-ie/relik-relation-extraction-large", inventory(WORLD, "re"),
                             tmp_path / "idx", "re")
    assert set(re_paths) == {"triplet"} and len(fake_relik.loads) == 2
    # the index only loads into the model whose encoder embedded it
    from relik import Relik

    with pytest.raises(ValueError, match="encoder"):
        Relik.from_pretrained("relik-ie/relik-cie-large", index=paths)


def test_relik_cie_predicts_through_per_snapshot_indexes(fake_relik, tmp_path: Path) -> None:
    from emerge_lib.evaluation.adapters.relik import RelikAdapter, build_indexes

    inv = inventory(WORLD, "cie")
    instances = _relik_instances()
    adapter = RelikAdapter("cie", top_k=50)
    index = build_indexes(adapter.model, inv, tmp_path / "idx", "cie")
    lines = list(adapter.predict(instances, inv, index))
    got = {line["hash_id"]: {tuple(p["triple"]) for p in line["predicted"]} for line in lines}
    assert got == {hid: set(triples) for hid, (_, triples) in PASSAGES.items()}
    assert {p["operation"] for line in lines for p in line["predicted"]} == {"add"}
    call = fake_relik.calls[-1]
    assert call["top_k"] == 6 and not call["given"]  # capped at the reader's slots (6, 4)
    assert fake_relik.loads[-1]["index"] == index

    # the whole dictionaries as candidates of every text: the reader keeps its first 4
    # relations and 6 entities and loses the planted triples; the adapter refuses
    from relik import Relik
    from relik.inference.data.objects import TaskType

    relik = Relik.from_pretrained(adapter.model)
    outs = relik([i.passage for i in instances], candidates=candidates(2, inv, "cie", TaskType))
    assert [parse_output(o, "cie", inv) for o in outs] == [[], []]
    with pytest.raises(EmergeError, match="7 relation candidates for 4 reader slots, "
                                          "14 entity candidates for 6 reader slots"):
        list(adapter.predict(instances, inv, None))


def test_relik_candidates_per_text_when_the_inventory_fits(fake_relik) -> None:
    from emerge_lib.evaluation.adapters.relik import RelikAdapter

    small = Dictionaries(entities={"Q11": "Melih Bulu", "Q12": "Boğaziçi University",
                                   "Q10": "Haliç University"},
                         relations={"P6": ("employer", "works for")})
    inv = inventory(small, "cie")
    lines = list(RelikAdapter("cie", relation_threshold=0.7).predict(
        _relik_instances(), inv, None))
    assert [sorted(tuple(p["triple"]) for p in line["predicted"]) for line in lines] == [
        [("Q11", "P6", "Q10"), ("Q11", "P6", "Q12")], []]
    call = fake_relik.calls[-1]
    assert call["given"] and call["read"] == {"triplet": [1, 1], "span": [3, 3]}
    assert call["threshold"] == 0.7
    # RE: relations only, open triples for X, E, EE and EE-KG
    re_lines = list(RelikAdapter("re").predict(_relik_instances(), inventory(small, "re"), None))
    assert [p["triple_labels"] for p in re_lines[0]["predicted"]][:2] == [
        ["Melih Bulu", "employer", "Boğaziçi University"]] * 2
    assert {p["operation"] for p in re_lines[0]["predicted"]} == {"add", "infer"}


def _relik_release(folder: Path) -> Path:
    """A release-shaped folder: one snapshot's dictionaries and its gold passages."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    kg, snap = folder / "kg_snapshots" / "snapshot_2021-01-01", folder / "corpus" / "snapshot_2021-01-01"
    kg.mkdir(parents=True)
    snap.mkdir(parents=True)
    pq.write_table(pa.table({"qid": list(WORLD.entities), "title": list(WORLD.entities.values()),
                             "label": list(WORLD.entities.values())}), kg / "entities.parquet")
    pq.write_table(pa.table({"pid": list(WORLD.relations),
                             "label": [v[0] for v in WORLD.relations.values()],
                             "description": [v[1] for v in WORLD.relations.values()]}),
                   kg / "relations.parquet")
    (snap / "delta_2021-01-08.jsonl").write_text("".join(json.dumps({
        "hash_id": i.hash_id, "passage": i.passage, "delta_dates": ["2021-01-01", "2021-01-08"],
        "tkgu_triples": [{"triple": list(t.triple), "triple_labels": list(t.labels),
                          "tkgu_operations": ["e-triples"]} for t in i.triples]}) + "\n"
        for i in _relik_instances()))
    return folder


def test_emerge_predict_relik_end_to_end(fake_relik, tmp_path: Path) -> None:
    from emerge_lib.cli import main

    release = _relik_release(tmp_path / "release")
    out = tmp_path / "cie.jsonl"
    argv = ["predict", "relik", "--variant", "cie", "--gold", str(release), "--release",
            str(release), "--out", str(out)]
    assert main(argv) == 0
    index = tmp_path / "cie.jsonl.relik-indexes" / "cie" / "snapshot_2021-01-01"
    assert {p.name for p in index.iterdir()} == {"span", "triplet"}
    first = out.read_bytes()
    loads = len(fake_relik.loads)
    assert main(argv) == 0  # a rerun: the same file, the indexes reused (one load: predict)
    assert out.read_bytes() == first and len(fake_relik.loads) == loads + 1
    assert main(["evaluate", "--gold", str(release), "--predictions", str(out), "--metrics",
                 "recall", "--out", str(tmp_path / "ev")]) == 0
    rows = json.loads((tmp_path / "ev" / "summary.json").read_text())
    assert {(r["operation"], r["snapshot"], r["value"], r["n_gold"]) for r in rows} == {
        ("E", "2021", 1.0, 3), ("E", "all", 1.0, 3)}
    assert main([*argv[:-2], "--candidates", "--out", str(tmp_path / "c.jsonl")]) == 1


@pytest.mark.skipif(importlib.util.find_spec("relik") is not None,
                    reason="relik is installed: the adapter runs for real there")
def test_the_relik_adapter_says_where_relik_lives(tmp_path: Path) -> None:
    from emerge_lib.evaluation.adapters.relik import RelikAdapter

    with pytest.raises(EmergeError, match="docs/evaluation.md"):
        list(RelikAdapter("re").predict([], inventory(DICTS, "re")))
    assert "relik==1.0.7" in (REPO / "docs" / "evaluation.md").read_text()
