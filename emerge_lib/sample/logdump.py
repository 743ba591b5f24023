"""Wikimedia's logging dump of a sample world, and the events only it (or the next full
dump) reveals (``SampleSpec.logging``).

Why: the daily adds/changes dumps carry every new revision but no deletion and no
restoration (a move's null revision is a revision like any other); the warehouse can only
learn those from ``<wiki>-<date>-pages-logging.xml.gz`` beside a full dump, or from the
next full dump itself. So a world with ``logging`` plants, inside the quarter between its
last two dump dates, what a reconciliation must get right, and writes the logging dump of
every dump run (job ``xmlpagelogsdump``, MediaWiki export-0.11 ``<logitem>``\\ s: id,
timestamp, contributor, comment, type, action, logtitle, params) holding every event
before the run's date:

- an article edited in the quarter, then deleted (``delete/delete``): absent from the
  newer full dump, page and paragraphs;
- an item edited in the quarter, then deleted: absent from the newer full dump;
- an article deleted before the older dump and restored in the quarter
  (``delete/restore``): the newer full dump has it again with its old revisions, which
  no increment holds;
- an article moved in the quarter (``move/move``): a near miss, its null revision
  already tells the increments its new title (the old title becomes a redirect page).

A deleted page's revisions end before its deletion (none is made while it is deleted);
the logging dump has no page ids, only titles (``logtitle``), as Wikimedia's.
"""

from __future__ import annotations

import gzip
import hashlib
from dataclasses import dataclass
from pathlib import Path

from emerge_lib.sample import render
from emerge_lib.sample.mirror import WrittenFile
from emerge_lib.sample.model import DAY, HOUR, Bold, Plan, iso, prose
from emerge_lib.sample.plan import Builder, filler_prose, heading, st, standard_article

LOGGING_JOB = "xmlpagelogsdump"
LOG_FORMAT = "logging"  # WrittenFile.format of a logging dump (gzip; one file a run, or parts)

# plan keys of the planted events (docs/dumps.md, tests/e2e/pipeline/test_incr.py)
DELETED_ARTICLE, DELETED_ITEM = "log:deleted_article", "log:deleted_item"
RESTORED_ARTICLE, MOVED_ARTICLE = "log:restored_article", "log:moved_article"


def logging_name(wiki: str, date: str, part: int = 0) -> str:
    """``<wiki>-<date>-pages-logging.xml.gz``, or part ``part`` of a split one."""
    return f"{wiki}-{date}-pages-logging{part or ''}.xml.gz"


@dataclass(frozen=True)
class LogEvent:
    """One ``<logitem>`` (its id is given when a wiki's events are numbered)."""

    ts: int
    type: str  # delete, move
    action: str  # delete, restore, move
    title: str  # logtitle: the page's full title at the time
    user: str
    comment: str
    params: str = ""  # PHP-serialized, as the dumps write log_params


@dataclass(frozen=True)
class Removal:
    """A planted page's deletion (and restoration): Unix seconds."""

    wiki: str
    key: str
    deleted: int
    restored: int | None = None

    def visible(self, cutoff: int) -> bool:
        """Whether a full dump cut at ``cutoff`` has the page."""
        return not (self.deleted < cutoff and (self.restored is None or self.restored >= cutoff))


def _php_str(text: str) -> str:
    return f's:{len(text.encode("utf-8"))}:"{text}";'


def plant(plan: Plan, older: int, newer: int) -> list[Removal]:
    """Add the planted log events' pages to ``plan`` (older, newer: the last two dump
    cutoffs, the quarter the increments cover); returns the deletions."""
    b = Builder()
    b.plan = plan
    for key, name in ((DELETED_ARTICLE, "Quillon Mews"), (RESTORED_ARTICLE, "Saltmarsh Lyceum"),
                      (MOVED_ARTICLE, "Dunmore Weir")):
        lead = prose(Bold(name), " is a small place described in local records. It is "
                     "known for its old buildings and a weekly market.")
        b.page(key, name, older - 300 * DAY, standard_article(name, "place", lead),
               user="LocalHistorian")
    b.page_edit(DELETED_ARTICLE, newer - 80 * DAY,
                lambda a: a.insert_after(heading("History"), filler_prose("Quillon Mews", "town")),
                "expand history", user="LocalHistorian")
    b.move(MOVED_ARTICLE, older + 14 * DAY + 3 * HOUR, "Dunmore Weir (river)",
           "log:moved_article_old", "Mover")
    b.entity(DELETED_ITEM, "Quillon Mews Society", "org", older - 290 * DAY,
             statements=(st("P31", "core:organization"),))
    b.edit(DELETED_ITEM, older + 9 * DAY, lambda s: s.with_sitelink("frwiki", "Quillon Mews"),
           "/* wbsetsitelink-add:1|frwiki */ Quillon Mews", user="ExampleEditor")
    for page in plan.pages.values():
        page.revs.sort(key=lambda r: r.ts)
    return [Removal("enwiki", DELETED_ARTICLE, older + 30 * DAY + 10 * HOUR),
            Removal("wikidatawiki", DELETED_ITEM, older + 33 * DAY + 2 * HOUR),
            Removal("enwiki", RESTORED_ARTICLE, older - 20 * DAY, older + 45 * DAY + 5 * HOUR)]


