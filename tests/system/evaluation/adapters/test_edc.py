"""The EDC+ baseline against the real local llama.cpp server (SmolLM2-135M): `emerge
predict edc` writes a line per instance that the scorer reads (a 135M model's triples are
not expected to be right; the protocol, the prompts and the parsing are)."""

from __future__ import annotations

import json
from pathlib import Path

from emerge_lib.cli import main
from emerge_lib.evaluation.data import read_predictions

#: two instances of one passage (two cumulative deltas): one LLM call answers both
GOLD = [
    {"hash_id": "a", "passage": "Excerpt: Melih Bulu was appointed rector.",
     "delta_dates": ["2021-01-01", "2021-01-08"], "tkgu_triples": [
         {"triple": ["Q1", "P39", "Q2"], "tkgu_operations": ["ee-triples"],
          "triple_labels": ["Melih Bulu", "position held", "rector of Boğaziçi University"]},
         {"triple": ["Q1", "P31", "Q5"], "tkgu_operations": ["ee-kg-triples"],
          "triple_labels": ["Melih Bulu", "instance of", "human"]},
         {"triple": ["Q1", "P108", "Q3"], "tkgu_operations": ["d-triples"],
          "triple_labels": ["Melih Bulu", "employer", "Haliç University"]}]},
    {"hash_id": "b", "passage": "Excerpt: Melih Bulu was appointed rector.",
     "delta_dates": ["2021-01-01", "2021-01-15"], "tkgu_triples": []},
]


def test_edc_plus_end_to_end_against_the_local_llama_server(llm, tmp_path: Path) -> None:
    gold = tmp_path / "gold.jsonl"
    gold.write_text("".join(json.dumps(r) + "\n" for r in GOLD))
    out = tmp_path / "edc.jsonl"
    assert main(["predict", "edc", "--endpoint", llm.url, "--llm", llm.model,
                 "--max-tokens", "96", "--gold", str(gold), "--out", str(out)]) == 0
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert [line["hash_id"] for line in lines] == ["a", "b"]
    assert lines[0]["predicted"] == lines[1]["predicted"]
    assert list(read_predictions(out)) == [f"edc-plus/{llm.model}"]
    assert main(["evaluate", "--gold", str(gold), "--predictions", str(out), "--metrics",
                 "recall", "--out", str(tmp_path / "ev")]) == 0
