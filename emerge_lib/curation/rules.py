"""Which models judge which triple, and when a triple counts as asserted (all in config).

The paper's rule, the default: an addition (X, E, EE, EE-KG) is judged by the additions
model with the assertion prompt; a deprecation (D) by the deprecations model with the
deprecation prompt, and also by the additions model when it carries no end qualifier (its
evidence is the text alone). A triple's operation is asserted when every judge of its
rule said YES; with a judge's verdict missing or unparsed, it is not known (None).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from emerge_lib.core.config import CurationSettings, Judge
from emerge_lib.curation.prompts import ASSERTION, DEPRECATION

ADDITIONS = ("X", "E", "EE", "EE-KG")


def judges(settings: CurationSettings, op: str, has_end_qualifier: bool
           ) -> list[tuple[Judge, str]]:
    """(judge route, prompt type) pairs that must say YES for ``op``."""
    if op in ADDITIONS:
        return [(j, ASSERTION) for j in settings.assertion_judges]
    routes = (settings.deprecation_judges if has_end_qualifier
              else settings.deprecation_without_qualifier_judges)
    return [(j, DEPRECATION) for j in routes]


def asserted_operations(settings: CurationSettings, ops: Sequence[str], has_end_qualifier: bool,
                        verdicts: Mapping[tuple[str, str], bool | None]) -> list[str] | None:
    """The ops of one triple its judges all said YES to, in the order given; None when a
    verdict any op needs is missing or unparsed (not curated yet, or no answer to read).

    ``verdicts``: (llm_name, prompt type) → True / False / None (unparsed)."""
    out = []
    for op in ops:
        needed = [(settings.route(j).name, kind) for j, kind in judges(settings, op, has_end_qualifier)]
        said = [verdicts.get(key) for key in needed]
        if any(v is None for v in said):
            return None
        if all(said):
            out.append(op)
    return out
