"""Which models judge which triple, and when a triple counts as asserted (all in config).

The paper's rule, the default: an addition (X, E, EE, EE-KG) is judged by the additions
model with the assertion prompt; a deprecation (D) by the deprecations model with the
deprecation prompt, and also by the additions model when it carries no qualifier (its
evidence is the text alone). A triple's operation is asserted when every judge of its
rule said YES; a verdict missing or unparsed fails that operation, or with
``curation.unparsed_fails: triple`` makes the whole triple unknown (None).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from emerge_lib.core.config import CurationSettings, Judge
from emerge_lib.curation.prompts import ASSERTION, DEPRECATION

ADDITIONS = ("X", "E", "EE", "EE-KG")


def judges(settings: CurationSettings, op: str, qualified: bool) -> list[tuple[Judge, str]]:
    """(judge route, prompt type) pairs that must say YES for ``op``; ``qualified``: the
    D triple carries a qualifier (``verdicts.qualified``)."""
    if op in ADDITIONS:
        return [(j, ASSERTION) for j in settings.assertion_judges]
    routes = (settings.deprecation_judges if qualified
              else settings.deprecation_without_qualifier_judges)
    return [(j, DEPRECATION) for j in routes]


def asserted_operations(settings: CurationSettings, ops: Sequence[str], qualified: bool,
                        verdicts: Mapping[tuple[str, str], bool | None]) -> list[str] | None:
    """The ops of one triple its judges all said YES to, in the order given; None when
    nothing can be said (not curated yet, or no answer to read).

    ``verdicts``: (llm_name, prompt type) → True / False / None (unparsed); a verdict not
    in it is missing. With ``curation.unparsed_fails: operation`` (the authors' s07,
    ``get_supported_triples``, S07:98-121, called once per operation's prompt type at
    S07:607-625) an operation whose judges' verdict is missing or unparsed is not
    asserted and the triple's other operation is judged alone: a two-operation triple
    (E and D) whose deprecation answer did not parse keeps its E when the assertion said
    YES; None only when no operation could be judged. With ``triple`` (the earlier rule)
    one such verdict makes the whole triple None."""
    out = []
    unknown = 0
    for op in ops:
        needed = [(settings.route(j).name, kind) for j, kind in judges(settings, op, qualified)]
        said = [verdicts.get(key) for key in needed]
        if any(v is None for v in said):
            if settings.unparsed_fails == "triple":
                return None
            unknown += 1
        elif all(said):
            out.append(op)
    return None if ops and unknown == len(ops) else out
