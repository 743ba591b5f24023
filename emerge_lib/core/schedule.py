"""Snapshot and window arithmetic (docs/semantics.md §1.1), everything in UTC.

For a snapshot t with n windows of length w, window k (1..n) ends at τ_k = t + k·w and
τ_0 = t. The KG delta of window k is cumulative, (t, τ_k]; a passage belongs to the
window in which it first appears, (τ_{k-1}, τ_k].
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Any


def parse_utc(value: Any) -> datetime:
    """Parse an ISO 8601 timestamp into an aware UTC datetime.

    A naive timestamp is taken as UTC (everything in emerge is UTC); an offset is converted.
    """
    if isinstance(value, datetime):
        dt = value
    elif isinstance(value, str):
        text = value.strip()
        if text.endswith(("Z", "z")):
            text = text[:-1] + "+00:00"
        try:
            dt = datetime.fromisoformat(text)
        except ValueError as exc:
            raise ValueError(f"not an ISO 8601 timestamp: {value!r}") from exc
    elif isinstance(value, date):  # YAML turns unquoted dates into datetime.date
        dt = datetime(value.year, value.month, value.day)
    else:
        raise ValueError(f"not an ISO 8601 timestamp: {value!r}")
    if dt.tzinfo is None:
        return dt.replace(tzinfo=UTC)
    return dt.astimezone(UTC)


@dataclass(frozen=True, order=True)
class Window:
    """Window k of snapshot t. Intervals are half-open on the left: (start, end]."""

    snapshot: datetime
    k: int
    start: datetime  # τ_{k-1}
    end: datetime  # τ_k

    def contains(self, ts: datetime) -> bool:
        """Is ts in the per-window range (τ_{k-1}, τ_k]?"""
        return self.start < ts <= self.end


@dataclass(frozen=True)
class SnapshotPlan:
    """One snapshot t and its windows: what every per-snapshot stage is computed for."""

    t: datetime
    window_count: int
    window_days: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "t", parse_utc(self.t))
        if self.window_count < 1:
            raise ValueError(f"window count must be >= 1, got {self.window_count}")
        if self.window_days <= 0:
            raise ValueError(f"window_days must be > 0, got {self.window_days}")

    @property
    def key(self) -> str:
        """The catalog's snapshot partition value, ``2024-01-01T00:00:00Z``."""
        return iso(self.t)

    @property
    def windows(self) -> list[Window]:
        return windows(self.t, self.window_count, self.window_days)

    @property
    def horizon(self) -> datetime:
        """τ_n, the end of the last window."""
        return horizon(self.t, self.window_count, self.window_days)

    def window_of(self, ts: datetime | str) -> int | None:
        return window_of(self.t, ts, self.window_count, self.window_days)


def as_utc(ts: datetime | str) -> datetime:
    return parse_utc(ts)


def window_end(snapshot: datetime | str, k: int, window_days: float = 7) -> datetime:
    """τ_k = t + k·window_days (k = 0 gives t itself)."""
    if k < 0:
        raise ValueError(f"window index must be >= 0, got {k}")
    if window_days <= 0:
        raise ValueError(f"window_days must be > 0, got {window_days}")
    return as_utc(snapshot) + timedelta(days=window_days * k)


def windows(snapshot: datetime | str, count: int = 5, window_days: float = 7) -> list[Window]:
    """The windows 1..count of a snapshot."""
    if count < 1:
        raise ValueError(f"window count must be >= 1, got {count}")
    t = as_utc(snapshot)
    ends = [window_end(t, k, window_days) for k in range(count + 1)]
    return [Window(t, k, ends[k - 1], ends[k]) for k in range(1, count + 1)]


def horizon(snapshot: datetime | str, count: int = 5, window_days: float = 7) -> datetime:
    """The last instant any window of this snapshot looks at: τ_count."""
    return window_end(snapshot, count, window_days)


def window_of(
    snapshot: datetime | str, ts: datetime | str, count: int = 5, window_days: float = 7
) -> int | None:
    """The k with ts in (τ_{k-1}, τ_k], or None when ts is at or before t or past τ_count."""
    t, x = as_utc(snapshot), as_utc(ts)
    if x <= t:
        return None
    for w in windows(t, count, window_days):
        if w.contains(x):
            return w.k
    return None


def iso(ts: datetime) -> str:
    """ISO 8601 with a Z suffix, second precision."""
    return as_utc(ts).strftime("%Y-%m-%dT%H:%M:%SZ")


def unix_seconds(ts: datetime) -> int:
    return int(as_utc(ts).timestamp())
