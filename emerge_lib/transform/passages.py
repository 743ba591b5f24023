"""paragraph_timeline + page_timeline + item_timeline → passages (docs/semantics.md §1.1–1.2).

A paragraph of an article belongs to window k of snapshot t when it is absent at t, first
appears after t inside (t, τ_k] (``passages.windows: cumulative``, the released data) or
inside (τ_{k-1}, τ_k] (``first_appearance``, docs/semantics.md §1.1), is present at τ_k,
and is still
present ``passage_minutes`` after it first appeared (vandalism reverted quickly never
counts). Its
text, index and links are those of the revision where it first appeared. Links are
resolved to QIDs as of τ_k (redirects, then enwiki sitelinks; `transform.titles`); the
article's own item counts as mentioned when configured. Kept: ``min_tokens``..``max_tokens``
whitespace tokens, markup ratio ≤ ``max_markup_ratio``, ≥ ``min_entities`` distinct QIDs.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from datetime import timedelta

import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from emerge_lib.catalog import Catalog
from emerge_lib.catalog.sql import literal, sql_timestamp, window_of_sql, windows_sql
from emerge_lib.core.config import PassageSettings, StabilitySettings
from emerge_lib.core.schedule import SnapshotPlan
from emerge_lib.transform.titles import resolve_titles, status_counts

log = logging.getLogger(__name__)


def _first_appearances(plan: SnapshotPlan) -> str:
    """The CTEs ``per_par`` and ``cand`` over ``{runs}``: each paragraph absent at t and its
    first appearance after t (by τ_n), with that appearance's window."""
    t = sql_timestamp(plan.t)
    horizon = sql_timestamp(plan.horizon)
    # per_par reads only the runs alive after t and begun by τ_n: a run removed by t
    # counts in no "at t" and starts no appearance after t, and a run begun after τ_n
    # can only be a later appearance than one inside the windows (or none that counts),
    # so the candidates are the same while the aggregate holds this snapshot's
    # paragraphs, not every range ever ingested (the timeline grows by a range per
    # snapshot asked for)
    return f"""
        per_par AS (
          SELECT page_id, paragraph_hash,
                 MAX(CASE WHEN first_seen_at <= {t}
                           AND (removed_at IS NULL OR removed_at > {t})
                          THEN 1 ELSE 0 END) AS at_t,
                 MIN(CASE WHEN first_seen_at > {t} THEN first_seen_at END) AS first_after
          FROM {{runs}}
          WHERE (removed_at IS NULL OR removed_at > {t}) AND first_seen_at <= {horizon}
          GROUP BY page_id, paragraph_hash
        ),
        cand AS (
          SELECT page_id, paragraph_hash, first_after,
                 {window_of_sql('first_after', plan)} AS first_window
          FROM per_par
          WHERE at_t = 0 AND first_after IS NOT NULL AND first_after <= {horizon}
        )"""


def _passage_filter(settings: PassageSettings, r: str = "r") -> str:
    return (f"{r}.tokens BETWEEN {settings.min_tokens} AND {settings.max_tokens} "
            f"AND {r}.markup_ratio <= {settings.max_markup_ratio}")


def new_paragraphs_sql(plan: SnapshotPlan, settings: PassageSettings,
                       stability: StabilitySettings) -> str:
    """SQL over ``{runs}`` (paragraph_timeline): each paragraph new in a window of the plan,
    with the text, index and links of the revision where it first appeared, kept only when
    its tokens and markup ratio pass the passage filter (the entity count comes later).

    ``passages.windows``: ``cumulative`` (the released data) puts a paragraph first seen in
    window j into every window k >= j where it is present at τ_k; ``first_appearance``
    (docs/semantics.md §1.1) into window j only."""
    survive = int(stability.passage_minutes * 60)
    window_match = ("w.window >= c.first_window" if settings.windows == "cumulative"
                    else "w.window = c.first_window")
    return f"""
        WITH {_first_appearances(plan)},
        with_end AS (  -- the windows the passage belongs to (first appearance, or every later one)
          SELECT c.page_id, c.paragraph_hash, c.first_after, w.window, w.tau
          FROM cand c JOIN {windows_sql(plan)} w ON {window_match}
        ),
        checks AS (
          SELECT c.page_id, c.paragraph_hash, c.first_after, c.window, c.tau,
                 MAX(CASE WHEN r.first_seen_at <= c.tau
                           AND (r.removed_at IS NULL OR r.removed_at > c.tau)
                          THEN 1 ELSE 0 END) AS at_tau,
                 MAX(CASE WHEN unix_timestamp(r.first_seen_at)
                               <= unix_timestamp(c.first_after) + {survive}
                           AND (r.removed_at IS NULL OR unix_timestamp(r.removed_at)
                                > unix_timestamp(c.first_after) + {survive})
                          THEN 1 ELSE 0 END) AS survived
          FROM with_end c JOIN {{runs}} r
            ON r.page_id = c.page_id AND r.paragraph_hash = c.paragraph_hash
          GROUP BY c.page_id, c.paragraph_hash, c.first_after, c.window, c.tau
        )
        SELECT c.window, c.tau, r.page_id, r.paragraph_hash, r.paragraph_idx, r.text,
               r.mentions, r.tokens, r.markup_ratio, r.first_seen_rev, r.first_seen_at
        FROM checks c JOIN {{runs}} r
          ON r.page_id = c.page_id AND r.paragraph_hash = c.paragraph_hash
         AND r.first_seen_at = c.first_after
        WHERE c.at_tau = 1 AND c.survived = 1 AND {_passage_filter(settings)}
    """


