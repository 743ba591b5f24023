"""Wikimedia's daily adds/changes dumps of a sample world (``SampleSpec.increments``).

Why: an incremental ingest must be checked against the full dumps it replaces, and only a
generated world knows both exactly. Layout and names follow dumps.wikimedia.org's
``other/incr/<wiki>/<YYYYMMDD>/``: ``<wiki>-<date>-pages-meta-hist-incr.xml.bz2`` (the
day's revisions with their text, new pages included, grouped by page),
``<wiki>-<date>-stubs-meta-hist-incr.xml.gz`` (the same without text),
``<wiki>-<date>-md5sums.txt``, ``maxrevid.txt`` and ``status.txt`` (``done``). Like
Wikimedia's they carry no moves or deletions as such (a move's null revision is a revision
like any other). The day of ``<date>`` holds the revisions timestamped that day, the rule
the world's full dumps cut by (a full dump of date D holds the revisions before D), so a
full dump of D0 plus the increments of D0 … D1-1 hold exactly the revisions of D1's.
Pages are kept in memory per day until written: this is for small worlds.
"""

from __future__ import annotations

import bz2
import calendar
import gzip
import hashlib
import re
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from emerge_lib.sample import render
from emerge_lib.sample.filler import RevOut
from emerge_lib.sample.model import DAY, ymd

PageSource = Callable[[int], tuple[str, int, list[RevOut]]]
#: a page's title at the end of a day (page id, Unix seconds), None: its one title
TitleAt = Callable[[int, int], str | None]

_TEXT = re.compile(r'(<text bytes="\d+" sha1="[0-9a-z]+") xml:space="preserve">[^<]*</text>')


def incr_folder(mirror: Path, wiki: str, date: str) -> Path:
    return mirror / "other" / "incr" / wiki / date


def incr_names(wiki: str, date: str) -> tuple[str, str]:
    """(pages, stubs) file names of one day's increment."""
    return (f"{wiki}-{date}-pages-meta-hist-incr.xml.bz2",
            f"{wiki}-{date}-stubs-meta-hist-incr.xml.gz")


def stub_of(revision_xml: str) -> str:
    """A revision without its text, as the stubs files have it."""
    return _TEXT.sub(r"\1 />", revision_xml)


@dataclass
class _Day:
    pages: list[str] = field(default_factory=list)
    stubs: list[str] = field(default_factory=list)
    revisions: int = 0
    max_rev: int = 0


def write_increments(mirror: Path, wiki: str, page_ids: Iterable[int], page_of: PageSource,
                     first: int, last: int, title_at: TitleAt | None = None) -> list[str]:
    """The daily increments of ``wiki`` for the days ``first`` … ``last`` (Unix seconds of
    their midnights, inclusive); returns their folders' dates. A page's ``<title>`` is
    the one it has at the end of the day (``title_at``; a page moved that day: its new
    one, as the dump run after the day sees it)."""
    days = {d: _Day() for d in range(first, last + DAY, DAY)}
    max_before = 0  # the wiki's newest revision id before each day (maxrevid.txt)
    for pid in page_ids:
        title, ns, revs = page_of(pid)
        by_day: dict[int, list[RevOut]] = {}
        for rev in revs:
            day = rev[0] - rev[0] % DAY
            if day < first:
                max_before = max(max_before, rev[1])
            if day in days:
                by_day.setdefault(day, []).append(rev)
        for day, kept in by_day.items():
            readable = [r for r in kept if r[3] is not None]
            latest = max(readable, key=lambda r: (r[0], r[1])) if readable else None
            named = (title_at(pid, day + DAY) if title_at else None) or title
            head = render.page_open(named, ns, pid, latest[3] if latest and latest[3] else None)
            out = days[day]
            out.pages.append(head + "".join(r[2] for r in kept) + render.PAGE_CLOSE)
            out.stubs.append(head + "".join(stub_of(r[2]) for r in kept) + render.PAGE_CLOSE)
            out.revisions += len(kept)
            out.max_rev = max(out.max_rev, *(r[1] for r in kept))
    header = render.siteinfo(wiki)
    dates = []
    for day, out in sorted(days.items()):
        max_before = max(max_before, out.max_rev)
        date = ymd(day)
        _publish_day(incr_folder(mirror, wiki, date), wiki, date, header, out, max_before)
        dates.append(date)
    return dates


def _publish_day(folder: Path, wiki: str, date: str, header: str, day: _Day,
                 max_rev: int) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    pages_name, stubs_name = incr_names(wiki, date)
    pages = bz2.compress((header + "".join(day.pages) + render.FOOTER).encode("utf-8"), 9)
    # mtime 0 and no name: the same world gives the same bytes
    stubs = gzip.compress((header + "".join(day.stubs) + render.FOOTER).encode("utf-8"), 9,
                          mtime=0)
    sums = []
    for name, data in ((pages_name, pages), (stubs_name, stubs)):
        (folder / name).write_bytes(data)
        sums.append(f"{hashlib.md5(data).hexdigest()}  {name}\n")
    (folder / f"{wiki}-{date}-md5sums.txt").write_text("".join(sorted(sums, key=lambda s: s[34:])),
                                                       encoding="utf-8")
    (folder / "maxrevid.txt").write_text(f"{max_rev}\n", encoding="utf-8")
    (folder / "status.txt").write_text("done\n", encoding="utf-8")


def day_start(date: str) -> int:
    """Unix seconds of a YYYYMMDD date's midnight (UTC)."""
    return calendar.timegm(time.strptime(date, "%Y%m%d"))
