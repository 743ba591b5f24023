"""Curation's requests held to vLLM's contract in emerge's own environment, every CI run,
no GPU: the exact bodies the curate stage's client sends (both prompts, both routes, both
constraint forms, a first ask and a re-ask; emerge_lib.curation.contract) against the JSON
schema of the pinned vLLM's ChatCompletionRequest (exported from vLLM itself by
scripts/vllm_contract.py), and the answer constraint compiled by vLLM's structured-output
backend, xgrammar, at the version vLLM pins: it accepts every answer our parser reads and
refuses the garbage the stub's scripted faults answer. The same checks through vLLM's own
classes, in vLLM's environment: tests/system/curation/test_contract.py (make test-vllm)."""

from __future__ import annotations

import json
import re
from importlib.metadata import version

import pytest
import yaml
from repo import REPO

from emerge_lib.curation import contract
from emerge_lib.curation.answers import parse_answer

SCHEMA = REPO / "tests" / "kits" / "vllm" / "ChatCompletionRequest.schema.json"


def pinned_vllm() -> str:
    (line,) = [ln for ln in (REPO / "requirements-vllm.txt").read_text().splitlines()
               if ln.startswith("vllm==")]
    return line.split("==", 1)[1]


@pytest.fixture(scope="module")
def exported() -> dict:
    return json.loads(SCHEMA.read_text())


@pytest.fixture(scope="module")
def bodies() -> list[contract.Body]:
    return contract.request_bodies()


def test_the_image_the_package_and_the_exported_contract_are_one_vllm(exported) -> None:
    """The compose image, requirements-vllm.txt, its frozen environment and the schema the
    bodies are checked against name the same vLLM; .venv's xgrammar is vLLM's."""
    pin = pinned_vllm()
    compose = yaml.safe_load((REPO / "docker-compose.yaml").read_text())
    for service in ("vllm-additions", "vllm-deprecations"):
        image = compose["services"][service]["image"]
        assert re.fullmatch(r"\$\{VLLM_IMAGE:-vllm/vllm-openai:v([0-9.]+)\}", image), image
        assert image.endswith(f":v{pin}}}"), (service, image, pin)
    frozen = (REPO / "constraints-vllm.txt").read_text().splitlines()
    assert f"vllm=={pin}" in frozen
    assert exported["vllm"] == pin
    assert f"xgrammar=={exported['xgrammar']}" in frozen
    assert version("xgrammar") == exported["xgrammar"]


def test_vllms_request_model_takes_every_body_we_send(bodies, exported) -> None:
    schema = exported["ChatCompletionRequest"]
    combos = {(b.route, b.prompt_type, b.form, b.attempt) for b in bodies}
    assert len(combos) == 2 * 2 * 2 * 2  # routes × prompts × forms × first/re-ask
    refused = {b.label: e for b in bodies if (e := contract.vllm_schema_errors(b.body, schema))}
    assert refused == {}, refused  # 100 % of our bodies
    taken = [b for b in bodies if not contract.vllm_schema_errors(b.body, schema)]
    print(f"vLLM {exported['vllm']}'s ChatCompletionRequest schema takes {len(taken)} of "
          f"{len(bodies)} bodies")
    for b in bodies:  # what the stage asks for arrives: its model, its sampling
        assert b.body["model"] == {"additions": "Meta-Llama-3.1-8B",
                                   "deprecations": "Meta-Llama-3.1-405B"}[b.route]
        assert b.body["temperature"] == (0.0 if b.attempt == 0 else 0.7)
        assert contract.constraint_of(b.body)[0] == b.form


def test_the_checks_see_what_vllm_would_silently_ignore(exported) -> None:
    """The check is not vacuous: vLLM takes unknown fields and drops them (its request
    model allows extras), so the removed guided_regex would constrain nothing; a second
    constraint, or a misspelt one, is named too."""
    schema = exported["ChatCompletionRequest"]
    assert schema.get("additionalProperties") is True  # why the field check is needed
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 8}
    assert contract.vllm_schema_errors({**body, "guided_regex": "(YES|NO)"}, schema) == [
        "guided_regex: not a field of ChatCompletionRequest (vLLM ignores it)"]
    assert contract.vllm_schema_errors(
        {**body, "structured_outputs": {"regex": "a", "choice": ["a"]}}, schema)
    assert contract.vllm_schema_errors(
        {**body, "structured_outputs": {"regexp": "a"}}, schema)
    assert contract.vllm_schema_errors({**body, "max_tokens": "many"}, schema)


def test_xgrammar_accepts_what_we_read_and_refuses_the_garbage(bodies) -> None:
    accepted, garbage = contract.accepted_answers(), contract.garbage_answers()
    assert {fault for _, fault, _ in garbage} == set(contract.GARBAGE_FAULTS)
    checked = 0
    for b in bodies:
        field, spec = contract.constraint_of(b.body)
        for n, text in accepted:
            if n == b.n:
                assert contract.xgrammar_accepts(field, spec, text), (b.label, text)
                checked += 1
        for n, fault, text in garbage:
            if n == b.n:
                assert not contract.xgrammar_accepts(field, spec, text), (b.label, fault)
                checked += 1
    print(f"xgrammar {version('xgrammar')}: {checked} answer checks over {len(bodies)} "
          "bodies")


def test_the_form_does_not_promise_an_answer_that_parses(bodies) -> None:
    """What the constraint cannot rule out: an explanation the parser refuses (a hedge
    right after the verdict, the other verdict in capitals). Such an answer is unparsed
    and asked again, as docs/curation.md says; the constraint fixes the list's shape."""
    (body,) = [b for b in bodies if b.n == 1 and b.form == "regex" and b.attempt == 0
               and b.route == "additions" and b.prompt_type == "triple_assertion"]
    field, spec = contract.constraint_of(body.body)
    for text in ("1. YES (partially) the text hints at it", "1. YES but NO date is given",
                 "1. NO ? unclear"):
        assert contract.xgrammar_accepts(field, spec, text), text
        assert parse_answer(text, 1) is None, text
