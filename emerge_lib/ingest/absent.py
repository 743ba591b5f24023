"""A newer full dump, ingested completely, reveals the deletions too (docs/operations.md,
*The reconciliation*).

Why: a full dump read over a warehouse adds and rewrites pages but, page by page, cannot
remove one it does not hold; a page deleted since the older dumps kept its rows, though a
build from the newer dump alone has none. Once every file of the wiki's newest full dump
(what its ``dumpstatus.json`` lists: ``IngestPlan.listing``) is ingested without error,
a page the warehouse holds (``page_watermarks``) whose id is in none of those files
(``dump_pages``: every ``<page>`` a file holds, skipped ones included) and that no
revision since the dump's date touched, was deleted (or is gone otherwise) by that date:
it loses its rows in every timeline and its watermark, as the logging reconciliation
removes a deleted page (``reconcile.remove_pages``), recorded in ``reconciled_pages``
(action ``absent_from_full_dump``). A merged item (a redirect revision), a redirect that
became a page, a restored page: all are in the dump, nothing is removed. Never on a
partial ingest, a dump whose file list is unknown (files given by path without their
``dumpstatus.json``), a file that failed, or a page the reader could not identify.

A transaction a rerun finishes, like a logging dump's: the record first, then the
timelines, the watermarks, and the ``reconciled_logs`` row (the day up to which the
wiki's deletions are known) last; a rerun removes what was recorded again (nothing) and
writes the same rows.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import pyarrow.compute as pc

from emerge_lib.ingest.files import DumpFileRef
from emerge_lib.ingest.reconcile import ABSENT, ReconcileReport, apply_reconcile

if TYPE_CHECKING:
    from emerge_lib.catalog import Catalog
    from emerge_lib.ingest.plan import IngestPlan

log = logging.getLogger(__name__)


def marker(wiki: str, date: str) -> str:
    """The full dump's name in ``reconciled_logs`` (one row per dump, not per file)."""
    return f"{wiki}-{date}-pages-meta-history (full dump)"


def log_id(page_id: int, date: str) -> int:
    """``reconciled_pages``' key for an absent page: negative, never a logitem's id."""
    return -(page_id * 100_000_000 + int(date))


def content_name(name: str) -> str:
    """A dump file's name without its compression suffix (the same pages in any format)."""
    from emerge_lib.ingest.plan import _content_name

    return _content_name(name)


def _disjoint(runs: Iterable[tuple[int, int]]) -> tuple[list[int], list[int]]:
    """Runs of ids merged into sorted disjoint ranges (starts, ends)."""
    starts: list[int] = []
    ends: list[int] = []
    for lo, hi in sorted(runs):
        if ends and lo <= ends[-1] + 1:
            ends[-1] = max(ends[-1], hi)
        else:
            starts.append(lo)
            ends.append(hi)
    return starts, ends


def _held_in(ids: Sequence[int], starts: list[int], ends: list[int]) -> list[bool]:
    import numpy as np

    arr = np.asarray(ids, dtype=np.int64)
    if not starts:
        return [False] * len(arr)
    at = np.searchsorted(np.asarray(starts, dtype=np.int64), arr, side="right") - 1
    tops = np.asarray(ends, dtype=np.int64)[np.maximum(at, 0)]
    held: list[bool] = ((at >= 0) & (arr <= tops)).tolist()
    return held


def _complete(catalog: Catalog, plan: IngestPlan, date: str) -> list[str] | None:
    """The files of the wiki's full dump ``date`` as ingested (every one the listing
    names, without error, page ids recorded, no unidentified broken page), else None
    (said why in one line)."""
    wiki = plan.wiki
    listed = plan.listing[date]
    rows = catalog.read_arrow("ingested_files", filters=[("wiki", "=", wiki),
                                                         ("dump_date", "=", date)],
                              columns=["dump_file", "error"]).to_pylist()
    held = {content_name(r["dump_file"]): r["dump_file"] for r in rows
            if r["error"] is None and not DumpFileRef.of(r["dump_file"]).increment}
    missing = [n for n in listed if n not in held]
    if missing:
        log.info("%s %s: %d of the full dump's %d files ingested (%s… missing): a partial "
                 "full dump removes no page", wiki, date, len(listed) - len(missing),
                 len(listed), missing[0])
        return None
    files = [held[n] for n in listed]
    recorded = set(catalog.read_arrow(
        "dump_pages", filters=[("wiki", "=", wiki), ("dump_file", "in", files)],
        columns=["dump_file"]).column(0).to_pylist()) if catalog.exists("dump_pages") else set()
    unknown = [f for f in files if f not in recorded]
    if unknown:
        log.warning("%s %s: %d file(s) of the full dump were ingested before their page ids "
                    "were recorded (%s): no page is removed; ingest them again with "
                    "dumps.reingest", wiki, date, len(unknown), unknown[0])
        return None
    broken = catalog.read_arrow(
        "ingest_rejects", filters=[("wiki", "=", wiki), ("dump_file", "in", files),
                                   ("reason", "=", "malformed_xml")],
        columns=["page_id"]).column(0).null_count if catalog.exists("ingest_rejects") else 0
    if broken:
        log.warning("%s %s: %d broken page(s) of the full dump have no readable id: no page "
                    "is removed (see ingest_rejects)", wiki, date, broken)
        return None
    return files


