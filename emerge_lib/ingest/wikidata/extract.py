"""One Wikidata history file → interval rows (the Python-heavy half of ingest).

A pure worker: it streams one dump file, turns each page's revisions (ordered by
timestamp, then revision id: dumps are not always in time order) into maximal validity
intervals, and writes Parquet files into a staging folder, one per output. The parent
(`ingest.wikidata.commit`) commits them to Delta. It runs in a local process pool, or as a
mapped Airflow task, or inside Spark's mapInArrow on a cluster: it touches no engine.

Incremental: with a page's watermark (the last ingested revision), only revisions past it
are decoded; the watermark revision is decoded once to know which intervals are open, and
those that end are emitted as closures (matched on the open row, valid_to IS NULL). A new
revision dated before the watermark (a late import) makes the page replay its whole
history, replacing the page's rows.

A daily adds/changes increment (``increment``: Wikimedia's ``pages-meta-hist-incr``) holds
only the day's revisions, not the watermark revision: a page the warehouse holds continues
from the state the warehouse stored as of its watermark (``state_at``: the intervals open
at the watermark revision, read back by ``ingest.wikidata.commit.load_state``), never
replayed from the increment alone. It is refused (``partial_history``, the page keeps its
rows) when the increment does not follow on from the watermark: a revision whose parent is
neither in the file nor among the ingested revisions (a skipped day), or one dated before
the watermark (a late import: its replay needs the whole history, the next full dump's).
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import msgspec
import pyarrow as pa

from emerge_lib.dumps import wikidata
from emerge_lib.dumps.xml import Page, Revision
from emerge_lib.ingest.staging import (
    PARTIAL,
    PARTIAL_GAP,
    PARTIAL_LATE,
    FileSummary,
    PageRuns,
    Quarantine,
    StagedOutputs,
)

log = logging.getLogger(__name__)

ITEM_NS, PROPERTY_NS = 0, 120
ENTITY_MODELS = {"wikibase-item", "wikibase-property"}
BUCKETS = 64  # s_bucket / qid_bucket: spreads timelines over files for pruning
_MICROS = pa.timestamp("us", tz="UTC")


@dataclass(frozen=True)
class Watermark:
    """What an earlier ingest saw of a page."""

    last_rev_id: int  # the newest revision in time: where the state continues
    last_timestamp: int  # unix seconds
    first_timestamp: int | None = None
    max_rev_id: int | None = None  # revision ids are assigned increasingly: new ones exceed it
    revisions: int | None = None  # how many revisions the page had then

    @property
    def seen_up_to(self) -> int:
        return self.max_rev_id if self.max_rev_id is not None else self.last_rev_id


class StatementVersion(msgspec.Struct, frozen=True, cache_hash=True, gc=False):
    """One state of one statement; a change of any field starts a new interval.

    A frozen Struct with a cached hash: replay does set operations on these for every
    revision whose claims changed. The row values below are computed when an interval is
    written, about once per version (no cache: functools.cached_property takes a lock).
    """

    statement_id: str
    p: str
    o: str
    rank: str
    qualifiers: tuple[tuple[Any, ...], ...]

    @property
    def version_hash(self) -> str:
        raw = repr((self.statement_id, self.p, self.o, self.rank, self.qualifiers))
        return hashlib.blake2b(raw.encode(), digest_size=10).hexdigest()

    @property
    def qualifier_rows(self) -> list[dict[str, Any]]:
        return [_qualifier_row(q) for q in self.qualifiers] if self.qualifiers else []


class EntityFacts(msgspec.Struct, frozen=True, gc=False):
    """The facts of one revision that the timelines keep (a Struct: built per revision)."""

    statements: frozenset[StatementVersion]
    enwiki_title: str | None
    label_en: str | None
    description_en: str | None
    redirect_to: str | None
    datatype: str | None = None


def bucket(entity_id: str) -> int:
    digits = "".join(ch for ch in entity_id if ch.isdigit())
    return int(digits or 0) % BUCKETS


def _ts(seconds: int | None) -> datetime | None:
    return None if seconds is None else datetime.fromtimestamp(seconds, UTC)


class VersionCache:
    """One page's StatementVersions: the same object for a statement seen before (set
    operations between revisions then compare by identity), found first by the identity
    of the parser's Statement (which it reuses for unchanged properties), else by value."""

    def __init__(self) -> None:
        self.by_statement: dict[int, tuple[wikidata.Statement, StatementVersion | None]] = {}
        self.by_key: dict[tuple[Any, ...], StatementVersion] = {}

    def clear(self) -> None:
        self.by_statement.clear()
        self.by_key.clear()


