"""The dump reader, layered like mwxml: :class:`Dump` iterates :class:`Page` objects and a
page iterates its :class:`Revision` records lazily (a page with a million revisions is
never held in memory); a page not fully consumed is skipped when the next is asked for.

Malformed input never kills the file: a structurally broken page is reported as a
:class:`PageReject` (through ``on_reject`` and ``Dump.rejects``), its revision iterator
stops, and the scanner resynchronizes at the next ``<page>``. Unknown but well-formed
elements (future schema additions) are skipped and counted in ``Dump.unknown_tags``. A
stream that ends before ``</mediawiki>`` raises :class:`TruncatedXMLError` after the
complete pages before the cut have been yielded: a short file must never pass as done.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, BinaryIO

import msgspec

from emerge_lib.dumps.xml.escape import _ustr, unescape, unescape_text
from emerge_lib.dumps.xml.revision import (
    Revision,
    _int_or_none,
    _parse_canonical_revision,
    _parse_revision,
    _TextOf,
)
from emerge_lib.dumps.xml.scanner import (
    _CHUNK,
    _STRUCTURAL,
    MalformedXMLError,
    TruncatedXMLError,
    _attrs,
    _PageBroken,
    _recode_if_utf16,
    _Scanner,
    _split_tag,
)

try:  # the C build's batch of canonical revisions (setup.py; optional)
    from emerge_lib.dumps._native import canonical_revisions as _canonical_batch_c
except ImportError:  # pragma: no cover - exercised where no compiler exists
    _canonical_batch_c = None


class SiteInfo(msgspec.Struct, frozen=True):
    """``<siteinfo>`` of the dump plus the export schema version."""

    sitename: str | None
    dbname: str | None
    base: str | None
    generator: str | None
    case: str | None
    namespaces: dict[int, str]
    schema_version: str | None
    lang: str | None


class PageReject(msgspec.Struct, frozen=True):
    """A page the scanner could not read completely; ``offset`` is in decompressed bytes.

    ``partial=False``: the page's revision stream stopped here (structural damage; the
    scanner resynchronized at the next page). ``partial=True``: one well-delimited revision
    with an unreadable value was dropped and the page continued.
    """

    offset: int
    page_id: int | None
    title: str | None
    reason: str
    revisions_read: int
    partial: bool = False




#: the namespace of every MediaWiki export (export-0.3 … export-0.11; http or https)
MEDIAWIKI_NS = b"www.mediawiki.org/xml/export-"
_HEADER_WINDOW = 1 << 16


_HEADER_FIELD = re.compile(rb"<(title|ns|id|restrictions)>([^<]*)</\1>|<redirect(\s[^>]*?)?\s*/>")


#: what Dump._parse_at returns for a revision it did not make: the page ended (rejected),
#: or this revision alone was dropped
_BROKEN, _DROPPED = object(), object()


class Page:
    """A page header plus a lazy, single-pass iterator over its revisions."""

    __slots__ = (
        "_dump",
        "_done",
        "ns",
        "page_id",
        "redirect",
        "redirect_title",
        "reject",
        "restrictions",
        "title",
        "revisions_read",
    )

    def __init__(
        self,
        dump: Dump,
        page_id: int,
        ns: int,
        title: str,
        redirect: bool,
        redirect_title: str | None,
        restrictions: str | None,
    ) -> None:
        self._dump = dump
        self._done = False
        self.page_id = page_id
        self.ns = ns
        self.title = title
        self.redirect = redirect
        self.redirect_title = redirect_title
        self.restrictions = restrictions
        self.reject: PageReject | None = None
        self.revisions_read = 0

    def __iter__(self) -> Iterator[Revision]:
        dump = self._dump
        while not self._done:
            batch = dump._canonical_batch(self)
            if batch:  # consecutive canonical revisions parsed in one C call
                for rev in batch:
                    self.revisions_read += 1
                    yield rev
                continue
            rev = dump._next_revision(self)
            if rev is None:
                return
            self.revisions_read += 1
            yield rev

    def __repr__(self) -> str:
        return f"Page(page_id={self.page_id}, ns={self.ns}, title={self.title!r})"


class Dump:
    """An open export dump: ``site_info`` is read eagerly, pages lazily by iterating.

    ``on_reject`` receives each :class:`PageReject` (they are also kept in ``rejects``);
    with ``strict=True`` a broken page raises :class:`MalformedXMLError` instead.
    ``fragment=True`` reads a run of ``<page>`` elements without the ``<mediawiki>``
    envelope (a byte range of a multistream file): EOF between pages is then a normal end.
    """

    def __init__(
        self,
        stream: BinaryIO,
        *,
        on_reject: Callable[[PageReject], None] | None = None,
        strict: bool = False,
        chunk_size: int = _CHUNK,
        close_stream: bool = False,
        fragment: bool = False,
        text_bytes: bool = False,
        entity_scanner: Any = None,
    ) -> None:
        self._raw_stream = stream
        # text_bytes: revisions carry their main text as unescaped UTF-8 bytes, not str,
        # for consumers that decode bytes themselves (msgspec): one decode less per revision
        self._text_bytes = text_bytes
        # entity_scanner (wikidata.entity_scanner(); C build, text_bytes): JSON texts of
        # canonical revisions are read without unescaping them (Revision.entity)
        self._entity_scanner = entity_scanner
        self._text_of: _TextOf = unescape if text_bytes else unescape_text
        self._stream = _recode_if_utf16(stream)
        self._sc = _Scanner(self._stream, chunk_size)
        self._on_reject = on_reject
        self._strict = strict
        self._close_stream = close_stream
        self._current: Page | None = None
        self._finished = False
        self.rejects: list[PageReject] = []
        self.unknown_tags: Counter[str] = Counter()
        self._fragment = fragment
        if fragment:
            self.site_info = SiteInfo(None, None, None, None, None, {}, None, None)
        else:
            self.site_info = self._read_header()

    # -- construction helpers -------------------------------------------------------
    @classmethod
    def from_file(
        cls,
        path: str | os.PathLike[str],
        *,
        on_reject: Callable[[PageReject], None] | None = None,
        strict: bool = False,
        threads: int | None = None,
        text_bytes: bool = False,
        entity_scanner: Any = None,
    ) -> Dump:
        """Open a plain or compressed dump file (see :func:`compressed.open_dump`)."""
        from emerge_lib.dumps.compressed import open_dump

        stream = open_dump(path, threads=threads)
        try:
            return cls(stream, on_reject=on_reject, strict=strict, close_stream=True,
                       text_bytes=text_bytes, entity_scanner=entity_scanner)
        except BaseException:
            stream.close()
            raise

    def close(self) -> None:
        if self._close_stream:
            self._raw_stream.close()

    def __enter__(self) -> Dump:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def offset(self) -> int:
        """Decompressed bytes consumed so far (for progress and reject positions)."""
        return self._sc.mark

    @property
    def _pos(self) -> int:
        return self._sc.mark

    @_pos.setter
    def _pos(self, value: int) -> None:
        self._sc.mark = value

    # -- header ---------------------------------------------------------------------
    def _read_header(self) -> SiteInfo:
        try:
            return self._read_header_values()
        except ValueError as exc:  # a bad value in <mediawiki> or <siteinfo>: no dump
            if isinstance(exc, MalformedXMLError):
                raise
            raise MalformedXMLError(f"bad value in the dump header: {exc}", 0) from exc

    def _read_header_values(self) -> SiteInfo:
        sc = self._sc
        while len(sc.buf) < _HEADER_WINDOW and not sc.eof:
            sc.fill()  # the root element must come early: never scan a whole non-dump
        i = sc.buf.find(b"<mediawiki", 0, _HEADER_WINDOW)
        if i < 0:
            sc.out_of_data()
            raise MalformedXMLError("no <mediawiki> root element: not a MediaWiki export", 0)
        lt, gt = sc.next_tag(i)
        if gt < 0:
            raise TruncatedXMLError("stream ends inside <mediawiki>", lt)
        attrs = _attrs(sc.slice(lt + 1, gt))
        self._pos = gt + 1
        namespace = attrs.get(b"xmlns")
        if namespace is not None and not namespace.split(b"://", 1)[-1].startswith(MEDIAWIKI_NS):
            # a root of another vocabulary that happens to be named mediawiki was read as a
            # dump without a word
            raise MalformedXMLError(f"the root element's namespace is "
                                    f"{_ustr(namespace)[:200]!r}, not MediaWiki's export "
                                    f"namespace (http://{MEDIAWIKI_NS.decode()}…): not a "
                                    "MediaWiki export", lt)
        version = attrs.get(b"version")
        lang = attrs.get(b"xml:lang")
        info: dict[str, str | None] = {}
        namespaces: dict[int, str] = {}
        j, which = sc.find_any((b"<siteinfo", b"<page", b"</mediawiki"), self._pos)
        if which == b"<siteinfo":
            end = sc.find(b"</siteinfo>", j)
            if end < 0:
                raise TruncatedXMLError("stream ends inside <siteinfo>", j)
            block = sc.slice(j, end)
            for tag in (b"sitename", b"dbname", b"base", b"generator", b"case"):
                m = re.search(rb"<" + tag + rb">([^<]*)</" + tag + rb">", block)
                info[tag.decode()] = _ustr(m.group(1)) if m else None
            for m in re.finditer(rb"<namespace\b([^>]*?)(?:/>|>([^<]*)</namespace>)", block):
                key = _attrs(m.group(1)).get(b"key")
                if key is not None:
                    namespaces[int(key)] = _ustr(m.group(2) or b"")
            self._pos = end + len(b"</siteinfo>")
        return SiteInfo(
            sitename=info.get("sitename"),
            dbname=info.get("dbname"),
            base=info.get("base"),
            generator=info.get("generator"),
            case=info.get("case"),
            namespaces=namespaces,
            schema_version=version.decode() if version else None,
            lang=lang.decode() if lang else None,
        )

    # -- pages ----------------------------------------------------------------------
    def __iter__(self) -> Iterator[Page]:
        sc = self._sc
        while not self._finished:
            if self._current is not None and not self._current._done:
                self._skip_rest_of_page(self._current)
            self._current = None
            lt, gt = sc.next_tag(self._pos)
            if lt < 0 or gt < 0:
                self._pos = sc.end
                if self._fragment and lt < 0:
                    self._finished = True
                    return
                raise TruncatedXMLError("stream ended before </mediawiki>", sc.end)
            name, _, closed = _split_tag(sc.slice(lt + 1, gt))
            if name == b"page":
                self._pos = gt + 1
                page = self._read_page_header(lt)
                if page is not None:
                    self._current = page
                    yield page
            elif name == b"/mediawiki":
                self._pos = gt + 1
                self._finished = True
                sc.drain()  # a damaged end of the file still fails it
            elif name.startswith((b"?", b"!")):
                self._pos = gt + 1
            else:
                # Unknown top-level element (e.g. <logitem>): skip it whole.
                self.unknown_tags[name.decode("utf-8", "replace")] += 1
                self._pos = gt + 1 if closed else self._skip_element(name, gt + 1)

    def revisions(self) -> Iterator[tuple[Page, Revision]]:
        """Flat (page, revision) stream, for consumers that do not need the page layer."""
        for page in self:
            for rev in page:
                yield page, rev

    def _skip_element(self, name: bytes, start: int) -> int:
        end = self._sc.find(b"</" + name + b">", start, discard=True)
        if end < 0:
            raise TruncatedXMLError(f"stream ends inside <{name.decode()}>", self._sc.end)
        return end + len(name) + 3

    def _reject(self, page: Page | None, reason: str, resume: int | None, offset: int) -> None:
        """Record a broken page and move to the next <page> at or after ``resume``."""
        rej = PageReject(
            offset=offset,
            page_id=page.page_id if page else None,
            title=page.title if page else None,
            reason=reason,
            revisions_read=page.revisions_read if page else 0,
        )
        if page is not None:
            page.reject = rej
            page._done = True
        if self._strict:
            raise MalformedXMLError(f"page {rej.page_id} {rej.title!r}: {reason}", offset)
        self.rejects.append(rej)
        if self._on_reject is not None:
            self._on_reject(rej)
        sc = self._sc
        start = max(self._pos, offset + 1) if resume is None else resume
        i, _ = sc.find_any((b"<page>", b"<page ", b"</mediawiki>"), start, discard=True)
        if i < 0:
            self._pos = sc.end
            raise TruncatedXMLError(f"stream ended before </mediawiki> ({reason})", sc.end)
        self._pos = i

    def _reject_revision(self, page: Page, reason: str, offset: int) -> None:
        """Record one unreadable revision; the page goes on (its other revisions are fine)."""
        rej = PageReject(
            offset, page.page_id, page.title, reason, page.revisions_read, partial=True
        )
        if self._strict:
            raise MalformedXMLError(f"page {page.page_id} {page.title!r}: {reason}", offset)
        self.rejects.append(rej)
        if self._on_reject is not None:
            self._on_reject(rej)

    def _read_page_header(self, page_lt: int) -> Page | None:
        """Fast path: one regex over the header block; anything unusual goes the slow way,
        which rejects a bad value (a character reference beyond Unicode in a title...)."""
        try:
            page = self._fast_page_header()
        except ValueError:
            page = None
        return page if page is not None else self._slow_page_header(page_lt)

    def _fast_page_header(self) -> Page | None:
        sc = self._sc
        if sc.end - self._pos < _HEADER_WINDOW and not sc.eof:
            sc.fill()
        buf, rel = sc.buf, self._pos - sc.base
        limit = min(len(buf), rel + _HEADER_WINDOW)
        stop = buf.find(b"<revision", rel, limit)
        end_page = buf.find(b"</page>", rel, stop if stop >= 0 else limit)
        if end_page >= 0:
            stop = end_page
        if stop < 0:
            return None
        hdr = buf[rel:stop]
        title = ns = page_id = restrictions = redirect_title = None
        redirect = False
        matched = 0
        for m in _HEADER_FIELD.finditer(hdr):
            name = m.group(1)
            if name is None:
                redirect = True
                redirect_title = _ustr(_attrs(m.group(3) or b"").get(b"title", b"")) or None
                matched += 1
                continue
            matched += 2
            value = m.group(2)
            if name == b"title":
                title = _ustr(value)
            elif name == b"ns":
                ns = _int_or_none(value)
            elif name == b"id":
                page_id = _int_or_none(value)
            else:
                restrictions = _ustr(value)
        if matched != hdr.count(b"<") or title is None or page_id is None:
            return None
        if ns is None:
            if b"<ns>" in hdr:
                return None  # a bad <ns> value: let the slow path report it
            ns = self._ns_from_title(title)
        self._pos = stop + sc.base
        return Page(self, page_id, ns, title, redirect, redirect_title, restrictions)

    def _slow_page_header(self, page_lt: int) -> Page | None:
        sc = self._sc
        title: str | None = None
        ns: int | None = None
        page_id: int | None = None
        redirect = False
        redirect_title: str | None = None
        restrictions: str | None = None

        def stub() -> Page:
            return Page(
                self, page_id or -1, ns or 0, title or "", redirect, redirect_title, restrictions
            )

        pos = self._pos
        while True:
            lt, gt = sc.next_tag(pos)
            if lt < 0 or gt < 0:
                self._reject(stub(), "stream ends inside <page> header", sc.end, page_lt)
                return None  # not reached: _reject raises at EOF
            name, attrs, closed = _split_tag(sc.slice(lt + 1, gt))
            if name in (b"revision", b"/page", b"upload"):
                self._pos = lt
                break
            if name in _STRUCTURAL or name.startswith(b"/"):
                self._reject(
                    stub(),
                    f"unexpected <{name.decode('utf-8', 'replace')}> in page header",
                    lt,
                    page_lt,
                )
                return None
            if closed:
                if name == b"redirect":
                    redirect = True
                    try:
                        redirect_title = _ustr(_attrs(attrs).get(b"title", b"")) or None
                    except ValueError:
                        self._reject(stub(), f"bad <redirect> title {attrs[:40]!r}", lt, page_lt)
                        return None
                else:
                    self.unknown_tags[name.decode("utf-8", "replace")] += 1
                pos = gt + 1
                continue
            end = sc.find(b"</" + name + b">", gt + 1)
            if end < 0:
                self._reject(
                    stub(),
                    f"stream ends inside <{name.decode('utf-8', 'replace')}>",
                    sc.end,
                    page_lt,
                )
                return None
            value = sc.slice(gt + 1, end)
            pos = end + len(name) + 3
            try:
                if b"<" in value:
                    raise ValueError("nested element")
                if name == b"title":
                    title = _ustr(value)
                elif name == b"ns":
                    ns = int(value)
                elif name == b"id":
                    page_id = int(value)
                elif name == b"redirect":
                    redirect = True
                    redirect_title = _ustr(_attrs(attrs).get(b"title", b"")) or None
                elif name == b"restrictions":
                    restrictions = _ustr(value)
                else:
                    self.unknown_tags[name.decode("utf-8", "replace")] += 1
            except ValueError:
                self._reject(
                    stub(),
                    f"bad <{name.decode('utf-8', 'replace')}> value {value[:40]!r}",
                    gt + 1,
                    page_lt,
                )
                return None
        if title is None or page_id is None:
            self._reject(stub(), "page header lacks <title> or <id>", self._pos, page_lt)
            return None
        if ns is None:
            ns = self._ns_from_title(title)
        return Page(self, page_id, ns, title, redirect, redirect_title, restrictions)

    def _ns_from_title(self, title: str) -> int:
        """Schemas before 0.5 have no <ns>: derive it from the title prefix."""
        prefix, sep, _ = title.partition(":")
        if sep:
            for key, name in self.site_info.namespaces.items():
                if key != 0 and name == prefix:
                    return key
        return 0

    def _skip_rest_of_page(self, page: Page) -> None:
        i, which = self._sc.find_any((b"</page>", b"<page>", b"<page "), self._pos, discard=True)
        page._done = True
        if i < 0:
            self._pos = self._sc.end
            raise TruncatedXMLError("stream ends inside <page>", self._sc.end)
        self._pos = i + len(b"</page>") if which == b"</page>" else i

    # -- revisions ------------------------------------------------------------------
    def _canonical_batch(self, page: Page) -> list[Revision] | None:
        """The buffered run of canonical revisions at the current position (C build only;
        anything it declines is left to :meth:`_next_revision`)."""
        if _canonical_batch_c is None:
            return None
        base = self._sc.base
        revs, pos = _canonical_batch_c(self._sc.buf, self._pos - base, page.page_id,
                                       self._text_bytes, Revision, self._entity_scanner)
        self._pos = pos + base
        return revs

    def _parse_at(self, page: Page, lt: int, start: int, end: int) -> Revision | object:
        """The revision whose body is the buffer's [start, end) (absolute offsets; ``lt``:
        its ``<revision>``): the one place a revision's errors are handled, for the fast
        path and the loop alike. A structurally broken page is rejected (``_BROKEN``: the
        page ends here); a well-delimited revision with a bad value is dropped alone
        (``_DROPPED``: the page goes on after it)."""
        sc = self._sc
        base = sc.base
        try:
            rev = _parse_revision(sc.buf, start - base, end - base, page.page_id,
                                  self.unknown_tags, self._text_of)
        except _PageBroken as exc:
            resume = None if exc.resume is None else exc.resume + base
            self._reject(page, exc.reason, resume, lt)
            return _BROKEN
        except (ValueError, MalformedXMLError) as exc:
            self._pos = end + len(b"</revision>")
            self._reject_revision(page, f"bad revision value: {exc}", lt)
            return _DROPPED
        self._pos = end + len(b"</revision>")
        return rev

    def _next_revision(self, page: Page) -> Revision | None:
        sc = self._sc
        # Fast path: the next tag is a plain <revision> whose end is already buffered.
        # Anything else (refill, page end, other elements, errors) takes the general loop.
        buf, base = sc.buf, sc.base
        lt = buf.find(b"<", self._pos - base)
        if lt >= 0 and buf.startswith(b"<revision>", lt):
            try:  # (with the C build, _canonical_batch has declined this one already)
                hit = _parse_canonical_revision(buf, lt + 10, -1, page.page_id, self._text_of)
            except (ValueError, MalformedXMLError):
                hit = None  # a bad value: the general path below rejects the revision
            if hit is not None:
                self._pos = hit[1] + len(b"</revision>") + base
                return hit[0]
            end = buf.find(b"</revision>", lt + 10)
            if end >= 0:
                got = self._parse_at(page, lt + base, lt + 10 + base, end + base)
                if got is _BROKEN:
                    return None
                if got is not _DROPPED:
                    return got  # type: ignore[return-value]
        while True:
            lt, gt = sc.next_tag(self._pos)
            if lt < 0 or gt < 0:
                self._reject(page, "stream ends inside <page>", sc.end, self._pos)
                return None
            name, _, closed = _split_tag(sc.slice(lt + 1, gt))
            if name == b"revision" and not closed:
                end = sc.find(b"</revision>", gt + 1)
                if end < 0:
                    self._reject(page, "stream ends inside <revision>", sc.end, lt)
                    return None
                got = self._parse_at(page, lt, gt + 1, end)
                if got is _BROKEN:
                    return None
                if got is _DROPPED:
                    continue
                return got  # type: ignore[return-value]
            if name == b"/page":
                self._pos = gt + 1
                page._done = True
                return None
            if name in _STRUCTURAL or name.startswith(b"/"):
                self._reject(page, f"<{name.decode('utf-8', 'replace')}> before </page>", lt, lt)
                return None
            # <upload>, <discussionthreadinginfo>, ...: not revisions, skip whole.
            self.unknown_tags[name.decode("utf-8", "replace")] += 1
            if closed:
                self._pos = gt + 1
            else:
                end = sc.find(b"</" + name + b">", gt + 1)
                if end < 0:
                    self._reject(page, f"stream ends inside <{name.decode()}>", sc.end, lt)
                    return None
                self._pos = end + len(name) + 3


def iter_dump(
    source: str | os.PathLike[str] | BinaryIO,
    *,
    on_reject: Callable[[PageReject], None] | None = None,
    strict: bool = False,
    threads: int | None = None,
) -> Dump:
    """Open a dump from a path (any supported compression) or a binary stream.

    ``threads``: bz2 decompression threads (default: all usable cores; pass 1 when a
    process pool already runs one worker per core).
    """
    if isinstance(source, str | os.PathLike | Path):
        return Dump.from_file(source, on_reject=on_reject, strict=strict, threads=threads)
    return Dump(source, on_reject=on_reject, strict=strict)