def read_before_sql(plan: SnapshotPlan, settings: PassageSettings) -> str:
    """SQL over ``{runs}`` and ``{new}``: for each new paragraph, the mentions of the new
    paragraphs its revision showed before it (``earlier``, by paragraph index) that pass
    the passage filter, surviving or not: what the authors' extraction had read of the
    revision when it reached the paragraph (their anchors for unlinked repeats,
    ``text.repeats``)."""
    return f"""
        WITH {_first_appearances(plan)},
        pool AS (
          SELECT r.page_id, r.first_seen_rev, r.paragraph_idx, r.mentions
          FROM cand c JOIN {{runs}} r
            ON r.page_id = c.page_id AND r.paragraph_hash = c.paragraph_hash
           AND r.first_seen_at = c.first_after
          WHERE {_passage_filter(settings)}
        ),
        keys AS (SELECT DISTINCT page_id, first_seen_rev, paragraph_idx FROM {{new}})
        SELECT k.page_id, k.first_seen_rev, k.paragraph_idx,
               collect_list(named_struct('idx', p.paragraph_idx, 'mentions', p.mentions))
                 AS earlier
        FROM keys k JOIN pool p
          ON p.page_id = k.page_id AND p.first_seen_rev = k.first_seen_rev
         AND p.paragraph_idx < k.paragraph_idx
        GROUP BY k.page_id, k.first_seen_rev, k.paragraph_idx
    """


def build_passages(
    catalog: Catalog,
    plan: SnapshotPlan,
    settings: PassageSettings,
    stability: StabilitySettings,
    resolve_redirects: bool,
) -> dict[int, int]:
    """Write the passages partitions (t, k) of one snapshot; returns rows per window.
    Refuses (CoverageError) a snapshot whose range the paragraph timeline was not ingested
    for. Links name the surviving items of merges with ``resolve_redirects``."""
    from emerge_lib.ingest.wikipedia.coverage import require_coverage

    spark = catalog.session()
    end = plan.horizon + timedelta(minutes=stability.passage_minutes)
    require_coverage(catalog, plan.t, end)
    pages = catalog.read("page_timeline")
    # computed once: titles, links, the wanted set and the passages all read it, and Sail
    # does not cache (each use would aggregate the whole paragraph timeline again)
    new = catalog.materialize(spark.sql(new_paragraphs_sql(plan, settings, stability),
                                        runs=catalog.read("paragraph_timeline")))
    # the article's title at τ_k, and the titles its links name
    new_titles = spark.sql("""
        SELECT n.window, n.tau, n.page_id, n.paragraph_hash, MIN(pg.title) AS page_title
        FROM {new} n JOIN {pages} pg ON pg.page_id = n.page_id
         AND pg.valid_from <= n.tau AND (pg.valid_to IS NULL OR pg.valid_to > n.tau)
         AND NOT pg.is_redirect
        GROUP BY n.window, n.tau, n.page_id, n.paragraph_hash
    """, new=new, pages=pages)
    if settings.repeat_mentions:
        new = catalog.materialize(_with_repeats(catalog, plan, settings, new, new_titles))
    links = spark.sql("""
        SELECT window, tau, page_id, paragraph_hash, m.start AS m_start, m.`end` AS m_end,
               m.anchor, m.target
        FROM (SELECT window, tau, page_id, paragraph_hash, explode(mentions) AS m FROM {new})
    """, new=new)
    wanted = spark.sql(
        "SELECT target AS title, tau FROM {links} WHERE target IS NOT NULL "
        "UNION SELECT page_title AS title, tau FROM {new_titles}",
        links=links, new_titles=new_titles)
    # resolved once (the counts and the passages both read it; Sail does not cache)
    resolved = catalog.materialize(
        resolve_titles(catalog, wanted, max_hops=settings.max_redirect_hops,
                       resolve_redirects=resolve_redirects))
    status_counts(resolved)
    own = "t.qid" if settings.article_entity_counts else "CAST(NULL AS STRING)"
    rows = spark.sql(f"""
        WITH resolved_links AS (
          SELECT l.window, l.page_id, l.paragraph_hash,
                 named_struct('start', l.m_start, 'end', l.m_end, 'anchor', l.anchor,
                              'target', l.target, 'qid', r.qid) AS mention,
                 r.qid
          FROM {{links}} l LEFT JOIN {{resolved}} r ON r.title = l.target AND r.tau = l.tau
        ),
        per_passage AS (
          SELECT window, page_id, paragraph_hash,
                 array_sort(collect_list(mention)) AS mentions,
                 -- the distinct QIDs (collect_list skips NULLs); Sail's collect_set took
                 -- 12x as long and grew faster than its input (2.4 vs 0.2 CPU-s, 1.2 M
                 -- statements' bench world)
                 array_distinct(collect_list(qid)) AS qids
          FROM resolved_links GROUP BY window, page_id, paragraph_hash
        ),
        titled AS (
          SELECT nt.window, nt.page_id, nt.paragraph_hash, nt.page_title, r.qid
          FROM {{new_titles}} nt
          LEFT JOIN {{resolved}} r ON r.title = nt.page_title AND r.tau = nt.tau
        )
        SELECT {literal(plan.key)} AS snapshot, n.window,
               concat(CAST(n.page_id AS STRING), '-', n.paragraph_hash) AS passage_id,
               n.page_id, t.page_title, t.qid AS page_qid, n.first_seen_rev AS rev_id,
               n.first_seen_at AS rev_timestamp, n.paragraph_idx, n.text,
               COALESCE(p.mentions, array()) AS mentions,
               size(array_distinct(concat(COALESCE(p.qids, array()),
                    CASE WHEN {own} IS NULL THEN array() ELSE array({own}) END))) AS n_entities
        FROM {{new}} n
        JOIN titled t ON t.window = n.window AND t.page_id = n.page_id
                      AND t.paragraph_hash = n.paragraph_hash
        LEFT JOIN per_passage p ON p.window = n.window AND p.page_id = n.page_id
                                AND p.paragraph_hash = n.paragraph_hash
    """, links=links, resolved=resolved, new_titles=new_titles, new=new
    ).filter(F.col("n_entities") >= settings.min_entities).drop("n_entities")
    return catalog.replace_partitions(
        "passages", rows, {"snapshot": plan.key}, "window", [w.k for w in plan.windows],
        clear_others=True,
    )


