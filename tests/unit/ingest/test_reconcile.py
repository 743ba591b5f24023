"""Reading a logging dump (ingest.reconcile.read_logging) and the per-title rule: the last
delete or restore since the full dump decides; a damaged file fails with one line."""

from __future__ import annotations

import gzip
from datetime import UTC, datetime
from pathlib import Path

import pytest

from emerge_lib.ingest.files import IngestError
from emerge_lib.ingest.reconcile import _decide, read_logging
from emerge_lib.sample.logdump import LogEvent, write_logging
from emerge_lib.sample.model import to_seconds

EVENTS = [
    LogEvent(to_seconds("2024-01-10T00:00:00Z"), "delete", "delete", "Old", "A", "x"),
    LogEvent(to_seconds("2024-03-01T00:00:00Z"), "delete", "delete", "Gone", "A", "spam"),
    LogEvent(to_seconds("2024-03-02T00:00:00Z"), "delete", "delete", "Back", "A", ""),
    LogEvent(to_seconds("2024-03-03T00:00:00Z"), "move", "move", "Here", "M", "",
             'a:2:{s:9:"4::target";s:5:"There";s:10:"5::noredir";s:1:"0";}'),
    LogEvent(to_seconds("2024-03-04T00:00:00Z"), "delete", "restore", "Back", "B", "oops"),
    LogEvent(to_seconds("2024-03-05T00:00:00Z"), "delete", "restore", "Old", "B", ""),
    LogEvent(to_seconds("2024-03-06T00:00:00Z"), "delete", "delete", "Old", "A", "again"),
    LogEvent(to_seconds("2024-06-01T00:00:00Z"), "delete", "delete", "Later", "A", ""),
]


def _day(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


def test_the_last_delete_or_restore_since_the_full_dump_decides(tmp_path: Path) -> None:
    [written] = write_logging(tmp_path, "enwiki", "20240520",
                              to_seconds("2024-05-20T00:00:00Z"), EVENTS)
    items = read_logging(tmp_path / written.name)
    assert [i.log_id for i in items] == list(range(1, 8))  # the June event is after the run
    last, moves, events = _decide(items, _day("2024-02-20"), _day("2024-05-20"))
    assert {t: (i.action, i.log_id) for t, i in last.items()} == {
        "Gone": ("delete", 2), "Back": ("restore", 5), "Old": ("delete", 7)}
    assert ([m.target for m in moves], events) == (["There"], 6)  # January: in the full dump


def test_a_split_logging_dump_reads_as_the_whole_one(tmp_path: Path) -> None:
    """The largest wikis' logging dump comes in parts, pages-logging1..N.xml.gz, a range
    of log ids each: read in their order they are the events of the unsplit file."""
    from emerge_lib.dumps.mirror import logging_parts

    cutoff = to_seconds("2024-05-20T00:00:00Z")
    [whole] = write_logging(tmp_path / "whole", "enwiki", "20240520", cutoff, EVENTS)
    parts = write_logging(tmp_path / "split", "enwiki", "20240520", cutoff, EVENTS, parts=3)
    names = [f.name for f in parts]
    assert names == [f"enwiki-20240520-pages-logging{k}.xml.gz" for k in (1, 2, 3)]
    assert logging_parts(names[::-1]) == names
    items = [it for name in logging_parts(names) for it in read_logging(tmp_path / "split" / name)]
    assert items == read_logging(tmp_path / "whole" / whole.name)
    assert [len(read_logging(tmp_path / "split" / n)) for n in names] == [2, 2, 3]
    for bad, why in (([names[0], names[2]], "are not 1 to 2"),
                     ([whole.name, names[0]], "a whole logging dump beside parts"),
                     ([names[0], "wikidatawiki-20240520-pages-logging2.xml.gz"],
                      "more than one wiki or date"),
                     ([names[0], "enwiki-20240520-pages-meta-history1.xml.bz2"],
                      "not one logging dump: enwiki-20240520-pages-meta-history1")):
        with pytest.raises(ValueError, match=why):
            logging_parts(bad)


def test_a_damaged_logging_dump_fails_with_one_line(tmp_path: Path) -> None:
    [written] = write_logging(tmp_path, "enwiki", "20240520",
                              to_seconds("2024-05-20T00:00:00Z"), EVENTS)
    path = tmp_path / written.name
    cut = tmp_path / "cut.xml.gz"
    cut.write_bytes(path.read_bytes()[:-40])
    with pytest.raises(IngestError, match=r"cut\.xml\.gz: not a readable logging dump") as err:
        read_logging(cut)
    assert "\n" not in str(err.value)
    broken = tmp_path / "broken.xml.gz"
    broken.write_bytes(gzip.compress(b"<mediawiki><logitem><id>1</id></mediawiki>"))
    with pytest.raises(IngestError, match="broken.xml.gz"):
        read_logging(broken)


def test_a_page_moved_then_deleted_is_found_by_the_title_the_warehouse_knows() -> None:
    """Full dumps read one over another: the warehouse knows page 7 as "Old"; the log moves
    it to "New" (leaving a redirect, page 9, at "Old" at the same second), then deletes
    "New": page 7 is the one, not the redirect; a title held by nobody matches nothing."""
    from emerge_lib.ingest.reconcile import LogItem, _holder

    def at(text: str) -> datetime:
        return _day(text)

    marks = [{"page_id": 7, "title": "Old", "first_timestamp": at("2023-01-01")},
             {"page_id": 9, "title": "Old", "first_timestamp": at("2024-03-01")},
             {"page_id": 4, "title": "Other", "first_timestamp": at("2023-01-01")}]
    move = LogItem(1, at("2024-03-01"), "move", "move", "Old",
                   'a:2:{s:9:"4::target";s:3:"New";s:10:"5::noredir";s:1:"0";}')
    assert move.target == "New"
    assert LogItem(2, at("2024-03-01"), "move", "move", "A", "B\n").target == "B"  # pre-2012
    assert _holder(marks, "New", at("2024-03-05"), [move]) == 7
    assert _holder(marks, "Old", at("2024-03-05"), [move]) == 9  # the redirect, deleted
    assert _holder(marks, "Nowhere", at("2024-03-05"), [move]) is None
    assert _holder(marks, "New", at("2024-02-01"), [move]) is None  # before the move
