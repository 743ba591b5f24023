"""What the daily increments lack: a logging dump's deletions and restorations, applied
to the timelines (the ``reconcile`` stage; docs/operations.md, *The reconciliation*).

Why: an increment carries every new revision (a move's null revision included) but not a
page's deletion, nor its restoration; a newer full dump removes what it lacks only once
ingested completely (``ingest.absent``, which shares ``remove_pages``): a page deleted
since then keeps its rows, though a build from the newer full dump alone does not have
it. The logging dump of a dump run (``<wiki>-<date>-pages-logging.xml.gz``, or for the
largest wikis its parts ``pages-logging1..N.xml.gz``, each a range of log ids, read as
one) holds every log event before its date. The rule, per title, over the events from the day
the wiki's deletions are known to (its first full dump, or the last logging dump
reconciled) up to the logging dump's date:

- its last deletion event is a ``delete`` (or ``suppress/delete``) not followed by a
  ``restore``: the page that held the title (by the watermarks: the newest page of that
  title created before the event) loses its rows in every timeline and its watermark,
  exactly what a build from the newer full dump shows (it does not have the page);
- the last is a ``restore``: the restored revisions keep their old ids and are in no
  increment; the log cannot rebuild them, so the page is kept as it is and marked
  ``needs_full_dump`` (counted): the next full dump brings its revisions;
- a ``move``: counted only; its null revision already gave the timelines the new title.

One logging dump is applied as a transaction that a rerun finishes: the record of what it
decides (``reconciled_pages``) first, then the timelines' rows, the watermarks, and the
``reconciled_logs`` row last (the day up to which the wiki is reconciled). A rerun after
a kill decides the same (a recorded event keeps its page), deletes nothing twice, and
writes the same rows.
"""

from __future__ import annotations

import gzip
import logging
import re
import xml.etree.ElementTree as ET
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from emerge_lib.dumps.mirror import is_logging_dump, logging_parts
from emerge_lib.ingest.files import DumpFileRef, IngestError, ingest_lock

if TYPE_CHECKING:
    from emerge_lib.catalog import Catalog

log = logging.getLogger(__name__)

#: the tables a wiki's page rows live in, and the column that names the page
TIMELINES = {"wikidatawiki": (("statement_timeline", "s"), ("item_timeline", "qid"),
                              ("property_timeline", "pid")),
             "enwiki": (("page_timeline", "page_id"), ("paragraph_timeline", "page_id"))}
DELETE = frozenset({("delete", "delete"), ("suppress", "delete")})
RESTORE = frozenset({("delete", "restore")})
ABSENT = "absent_from_full_dump"  # a page a newer complete full dump does not hold
_TARGET = re.compile(r'"4::target";s:\d+:"(.*?)";')


@dataclass(frozen=True)
class LogItem:
    log_id: int
    ts: datetime
    type: str
    action: str
    title: str | None  # None: suppressed (logtitle deleted="deleted")
    params: str = ""  # a move's target among them

    @property
    def target(self) -> str | None:
        """A move's new title: PHP-serialized ``4::target`` (MediaWiki since 2012), or
        the first line of the older plain params."""
        if self.type != "move" or not self.params:
            return None
        m = _TARGET.search(self.params)
        return m.group(1) if m else (self.params.split("\n", 1)[0] or None)


@dataclass
class ReconcileReport:
    """What one logging dump changed in one wiki's timelines."""

    wiki: str
    dump_file: str
    dump_date: str
    events: int = 0
    deleted: int = 0
    needs_full_dump: int = 0
    moves: int = 0
    unmatched: int = 0
    skipped: str = ""  # why nothing was applied (covered by a full dump, ...)
    pages: list[dict[str, Any]] = field(default_factory=list)

    @property
    def changed(self) -> int:
        """Pages whose state the reconciliation changed (the metric)."""
        return self.deleted


def _local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1]


