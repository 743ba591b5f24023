"""llama.cpp's own GBNF parser, in the real local server (SmolLM2-135M), takes the answer
form of every size curation asks for and starts the answer as the form says; a broken
grammar is refused in one line, so the check can fail."""

from __future__ import annotations

import httpx

from emerge_lib.curation.answers import answer_grammar


def ask(llm, grammar: str) -> httpx.Response:
    """A few tokens under ``grammar``: enough for the server to parse it and start."""
    return httpx.post(f"{llm.url}/chat/completions", timeout=120, json={
        "model": llm.model, "messages": [{"role": "user", "content": "Say OK."}],
        "max_tokens": 4, "temperature": 0, "grammar": grammar})


def test_the_local_server_parses_the_answer_grammar(llm) -> None:
    for n in (1, 3, 12):
        resp = ask(llm, answer_grammar(n))
        assert resp.status_code == 200, resp.text[:300]
        assert resp.json()["choices"][0]["message"]["content"].startswith("1. ")
    broken = ask(llm, "root ::= [ -~]{1,")
    assert broken.status_code == 400 and "grammar" in broken.json()["error"]["message"]
