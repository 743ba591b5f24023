from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from emerge_lib.core.schedule import (
    horizon,
    iso,
    unix_seconds,
    window_end,
    window_of,
    windows,
)


def test_five_weekly_windows_are_contiguous_and_cumulative() -> None:
    t = datetime(2024, 1, 1, tzinfo=UTC)
    ws = windows(t)
    assert [w.k for w in ws] == [1, 2, 3, 4, 5]
    assert ws[0].start == t
    for a, b in zip(ws, ws[1:], strict=False):
        assert a.end == b.start
    assert ws[-1].end == datetime(2024, 2, 5, tzinfo=UTC)
    assert all(w.snapshot == t for w in ws)  # the cumulative delta of window k: (t, τ_k]
    assert [f"{w.end:%Y-%m-%d}" for w in ws] == [
        "2024-01-08", "2024-01-15", "2024-01-22", "2024-01-29", "2024-02-05"
    ]


def test_leap_year_window_crosses_february_29() -> None:
    t = datetime(2024, 2, 26, tzinfo=UTC)
    assert window_end(t, 1) == datetime(2024, 3, 4, tzinfo=UTC)
    t = datetime(2023, 2, 26, tzinfo=UTC)
    assert window_end(t, 1) == datetime(2023, 3, 5, tzinfo=UTC)


def test_time_zones_are_converted_to_utc() -> None:
    paris = timezone(timedelta(hours=1))
    t = datetime(2024, 1, 1, 1, 0, tzinfo=paris)  # = 2024-01-01T00:00Z
    assert windows(t)[0].snapshot == datetime(2024, 1, 1, tzinfo=UTC)
    assert window_end("2024-01-01T00:00:00-05:00", 0) == datetime(2024, 1, 1, 5, tzinfo=UTC)
    assert window_end("2024-01-01", 1) == datetime(2024, 1, 8, tzinfo=UTC)


def test_window_membership_is_left_open_right_closed() -> None:
    t = "2024-01-01T00:00:00Z"
    assert window_of(t, t) is None  # t itself belongs to the snapshot, not to a window
    assert window_of(t, "2024-01-01T00:00:01Z") == 1
    assert window_of(t, "2024-01-08T00:00:00Z") == 1
    assert window_of(t, "2024-01-08T00:00:01Z") == 2
    assert window_of(t, "2024-02-05T00:00:00Z") == 5
    assert window_of(t, "2024-02-05T00:00:01Z") is None
    assert window_of(t, "2024-01-20T00:00:00Z", count=3, window_days=10) == 2


def test_the_horizon_is_the_last_windows_end() -> None:
    assert horizon("2024-10-01", 5, 7) == datetime(2024, 11, 5, tzinfo=UTC)


def test_formatting_is_utc() -> None:
    t = datetime(2019, 1, 1, tzinfo=UTC)
    assert iso(t) == "2019-01-01T00:00:00Z"
    assert unix_seconds(t) == 1546300800


def test_bad_arguments() -> None:
    with pytest.raises(ValueError):
        windows("2024-01-01", 0)
    with pytest.raises(ValueError):
        window_end("2024-01-01", -1)
    with pytest.raises(ValueError):
        window_end("2024-01-01", 1, 0)
