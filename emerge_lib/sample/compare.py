"""Built instances against a sample world's planted truth, on one key shape.

An instance is keyed (snapshot, window, page_id, op, s, p, o, signal): the page stands for
the passage, since the truth names passages by their page and text.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from emerge_lib.core.config import deep_merge
from emerge_lib.core.presets import preset_settings

InstanceKey = tuple[str, int, int, str, str, str, str, str | None]


#: Configuration overrides that select the docs/semantics.md §1.1-1.2 semantics
#: (truth-design.jsonl),
#: and the released semantics without the authors' selection rules (truth-unselected.jsonl);
#: the defaults are what the released data shows, their rules included (truth.jsonl).
#: The authors' rules off is the no-selection-rules preset, these settings laid over it.
UNSELECTED_SETTINGS = preset_settings("no-selection-rules")
DESIGN_SETTINGS = deep_merge(UNSELECTED_SETTINGS, {
    "passages": {"windows": "first_appearance"},
    "deltas": {"emerging": "not_in_snapshot", "deprecate_window_additions": False}})
VARIANT_SETTINGS = {"released": None, "design": DESIGN_SETTINGS,
                    "unselected": UNSELECTED_SETTINGS}


def planted(world: str | Path, variant: str = "released") -> set[InstanceKey]:
    """The instances ``truth.jsonl`` (``variant`` "released", the defaults),
    ``truth-design.jsonl`` ("design") or ``truth-unselected.jsonl`` ("unselected") lists."""
    name = "truth.jsonl" if variant == "released" else f"truth-{variant}.jsonl"
    lines = (Path(world) / name).read_text(encoding="utf-8").splitlines()
    rows = [json.loads(line) for line in lines if line]
    return {(r["snapshot"], r["window"], r["page_id"], r["op"], r["s"], r["p"], r["o"],
             r["signal"]) for r in rows}


def built(catalog: Any) -> tuple[set[InstanceKey], dict[str, dict[str, Any]]]:
    """The instances in a warehouse, and its passages by passage_id."""
    passages = {r["passage_id"]: r for r in catalog.read_arrow("passages").to_pylist()}
    instances = {
        (r["snapshot"], r["window"], passages[r["passage_id"]]["page_id"], r["op"], r["s"],
         r["p"], r["o"], r["signal"])
        for r in catalog.read_arrow("instances").to_pylist()
    }
    return instances, passages
