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

from emerge_lib.config import PassageSettings
from emerge_lib.schedule import SnapshotPlan
from emerge_lib.stages._sql import created_sql, in_v, literal, valid_at_expr, windows_sql
from emerge_lib.tables import Catalog


def build_instances(catalog: Catalog, plan: SnapshotPlan,
                    settings: PassageSettings) -> dict[int, int]:
    """Write the instances partitions (t, k) of one snapshot; returns rows per window."""
    spark = catalog.session()
    key = literal(plan.key)
    own = "page_qid" if settings.article_entity_counts else "CAST(NULL AS STRING)"
    w = windows_sql(plan)
    df = spark.sql(f"""
        WITH w AS {w},
        m AS (  -- the mentioned set of every passage of the snapshot
          SELECT DISTINCT window, passage_id, qid FROM (
            SELECT window, passage_id, mq.qid AS qid
            FROM (SELECT window, passage_id, explode(mentions) AS mq FROM {{passages}}
                  WHERE snapshot = {key})
            UNION ALL
            SELECT window, passage_id, {own} AS qid FROM {{passages}}
            WHERE snapshot = {key}
          ) WHERE qid IS NOT NULL
        ),
        dk AS (SELECT * FROM {{delta}} WHERE snapshot = {key}),
        created AS ({created_sql()}),
        v_k AS (
          SELECT w.window, i.qid FROM {{items}} i JOIN w ON {valid_at_expr('i', 'w.tau')}
          WHERE {in_v('i')}
        ),
        pairs AS (
          SELECT a.window, a.passage_id, a.qid AS s, b.qid AS o
          FROM m a JOIN m b ON a.window = b.window AND a.passage_id = b.passage_id
                          AND a.qid <> b.qid
        ),
        delta_pairs AS (  -- E, EE and D between two mentioned entities
          SELECT pr.window, pr.passage_id, d.op, d.s, d.p, d.o, d.signal, d.emerging_head,
                 d.emerging_tail, d.head_created_at, d.tail_created_at, d.lifespan_from,
                 d.lifespan_to, d.qualifier_pid, d.qualifier_at
          FROM pairs pr JOIN dk d ON d.window = pr.window AND d.s = pr.s AND d.o = pr.o
        ),
        x_kg AS (  -- T_t triples between mentioned pairs
          SELECT pr.window, pr.passage_id, kg.s, kg.p, kg.o
          FROM pairs pr JOIN {{kg}} kg ON kg.snapshot = {key} AND kg.s = pr.s
                                        AND kg.o = pr.o
        ),
        x_still AS (  -- ... still in T_τk: the key present at τ_k and both ends in V_τk
          SELECT x.* FROM x_kg x JOIN w ON w.window = x.window
          JOIN {{stable}} st ON st.s = x.s AND st.p = x.p AND st.o = x.o
               AND {valid_at_expr('st', 'w.tau')}
          JOIN v_k vs ON vs.window = x.window AND vs.qid = x.s
          JOIN v_k vo ON vo.window = x.window AND vo.qid = x.o
        ),
        x_rows AS (  -- ... and not D
          SELECT x.window, x.passage_id, 'X' AS op, x.s, x.p, x.o,
                 CAST(NULL AS STRING) AS signal, false AS emerging_head, false AS emerging_tail,
                 hs.created_at AS head_created_at, ho.created_at AS tail_created_at,
                 st.valid_from AS lifespan_from, st.valid_to AS lifespan_to,
                 CAST(NULL AS STRING) AS qualifier_pid, CAST(NULL AS TIMESTAMP) AS qualifier_at
          FROM x_still x
          LEFT ANTI JOIN dk d ON d.window = x.window AND d.op = 'D' AND d.s = x.s
                             AND d.p = x.p AND d.o = x.o
          JOIN w ON w.window = x.window
          LEFT JOIN {{stable}} st ON st.s = x.s AND st.p = x.p AND st.o = x.o
               AND {valid_at_expr('st', 'w.tau')}
          LEFT JOIN created hs ON hs.qid = x.s
          LEFT JOIN created ho ON ho.qid = x.o
        ),
        single AS (  -- EE-KG: one end mentioned and emerging, the other in V_t, unmentioned
          SELECT m.window, m.passage_id, 'EE-KG' AS op, d.s, d.p, d.o, d.signal,
                 d.emerging_head, d.emerging_tail, d.head_created_at, d.tail_created_at,
                 d.lifespan_from, d.lifespan_to, d.qualifier_pid, d.qualifier_at
          FROM m JOIN dk d ON d.window = m.window AND d.op = 'EE'
               AND ((d.s = m.qid AND d.emerging_head AND NOT d.emerging_tail)
                 OR (d.o = m.qid AND d.emerging_tail AND NOT d.emerging_head))
          LEFT ANTI JOIN m other ON other.window = m.window
               AND other.passage_id = m.passage_id
               AND other.qid = CASE WHEN d.s = m.qid THEN d.o ELSE d.s END
        ),
        found AS (
          SELECT * FROM delta_pairs UNION ALL SELECT * FROM x_rows
          UNION ALL SELECT * FROM single
        ),
        labels AS (
          SELECT w.window, i.qid, i.label_en FROM {{items}} i
          JOIN w ON {valid_at_expr('i', 'w.tau')}
        ),
        props AS (
          SELECT w.window, p.pid, p.label_en FROM {{props}} p
          JOIN w ON {valid_at_expr('p', 'w.tau')}
        )
        SELECT {key} AS snapshot, CAST(f.window AS INT) AS window, f.passage_id, f.op,
               f.s, f.p, f.o, f.signal, ls.label_en AS s_label, lp.label_en AS p_label,
               lo.label_en AS o_label, f.emerging_head, f.emerging_tail,
               f.head_created_at, f.tail_created_at, f.lifespan_from, f.lifespan_to,
               f.qualifier_pid, lq.label_en AS qualifier_label, f.qualifier_at
        FROM found f
        LEFT JOIN labels ls ON ls.window = f.window AND ls.qid = f.s
        LEFT JOIN labels lo ON lo.window = f.window AND lo.qid = f.o
        LEFT JOIN props lp ON lp.window = f.window AND lp.pid = f.p
        LEFT JOIN props lq ON lq.window = f.window AND lq.pid = f.qualifier_pid
    """, passages=catalog.read("passages"), delta=catalog.read("delta_triples"),
        kg=catalog.read("kg_triples"), stable=catalog.read("stable_statements"),
        items=catalog.read("item_timeline"), props=catalog.read("property_timeline"))
    return catalog.replace_partitions(
        "instances", df, {"snapshot": plan.key}, "window", [w.k for w in plan.windows],
        clear_others=True,
    )
