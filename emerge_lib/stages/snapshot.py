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


def _at(tau: datetime | str) -> str:
    return f"TIMESTAMP '{as_utc(tau).strftime('%Y-%m-%d %H:%M:%S')}'"


def valid_at(alias: str, tau: datetime | str) -> str:
    """SQL predicate: the interval [valid_from, valid_to) of ``alias`` contains τ."""
    at = _at(tau)
    return (f"{alias}.valid_from <= {at} AND "
            f"({alias}.valid_to IS NULL OR {alias}.valid_to > {at})")


def entities_at(catalog: Catalog, tau: datetime | str) -> DataFrame:
    """V_τ: items whose state at τ has an enwiki sitelink (and is not a redirect)."""
    catalog.read("item_timeline").createOrReplaceTempView("emerge_items")
    return catalog._spark().sql(
        "SELECT i.qid, i.enwiki_title, i.label_en, i.description_en, i.created_at "
        f"FROM emerge_items i WHERE {valid_at('i', tau)} "
        "AND i.enwiki_title IS NOT NULL AND i.redirect_to IS NULL"
    )


def triples_at(catalog: Catalog, tau: datetime | str, all_items: bool = False,
               stable: bool = True) -> DataFrame:
    """T_τ: (s, p, o) present at τ with s and o in V_τ (all items with ``all_items``).

    ``stable`` reads the stability-normalized timeline; without it, raw states.
    """
    spark = catalog._spark()
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
