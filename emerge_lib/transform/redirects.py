"""Item merges, as the authors resolve them (``deltas.resolve_redirects``): every QID is
read through the redirect table of the end of the ingested history, for the whole history.

Their s02 (``src/dataset/wikidata/python/s02_normalize_history_graph.py:254-258, 326-345,
383-447``) loads Wikidata's redirect table of the dump, follows each statement's subject
and object to the item it redirects to (chains of up to 50), and merges the histories that
then share a key (``merge_two_target_histories``, lines 117-211: a triple is present while
either history has it) before their 168 h stability rule (``revise_history``). Their
Wikipedia titles map to the QIDs of the dump's page_props, so a link also names the
surviving item. Here:

- ``statements``: statement_timeline with s and o read through the final redirects (the
  stability stage then merges the histories of a key and normalizes them, as theirs);
- ``items``: item_timeline keyed by the surviving item: a merged item's states count as
  the surviving item's (V and the titles follow: an item is in V_τ when it or an item
  merged into it is, its creation is the earliest of them), one state per instant: the
  one in V, the surviving item's own before a merged one's, the later revision first.

A merge is then invisible to the deltas: a statement re-pointed from the merged item to
the surviving one is neither an addition nor a removal, and the merged item's statements
are the surviving item's all along. Off (the no-selection-rules preset): a merged item
leaves V at its merge, and its statements with it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from emerge_lib.catalog import Catalog
from emerge_lib.catalog.sql import in_v, not_a_redirect

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

MAX_HOPS = 50  # theirs: max_nr_redirects (s02_normalize_history_graph.py:280)


def final_targets(catalog: Catalog, *, version: int | None = None) -> DataFrame:
    """(qid, target): each item whose state at the end of the ingested history is a
    redirect, and the item its chain of redirects ends at (at most ``MAX_HOPS``; a loop
    or a longer chain ends where the hops ran out, as theirs logs and keeps it).
    ``version``: item_timeline's Delta version to read (None: the newest)."""
    spark = catalog.session()
    pairs = catalog.materialize(spark.sql(
        "SELECT DISTINCT qid, redirect_to AS target FROM {items} "
        "WHERE valid_to IS NULL AND redirect_to IS NOT NULL",
        items=catalog.read("item_timeline", version)))
    for _ in range(MAX_HOPS):
        step = catalog.materialize(spark.sql(
            "SELECT p.qid, COALESCE(n.target, p.target) AS target, n.target IS NOT NULL "
            "AND n.target <> p.target AS moved FROM {pairs} p "
            "LEFT JOIN {pairs} n ON n.qid = p.target AND n.qid <> p.qid", pairs=pairs))
        pairs = catalog.materialize(step.select("qid", "target"))
        if not step.filter("moved").limit(1).collect():
            break
    return pairs


def statements(catalog: Catalog, resolve: bool, *, version: int | None = None,
               items_version: int | None = None) -> DataFrame:
    """statement_timeline, with s and o read through the final redirects (``resolve``);
    ``version``/``items_version``: the two timelines' Delta versions (None: the newest)."""
    raw = catalog.read("statement_timeline", version)
    if not resolve:
        return raw
    spark = catalog.session()
    return catalog.materialize(spark.sql("""
        SELECT COALESCE(rs.target, r.s) AS s, r.p, COALESCE(ro.target, r.o) AS o,
               r.statement_id, r.rank, r.version_hash, r.qualifiers, r.valid_from,
               r.valid_to, r.rev_from, r.rev_to, r.s_bucket
        FROM {raw} r
        LEFT JOIN {targets} rs ON rs.qid = r.s
        LEFT JOIN {targets} ro ON ro.qid = r.o
    """, raw=raw, targets=final_targets(catalog, version=items_version)))


def items(catalog: Catalog, resolve: bool) -> DataFrame:
    """item_timeline keyed by the surviving item (``resolve``), one state per instant."""
    raw = catalog.read("item_timeline")
    if not resolve:
        return raw
    spark = catalog.session()
    targets = final_targets(catalog)
    # the items a merge touches: the merged ones and the ones they end at; every other
    # item's timeline is taken as it is
    touched = catalog.materialize(spark.sql(
        "SELECT DISTINCT explode(array(qid, target)) AS qid, target AS survivor FROM {t}",
        t=targets))
    merged = catalog.materialize(spark.sql(f"""
        WITH m AS (  -- a merged item's states before its redirect, under the survivor
          SELECT t.survivor AS qid, i.valid_from, i.valid_to, i.rev_from, i.enwiki_title,
                 i.label_en, i.description_en, i.created_at, i.redirect_to, i.qid_bucket,
                 i.qid = t.survivor AS own,
                 CASE WHEN {in_v('i')} THEN 1 ELSE 0 END AS in_v
          FROM {{raw}} i JOIN {{touched}} t ON t.qid = i.qid
          WHERE i.qid = t.survivor OR {not_a_redirect('i')}
        ),
        bounds AS (
          SELECT DISTINCT qid, b FROM (
            SELECT qid, valid_from AS b FROM m
            UNION ALL SELECT qid, valid_to AS b FROM m WHERE valid_to IS NOT NULL)
        ),
        segments AS (
          SELECT qid, b AS f, LEAD(b) OVER (PARTITION BY qid ORDER BY b) AS t FROM bounds
        ),
        picked AS (
          SELECT s.qid, s.f, s.t,
                 MAX_BY(named_struct('rev_from', m.rev_from, 'enwiki_title', m.enwiki_title,
                                     'label_en', m.label_en, 'description_en',
                                     m.description_en, 'redirect_to', m.redirect_to,
                                     'qid_bucket', m.qid_bucket),
                        m.in_v * 4 + CASE WHEN m.own THEN 2 ELSE 0 END
                        + m.rev_from / 1e15) AS st,
                 MIN(m.created_at) AS created_at
          FROM segments s JOIN m ON m.qid = s.qid AND m.valid_from <= s.f
               AND (m.valid_to IS NULL OR m.valid_to > s.f)
          GROUP BY s.qid, s.f, s.t
        ),
        created AS (SELECT qid, MIN(created_at) AS created_at FROM m GROUP BY qid)
        SELECT p.qid, p.f AS valid_from, p.t AS valid_to, p.st.rev_from AS rev_from,
               p.st.enwiki_title AS enwiki_title, p.st.label_en AS label_en,
               p.st.description_en AS description_en, c.created_at,
               p.st.redirect_to AS redirect_to, p.st.qid_bucket AS qid_bucket
        FROM picked p JOIN created c ON c.qid = p.qid
    """, raw=raw, touched=touched))
    rest = spark.sql("SELECT i.* FROM {raw} i LEFT ANTI JOIN {touched} t ON t.qid = i.qid",
                     raw=raw, touched=touched)
    # kept as a table: Spark 4.2 fails to checkpoint this union (Catalog.materialize)
    return catalog.materialize(rest.unionByName(merged), keep="table")
