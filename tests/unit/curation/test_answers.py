"""The curation prompts are the paper's, word for word; answers parse as real models write
them; the constrained form always parses."""

from __future__ import annotations

import hashlib
import re

import pytest
from repo import REPO

from emerge_lib.curation.answers import (
    EXPLANATION_CHARS,
    answer_grammar,
    answer_regex,
    answer_token_budget,
    parse_answer,
)
from emerge_lib.curation.prompts import (
    ASSERT_TEMPLATE,
    ASSERTION,
    DEPRECATE_TEMPLATE,
    DEPRECATION,
    SINGLE_ASSERT_TEMPLATE,
    SINGLE_DEPRECATE_TEMPLATE,
    prompt_sha,
    render,
)

PROMPTS = REPO / "shared" / "prompts"
LABELS = [("Ada Lovelace", "collaborator", "Charles Babbage"),
          ("Pyrus (brand)", "country", "No Doubt (band)")]


# sha256 of the exact bytes (UTF-8) of ../shared/prompts/assert.txt and deprecate.txt, the
# paper's Appendix B.1 and B.2 as released: held here so that CI, without ../shared, still
# catches a changed byte in the code's templates
APPENDIX_B_SHA256 = {
    "assert.txt": "714d4bcb8bb6369bd4fb93f9855651436e55dd545b66412e3bb3c773861339d3",
    "deprecate.txt": "dc52da9055267b8b6ef6a77cd215c6d1668eb13d248988c3ebb89815ab1c8726",
}


@pytest.mark.parametrize(("name", "template"), [("assert.txt", ASSERT_TEMPLATE),
                                                 ("deprecate.txt", DEPRECATE_TEMPLATE)])
def test_prompts_are_appendix_b_word_for_word(name: str, template: str) -> None:
    assert hashlib.sha256(template.encode("utf-8")).hexdigest() == APPENDIX_B_SHA256[name]
    path = PROMPTS / name
    if path.is_file():  # and, where ../shared is, the files themselves
        raw = path.read_bytes()
        assert hashlib.sha256(raw).hexdigest() == APPENDIX_B_SHA256[name]
        assert template == raw.decode("utf-8")


# the authors' prompts_v1 single-triple files (klimzaporojets/emerge at 108455c,
# src/dataset/emerge/prompts/prompts_v1/prompt_single_{assert,deprecate}_template.txt),
# byte for byte (no final newline; their placeholders)
PROMPTS_V1_SINGLE = {
    "assert": (
        'You are given the following text:\n##chunk##\n\nDoes the text contain information '
        'that explicitly or implicitly (the text provides some hints), directly or indirectly '
        'represents the following triple? Use common sense but not the knowledge that can not '
        'be inferred from the text above.\n##triples_string##\n\nAnswer "YES" if the text '
        'above explicitly or implicitly states or implies the given triple, or answer "NO" '
        'otherwise. Follow your "YES" or "NO" answer with a brief explanation.'),
    "deprecate": (
        'You are given the following text:\n##chunk##\n\nDoes this text imply that the '
        'following triple is no longer valid or does not hold at the moment the text was '
        'written?\n##triples_string##\n\nAnswer "YES" if the text implies that the triple is '
        'no longer valid or does not hold, or answer "NO" otherwise. Follow your "YES" or '
        '"NO" answer with brief explanation.'),
}


@pytest.mark.parametrize(("name", "template"), [("assert", SINGLE_ASSERT_TEMPLATE),
                                                 ("deprecate", SINGLE_DEPRECATE_TEMPLATE)])
def test_single_triple_prompts_are_the_authors_word_for_word(name: str, template: str) -> None:
    theirs = PROMPTS_V1_SINGLE[name].replace("##chunk##", "{passage}").replace(
        "##triples_string##", "{triples}")
    assert template == theirs + "\n"  # a final newline, as the list templates have


