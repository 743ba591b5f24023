"""statement_timeline → stable_statements: the KG stability rule (docs/semantics.md §1.1–1.2).

A key (s, p, o) is present at τ when some statement with that key and a rank other than
deprecated exists in s's state at τ (several statements count once; a normal/preferred
flip is no change). On each key's presence timeline, absences shorter than the span are
filled first, then presences shorter than the span are dropped; a presence still open at
the end of the ingested history counts as long, and the time before an item exists is not
an absence. Pure function of the table, one SQL pass (gaps and islands).
"""

from __future__ import annotations

import logging

from emerge_lib.catalog import Catalog
from emerge_lib.core.config import StabilitySettings

log = logging.getLogger(__name__)

OPEN_END = "TIMESTAMP '9999-12-31 00:00:00'"


def stable_statements_sql(source: str, span_seconds: float) -> str:
    """SQL that turns raw statement intervals (the relation ``source``: a table name, or a
    ``{frame}`` argument) into stable presence intervals per key."""
    span = float(span_seconds)
    return f"""
    WITH present AS (
      SELECT s, p, o, valid_from AS f, COALESCE(valid_to, {OPEN_END}) AS t
      FROM {source}
      WHERE rank <> 'deprecated' AND (valid_to IS NULL OR valid_to > valid_from)
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


def build_stable_statements(catalog: Catalog, settings: StabilitySettings,
                            resolve_redirects: bool) -> int:
    """Recompute stable_statements from statement_timeline (its QIDs read through the
    final redirects with ``resolve_redirects``: ``transform.redirects``); returns its row
    count."""
    from emerge_lib.transform.redirects import statements

    df = catalog.session().sql(stable_statements_sql("{raw}", settings.kg_hours * 3600),
                               raw=statements(catalog, resolve_redirects))
    catalog.overwrite("stable_statements", df)
    return catalog.row_count("stable_statements")
