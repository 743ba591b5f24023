"""The SQL vocabulary the stages share: each rule of docs/semantics.md §1.1 written once.

- instants: ``sql_timestamp`` (a UTC literal), ``valid_at`` / ``valid_at_expr`` (an
  interval [valid_from, valid_to) contains an instant), ``windows_sql`` (the window ends of
  a snapshot as an inline table);
- ``IN_V``: an item_timeline row whose state is in V (an enwiki sitelink, not a redirect);
  ``NOT_A_REDIRECT``, the half of it that item merges read alone;
- ``created_sql``: each item's creation time (its first revision);
- ``window_of_sql``: the window k with an instant in (τ_{k-1}, τ_k], the SQL twin of
  ``schedule.window_of`` (a test checks them equal);
- ``literal`` / ``literal_list``: the only way a Python value becomes SQL text.

Frames are passed to ``spark.sql`` as arguments (``{items}`` in the query,
``items=frame``), never through session-wide view names, so a frame built by one call
cannot be silently rebound by the next.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import date, datetime
from typing import Any

from emerge_lib.core.schedule import SnapshotPlan, as_utc

#: An item_timeline row (alias ``i``-style prefix given) whose state is not a redirect.
NOT_A_REDIRECT = "{a}.redirect_to IS NULL"
#: An item_timeline row (alias ``i``-style prefix given) whose state puts the item in V.
IN_V = "{a}.enwiki_title IS NOT NULL AND " + NOT_A_REDIRECT


def literal(value: Any) -> str:
    """A Python value as SQL text (strings quoted and escaped)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, datetime | date):
        return f"'{value.isoformat()}'"
    text = str(value).replace("'", "''")
    return f"'{text}'"


def partition_predicate(partition: Mapping[str, Any]) -> str:
    """``{"snapshot": "2024-01-01", "window": 2}`` → ``snapshot = '2024-01-01' AND window = 2``."""
    return " AND ".join(f"`{k}` = {literal(v)}" for k, v in partition.items())


def in_v(alias: str) -> str:
    """SQL predicate: the item_timeline row ``alias`` is a state in V (V_τ of
    docs/semantics.md §1.1)."""
    return IN_V.format(a=alias)


def not_a_redirect(alias: str) -> str:
    """SQL predicate: the item_timeline row ``alias`` is an item's own state, not a
    redirect to another item."""
    return NOT_A_REDIRECT.format(a=alias)


def literal_list(values: Iterable[Any]) -> str:
    """``'P582', 'P580'`` for an IN list (``NULL`` when empty: IN (NULL) matches nothing)."""
    items = [literal(v) for v in values]
    return ", ".join(items) if items else "NULL"


def sql_timestamp(tau: datetime | str) -> str:
    """A UTC instant as a Spark SQL literal (the session time zone is UTC)."""
    return f"TIMESTAMP '{as_utc(tau).strftime('%Y-%m-%d %H:%M:%S')}'"


def valid_at(alias: str, tau: datetime | str) -> str:
    """SQL predicate: the interval [valid_from, valid_to) of ``alias`` contains τ."""
    return valid_at_expr(alias, sql_timestamp(tau))


def valid_at_expr(alias: str, at: str) -> str:
    """SQL predicate for an instant given as an SQL expression (e.g. a joined column)."""
    return (f"{alias}.valid_from <= {at} AND "
            f"({alias}.valid_to IS NULL OR {alias}.valid_to > {at})")


def windows_sql(plan: SnapshotPlan, **after: float) -> str:
    """An inline table (window, tau) of a snapshot's window ends, for one-pass stages;
    each keyword adds a column: the instant that many seconds after τ_k
    (``windows_sql(plan, horizon=3600)`` → (window, tau, horizon))."""
    from datetime import timedelta

    rows = ", ".join(
        "(" + ", ".join([str(w.k), sql_timestamp(w.end), *(
            sql_timestamp(as_utc(w.end) + timedelta(seconds=secs)) for secs in after.values())])
        + ")" for w in plan.windows)
    return f"(SELECT * FROM VALUES {rows} AS w({', '.join(['window', 'tau', *after])}))"


def window_of_sql(column: str, plan: SnapshotPlan) -> str:
    """SQL for the window k whose (τ_{k-1}, τ_k] holds ``column``; NULL at or before t and
    after τ_n. The same window ends as ``schedule.windows``, compared, not divided."""
    cases = " ".join(
        f"WHEN {column} > {sql_timestamp(w.start)} AND {column} <= {sql_timestamp(w.end)} "
        f"THEN {w.k}"
        for w in plan.windows
    )
    return f"CAST(CASE {cases} END AS INT)"



def created_sql(items: str = "{items}", over_redirects: bool = False) -> str:
    """Each item's creation time, the timestamp of its first revision (the earliest
    ``created_at`` over its item_timeline rows); ``over_redirects`` (the authors' R4, their
    s02_normalize_entity_creation_date.py:107-111): the earliest over the item and the items
    that redirect to it at the end of the ingested history (direct redirects only)."""
    own = f"SELECT qid, MIN(created_at) AS created_at FROM {items} GROUP BY qid"
    if not over_redirects:
        return own
    return f"""
        SELECT o.qid, CASE WHEN r.created_at < o.created_at THEN r.created_at
                           ELSE o.created_at END AS created_at
        FROM ({own}) o
        LEFT JOIN (
          SELECT m.redirect_to AS qid, MIN(c.created_at) AS created_at
          FROM {items} m JOIN {items} c ON c.qid = m.qid
          WHERE m.valid_to IS NULL AND m.redirect_to IS NOT NULL
          GROUP BY m.redirect_to
        ) r ON r.qid = o.qid"""
