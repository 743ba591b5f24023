"""The page ids a dump file holds, as runs (``dump_pages``), and the test of a watermark's
page against them: a page is absent only when no run of any file holds its id."""

from __future__ import annotations

from emerge_lib.ingest.absent import _disjoint, _held_in, log_id
from emerge_lib.ingest.staging import PageRuns


def test_page_ids_become_runs_of_consecutive_ids() -> None:
    runs = PageRuns()
    for page_id in (1, 2, 3, 5, 6, 6, 9, 4, 10):  # a repeat, one out of order
        runs.add(page_id)
    assert runs.close() == [(1, 3), (5, 6), (9, 9), (4, 4), (10, 10)]
    assert runs.close() == [(1, 3), (5, 6), (9, 9), (4, 4), (10, 10)]  # closed once
    assert PageRuns().close() == []


def test_a_page_is_held_when_any_run_of_any_file_holds_it() -> None:
    # two files' runs, overlapping and out of order (a page listed twice holds it still)
    starts, ends = _disjoint([(10, 20), (1, 3), (15, 30), (31, 31), (40, 41)])
    assert (starts, ends) == ([1, 10, 40], [3, 31, 41])
    ids = [0, 1, 3, 4, 9, 10, 31, 32, 39, 40, 41, 42]
    assert [i for i, held in zip(ids, _held_in(ids, starts, ends), strict=True) if held] == \
        [1, 3, 10, 31, 40, 41]
    assert _held_in([1, 2], [], []) == [False, False]


def test_an_absent_page_is_keyed_apart_from_every_logitem() -> None:
    assert log_id(74, "20240520") == -7_400_000_000 - 20240520
    assert log_id(74, "20240520") != log_id(74, "20240820")
    assert log_id(1, "20240520") < 0
