"""One Wikipedia history file → page and paragraph timelines (the Python-heavy half).

A pure worker, like `ingest.wikidata.extract`: it streams one dump file and writes Parquet
into a staging folder; `ingest.wikipedia.commit` commits it. Per article page (namespace
0; other namespaces are skipped without reading their revisions):

* **Every revision** (cheap: no wikitext cleaning) gives the page's title and redirect
  state. Runs of equal (title, is_redirect, redirect_target) become `page_timeline` rows.
  Redirects are read from the text (`#REDIRECT [[…]]`, any case, MediaWiki's variants);
  the page's `<redirect title=…>` tag, which describes the newest revision only, can
  upgrade that revision to a redirect. Titles are rebuilt backwards from the page's
  current `<title>` using the null revisions page moves leave (`X moved page [[A]] to
  [[B]]`, `moved [[A]] to [[B]]`, `[[A]] moved to [[B]]`), applied only when B is the
  title the page has at that point (the redirect left behind at A carries the same
  comment and must not be renamed). Times when the page was outside namespace 0 (a draft
  moved into articles) have no rows. A title that differs from what an earlier dump saw,
  without a move comment to explain it, is taken from that dump up to its last revision.
* **Only revisions inside the requested ranges** (for each range [a, b]: the revision
  current at a, and every revision in (a, b]) are cleaned with `extract_paragraphs`, and
  each paragraph hash's presence runs over those revisions become `paragraph_timeline`
  rows: present from first_seen_rev until the first later selected revision without it
  (removed_rev/removed_at; NULL when still present at the last one). The text, index,
  mentions, tokens and markup ratio are those of the run's first revision.

Revisions are ordered by (timestamp, rev_id): dumps are not always in time order, so a
page's revision metadata is sorted at the page's end (texts are not kept, only the
paragraphs of selected revisions, interned). A revision whose text is deleted, or whose
content model is not wikitext, is a reject row; it keeps the previous redirect state and
is not a paragraph state (revision-deleted text is mostly vandalism).

Incremental: a page whose newest revision equals its watermark, written by a file whose
coverage already includes the requested ranges, is skipped; a page whose stored state is
newer than this file is skipped too. Every other page is written whole (its old rows are
deleted by the commit), which keeps increments simple and exact.

A daily adds/changes increment (``state_at``) lacks the revisions before the watermark: a
stored page is written whole from its stored rows as of the watermark (``StoredPage``)
and the day's revisions: the page run open at the watermark continues, the paragraph
runs open then continue, closed rows are kept. One subtlety: the older dump cleaned the
watermark revision W as the base of the ranges that start after it; once a revision of
the increment precedes such a start, it is that range's base instead, and unless W lies
in a range or is still another range's base, the full history would not clean W at all:
its effect is undone (the runs it opened are dropped, those it closed reopened). Refused
(``partial_history``) as in Wikidata: a revision whose parent was never ingested (a
skipped day), one dated before the watermark, and a page whose watermark revision could
not be read (its state is not the stored one).
"""

from __future__ import annotations

import hashlib
import logging
import re
from bisect import bisect_left
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import pyarrow as pa

from emerge_lib.dumps.xml import Page
from emerge_lib.ingest.staging import (
    PARTIAL,
    PARTIAL_GAP,
    PARTIAL_LATE,
    FileSummary,
    PageRuns,
    Quarantine,
    StagedOutputs,
)
from emerge_lib.ingest.wikipedia.coverage import Range, merge_ranges
from emerge_lib.text.titles import is_redirect, normalize_title, redirect_target
from emerge_lib.text.wikitext import Mention, Paragraph, extract_paragraphs

log = logging.getLogger(__name__)

ARTICLE_NS = 0
WIKITEXT_MODELS = {None, "wikitext"}
DEFER_LIMIT = 64 << 20  # bytes of wikitext buffered per page before cleaning eagerly
US = 1_000_000


