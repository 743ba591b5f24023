"""The release lines as typed Parquet (emerge_lib/formats/schema.py): the authors' real
lines and ours go through the same writer, load with ``datasets`` without inference, and
give back every JSON value (nulls, ``{}`` qualifiers, unparsed verdicts included)."""

from __future__ import annotations

import json
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from repo import REPO

from emerge_lib.formats.format import FormatError, passage_record
from emerge_lib.formats.schema import (
    LINE_SCHEMA,
    TRIPLE_ROW_SCHEMA,
    line_row,
    read_jsonl,
    write_lines,
)

SNAP = "2024-04-01T00:00:00Z"
TEXT = "Alma Keller founded Northam Observatory with Bruno Tal in Eastport."


def untyped(value: Any, name: str = "") -> Any:
    """A typed value as the JSONL holds it (the inverse of the schema's conversions)."""
    if isinstance(value, list):
        return [untyped(v, name) for v in value]
    if isinstance(value, dict):
        return {k: untyped(v, k) for k, v in value.items()}
    if isinstance(value, datetime):
        return value.strftime("%Y-%m-%dT%H:%M:%SZ") if name == "revision_date" else \
            int(value.timestamp())
    if isinstance(value, date):
        return value.isoformat()
    return value


def same_as_json(row: dict[str, Any], record: dict[str, Any]) -> None:
    """Every key of the JSON line has its value back; keys the line lacks are null."""
    for key, typed in row.items():
        want = record.get(key)
        if key == "predictions":
            assert (None if typed is None else json.loads(typed)) == want
        elif key == "tkgu_triples":
            for t_typed, t_json in zip(typed, want, strict=True):
                for k, v in t_typed.items():
                    got = untyped(v, k)
                    if k == "qualifier_info" and v is None:
                        got = {}
                    assert got == t_json.get(k), (record["hash_id"], k)
        else:
            assert untyped(typed, key) == want, (record["hash_id"], key)


@pytest.fixture(scope="module")
def theirs(realdata: Path) -> list[dict[str, Any]]:
    return read_jsonl(realdata / "emerge" / "solved_disagreements.sample.jsonl")


def test_the_authors_lines_load_with_datasets_typed(theirs, tmp_path: Path) -> None:
    import datasets

    lines, triples = tmp_path / "lines.parquet", tmp_path / "triples.parquet"
    table = write_lines(lines, theirs, triples)
    assert table.num_rows == len(theirs) == 10
    assert pq.read_schema(lines).equals(LINE_SCHEMA)
    assert pq.read_schema(triples).equals(TRIPLE_ROW_SCHEMA)
    loaded = datasets.load_dataset("parquet", data_files={"train": [str(lines)]},
                                   cache_dir=str(tmp_path / "cache"))["train"]
    assert loaded.num_rows == 10
    assert loaded.features == datasets.Features.from_arrow_schema(LINE_SCHEMA)  # not inferred
    for row, record in zip(loaded, theirs, strict=True):
        same_as_json(row, record)
    # their mixes are all there: {} and qualifiers, open lifespans, verdict lists
    qualifiers = [t["qualifier_info"] for r in loaded for t in r["tkgu_triples"]]
    assert None in qualifiers and any(q and q["qualifier_qid"] == "P582" for q in qualifiers)
    assert any(None in t["triple_lifespan_date"] for r in loaded for t in r["tkgu_triples"])
    assert all(isinstance(a["llm_assessment"], bool)
               for r in loaded for t in r["tkgu_triples"] for a in t["llm_assessment"])
    flat = datasets.load_dataset("parquet", data_files={"train": [str(triples)]},
                                 cache_dir=str(tmp_path / "cache"))["train"]
    assert flat.num_rows == sum(len(r["tkgu_triples"]) for r in theirs)
    assert [(r["hash_id"], r["triple_index"], r["triple"]) for r in flat] == [
        (r["hash_id"], i, t["triple"]) for r in theirs for i, t in enumerate(r["tkgu_triples"])]
    assert flat[0]["snapshot"] == date.fromisoformat(theirs[0]["delta_dates"][0])


def _line(pid: str, window: int, rows: list[dict[str, Any]], curation=None) -> dict[str, Any]:
    def at(anchor: str) -> dict[str, Any]:
        start = TEXT.index(anchor)
        return {"start": start, "end": start + len(anchor), "anchor": anchor,
                "target": anchor, "qid": f"Q{len(anchor)}"}

    passage = {"passage_id": pid, "page_id": 1, "page_title": "Alma Keller", "page_qid": "Q1",
               "rev_id": 3, "rev_timestamp": datetime(2024, 4, 3, 5, 6, 7, tzinfo=UTC),
               "paragraph_idx": 0, "text": TEXT,
               "mentions": [at("Northam Observatory"), at("Bruno Tal")]}
    return passage_record(passage, rows, SNAP, window, 7, curation=curation)


