"""A model's answer to a curation prompt → one YES/NO verdict and explanation per triple.

Free-text answers break in many ways (the authors re-queried 871 of them). This parser
reads the forms real answers take: a numbered list with ``1.`` or ``1)``, numbers or
verdicts in bold, ``Yes.``/``**NO**:``/``YES -``, the triple restated before the verdict
(``1. (A, b, C): YES``), an intro line before the list, explanations over several lines.
It never guesses: an answer without exactly one verdict for each of the N triples is
unparsed (None), and so is one with an item that names both verdicts ("YES/NO", "Not YES
but NO") or hedges one ("maybe YES", "YES (partially)", "YES?"). With constrained decoding (``answer_regex`` for vLLM, ``answer_grammar``
for llama.cpp) every answer has the form ``k. YES|NO explanation`` on N lines.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# an explanation's length under constrained decoding: printable ASCII (a name like
# "Boğaziçi" comes out transliterated), so that the form's length in bytes bounds its
# tokens (a non-ASCII character could cost up to four byte tokens)
EXPLANATION_CHARS = 240

_ITEM = re.compile(r"^\s*(?:[-*]\s+)?(?:\*\*|__)?\s*(\d{1,3})\s*(?:\*\*|__)?\s*[.):]\s*(.*)$")
_MARKUP = re.compile(r"[*_`#]+")
_VERDICT_AT_START = re.compile(r"^\W*(YES|NO)\b\W*", re.IGNORECASE)
_VERDICT_ANYWHERE = re.compile(r"\b(YES|NO)\b")  # upper case only: prose says "no" too
# a verdict inside a phrase is read only after a label that ends with one of these
# ("Answer: YES", "A, b, C - YES"), never inside a sentence ("Not YES but NO")
_LABEL_END = re.compile(r"[:=\-–—→>]\s*$")
# hedges: a verdict they qualify is not a verdict ("maybe YES", "YES (partially)", "YES?")
_HEDGE = re.compile(r"\b(maybe|possibly|perhaps|probably|likely|unlikely|partially|partly|"
                    r"unclear|uncertain|unsure|not sure|somewhat|arguably|unknown|"
                    r"undetermined|ambiguous|either)\b", re.IGNORECASE)
_HEDGED_AFTER = re.compile(r"^\s*(?:\?|[,;:(\[\-–—/]*\s*(?:maybe|possibly|perhaps|probably|"
                           r"likely|unlikely|partially|partly|unclear|uncertain|unsure|"
                           r"not sure|somewhat|arguably|in part)\b)", re.IGNORECASE)
# the other verdict joined to the first, in any case: "YES/NO", "Yes or no" (not
# "Yes, no doubt": the upper-case rule catches "YES, NO")
_OTHER_AFTER = re.compile(r"^\s*(?:/|\||\bor\b|\band\b)\s*(YES|NO)\b", re.IGNORECASE)


@dataclass(frozen=True)
class Verdict:
    verdict: bool  # YES
    explanation: str


def _skip_restated_triple(text: str) -> str:
    """``(A, b (x), C): YES …`` → ``: YES …`` (balanced parentheses, labels may hold some)."""
    if not text.startswith("("):
        return text
    depth = 0
    for i, ch in enumerate(text):
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0:
                return text[i + 1:]
    return text


def _verdict(item: str) -> Verdict | None:
    """One item's verdict, or None when it has none, both, or a hedged one."""
    text = _MARKUP.sub("", item).strip()
    text = _skip_restated_triple(text).strip()
    text = re.sub(r"^[\s:–—\-.,]+", "", text)
    m = _VERDICT_AT_START.match(text)
    if m is None:
        m = _VERDICT_ANYWHERE.search(text)
        if m is None:
            return None
        before = text[:m.start()]
        if not _LABEL_END.search(before) or _HEDGE.search(before):
            return None  # "Not YES", "maybe YES", "Likely: YES"
    said = m.group(1).upper()
    other = "NO" if said == "YES" else "YES"
    rest = text[m.end(1):]
    after = _OTHER_AFTER.match(rest)
    if after is not None and after.group(1).upper() == other:
        return None  # "YES/NO", "Yes or no"
    if other in _VERDICT_ANYWHERE.findall(rest) or _HEDGED_AFTER.match(rest):
        return None  # "NO (but maybe YES)", "YES (partially)", "YES?"
    explanation = re.sub(r"^[\s:–—\-.,]+", "", rest).strip()
    return Verdict(said == "YES", explanation)


