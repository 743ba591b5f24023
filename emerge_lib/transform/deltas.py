"""Timelines → delta_triples: the cumulative KG delta of each window (docs/semantics.md
§1.1–1.2).

For snapshot t and window k (τ_k = t + k·window):

- added: in T_{τ_k} and not in T_t; op EE when an end is emerging, else E. Emerging
  (``deltas.emerging``): the item was created at or after t (``created_after_snapshot``,
  the released data), or it is not in V_t (``not_in_snapshot``, docs/semantics.md §1.1).
- deprecated (D): in T_t, s and o still in V_{τ_k} (a key that leaves T because an entity
  left V is neither D nor X), and either a statement for the key in s's state at τ_k
  carries an end qualifier dated in (t, τ_k] (signal ``qualifier:Pxxx``), or the key is
  gone from T_{τ_k} because it became deprecated (``rank``) or was removed (``removed``).
  One signal per triple, preferring qualifier, then rank, then removed. With
  ``deltas.permanent_removal_years`` (the authors' R2a: 15), a ``rank`` or ``removed`` D
  counts only when the key is not present again from a start inside (τ_k, τ_k + span);
  otherwise it is neither D nor X (it is not in T_{τ_k}).
- emerging ends and ``head/tail_created_at``: an item's creation is its first revision,
  or with ``deltas.creation_over_redirects`` (R4) the earliest over it and the items
  that redirect to it at the end of the ingested history.
- with ``deltas.deprecate_window_additions`` (the released data), an added triple whose
  statement at τ_k carries an end qualifier dated in (t, τ_k] is D too (a second row,
  signal ``qualifier:Pxxx``, the addition's emerging flags): a two-operation triple.

Start qualifiers (``qualifiers.start``) dated in (t, τ_k] are reported on additions, and
with ``deltas.removal_start_qualifier`` (their ``qualifier_info``) on a ``removed`` or
``rank`` D: the earliest on the key's statements as they held at t.

X (in T_t and in T_{τ_k}, not D) is not stored here: it is the KG itself, and the
alignment stage asks for it only for mentioned pairs.

Only candidate keys are carried through the windows: a key whose stable presence has an
edge inside (t, τ_n], whose subject or object changes state inside it (and so may enter or
leave V), or that carries an end qualifier dated inside it. Every other key of T_t is
unchanged at every τ_k, so it can be neither added nor deprecated.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from emerge_lib.catalog import Catalog
from emerge_lib.catalog.sql import (
    in_v,
    literal,
    literal_list,
    sql_timestamp,
    valid_at,
    valid_at_expr,
    windows_sql,
)
from emerge_lib.core.config import DeltaSettings, QualifierSettings
from emerge_lib.core.schedule import SnapshotPlan
from emerge_lib.transform.redirects import items as redirect_items
from emerge_lib.transform.redirects import statements
from emerge_lib.transform.snapshot import items_of

if TYPE_CHECKING:
    from pyspark.sql import DataFrame


def build_deltas(catalog: Catalog, plan: SnapshotPlan, qualifiers: QualifierSettings,
                 settings: DeltaSettings) -> dict[int, int]:
    """Write delta_triples for every window of one snapshot (one query for all windows);
    returns rows per window."""
    spark = catalog.session()
    snapshot = plan.t
    t = sql_timestamp(snapshot)
    permanence = settings.permanent_removal_years
    w = windows_sql(plan, readd_until=permanence * 365 * 86400)  # theirs: 15 × 365 days
    end_pids, start_pids = literal_list(qualifiers.end), literal_list(qualifiers.start)
    if settings.emerging == "created_after_snapshot":  # created at or after t
        emerging_head, emerging_tail = (f"COALESCE(cs.created_at >= {t}, false)",
                                        f"COALESCE(co.created_at >= {t}, false)")
    else:  # not in V_t
        emerging_head, emerging_tail = "vs.qid IS NULL", "vo.qid IS NULL"
    window_additions = "true" if settings.deprecate_window_additions else "false"
    tables = _candidate_tables(catalog, plan, end_pids,
                               over_redirects=settings.creation_over_redirects,
                               resolve=settings.resolve_redirects)
    df = spark.sql(f"""
        WITH w AS {w},
        t_t AS (  -- T_t on the candidate keys (snapshot.triples_at over them)
          SELECT t.s, t.p, t.o
          FROM (SELECT DISTINCT k.s, k.p, k.o FROM {{stable}} k
                WHERE {valid_at('k', snapshot)}) t
          JOIN {{v_t}} vs ON vs.qid = t.s JOIN {{v_t}} vo ON vo.qid = t.o
        ),
        v_k AS (  -- V at every window end
          SELECT w.window, i.qid FROM {{items}} i JOIN w ON {valid_at_expr('i', 'w.tau')}
          WHERE {in_v('i')}
        ),
        t_k AS (  -- T at every window end, on the candidate keys
          SELECT DISTINCT w.window, k.s, k.p, k.o
          FROM {{stable}} k
          JOIN w ON {valid_at_expr('k', 'w.tau')}
          JOIN v_k vs ON vs.window = w.window AND vs.qid = k.s
          JOIN v_k vo ON vo.window = w.window AND vo.qid = k.o
        ),
        raw_k AS (  -- the raw statements of s's state at every window end (any rank)
          SELECT w.window, w.tau, r.s, r.p, r.o, r.rank, r.qualifiers
          FROM {{raw}} r JOIN w ON {valid_at_expr('r', 'w.tau')}
        ),
        quals AS (
          SELECT window, tau, s, p, o, rank, q.pid AS qualifier_pid, q.instant AS qualifier_at
          FROM (SELECT window, tau, s, p, o, rank, explode(qualifiers) AS q FROM raw_k)
        ),
        end_q AS (
          SELECT window, s, p, o, MIN(qualifier_at) AS qualifier_at,
                 MIN_BY(qualifier_pid, qualifier_at) AS qualifier_pid
          FROM quals
          WHERE qualifier_pid IN ({end_pids})
            AND qualifier_at > {t} AND qualifier_at <= tau
          GROUP BY window, s, p, o
        ),
        start_q AS (  -- start qualifiers dated inside the (cumulative) window
          SELECT window, s, p, o, MIN(qualifier_at) AS qualifier_at,
                 MIN_BY(qualifier_pid, qualifier_at) AS qualifier_pid
          FROM quals
          WHERE rank <> 'deprecated' AND qualifier_pid IN ({start_pids})
            AND qualifier_at > {t} AND qualifier_at <= tau
          GROUP BY window, s, p, o
        ),
        added AS (
          SELECT k.window, k.s, k.p, k.o FROM t_k k
          LEFT ANTI JOIN t_t t ON t.s = k.s AND t.p = k.p AND t.o = k.o
        ),
        added_rows AS (
          SELECT a.window, a.s, a.p, a.o,
                 CASE WHEN {emerging_head} OR {emerging_tail} THEN 'EE' ELSE 'E' END AS op,
                 CAST(NULL AS STRING) AS signal,
                 {emerging_head} AS emerging_head, {emerging_tail} AS emerging_tail,
                 q.qualifier_pid, q.qualifier_at, false AS from_t
          FROM added a
          LEFT JOIN {{v_t}} vs ON vs.qid = a.s
          LEFT JOIN {{v_t}} vo ON vo.qid = a.o
          LEFT JOIN {{created}} cs ON cs.qid = a.s
          LEFT JOIN {{created}} co ON co.qid = a.o
          LEFT JOIN start_q q ON q.window = a.window AND q.s = a.s AND q.p = a.p AND q.o = a.o
        ),
        window_d_rows AS (  -- an addition ended inside the window: D as well
          SELECT a.window, a.s, a.p, a.o, 'D' AS op,
                 concat('qualifier:', q.qualifier_pid) AS signal,
                 a.emerging_head, a.emerging_tail, q.qualifier_pid, q.qualifier_at,
                 false AS from_t
          FROM added_rows a
          JOIN end_q q ON q.window = a.window AND q.s = a.s AND q.p = a.p AND q.o = a.o
          WHERE {window_additions}
        ),
        old_in_v AS (  -- keys of T_t whose ends are both still in V at τ_k
          SELECT vs.window, t.s, t.p, t.o FROM t_t t
          JOIN v_k vs ON vs.qid = t.s
          JOIN v_k vo ON vo.window = vs.window AND vo.qid = t.o
        ),
        gone AS (
          SELECT o.window, o.s, o.p, o.o FROM old_in_v o
          LEFT ANTI JOIN t_k k ON k.window = o.window AND k.s = o.s AND k.p = o.p AND k.o = o.o
        ),
        deprecated_rank AS (
          SELECT DISTINCT window, s, p, o FROM raw_k WHERE rank = 'deprecated'
        ),
        start_t AS (  -- a removal's start qualifier: dated inside the window, on the
                      -- key's statements as they held at t (their qualifier_info)
          SELECT w.window, x.s, x.p, x.o, MIN(x.instant) AS qualifier_at,
                 MIN_BY(x.pid, x.instant) AS qualifier_pid
          FROM (SELECT s, p, o, q.pid AS pid, q.instant AS instant FROM (
                  SELECT r.s, r.p, r.o, explode(r.qualifiers) AS q FROM {{raw}} r
                  WHERE {valid_at('r', snapshot)} AND r.rank <> 'deprecated')) x
          JOIN w ON x.instant > {t} AND x.instant <= w.tau
          WHERE {literal(settings.removal_start_qualifier)} AND x.pid IN ({start_pids})
          GROUP BY w.window, x.s, x.p, x.o
        ),
        readded AS (  -- R2a: gone keys present again within the permanence span after τ_k
          SELECT DISTINCT g.window, g.s, g.p, g.o FROM gone g JOIN w ON w.window = g.window
          JOIN {{stable}} st ON st.s = g.s AND st.p = g.p AND st.o = g.o
          WHERE st.valid_from > w.tau AND st.valid_from < w.readd_until
        ),
        d_rows AS (
          SELECT o.window, o.s, o.p, o.o, 'D' AS op,
                 CASE WHEN q.s IS NOT NULL THEN concat('qualifier:', q.qualifier_pid)
                      WHEN r.s IS NOT NULL THEN 'rank'
                      ELSE 'removed' END AS signal,
                 false AS emerging_head, false AS emerging_tail,
                 COALESCE(q.qualifier_pid, sq.qualifier_pid) AS qualifier_pid,
                 CASE WHEN q.s IS NOT NULL THEN q.qualifier_at ELSE sq.qualifier_at END
                   AS qualifier_at, true AS from_t
          FROM old_in_v o
          LEFT JOIN end_q q ON q.window = o.window AND q.s = o.s AND q.p = o.p AND q.o = o.o
          LEFT JOIN start_t sq
            ON sq.window = o.window AND sq.s = o.s AND sq.p = o.p AND sq.o = o.o
          LEFT JOIN gone g ON g.window = o.window AND g.s = o.s AND g.p = o.p AND g.o = o.o
          LEFT JOIN deprecated_rank r
            ON r.window = o.window AND r.s = o.s AND r.p = o.p AND r.o = o.o
          LEFT JOIN readded a ON a.window = o.window AND a.s = o.s AND a.p = o.p AND a.o = o.o
          WHERE q.s IS NOT NULL OR (g.s IS NOT NULL AND a.s IS NULL)
        ),
        all_rows AS (SELECT * FROM added_rows UNION ALL SELECT * FROM d_rows
                     UNION ALL SELECT * FROM window_d_rows),
        lifespans AS (  -- the stable presence interval that makes the triple what it is
          SELECT x.window, x.s, x.p, x.o, x.op, st.valid_from, st.valid_to
          FROM all_rows x JOIN w ON w.window = x.window
          JOIN {{stable}} st ON st.s = x.s AND st.p = x.p AND st.o = x.o
          WHERE (x.from_t AND {valid_at('st', snapshot)})
             OR (NOT x.from_t AND {valid_at_expr('st', 'w.tau')})
        )
        SELECT {literal(plan.key)} AS snapshot, CAST(x.window AS INT) AS window,
               x.s, x.p, x.o, x.op, x.signal, x.emerging_head, x.emerging_tail,
               hs.created_at AS head_created_at, ho.created_at AS tail_created_at,
               l.valid_from AS lifespan_from, l.valid_to AS lifespan_to,
               x.qualifier_pid, x.qualifier_at
        FROM all_rows x
        LEFT JOIN lifespans l
          ON l.window = x.window AND l.s = x.s AND l.p = x.p AND l.o = x.o AND l.op = x.op
        LEFT JOIN {{created}} hs ON hs.qid = x.s
        LEFT JOIN {{created}} ho ON ho.qid = x.o
    """, **tables)
    return catalog.replace_partitions(
        "delta_triples", df, {"snapshot": plan.key}, "window",
        [w.k for w in plan.windows], clear_others=True,
    )


def _candidate_tables(catalog: Catalog, plan: SnapshotPlan, end_pids: str, *,
                      over_redirects: bool, resolve: bool) -> dict[str, DataFrame]:
    """The inputs of the delta query cut down to the candidate keys, each computed once
    (Sail does not cache, and the query reads every input many times): the stable
    intervals and raw statements of those keys, the item states and creation times of
    their ends, and V_t over those ends. Every later join of the query is on a
    candidate key or on one of its ends, so the cut changes no row.

    Candidates are the keys with a stable interval starting or ending inside (t, τ_n],
    the keys whose subject or object changes state inside it (it may enter or leave V),
    and the keys of raw statements carrying an end qualifier dated inside it."""
    spark = catalog.session()
    t, horizon = sql_timestamp(plan.t), sql_timestamp(plan.horizon)
    raw, stable = statements(catalog, resolve), catalog.read("stable_statements")
    items = redirect_items(catalog, resolve)
    cand = catalog.materialize(spark.sql(f"""
        WITH changed_items AS (  -- items whose state changes inside the windows
          SELECT DISTINCT qid FROM {{items}}
          WHERE valid_from > {t} AND valid_from <= {horizon}
        ),
        end_marked AS (  -- statements carrying an end qualifier dated inside the windows
          SELECT DISTINCT s, p, o FROM (
            SELECT s, p, o, explode(qualifiers) AS q FROM {{raw}}
            WHERE valid_to IS NULL OR valid_to > {t}
          ) WHERE q.pid IN ({end_pids})
              AND q.instant > {t} AND q.instant <= {horizon}
        )
        SELECT s, p, o FROM {{stable}}
        WHERE (valid_from > {t} AND valid_from <= {horizon})
           OR (valid_to > {t} AND valid_to <= {horizon})
        UNION SELECT k.s, k.p, k.o FROM {{stable}} k JOIN changed_items c ON c.qid = k.s
        UNION SELECT k.s, k.p, k.o FROM {{stable}} k JOIN changed_items c ON c.qid = k.o
        UNION SELECT s, p, o FROM end_marked
    """, raw=raw, stable=stable, items=items))
    ends = spark.sql("SELECT s AS qid FROM {cand} UNION SELECT o AS qid FROM {cand}", cand=cand)
    on_key = "c.s = x.s AND c.p = x.p AND c.o = x.o"
    stable_c = catalog.materialize(spark.sql(
        f"SELECT x.* FROM {{stable}} x LEFT SEMI JOIN {{cand}} c ON {on_key}",
        stable=stable, cand=cand))
    raw_c = catalog.materialize(spark.sql(
        f"SELECT x.* FROM {{raw}} x LEFT SEMI JOIN {{cand}} c ON {on_key}", raw=raw, cand=cand))
    items_c, created = items_of(catalog, ends, over_redirects=over_redirects, resolve=resolve)
    v_t = spark.sql(
        "SELECT i.qid, i.enwiki_title, i.label_en, i.description_en, i.created_at "
        f"FROM {{items}} i WHERE {valid_at('i', plan.t)} AND {in_v('i')}", items=items_c)
    return {"stable": stable_c, "raw": raw_c, "items": items_c, "created": created,
            "v_t": v_t}
