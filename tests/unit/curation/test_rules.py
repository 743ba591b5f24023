"""Which judges a triple needs and when its operations count as asserted
(emerge_lib.curation.rules), on the configured routes: the authors' per-operation reading
of an unparsed verdict (S07:98-121) and the earlier whole-triple one."""

from __future__ import annotations

from emerge_lib.core.config import CurationSettings
from emerge_lib.curation.prompts import ASSERTION, DEPRECATION
from emerge_lib.curation.rules import asserted_operations, judges

SMALL, LARGE = "Meta-Llama-3.1-8B", "Meta-Llama-3.1-405B"


def settings(**kw: object) -> CurationSettings:
    return CurationSettings.model_validate(kw)


def test_judges_follow_the_qualifier() -> None:
    s = settings()
    assert judges(s, "E", False) == [("additions", ASSERTION)]
    assert judges(s, "D", True) == [("deprecations", DEPRECATION)]
    assert judges(s, "D", False) == [("deprecations", DEPRECATION), ("additions", DEPRECATION)]


def test_a_two_operation_triple_keeps_the_operation_its_judges_could_answer() -> None:
    s = settings()
    assert s.unparsed_fails == "operation"  # the authors' s07 by default
    # an E + D triple (an addition ended inside its window: an end qualifier, one judge)
    # whose deprecation answer did not parse: the E stands on its own verdict
    said = {(SMALL, ASSERTION): True, (LARGE, DEPRECATION): None}
    assert asserted_operations(s, ["E", "D"], True, said) == ["E"]
    # a missing verdict reads as an unparsed one (their code: False)
    assert asserted_operations(s, ["E", "D"], True, {(SMALL, ASSERTION): True}) == ["E"]
    # the other operation said NO: nothing asserted, but known
    assert asserted_operations(s, ["E", "D"], True, {**said, (SMALL, ASSERTION): False}) == []
    # EE-KG + D the other way round: the D answered, the assertion unparsed
    both = {(SMALL, ASSERTION): None, (LARGE, DEPRECATION): True}
    assert asserted_operations(s, ["EE-KG", "D"], True, both) == ["D"]
    # near miss: a one-operation triple with an unparsed verdict is unknown either way
    assert asserted_operations(s, ["E"], False, {(SMALL, ASSERTION): None}) is None
    assert asserted_operations(s, ["E", "D"], True, {}) is None  # nothing answered yet
    # a D without a qualifier needs both judges: one of them unparsed fails it
    removal = {(LARGE, DEPRECATION): True, (SMALL, DEPRECATION): None}
    assert asserted_operations(s, ["D"], False, removal) is None


def test_the_earlier_rule_makes_the_whole_triple_unknown() -> None:
    s = settings(unparsed_fails="triple")
    said = {(SMALL, ASSERTION): True, (LARGE, DEPRECATION): None}
    assert asserted_operations(s, ["E", "D"], True, said) is None
    both = {(SMALL, ASSERTION): True, (LARGE, DEPRECATION): True}
    assert asserted_operations(s, ["E", "D"], True, both) == ["E", "D"]
