"""passages + delta_triples + kg_triples → instances (docs/semantics.md §1.1 Alignment).

For a passage of window k with mentioned set M (resolved QIDs, the article's own item
included when configured):

- X, E, EE, D: s and o both in M. E/EE/D come from the window's delta; X is a triple of
  T_t still in T_{τ_k} and not D.
- EE-KG: an added triple with exactly one of s, o in M, that one emerging, the other not
  emerging and not mentioned (emerging as ``deltas.emerging`` says, in the delta rows); when
  that addition is also D (an end qualifier inside the window), the passage gets the D too.

X triples report an end qualifier dated at or before t (the relation had ended before the
snapshot, yet the statement is there), as the released data does.

``source_delta_type`` (every operation but X) says which of the authors' three deltas
would find the triple first: ``wikipedia_intersection`` when the subject's article links
to the object as the triple changes (for an addition, the link appears between t and τ_k;
for a deprecation, the link is there at τ_k), else ``emerging`` when an end's item was
created at or after t, else ``all``. Links are those of the article's paragraphs in the
paragraph timeline (prose; infobox and list links are not stored), resolved as of t and τ_k.

It joins pairs of mentioned entities (and single mentions, for EE-KG) to the delta and to
T_t; it never forms passages × KG.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from pyspark.sql import functions as F

from emerge_lib.catalog import Catalog
from emerge_lib.catalog.sql import (
    in_v,
    literal,
    literal_list,
    sql_timestamp,
    valid_at_expr,
    windows_sql,
)
from emerge_lib.core.config import AlignSettings, DeltaSettings, PassageSettings, QualifierSettings
from emerge_lib.core.schedule import SnapshotPlan
from emerge_lib.transform import redirects
from emerge_lib.transform.snapshot import items_of
from emerge_lib.transform.titles import resolve_titles

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

log = logging.getLogger(__name__)


def build_instances(catalog: Catalog, plan: SnapshotPlan, settings: PassageSettings,
                    qualifiers: QualifierSettings, rules: AlignSettings,
                    deltas: DeltaSettings) -> tuple[dict[int, int], dict[str, int]]:
    """Write the instances partitions (t, k) of one snapshot; returns rows per window and
    the lines each selection rule left out (``lines``: the aligned lines before them)."""
    spark = catalog.session()
    key = literal(plan.key)
    t = sql_timestamp(plan.t)
    own = "page_qid" if settings.article_entity_counts else "CAST(NULL AS STRING)"
    persistence = rules.ee_kg_persistence_days
    w = windows_sql(plan, persist_until=persistence * 86400)
    end_pids = literal_list(qualifiers.end)
    mentioned = catalog.materialize(spark.sql(f"""
        SELECT DISTINCT window, passage_id, qid FROM (
          SELECT window, passage_id, mq.qid AS qid
          FROM (SELECT window, passage_id, explode(mentions) AS mq FROM {{passages}}
                WHERE snapshot = {key})
          UNION ALL
          SELECT window, passage_id, {own} AS qid FROM {{passages}}
          WHERE snapshot = {key}
        ) WHERE qid IS NOT NULL
    """, passages=catalog.read("passages")))  # the mentioned set of every passage
    resolve = deltas.resolve_redirects
    inputs = _mentioned_inputs(catalog, plan, mentioned,
                               over_redirects=deltas.creation_over_redirects, resolve=resolve)
    found = catalog.materialize(spark.sql(f"""
        WITH w AS {w},
        m AS (SELECT * FROM {{m}}),
        dk AS (SELECT * FROM {{delta}} WHERE snapshot = {key}),
        created AS (SELECT * FROM {{created}}),
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
                 d.lifespan_to, d.qualifier_pid, d.qualifier_at, true AS pair
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
        x_ended AS (  -- end qualifiers dated at or before t on the statements at τ_k
          SELECT window, s, p, o, MIN(q.instant) AS qualifier_at,
                 MIN_BY(q.pid, q.instant) AS qualifier_pid
          FROM (SELECT w.window, r.s, r.p, r.o, explode(r.qualifiers) AS q
                FROM {{raw}} r JOIN w ON {valid_at_expr('r', 'w.tau')}
                WHERE r.rank <> 'deprecated')
          WHERE q.pid IN ({end_pids}) AND q.instant <= {t}
          GROUP BY window, s, p, o
        ),
        x_rows AS (  -- ... and not D
          SELECT x.window, x.passage_id, 'X' AS op, x.s, x.p, x.o,
                 CAST(NULL AS STRING) AS signal, false AS emerging_head, false AS emerging_tail,
                 hs.created_at AS head_created_at, ho.created_at AS tail_created_at,
                 st.valid_from AS lifespan_from, st.valid_to AS lifespan_to,
                 q.qualifier_pid, q.qualifier_at, true AS pair
          FROM x_still x
          LEFT ANTI JOIN dk d ON d.window = x.window AND d.op = 'D' AND d.s = x.s
                             AND d.p = x.p AND d.o = x.o
          JOIN w ON w.window = x.window
          LEFT JOIN {{stable}} st ON st.s = x.s AND st.p = x.p AND st.o = x.o
               AND {valid_at_expr('st', 'w.tau')}
          LEFT JOIN created hs ON hs.qid = x.s
          LEFT JOIN created ho ON ho.qid = x.o
          LEFT JOIN x_ended q ON q.window = x.window AND q.s = x.s AND q.p = x.p AND q.o = x.o
        ),
        persistent AS (  -- R3: additions still in the KG past τ_k + the persistence span
          SELECT DISTINCT d.window, d.s, d.p, d.o FROM dk d JOIN w ON w.window = d.window
          WHERE d.op = 'EE' AND ({literal(not persistence)} OR d.lifespan_to IS NULL
                                 OR d.lifespan_to > w.persist_until)
        ),
        single_end AS (  -- the additions with exactly one emerging end: that end and the
                         -- other one (an equi-join key each; an OR of the two in one join
                         -- condition becomes a nested loop over passages × delta)
          SELECT d.*, d.s AS emerging_end, d.o AS other_end FROM dk d
          WHERE d.op IN ('EE', 'D') AND d.emerging_head AND NOT d.emerging_tail
          UNION ALL
          SELECT d.*, d.o AS emerging_end, d.s AS other_end FROM dk d
          WHERE d.op IN ('EE', 'D') AND d.emerging_tail AND NOT d.emerging_head
        ),
        single AS (  -- EE-KG: one end mentioned and emerging, the other not, unmentioned;
                     -- an addition that is also D (ended inside the window) keeps its D
          SELECT m.window, m.passage_id, CASE d.op WHEN 'EE' THEN 'EE-KG' ELSE 'D' END AS op,
                 d.s, d.p, d.o, d.signal,
                 d.emerging_head, d.emerging_tail, d.head_created_at, d.tail_created_at,
                 d.lifespan_from, d.lifespan_to, d.qualifier_pid, d.qualifier_at,
                 false AS pair
          FROM m JOIN single_end d ON d.window = m.window AND d.emerging_end = m.qid
          LEFT SEMI JOIN persistent k ON k.window = d.window AND k.s = d.s AND k.p = d.p
               AND k.o = d.o
          LEFT ANTI JOIN m other ON other.window = m.window
               AND other.passage_id = m.passage_id AND other.qid = d.other_end
        )
        SELECT * FROM delta_pairs UNION ALL SELECT * FROM x_rows
        UNION ALL SELECT * FROM single
    """, m=mentioned, delta=catalog.read("delta_triples"),
        kg=catalog.read("kg_triples"), stable=catalog.read("stable_statements"), **inputs))
    found, left_out = _select_lines(catalog, plan, found, mentioned, rules)
    if rules.relations_in_snapshot:
        found, left_out["relations"] = _known_relations(catalog, plan, found)
    links = _subject_links(catalog, plan, found, settings.max_redirect_hops, resolve)
    # the labels of the found triples' ends only (not every item at five window ends)
    ends = spark.sql("SELECT s AS qid FROM {found} UNION SELECT o AS qid FROM {found}",
                     found=found)
    labelled = catalog.materialize(spark.sql(
        "SELECT i.* FROM {items} i LEFT SEMI JOIN {ends} e ON e.qid = i.qid",
        items=redirects.items(catalog, resolve), ends=ends))
    df = spark.sql(f"""
        WITH w AS {w},
        kinds AS (  -- per delta triple: is it added, deprecated, and does s link to o?
          SELECT f.window, f.s, f.p, f.o,
                 MAX(CASE WHEN f.op <> 'D' THEN 1 ELSE 0 END) AS added,
                 MAX(CASE WHEN f.op = 'D' THEN 1 ELSE 0 END) AS deprecated,
                 MAX(CASE WHEN f.head_created_at >= {t} OR f.tail_created_at >= {t}
                          THEN 1 ELSE 0 END) AS emerging
          FROM {{found}} f WHERE f.op <> 'X' GROUP BY f.window, f.s, f.p, f.o
        ),
        sources AS (
          SELECT k.window, k.s, k.p, k.o,
                 CASE WHEN (k.added = 1 AND COALESCE(l.at_k, false) AND NOT COALESCE(l.at_t, false))
                        OR (k.deprecated = 1 AND COALESCE(l.at_k, false))
                      THEN 'wikipedia_intersection'
                      WHEN k.emerging = 1 THEN 'emerging'
                      ELSE 'all' END AS source_delta_type
          FROM kinds k LEFT JOIN {{links}} l ON l.window = k.window AND l.s = k.s AND l.o = k.o
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
               f.qualifier_pid, lq.label_en AS qualifier_label, f.qualifier_at,
               src.source_delta_type
        FROM {{found}} f
        LEFT JOIN sources src ON f.op <> 'X' AND src.window = f.window AND src.s = f.s
             AND src.p = f.p AND src.o = f.o
        LEFT JOIN labels ls ON ls.window = f.window AND ls.qid = f.s
        LEFT JOIN labels lo ON lo.window = f.window AND lo.qid = f.o
        LEFT JOIN props lp ON lp.window = f.window AND lp.pid = f.p
        LEFT JOIN props lq ON lq.window = f.window AND lq.pid = f.qualifier_pid
    """, found=found, links=links, items=labelled, props=catalog.read("property_timeline"))
    return catalog.replace_partitions(
        "instances", df, {"snapshot": plan.key}, "window", [w.k for w in plan.windows],
        clear_others=True,
    ), left_out


def _mentioned_inputs(catalog: Catalog, plan: SnapshotPlan, mentioned: DataFrame, *,
                      over_redirects: bool, resolve: bool) -> dict[str, DataFrame]:
    """The alignment query's item and statement inputs cut to what it can join, each
    computed once: the item states of mentioned entities (V at every window end is asked
    only of them), their creation times, and the raw statements of the T_t triples
    between two mentioned entities (their end qualifiers at every window end). Every
    use in the query joins on a mentioned QID or on such a triple, so no row changes;
    the query no longer joins every item and every statement to five window ends."""
    spark = catalog.session()
    items_m, created = items_of(catalog, spark.sql("SELECT DISTINCT qid FROM {m}", m=mentioned),
                                over_redirects=over_redirects, resolve=resolve)
    pair_keys = catalog.materialize(spark.sql(f"""
        SELECT DISTINCT kg.s, kg.p, kg.o
        FROM {{m}} a JOIN {{m}} b ON a.window = b.window AND a.passage_id = b.passage_id
                                AND a.qid <> b.qid
        JOIN {{kg}} kg ON kg.snapshot = {literal(plan.key)} AND kg.s = a.qid AND kg.o = b.qid
    """, m=mentioned, kg=catalog.read("kg_triples")))
    raw = catalog.materialize(spark.sql(
        "SELECT r.* FROM {raw} r LEFT SEMI JOIN {k} k ON k.s = r.s AND k.p = r.p AND k.o = r.o",
        raw=redirects.statements(catalog, resolve), k=pair_keys))
    return {"items": items_m, "created": created, "raw": raw}


def _select_lines(catalog: Catalog, plan: SnapshotPlan, found: DataFrame, mentioned: DataFrame,
                  rules: AlignSettings) -> tuple[DataFrame, dict[str, int]]:
    """The aligned rows of the lines the authors' rules keep (R1, R2b, R5; R3 acts on
    EE-KG rows before), and how many lines each rule left out, in that order."""
    if not (rules.between_mentions or rules.passage_after_removal or rules.interesting):
        return found, {}
    spark = catalog.session()
    lines = spark.sql(f"""
        WITH b AS (  -- R1's delta triples: E, EE or D between two mentioned entities
          SELECT window, passage_id, s, p, o,
                 MAX(CASE WHEN op <> 'D' OR signal LIKE 'qualifier:%' THEN 1 ELSE 0 END)
                   AS not_plain_removal,
                 MAX(CASE WHEN op = 'D' AND signal LIKE 'qualifier:%' THEN 1 ELSE 0 END)
                   AS qualifier_d,
                 MAX(CASE WHEN op <> 'D' THEN NULL WHEN signal LIKE 'qualifier:%'
                          THEN qualifier_at ELSE lifespan_to END) AS removal_at,
                 MAX(CASE WHEN emerging_head OR emerging_tail THEN 1 ELSE 0 END) AS emerging
          FROM {{found}} WHERE pair AND op IN ('E', 'EE', 'D')
          GROUP BY window, passage_id, s, p, o
        ),
        per_b AS (
          SELECT window, passage_id, COUNT(*) AS n_b,
                 MAX(not_plain_removal) AS not_plain, MAX(qualifier_d) AS qualifier_d,
                 MAX(removal_at) AS removal_at, MAX(emerging) AS emerging
          FROM b GROUP BY window, passage_id
        ),
        per_kg AS (  -- EE-KG triples (their mentioned end is emerging)
          SELECT window, passage_id, COUNT(*) AS n_kg FROM (
            SELECT DISTINCT window, passage_id, s, p, o FROM {{found}}
            WHERE NOT pair AND op = 'EE-KG') GROUP BY window, passage_id
        ),
        per_m AS (SELECT window, passage_id, COUNT(*) AS n_m FROM {{m}}
                  GROUP BY window, passage_id),
        aligned AS (SELECT DISTINCT window, passage_id FROM {{found}}),
        flags AS (
          SELECT a.window, a.passage_id,
                 COALESCE(b.n_b, 0) > 0 AS r1,
                 b.removal_at IS NULL OR ps.rev_timestamp >= b.removal_at AS r2b,
                 (COALESCE(b.not_plain, 0) = 1
                  AND (COALESCE(b.n_b, 0) + COALESCE(k.n_kg, 0)) / CAST(mm.n_m AS DOUBLE)
                      > {literal(float(rules.interesting_min_ratio))})
                 OR COALESCE(b.qualifier_d, 0) = 1 OR COALESCE(b.emerging, 0) = 1
                 OR COALESCE(k.n_kg, 0) > 0 AS r5
          FROM aligned a
          LEFT JOIN per_b b ON b.window = a.window AND b.passage_id = a.passage_id
          LEFT JOIN per_kg k ON k.window = a.window AND k.passage_id = a.passage_id
          LEFT JOIN per_m mm ON mm.window = a.window AND mm.passage_id = a.passage_id
          JOIN {{passages}} ps ON ps.snapshot = {literal(plan.key)} AND ps.window = a.window
               AND ps.passage_id = a.passage_id
        )
        SELECT window, passage_id,
               ({literal(not rules.between_mentions)} OR r1) AS r1,
               ({literal(not rules.passage_after_removal)} OR r2b) AS r2b,
               ({literal(not rules.interesting)} OR r5) AS r5
        FROM flags
    """, found=found, m=mentioned, passages=catalog.read("passages"))
    lines = catalog.materialize(lines)
    (counts,) = spark.sql("""
        SELECT COUNT(*) AS lines,
               COALESCE(SUM(CASE WHEN NOT r1 THEN 1 ELSE 0 END), 0) AS r1,
               COALESCE(SUM(CASE WHEN r1 AND NOT r2b THEN 1 ELSE 0 END), 0) AS r2b,
               COALESCE(SUM(CASE WHEN r1 AND r2b AND NOT r5 THEN 1 ELSE 0 END), 0) AS r5
        FROM {lines}
    """, lines=lines).collect()
    left_out = {name: int(counts[name]) for name in ("lines", "r1", "r2b", "r5")}
    log.info("align %s: %d aligned lines; the authors' rules leave out %d (R1: no delta "
             "triple between mentions), %d (R2b: before a removal), %d (R5: not interesting)",
             plan.key, left_out["lines"], left_out["r1"], left_out["r2b"], left_out["r5"])
    kept = spark.sql("""
        SELECT f.* FROM {found} f
        LEFT SEMI JOIN (SELECT window, passage_id FROM {lines} WHERE r1 AND r2b AND r5) l
          ON l.window = f.window AND l.passage_id = f.passage_id
    """, found=found, lines=lines)
    return catalog.materialize(kept), left_out


def _known_relations(catalog: Catalog, plan: SnapshotPlan, found: DataFrame
                     ) -> tuple[DataFrame, int]:
    """The rows whose relation is in R_t (the snapshot's ``relations``), of the lines that
    keep an E, EE, EE-KG or D row, and how many lines went: their s07 drops a triple
    whose property is not in the snapshot's relation dictionary
    (``filter_out_new_relation_types``, S07:83-95, called at 501-515), then a line it left
    without a delta triple (S07:568-585; a line that had none is R1's). It runs after
    R1-R5, as s07 runs after s04."""
    spark = catalog.session()
    kept = catalog.materialize(spark.sql(f"""
        WITH known AS (
          SELECT f.* FROM {{found}} f
          LEFT SEMI JOIN {{relations}} r ON r.snapshot = {literal(plan.key)} AND r.pid = f.p
        ),
        hit AS (  -- the lines that lost a row
          SELECT DISTINCT f.window, f.passage_id FROM {{found}} f
          LEFT ANTI JOIN known k ON k.window = f.window AND k.passage_id = f.passage_id
               AND k.op = f.op AND k.s = f.s AND k.p = f.p AND k.o = f.o
        ),
        emptied AS (  -- ... and kept no E, EE, EE-KG or D row
          SELECT h.* FROM hit h
          LEFT ANTI JOIN known k ON k.window = h.window AND k.passage_id = h.passage_id
               AND k.op <> 'X'
        )
        SELECT k.* FROM known k
        LEFT ANTI JOIN emptied e ON e.window = k.window AND e.passage_id = k.passage_id
    """, found=found, relations=catalog.read("relations")))
    (counts,) = spark.sql("""
        SELECT (SELECT COUNT(DISTINCT window, passage_id) FROM {found})
             - (SELECT COUNT(DISTINCT window, passage_id) FROM {kept}) AS gone
    """, found=found, kept=kept).collect()
    gone = int(counts["gone"])
    if gone:
        log.info("align %s: %d lines left without a delta triple once relations outside "
                 "R_t went", plan.key, gone)
    return kept, gone


def _subject_links(catalog: Catalog, plan: SnapshotPlan, found: DataFrame,
                   max_hops: int, resolve: bool) -> DataFrame:
    """(window, s, o, at_t, at_k): whether the article of s links to o at t and at τ_k, for
    the delta triples ``found`` (their link targets resolved as of each instant, following
    up to ``max_hops`` redirects, as the passages stage does)."""
    spark = catalog.session()
    t = sql_timestamp(plan.t)
    targets = spark.sql(f"""
        WITH w AS {windows_sql(plan)},
        heads AS (SELECT DISTINCT window, s, o FROM {{found}} WHERE op <> 'X'),
        head_pages AS (  -- the article of s at τ_k
          SELECT h.window, h.s, h.o, w.tau, MIN(pg.page_id) AS page_id
          FROM heads h JOIN w ON w.window = h.window
          JOIN {{items}} i ON i.qid = h.s AND {valid_at_expr('i', 'w.tau')} AND {in_v('i')}
          JOIN {{pages}} pg ON pg.title = i.enwiki_title AND {valid_at_expr('pg', 'w.tau')}
               AND NOT pg.is_redirect
          GROUP BY h.window, h.s, h.o, w.tau
        ),
        instants AS (
          SELECT window, s, o, page_id, 'k' AS at_which, tau AS at FROM head_pages
          UNION ALL SELECT window, s, o, page_id, 't' AS at_which, {t} AS at FROM head_pages
        )
        SELECT DISTINCT window, s, o, at_which, at, m.target AS target FROM (
          SELECT i.window, i.s, i.o, i.at_which, i.at, explode(r.mentions) AS m
          FROM instants i JOIN {{runs}} r ON r.page_id = i.page_id
               AND r.first_seen_at <= i.at AND (r.removed_at IS NULL OR r.removed_at > i.at)
        ) WHERE m.target IS NOT NULL
    """, found=found, items=redirects.items(catalog, resolve),
        pages=catalog.read("page_timeline"),
        runs=catalog.read("paragraph_timeline"))
    targets = catalog.materialize(targets)
    resolved = resolve_titles(catalog, targets.select(F.col("target").alias("title"),
                                                      F.col("at").alias("tau")),
                              max_hops=max_hops, resolve_redirects=resolve)
    return spark.sql("""
        SELECT l.window, l.s, l.o,
               MAX(CASE WHEN l.at_which = 't' AND r.qid = l.o THEN true ELSE false END) AS at_t,
               MAX(CASE WHEN l.at_which = 'k' AND r.qid = l.o THEN true ELSE false END) AS at_k
        FROM {targets} l JOIN {resolved} r ON r.title = l.target AND r.tau = l.at
        GROUP BY l.window, l.s, l.o
    """, targets=targets, resolved=resolved)
