"""The five TKGU operations: their ids (the release's and the catalog's codes) and the
names the paper's authors give them (Figure 3, and the revised text: Exists, Add,
Mint+Add, Infer, Deprecate). The one place the mapping is written: the card (its glossary,
tables and plots), ``emerge stats``, ``emerge evaluate``'s tables and plots and the Label
Studio tasks show a name beside its id through it."""

from __future__ import annotations

#: id → the paper's name, in the paper's order
OP_LABELS: dict[str, str] = {
    "X": "Exists",
    "E": "Add",
    "EE": "Mint+Add",
    "EE-KG": "Infer",
    "D": "Deprecate",
}


def op_label(op: str) -> str:
    """The id with its name beside it: ``"EE (Mint+Add)"``."""
    return f"{op} ({OP_LABELS[op]})"