def _instance(op: str, s: str, o: str, **extra: Any) -> dict[str, Any]:
    return {"op": op, "s": s, "p": "P108", "o": o, "signal": None, "s_label": s,
            "p_label": "employer", "o_label": o, "emerging_head": op == "EE",
            "emerging_tail": False, "head_created_at": datetime(2020, 1, 1, tzinfo=UTC),
            "tail_created_at": datetime(2021, 2, 3, 4, 5, 6, tzinfo=UTC),
            "lifespan_from": datetime(2024, 4, 2, tzinfo=UTC), "lifespan_to": None,
            "qualifier_pid": None, "qualifier_label": None, "qualifier_at": None,
            "source_delta_type": "all", **extra}


def test_our_lines_come_back_value_for_value(tmp_path: Path) -> None:
    """Ours: an x-triple (no source_delta_type), a D with its end qualifier, an unparsed
    verdict (null) beside a parsed one, asserted operations null and listed; a window with
    no line is a file with no row group, which datasets reads as no rows."""
    import datasets

    unparsed = [{"llm_name": "Meta-Llama-3.1-405B", "llm_assessment": None,
                 "llm_prompt_type": "triple_deprecation", "llm_prompt": ""},
                {"llm_name": "Meta-Llama-3.1-8B", "llm_assessment": True,
                 "llm_prompt_type": "triple_deprecation", "llm_prompt": "It says so."}]
    d = _instance("D", "Q1", "Q3", signal="qualifier:P582", qualifier_pid="P582",
                  qualifier_label="end time", qualifier_at=datetime(2024, 4, 5, tzinfo=UTC),
                  lifespan_to=datetime(2024, 4, 5, tzinfo=UTC))
    records = [
        _line("a", 1, [_instance("X", "Q1", "Q2"), d],
              curation={("Q1", "P108", "Q3"): (unparsed, None),
                        ("Q1", "P108", "Q2"): ((), ["X"])}),
        _line("b", 1, [_instance("EE", "Q9", "Q2")]),
    ]
    assert "source_delta_type" not in records[0]["tkgu_triples"][0]  # the x-triple
    lines, empty = tmp_path / "a.parquet", tmp_path / "b.parquet"
    write_lines(lines, records, tmp_path / "t.parquet")
    write_lines(empty, [], tmp_path / "u.parquet")
    assert pq.ParquetFile(empty).metadata.num_row_groups == 0
    assert pq.read_schema(empty).equals(LINE_SCHEMA)
    loaded = datasets.load_dataset("parquet", data_files={"train": [str(lines), str(empty)]},
                                   cache_dir=str(tmp_path / "cache"))["train"]
    assert loaded.num_rows == 2
    for row, record in zip(loaded, records, strict=True):
        same_as_json(row, record)
    first = loaded[0]["tkgu_triples"]
    assert first[1]["qualifier_info"]["qualifier_date"] == date(2024, 4, 5)
    assert [a["llm_assessment"] for a in first[1]["llm_assessment"]] == [None, True]
    assert first[1]["asserted_operations"] is None and first[0]["asserted_operations"] == [
        "x-triples"]
    assert first[0]["source_delta_type"] is None and first[1]["triple_lifespan_date"] == [
        date(2024, 4, 2), date(2024, 4, 5)]
    assert loaded[0]["revision_date"] == datetime(2024, 4, 3, 5, 6, 7, tzinfo=UTC)
    assert loaded[0]["predictions"] == "{}" and loaded[0]["window"] == 1
    # the same lines give the same bytes
    again = tmp_path / "again.parquet"
    write_lines(again, records)
    assert again.read_bytes() == lines.read_bytes()


@pytest.mark.parametrize(("change", "message"), [
    (lambda r: r.update(extra=1), "line 'h1': field 'extra' is not in the release schema"),
    (lambda r: r["tkgu_triples"][0].update(note="x"),
     "line 'h1': tkgu_triples: [0]: unknown key 'note'"),
    (lambda r: r.update(revision_id="12"), "line 'h1': revision_id: expected an integer"),
    (lambda r: r["tkgu_triples"][0].update(head_creation_date="03/01/2019"),
     "line 'h1': tkgu_triples: [0]: head_creation_date: not an ISO 8601 date"),
    (lambda r: r.update(mentions={"a": 1}), "line 'h1': mentions: expected a list"),
])
def test_a_line_that_does_not_fit_names_its_field(change, message) -> None:
    record = _line("a", 1, [_instance("E", "Q1", "Q2")])
    record["hash_id"] = "h1"
    change(record)
    with pytest.raises(FormatError, match="^" + message.replace("[", r"\[").replace("]", r"\]")
                       .replace("(", r"\(")):
        line_row(record)


def test_the_users_guide_lists_every_field() -> None:
    """docs/using-a-release.md's field list is the schema's: no field missing from it."""
    from emerge_lib.formats.schema import field_rows

    text = (REPO / "docs" / "using-a-release.md").read_text()
    names = {n.rsplit(".", 1)[-1] for schema in (LINE_SCHEMA, TRIPLE_ROW_SCHEMA)
             for n, _, _ in field_rows(schema)}
    assert sorted(n for n in names if f"`{n}`" not in text) == []