def parse_answer(text: str, n: int, single: bool = False) -> list[Verdict] | None:
    """The N verdicts of an answer in list order, or None when it does not hold exactly
    items 1..N each with exactly one unhedged YES or NO. A paragraph after a blank line
    that is not indented ends the item (an outro after the list is not its last item's).

    ``single``: the answer to a single-triple prompt (``prompts.SINGLE_TEMPLATES``), one
    verdict without a number (``YES, because …``); one that numbers its items is read as
    a list of exactly one."""
    if single and not any(_ITEM.match(line) for line in text.splitlines()):
        first = text.strip().split("\n\n", 1)[0]  # a paragraph after it is an outro
        verdict = _verdict(" ".join(first.split("\n")))
        return None if verdict is None else [verdict]
    items: dict[int, list[str]] = {}
    current: int | None = None
    blank = False
    for line in text.splitlines():
        m = _ITEM.match(line)
        if m is not None and 1 <= int(m.group(1)) <= max(n, 1) + 50:
            current = int(m.group(1))
            if current in items:
                return None  # the same number twice: not one list
            items[current] = [m.group(2)]
        elif not line.strip():
            blank = current is not None
            continue
        elif current is not None:
            if blank and not line[:1].isspace():
                current = None  # a paragraph of its own, after the list or between items
            else:
                items[current].append(line.strip())
        blank = False
    if sorted(items) != list(range(1, n + 1)):
        return None
    verdicts = [_verdict(" ".join(items[i])) for i in range(1, n + 1)]
    if any(v is None for v in verdicts):
        return None
    return verdicts  # type: ignore[return-value]


def answer_token_budget(n: int, single: bool = False) -> int:
    """``max_tokens`` that always holds a constrained answer of N lines, so that the
    constraint, not the budget, ends it: the form is printable ASCII (one byte a
    character) and every sampled token is at least one byte, so the longest text the form
    allows, in bytes, bounds its tokens; plus one for the end-of-sequence token."""
    if single:
        return len("YES ") + EXPLANATION_CHARS + 1
    longest = sum(len(f"{k}. YES ") + EXPLANATION_CHARS for k in range(1, n + 1)) + (n - 1)
    return longest + 1


def answer_regex(n: int, single: bool = False) -> str:
    """The answer's form as a regular expression (vLLM's structured outputs): N lines
    ``k. YES|NO explanation``, each explanation 1 to ``EXPLANATION_CHARS`` printable ASCII
    characters (``answer_token_budget`` relies on both bounds); ``single``: one line
    ``YES|NO explanation`` (the single-triple prompt asks for no list)."""
    if single:
        return rf"(YES|NO) [ -~]{{1,{EXPLANATION_CHARS}}}"
    line = r"{k}\. (YES|NO) [ -~]{{1,{m}}}"
    return r"\n".join(line.format(k=k, m=EXPLANATION_CHARS) for k in range(1, n + 1))


def answer_grammar(n: int, single: bool = False) -> str:
    """The same form as a GBNF grammar (llama.cpp's ``grammar``; vLLM's ``grammar`` takes
    it too)."""
    lines = " \"\\n\" ".join(f'"{k}. " verdict " " explanation' for k in range(1, n + 1))
    if single:
        lines = 'verdict " " explanation'
    return (f"root ::= {lines}\n"
            'verdict ::= "YES" | "NO"\n'
            f"explanation ::= [ -~]{{1,{EXPLANATION_CHARS}}}\n")
