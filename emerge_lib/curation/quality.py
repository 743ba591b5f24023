"""Answers that parse but are garbage: the authors' Part 3 checks, and what is asked again.

The authors found degenerate LLM answers after their s05 (loops, truncation, repeated
tokens from a server recovering from a fault), stripped those verdicts and asked again
(``scripts/dataset/find_garbage_clusters.py`` → ``build_reinput_for_garbage.py`` → s05 →
``merge_reinput_into_dataset.py``). ``flags`` is their ``detect_garbage``
(find_garbage_clusters.py:96-148) with their serious flags only (lines 77-84): an
explanation that is empty, has fewer than 3 words, fewer than 30 % distinct words (4+
words), a word 3-gram more than 5 times (6+ words), a token repeated more than 4 times in a
row, or more than 1,900 words (truncation). ``repeated`` adds what a stuck server does:
one model giving the very same answer text to prompts about different triples.

Which stored answers are asked again (``to_reask``): an UNPARSED one, or (with
``curation.degenerate_check``) a degenerate one, while it has been asked fewer than
1 + ``curation.reasks`` times (``ask_round``); the new answer replaces it and records
what it replaced (``replaced``)."""

from __future__ import annotations

import json
import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from emerge_lib.core.config import CurationSettings

_WORD = re.compile(r"\w+")
_TOKEN = re.compile(r"\S+")


def flags(explanation: str | None) -> list[str]:
    """The authors' serious garbage flags of one explanation (empty: none)."""
    if explanation is None or not explanation.strip():
        return ["empty"]
    words = _WORD.findall(explanation.lower())
    n = len(words)
    out = []
    if n < 3:
        out.append("very_few_words")
    if n >= 4 and len(set(words)) / n < 0.30:
        out.append("low_unique_ratio")
    grams = Counter(tuple(words[i:i + 3]) for i in range(n - 2))
    if n >= 6 and max(grams.values()) > 5:
        out.append("repeated_ngram")
    run, longest, last = 0, 0, None
    for token in _TOKEN.findall(explanation):
        run = run + 1 if token == last else 1
        longest, last = max(longest, run), token
    if longest > 4:
        out.append("repeated_token")
    if n > 1900:
        out.append("truncation")
    return out


def repeated(rows: Iterable[Mapping[str, Any]], prompts: int) -> set[tuple[str, str]]:
    """(llm_name, prompt_sha) of the answers one model gave, word for word, to at least
    ``prompts`` prompts about different triples (0: none)."""
    if prompts <= 0:
        return set()
    triples: dict[tuple[str, str], set[tuple[str, str, str]]] = defaultdict(set)
    text: dict[tuple[str, str], str] = {}
    for r in rows:
        if r["verdict"] in ("YES", "NO") and r.get("raw_answer"):
            key = (r["llm_name"], r["prompt_sha"])
            triples[key].add((r["s"], r["p"], r["o"]))
            text[key] = " ".join(r["raw_answer"].split())
    by_text: dict[tuple[str, str], list[tuple[str, str]]] = defaultdict(list)
    for key, answer in text.items():
        by_text[(key[0], answer)].append(key)
    out: set[tuple[str, str]] = set()
    for keys in by_text.values():
        if len({frozenset(triples[k]) for k in keys}) >= prompts:
            out.update(keys)
    return out


def to_reask(settings: CurationSettings, answer: Sequence[Mapping[str, Any]],
             stuck: bool) -> str | None:
    """Why the stored ``answer`` (its rows: one per triple) is asked again ("unparsed",
    or "degenerate: flag, …"), or None: it stands, or its asks are spent. ``stuck``: the
    answer is one of a model's ``repeated`` ones."""
    if not answer or ask_round(answer) > settings.reasks:
        return None
    if any(r["verdict"] == "UNPARSED" for r in answer):
        return "unparsed"
    if not settings.degenerate_check:
        return None
    found = sorted({f for r in answer for f in flags(r.get("explanation"))})
    if stuck:
        found.append("repeated_answer")
    return "degenerate: " + ", ".join(found) if found else None


def ask_round(answer: Sequence[Mapping[str, Any]]) -> int:
    """How many times the answer's prompt has been asked (rows written before the
    column existed count as the first)."""
    return max((r.get("ask_round") or 1) for r in answer)


def replaced(answer: Sequence[Mapping[str, Any]], why: str) -> str:
    """What a new answer replaces, as the ``replaced`` column keeps it (JSON)."""
    first = answer[0]
    return json.dumps({"why": why, "ask_round": ask_round(answer),
                       "verdicts": [r["verdict"] for r in answer],
                       "raw_answer": first.get("raw_answer"),
                       "answered_at": str(first.get("answered_at"))}, sort_keys=True)
