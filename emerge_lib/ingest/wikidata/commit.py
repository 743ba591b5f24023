"""Wikidata history files → statement, item and property timelines: what is Wikidata's in
the ingest (the driver, plan → extract → commit, is ``emerge_lib.ingest.run``).

Produces: statement_timeline, item_timeline, property_timeline, and rows with
wiki='wikidatawiki' in page_watermarks, ingested_files, ingest_rejects. Consumed by:
the transform stages stability, snapshot, deltas and align.

The Python-heavy extraction (``emerge_lib.ingest.wikidata.extract``) runs one process per file; its
staged Parquet is committed here, idempotently, in this order:

1. rows of entities replayed from scratch are deleted, then
2. closures end the intervals an earlier ingest left open (matched on the open row that
   started at or before the watermark, so a rerun never closes a newer row),
3. new interval rows are MERGEd on the table key;
4. then the driver MERGEs the rejects, the watermarks and the file records, last.

Rerunning any step, or the whole ingest, leaves the same tables.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime

from emerge_lib.catalog import Catalog
from emerge_lib.ingest.staging import FileSummary, read_staged
from emerge_lib.ingest.wikidata.extract import (
    EntityFacts,
    StatementVersion,
    Watermark,
    bucket,
)

WATERMARK_COLUMNS = ["page_id", "last_rev_id", "last_timestamp", "first_timestamp",
                     "max_rev_id", "revisions"]


def load_watermarks(catalog: Catalog, wiki: str,
                    page_range: tuple[int, int] | None) -> dict[int, Watermark]:
    """The watermarks of the pages in ``page_range`` (all of the wiki's without one): a
    worker reads only its own file's share of a table with one row per page."""
    table = catalog.read_arrow("page_watermarks", filters=page_filters(wiki, page_range),
                               columns=WATERMARK_COLUMNS)
    out: dict[int, Watermark] = {}
    for page_id, rev, last_ts, first_ts, max_rev, count in zip(
        *(c.to_pylist() for c in table.columns), strict=True
    ):
        out[page_id] = Watermark(
            rev, int(last_ts.timestamp()), int(first_ts.timestamp()) if first_ts else None,
            max_rev, count,
        )
    return out


def load_state(catalog: Catalog, wanted: Mapping[str, Watermark]) -> dict[str, EntityFacts]:
    """Each entity's facts as of its watermark revision, read back from the timelines: the
    statement and item (or property) intervals open then. That is the state an increment
    continues from (``extract``'s module docstring). As of the watermark, not the newest
    rows: after a commit killed before its watermarks, the rows it wrote are newer and the
    rerun writes them again. Entities without a stored item or property row are left out."""
    if not wanted:
        return {}
    ids = sorted(wanted)
    buckets = sorted({bucket(e) for e in ids})
    stmts = catalog.read_arrow("statement_timeline", filters=[
        ("s_bucket", "in", buckets), ("s", "in", ids)], columns=[
        "s", "p", "o", "statement_id", "rank", "qualifiers", "valid_from", "valid_to",
        "rev_from", "rev_to"]).to_pylist()
    versions: dict[str, set[StatementVersion]] = {}
    for r in stmts:
        if _open_at(wanted[r["s"]], r["valid_from"], r["rev_from"], r["valid_to"], r["rev_to"]):
            quals = tuple((q["pid"], q["kind"], q["time"], q["precision"], q["item"])
                          for q in r["qualifiers"] or ())
            versions.setdefault(r["s"], set()).add(StatementVersion(
                r["statement_id"], r["p"], r["o"], r["rank"], quals))
    out: dict[str, EntityFacts] = {}
    items = [e for e in ids if e.startswith("Q")]
    props = [e for e in ids if e.startswith("P")]
    for table, key, names in (("item_timeline", "qid", items), ("property_timeline", "pid", props)):
        if not names:
            continue
        for r in catalog.read_arrow(table, filters=[(key, "in", names)]).to_pylist():
            eid = r[key]
            if not _open_at(wanted[eid], r["valid_from"], r["rev_from"], r["valid_to"], None):
                continue
            out[eid] = EntityFacts(
                frozenset(versions.get(eid, ())), r.get("enwiki_title"), r["label_en"],
                r["description_en"], r.get("redirect_to"), r.get("datatype"))
    return out


def _open_at(wm: Watermark, valid_from: datetime, rev_from: int, valid_to: datetime | None,
             rev_to: int | None) -> bool:
    """Does an interval hold at the watermark revision (time order, then revision id)?
    Without ``rev_to`` (items), an interval that ends in the watermark's second is taken as
    ended before it."""
    mark = (wm.last_timestamp, wm.last_rev_id)
    if (int(valid_from.timestamp()), rev_from) > mark:
        return False
    if valid_to is None:
        return True
    end = int(valid_to.timestamp())
    return end > mark[0] or (end == mark[0] and rev_to is not None and rev_to > mark[1])


def page_filters(wiki: str, page_range: tuple[int, int] | None) -> list[tuple[str, str, object]]:
    filters: list[tuple[str, str, object]] = [("wiki", "=", wiki)]
    if page_range is not None:
        filters += [("page_id", ">=", page_range[0]), ("page_id", "<=", page_range[1])]
    return filters


def commit_staged(catalog: Catalog, summaries: Sequence[FileSummary]) -> None:
    """Steps 1-3 of the module docstring, for the staged outputs of ``summaries``."""
    spark = catalog.session()

    def staged(output: str):
        return read_staged(spark, summaries, output)

    replayed = staged("replayed_entities")
    if replayed is not None:
        for table, col in (("statement_timeline", "s"), ("item_timeline", "qid"),
                           ("property_timeline", "pid")):
            catalog.delete_matching(table, replayed.selectExpr(f"id AS {col}"), on=[col])

    closures = {
        "statement_closures": ("statement_timeline",
                               "t.s = s.s AND t.version_hash = s.version_hash",
                               {"valid_to": "s.valid_to", "rev_to": "s.rev_to"}),
        "item_closures": ("item_timeline", "t.qid = s.id", {"valid_to": "s.valid_to"}),
        "property_closures": ("property_timeline", "t.pid = s.id", {"valid_to": "s.valid_to"}),
    }
    for output, (table, match, assignments) in closures.items():
        df = staged(output)
        if df is not None:
            catalog.update_matching(
                table, df, f"{match} AND t.valid_to IS NULL AND t.rev_from <= s.watermark_rev",
                assignments)

    for table in ("statement_timeline", "item_timeline", "property_timeline"):
        df = staged(table)
        if df is not None:
            catalog.merge(table, df)