def is_logging(path: str | Path) -> bool:
    """Whether ``path`` is a logging dump (or a part of one) rather than history."""
    return is_logging_dump(str(path))


def in_order(paths: Sequence[str | Path]) -> list[Path]:
    """A logging dump's files in reading order: the one file, or its parts 1..N
    (``dumps.mirror.logging_parts``); IngestError naming the files and the problem."""
    by_name = {Path(p).name: Path(p) for p in paths}
    try:
        if len(by_name) != len(paths):
            raise ValueError("a file named twice")
        return [by_name[name] for name in logging_parts(list(by_name))]
    except ValueError as exc:
        raise IngestError(f"{', '.join(map(str, paths))}: {exc}") from None


def read_logging(path: Path) -> list[LogItem]:
    """The delete, restore and move events of a logging dump; a damaged file fails with
    one line naming it and the problem."""
    out: list[LogItem] = []
    try:
        with gzip.open(path, "rb") as fh:
            for _, el in ET.iterparse(fh, events=("end",)):
                if _local(el.tag) != "logitem":
                    continue
                f = {_local(c.tag): c for c in el}
                kind, action = (f["type"].text or "") if "type" in f else "", \
                    (f["action"].text or "") if "action" in f else ""
                if kind in ("delete", "suppress", "move") and "id" in f and "timestamp" in f:
                    title, params = f.get("logtitle"), f.get("params")
                    out.append(LogItem(
                        int(f["id"].text or 0),
                        datetime.fromisoformat((f["timestamp"].text or "").replace("Z", "+00:00")),
                        kind, action, title.text if title is not None else None,
                        (params.text or "") if params is not None else ""))
                el.clear()
    except (OSError, EOFError, zlib.error, ET.ParseError, ValueError) as exc:
        raise IngestError(f"{path}: not a readable logging dump ({type(exc).__name__}: "
                          f"{exc})") from None
    return out


def _day(date: str) -> datetime:
    return datetime.strptime(date, "%Y%m%d").replace(tzinfo=UTC)


def reach(catalog: Catalog, wiki: str) -> tuple[str, str]:
    """(the date of the wiki's first full dump, the day its timelines reach: its newest
    full dump or the day after its newest increment), YYYYMMDD ('' when none). The first
    full dump is read whole; a newer one ingested completely tells its deletions too (its
    ``reconciled_logs`` row, ``ingest.absent``)."""
    rows = catalog.read_arrow("ingested_files", filters=[("wiki", "=", wiki)],
                              columns=["dump_date", "dump_file", "error"]).to_pylist()
    fulls = [r["dump_date"] for r in rows if r["error"] is None
             and not DumpFileRef.of(r["dump_file"]).increment]
    days = [r["dump_date"] for r in rows if r["error"] is None
            and DumpFileRef.of(r["dump_file"]).increment]
    after = ""
    if days:
        from datetime import timedelta

        after = (_day(max(days)) + timedelta(days=1)).strftime("%Y%m%d")
    return min(fulls, default=""), max([*fulls, after])


def reconciled_to(catalog: Catalog, wiki: str) -> str:
    """The day before which the wiki's deletions and restorations are known: its first
    full dump, or a later logging dump reconciled (YYYYMMDD; '' when neither)."""
    full, _ = reach(catalog, wiki) if catalog.exists("ingested_files") else ("", "")
    logs = (catalog.read_arrow("reconciled_logs", filters=[("wiki", "=", wiki)],
                               columns=["dump_date"]).column("dump_date").to_pylist()
            if catalog.exists("reconciled_logs") else [])
    return max([full, *logs])


def _decide(items: Sequence[LogItem], since: datetime, until: datetime
            ) -> tuple[dict[str, LogItem], list[LogItem], int]:
    """Per title, its last delete or restore event in [since, until); the moves and the
    events counted."""
    last: dict[str, LogItem] = {}
    moves: list[LogItem] = []
    events = 0
    for it in sorted(items, key=lambda x: (x.ts, x.log_id)):
        if not since <= it.ts < until:
            continue
        events += 1
        if it.type == "move":
            moves.append(it)
        elif it.title is not None and ((it.type, it.action) in DELETE
                                       or (it.type, it.action) in RESTORE):
            last[it.title] = it
    return last, moves, events


