"""One asynchronous client for any OpenAI-compatible chat endpoint (vLLM on GPU workers,
llama.cpp's server locally), for curation and for the EDC+ baseline
(``evaluation.adapters.edc``).

Bounded concurrency (a semaphore: throughput on vLLM comes from keeping many requests in
flight), a timeout per request, retries with exponential backoff and jitter on 5xx, 429,
timeouts and connection errors, and a request budget. Constrained decoding is asked for
in each backend's own dialect (they differ, and one payload does not work for both):
vLLM ``structured_outputs.regex`` (or ``.grammar``), llama.cpp ``grammar`` (GBNF), plain
OpenAI none. ``max_tokens`` always holds the constrained form (``answer_token_budget``), so
an answer the budget cut (``finish_reason: length``) is a fault, never the norm. The client
returns the answer text with its finish reason, token counts and timing; parsing and
retries on unparseable or cut answers are the caller's (``curation.verdicts``).

The transport is aiohttp: against an instant server it sustains 1,847-2,450 requests/s
(2,611-3,471 per CPU second) at every concurrency from 1 to 256, where httpx's async pool
fell from 450 requests/s at concurrency 1 to 49 at 256 (``benchmarks/curation.py``; the
measured set is in docs/performance.md); the client must never be what a GPU waits for.
"""

from __future__ import annotations

import asyncio
import json
import random
import time
from dataclasses import dataclass
from typing import Any

import aiohttp

from emerge_lib.core.errors import EmergeError
from emerge_lib.curation.answers import answer_grammar, answer_regex, answer_token_budget

RETRY_STATUS = {408, 409, 425, 429, 500, 502, 503, 504}


class EndpointError(EmergeError):
    """An endpoint kept failing (after the retries); a later run may find it up."""

    retryable = True


class BudgetExhausted(EmergeError):
    """The run's request budget is spent; what is left is for the next run."""


@dataclass(frozen=True)
class Endpoint:
    """Where one route's model is served: base URL (``…/v1``), served model name, dialect."""

    url: str
    model: str
    backend: str = "vllm"  # vllm | llamacpp | openai
    api_key: str | None = None

    @property
    def chat_url(self) -> str:
        base = self.url.rstrip("/")
        return base if base.endswith("/chat/completions") else f"{base}/chat/completions"


@dataclass(frozen=True)
class Answer:
    text: str
    tokens_in: int
    tokens_out: int
    seconds: float
    attempts: int  # HTTP requests this answer took (transient failures retried)
    finish_reason: str | None = None  # "stop"; "length" when max_tokens cut it


def constraint(backend: str, n_lines: int, vllm_form: str = "regex",
               single: bool = False) -> dict[str, Any]:
    """The request fields that constrain the answer to N ``k. YES|NO explanation`` lines,
    or with ``single`` to one ``YES|NO explanation`` (vLLM: one constraint per request, a
    ``regex`` or the same form as a ``grammar``)."""
    if backend == "vllm":
        if vllm_form == "grammar":
            return {"structured_outputs": {"grammar": answer_grammar(n_lines, single)}}
        return {"structured_outputs": {"regex": answer_regex(n_lines, single)}}
    if backend == "llamacpp":
        return {"grammar": answer_grammar(n_lines, single)}
    return {}