def test_a_request_of_one_triple_takes_the_single_prompt_unnumbered() -> None:
    one = render(DEPRECATION, "A passage.", LABELS[:1], single=True)
    assert one.startswith("You are given the following text:\nA passage.\n\nDoes this text "
                          "imply that the following triple is no longer valid")
    assert "\n(Ada Lovelace, collaborator, Charles Babbage)\n\nAnswer " in one
    # two triples, or the setting off: the list prompt, numbered
    assert render(DEPRECATION, "A passage.", LABELS, single=True) == render(
        DEPRECATION, "A passage.", LABELS)
    assert "\n1. (Ada Lovelace" in render(ASSERTION, "A passage.", LABELS[:1])
    # its answer: one verdict, unnumbered (or a list of exactly one)
    assert [v.verdict for v in parse_answer("YES. The text says she did.", 1, True)] == [True]
    assert parse_answer("NO, nothing about it.\n\nI hope this helps.", 1, True)[0].explanation \
        == "nothing about it."
    assert parse_answer("1. NO nothing about it", 1, True)[0].verdict is False
    assert parse_answer("YES ok\n2. YES a second one", 1, True) is None  # a list of two
    assert parse_answer("Maybe YES.", 1, True) is None and parse_answer("", 1, True) is None
    regex = re.compile(answer_regex(1, single=True))
    assert regex.fullmatch("YES the text says so") and not regex.fullmatch("1. YES ok")
    longest = "YES " + "~" * EXPLANATION_CHARS
    assert regex.fullmatch(longest) and not regex.fullmatch(longest + "~")
    assert answer_token_budget(1, single=True) == len(longest) + 1
    assert answer_grammar(1, single=True).startswith('root ::= verdict " " explanation\n')


def test_a_request_numbers_its_triples_one_per_line() -> None:
    text = render(ASSERTION, "A {braced} passage.", LABELS)
    assert text.startswith("You are given the following text:\nA {braced} passage.\n\nCan ")
    odd = render(ASSERTION, "Braces {triples} stay.", LABELS)
    assert "\nBraces {triples} stay.\n" in odd and odd.count("1. (Ada Lovelace") == 1
    assert "\n1. (Ada Lovelace, collaborator, Charles Babbage)\n" \
           "2. (Pyrus (brand), country, No Doubt (band))\n\nWrite a numbered list" in text
    deprecation = render(DEPRECATION, "p", LABELS[:1])
    assert "no longer valid" in deprecation and "1. (Ada Lovelace" in deprecation
    assert prompt_sha(text) != prompt_sha(deprecation) and len(prompt_sha(text)) == 24


REAL_ANSWERS = [
    ("1. YES - the text says they worked together.\n2. NO - nothing about a country.",
     [(True, "the text says they worked together."), (False, "nothing about a country.")]),
    ("Here is the list:\n\n1) **YES**: They collaborated on the engine.\n2) **NO**: not stated.",
     [(True, "They collaborated on the engine."), (False, "not stated.")]),
    ("**1.** Yes. The passage names Babbage as her collaborator.\n**2.** No.",
     [(True, "The passage names Babbage as her collaborator."), (False, "")]),
    # the triple restated before the verdict, with parentheses inside a label
    ("1. (Ada Lovelace, collaborator, Charles Babbage): YES\n"
     "2. (Pyrus (brand), country, No Doubt (band)) - NO, the text does not mention it",
     [(True, ""), (False, "the text does not mention it")]),
    # an explanation over several lines
    ("1. YES\n   The text directly mentions the collaboration.\n2. NO\n   No evidence.",
     [(True, "The text directly mentions the collaboration."), (False, "No evidence.")]),
    ("1. Answer: YES, because the text says so\n2. NO", [(True, "because the text says so"),
                                                         (False, "")]),
    # markdown a chat model writes: the triple in bold, the verdict on a bullet below it
    ("Sure! Here is the numbered list:\n\n1. **(Ada Lovelace, collaborator, Charles Babbage)**\n"
     "   - **YES**: The passage says they worked together.\n"
     "2. **(Pyrus (brand), country, No Doubt (band))**\n   - **NO**: Not mentioned.",
     [(True, "The passage says they worked together."), (False, "Not mentioned.")]),
    # the triple restated without parentheses, then a label
    ("1. Ada Lovelace, collaborator, Charles Babbage: YES\n"
     "2. Pyrus (brand), country, No Doubt (band) - Verdict: NO",
     [(True, ""), (False, "")]),
    # an outro paragraph after the list is not the last item's (it names both verdicts)
    ("1. YES - worked together.\n2. NO - not stated.\n\n"
     "In summary, the first triple is YES and the second is NO.",
     [(True, "worked together."), (False, "not stated.")]),
    # hedging words later in an explanation, lower-case "no" in prose: still one verdict
    ("1) Yes, no doubt: the text possibly overstates it, but says so.\n"
     "2) No. There is no mention of a country.",
     [(True, "no doubt: the text possibly overstates it, but says so."),
      (False, "There is no mention of a country.")]),
    ("1. YES, but only indirectly: she calls him her mentor.\n2. NO.",
     [(True, "but only indirectly: she calls him her mentor."), (False, "")]),
]


