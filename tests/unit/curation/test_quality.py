"""Answer QA (emerge_lib.curation.quality): the authors' garbage flags
(find_garbage_clusters.py:96-148), each with a near miss; answers repeated across prompts
about different triples; which stored answers are asked again, and how often."""

from __future__ import annotations

import json

import pytest

from emerge_lib.core.config import CurationSettings
from emerge_lib.curation.quality import flags, repeated, replaced, to_reask


@pytest.mark.parametrize(("text", "want"), [
    (None, ["empty"]), ("   ", ["empty"]),
    ("Stated.", ["very_few_words"]), ("It is stated.", []),  # 1 word / 3 words
    # fewer than 30 % distinct words among 4+ (but no run of 5 equal tokens)
    ("yes no yes no yes no yes no yes no", ["low_unique_ratio"]),
    ("yes no maybe yes", []),  # 3 of 4 distinct
    # a word 3-gram more than 5 times (here 6), 6+ words
    (" ".join(f"the text says w{i}" for i in range(6)), ["repeated_ngram"]),
    (" ".join(f"the text says w{i}" for i in range(5)), []),  # 5 times: not more than 5
    ("It is is is is is stated here in the passage as written", ["repeated_token"]),
    ("It is is is is stated here in the passage as written", []),  # 4 in a row
    (" ".join(f"w{i}" for i in range(1901)), ["truncation"]),
    (" ".join(f"w{i}" for i in range(1900)), []),
])
def test_the_authors_serious_flags(text: str | None, want: list[str]) -> None:
    assert flags(text) == want


def rows(llm: str, sha: str, triples: list[str], answer: str, verdict: str = "YES") -> list[dict]:
    return [{"llm_name": llm, "prompt_sha": sha, "s": t, "p": "P1", "o": "Q9",
             "verdict": verdict, "raw_answer": answer} for t in triples]


def test_a_model_repeating_one_answer_for_different_triples_is_stuck() -> None:
    same = "1. YES The text clearly supports this relation between the two."
    stored = (rows("m", "a", ["Q1"], same) + rows("m", "b", ["Q2"], same)
              + rows("m", "c", ["Q3"], "1.  YES The text clearly supports this relation "
                                       "between the two.")  # the same, spaced otherwise
              + rows("other", "d", ["Q4"], same)  # another model: its own count
              + rows("m", "e", ["Q5"], same, verdict="UNPARSED"))  # unparsed: not counted
    assert repeated(stored, 3) == {("m", "a"), ("m", "b"), ("m", "c")}
    assert repeated(stored, 4) == set() and repeated(stored, 0) == set()
    # the same answer for the same triples (one triple in two passages) is not stuck
    twice = rows("m", "a", ["Q1"], same) + rows("m", "b", ["Q1"], same) + rows(
        "m", "c", ["Q1"], same)
    assert repeated(twice, 2) == set()


def test_what_is_asked_again_and_how_often() -> None:
    s = CurationSettings()
    assert (s.reasks, s.degenerate_check, s.degenerate_repeats) == (1, True, 3)
    unparsed = [{"verdict": "UNPARSED", "explanation": None, "raw_answer": "prose"}]
    loop = [{"verdict": "YES", "explanation": "again " * 8, "raw_answer": "1. YES again"}]
    fine = [{"verdict": "NO", "explanation": "The text says otherwise.", "raw_answer": "x"}]
    assert to_reask(s, unparsed, False) == "unparsed"
    assert to_reask(s, loop, False) == (
        "degenerate: low_unique_ratio, repeated_ngram, repeated_token")
    assert to_reask(s, fine, False) is None
    assert to_reask(s, fine, True) == "degenerate: repeated_answer"
    # asked twice already (the first ask and one re-ask): spent
    assert to_reask(s, [{**unparsed[0], "ask_round": 2}], False) is None
    more = CurationSettings(reasks=2)
    assert to_reask(more, [{**unparsed[0], "ask_round": 2}], False) == "unparsed"
    # the earlier behaviour: nothing asked again; no degenerate check
    assert to_reask(CurationSettings(reasks=0), unparsed, False) is None
    assert to_reask(CurationSettings(degenerate_check=False), loop, True) is None
    kept = json.loads(replaced([{**loop[0], "answered_at": "then"}], "degenerate: x"))
    assert kept == {"why": "degenerate: x", "ask_round": 1, "verdicts": ["YES"],
                    "raw_answer": "1. YES again", "answered_at": "then"}
