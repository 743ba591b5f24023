"""The EDC+ baseline adapter (emerge_lib/evaluation/adapters/edc.py): the prompt, parsing
realistic answers, requests through the project's OpenAI-compatible client against the
[curation] stub."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from repo import REPO

from emerge_lib.curation.client import EndpointError
from emerge_lib.curation.stub import StubServer
from emerge_lib.evaluation.adapters.edc import (
    FEW_SHOT_EXAMPLES,
    PROMPT,
    EdcPlus,
    build_prompt,
    endpoint,
    parse_completion,
)
from emerge_lib.evaluation.data import instance_from_record, read_predictions
from emerge_lib.evaluation.metrics import Settings, model_predictions, score, summarize

PAPER = REPO.parent / "shared" / "paper" / "EMERGE.txt"


def test_the_prompt_is_appendix_c_word_for_word() -> None:
    if not PAPER.is_file():
        pytest.skip("the paper's text is not in ../shared")
    text = PAPER.read_text(encoding="utf-8")
    start = text.index("“Your task is to update Wikidata")
    end = text.index("Text: {input_text} ”", start) + len("Text: {input_text} ")
    assert text[start + 1:end].replace("\n\n", "\n\n") == PROMPT
    prompt = build_prompt("Melih Bulu is a Turkish academic.")
    assert FEW_SHOT_EXAMPLES in prompt and prompt.endswith("Text: Melih Bulu is a Turkish academic. ")
    assert "{" not in prompt.replace(FEW_SHOT_EXAMPLES, "")


MISTRAL_ANSWER = """Triples in text:
1. [Melih Bulu, position held, rector of Boğaziçi University, ADD]
2. ["Melih Bulu", "employer", "Haliç University", "DEPRECATE"]
3. ['Boğaziçi_University', 'country', 'Turkey', 'add']
- [Melih Bulu,   educated at , Middle East Technical University , ADD].
[Melih Bulu, appointed by, Recep Tayyip Erdoğan, ADD, 2021]
[Melih Bulu, member of, AKP, MAYBE]
Note: the text does not say more.