@pytest.mark.parametrize(("text", "want"), REAL_ANSWERS)
def test_real_answers_parse(text: str, want: list[tuple[bool, str]]) -> None:
    got = parse_answer(text, 2)
    assert got is not None
    assert [(v.verdict, v.explanation) for v in got] == want


@pytest.mark.parametrize("text", [
    "The first triple is supported, the second is not.",  # prose, no list
    "1. YES - supported.",  # fewer lines than triples
    "1. YES\n2. NO\n3. YES",  # more
    "1. YES\n1. NO",  # the same number twice
    "1. Maybe.\n2. NO",  # no verdict for the first
    "1. (Ada Lovelace, collaborator, Charles Babbage)\n2. (Pyrus, country, No Doubt)",  # restated only
    # both verdicts in one item, or a hedged one: unparsed, never guessed
    "1. Not YES but NO\n2. NO",
    "1. YES/NO\n2. NO",
    "1. Yes or no, it is hard to say.\n2. NO",
    "1. YES and NO: the text is ambiguous\n2. NO",
    "1. NO (but it could be YES if the year is right)\n2. NO",
    "1. (Ada Lovelace, collaborator, Charles Babbage): YES. 2. NO\n2. NO",
    "1. …maybe YES\n2. NO",
    "1. Partially YES - the text hints at it\n2. NO",
    "1. Probably NO\n2. NO",
    "1. Likely: YES\n2. NO",
    "1. YES (partially): only the year is given\n2. NO",
    "1. YES? The text is unclear.\n2. NO",
    "1. NO, probably not.\n2. NO",
    "1. The text says yes.\n2. NO",  # a lower-case verdict inside a sentence
])
def test_answers_that_do_not_hold_one_verdict_per_triple_are_unparsed(text: str) -> None:
    assert parse_answer(text, 2) is None


def test_the_constrained_form_always_parses() -> None:
    regex = re.compile(answer_regex(3))
    answer = "1. YES the text says so\n2. NO nothing about it\n3. YES implied by the title"
    assert regex.fullmatch(answer)
    assert not regex.fullmatch("1. YES ok\n2. NO ok")  # exactly three lines
    assert not regex.fullmatch("1. yes ok\n2. NO ok\n3. NO ok")
    assert [v.verdict for v in parse_answer(answer, 3)] == [True, False, True]
    grammar = answer_grammar(2)
    assert grammar.startswith('root ::= "1. " verdict " " explanation "\\n" "2. " verdict')
    assert 'verdict ::= "YES" | "NO"' in grammar


@pytest.mark.parametrize("n", [1, 2, 9, 10, 99, 100])
def test_the_token_budget_holds_the_longest_constrained_answer(n: int) -> None:
    """max_tokens = the longest text the form accepts, in bytes, + 1 (end of sequence):
    the form is ASCII and a sampled token is at least one byte, so no constrained answer
    can be cut by its budget."""
    regex = re.compile(answer_regex(n))
    lines = [f"{k}. YES " + "~" * EXPLANATION_CHARS for k in range(1, n + 1)]
    longest = "\n".join(lines)
    assert regex.fullmatch(longest)
    assert answer_token_budget(n) == len(longest.encode("utf-8")) + 1
    # the form allows nothing longer: no longer explanation, no extra line, no non-ASCII
    # character (up to four byte tokens for one character)
    assert not regex.fullmatch("\n".join([*lines[:-1], lines[-1] + "~"]))
    assert not regex.fullmatch(longest + "\n")
    assert not regex.fullmatch("\n".join([*lines[:-1], f"{n}. NO Boğaziçi"]))
    assert regex.fullmatch("\n".join([*lines[:-1], f"{n}. NO Bogazici"]))
    grammar = answer_grammar(n)
    assert f"explanation ::= [ -~]{{1,{EXPLANATION_CHARS}}}" in grammar
    assert grammar.count('" verdict " " explanation') == n