def events(plan: Plan, removals: list[Removal]) -> dict[str, list[LogEvent]]:
    """Every wiki's log events (planted page moves, the deletions and restorations),
    in time order; page ids must be assigned (an item's title is its QID)."""
    out: dict[str, list[LogEvent]] = {"wikidatawiki": [], "enwiki": []}
    for page in plan.pages.values():
        for (_, old), (ts, new) in zip(page.titles, page.titles[1:], strict=False):
            mover = next((r.user for r in page.revs if r.ts == ts and r.user), "Mover")
            out["enwiki"].append(LogEvent(
                ts, "move", "move", old, mover, "",
                f'a:2:{{{_php_str("4::target")}{_php_str(new)}'
                f'{_php_str("5::noredir")}{_php_str("0")}}}'))
    for r in removals:
        title = (plan.pages[r.key].title if r.wiki == "enwiki"
                 else plan.entities[r.key].title)
        why = ("[[WP:A7]]: No credible indication of importance" if r.wiki == "enwiki"
               else "Does not meet the [[Wikidata:Notability|notability policy]]")
        out[r.wiki].append(LogEvent(r.deleted, "delete", "delete", title, "AdminOne", why))
        if r.restored is not None:
            revs = len(plan.pages[r.key].revs)
            out[r.wiki].append(LogEvent(
                r.restored, "delete", "restore", title, "AdminTwo",
                f"{revs} revisions restored: deletion review",
                f'a:1:{{{_php_str("count")}a:2:{{{_php_str("revisions")}i:{revs};'
                f'{_php_str("files")}i:0;}}}}'))
    return {w: sorted(e, key=lambda x: (x.ts, x.title)) for w, e in out.items()}


def _logitem(log_id: int, e: LogEvent) -> str:
    comment = f"    <comment>{render.xml_escape(e.comment)}</comment>\n" if e.comment else ""
    params = (f'    <params xml:space="preserve">{render.xml_escape(e.params)}</params>\n'
              if e.params else '    <params xml:space="preserve" />\n')
    return (
        f"  <logitem>\n    <id>{log_id}</id>\n    <timestamp>{iso(e.ts)}</timestamp>\n"
        f"    <contributor>\n      <username>{render.xml_escape(e.user)}</username>\n"
        f"      <id>{render.user_id(e.user)}</id>\n    </contributor>\n{comment}"
        f"    <type>{e.type}</type>\n    <action>{e.action}</action>\n"
        f"    <logtitle>{render.xml_escape(e.title)}</logtitle>\n{params}  </logitem>\n")


def write_logging(folder: Path, wiki: str, date: str, cutoff: int,
                  wiki_events: list[LogEvent], *, parts: int = 1) -> list[WrittenFile]:
    """The logging dump of one run: every event before ``cutoff``, ids numbered in time
    order from 1 (the same event keeps its id in every run); with ``parts`` > 1 in that
    many files, ``pages-logging1..N.xml.gz``, each a whole document holding a range of
    ids (some may hold none), as the largest wikis' logging dumps are split."""
    items = [_logitem(n, e) for n, e in enumerate(wiki_events, 1) if e.ts < cutoff]
    folder.mkdir(parents=True, exist_ok=True)
    out = []
    for k in range(parts):
        chunk = items[len(items) * k // parts:len(items) * (k + 1) // parts]
        xml = (render.siteinfo(wiki) + "".join(chunk) + render.FOOTER).encode("utf-8")
        data = gzip.compress(xml, 9, mtime=0)  # mtime 0: the same world gives the same bytes
        name = logging_name(wiki, date, k + 1 if parts > 1 else 0)
        (folder / name).write_bytes(data)
        out.append(WrittenFile(name, len(data), hashlib.md5(data).hexdigest(),
                               hashlib.sha1(data).hexdigest(), len(xml), 0, 0, LOG_FORMAT))
    return out
