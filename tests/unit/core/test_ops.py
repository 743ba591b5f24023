"""The operations' ids and the paper's names (emerge_lib/core/ops.py), stated once and
shown where a person reads them: the docs hold the same mapping (the card, stats,
evaluate and Label Studio are held by their own tests)."""

from __future__ import annotations

import re

import pytest
from repo import REPO

from emerge_lib.core.ops import OP_LABELS, op_label
from emerge_lib.formats.format import OP_NAMES


def test_the_mapping_is_the_papers_in_its_order() -> None:
    assert OP_LABELS == {"X": "Exists", "E": "Add", "EE": "Mint+Add", "EE-KG": "Infer",
                         "D": "Deprecate"}
    assert set(OP_LABELS) == set(OP_NAMES)  # every id the release writes has its name
    assert op_label("EE-KG") == "EE-KG (Infer)"


@pytest.mark.parametrize("doc", ["evaluation.md", "using-a-release.md", "data-model.md"])
def test_the_docs_state_the_mapping(doc: str) -> None:
    text = (REPO / "docs" / doc).read_text(encoding="utf-8")
    rows = dict(re.findall(r"^\| `([A-Z-]+)` \| ([^|]+?) \| `[a-z-]+` \|", text, re.M))
    assert rows == OP_LABELS
    for op in OP_LABELS:  # the release name beside them too
        assert f"| `{op}` | {OP_LABELS[op]} | `{OP_NAMES[op]}` |" in text