def _holder(marks: Sequence[dict[str, Any]], title: str, ts: datetime,
            moves: Sequence[LogItem] = (), *, strict: bool = False) -> int | None:
    """The page that held ``title`` at ``ts``: the newest of that title created before
    (``strict``: before, not at, ``ts``); else, when the warehouse knows it by an older
    title (a page moved, then deleted, both after what the timelines read of it), the
    page that held the title it was moved from just before the move (the redirect the
    move left there is created at the move)."""
    held = [m for m in marks if m["title"] == title and (
        m["first_timestamp"] is None
        or (m["first_timestamp"] < ts if strict else m["first_timestamp"] <= ts))]
    if held:
        return max(held, key=lambda m: (m["first_timestamp"] or ts, m["page_id"]))["page_id"]
    earlier = [mv for mv in moves if mv.ts <= ts and mv.target == title and mv.title]
    if not earlier:
        return None
    last = max(earlier, key=lambda mv: (mv.ts, mv.log_id))
    return _holder(marks, last.title or "", last.ts, [mv for mv in moves if mv is not last],
                   strict=True)


def plan_reconcile(catalog: Catalog, wiki: str, items: Sequence[LogItem], *, since: str,
                   dump_file: str, dump_date: str) -> ReconcileReport:
    """What the events of [since, dump_date) do to the wiki's pages (nothing written)."""
    report = ReconcileReport(wiki, dump_file, dump_date)
    last, moves, report.events = _decide(items, _day(since), _day(dump_date))
    report.moves = len(moves)
    marks = catalog.read_arrow("page_watermarks", filters=[("wiki", "=", wiki)],
                               columns=["page_id", "title", "first_timestamp"]).to_pylist() \
        if catalog.exists("page_watermarks") else []
    recorded = {r["log_id"]: r for r in catalog.read_arrow(
        "reconciled_pages", filters=[("wiki", "=", wiki)]).to_pylist()} \
        if catalog.exists("reconciled_pages") else {}
    for title, it in sorted(last.items()):
        done = recorded.get(it.log_id)  # a rerun: the page its first run found
        page_id = done["page_id"] if done is not None else _holder(marks, title, it.ts, moves)
        restored = (it.type, it.action) in RESTORE
        if page_id is None and not restored:
            report.unmatched += 1  # a page the warehouse never held: nothing to remove
            continue
        report.pages.append({
            "wiki": wiki, "log_id": it.log_id, "title": title, "page_id": page_id,
            "action": "needs_full_dump" if restored else "deleted",
            "log_action": f"{it.type}/{it.action}", "timestamp": it.ts,
            "dump_date": dump_date, "dump_file": dump_file})
    report.deleted = sum(p["action"] == "deleted" for p in report.pages)
    report.needs_full_dump = len(report.pages) - report.deleted
    return report


def _page_keys(wiki: str, column: str, pages: Sequence[dict[str, Any]]) -> list[Any]:
    """The values naming the deleted pages in a timeline's ``column``."""
    if column == "page_id":
        return [p["page_id"] for p in pages]
    titles = [p["title"] for p in pages]
    if column == "pid":
        return [t.split(":", 1)[1] for t in titles if t.startswith("Property:")]
    return [t for t in titles if ":" not in t]  # items: the title is the QID


