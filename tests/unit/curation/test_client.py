"""The OpenAI-compatible client against a server on the wire: retries with backoff on 5xx,
timeouts and dropped connections; no retry on a 4xx; a request budget; each backend's
constraint dialect; the answer and its token counts."""

from __future__ import annotations

import asyncio

import pytest

from emerge_lib.curation.answers import answer_grammar, answer_token_budget
from emerge_lib.curation.client import BudgetExhausted, ChatClient, Endpoint, EndpointError
from emerge_lib.curation.prompts import ASSERTION, render
from emerge_lib.curation.stub import StubServer

PROMPT = render(ASSERTION, "Ada Lovelace worked with Charles Babbage.",
                [("Ada Lovelace", "collaborator", "Charles Babbage"), ("No one", "p", "x")])


def ask(stub: StubServer, structured: bool = True, **client_kw):
    async def go():
        async with ChatClient(backoff_s=0.01, **client_kw) as client:
            answer = await client.ask(Endpoint(stub.url, "stub", "vllm"), PROMPT, 2, structured)
            return answer, client
    return asyncio.run(go())


def test_an_answer_with_its_tokens() -> None:
    with StubServer() as stub:
        answer, client = ask(stub)
    assert [line.split(" ", 2)[:2] for line in answer.text.splitlines()] == [
        ["1.", "YES"], ["2.", "NO"]]
    assert "the stub reads (" in answer.text  # the triple echoed: answers differ by prompt
    assert answer.attempts == 1 and answer.tokens_out == len(answer.text.split()) > 8
    assert answer.tokens_in > 20
    assert client.sent == 1 and client.failures == 0


@pytest.mark.parametrize("fault", ["500", "close"])
def test_transient_failures_are_retried(fault: str) -> None:
    with StubServer() as stub:
        stub.script([fault, fault])
        answer, client = ask(stub, retries=3)
    assert answer.attempts == 3 and client.sent == 3 and stub.requests >= 3


def test_a_hung_request_times_out_and_is_retried() -> None:
    with StubServer() as stub:
        stub.script(["hang"])
        answer, _ = ask(stub, retries=1, timeout_s=0.5)
    assert answer.attempts == 2


def test_giving_up_is_a_retryable_error_and_a_client_error_is_not_retried() -> None:
    with StubServer() as stub:
        stub.script(["500"] * 4)
        with pytest.raises(EndpointError, match="failed 3 times: HTTP 500") as info:
            ask(stub, retries=2)
        assert info.value.retryable
        stub.faults.clear()
        stub.script(["400"])
        before = stub.requests
        with pytest.raises(EndpointError, match="answered 400") as info:
            ask(stub, retries=3)
        assert not info.value.retryable and stub.requests == before + 1


def test_a_server_that_is_down_is_retried_then_reported() -> None:
    with StubServer() as stub:
        url = stub.url
    down = StubServer(url=url)

    async def go():
        async with ChatClient(retries=2, backoff_s=0.01) as client:
            await client.ask(Endpoint(down.url, "stub"), PROMPT, 2)
    with pytest.raises(EndpointError, match="failed 3 times: ClientConnectorError"):
        asyncio.run(go())


def test_the_request_budget() -> None:
    with StubServer() as stub:
        async def go():
            async with ChatClient(max_requests=2, backoff_s=0.01) as client:
                ep = Endpoint(stub.url, "stub")
                await client.ask(ep, PROMPT, 2)
                await client.ask(ep, PROMPT, 2)
                await client.ask(ep, PROMPT, 2)
        with pytest.raises(BudgetExhausted):
            asyncio.run(go())
        assert stub.requests == 2


def test_each_backend_gets_its_own_constraint_dialect() -> None:
    client = ChatClient()
    vllm = client.payload(Endpoint("http://h/v1", "m", "vllm"), PROMPT, 2, True)
    assert set(vllm["structured_outputs"]) == {"regex"} and "grammar" not in vllm
    llama = client.payload(Endpoint("http://h/v1", "m", "llamacpp"), PROMPT, 2, True)
    assert llama["grammar"].startswith("root ::=") and "structured_outputs" not in llama
    plain = client.payload(Endpoint("http://h/v1", "m", "openai"), PROMPT, 2, True)
    assert "grammar" not in plain and "structured_outputs" not in plain
    off = client.payload(Endpoint("http://h/v1", "m", "vllm"), PROMPT, 2, False)
    assert "structured_outputs" not in off
    assert vllm["messages"] == [{"role": "user", "content": PROMPT}]  # the prompt, verbatim
    # vLLM takes the same form as a grammar instead of a regex (one constraint a request)
    grammar = ChatClient(vllm_constraint="grammar").payload(
        Endpoint("http://h/v1", "m", "vllm"), PROMPT, 2, True)
    assert grammar["structured_outputs"] == {"grammar": answer_grammar(2)}
    with pytest.raises(ValueError, match="regex or grammar"):
        ChatClient(vllm_constraint="json")


def test_max_tokens_always_holds_the_constrained_form() -> None:
    """Whatever the per-line setting, a request's budget holds the longest answer the
    constraint allows (answer_token_budget), so the constraint ends an answer, not the
    budget; a larger per-line setting raises it."""
    client = ChatClient(max_tokens_per_line=8)
    for n in (1, 2, 9, 10, 40):
        body = client.payload(Endpoint("http://h/v1", "m", "llamacpp"), PROMPT, n, True)
        assert body["max_tokens"] == answer_token_budget(n)
    generous = ChatClient(max_tokens_per_line=1000).payload(
        Endpoint("http://h/v1", "m", "vllm"), PROMPT, 3, True)
    assert generous["max_tokens"] == 3000 > answer_token_budget(3)
    # free text has no form to bound: the setting's budget (a cut answer is retried)
    free = client.payload(Endpoint("http://h/v1", "m", "vllm"), PROMPT, 3, False)
    assert free["max_tokens"] == 24


def test_an_answer_cut_by_max_tokens_says_so() -> None:
    with StubServer() as stub:
        stub.script(["cut"])
        answer, _ = ask(stub)
    assert answer.finish_reason == "length" and answer.attempts == 1
    with StubServer() as stub:
        answer, _ = ask(stub)
    assert answer.finish_reason == "stop"


def test_a_refusal_that_quotes_the_key_is_a_client_error_that_carries_it() -> None:
    """The stub's "401" quotes the key the request carried, as some servers' error bodies
    do: the error holds it (the redactor, not the client, keeps it from every output:
    system/test_cli.py's planted-secrets test)."""
    with StubServer() as stub:
        stub.script(["401"])

        async def go():
            async with ChatClient(retries=2, backoff_s=0.01) as client:
                await client.ask(Endpoint(stub.url, "stub", api_key="sk-quoted-0123456789"),
                                 PROMPT, 2)
        with pytest.raises(EndpointError, match="answered 401") as info:
            asyncio.run(go())
    assert not info.value.retryable and "invalid api key sk-quoted-0123456789" in str(info.value)
