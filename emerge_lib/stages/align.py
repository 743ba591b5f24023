"""passages + delta_triples + kg_triples → instances (DESIGN.md §1.1 Alignment).

For a passage of window k with mentioned set M (resolved QIDs, the article's own item
included when configured):

- X, E, EE, D: s and o both in M. E/EE/D come from the window's delta; X is a triple of
  T_t still in T_{τ_k} and not D.
- EE-KG: an added triple with exactly one of s, o in M, that one emerging (not in V_t),
  the other in V_t and not mentioned.

It joins pairs of mentioned entities (and single mentions, for EE-KG) to the delta and to
T_t; it never forms passages × KG.
"""

from __future__ import annotations

import logging
from datetime import datetime

from emerge_lib.schedule import as_utc, iso, windows
from emerge_lib.stages.snapshot import entities_at, triples_at, valid_at
from emerge_lib.tables import Catalog

log = logging.getLogger(__name__)


def build_instances(
    catalog: Catalog,
    snapshot: datetime | str,
    window_count: int = 5,
    window_days: float = 7,
    article_entity_counts: bool = True,
) -> dict[int, int]:
    """Write the instances partitions (t, k) of one snapshot; returns rows per window."""
    spark = catalog._spark()
    t = as_utc(snapshot)
    key = iso(t)
    catalog.read("passages").createOrReplaceTempView("emerge_passages")
    catalog.read("delta_triples").createOrReplaceTempView("emerge_delta")
    catalog.read("kg_triples").createOrReplaceTempView("emerge_kg")
    catalog.read("stable_statements").createOrReplaceTempView("emerge_stable")
    catalog.read("item_timeline").createOrReplaceTempView("emerge_items")
    catalog.read("property_timeline").createOrReplaceTempView("emerge_props")
    entities_at(catalog, t).createOrReplaceTempView("emerge_v_t")
    own = "page_qid" if article_entity_counts else "CAST(NULL AS STRING)"
    counts: dict[int, int] = {}
    for w in windows(t, window_count, window_days):
        tau = w.end
        triples_at(catalog, tau).createOrReplaceTempView("emerge_t_k")
        spark.sql(f"""
            SELECT passage_id, qid FROM (
              SELECT passage_id, m.qid AS qid
              FROM (SELECT passage_id, explode(mentions) AS m FROM emerge_passages
                    WHERE snapshot = '{key}' AND window = {w.k})
              UNION
              SELECT passage_id, {own} AS qid FROM emerge_passages
              WHERE snapshot = '{key}' AND window = {w.k}
            ) WHERE qid IS NOT NULL
        """).createOrReplaceTempView("emerge_m")
        spark.sql(f"""
            SELECT * FROM emerge_delta WHERE snapshot = '{key}' AND window = {w.k}
        """).createOrReplaceTempView("emerge_dk")
        df = spark.sql(f"""
            WITH pairs AS (
              SELECT a.passage_id, a.qid AS s, b.qid AS o
              FROM emerge_m a JOIN emerge_m b ON a.passage_id = b.passage_id AND a.qid <> b.qid
            ),
            delta_pairs AS (  -- E, EE and D between two mentioned entities
              SELECT pr.passage_id, d.op, d.s, d.p, d.o, d.signal, d.emerging_head,
                     d.emerging_tail, d.head_created_at, d.tail_created_at, d.lifespan_from,
                     d.lifespan_to, d.qualifier_pid, d.qualifier_at
              FROM pairs pr JOIN emerge_dk d ON d.s = pr.s AND d.o = pr.o
            ),
            x_pairs AS (  -- in T_t and T_τk, not D
              SELECT pr.passage_id, 'X' AS op, kg.s, kg.p, kg.o
              FROM pairs pr
              JOIN emerge_kg kg ON kg.snapshot = '{key}' AND kg.s = pr.s AND kg.o = pr.o
              LEFT SEMI JOIN emerge_t_k k ON k.s = kg.s AND k.p = kg.p AND k.o = kg.o
              LEFT ANTI JOIN emerge_dk d
                ON d.op = 'D' AND d.s = kg.s AND d.p = kg.p AND d.o = kg.o
            ),
            x_rows AS (
              SELECT x.passage_id, x.op, x.s, x.p, x.o, CAST(NULL AS STRING) AS signal,
                     false AS emerging_head, false AS emerging_tail,
                     hs.created_at AS head_created_at, ho.created_at AS tail_created_at,
                     st.valid_from AS lifespan_from, st.valid_to AS lifespan_to,
                     CAST(NULL AS STRING) AS qualifier_pid,
                     CAST(NULL AS TIMESTAMP) AS qualifier_at
              FROM x_pairs x
              LEFT JOIN emerge_stable st ON st.s = x.s AND st.p = x.p AND st.o = x.o
                   AND {valid_at('st', tau)}
              LEFT JOIN (SELECT qid, MIN(created_at) AS created_at FROM emerge_items
                         GROUP BY qid) hs ON hs.qid = x.s
              LEFT JOIN (SELECT qid, MIN(created_at) AS created_at FROM emerge_items
                         GROUP BY qid) ho ON ho.qid = x.o
            ),
            single AS (  -- EE-KG: one end mentioned and emerging, the other in V_t, unmentioned
              SELECT m.passage_id, 'EE-KG' AS op, d.s, d.p, d.o, d.signal, d.emerging_head,
                     d.emerging_tail, d.head_created_at, d.tail_created_at, d.lifespan_from,
                     d.lifespan_to, d.qualifier_pid, d.qualifier_at
              FROM emerge_m m
              JOIN emerge_dk d ON d.op = 'EE'
                   AND ((d.s = m.qid AND d.emerging_head AND NOT d.emerging_tail)
                     OR (d.o = m.qid AND d.emerging_tail AND NOT d.emerging_head))
              LEFT ANTI JOIN emerge_m other ON other.passage_id = m.passage_id
                   AND other.qid = CASE WHEN d.s = m.qid THEN d.o ELSE d.s END
            ),
            found AS (
              SELECT * FROM delta_pairs UNION ALL SELECT * FROM x_rows
              UNION ALL SELECT * FROM single
            ),
            labels AS (
              SELECT i.qid, i.label_en FROM emerge_items i WHERE {valid_at('i', tau)}
            ),
            props AS (
              SELECT p.pid, p.label_en FROM emerge_props p WHERE {valid_at('p', tau)}
            )
            SELECT '{key}' AS snapshot, CAST({w.k} AS INT) AS window, f.passage_id, f.op,
                   f.s, f.p, f.o, f.signal, ls.label_en AS s_label, lp.label_en AS p_label,
                   lo.label_en AS o_label, f.emerging_head, f.emerging_tail,
                   f.head_created_at, f.tail_created_at, f.lifespan_from, f.lifespan_to,
                   f.qualifier_pid, lq.label_en AS qualifier_label, f.qualifier_at
            FROM found f
            LEFT JOIN labels ls ON ls.qid = f.s
            LEFT JOIN labels lo ON lo.qid = f.o
            LEFT JOIN props lp ON lp.pid = f.p
            LEFT JOIN props lq ON lq.pid = f.qualifier_pid
        """)
        counts[w.k] = catalog.replace_partition(
            "instances", df, {"snapshot": key, "window": w.k}
        )
    log.info("instances %s: %s per window", key, counts)
    return counts
