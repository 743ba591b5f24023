"""Timelines → the KG as of any instant (docs/semantics.md §1.1): V_τ, T_τ, R_τ.

These are interval filters on the timelines; the snapshot stage (kg_triples, entities,
relations per snapshot t) and the delta stage are built from them. Each helper returns a
frame over the tables it was given, bound as query arguments: two results can be combined
freely (``triples_at(c, t1).subtract(triples_at(c, t2))``).
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from emerge_lib.catalog import Catalog
from emerge_lib.catalog.sql import created_sql, in_v, literal, sql_timestamp, valid_at
from emerge_lib.core.schedule import SnapshotPlan
from emerge_lib.transform import redirects

if TYPE_CHECKING:
    from pyspark.sql import DataFrame


def entities_at(catalog: Catalog, tau: datetime | str, *, resolve: bool) -> DataFrame:
    """V_τ: items whose state at τ has an enwiki sitelink (and is not a redirect); with
    ``resolve`` (``deltas.resolve_redirects``) keyed by the surviving items of merges."""
    return catalog.session().sql(
        "SELECT i.qid, i.enwiki_title, i.label_en, i.description_en, i.created_at "
        f"FROM {{items}} i WHERE {valid_at('i', tau)} AND {in_v('i')}",
        items=redirects.items(catalog, resolve),
    )


def triples_at(catalog: Catalog, tau: datetime | str, all_items: bool = False,
               stable: bool = True, *, resolve: bool) -> DataFrame:
    """T_τ: (s, p, o) present at τ with s and o in V_τ; with ``all_items``, every item's
    statements (subjects are items: property pages' statements are not T).

    ``stable`` reads the stability-normalized timeline (built as ``resolve`` says);
    without it, raw states, read through the final redirects with ``resolve``.
    """
    spark = catalog.session()
    if stable:
        keys = spark.sql(
            f"SELECT DISTINCT k.s, k.p, k.o FROM {{keys}} k WHERE {valid_at('k', tau)}",
            keys=catalog.read("stable_statements"))
    else:
        keys = spark.sql(
            f"SELECT DISTINCT k.s, k.p, k.o FROM {{keys}} k WHERE {valid_at('k', tau)} "
            "AND k.rank <> 'deprecated'", keys=redirects.statements(catalog, resolve))
    if all_items:
        return keys.filter("s LIKE 'Q%'")
    return spark.sql(
        "SELECT t.s, t.p, t.o FROM {keys} t "
        "JOIN {v} vs ON vs.qid = t.s JOIN {v} vo ON vo.qid = t.o",
        keys=keys, v=entities_at(catalog, tau, resolve=resolve),
    )


def items_of(catalog: Catalog, qids: DataFrame, *, over_redirects: bool, resolve: bool
             ) -> tuple[DataFrame, DataFrame]:
    """The item_timeline rows and the creation times (``created_sql``: over the items
    redirecting to them, with ``over_redirects``) of the QIDs in ``qids`` (a ``qid``
    column), each computed once: what a stage joins on a few entities, instead of every
    item (creation is taken over all items, so a redirect's own item still counts)."""
    spark = catalog.session()
    items = redirects.items(catalog, resolve)
    states = catalog.materialize(spark.sql(
        "SELECT i.* FROM {items} i LEFT SEMI JOIN {q} q ON q.qid = i.qid", items=items, q=qids))
    created = catalog.materialize(spark.sql(
        f"SELECT c.* FROM ({created_sql(over_redirects=over_redirects)}) c "
        "LEFT SEMI JOIN {q} q ON q.qid = c.qid", items=items, q=qids))
    return states, created


def relations_at(catalog: Catalog, tau: datetime | str) -> DataFrame:
    """R_τ: properties whose page exists at τ, with an English label and description."""
    return catalog.session().sql(
        "SELECT p.pid, p.label_en AS label, p.description_en AS description "
        f"FROM {{props}} p WHERE {valid_at('p', tau)} "
        "AND p.label_en IS NOT NULL AND p.description_en IS NOT NULL",
        props=catalog.read("property_timeline"),
    )


def build_snapshot(catalog: Catalog, plan: SnapshotPlan, resolve_redirects: bool
                   ) -> dict[str, int]:
    """kg_triples, entities and relations of snapshot t, each its own partition.

    An entity's textual description is the first paragraph (lowest index) of its article
    present at t, when the paragraph timeline covers t; else NULL.
    """
    spark = catalog.session()
    t, key = plan.t, plan.key
    snap = literal(key)
    counts = {}
    triples = triples_at(catalog, t, resolve=resolve_redirects).selectExpr(
        f"{snap} AS snapshot", "s", "p", "o")
    counts["kg_triples"] = catalog.replace_partition("kg_triples", triples, {"snapshot": key})

    at = sql_timestamp(t)
    entities = spark.sql(f"""
        WITH pages AS (
          SELECT pg.title, MIN(pg.page_id) AS page_id FROM {{pages}} pg
          WHERE {valid_at('pg', t)} AND NOT pg.is_redirect GROUP BY pg.title
        ),
        present AS (
          SELECT pr.page_id, pr.paragraph_idx, pr.text FROM {{paragraphs}} pr
          WHERE pr.first_seen_at <= {at} AND (pr.removed_at IS NULL OR pr.removed_at > {at})
        ),
        first_par AS (
          SELECT page_id, MIN_BY(text, paragraph_idx) AS text FROM present GROUP BY page_id
        )
        SELECT {snap} AS snapshot, v.qid, v.enwiki_title AS title, v.label_en AS label,
               v.description_en AS description, f.text AS text_description, v.created_at
        FROM {{v}} v
        LEFT JOIN pages pg ON pg.title = v.enwiki_title
        LEFT JOIN first_par f ON f.page_id = pg.page_id
    """, v=entities_at(catalog, t, resolve=resolve_redirects),
        pages=catalog.read("page_timeline"),
        paragraphs=catalog.read("paragraph_timeline"))
    counts["entities"] = catalog.replace_partition("entities", entities, {"snapshot": key})
    relations = relations_at(catalog, t).selectExpr(
        f"{snap} AS snapshot", "pid", "label", "description"
    )
    counts["relations"] = catalog.replace_partition("relations", relations, {"snapshot": key})
    return counts


def require_kg_coverage(catalog: Catalog, plan: SnapshotPlan, wiki: str) -> None:
    """Refuse a snapshot the ingested Wikidata history cannot answer: none ingested, or
    the newest dump (by its date) older than the last window's end τ_n, whose edits after
    the dump are unknown (a KG delta would silently miss them)."""
    from datetime import UTC
    from datetime import datetime as dt

    from emerge_lib.ingest.wikipedia.coverage import CoverageError

    if not catalog.exists("statement_timeline"):
        raise CoverageError(f"no {wiki} history has been ingested into {catalog.warehouse}; "
                            "ingest Wikidata dumps first (emerge ingest / emerge build)")
    dates = [d for d in catalog.read_arrow("ingested_files", filters=[("wiki", "=", wiki)],
                                           columns=["dump_date"]).column(0).to_pylist() if d]
    if not dates:
        return  # files without a dump date in their name: nothing to compare
    newest = max(dates)
    if dt.strptime(newest, "%Y%m%d").replace(tzinfo=UTC) < plan.horizon:
        raise CoverageError(
            f"the newest ingested {wiki} dump ({newest}) is older than {plan.horizon:%Y-%m-%d}, "
            f"the end of the last window of snapshot {plan.key}: edits after the dump are "
            "unknown; ingest a newer dump, or choose an earlier snapshot or fewer windows")