# Page-move comments, newest MediaWiki wording first (MediaWiki:1movedto2 and _redir).
_MOVE = re.compile(
    r"(?:^|\s)moved page \[\[([^\[\]|]+)\]\] to \[\[([^\[\]|]+)\]\]"
    r"|^\s*moved \[\[([^\[\]|]+)\]\] to \[\[([^\[\]|]+)\]\]"
    r"|^\s*\[\[([^\[\]|]+)\]\] moved to \[\[([^\[\]|]+)\]\]"
)
_SPACES = re.compile(r"[\s_]+")


@dataclass(frozen=True)
class PageMark:
    """What an earlier ingest saw of a page (from page_watermarks)."""

    last_rev_id: int
    last_timestamp: int  # unix seconds
    title: str | None = None
    skippable: bool = False  # the file that wrote it covered the ranges asked for now
    max_rev_id: int | None = None  # ids grow: a late import has a new id, an old date


Row = dict[str, Any]  # a stored row, as pyarrow reads it
PageState = tuple[str, bool, str | None]  # a page run's (title, is_redirect, target)


@dataclass
class StoredPage:
    """A page's stored rows, read back for an increment (``commit.load_pages``)."""

    page_rows: list[Row] = field(default_factory=list)
    paragraph_rows: list[Row] = field(default_factory=list)
    last_unreadable: bool = False  # its watermark revision is a reject: state unknown
    first_us: int | None = None  # its first revision's time (page_watermarks), in µs


Key = tuple[int, int]  # (timestamp, revision id): the order of a page's revisions


@dataclass
class WikipediaFileSummary(FileSummary):
    """FileSummary plus the Wikipedia-specific counts."""

    unchanged_pages: int = 0  # skipped: nothing new since the watermark, ranges covered
    stale_pages: int = 0  # skipped: the stored state is newer than this file
    moves: int = 0  # title changes rebuilt from move comments
    unexplained_moves: int = 0  # titles taken from an earlier dump's watermark
    in_range: int = 0  # revisions in the ranges (cleaned, or their text seen before)
    page_runs: int = 0
    paragraph_runs: int = 0


def title_key(raw: str) -> tuple[str, bool]:
    """(canonical title, is an article title): article titles as `normalize_title`;
    other namespaces folded the same simple way so that move comments can be compared."""
    norm = normalize_title(raw)
    if norm is not None:
        return norm, True
    folded = _SPACES.sub(" ", raw).strip()
    if not folded:
        return "", False
    ns, sep, rest = folded.partition(":")
    if sep and rest:
        rest = rest.strip()
        folded = f"{ns.strip()[:1].upper()}{ns.strip()[1:]}:{rest[:1].upper()}{rest[1:]}"
    else:
        folded = folded[:1].upper() + folded[1:]
    return folded, False


def parse_move(comment: str | None) -> tuple[str, str] | None:
    """(from, to) raw titles of a page-move comment, else None."""
    if not comment or "moved" not in comment:
        return None
    m = _MOVE.search(comment)
    if m is None:
        return None
    g = m.groups()
    for i in (0, 2, 4):
        if g[i] is not None:
            return g[i], g[i + 1]
    return None  # pragma: no cover - one alternative always matched




class _Outputs(StagedOutputs):
    NAMES = ("page_timeline", "paragraph_timeline", "page_watermarks", "ingest_rejects",
             "written_pages", "dump_pages")
    EXTRA = {"written_pages": pa.schema([("page_id", pa.int64())])}


class _Meta:
    """One revision's cheap facts."""

    __slots__ = ("key", "move", "redirect", "text_ok")

    def __init__(self, key: tuple[int, int], move: tuple[str, str] | None,
                 redirect: tuple[bool, str | None] | None, text_ok: bool) -> None:
        self.key = key  # (timestamp, rev_id)
        self.move = move
        self.redirect = redirect  # (is_redirect, target); None when the text is unknown
        self.text_ok = text_ok


