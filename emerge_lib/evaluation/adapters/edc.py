"""EDC+ (the paper's §5.1 and Appendix C) through any OpenAI-compatible endpoint.

The prompt is Appendix C word for word, with few-shot examples in the format it asks
for; the answer lists ``Triples in text`` as ``[Entity1, Relationship, Entity2, Action]``
(``ADD`` → operation ``add``: X, E, EE; ``DEPRECATE`` → ``deprecate``: D) and
``Triples not in text`` as ``[Entity1, Relationship, Entity2]`` (→ ``infer``: EE-KG).
Triples are open (labels, no QIDs), so they are scored by completeness.

Requests go through the project's one OpenAI-compatible client,
:class:`emerge_lib.curation.client.ChatClient` (bounded concurrency, retries with backoff
on 5xx/429/timeouts, a request budget): free-form answers, no constrained decoding.
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from emerge_lib.curation.client import ChatClient, Endpoint
from emerge_lib.evaluation.data import OPERATION_OPS, Instance, Predicted, prediction_line

log = logging.getLogger(__name__)

#: The paper's Appendix C prompt, word for word.
PROMPT = (
    "Your task is to update Wikidata knowledge graph from the knowledge explicitly or "
    "implicitly contained in a given text. Two sets of triples are to be extracted: "
    "‘Triples in text’, which contain triples relating entities mentioned in text in the "
    "form of [Entity1, Relationship, Entity2, Action], where action indicates if the triple "
    "has to be added (action ‘ADD’) or deprecated (action ‘DEPRECATE’) from the graph based "
    "on the knowledge in text. The second set of triples is called ‘Triples not in text’, "
    "and consists of triples with one entity (head or tail) mentioned in text and the other "
    "entity not mentioned in text but potentially existing in the graph.\n\n"
    "In your answer, please strictly only include the triples and do not include any "
    "explanation or apologies.\n\n"
    "Here are some examples:\n"
    "{few_shot_examples}\n"
    "Now please extract triplets from the following text.\n"
    "Text: {input_text} "
)

#: Few-shot examples in the answer format (the paper does not print its own).
FEW_SHOT_EXAMPLES = (
    "Text: Vijay Keshav Gokhale served as Foreign Secretary of India until January 2020, "
    "when he was succeeded by Harsh Vardhan Shringla.\n"
    "Triples in text:\n"
    "[Vijay Keshav Gokhale, position held, Foreign Secretary of India, DEPRECATE]\n"
    "[Harsh Vardhan Shringla, position held, Foreign Secretary of India, ADD]\n"
    "Triples not in text:\n"
    "[Harsh Vardhan Shringla, country of citizenship, India]\n"
    "\n"
    "Text: Joe Gambardella is an American professional ice hockey player who played "
    "college hockey at the University of Massachusetts Lowell.\n"
    "Triples in text:\n"
    "[Joe Gambardella, educated at, University of Massachusetts Lowell, ADD]\n"
    "Triples not in text:\n"
    "[Joe Gambardella, instance of, human]\n"
    "[Joe Gambardella, occupation, ice hockey player]\n"
)

NOT_IN_TEXT = re.compile(r"triples\s+not\s+in\s+text\s*:?", re.IGNORECASE)
IN_TEXT = re.compile(r"triples\s+in\s+text\s*:?", re.IGNORECASE)
BRACKETS = re.compile(r"\[([^\[\]]*)\]")
QUOTED = re.compile(r"\s*(\"[^\"]*\"|'(?:[^']|'')*'|“[^”]*”|[^,]+)\s*(?:,|$)")
ACTIONS = {"ADD": "add", "DEPRECATE": "deprecate"}


def build_prompt(text: str, examples: str = FEW_SHOT_EXAMPLES) -> str:
    return PROMPT.replace("{few_shot_examples}", examples).replace("{input_text}", text)


def _clean(token: str) -> str:
    tok = token.strip().strip("\"“”").strip("[]")
    tok = re.sub(r"^'+|'+$", "", tok).replace("''", "'")
    return " ".join(tok.replace("_", " ").split())


def _tokens(inner: str) -> list[str]:
    parts = [m.group(1) for m in QUOTED.finditer(inner)]
    return [_clean(p) for p in (parts or inner.split(","))]


@dataclass
class Parsed:
    predicted: list[Predicted] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # bracketed groups that are no triple


def parse_completion(completion: str) -> Parsed:
    """The predicted triples of one EDC+ answer.

    Everything before "Triples not in text" is the in-text part; each bracketed group
    there with 4 fields and an ADD/DEPRECATE action (or 3 fields: ADD) is one triple. In
    the not-in-text part, 3 fields (or 4 with ADD) are an ``infer`` triple, DEPRECATE a
    ``deprecate`` one. Quotes, underscores and extra whitespace are cleaned; groups with
    another number of fields or an unknown action are skipped (and listed).
    """
    out = Parsed()
    text = completion or ""
    split = NOT_IN_TEXT.search(text)
    sections = [(text[:split.start()] if split else text, "add")]
    if split:
        sections.append((text[split.end():], "infer"))
    for body, default in sections:
        body = IN_TEXT.sub(" ", body, count=1) if default == "add" else body
        for m in BRACKETS.finditer(body):
            toks = [t for t in _tokens(m.group(1))]
            op = default
            if len(toks) == 4:
                action = toks[3].upper().strip(" .")
                if action not in ACTIONS:
                    out.skipped.append(m.group(0))
                    continue
                if action == "DEPRECATE":
                    op = "deprecate"
                toks = toks[:3]
            if len(toks) != 3 or not all(toks):
                out.skipped.append(m.group(0))
                continue
            out.predicted.append(Predicted(None, (toks[0], toks[1], toks[2]),
                                           OPERATION_OPS[op]))
    return out


def endpoint(url: str, model: str, api_key: str | None = None) -> Endpoint:
    """An endpoint from a server's address, with or without its ``/v1``."""
    base = url.rstrip("/")
    if base.endswith("/chat/completions"):
        base = base.removesuffix("/chat/completions")
    if not base.endswith("/v1"):
        base += "/v1"
    return Endpoint(base, model, backend="openai", api_key=api_key)