class ChatClient:
    """``async with ChatClient(...) as c: await c.ask(endpoint, prompt, n)``."""

    def __init__(self, concurrency: int = 8, timeout_s: float = 120.0, retries: int = 3,
                 backoff_s: float = 0.5, max_requests: int | None = None,
                 max_tokens_per_line: int = 64, temperature: float = 0.0,
                 vllm_constraint: str = "regex") -> None:
        self.semaphore = asyncio.Semaphore(max(1, concurrency))
        self.timeout_s = timeout_s
        self.retries = max(0, retries)
        self.backoff_s = backoff_s
        self.budget = max_requests
        self.max_tokens_per_line = max_tokens_per_line
        self.temperature = temperature
        if vllm_constraint not in ("regex", "grammar"):
            raise ValueError(f"vllm_constraint must be regex or grammar, not {vllm_constraint!r}")
        self.vllm_constraint = vllm_constraint
        self.sent = 0  # HTTP requests made (retries included)
        self.failures = 0  # requests that failed for good
        self._http: aiohttp.ClientSession | None = None
        self._concurrency = max(1, concurrency)

    async def __aenter__(self) -> ChatClient:
        connector = aiohttp.TCPConnector(limit=self._concurrency, limit_per_host=0)
        self._http = aiohttp.ClientSession(
            connector=connector, timeout=aiohttp.ClientTimeout(total=self.timeout_s))
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._http is not None:
            await self._http.close()
            self._http = None

    def payload(self, endpoint: Endpoint, prompt: str, n_lines: int, structured: bool,
                temperature: float | None = None, max_tokens: int | None = None,
                single: bool = False, seed: int | None = None) -> dict[str, Any]:
        """The request body; ``max_tokens`` (a free-form answer, as EDC+'s) replaces the
        per-line allowance; ``seed`` fixes what a sampled answer draws (vLLM, llama.cpp
        and OpenAI's API all take it), so a run's answers can be asked for again."""
        body: dict[str, Any] = {
            "model": endpoint.model,
            "messages": [{"role": "user", "content": prompt}],
            "temperature": self.temperature if temperature is None else temperature,
            "max_tokens": max_tokens or self.token_budget(n_lines, structured, single),
        }
        if seed is not None:
            body["seed"] = seed
        if structured:
            body.update(constraint(endpoint.backend, n_lines, self.vllm_constraint, single))
        if endpoint.backend == "llamacpp":
            # llama-server reuses the KV cache of the previous prompt's common prefix, and an
            # answer then depends on which prompt came before (two runs asking in another
            # order answered otherwise); each prompt evaluated whole answers the same
            body["cache_prompt"] = False
        return body

    def token_budget(self, n_lines: int, structured: bool, single: bool = False) -> int:
        """``max_tokens_per_line`` a line; constrained, never less than the form's longest
        answer (``answer_token_budget``), so the constraint ends it, not the budget. Free
        text has no bound: its budget is the setting's, and a cut answer is retried."""
        n = max(1, n_lines)
        per_line = self.max_tokens_per_line * n
        return max(answer_token_budget(n, single), per_line) if structured else per_line

    def _take_budget(self) -> None:
        if self.budget is not None:
            if self.budget <= 0:
                raise BudgetExhausted("the request budget (curation.max_requests) is spent")
            self.budget -= 1

    async def ask(self, endpoint: Endpoint, prompt: str, n_lines: int, structured: bool = True,
                  temperature: float | None = None, max_tokens: int | None = None,
                  single: bool = False, seed: int | None = None) -> Answer:
        """One chat completion, retried on transient failures; raises EndpointError.
        ``single``: the prompt asks about one triple without a list (its answer's form)."""
        assert self._http is not None, "use ChatClient as an async context manager"
        headers = {"Authorization": f"Bearer {endpoint.api_key}"} if endpoint.api_key else {}
        body = self.payload(endpoint, prompt, n_lines, structured, temperature, max_tokens,
                            single, seed)
        last = ""
        async with self.semaphore:
            for attempt in range(1, self.retries + 2):
                self._take_budget()
                self.sent += 1
                started = time.monotonic()
                try:
                    async with self._http.post(endpoint.chat_url, json=body,
                                               headers=headers) as resp:
                        status, raw = resp.status, await resp.read()
                except (TimeoutError, aiohttp.ClientError) as exc:
                    last = f"{type(exc).__name__}: {exc}"
                else:
                    text_of = raw[:300].decode("utf-8", "replace")
                    if status == 200:
                        try:
                            data = json.loads(raw)
                            choice = data["choices"][0]
                            text = choice["message"]["content"] or ""
                        except (ValueError, KeyError, IndexError, TypeError) as exc:
                            last = f"malformed response: {exc}: {text_of[:200]}"
                        else:
                            usage = data.get("usage") or {}
                            return Answer(text, int(usage.get("prompt_tokens") or 0),
                                          int(usage.get("completion_tokens") or 0),
                                          time.monotonic() - started, attempt,
                                          choice.get("finish_reason"))
                    elif status not in RETRY_STATUS:
                        self.failures += 1
                        raise EndpointError(f"{endpoint.chat_url} answered {status}: "
                                            f"{text_of}", retryable=False)
                    else:
                        last = f"HTTP {status}: {text_of[:200]}"
                if attempt <= self.retries:
                    pause = self.backoff_s * 2 ** (attempt - 1)
                    await asyncio.sleep(random.uniform(pause / 2, pause))
        self.failures += 1
        raise EndpointError(f"{endpoint.chat_url} failed {self.retries + 1} times: {last}")