class WikipediaFileExtractor(Quarantine):
    """Streams one file; see the module docstring."""

    def __init__(
        self,
        path: str | Path,
        staging: str | Path,
        ranges: Sequence[Range],
        wiki: str = "enwiki",
        dump_file: str | None = None,
        dump_date: str | None = None,
        marks: dict[int, PageMark] | None = None,
        threads: int | None = 1,
        state_at: Callable[[Mapping[int, PageMark]], dict[int, StoredPage]] | None = None,
    ) -> None:
        self.path = Path(path)
        self.state_at = state_at  # an adds/changes increment: stored pages continue
        self.empty_ok = state_at is not None
        self._stored: dict[int, StoredPage] = {}
        self.ranges = merge_ranges(ranges)
        self.starts = [a for a, _ in self.ranges]
        self.wiki = wiki
        self.dump_file = dump_file or self.path.name
        self.dump_date = dump_date or ""
        self.marks = marks or {}
        self.threads = threads
        self.out = _Outputs(str(staging), self.dump_file.replace("/", "_"))
        self.summary = WikipediaFileSummary(self.dump_file, self.dump_date)
        self.page_ids = PageRuns()

    # -- one page ------------------------------------------------------------------------
    def process_page(self, page: Page) -> None:
        self.page_ids.add(page.page_id)
        if page.ns != ARTICLE_NS:
            self.summary.skipped_pages += 1  # the reader skips its revisions unread
            return
        self.summary.pages += 1
        mark = self.marks.get(page.page_id)
        defer = mark is not None and mark.skippable
        ranges, starts = self.ranges, self.starts
        n_ranges = len(ranges)
        metas: list[_Meta] = []
        # per range: the newest readable revision at or before its start, with its text
        base: list[tuple[tuple[int, int], str] | None] = [None] * n_ranges
        selected: dict[int, str] = {}  # rev_id → text of revisions inside a range
        cleaned: dict[int, list[Paragraph]] = {}
        deferred = 0
        max_rev = -1
        cleaner = _Cleaner(self.summary)
        parents: dict[int, int | None] = {}
        for rev in page:
            self.summary.revisions += 1
            parents[rev.rev_id] = rev.parent_id
            key = (rev.timestamp, rev.rev_id)
            if rev.rev_id > max_rev:
                max_rev = rev.rev_id
            text = rev.text
            ok = True
            if rev.text_deleted or text is None:
                self.reject(page.page_id, page.title, rev.rev_id, "text_deleted",
                            "revision text is deleted or suppressed")
                ok = False
            elif rev.model not in WIKITEXT_MODELS:
                self.reject(page.page_id, page.title, rev.rev_id, "unknown_content_model",
                            str(rev.model))
                ok = False
            redirect = None
            if ok:
                redirect = (True, redirect_target(text)) if is_redirect(text) else (False, None)
            metas.append(_Meta(key, parse_move(rev.comment), redirect, ok))
            if not ok or not n_ranges:
                continue
            i = bisect_left(starts, key[0])  # ranges[i:] start at or after this revision
            if i and key[0] <= ranges[i - 1][1]:
                if defer:
                    selected[rev.rev_id] = text
                    deferred += len(text)
                    if deferred > DEFER_LIMIT:  # too much to hold: clean as we go
                        defer = False
                        for rid, t in selected.items():
                            cleaned[rid] = cleaner.clean(t)
                        selected.clear()
                else:
                    cleaned[rev.rev_id] = cleaner.clean(text)
            for j in range(i, n_ranges):
                # best[j] grows with j, so once this revision loses it loses for all later j
                cur = base[j]
                if cur is not None and cur[0] >= key:
                    break
                base[j] = (key, text)
        if page.reject is not None:
            return  # a broken page: its reject row is written, its stored rows are kept
        if not metas:
            self.reject(page.page_id, page.title, None, "no_revisions", "page has no revisions")
            return
        metas.sort(key=lambda m: m.key)
        newest = metas[-1].key
        if mark is not None and self.state_at is not None:
            for rid, t in selected.items():
                cleaned[rid] = cleaner.clean(t)
            for entry in base:
                if entry is not None and entry[0][1] not in cleaned:
                    cleaned[entry[0][1]] = cleaner.clean(entry[1])
            self._continue_page(page, mark, metas, parents, cleaned)
            return
        if mark is not None and all(m.key[1] > mark.last_rev_id for m in metas):
            self.reject(page.page_id, page.title, None, "partial_history", PARTIAL)
            return  # rebuilt from the newer revisions alone, it would lose its history
        if mark is not None:
            stored = (mark.last_timestamp, mark.last_rev_id)
            if mark.max_rev_id is not None:
                stale = max_rev < mark.max_rev_id
                same = max_rev == mark.max_rev_id and newest == stored
            else:
                stale, same = newest < stored, newest == stored
            if stale:
                self.summary.stale_pages += 1
                return
            if same and mark.skippable:
                self.summary.unchanged_pages += 1
                return
            self.summary.replayed_pages += 1
        for rid, t in selected.items():
            cleaned[rid] = cleaner.clean(t)
        for entry in base:
            if entry is not None and entry[0][1] not in cleaned:
                cleaned[entry[0][1]] = cleaner.clean(entry[1])
        titles = self._titles(page, metas, mark)
        self._page_runs(page, metas, titles)
        self._paragraph_runs(page.page_id, metas, titles, cleaned)
        self.out.add("written_pages", {"page_id": page.page_id})
        self.out.add("page_watermarks", {
            "wiki": self.wiki, "page_id": page.page_id, "title": page.title,
            "last_rev_id": newest[1], "last_timestamp": newest[0] * US, "max_rev_id": max_rev,
            "first_timestamp": metas[0].key[0] * US, "dump_date": self.dump_date,
            "dump_file": self.dump_file,
        })

    def _titles(self, page: Page, metas: list[_Meta],
                mark: PageMark | None) -> list[tuple[str, bool]]:
        """Each revision's (title, is_article), rebuilt backwards from the current title."""
        current = title_key(page.title)
        known = title_key(mark.title) if mark is not None and mark.title else None
        out: list[tuple[str, bool]] = [current] * len(metas)
        for i in range(len(metas) - 1, -1, -1):
            m = metas[i]
            if known is not None and m.key[1] == mark.last_rev_id:  # type: ignore[union-attr]
                if current != known:
                    self.summary.unexplained_moves += 1
                    current = known
                known = None
            out[i] = current
            if m.move is not None:
                src, dst = m.move
                if title_key(dst)[0] == current[0]:
                    current = title_key(src)
                    self.summary.moves += 1
        return out

    def _page_runs(self, page: Page, metas: list[_Meta], titles: list[tuple[str, bool]],
                   run: tuple[PageState | None, Key] | None = None,
                   redirect: tuple[bool, str | None] = (False, None)) -> None:
        """``run`` and ``redirect``: the state an earlier ingest left open (an increment)."""
        newest = len(metas) - 1
        state: PageState | None = None
        for i, m in enumerate(metas):
            if m.redirect is not None:
                redirect = m.redirect
            if i == newest and page.redirect and not redirect[0]:
                # the <redirect> tag describes the newest revision (e.g. a non-English
                # magic word the text rule does not know)
                tag = normalize_title(page.redirect_title) if page.redirect_title else None
                redirect = (True, tag)
            title, is_article = titles[i]
            state = (title, redirect[0], redirect[1]) if is_article else None
            if run is not None and run[0] == state:
                continue
            if run is not None:
                self._emit_page_run(page.page_id, run, m.key)
            run = (state, m.key)
        if run is not None:
            self._emit_page_run(page.page_id, run, None)

    def _emit_page_run(self, page_id: int, run: tuple[PageState | None, Key],
                       end: tuple[int, int] | None) -> None:
        state, start = run
        if state is None:
            return  # outside namespace 0 then
        self.summary.page_runs += 1
        self.out.add("page_timeline", {
            "page_id": page_id, "title": state[0], "valid_from": start[0] * US,
            "valid_to": None if end is None else end[0] * US, "rev_from": start[1],
            "rev_to": None if end is None else end[1], "is_redirect": state[1],
            "redirect_target": state[2],
        })

    def _paragraph_runs(self, page_id: int, metas: list[_Meta],
                        titles: list[tuple[str, bool]],
                        cleaned: dict[int, list[Paragraph]],
                        open_runs: dict[str, tuple[Paragraph, Key]] | None = None) -> None:
        """``open_runs``: the runs an earlier ingest left open (an increment)."""
        self.summary.in_range += len(cleaned)
        open_runs = {} if open_runs is None else open_runs
        if not cleaned and not open_runs:
            return
        for i, m in enumerate(metas):
            paragraphs = cleaned.get(m.key[1])
            if paragraphs is None:
                continue
            if not titles[i][1]:
                paragraphs = []  # not an article then: no paragraphs
            present: dict[str, Paragraph] = {}
            for p in paragraphs:
                present.setdefault(p.hash, p)
            for h in [h for h in open_runs if h not in present]:
                self._emit_paragraph_run(page_id, open_runs.pop(h), m.key)
            for h, p in present.items():
                if h not in open_runs:
                    open_runs[h] = (p, m.key)
        for run in open_runs.values():
            self._emit_paragraph_run(page_id, run, None)

    def _emit_paragraph_run(self, page_id: int, run: tuple[Paragraph, tuple[int, int]],
                            end: tuple[int, int] | None) -> None:
        p, start = run
        self.summary.paragraph_runs += 1
        self.out.add("paragraph_timeline", {
            "page_id": page_id, "paragraph_hash": p.hash, "paragraph_idx": p.index,
            "text": p.text,
            "mentions": [{"start": x.start, "end": x.end, "anchor": x.anchor, "target": x.target}
                         for x in p.mentions],
            "tokens": p.tokens, "markup_ratio": p.markup_ratio,
            "first_seen_rev": start[1], "first_seen_at": start[0] * US,
            "removed_rev": None if end is None else end[1],
            "removed_at": None if end is None else end[0] * US,
        })

    # -- a stored page in an increment ---------------------------------------------------
    def _continue_page(self, page: Page, mark: PageMark, metas: list[_Meta],
                       parents: Mapping[int, int | None],
                       cleaned: dict[int, list[Paragraph]]) -> None:
        """The page whole: its stored rows as of the watermark and the day's revisions
        (the module docstring)."""
        w: Key = (mark.last_timestamp, mark.last_rev_id)
        new = [m for m in metas if m.key > w]
        if not new:
            return  # read before (a rerun): nothing past the watermark
        seen = mark.max_rev_id if mark.max_rev_id is not None else mark.last_rev_id
        ids = {m.key[1] for m in new}
        stored = self._stored.get(page.page_id)
        detail = (PARTIAL_LATE if len(new) < len(metas) else
                  PARTIAL_GAP if any(p is None or (p > seen and p not in ids)
                                     for p in (parents[i] for i in ids)) else
                  PARTIAL if stored is None or stored.last_unreadable else None)
        if detail is not None:
            self.reject(page.page_id, page.title, None, "partial_history", detail)
            return
        assert stored is not None
        self.summary.replayed_pages += 1
        cleaned = {rid: ps for rid, ps in cleaned.items() if rid in ids}
        drop_w = self._w_dropped(w, new)
        run, redirect = self._stored_page_runs(page.page_id, stored, w)
        open_runs = self._stored_paragraph_runs(page.page_id, stored, w, drop_w)
        titles = self._titles(page, new, None)
        self._page_runs(page, new, titles, run, redirect)
        self._paragraph_runs(page.page_id, new, titles, cleaned, open_runs)
        self.out.add("written_pages", {"page_id": page.page_id})
        newest = new[-1].key
        self.out.add("page_watermarks", {
            "wiki": self.wiki, "page_id": page.page_id, "title": page.title,
            "last_rev_id": newest[1], "last_timestamp": newest[0] * US,
            "max_rev_id": max(seen, *ids), "first_timestamp": stored.first_us,
            "dump_date": self.dump_date, "dump_file": self.dump_file,
        })

    def _w_dropped(self, w: Key, new: list[_Meta]) -> bool:
        """Did the older dump clean the watermark revision W only as the base of ranges
        that a revision of the increment now bases (so the full history would not)?"""
        first_ok = next((m.key[0] for m in new if m.text_ok), None)
        inside = any(a < w[0] <= b for a, b in self.ranges)
        bases = [a for a, _ in self.ranges if a >= w[0]]  # W was their base then
        if inside or not bases or first_ok is None:
            return False
        return all(a >= first_ok for a in bases)

    def _stored_page_runs(self, page_id: int, stored: StoredPage, w: Key
                          ) -> tuple[tuple[PageState | None, Key], tuple[bool, str | None]]:
        """Re-emit the page runs closed by W; the one open at W is returned to continue."""
        run: tuple[PageState | None, Key] = (None, w)
        redirect: tuple[bool, str | None] = (False, None)
        for r in stored.page_rows:
            start = (_seconds(r["valid_from"]), r["rev_from"])
            if start > w:
                continue  # written by a commit killed before its watermarks: again below
            end = None if r["valid_to"] is None else (_seconds(r["valid_to"]), r["rev_to"])
            if end is not None and end <= w:
                self._emit_page_run(page_id, ((r["title"], r["is_redirect"],
                                               r["redirect_target"]), start), end)
            else:
                run = ((r["title"], r["is_redirect"], r["redirect_target"]), start)
                redirect = (r["is_redirect"], r["redirect_target"])
        return run, redirect

    def _stored_paragraph_runs(self, page_id: int, stored: StoredPage, w: Key,
                               drop_w: bool) -> dict[str, tuple[Paragraph, Key]]:
        """Re-emit the paragraph runs closed by W (before it, when W's cleaning is undone);
        those open then are returned to continue."""
        open_runs: dict[str, tuple[Paragraph, Key]] = {}
        for r in stored.paragraph_rows:
            start = (_seconds(r["first_seen_at"]), r["first_seen_rev"])
            end = None if r["removed_at"] is None else (_seconds(r["removed_at"]),
                                                        r["removed_rev"])
            if start > w or (drop_w and start == w):
                continue  # a killed commit's, or opened by W, whose cleaning is undone
            p = Paragraph(r["paragraph_idx"], 0, r["text"],
                          [Mention(m["start"], m["end"], m["anchor"], m["target"])
                           for m in r["mentions"] or ()],
                          r["tokens"], r["markup_ratio"], r["paragraph_hash"])
            closed = end is not None and (end < w if drop_w else end <= w)
            if closed:
                self._emit_paragraph_run(page_id, (p, start), end)
            else:
                open_runs[p.hash] = (p, start)
        return open_runs

    # -- the file ------------------------------------------------------------------------
    def _read(self) -> None:
        if self.state_at is not None:
            with self.open_dump() as dump:  # the stored pages: one read per table
                wanted = {page.page_id: self.marks[page.page_id] for page in dump
                          if page.ns == ARTICLE_NS and page.page_id in self.marks}
            self._stored = self.state_at(wanted) if wanted else {}
        with self.open_dump() as dump:
            for page in dump:
                self.process_page(page)

    def run(self) -> WikipediaFileSummary:
        return self.read_guarded(self._read)  # type: ignore[return-value]