def _version_key(st: wikidata.Statement) -> tuple[Any, ...]:
    quals = tuple((q.pid, q.kind, q.time, q.precision, q.qid) for q in st.qualifiers)
    return (st.statement_id or "", st.pid, st.value_qid, st.rank, quals)


def statement_versions(
    statements: tuple[wikidata.Statement, ...], cache: VersionCache | None = None
) -> frozenset[StatementVersion]:
    """Keep item-valued statements: the only ones T uses."""
    if cache is None:
        return frozenset(StatementVersion(*_version_key(st)) for st in statements
                         if st.value_qid is not None)
    out = []
    by_statement, by_key = cache.by_statement, cache.by_key
    for st in statements:
        hit = by_statement.get(id(st))
        if hit is not None and hit[0] is st:  # the stored Statement keeps its id unique
            v = hit[1]
        else:
            v = None
            if st.value_qid is not None:
                key = _version_key(st)
                v = by_key.get(key)
                if v is None:
                    v = by_key[key] = StatementVersion(*key)
            by_statement[id(st)] = (st, v)
        if v is not None:
            out.append(v)
    return frozenset(out)


def facts_of(entity: wikidata.EntityState | wikidata.EntityScan,
             versions: frozenset[StatementVersion] | None = None) -> EntityFacts:
    """The item-level fields plus the item-valued statement versions."""
    return EntityFacts(
        statements=statement_versions(entity.statements) if versions is None else versions,
        enwiki_title=entity.enwiki_title,
        label_en=entity.label_en,
        description_en=entity.description_en,
        redirect_to=entity.redirect_to,
        datatype=getattr(entity, "datatype", None),
    )


class _Outputs(StagedOutputs):
    NAMES = (
        "statement_timeline", "statement_closures", "item_timeline", "item_closures",
        "property_timeline", "property_closures", "page_watermarks", "ingest_rejects",
        "replayed_entities", "dump_pages",
    )
    EXTRA = {
        "statement_closures": pa.schema([
            ("s", pa.string()), ("version_hash", pa.string()), ("valid_to", _MICROS),
            ("rev_to", pa.int64()), ("watermark_rev", pa.int64())]),
        "item_closures": pa.schema([
            ("id", pa.string()), ("valid_to", _MICROS), ("watermark_rev", pa.int64())]),
        "property_closures": pa.schema([
            ("id", pa.string()), ("valid_to", _MICROS), ("watermark_rev", pa.int64())]),
        "replayed_entities": pa.schema([("id", pa.string())]),
    }


class _PageState:
    """Open intervals of one entity while its revisions are replayed in time order."""

    def __init__(self, eid: str, is_property: bool, created: int | None) -> None:
        self.eid = eid
        self.bucket = bucket(eid)
        self.is_property = is_property
        self.created = created
        self.open: dict[StatementVersion, tuple[int, int]] = {}  # version → (rev, ts)
        self.item: tuple[EntityFacts, int, int] | None = None  # facts, rev, ts
        self.watermark_rev: int | None = None  # set when continuing an earlier ingest


def _item_key(f: EntityFacts) -> tuple[Any, ...]:
    return (f.enwiki_title, f.label_en, f.description_en, f.redirect_to, f.datatype)