class EdcPlus:
    """Passages → EDC+ predictions lines (``model`` defaults to ``edc-plus/<llm>``).

    One request per distinct passage (the cumulative deltas repeat passages), up to
    ``concurrency`` in flight; lines come out in the order of the instances, a chunk of
    passages at a time."""

    def __init__(self, endpoint: Endpoint, *, examples: str = FEW_SHOT_EXAMPLES,
                 model_name: str | None = None, max_tokens: int = 512, concurrency: int = 8,
                 timeout_s: float = 300.0, retries: int = 3, backoff_s: float = 0.5,
                 max_requests: int | None = None, chunk: int | None = None) -> None:
        self.endpoint = endpoint
        self.examples = examples
        self.model_name = model_name or f"edc-plus/{endpoint.model}"
        self.max_tokens = max_tokens
        self.client_args = {"concurrency": concurrency, "timeout_s": timeout_s,
                            "retries": retries, "backoff_s": backoff_s,
                            "max_requests": max_requests}
        self.chunk = chunk or max(64, 4 * concurrency)
        self.skipped = 0  # bracketed groups that were no triple
        self.requests = 0  # HTTP requests sent (retries included)
        self.tokens_out = 0

    async def _complete(self, passages: Sequence[str]) -> list[str]:
        async with ChatClient(**self.client_args) as client:
            try:
                answers = await asyncio.gather(*(
                    client.ask(self.endpoint, build_prompt(p, self.examples), 1,
                               structured=False, max_tokens=self.max_tokens)
                    for p in passages))
            finally:
                self.requests += client.sent
        self.tokens_out += sum(a.tokens_out for a in answers)
        return [a.text for a in answers]

    def predict(self, instances: Iterable[Instance]) -> Iterator[dict[str, Any]]:
        cache: dict[str, Sequence[Predicted]] = {}
        pending: list[Instance] = []
        started, asked = time.monotonic(), 0

        def flush() -> Iterator[dict[str, Any]]:
            nonlocal asked
            todo = list(dict.fromkeys(i.passage for i in pending if i.passage not in cache))
            if todo:
                for passage, text in zip(todo, asyncio.run(self._complete(todo)), strict=True):
                    parsed = parse_completion(text)
                    self.skipped += len(parsed.skipped)
                    cache[passage] = parsed.predicted
                asked += len(todo)
                rate = asked / max(time.monotonic() - started, 1e-9)
                log.info("edc+: %d passages answered (%.2g/s), %d requests", asked, rate,
                         self.requests)
            for inst in pending:
                yield prediction_line(inst.hash_id, self.model_name, cache[inst.passage])
            pending.clear()

        for inst in instances:
            pending.append(inst)
            if len({i.passage for i in pending} - cache.keys()) >= self.chunk:
                yield from flush()
        yield from flush()
