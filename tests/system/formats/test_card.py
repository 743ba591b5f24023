"""The dataset card: Table 2 from the release files, plots that a browser shows."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from browserkit import dom, screenshot

from emerge_lib.formats.card import CardFacts, label, prepare, render, table2_text
from emerge_lib.formats.format import dumps_line, passage_record
from emerge_lib.formats.layout import CARD, CARD_HTML, PLOTS

SNAP = "2024-04-01T00:00:00Z"
TEXT = "Alma Keller founded Northam Observatory with Bruno Tal in Eastport."


def _line(pid: str, window: int, ops: list[tuple[str, str, str, str]]) -> str:
    def at(anchor: str) -> dict[str, Any]:
        start = TEXT.index(anchor)
        return {"start": start, "end": start + len(anchor), "anchor": anchor,
                "target": anchor, "qid": f"Q{len(anchor)}"}

    passage = {"passage_id": pid, "page_id": 1, "page_title": "Alma Keller", "page_qid": "Q1",
               "rev_id": 3, "rev_timestamp": datetime(2024, 4, 3, tzinfo=UTC),
               "paragraph_idx": 0, "text": TEXT,
               "mentions": [at("Northam Observatory"), at("Bruno Tal")]}
    rows = [{"op": op, "s": s, "p": p, "o": o, "signal": "removed" if op == "D" else None,
             "s_label": s, "p_label": p, "o_label": o, "emerging_head": op == "EE",
             "emerging_tail": False, "head_created_at": datetime(2020, 1, 1, tzinfo=UTC),
             "tail_created_at": datetime(2020, 1, 1, tzinfo=UTC), "lifespan_from": None,
             "lifespan_to": None, "qualifier_pid": None, "qualifier_label": None,
             "qualifier_at": None, "source_delta_type": "all"} for op, s, p, o in ops]
    return dumps_line(passage_record(passage, rows, SNAP, window, 7)) + "\n"


def write_card(out: Path, snapshots: list[str], kg_rows: dict[str, dict[str, int]],
               validation: str, facts: CardFacts | None = None
               ) -> tuple[list[str], list[dict[str, Any]]]:
    """The card alone, as the release writes it: (files written, the table's rows)."""
    prepared = prepare(out, snapshots, kg_rows)
    files = render(out, prepared, validation, facts)
    return files + [f"{PLOTS}/{p}" for p in prepared.plots], [s.row() for s in prepared.stats]


@pytest.fixture()
def release(tmp_path: Path) -> Path:
    folder = tmp_path / "corpus" / "snapshot_2024-04-01"
    folder.mkdir(parents=True)
    (folder / "delta_2024-04-08.jsonl").write_text(
        _line("a", 1, [("X", "Q1", "P1", "Q2"), ("E", "Q1", "P2", "Q3")])
        + _line("b", 1, [("D", "Q2", "P1", "Q3")]))
    (folder / "delta_2024-04-15.jsonl").write_text(
        _line("a", 2, [("X", "Q1", "P1", "Q2"), ("E", "Q1", "P2", "Q3")])
        + _line("c", 2, [("EE", "Q9", "P1", "Q1")]))
    evaluation = tmp_path / "evaluation_set" / "snapshot_2024-04-01"
    evaluation.mkdir(parents=True)
    (evaluation / "delta_2024-04-08.jsonl").write_text(_line("b", 1, [("D", "Q2", "P1", "Q3")]))
    return tmp_path


def test_the_card_counts_what_the_files_hold(release: Path) -> None:
    files, rows = write_card(release, [SNAP], {SNAP: {"kg_triples": 12, "entities": 7,
                                                      "relations": 3}}, "Validated.")
    assert files == [CARD, CARD_HTML, "plots/operations.png", "plots/instances_per_window.png",
                     "plots/tkgu_distribution.png", "plots/passage_lengths.png"]
    (row,) = rows
    # passages a, b, c; triples (Q1,P1,Q2), (Q1,P2,Q3), (Q2,P1,Q3), (Q9,P1,Q1)
    assert (row["passages"], row["triples"], row["entities"], row["relation_types"]) == (3, 4, 4, 2)
    assert row["instances"] == {"D": 1, "E": 2, "EE": 1, "X": 2}
    assert row["evaluation_instances"] == {"D": 1}
    assert (row["kg_entities"], row["kg_relation_types"], row["kg_triples"]) == (7, 3, 12)
    card = (release / CARD).read_text()
    # no line was curated: no triple is LLM-supported, and the card says so
    assert "| 2024-04-01 (2024.Q2) | 4 | 2 | 4 | uncurated | 3 | 7 | 3 | 12 |" in card
    assert "This release is uncurated" in card and row["supported_triples"] is None
    assert "![operations](plots/operations.png)" in card
    text = table2_text(rows)
    assert text.splitlines()[1].split() == ["2024-04-01", "(2024.Q2)", "4", "2", "4",
                                            "uncurated", "3", "7", "3", "12"]
    assert label("2019-01-01T00:00:00Z") == "2019-01-01 (2019.Q1)"
    assert label("2024-02-07T00:00:00Z") == "2024-02-07"
    # a rebuild writes the same bytes, plots included
    before = {f: (release / f).read_bytes() for f in files}
    write_card(release, [SNAP], {SNAP: {"kg_triples": 12, "entities": 7, "relations": 3}},
               "Validated.")
    assert {f: (release / f).read_bytes() for f in files} == before


def test_a_browser_shows_the_table_and_the_plots(release: Path, tmp_path: Path) -> None:
    """Headless Chromium renders card.html with the network cut off: its DOM holds the
    table, and the screenshot shows the bars of the operations plot (matplotlib's first
    colour), so the images load from the release itself."""
    import matplotlib.image as mpimg
    import numpy as np

    write_card(release, [SNAP], {SNAP: {"kg_triples": 12, "entities": 7, "relations": 3}},
               "Validated.")
    page = release / CARD_HTML
    text = dom(page, tmp_path / "profile", offline=True)
    assert "2024-04-01 (2024.Q2)" in text and 'id="table2"' in text
    shot = tmp_path / "card.png"
    screenshot(page, shot, tmp_path / "profile", offline=True)
    pixels = (mpimg.imread(shot)[..., :3] * 255).round()
    assert pixels.shape[:2] == (2600, 1000)
    blue = np.all(np.abs(pixels - [31, 119, 180]) <= 6, axis=-1).sum()  # tab:blue bars
    assert blue > 500, f"the plots did not render ({blue} bar pixels)"