class WikidataFileExtractor(Quarantine):
    """Streams one file; see the module docstring."""

    def __init__(
        self,
        path: str | Path,
        staging: str | Path,
        wiki: str = "wikidatawiki",
        dump_file: str | None = None,
        dump_date: str | None = None,
        watermarks: dict[int, Watermark] | None = None,
        threads: int | None = 1,
        scan_entities: bool = True,
        replace_pages: bool = False,
        state_at: Callable[[Mapping[str, Watermark]], dict[str, EntityFacts]] | None = None,
    ) -> None:
        self.path = Path(path)
        self.wiki = wiki
        self.dump_file = dump_file or self.path.name
        self.dump_date = dump_date or ""
        self.watermarks = watermarks or {}
        self.threads = threads
        # a re-ingest: every page's stored rows are replaced (unless the warehouse holds a
        # newer state of it), not continued from its watermark
        self.replace_pages = replace_pages
        # an adds/changes increment: stored pages continue from the warehouse's state
        self.state_at = state_at
        self.increment = state_at is not None
        self.empty_ok = self.increment  # a quiet day has no revision
        self._stored: dict[str, EntityFacts] = {}  # entity → its facts at the watermark
        stem = self.dump_file.replace("/", "_")
        self.out = _Outputs(str(staging), stem)
        # consecutive revisions mostly share their claims: the parser reuses the decoded
        # statements (same object), and so do we
        self.parser = wikidata.EntityParser()
        self.scan_entities = scan_entities  # the C scanner (when built); False: Python only
        self._last_statements: tuple[wikidata.Statement, ...] | None = None
        self._last_versions: frozenset[StatementVersion] = frozenset()
        self._last_facts: EntityFacts | None = None
        self._versions_cache = VersionCache()
        self.summary = FileSummary(self.dump_file, self.dump_date)
        self.page_ids = PageRuns()

    def entity_scanner(self) -> Any:
        return wikidata.entity_scanner() if self.scan_entities else None

    # -- decoding ------------------------------------------------------------------------
    def decode(self, page: Page, rev: Revision) -> EntityFacts | None:
        """Facts of one revision, or None (and a reject row) when it cannot be read."""
        scan = rev.entity  # the C scanner read the text: a valid current-format entity
        if scan is not None:  # with the fields _facts reads (EntityParser.parse_scan)
            return self._facts(scan)
        if rev.text_deleted or rev.text is None:
            self.reject(page.page_id, page.title, rev.rev_id, "text_deleted",
                        "revision text is deleted or suppressed")
            return None
        if rev.model is not None and rev.model not in ENTITY_MODELS:
            self.reject(page.page_id, page.title, rev.rev_id, "unknown_content_model",
                        str(rev.model))
            return None
        try:
            entity = self.parser.parse(rev.text)
        except wikidata.EntityParseError as exc:
            self.reject(page.page_id, page.title, rev.rev_id, exc.reason, str(exc))
            return None
        return self._facts(entity)

    def _facts(self, entity: wikidata.EntityState | wikidata.EntityScan) -> EntityFacts:
        self.summary.decoded += 1
        if entity.statements is not self._last_statements:
            self._last_statements = entity.statements
            self._last_versions = statement_versions(entity.statements, self._versions_cache)
        last = self._last_facts
        if (  # most edits touch other languages, aliases or references: same facts
            last is not None
            and last.statements is self._last_versions
            and last.enwiki_title == entity.enwiki_title
            and last.label_en == entity.label_en
            and last.description_en == entity.description_en
            and last.redirect_to == entity.redirect_to
            and last.datatype == getattr(entity, "datatype", None)
        ):
            return last
        self._last_facts = facts = facts_of(entity, self._last_versions)
        return facts

    # -- emitting ------------------------------------------------------------------------
    def _open_statement(self, st: _PageState, v: StatementVersion, rev: int, ts: int) -> None:
        st.open[v] = (rev, ts)

    def _close_statement(self, st: _PageState, v: StatementVersion, rev_to: int | None,
                         ts_to: int | None, emit_full: bool) -> None:
        rev_from, ts_from = st.open.pop(v)
        if emit_full:
            self.out.add_values("statement_timeline", (
                st.eid, v.p, v.o, v.statement_id, v.rank, v.version_hash, v.qualifier_rows,
                ts_from, ts_to, rev_from, rev_to, st.bucket,
            ))
        else:  # it was written open by an earlier ingest: close it in place
            self.out.add("statement_closures", {
                "s": st.eid, "version_hash": v.version_hash, "valid_to": _ts(ts_to),
                "rev_to": rev_to, "watermark_rev": st.watermark_rev,
            })

    def _emit_item(self, st: _PageState, facts: EntityFacts, rev_from: int, ts_from: int,
                   ts_to: int | None) -> None:
        if st.is_property:
            self.out.add_values("property_timeline", (
                st.eid, ts_from, ts_to, rev_from, facts.label_en, facts.description_en,
                facts.datatype,
            ))
        else:
            self.out.add_values("item_timeline", (
                st.eid, ts_from, ts_to, rev_from, facts.enwiki_title, facts.label_en,
                facts.description_en, st.created, facts.redirect_to, st.bucket,
            ))

    def replay(self, st: _PageState, revisions: Iterable[tuple[int, int, EntityFacts]],
               already_written: bool) -> None:
        """Apply revisions (rev_id, ts, facts) in time order; emit every interval that ends.

        ``already_written``: the open intervals in ``st`` were written (open) by an earlier
        ingest, so their ends are closures, not full rows.
        """
        item_written = already_written
        stmt_written = set(st.open) if already_written else set()
        # After each revision the open statements are exactly its statements; consecutive
        # revisions mostly share the same (identical) statement set: nothing to compare.
        same_as_open: frozenset[StatementVersion] | None = None
        for rev_id, ts, facts in revisions:
            if facts.statements is not same_as_open:
                # set differences in C: an edit changes one statement of an item's dozens
                for v in st.open.keys() - facts.statements:
                    self._close_statement(st, v, rev_id, ts, emit_full=v not in stmt_written)
                    stmt_written.discard(v)
                for v in facts.statements.difference(st.open):
                    self._open_statement(st, v, rev_id, ts)
                same_as_open = facts.statements
            if st.item is None or (st.item[0] is not facts
                                   and _item_key(st.item[0]) != _item_key(facts)):
                if st.item is not None:
                    prev, prev_rev, prev_ts = st.item
                    if item_written:
                        kind = "property_closures" if st.is_property else "item_closures"
                        self.out.add(kind, {"id": st.eid, "valid_to": _ts(ts),
                                            "watermark_rev": st.watermark_rev})
                    else:
                        self._emit_item(st, prev, prev_rev, prev_ts, ts)
                st.item = (facts, rev_id, ts)
                item_written = False
        # still-open intervals: written with valid_to NULL (unless written before)
        for v, (rev_from, ts_from) in list(st.open.items()):
            if v not in stmt_written:
                self.out.add_values("statement_timeline", (
                    st.eid, v.p, v.o, v.statement_id, v.rank, v.version_hash, v.qualifier_rows,
                    ts_from, None, rev_from, None, st.bucket,
                ))
        if st.item is not None and not item_written:
            facts, rev_from, ts_from = st.item
            self._emit_item(st, facts, rev_from, ts_from, None)

    # -- pages ---------------------------------------------------------------------------
    def entity_id(self, page: Page) -> str | None:
        if page.ns == ITEM_NS and page.title[:1] == "Q" and page.title[1:].isdigit():
            return page.title
        if page.ns == PROPERTY_NS:
            name = page.title.split(":", 1)[-1]
            if name[:1] == "P" and name[1:].isdigit():
                return name
        return None

    def process_page(self, page: Page, replay_all: bool = False) -> bool:
        """Returns False when the page must be replayed from its first revision."""
        if not replay_all:  # a replay's second pass reads pages seen already
            self.page_ids.add(page.page_id)
        eid = self.entity_id(page)
        if eid is None:  # talk, user, project, lexeme... pages: the scanner skips to </page>
            self.summary.skipped_pages += 1
            return True
        if not replay_all:  # a replayed page was counted on the first pass
            self.summary.pages += 1
        self._versions_cache.clear()  # keeps memory flat; ids never repeat across pages
        wm = None if replay_all else self.watermarks.get(page.page_id)
        if wm is not None and self.increment:
            self._continue_page(page, eid, wm)
            return True
        new: list[tuple[int, int, EntityFacts]] = []
        at_watermark: EntityFacts | None = None
        watermark_rev: Revision | None = None  # decoded only if the page has new revisions
        first_ts: int | None = None
        last_ts = last_rev = 0  # the newest revision seen, by (timestamp, revision id)
        max_rev = 0
        count = old_count = 0
        seen_up_to = wm.seen_up_to if wm is not None else -1  # ids up to it were ingested
        decode = self.decode
        try:  # the hot loop: locals only
            for rev in page:
                count += 1
                ts, rid = rev.timestamp, rev.rev_id
                if first_ts is None:
                    first_ts = last_ts = ts
                    last_rev = rid
                else:
                    if ts < first_ts:
                        first_ts = ts
                    if ts > last_ts or (ts == last_ts and rid > last_rev):
                        last_ts, last_rev = ts, rid
                if rid > max_rev:
                    max_rev = rid
                if rid <= seen_up_to:
                    old_count += 1
                    if wm is not None and rid == wm.last_rev_id:
                        watermark_rev = rev
                    continue
                facts = decode(page, rev)
                if facts is not None:
                    new.append((rid, ts, facts))
        finally:
            if not replay_all:
                self.summary.revisions += count
        last = (last_ts, last_rev) if count else None
        if page.reject is not None:
            return True  # already a reject row; keep what earlier ingests wrote
        if last is None:
            self.reject(page.page_id, page.title, None, "no_revisions", "page has no revisions")
            return True
        if wm is not None:
            if max_rev < wm.seen_up_to:
                return True  # an older dump than the one already ingested: nothing new
            if old_count == 0:
                self.reject(page.page_id, page.title, None, "partial_history", PARTIAL)
                return True  # replaying it from these revisions alone would lose the rest
            if self.replace_pages:
                return False  # a re-ingest rewrites the page whole
            if wm.revisions is not None and old_count != wm.revisions:
                # a revision with a small id appeared (an import) or one vanished (deleted):
                # the history before the watermark changed, so replay the page
                return False
            if not new:
                return True  # nothing past the watermark
            if watermark_rev is not None:
                at_watermark = self.decode(page, watermark_rev)
            if at_watermark is None or any(ts < wm.last_timestamp for _, ts, _ in new):
                return False  # late revision or lost watermark revision: replay the page
        new.sort(key=lambda r: (r[1], r[0]))
        created = wm.first_timestamp if wm is not None and wm.first_timestamp else first_ts
        state = _PageState(eid, page.ns == PROPERTY_NS, created)
        if wm is not None and at_watermark is not None:
            for v in at_watermark.statements:
                state.open[v] = (wm.last_rev_id, wm.last_timestamp)
            state.item = (at_watermark, wm.last_rev_id, wm.last_timestamp)
            state.watermark_rev = wm.last_rev_id
            self.replay(state, new, already_written=True)
        else:
            if replay_all or self.replace_pages:
                self.out.add("replayed_entities", {"id": eid})
            self.replay(state, new, already_written=False)
        self.out.add_values("page_watermarks", (
            self.wiki, page.page_id, page.title, last[1], last[0], max_rev, count, created,
            self.dump_date, self.dump_file,
        ))
        return True

    def _continue_page(self, page: Page, eid: str, wm: Watermark) -> None:
        """A stored page in an increment: its revisions after the watermark (in time) on
        top of the warehouse's state at the watermark (see the module docstring)."""
        mark = (wm.last_timestamp, wm.last_rev_id)
        new: list[tuple[int, int, EntityFacts]] = []
        ids: set[int] = set()
        parents: list[int | None] = []
        count = late = 0
        max_rev = wm.seen_up_to
        last = mark  # the newest revision, by (timestamp, revision id)
        for rev in page:
            count += 1
            if (rev.timestamp, rev.rev_id) <= mark:
                late += 1  # already ingested (a rerun), or dated before the watermark
                continue
            ids.add(rev.rev_id)
            parents.append(rev.parent_id)
            max_rev = max(max_rev, rev.rev_id)
            last = max(last, (rev.timestamp, rev.rev_id))
            facts = self.decode(page, rev)
            if facts is not None:
                new.append((rev.rev_id, rev.timestamp, facts))
        self.summary.revisions += count
        if page.reject is not None or not ids:
            if not count:
                self.reject(page.page_id, page.title, None, "no_revisions",
                            "page has no revisions")
            return  # broken (its reject row is written), or nothing past the watermark
        gap = [p for p in parents if p is None or (p > wm.seen_up_to and p not in ids)]
        if late or gap or eid not in self._stored:
            detail = PARTIAL_LATE if late else PARTIAL_GAP if gap else PARTIAL
            self.reject(page.page_id, page.title, None, "partial_history", detail)
            return
        new.sort(key=lambda r: (r[1], r[0]))
        at_watermark = self._stored[eid]
        state = _PageState(eid, page.ns == PROPERTY_NS, wm.first_timestamp)
        for v in at_watermark.statements:
            state.open[v] = (wm.last_rev_id, wm.last_timestamp)
        state.item = (at_watermark, wm.last_rev_id, wm.last_timestamp)
        state.watermark_rev = wm.last_rev_id
        self.replay(state, new, already_written=True)
        self.out.add_values("page_watermarks", (
            self.wiki, page.page_id, page.title, last[1], last[0], max_rev,
            (wm.revisions or 0) + len(ids), wm.first_timestamp, self.dump_date, self.dump_file,
        ))

    def _stored_pages(self) -> None:
        """The warehouse's state at the watermark of every stored page of the increment
        (a first pass that reads no revision: one read per table, not one per page)."""
        assert self.state_at is not None
        wanted: dict[str, Watermark] = {}
        for page in self._pages():
            eid = self.entity_id(page)
            wm = self.watermarks.get(page.page_id)
            if eid is not None and wm is not None:
                wanted[eid] = wm
        self._stored = self.state_at(wanted) if wanted else {}

    def _pages(self, only: set[int] | None = None) -> Iterator[Page]:
        with self.open_dump(text_bytes=True, entity_scanner=self.entity_scanner()) as dump:
            for page in dump:
                if only is not None and page.page_id not in only:
                    continue
                yield page

    def _read(self) -> None:
        if self.increment:
            self._stored_pages()
        replay: set[int] = set()
        for page in self._pages():
            if not self.process_page(page):
                replay.add(page.page_id)
        if replay:
            self.summary.replayed_pages = len(replay)
            for page in self._pages(replay):
                self.process_page(page, replay_all=True)

    def run(self) -> FileSummary:
        return self.read_guarded(self._read)


def _qualifier_row(q: tuple[Any, ...]) -> dict[str, Any]:
    pid, kind, time_value, precision, item = q
    instant = wikidata.time_to_instant(time_value, precision) if time_value else None
    return {"pid": pid, "kind": kind, "time": time_value, "precision": precision,
            "instant": instant, "item": item}


def extract_file(path: str, staging: str, wiki: str, dump_file: str, dump_date: str,
                 watermarks: dict[int, Watermark], threads: int | None = 1) -> FileSummary:
    """Process-pool entry point (picklable arguments, picklable result)."""
    return WikidataFileExtractor(path, staging, wiki, dump_file, dump_date, watermarks,
                                 threads).run()
