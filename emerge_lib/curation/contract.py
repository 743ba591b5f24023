"""What curation sends to a vLLM server and what it reads back, as data, for holding it to
vLLM's own code without a GPU (tests/unit/curation/test_contract.py, the full-vLLM tier
tests/system/curation/test_contract.py, benchmarks/vllm_curation.py):

- ``request_bodies()``: the exact bodies the curate stage's client puts on the wire, caught
  by a recording stub, for both prompts (assertion, deprecation), both routes (the
  additions and the deprecations model), both vLLM constraint forms (``regex``, the
  stage's; ``grammar``), a first ask and a re-ask (sampled), and 1 to 20 triples;
- ``accepted_answers()``: answers of the constrained form that the parser reads, at every
  count the bodies ask for, with explanations of 1 and 240 characters and every
  printable ASCII character;
- ``garbage_answers()``: what the stub's scripted faults answer (``prose``, ``short``,
  ``long``): the parser refuses them and the constraint must too;
- ``vllm_schema_errors()``: a body checked against the JSON schema of vLLM's
  ``ChatCompletionRequest`` (exported from the pinned vLLM by scripts/vllm_contract.py),
  every field we send a declared one (vLLM accepts unknown fields and ignores them:
  its removed ``guided_regex`` would constrain nothing, silently);
- ``xgrammar_accepts()``: a constraint compiled as vLLM's xgrammar backend compiles it,
  and whether it accepts a text.
"""

from __future__ import annotations

import asyncio
import functools
import json
import string
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from emerge_lib.curation.answers import EXPLANATION_CHARS, parse_answer
from emerge_lib.curation.prompts import ASSERTION, DEPRECATION, render
from emerge_lib.curation.stub import StubServer, answer_for

if TYPE_CHECKING:
    from emerge_lib.core.config import CurationSettings, Judge

#: the counts of triples a request holds in the contract's bodies (20: docs/curation.md's
#: largest request)
COUNTS = (1, 2, 3, 6, 20)
#: the constraint fields of vLLM's StructuredOutputsParams, exactly one per request
CONSTRAINTS = ("json", "regex", "choice", "grammar", "json_object", "structural_tag")
#: the stub's faults whose answers are garbage (the others are HTTP failures, or a
#: normal answer cut by max_tokens)
GARBAGE_FAULTS = ("prose", "short", "long")


@dataclass(frozen=True)
class Body:
    """One request as it went over the wire, and what it was for."""

    route: str  # additions | deprecations
    prompt_type: str
    form: str  # regex | grammar
    attempt: int  # 0: the first ask; 1: a re-ask
    n: int  # triples
    body: dict[str, Any]

    @property
    def label(self) -> str:
        return f"{self.route}/{self.prompt_type}/{self.form}/attempt {self.attempt}/{self.n}"


def _passage(n: int) -> str:
    # a passage as the release shows it, with what a passage may hold: braces (even
    # "{triples}"), quotes, non-ASCII names, a line break
    return (f"Excerpt from the Wikipedia page describing Boğaziçi University: It was founded "
            f"in 1863 as Robert College {{triples}} and moved in 1971. \"Quoted\" text; "
            f"{n} facts.\nA second paragraph — with a dash.")


def _labels(n: int) -> list[tuple[str, str, str]]:
    return [(f"Subject {i}", "member of sports team", f"Object {{{i}}} (club)")
            for i in range(1, n + 1)]


def prompt(prompt_type: str, n: int) -> str:
    return render(prompt_type, _passage(n), _labels(n))


async def _send(settings: CurationSettings, urls: Mapping[Judge, str]
                ) -> list[tuple[Judge, str, str, int, int]]:
    from emerge_lib.curation.prompts import prompt_sha
    from emerge_lib.curation.verdicts import (
        answer_seed,
        client_for,
        endpoint_of,
        retry_temperature,
    )

    cfg = settings.model_copy(update={
        judge: settings.route(judge).model_copy(update={"url": url, "backend": "vllm"})
        for judge, url in urls.items()})
    sent: list[tuple[Judge, str, str, int, int]] = []
    for form in ("regex", "grammar"):
        client = client_for(cfg)
        client.vllm_constraint = form  # the library option; the stage sends regex
        async with client:
            for judge in urls:
                endpoint = endpoint_of(cfg, judge)
                for prompt_type in (ASSERTION, DEPRECATION):
                    for attempt in (0, 1):
                        for n in COUNTS:
                            text = prompt(prompt_type, n)
                            await client.ask(endpoint, text, n, cfg.structured,
                                             retry_temperature(cfg, attempt, 1),
                                             seed=answer_seed(prompt_sha(text), 1, attempt))
                            sent.append((judge, prompt_type, form, attempt, n))
    return sent


