"""Timelines → delta_triples: the cumulative KG delta of each window (DESIGN.md §1.1–1.2).

For snapshot t and window k (τ_k = t + k·window):

- added: in T_{τ_k} and not in T_t; op E when s and o are both in V_t, else EE (the
  entity not in V_t is emerging).
- deprecated (D): in T_t, s and o still in V_{τ_k} (a key that leaves T because an entity
  left V is neither D nor X), and either a statement for the key in s's state at τ_k
  carries an end qualifier dated in (t, τ_k] (signal ``qualifier:Pxxx``), or the key is
  gone from T_{τ_k} because it became deprecated (``rank``) or was removed (``removed``).
  One signal per triple, preferring qualifier, then rank, then removed.

X (in T_t and in T_{τ_k}, not D) is not stored here: it is the KG itself, and the
alignment stage asks for it only for mentioned pairs.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import datetime

from emerge_lib.schedule import iso, windows
from emerge_lib.stages.snapshot import _at, entities_at, triples_at, valid_at
from emerge_lib.tables import Catalog

log = logging.getLogger(__name__)


def _pid_list(pids: Sequence[str]) -> str:
    return ", ".join(f"'{p}'" for p in pids) or "''"


def build_deltas(
    catalog: Catalog,
    snapshot: datetime,
    window_count: int = 5,
    window_days: float = 7,
    end_qualifiers: Sequence[str] = ("P582",),
    start_qualifiers: Sequence[str] = ("P580",),
) -> dict[int, int]:
    """Write delta_triples for every window of one snapshot; returns rows per window."""
    spark = catalog._spark()
    t_key = iso(snapshot)
    catalog.read("statement_timeline").createOrReplaceTempView("emerge_raw")
    catalog.read("stable_statements").createOrReplaceTempView("emerge_stable")
    catalog.read("item_timeline").createOrReplaceTempView("emerge_items")
    entities_at(catalog, snapshot).createOrReplaceTempView("emerge_v_t")
    triples_at(catalog, snapshot).createOrReplaceTempView("emerge_t_t")
    counts: dict[int, int] = {}
    for w in windows(snapshot, window_count, window_days):
        tau = w.end
        entities_at(catalog, tau).createOrReplaceTempView("emerge_v_k")
        triples_at(catalog, tau).createOrReplaceTempView("emerge_t_k")
        # the raw statements of s's state at τ_k (any rank), with their qualifiers
        spark.sql(
            f"SELECT r.s, r.p, r.o, r.rank, r.qualifiers FROM emerge_raw r WHERE {valid_at('r', tau)}"
        ).createOrReplaceTempView("emerge_raw_k")
        spark.sql(f"""
            SELECT s, p, o, q.pid AS qualifier_pid, q.instant AS qualifier_at
            FROM (SELECT s, p, o, explode(qualifiers) AS q FROM emerge_raw_k)
            WHERE q.pid IN ({_pid_list(end_qualifiers)})
              AND q.instant > {_at(snapshot)} AND q.instant <= {_at(tau)}
        """).createOrReplaceTempView("emerge_end_q")
        spark.sql(f"""
            SELECT s, p, o, q.pid AS qualifier_pid, q.instant AS qualifier_at
            FROM (SELECT s, p, o, explode(qualifiers) AS q FROM emerge_raw_k
                  WHERE rank <> 'deprecated')
            WHERE q.pid IN ({_pid_list(start_qualifiers)}) AND q.instant IS NOT NULL
        """).createOrReplaceTempView("emerge_start_q")
        df = spark.sql(f"""
            WITH added AS (
              SELECT k.s, k.p, k.o FROM emerge_t_k k
              LEFT ANTI JOIN emerge_t_t t ON t.s = k.s AND t.p = k.p AND t.o = k.o
            ),
            added_ops AS (
              SELECT a.s, a.p, a.o,
                     vs.qid IS NULL AS emerging_head, vo.qid IS NULL AS emerging_tail
              FROM added a
              LEFT JOIN emerge_v_t vs ON vs.qid = a.s
              LEFT JOIN emerge_v_t vo ON vo.qid = a.o
            ),
            start_q AS (
              SELECT s, p, o, MIN(qualifier_pid) AS qualifier_pid, MIN(qualifier_at) AS qualifier_at
              FROM emerge_start_q GROUP BY s, p, o
            ),
            added_rows AS (
              SELECT a.s, a.p, a.o,
                     CASE WHEN a.emerging_head OR a.emerging_tail THEN 'EE' ELSE 'E' END AS op,
                     CAST(NULL AS STRING) AS signal, a.emerging_head, a.emerging_tail,
                     q.qualifier_pid, q.qualifier_at
              FROM added_ops a LEFT JOIN start_q q ON q.s = a.s AND q.p = a.p AND q.o = a.o
            ),
            old_in_v AS (  -- keys of T_t whose ends are both still in V at τ_k
              SELECT t.s, t.p, t.o FROM emerge_t_t t
              JOIN emerge_v_k vs ON vs.qid = t.s JOIN emerge_v_k vo ON vo.qid = t.o
            ),
            end_q AS (
              SELECT s, p, o, MIN(qualifier_at) AS qualifier_at,
                     MIN_BY(qualifier_pid, qualifier_at) AS qualifier_pid
              FROM emerge_end_q GROUP BY s, p, o
            ),
            gone AS (
              SELECT o.s, o.p, o.o FROM old_in_v o
              LEFT ANTI JOIN emerge_t_k k ON k.s = o.s AND k.p = o.p AND k.o = o.o
            ),
            deprecated_rank AS (
              SELECT DISTINCT s, p, o FROM emerge_raw_k WHERE rank = 'deprecated'
            ),
            d_rows AS (
              SELECT o.s, o.p, o.o, 'D' AS op,
                     CASE WHEN q.s IS NOT NULL THEN concat('qualifier:', q.qualifier_pid)
                          WHEN g.s IS NOT NULL AND r.s IS NOT NULL THEN 'rank'
                          ELSE 'removed' END AS signal,
                     false AS emerging_head, false AS emerging_tail,
                     q.qualifier_pid, q.qualifier_at
              FROM old_in_v o
              LEFT JOIN end_q q ON q.s = o.s AND q.p = o.p AND q.o = o.o
              LEFT JOIN gone g ON g.s = o.s AND g.p = o.p AND g.o = o.o
              LEFT JOIN deprecated_rank r ON r.s = o.s AND r.p = o.p AND r.o = o.o
              WHERE q.s IS NOT NULL OR g.s IS NOT NULL
            ),
            rows AS (SELECT * FROM added_rows UNION ALL SELECT * FROM d_rows),
            lifespans AS (  -- the stable presence interval that makes the triple what it is
              SELECT x.s, x.p, x.o, x.op, st.valid_from, st.valid_to
              FROM rows x JOIN emerge_stable st ON st.s = x.s AND st.p = x.p AND st.o = x.o
              WHERE (x.op = 'D' AND {valid_at('st', snapshot)})
                 OR (x.op <> 'D' AND {valid_at('st', tau)})
            )
            SELECT '{t_key}' AS snapshot, CAST({w.k} AS INT) AS window,
                   x.s, x.p, x.o, x.op, x.signal, x.emerging_head, x.emerging_tail,
                   hs.created_at AS head_created_at, ho.created_at AS tail_created_at,
                   l.valid_from AS lifespan_from, l.valid_to AS lifespan_to,
                   x.qualifier_pid, x.qualifier_at
            FROM rows x
            LEFT JOIN lifespans l ON l.s = x.s AND l.p = x.p AND l.o = x.o AND l.op = x.op
            LEFT JOIN (SELECT qid, MIN(created_at) AS created_at FROM emerge_items GROUP BY qid) hs
              ON hs.qid = x.s
            LEFT JOIN (SELECT qid, MIN(created_at) AS created_at FROM emerge_items GROUP BY qid) ho
              ON ho.qid = x.o
        """)
        counts[w.k] = catalog.replace_partition(
            "delta_triples", df, {"snapshot": t_key, "window": w.k}
        )
    log.info("delta_triples %s: %s rows per window", t_key, counts)
    return counts