def _absent(catalog: Catalog, wiki: str, date: str, files: Sequence[str]
            ) -> list[dict[str, Any]]:
    """The pages the warehouse holds that none of ``files`` holds and that nothing
    touched since ``date`` (their newest revision is older than the dump)."""
    runs = catalog.read_arrow("dump_pages", filters=[("wiki", "=", wiki),
                                                     ("dump_file", "in", list(files))],
                              columns=["id_from", "id_to"])
    starts, ends = _disjoint(zip(runs.column(0).to_pylist(), runs.column(1).to_pylist(),
                                 strict=True))
    day = datetime.strptime(date, "%Y%m%d").replace(tzinfo=UTC)
    marks = catalog.read_arrow("page_watermarks", filters=[("wiki", "=", wiki)],
                               columns=["page_id", "title", "last_timestamp"])
    marks = marks.filter(pc.fill_null(pc.less(marks.column("last_timestamp"), day), False))
    ids = marks.column("page_id").to_pylist()
    titles = marks.column("title").to_pylist()
    ranges = [(DumpFileRef.of(f).page_range, f) for f in files]
    out = []
    for page_id, title, held in zip(ids, titles, _held_in(ids, starts, ends), strict=True):
        if held:
            continue
        source = next((f for r, f in ranges if r is not None and r[0] <= page_id <= r[1]),
                      marker(wiki, date))
        out.append({"wiki": wiki, "log_id": log_id(page_id, date), "title": title,
                    "page_id": page_id, "action": ABSENT, "log_action": "full_dump/absent",
                    "timestamp": day, "dump_date": date, "dump_file": source})
    return out


def reconcile_full_dump(catalog: Catalog, plan: IngestPlan
                        ) -> tuple[ReconcileReport | None, dict[str, int]]:
    """Remove what the wiki's newest full dump lacks, once it is ingested completely (see
    the module docstring); None when there is nothing to decide: no listing of that dump,
    the first full dump of the warehouse, already done, or not complete (said why).
    Called under the wiki's ingest lock, after the commit."""
    wiki = plan.wiki
    rows = catalog.read_arrow("ingested_files", filters=[("wiki", "=", wiki)],
                              columns=["dump_date", "dump_file", "error"]).to_pylist()
    ok = [r for r in rows if r["error"] is None]
    fulls = sorted({r["dump_date"] for r in ok if not DumpFileRef.of(r["dump_file"]).increment})
    if not fulls:
        return None, {}
    date = fulls[-1]
    if not any(r["dump_date"] < date for r in ok):
        return None, {}  # the first full dump: the warehouse holds nothing from before it
    if date not in plan.listing:
        if any(f.ref.dump_date == date for f in plan.files):
            log.info("%s %s: the full dump's file list is unknown (no dumpstatus.json beside "
                     "the files given): no page is removed", wiki, date)
        return None, {}
    name = marker(wiki, date)
    if catalog.exists("reconciled_logs") and catalog.read_arrow(
            "reconciled_logs", filters=[("wiki", "=", wiki), ("dump_file", "=", name)],
            columns=["dump_date"]).num_rows:
        return None, {}  # done: reconciled_logs is written last
    files = _complete(catalog, plan, date)
    if files is None:
        return None, {}
    pages = {p["page_id"]: p for p in _absent(catalog, wiki, date, files)}
    if catalog.exists("reconciled_pages"):  # a rerun after a kill: what the first run found
        for r in catalog.read_arrow("reconciled_pages", filters=[
                ("wiki", "=", wiki), ("action", "=", ABSENT), ("dump_date", "=", date)]
                ).to_pylist():
            pages.setdefault(r["page_id"], r)
    report = ReconcileReport(wiki, name, date, pages=[pages[k] for k in sorted(pages)])
    report.deleted = len(report.pages)
    removed = apply_reconcile(catalog, report, None)
    log.info("%s %s: the full dump is complete (%d files): %d page(s) the warehouse held "
             "are not in it (deleted or gone by %s): removed (%s)", wiki, date, len(files),
             report.deleted, date,
             ", ".join(f"{n} {t} rows" for t, n in sorted(removed.items())) or "no rows")
    return report, removed