def _with_repeats(catalog: Catalog, plan: SnapshotPlan, settings: PassageSettings,
                  new: DataFrame, new_titles: DataFrame) -> DataFrame:
    """``new`` with the unlinked repeats of earlier anchors added to each paragraph's
    mentions (``passages.repeat_mentions``; ``text.repeats``), on the engine's workers."""
    spark = catalog.session()
    earlier = spark.sql(read_before_sql(plan, settings),
                        runs=catalog.read("paragraph_timeline"), new=new)
    joined = spark.sql("""
        SELECT n.*, t.page_title AS _title, e.earlier AS _earlier
        FROM {new} n
        LEFT JOIN {titles} t ON t.window = n.window AND t.page_id = n.page_id
                            AND t.paragraph_hash = n.paragraph_hash
        LEFT JOIN {earlier} e ON e.page_id = n.page_id AND e.first_seen_rev = n.first_seen_rev
                             AND e.paragraph_idx = n.paragraph_idx
    """, new=new, titles=new_titles, earlier=earlier)
    return joined.mapInArrow(add_repeats, new.schema)


def add_repeats(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """mapInArrow's function: each row's mentions with its repeats added (in text order),
    the helper columns ``_title`` and ``_earlier`` dropped."""
    from emerge_lib.text.repeats import Span, anchor_pool, repeat_mentions

    for batch in batches:
        rows = batch.to_pydict()
        mentions = []
        for text, own, title, earlier in zip(rows["text"], rows["mentions"], rows["_title"],
                                             rows["_earlier"], strict=True):
            own = own or []
            spans = [Span(m["start"], m["end"], m["anchor"], m["target"]) for m in own]
            reads = [[Span(m["start"], m["end"], m["anchor"], m["target"])
                      for m in e["mentions"] or []]
                     for e in sorted(earlier or [], key=lambda e: e["idx"])]
            added = repeat_mentions(text or "", spans, anchor_pool(title, reads))
            mentions.append([m._asdict() for m in sorted([*spans, *added])])
        columns = [n for n in batch.schema.names if n not in ("_title", "_earlier")]
        out = batch.select(columns)
        index = columns.index("mentions")
        yield out.set_column(index, "mentions",
                             pa.array(mentions, type=batch.schema.field("mentions").type))