def remove_pages(catalog: Catalog, wiki: str, gone: Sequence[dict[str, Any]]
                 ) -> dict[str, int]:
    """Remove ``gone`` (dicts with ``page_id`` and ``title``) from every timeline of the
    wiki and their watermarks; the rows removed per table (0 on a rerun)."""
    spark = catalog.session()
    removed: dict[str, int] = {}
    for table, column in TIMELINES.get(wiki, ()):
        keys = _page_keys(wiki, column, gone)
        if not keys or not catalog.exists(table):
            continue
        ddl = "page_id bigint" if column == "page_id" else f"{column} string"
        frame = spark.createDataFrame([(k,) for k in keys], ddl)
        before = catalog.row_count(table)
        catalog.delete_matching(table, frame, on=[column])
        removed[table] = before - catalog.row_count(table)
    if gone:
        marks = spark.createDataFrame([(wiki, p["page_id"]) for p in gone],
                                      "wiki string, page_id bigint")
        before = catalog.row_count("page_watermarks")
        catalog.delete_matching("page_watermarks", marks, on=["wiki", "page_id"])
        removed["page_watermarks"] = before - catalog.row_count("page_watermarks")
    return removed


def apply_reconcile(catalog: Catalog, report: ReconcileReport, sha1: str | None) -> dict[str, int]:
    """Write the decisions (record, timelines, watermarks, then the log's row); returns
    the rows removed per table (0 on a rerun: the same tables)."""
    if report.pages:
        catalog.merge("reconciled_pages", catalog.frame("reconciled_pages", report.pages))
    gone = [p for p in report.pages if p["action"] in ("deleted", ABSENT)]
    removed = remove_pages(catalog, report.wiki, gone)
    catalog.merge("reconciled_logs", catalog.frame("reconciled_logs", [{
        "wiki": report.wiki, "dump_date": report.dump_date, "dump_file": report.dump_file,
        "sha1": sha1, "events": report.events, "deleted": report.deleted,
        "needs_full_dump": report.needs_full_dump, "moves": report.moves,
        "unmatched": report.unmatched}]))
    return removed


def reconcile(catalog: Catalog, wiki: str, paths: Sequence[Path], dump_date: str, *,
              sha1s: Sequence[str | None] | None = None
              ) -> tuple[ReconcileReport, dict[str, int]]:
    """Apply one logging dump of ``wiki`` (of the dump run ``dump_date``: its file, or its
    parts in order, with their sha1 where known) to its timelines, under the wiki's
    ingest lock. Refused (IngestError) when the timelines do not reach the dump's date
    (increments up to the day before it): the deletions would be known past what the
    timelines hold. A split dump is one row of ``reconciled_logs``: its parts' names and
    sha1s space-separated (no dump file's name holds a space)."""
    if [p.name for p in in_order(paths)] != [p.name for p in paths]:
        raise IngestError(f"{', '.join(map(str, paths))}: not in the order of their parts")
    name = " ".join(p.name for p in paths)
    sha1 = None if sha1s is None or None in sha1s else " ".join(str(h) for h in sha1s)
    with ingest_lock(catalog, wiki):
        first, reached = reach(catalog, wiki)
        report = ReconcileReport(wiki, name, dump_date)
        if not first:
            report.skipped = "the warehouse holds no full dump of it: nothing to reconcile"
            return report, {}
        since = reconciled_to(catalog, wiki)
        if dump_date <= since:
            report.skipped = f"its deletions are known to {since} already"
            return report, {}
        if reached < dump_date:
            raise IngestError(f"{name}: the {wiki} timelines reach {reached}; ingest the "
                              f"increments up to the day before {dump_date} (or its full "
                              "dump) first")
        items = [it for path in paths for it in read_logging(path)]
        report = plan_reconcile(catalog, wiki, items, since=since, dump_file=name,
                                dump_date=dump_date)
        removed = apply_reconcile(catalog, report, sha1)
    level = logging.WARNING if report.needs_full_dump else logging.INFO
    log.log(level, "%s %s: %d events since %s: %d pages deleted (rows removed), %d restored "
            "(need the next full dump), %d moves (no change), %d deletions of pages not held",
            wiki, dump_date, report.events, since, report.deleted, report.needs_full_dump,
            report.moves, report.unmatched)
    return report, removed