Triples not in text:
[Melih Bulu, instance of, human]
[Melih Bulu, country of citizenship, Turkey, ADD]
["Melih Bulu", "occupation", "rector, academic"]
"""


def test_parsing_a_realistic_answer() -> None:
    parsed = parse_completion(MISTRAL_ANSWER)
    got = [(p.labels, sorted(p.ops)) for p in parsed.predicted]
    add, dep, inf = ["E", "EE", "X"], ["D"], ["EE-KG"]
    assert got == [
        (("Melih Bulu", "position held", "rector of Boğaziçi University"), add),
        (("Melih Bulu", "employer", "Haliç University"), dep),
        (("Boğaziçi University", "country", "Turkey"), add),
        (("Melih Bulu", "educated at", "Middle East Technical University"), add),
        (("Melih Bulu", "instance of", "human"), inf),
        (("Melih Bulu", "country of citizenship", "Turkey"), inf),
        (("Melih Bulu", "occupation", "rector, academic"), inf),
    ]
    assert len(parsed.skipped) == 2  # five fields; an unknown action
    assert all(p.triple is None for p in parsed.predicted)


def test_parsing_degenerate_answers() -> None:
    assert parse_completion("").predicted == []
    assert parse_completion("I'm sorry, I cannot help with that.").predicted == []
    only_not = parse_completion("Triples not in text: [A, r, B]")
    assert [sorted(p.ops) for p in only_not.predicted] == [["EE-KG"]]
    no_header = parse_completion("[A, r, B, ADD]\n[C, s, D, DEPRECATE]")
    assert [sorted(p.ops)[0] for p in no_header.predicted] == ["E", "D"]
    assert parse_completion("[A, , B, ADD]").skipped == ["[A, , B, ADD]"]


def _instances():
    recs = [
        {"hash_id": "a", "passage": "Excerpt: Melih Bulu was appointed rector.",
         "delta_dates": ["2021-01-01", "2021-01-08"], "tkgu_triples": [
             {"triple": ["Q1", "P39", "Q2"], "triple_labels": ["Melih Bulu", "position held",
                                                               "rector of Boğaziçi University"],
              "tkgu_operations": ["ee-triples"]},
             {"triple": ["Q1", "P31", "Q5"], "triple_labels": ["Melih Bulu", "instance of", "human"],
              "tkgu_operations": ["ee-kg-triples"]},
             {"triple": ["Q1", "P108", "Q3"], "triple_labels": ["Melih Bulu", "employer",
                                                                "Haliç University"],
              "tkgu_operations": ["d-triples"]}]},
        # the same passage in the next cumulative delta: one LLM call for both
        {"hash_id": "b", "passage": "Excerpt: Melih Bulu was appointed rector.",
         "delta_dates": ["2021-01-01", "2021-01-15"], "tkgu_triples": []},
    ]
    return [instance_from_record(r, r["hash_id"]) for r in recs]


@dataclass
class EdcStub(StubServer):
    """The [curation] stub speaking the same protocol, answering every prompt with a
    realistic EDC+ answer and keeping the request bodies it got."""

    bodies: list[tuple[str, dict]] = field(default_factory=list)

    def _answer(self, method, path, body, fault):
        status, payload = super()._answer(method, path, body, fault)
        if method == "POST" and status.startswith("200"):
            self.bodies.append((path, json.loads(body)))
            payload["choices"][0]["message"]["content"] = MISTRAL_ANSWER
        return status, payload


def test_edc_plus_asks_through_the_project_client_and_its_lines_are_scored(
        tmp_path: Path) -> None:
    instances = _instances()
    with EdcStub() as stub:
        assert stub.url.endswith("/v1")
        ep = endpoint(stub.url.removesuffix("/v1"), "mistral-7b")  # /v1 added
        assert ep.chat_url == stub.url + "/chat/completions" and ep.backend == "openai"
        stub.script(["500"])  # a transient failure: retried by the client
        edc = EdcPlus(ep, max_tokens=64, backoff_s=0.01)
        lines = list(edc.predict(instances))
    # one request per distinct passage (a and b share theirs), plus the retry
    assert len(stub.bodies) == 1 and edc.requests == 2
    path, body = stub.bodies[0]
    assert path == "/v1/chat/completions"
    assert body == {"model": "mistral-7b", "messages": [
        {"role": "user", "content": build_prompt(instances[0].passage)}],
        "temperature": 0.0, "max_tokens": 64}  # free-form: no grammar, no regex
    assert [line["hash_id"] for line in lines] == ["a", "b"]
    assert lines[0]["predicted"] == lines[1]["predicted"] and edc.skipped == 2
    f = tmp_path / "edc.jsonl"
    f.write_text("".join(json.dumps(line) + "\n" for line in lines))
    preds = read_predictions(f)
    assert list(preds) == ["edc-plus/mistral-7b"]
    rows = summarize(score(instances, model_predictions(instances, preds),
                           Settings(metrics=("recall",))), ("recall",))
    assert {r["operation"] for r in rows} == {"EE", "EE-KG", "D"}
    assert all(r["value"] == 0.0 for r in rows)  # open triples have no QIDs


def test_edc_plus_keeps_order_across_chunks_and_fails_in_one_retryable_error() -> None:
    many = [instance_from_record({"hash_id": f"h{i}", "passage": f"Passage {i % 7}.",
                                  "delta_dates": ["2021-01-01", "2021-01-08"],
                                  "tkgu_triples": []}, "w") for i in range(20)]
    with EdcStub() as stub:
        edc = EdcPlus(endpoint(stub.url, "m"), concurrency=3, chunk=2)
        assert [line["hash_id"] for line in edc.predict(many)] == [i.hash_id for i in many]
        assert len(stub.bodies) == 7  # each distinct passage asked once, across chunks
        stub.script(["500"] * 2)
        with pytest.raises(EndpointError) as err:
            list(EdcPlus(endpoint(stub.url, "m"), retries=1, backoff_s=0.01).predict(many[:1]))
    assert err.value.retryable and "failed 2 times" in str(err.value)


def test_limit_draws_a_seeded_random_sample_per_delta() -> None:
    from emerge_lib.commands.predict import sample_per_delta

    deltas = [("2021-01-01", "2021-01-08"), ("2021-01-01", "2021-01-15"),
              ("2022-01-01", "2022-01-08")]
    instances = [instance_from_record({"hash_id": f"{d[1]}-{i}", "passage": f"p{i}",
                                       "delta_dates": list(d), "tkgu_triples": []}, "w")
                 for d in deltas for i in range(30 if d[1] != "2021-01-15" else 3)]
    got = sample_per_delta(instances, 5, seed=1)
    per = {d[1]: [i.hash_id for i in got if i.delta_end == d[1]] for d in deltas}
    assert {k: len(v) for k, v in per.items()} == {"2021-01-08": 5, "2021-01-15": 3,
                                                  "2022-01-08": 5}
    assert per["2021-01-08"] != [f"2021-01-08-{i}" for i in range(5)]  # not the first N
    assert got == [i for i in instances if i in got]  # gold order kept
    assert [i.hash_id for i in sample_per_delta(instances, 5, seed=1)] == [i.hash_id for i in got]
    other = sample_per_delta(instances, 5, seed=2)
    assert [i.hash_id for i in other] != [i.hash_id for i in got]
    # drawn per delta: the 2022 sample does not depend on the other deltas being there
    only_2022 = [i for i in instances if i.snapshot == "2022-01-01"]
    assert [i.hash_id for i in sample_per_delta(only_2022, 5, seed=1)] == per["2022-01-08"]
