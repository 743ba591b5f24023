"""statement_timeline → stable_statements: the KG stability rule (docs/semantics.md §1.1–1.2).

A key (s, p, o) is present at τ when some statement with that key and a rank other than
deprecated exists in s's state at τ (several statements count once; a normal/preferred
flip is no change). On each key's presence timeline, absences shorter than the span are
filled first, then presences shorter than the span are dropped; a presence still open at
the end of the ingested history counts as long, and the time before an item exists is not
an absence. Pure function of the table, one SQL pass (gaps and islands).

The rule is per key and depends only on the set of a key's present intervals, so after
a change of the timeline only the keys whose set changed need recomputing: their whole
timelines, their rows replaced, give the table a full rebuild gives (``incremental``).
Which keys changed is read from the Delta log, not from the rows: the data files that
left statement_timeline between the version the last run was built from and now, and
those that came in (``Catalog.files_between``), their present intervals compared; a key
with an interval on one side only is touched. That sees appends, closures (a MERGE
rewrites the file of a closed row) and deletions (a reconciliation that removes an
item's rows) alike, where a revision watermark (``rev_from``/``rev_to`` above the last
run's) misses deletions and any rewrite of old revisions (a replayed page); it reads the
files the ingest's commits wrote since (one day: what that day's MERGEs rewrote, not
the table). With the redirects (``resolve_redirects``), the QIDs whose final target
differs between item_timeline's two versions touch every key with such a subject or
object, under the old targets and the new. The engine writes no change data feed (Sail
0.7) and no deletion vectors; a table with them is rebuilt whole.

What the last run was built from (the two timelines' versions and the settings) is the
stage's state file, written after the table: a run killed between the two finds the old
record and recomputes the same keys again (the replace is idempotent), so the rerun
gives the same table. With no record, changed settings (kg_hours, resolve_redirects),
a version no longer readable (log cleaned up, files vacuumed) or ``stability.rebuild:
full``, the table is rebuilt whole, the reason logged.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from emerge_lib.catalog import Catalog
from emerge_lib.catalog.specs import CatalogError
from emerge_lib.core.config import StabilitySettings

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

log = logging.getLogger(__name__)

OPEN_END = "TIMESTAMP '9999-12-31 00:00:00'"
#: the rows that make their key present (the rule's input: nothing else of a row counts)
PRESENT = "rank <> 'deprecated' AND (valid_to IS NULL OR valid_to > valid_from)"
KEY = ("s", "p", "o")


def stable_statements_sql(source: str, span_seconds: float) -> str:
    """SQL that turns raw statement intervals (the relation ``source``: a table name, or a
    ``{frame}`` argument) into stable presence intervals per key."""
    span = float(span_seconds)
    return f"""
    WITH present AS (
      SELECT s, p, o, valid_from AS f, COALESCE(valid_to, {OPEN_END}) AS t
      FROM {source}
      WHERE {PRESENT}
    ),
    ordered AS (
      SELECT s, p, o, f, t,
             MAX(t) OVER (PARTITION BY s, p, o ORDER BY f, t
                          ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS prev_end
      FROM present
    ),
    flagged AS (
      SELECT s, p, o, f, t,
             CASE WHEN prev_end IS NULL
                    OR unix_timestamp(f) - unix_timestamp(prev_end) >= {span}
                  THEN 1 ELSE 0 END AS starts_island
      FROM ordered
    ),
    islands AS (
      SELECT s, p, o, f, t,
             SUM(starts_island) OVER (PARTITION BY s, p, o ORDER BY f, t
                                      ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS island
      FROM flagged
    ),
    merged AS (
      SELECT s, p, o, MIN(f) AS valid_from, MAX(t) AS t_end
      FROM islands GROUP BY s, p, o, island
    )
    SELECT s, p, o, valid_from,
           CASE WHEN t_end = {OPEN_END} THEN CAST(NULL AS TIMESTAMP) ELSE t_end END AS valid_to
    FROM merged
    WHERE t_end = {OPEN_END} OR unix_timestamp(t_end) - unix_timestamp(valid_from) >= {span}
    """


@dataclass(frozen=True)
class StabilityRun:
    """What a run did: the table's rows after it, and either the keys it recomputed (of
    the stable rows it kept) or why it rebuilt the whole table."""

    rows: int
    touched: int | None = None  # keys recomputed; None: the whole table was rebuilt
    full_reason: str = ""
    deleted: int = 0
    inserted: int = 0

#: what a state records of the timelines, not of the settings: their versions and ids
_TABLES = ("statement_timeline", "item_timeline", "statement_timeline_id", "item_timeline_id")


def built_from(catalog: Catalog, settings: StabilitySettings,
               resolve_redirects: bool) -> dict[str, Any]:
    """What a run now computes from (the state it records): the timelines' Delta
    versions and the settings that change the rows."""
    state: dict[str, Any] = {"statement_timeline": catalog.version("statement_timeline"),
                             "statement_timeline_id": catalog.table_id("statement_timeline"),
                             "kg_hours": settings.kg_hours}
    if resolve_redirects:  # (a state written before the setting existed reads as off)
        state |= {"item_timeline": catalog.version("item_timeline"), "resolve_redirects": True,
                  "item_timeline_id": catalog.table_id("item_timeline")}
    return state


def build_stable_statements(catalog: Catalog, settings: StabilitySettings,
                            resolve_redirects: bool, *, state: dict[str, Any],
                            last: dict[str, Any] | None) -> StabilityRun:
    """Bring stable_statements to ``state`` (``built_from``; its versions are read, so
    writers going on meanwhile change nothing of it): only the keys touched since ``last``
    (the state the table was built from) when that is usable, else the whole table from
    statement_timeline (its QIDs read through the final redirects with
    ``resolve_redirects``: ``transform.redirects``)."""
    started = time.monotonic()
    reason = _why_full(catalog, settings, state, last)
    if not reason:
        assert last is not None
        try:
            run = incremental(catalog, settings, resolve_redirects, state, last)
        except CatalogError as exc:
            reason = str(exc)
        else:
            log.info("stability: %d keys touched since timeline version %s (of %d stable "
                     "rows: %d deleted, %d inserted), recomputed in %.1f s", run.touched,
                     last["statement_timeline"], run.rows, run.deleted, run.inserted,
                     time.monotonic() - started)
            return run
    log.info("stability: full rebuild: %s", reason)
    from emerge_lib.transform.redirects import statements

    df = catalog.session().sql(stable_statements_sql("{raw}", settings.kg_hours * 3600),
                               raw=statements(catalog, resolve_redirects,
                                              version=state["statement_timeline"],
                                              items_version=state.get("item_timeline")))
    catalog.overwrite("stable_statements", df)
    return StabilityRun(rows=catalog.row_count("stable_statements"), full_reason=reason)


def _why_full(catalog: Catalog, settings: StabilitySettings, state: dict[str, Any],
              last: dict[str, Any] | None) -> str:
    """Why this run rebuilds the whole table ("": it need not)."""
    if settings.rebuild == "full":
        return "stability.rebuild is full"
    if not catalog.exists("stable_statements"):
        return "no stable_statements yet"
    if not last or last.get("statement_timeline") is None:
        return "no record of what stable_statements was built from"
    changed = sorted(k for k in {*state, *last} - set(_TABLES) if state.get(k) != last.get(k))
    if changed:
        return f"settings changed since the last run ({', '.join(changed)})"
    if state["statement_timeline"] is None:
        return "no statement_timeline"
    for table in ("statement_timeline", "item_timeline"):
        if table in state and state[table] is None and last.get(table) is not None:
            return f"{table} is gone since the last run"
        if table in state and state[table] is not None and (
                last.get(table) is None or last.get(f"{table}_id") != state[f"{table}_id"]):
            return (f"{table} was made anew since the last run" if last.get(f"{table}_id")
                    else f"no record of the {table} it was built from")
    return ""


def incremental(catalog: Catalog, settings: StabilitySettings, resolve_redirects: bool,
                state: dict[str, Any], last: dict[str, Any]) -> StabilityRun:
    """Recompute the keys touched between ``last`` and ``state`` and replace their rows
    (raises CatalogError when the change cannot be read: the caller rebuilds whole)."""
    from emerge_lib.transform.redirects import final_targets

    spark = catalog.session()
    version, items_version = state["statement_timeline"], state.get("item_timeline")
    raw = catalog.read("statement_timeline", version)
    keys = _changed_keys(catalog, last["statement_timeline"], version)
    targets = old_targets = None
    if resolve_redirects:
        targets = final_targets(catalog, version=items_version)
        if last.get("item_timeline") != items_version:
            assert items_version is not None  # (_why_full: a table gone is rebuilt whole)
            # (its old version still readable, or a CatalogError: rebuilt whole)
            catalog.files_between("item_timeline", last["item_timeline"], items_version)
            old_targets = final_targets(catalog, version=last["item_timeline"])
            keys += _redirected_keys(catalog, raw, targets, old_targets)
    raw_keys = catalog.materialize(_union(keys).distinct()) if keys else None
    touched = None if raw_keys is None else catalog.materialize(
        _resolved(catalog, raw_keys, [t for t in (targets, old_targets) if t is not None]))
    count = 0 if touched is None else touched.count()
    if not count:
        catalog.clean_scratch()
        return StabilityRun(rows=catalog.row_count("stable_statements"), touched=0)
    assert touched is not None
    rows = raw if targets is None else _resolve(catalog, _subjects_of(catalog, raw, touched,
                                                                       targets), targets)
    subset = spark.sql("SELECT r.* FROM {rows} r LEFT SEMI JOIN {touched} k "
                       "ON r.s = k.s AND r.p = k.p AND r.o = k.o", rows=rows, touched=touched)
    new = spark.sql(stable_statements_sql("{raw}", settings.kg_hours * 3600), raw=subset)
    done = catalog.replace_keys("stable_statements", new, touched, KEY)
    return StabilityRun(rows=catalog.row_count("stable_statements"), touched=count,
                        deleted=done.deleted, inserted=done.inserted)


def _changed_keys(catalog: Catalog, since: int, until: int) -> list[DataFrame]:
    """The raw keys of the present intervals that statement_timeline's files lost or
    gained between the two versions (an interval on one side only)."""
    if since == until:
        return []
    files = catalog.files_between("statement_timeline", since, until)
    columns = ["s", "p", "o", "rank", "valid_from", "valid_to"]
    sides = [catalog.read_files("statement_timeline", paths, columns).where(PRESENT)
             .selectExpr("s", "p", "o", "valid_from", "valid_to", f"{side} AS side")
             for paths, side in ((files.removed, -1), (files.added, 1)) if paths]
    if not sides:
        return []
    return [catalog.session().sql(
        "SELECT DISTINCT s, p, o FROM (SELECT s, p, o FROM {both} "
        "GROUP BY s, p, o, valid_from, valid_to HAVING MIN(side) = MAX(side))",
        both=_union(sides))]


def _redirected_keys(catalog: Catalog, raw: DataFrame, targets: DataFrame,
                     old_targets: DataFrame) -> list[DataFrame]:
    """The raw keys with a subject or object whose final target differs between the
    redirects' two versions (a new merge, an undone one)."""
    spark = catalog.session()
    moved = catalog.materialize(spark.sql(
        "SELECT COALESCE(n.qid, o.qid) AS qid FROM {new} n FULL OUTER JOIN {old} o "
        "ON n.qid = o.qid WHERE NOT (n.target <=> o.target)", new=targets, old=old_targets))
    return [spark.sql(f"SELECT r.s, r.p, r.o FROM {{raw}} r LEFT SEMI JOIN {{moved}} m "
                      f"ON m.qid = r.{side} WHERE {PRESENT}", raw=raw, moved=moved)
            for side in ("s", "o")]


def _subjects_of(catalog: Catalog, raw: DataFrame, touched: DataFrame,
                 targets: DataFrame) -> DataFrame:
    """The raw rows whose subject is, or redirects to, a touched key's subject (before
    they are resolved: the other rows cannot become a touched key's)."""
    return catalog.session().sql(
        "WITH k AS (SELECT DISTINCT s FROM {touched}), "
        "q AS (SELECT s AS qid FROM k UNION SELECT t.qid FROM {targets} t JOIN k "
        "ON t.target = k.s) "
        "SELECT r.* FROM {raw} r LEFT SEMI JOIN q ON q.qid = r.s",
        raw=raw, touched=touched, targets=targets)


def _resolved(catalog: Catalog, raw_keys: DataFrame, mappings: list[DataFrame]) -> DataFrame:
    """The keys ``raw_keys`` are under each of the redirect ``mappings`` (the raw keys
    themselves without any)."""
    if not mappings:
        return raw_keys
    return _union([_resolve(catalog, raw_keys, m) for m in mappings]).distinct()


def _resolve(catalog: Catalog, rows: DataFrame, targets: DataFrame) -> DataFrame:
    """``rows`` with s and o read through ``targets`` (as ``redirects.statements``)."""
    cols = ", ".join(f"r.`{c}`" for c in rows.columns if c not in ("s", "o"))
    return catalog.session().sql(
        f"SELECT COALESCE(rs.target, r.s) AS s, COALESCE(ro.target, r.o) AS o, {cols} "
        "FROM {rows} r LEFT JOIN {targets} rs ON rs.qid = r.s "
        "LEFT JOIN {targets} ro ON ro.qid = r.o", rows=rows, targets=targets)


def _union(frames: list[DataFrame]) -> DataFrame:
    out = frames[0]
    for frame in frames[1:]:
        out = out.unionByName(frame)
    return out
