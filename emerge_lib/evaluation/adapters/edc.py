"""EDC+ (the paper's §5.1 and Appendix C) through any OpenAI-compatible endpoint.

The prompt is Appendix C word for word, with few-shot examples in the format it asks
for; the answer lists ``Triples in text`` as ``[Entity1, Relationship, Entity2, Action]``
(``ADD`` → operation ``add``: X, E, EE; ``DEPRECATE`` → ``deprecate``: D) and
``Triples not in text`` as ``[Entity1, Relationship, Entity2]`` (→ ``infer``: EE-KG).
Triples are open (labels, no QIDs), so they are scored by completeness.

The client is deliberately small and sits behind one seam (:class:`ChatClient`: an
endpoint URL and a model name, an httpx POST to ``/v1/chat/completions``) so the
[curation] client can replace it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx

from emerge_lib.errors import EmergeError
from emerge_lib.evaluation.data import OPERATION_OPS, Instance, Predicted, prediction_line

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


class ChatClient:
    """A minimal OpenAI-compatible chat client: POST {endpoint}/v1/chat/completions."""

    def __init__(self, endpoint: str, model: str, *, api_key: str | None = None,
                 timeout: float = 300.0, max_tokens: int = 512, temperature: float = 0.0,
                 transport: httpx.BaseTransport | None = None) -> None:
        base = endpoint.rstrip("/")
        self.url = (base if base.endswith("/v1") else base + "/v1") + "/chat/completions"
        self.model = model
        self.max_tokens = max_tokens
        self.temperature = temperature
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._http = httpx.Client(timeout=timeout, headers=headers, transport=transport)

    def complete(self, prompt: str) -> str:
        body = {"model": self.model, "messages": [{"role": "user", "content": prompt}],
                "temperature": self.temperature, "max_tokens": self.max_tokens}
        try:
            r = self._http.post(self.url, json=body)
        except httpx.HTTPError as exc:
            raise EmergeError(f"LLM endpoint {self.url}: {exc}", retryable=True) from None
        if r.status_code != 200:
            raise EmergeError(f"LLM endpoint {self.url} answered {r.status_code}: "
                              f"{r.text[:300]}", retryable=r.status_code >= 500)
        try:
            return r.json()["choices"][0]["message"]["content"] or ""
        except (ValueError, KeyError, IndexError, TypeError):
            raise EmergeError(f"LLM endpoint {self.url}: not a chat completion: "
                              f"{r.text[:300]}") from None

    def close(self) -> None:
        self._http.close()


class EdcPlus:
    """Passages → EDC+ predictions lines (``model`` defaults to ``edc-plus/<llm>``)."""

    def __init__(self, client: Any, *, examples: str = FEW_SHOT_EXAMPLES,
                 model_name: str | None = None) -> None:
        self.client = client
        self.examples = examples
        self.model_name = model_name or f"edc-plus/{getattr(client, 'model', 'llm')}"
        self.skipped = 0

    def predict(self, instances: Iterable[Instance]) -> Iterator[dict[str, Any]]:
        cache: dict[str, Sequence[Predicted]] = {}
        for inst in instances:
            if inst.passage not in cache:  # one call per distinct passage (cumulative deltas)
                parsed = parse_completion(self.client.complete(
                    build_prompt(inst.passage, self.examples)))
                self.skipped += len(parsed.skipped)
                cache[inst.passage] = parsed.predicted
            yield prediction_line(inst.hash_id, self.model_name, cache[inst.passage])
