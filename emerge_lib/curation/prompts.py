"""The paper's two curation prompts (Appendix B), word for word, and how a request's
numbered list of triples is written into them.

B.1 asks whether the text supports additions (X, E, EE, EE-KG); B.2 whether it implies
that triples no longer hold (D). A request of one triple takes the authors' single-triple
wording instead (their prompts_v1, ``curation.single_prompts``). ``{passage}`` is the release passage (with its "Excerpt
from the Wikipedia page describing …" prefix), ``{triples}`` the numbered list, one triple
per line: ``1. (subject label, relation label, object label)``. The paper typesets curly
quotes around YES and NO; the released templates use straight quotes, as here. A test
holds these strings byte-identical to ../shared/prompts/.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

ASSERTION = "triple_assertion"
DEPRECATION = "triple_deprecation"
PROMPT_TYPES = (ASSERTION, DEPRECATION)

ASSERT_TEMPLATE = (
    'You are given the following text:\n'
    '{passage}\n'
    '\n'
    'Can the following triples be directly or indirectly (the text provides some '
    'hints) inferred from the text? Use common sense but not the knowledge that can '
    'not be inferred from the text above.\n'
    '{triples}\n'
    '\n'
    'Write a numbered list with the triples above, where each of the triples is '
    'followed by YES if the triple is represented in the text, and NO otherwise. '
    'Follow your "YES" or "NO" answer for each of the triples with a brief '
    'explanation.\n'
)
DEPRECATE_TEMPLATE = (
    'You are given the following text:\n'
    '{passage}\n'
    '\n'
    'Does this text imply that the following triples are no longer valid or do not '
    'hold at the moment the text was written?\n'
    '{triples}\n'
    '\n'
    'Write a numbered list with the triples above, where each of the triples is '
    'followed by YES if the text implies that the triple is no longer valid or do not'
    ' hold, and NO otherwise. Follow your "YES" or "NO" answer for each of the '
    'triples with a brief explanation.\n'
)
TEMPLATES = {ASSERTION: ASSERT_TEMPLATE, DEPRECATION: DEPRECATE_TEMPLATE}
# the authors' single-triple prompts (``src/dataset/emerge/prompts/prompts_v1/
# prompt_single_{assert,deprecate}_template.txt``, word for word; their s05 takes them
# for a request of one triple, ``s05_generate_dataset_utils_v8.py:163-177``, with the
# triple unnumbered), ending in a newline as the templates above do
SINGLE_ASSERT_TEMPLATE = (
    'You are given the following text:\n'
    '{passage}\n'
    '\n'
    'Does the text contain information that explicitly or implicitly (the text provides '
    'some hints), directly or indirectly represents the following triple? Use common '
    'sense but not the knowledge that can not be inferred from the text above.\n'
    '{triples}\n'
    '\n'
    'Answer "YES" if the text above explicitly or implicitly states or implies the given '
    'triple, or answer "NO" otherwise. Follow your "YES" or "NO" answer with a brief '
    'explanation.\n'
)
SINGLE_DEPRECATE_TEMPLATE = (
    'You are given the following text:\n'
    '{passage}\n'
    '\n'
    'Does this text imply that the following triple is no longer valid or does not hold '
    'at the moment the text was written?\n'
    '{triples}\n'
    '\n'
    'Answer "YES" if the text implies that the triple is no longer valid or does not '
    'hold, or answer "NO" otherwise. Follow your "YES" or "NO" answer with brief '
    'explanation.\n'
)
SINGLE_TEMPLATES = {ASSERTION: SINGLE_ASSERT_TEMPLATE, DEPRECATION: SINGLE_DEPRECATE_TEMPLATE}


def triples_list(labels: Sequence[tuple[str, str, str]]) -> str:
    """``1. (subject, relation, object)`` lines, numbered from 1."""
    return "\n".join(f"{i}. ({s}, {p}, {o})" for i, (s, p, o) in enumerate(labels, start=1))


def render(prompt_type: str, passage: str, labels: Sequence[tuple[str, str, str]],
           single: bool = False) -> str:
    """The prompt of one request: the template with the passage and the numbered triples;
    ``single`` (one triple): the single-triple template, the triple unnumbered."""
    one = single and len(labels) == 1
    head, tail = (SINGLE_TEMPLATES if one else TEMPLATES)[prompt_type].split("{passage}", 1)
    listed = "({}, {}, {})".format(*labels[0]) if one else triples_list(labels)
    # replace, not str.format, and never inside the passage: a passage may hold braces,
    # even "{triples}"
    return head + passage + tail.replace("{triples}", listed, 1)


def prompt_sha(prompt: str) -> str:
    """The identity of a prompt text (with its model, the key of an answer)."""
    return hashlib.sha256(prompt.encode("utf-8")).hexdigest()[:24]
