"""Title resolution: (title, τ) → QID through enwiki redirects and Wikidata sitelinks as of τ.

docs/semantics.md §1.1 Mentions and §1.2 item 7: a link target is followed through
redirects as they
were at τ (page_timeline), then the item whose enwiki sitelink at τ is the final title
(an item_timeline state in V_τ, ``_sql.in_v``) gives the QID. Nothing is guessed; every title
gets one status:

| status | meaning |
|---|---|
| ok | resolved to a QID |
| no_page | no article page had this title at τ |
| no_item | the final page exists, but no item links to it at τ |
| redirect_loop | the redirect chain comes back to a title it already visited |
| dead_end | a redirect points to no page at τ, or out of the article namespace |
| too_many_hops | still a redirect after ``max_hops`` redirects were followed |

Several pages can claim one title at the same τ (a move over a page the dump no longer
holds): the one that took it most recently wins (greatest valid_from, then page_id). Two
items with the same sitelink at τ: the lowest QID number wins.

Spark SQL / DataFrame only (no UDFs): one left join per hop. Each hop's result is
materialized (Sail does not cache) and only the titles still on a redirect go on to the
next hop, which stops when none is left: most titles settle at the first hop, so the
later hops join a few rows instead of every title again (the statuses are the same).
"""

from __future__ import annotations

import logging
from datetime import datetime
from functools import reduce
from typing import Any

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from emerge_lib.catalog import Catalog
from emerge_lib.catalog.sql import in_v
from emerge_lib.core.schedule import as_utc

log = logging.getLogger(__name__)

STATUSES = ("ok", "no_page", "no_item", "redirect_loop", "dead_end", "too_many_hops")
_RESOLVED = "_resolved"  # internal: a non-redirect page was reached, its item is next


def _valid_at(frame: DataFrame, tau: Any) -> Any:
    return (frame.valid_from <= tau) & (frame.valid_to.isNull() | (frame.valid_to > tau))


def resolve_titles(catalog: Catalog, titles: DataFrame, tau: datetime | str | None = None,
                   *, max_hops: int, resolve_redirects: bool) -> DataFrame:
    """Resolve normalized article titles to QIDs as of τ.

    ``titles`` has a ``title`` column; with ``tau`` None it also needs a timestamp column
    ``tau`` (each row resolved as of its own τ, e.g. every window end at once). Returns one
    row per distinct input: (title, [tau,] qid, status, hops), hops = redirects followed.
    ``max_hops`` has no default: callers pass ``passages.max_redirect_hops``, so the
    configuration is the only place the limit is set. ``resolve_redirects``
    (``deltas.resolve_redirects``): a title names the surviving item of a merge
    (``transform.redirects``).
    """
    if max_hops < 0:
        raise ValueError(f"max_hops must be >= 0, got {max_hops}")
    per_row = tau is None
    if tau is None:
        if "tau" not in titles.columns:
            raise ValueError("titles needs a `tau` column when no tau is given")
        state = titles.select(F.col("title").cast("string"), F.col("tau").cast("timestamp"))
    else:
        state = titles.select(F.col("title").cast("string")).withColumn(
            "tau", F.lit(as_utc(tau)).cast("timestamp"))
    state = (
        state.distinct()
        .withColumn("cur", F.col("title"))
        .withColumn("hops", F.lit(0))
        .withColumn("status", F.lit(None).cast("string"))
        .withColumn("visited", F.array(F.col("title")))
    )
    pages = catalog.read("page_timeline").select(
        F.col("title").alias("p_title"), "page_id", "valid_from", "valid_to", "is_redirect",
        "redirect_target",
    )
    pick = Window.partitionBy("title", "tau").orderBy(
        F.col("valid_from").desc_nulls_last(), F.col("page_id").desc_nulls_last())
    done: list[DataFrame] = []
    for _ in range(max_hops + 1):
        joined = state.join(
            pages, (state.cur == pages.p_title) & _valid_at(pages, state.tau), "left")
        joined = joined.withColumn("_rn", F.row_number().over(pick)).filter("_rn = 1")
        target = F.col("redirect_target")
        new_status = (
            F.when(F.col("page_id").isNull(),
                   F.when(F.col("hops") == 0, F.lit("no_page")).otherwise(F.lit("dead_end")))
            .when(~F.col("is_redirect"), F.lit(_RESOLVED))
            .when(target.isNull(), F.lit("dead_end"))
            .when(F.array_contains(F.col("visited"), target), F.lit("redirect_loop"))
            .when(F.col("hops") >= max_hops, F.lit("too_many_hops"))
        )
        follow = F.col("page_id").isNotNull() & F.col("is_redirect") & new_status.isNull()
        step = catalog.materialize(joined.select(
            "title", "tau",
            F.when(follow, target).otherwise(F.col("cur")).alias("cur"),
            F.when(follow, F.col("hops") + 1).otherwise(F.col("hops")).alias("hops"),
            new_status.alias("status"),
            F.when(follow, F.concat(F.col("visited"), F.array(target)))
            .otherwise(F.col("visited")).alias("visited"),
        ))
        done.append(step.filter(F.col("status").isNotNull()))
        state = step.filter(F.col("status").isNull())  # the redirects still followed
        if not state.limit(1).collect():
            break
    state = reduce(DataFrame.unionByName, done, state)
    from emerge_lib.transform.redirects import items as item_timeline

    items = item_timeline(catalog, resolve_redirects).alias("i").filter(
        F.expr(in_v("i"))).select(
        "qid", F.col("enwiki_title").alias("i_title"), "valid_from", "valid_to")
    joined = state.join(
        items,
        (state.status == F.lit(_RESOLVED)) & (state.cur == items.i_title)
        & _valid_at(items, state.tau),
        "left",
    )
    first_item = Window.partitionBy("title", "tau").orderBy(
        F.length("qid").asc_nulls_last(), F.col("qid").asc_nulls_last())
    joined = joined.withColumn("_rn", F.row_number().over(first_item)).filter("_rn = 1")
    status = (
        F.when(F.col("status") != F.lit(_RESOLVED), F.col("status"))
        .when(F.col("qid").isNotNull(), F.lit("ok"))
        .otherwise(F.lit("no_item"))
    )
    cols = ["title", "tau"] if per_row else ["title"]
    return joined.select(*cols, "qid", status.alias("status"), "hops")


def status_counts(resolved: DataFrame) -> dict[str, int]:
    """How many titles ended in each status (every status listed, zeros included); logged,
    because unresolved links are tallied, never silently dropped."""
    counts = dict.fromkeys(STATUSES, 0)
    for row in resolved.groupBy("status").count().collect():
        counts[row["status"]] = row["count"]
    log.info("title resolution: %s", ", ".join(f"{k} {v}" for k, v in counts.items()))
    return counts