def _seconds(value: datetime) -> int:
    return int(value.timestamp())


class _Cleaner:
    """extract_paragraphs with two per-page caches: identical texts (reverts, null
    revisions) are cleaned once, and identical paragraphs share one object."""

    def __init__(self, summary: WikipediaFileSummary) -> None:
        self.summary = summary
        self.by_text: dict[bytes, list[Paragraph]] = {}
        self.interned: dict[tuple[Any, ...], Paragraph] = {}

    def clean(self, text: str) -> list[Paragraph]:
        # a digest, not (len, hash): a collision must not hand out another text's
        # paragraphs, and the texts themselves are not kept alive by the cache
        k = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()
        hit = self.by_text.get(k)
        if hit is not None:
            return hit
        self.summary.decoded += 1
        out = []
        for p in extract_paragraphs(text):
            ik = (p.hash, p.index, p.markup_ratio, tuple(p.mentions))
            out.append(self.interned.setdefault(ik, p))
        self.by_text[k] = out
        return out


def extract_file(path: str, staging: str, ranges: list[Range], wiki: str, dump_file: str,
                 dump_date: str, marks: dict[int, PageMark],
                 threads: int | None = 1) -> WikipediaFileSummary:
    """Process-pool / Spark entry point (picklable arguments, picklable result)."""
    return WikipediaFileExtractor(path, staging, ranges, wiki, dump_file, dump_date, marks,
                                  threads).run()