def request_bodies(settings: CurationSettings | None = None) -> list[Body]:
    """The bodies the curate stage's client sends (``settings``: the defaults when None),
    caught on the wire by two recording stubs, one per route."""
    from emerge_lib.core.config import CurationSettings

    settings = settings or CurationSettings()
    with StubServer(record=True) as additions, StubServer(record=True) as deprecations:
        stubs: dict[Judge, StubServer] = {"additions": additions,
                                          "deprecations": deprecations}
        sent = asyncio.run(_send(settings, {k: s.url for k, s in stubs.items()}))
        raw = {k: list(s.bodies) for k, s in stubs.items()}
    out = []
    for route, prompt_type, form, attempt, n in sent:
        body = json.loads(raw[route].pop(0))
        out.append(Body(route, prompt_type, form, attempt, n, body))
    assert not any(raw.values()), "a stub got a body nobody sent"
    return out


def _explanations() -> list[str]:
    printable = "".join(c for c in string.printable if " " <= c <= "~")
    long = (printable * 3)[:EXPLANATION_CHARS]
    return ["x", "the text says so", long, printable]


def accepted_answers() -> list[tuple[int, str]]:
    """(n, answer): constrained answers the parser reads, at every count of the bodies."""
    out = []
    for n in COUNTS:
        for prompt_type in (ASSERTION, DEPRECATION):
            out.append((n, answer_for(prompt(prompt_type, n))))  # the stub's
        for i, explanation in enumerate(_explanations()):
            out.append((n, "\n".join(f"{k}. {'YES' if (k + i) % 2 else 'NO'} {explanation}"
                                     for k in range(1, n + 1))))
    for n, text in out:
        assert parse_answer(text, n) is not None, (n, text)
    return out


async def _faulty(url: str) -> list[tuple[int, str, str]]:
    from emerge_lib.curation.client import ChatClient, Endpoint

    out = []
    async with ChatClient(1, retries=0) as client:
        endpoint = Endpoint(url, "stub")
        for fault in GARBAGE_FAULTS:
            for n in COUNTS:
                answer = await client.ask(endpoint, prompt(ASSERTION, n), n)
                out.append((n, fault, answer.text))
    return out


def garbage_answers() -> list[tuple[int, str, str]]:
    """(n, fault, answer): what the stub answers under each garbage fault."""
    with StubServer() as stub:
        stub.script([fault for fault in GARBAGE_FAULTS for _ in COUNTS])
        out = asyncio.run(_faulty(stub.url))
    for n, fault, text in out:
        assert parse_answer(text, n) is None, (fault, text)
    return out


def constraint_of(body: Mapping[str, Any]) -> tuple[str, str]:
    """(field, spec) of a body's one structured-outputs constraint."""
    so = body["structured_outputs"]
    (name,) = [k for k in CONSTRAINTS if so.get(k) is not None]
    return name, so[name]


def vllm_schema_errors(body: Mapping[str, Any], schema: Mapping[str, Any]) -> list[str]:
    """Why vLLM's request model (as its JSON schema) would not take ``body`` as meant:
    schema violations, fields it does not declare (ignored by vLLM), a structured-outputs
    field it does not declare, or not exactly one constraint. [] when it takes it."""
    import jsonschema

    errors = [f"{'/'.join(map(str, e.path))}: {e.message}" for e in
              jsonschema.Draft202012Validator(schema).iter_errors(body)]
    errors += [f"{k}: not a field of ChatCompletionRequest (vLLM ignores it)"
               for k in body if k not in schema["properties"]]
    so = body.get("structured_outputs")
    if so is not None:
        declared = schema["$defs"]["StructuredOutputsParams"]["properties"]
        errors += [f"structured_outputs.{k}: not a field of StructuredOutputsParams"
                   for k in so if k not in declared]
        given = [k for k in CONSTRAINTS if so.get(k) is not None]
        if len(given) != 1:
            errors.append(f"structured_outputs: {len(given)} constraints ({given}); vLLM "
                          "takes exactly one")
    return errors


@functools.cache
def _compiled(field: str, spec: str) -> Any:
    import xgrammar as xgr

    grammar = xgr.Grammar.from_regex(spec) if field == "regex" else xgr.Grammar.from_ebnf(spec)
    # no tokenizer: a matcher of strings, as xgrammar's own tests match them
    return xgr.GrammarCompiler(xgr.TokenizerInfo([]), cache_enabled=False
                               ).compile_grammar(grammar)


def xgrammar_accepts(field: str, spec: str, text: str) -> bool:
    """Whether ``text`` is a complete match of the constraint, compiled as vLLM's
    xgrammar backend compiles it (``Grammar.from_regex`` for a regex, ``from_ebnf`` for
    a GBNF grammar)."""
    import xgrammar as xgr

    matcher = xgr.GrammarMatcher(_compiled(field, spec), terminate_without_stop_token=True)
    return matcher.accept_string(text) and matcher.is_terminated()
