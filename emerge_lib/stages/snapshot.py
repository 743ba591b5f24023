"""Timelines → the KG as of any instant (DESIGN.md §1.1): V_τ, T_τ, R_τ.

These are interval filters on the timelines; the snapshot stage (kg_triples, entities,
relations per snapshot t) and the delta stage are built from them.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from emerge_lib.schedule import as_utc
from emerge_lib.tables import Catalog

if TYPE_CHECKING:
    from pyspark.sql import DataFrame


def sql_timestamp(tau: datetime | str) -> str:
    """A UTC instant as a Spark SQL literal (the session time zone is UTC)."""
    return f"TIMESTAMP '{as_utc(tau).strftime('%Y-%m-%d %H:%M:%S')}'"


def valid_at(alias: str, tau: datetime | str) -> str:
    """SQL predicate: the interval [valid_from, valid_to) of ``alias`` contains τ."""
    return valid_at_expr(alias, sql_timestamp(tau))


def valid_at_expr(alias: str, at: str) -> str:
    """SQL predicate for an instant given as an SQL expression (e.g. a joined column)."""
    return (f"{alias}.valid_from <= {at} AND "
            f"({alias}.valid_to IS NULL OR {alias}.valid_to > {at})")


def windows_sql(snapshot: datetime | str, window_count: int, window_days: float) -> str:
    """An inline table (window, tau) of a snapshot's window ends, for one-pass stages."""
    from emerge_lib.schedule import windows

    rows = ", ".join(f"({w.k}, {sql_timestamp(w.end)})" for w in windows(snapshot, window_count, window_days))
    return f"(SELECT * FROM VALUES {rows} AS w(window, tau))"


def entities_at(catalog: Catalog, tau: datetime | str) -> DataFrame:
    """V_τ: items whose state at τ has an enwiki sitelink (and is not a redirect)."""
    catalog.read("item_timeline").createOrReplaceTempView("emerge_items")
    return catalog.session().sql(
        "SELECT i.qid, i.enwiki_title, i.label_en, i.description_en, i.created_at "
        f"FROM emerge_items i WHERE {valid_at('i', tau)} "
        "AND i.enwiki_title IS NOT NULL AND i.redirect_to IS NULL"
    )


def triples_at(catalog: Catalog, tau: datetime | str, all_items: bool = False,
               stable: bool = True) -> DataFrame:
    """T_τ: (s, p, o) present at τ with s and o in V_τ (all items with ``all_items``).

    ``stable`` reads the stability-normalized timeline; without it, raw states.
    """
    spark = catalog.session()
    if stable:
        catalog.read("stable_statements").createOrReplaceTempView("emerge_keys")
        keys = f"SELECT DISTINCT k.s, k.p, k.o FROM emerge_keys k WHERE {valid_at('k', tau)}"
    else:
        catalog.read("statement_timeline").createOrReplaceTempView("emerge_keys")
        keys = (f"SELECT DISTINCT k.s, k.p, k.o FROM emerge_keys k WHERE {valid_at('k', tau)} "
                "AND k.rank <> 'deprecated'")
    if all_items:
        return spark.sql(keys)
    entities_at(catalog, tau).createOrReplaceTempView("emerge_v")
    return spark.sql(
        f"SELECT t.s, t.p, t.o FROM ({keys}) t "
        "JOIN emerge_v vs ON vs.qid = t.s JOIN emerge_v vo ON vo.qid = t.o"
    )


def relations_at(catalog: Catalog, tau: datetime | str) -> DataFrame:
    """R_τ: properties whose page exists at τ, with an English label and description."""
    catalog.read("property_timeline").createOrReplaceTempView("emerge_props")
    return catalog.session().sql(
        f"SELECT p.pid, p.label_en AS label, p.description_en AS description "
        f"FROM emerge_props p WHERE {valid_at('p', tau)} "
        "AND p.label_en IS NOT NULL AND p.description_en IS NOT NULL"
    )


def build_snapshot(catalog: Catalog, snapshot: datetime | str) -> dict[str, int]:
    """kg_triples, entities and relations of snapshot t, each its own partition.

    An entity's textual description is the first paragraph (lowest index) of its article
    present at t, when the paragraph timeline covers t; else NULL.
    """
    from emerge_lib.schedule import iso

    spark = catalog.session()
    key = iso(as_utc(snapshot))
    counts = {}
    triples = triples_at(catalog, snapshot).selectExpr(f"'{key}' AS snapshot", "s", "p", "o")
    counts["kg_triples"] = catalog.replace_partition("kg_triples", triples, {"snapshot": key})

    entities_at(catalog, snapshot).createOrReplaceTempView("emerge_v_snapshot")
    catalog.read("page_timeline").createOrReplaceTempView("emerge_pages")
    catalog.read("paragraph_timeline").createOrReplaceTempView("emerge_paragraphs")
    at = sql_timestamp(snapshot)
    entities = spark.sql(f"""
        WITH pages AS (
          SELECT pg.title, MIN(pg.page_id) AS page_id FROM emerge_pages pg
          WHERE {valid_at('pg', snapshot)} AND NOT pg.is_redirect GROUP BY pg.title
        ),
        present AS (
          SELECT pr.page_id, pr.paragraph_idx, pr.text FROM emerge_paragraphs pr
          WHERE pr.first_seen_at <= {at} AND (pr.removed_at IS NULL OR pr.removed_at > {at})
        ),
        first_par AS (
          SELECT page_id, MIN_BY(text, paragraph_idx) AS text FROM present GROUP BY page_id
        )
        SELECT '{key}' AS snapshot, v.qid, v.enwiki_title AS title, v.label_en AS label,
               v.description_en AS description, f.text AS text_description, v.created_at
        FROM emerge_v_snapshot v
        LEFT JOIN pages pg ON pg.title = v.enwiki_title
        LEFT JOIN first_par f ON f.page_id = pg.page_id
    """)
    counts["entities"] = catalog.replace_partition("entities", entities, {"snapshot": key})
    relations = relations_at(catalog, snapshot).selectExpr(
        f"'{key}' AS snapshot", "pid", "label", "description"
    )
    counts["relations"] = catalog.replace_partition("relations", relations, {"snapshot": key})
    return counts
