"""Streaming reader for MediaWiki XML export dumps (schemas 0.3 - 0.11).

Why not mwxml: it builds an element tree per revision through expat and pure-Python
iterators (about 65 MB/s); history dumps are terabytes. This is a byte-level scanner:
MediaWiki escapes ``<`` and ``&`` in every text node and attribute, so tags can be found
with ``bytes.find`` and only the few leaf values we need are sliced and unescaped.

Layered like mwxml: :class:`Dump` iterates :class:`Page` objects, a page iterates its
:class:`Revision` records (lazily, so a page with a million revisions is never held in
memory). A page that is not fully consumed is skipped when the next one is requested.

Malformed input never kills the file: a structurally broken page is reported as a
:class:`PageReject` (through ``on_reject`` and ``Dump.rejects``), its revision iterator
stops, and the scanner resynchronizes at the next ``<page>``. Unknown but well-formed
elements (future schema additions) are skipped and counted in ``Dump.unknown_tags``.
A stream that ends before ``</mediawiki>`` raises :class:`TruncatedXMLError` after the
complete pages before the cut have been yielded - a short file must never pass as done.
"""

from __future__ import annotations

import codecs
import io
import os
import re
import xml.parsers.expat as expat
from collections import Counter
from collections.abc import Callable, Iterator
from datetime import date
from pathlib import Path
from typing import Any, BinaryIO

import msgspec

from emerge_lib.errors import EmergeError

__all__ = [
    "Dump",
    "MalformedXMLError",
    "Page",
    "PageReject",
    "Revision",
    "SiteInfo",
    "Slot",
    "TruncatedXMLError",
    "iter_dump",
    "parse_timestamp",
    "unescape",
    "unescape_text",
]

_CHUNK = 4 << 20
_ATTR = re.compile(rb"""([\w:.-]+)\s*=\s*(?:"([^"]*)"|'([^']*)')""")
_AMP_OR_NUMREF = re.compile(rb"&(?:#(x[0-9a-fA-F]+|[0-9]+)|amp);")
_EPOCH_ORDINAL = date(1970, 1, 1).toordinal()


class MalformedXMLError(EmergeError, ValueError):
    """The XML is not a MediaWiki export (or strict mode met a broken page)."""

    def __init__(self, message: str, offset: int | None = None) -> None:
        self.offset = offset
        super().__init__(message if offset is None else f"{message} (at byte {offset})")


class TruncatedXMLError(MalformedXMLError):
    """The stream ended before ``</mediawiki>``: the file is incomplete."""


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


class Slot(msgspec.Struct, frozen=True, gc=False):
    """A non-main content slot of a multi-content revision (schema 0.11 ``<content>``)."""

    role: str | None
    model: str | None
    format: str | None
    text: str | None
    text_deleted: bool
    sha1: str | None


class Revision(msgspec.Struct, gc=False):
    """One ``<revision>``. ``text`` is the main slot's unescaped text as str (wikitext
    or entity JSON), or as UTF-8 bytes when the dump was opened with ``text_bytes=True``
    (msgspec and orjson decode bytes directly).

    ``text`` is ``None`` when deleted or absent, ``""`` for an empty text. ``timestamp`` is
    Unix seconds UTC. ``sha1`` is the revision's ``<sha1>``; ``text_sha1`` the schema-0.11
    ``sha1`` attribute of ``<text>``; ``text_size`` its ``bytes`` attribute.

    ``entity``: with ``Dump(entity_scanner=...)`` (the C build), an entity JSON text the
    scanner read straight from the escaped XML: a :class:`wikidata.EntityScan` whose
    ``escaped`` holds the text as it stands in the dump (:func:`unescape` gives ``text``),
    and ``text`` is then ``None`` (``text_deleted`` stays False). Else ``None``.
    """

    page_id: int
    rev_id: int
    parent_id: int | None
    timestamp: int
    contributor_id: int | None
    contributor_name: str | None
    contributor_deleted: bool
    minor: bool
    comment: str | None
    comment_deleted: bool
    model: str | None
    format: str | None
    text: str | bytes | None  # bytes when the Dump was opened with text_bytes=True
    text_deleted: bool
    text_size: int | None
    text_sha1: str | None
    sha1: str | None
    slots: tuple[Slot, ...] = ()
    entity: Any = None  # wikidata.EntityScan (kept untyped: the XML layer knows no JSON)


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


def _unescape_py(data: bytes) -> bytes:
    """Pure-Python twin of the C ``_xmlfast.unescape`` (used when it is not built).

    One pass in effect: ``&quot;`` / ``&lt;`` / ``&gt;`` / ``&apos;`` can be replaced in
    any order (none of their outputs contains ``&``), then numeric references and
    ``&amp;`` together, so ``&#38;amp;`` stays ``&amp;`` as XML says.
    """
    if b"\r" in data:  # XML end-of-line normalization, as expat does
        data = data.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
    if b"&" not in data:
        return data
    data = data.replace(b"&quot;", b'"')
    if b"&" not in data:
        return data
    data = data.replace(b"&lt;", b"<").replace(b"&gt;", b">").replace(b"&apos;", b"'")
    if b"&#" in data:
        return _AMP_OR_NUMREF.sub(_amp_or_numref, data)
    return data.replace(b"&amp;", b"&")


try:  # the C build (setup.py; optional): same results, several times faster
    from emerge_lib.dumps._xmlfast import canonical_revisions as _canonical_batch_c
    from emerge_lib.dumps._xmlfast import unescape as _unescape_c
except ImportError:  # pragma: no cover - exercised where no compiler exists
    _unescape_c = _canonical_batch_c = None

NATIVE = _unescape_c is not None  # the C build is in use


def unescape(data: bytes, start: int = 0, end: int = -1) -> bytes:
    """Undo XML escaping (the 5 named entities, numeric references and end-of-line
    normalization) in ``data[start:end]`` (``end=-1``: to the end; a range saves a copy).

    C when built (3-5x the replace chain on entity JSON), else :func:`_unescape_py`; both
    give the same bytes and raise ValueError for a numeric reference beyond U+10FFFF.
    """
    if _unescape_c is not None:
        return _unescape_c(data, start, end)
    return _unescape_py(data[start:] if end < 0 else data[start:end])


def unescape_text(data: bytes, start: int = 0, end: int = -1) -> str:
    """Unescape and decode a text node (``data[start:end]``) to str.

    Without the C build, long wikitext goes through expat (about twice the replace
    chain's speed on text with many different entities); JSON (nearly all ``&quot;``),
    short values and anything expat refuses through :func:`_unescape_py`.
    """
    if _unescape_c is not None:
        return _unescape_c(data, start, end).decode("utf-8", "replace")
    if start or end >= 0:
        data = data[start:] if end < 0 else data[start:end]
    if b"&" not in data and b"\r" not in data:
        return data.decode("utf-8", "replace")
    if len(data) < 256 or data.startswith(b"{&quot;"):
        return _unescape_py(data).decode("utf-8", "replace")
    out: list[str] = []
    parser = expat.ParserCreate("UTF-8")
    parser.buffer_text = True
    parser.buffer_size = len(data) + 64
    parser.CharacterDataHandler = out.append
    try:
        parser.Parse(b"<t>" + data + b"</t>", True)
    except expat.ExpatError:
        return _unescape_py(data).decode("utf-8", "replace")
    return out[0] if len(out) == 1 else "".join(out)


_TextOf = Callable[[bytes, int, int], str | bytes]  # unescape or unescape_text on a range


def _amp_or_numref(m: re.Match[bytes]) -> bytes:
    ref = m.group(1)
    if ref is None:
        return b"&"
    code = int(ref[1:], 16) if ref[:1] == b"x" else int(ref)
    if code > 0x10FFFF:  # chr() would raise OverflowError for huge values
        raise ValueError("chr() arg not in range(0x110000)")
    return chr(code).encode("utf-8", "surrogatepass")


def _ustr(data: bytes) -> str:
    return unescape(data).decode("utf-8", "replace")


def _attrs(raw: bytes) -> dict[bytes, bytes]:
    return {
        m.group(1): unescape(m.group(2) if m.group(2) is not None else m.group(3))
        for m in _ATTR.finditer(raw)
    }


_day_cache: dict[bytes, int] = {}


def parse_timestamp(ts: bytes) -> int:
    """``2014-02-19T23:34:14Z`` -> Unix seconds (UTC); day numbers are memoized."""
    ts = ts.strip()
    day = _day_cache.get(ts[:10])
    if day is None:
        try:
            day = date(int(ts[0:4]), int(ts[5:7]), int(ts[8:10])).toordinal() - _EPOCH_ORDINAL
        except ValueError as exc:
            raise MalformedXMLError(f"bad timestamp {ts!r}") from exc
        if len(_day_cache) < 100_000:
            _day_cache[ts[:10]] = day
    if len(ts) < 19 or ts[4:5] != b"-" or ts[10:11] not in (b"T", b" "):
        raise MalformedXMLError(f"bad timestamp {ts!r}")
    return day * 86400 + int(ts[11:13]) * 3600 + int(ts[14:16]) * 60 + int(ts[17:19])


class _PageBroken(Exception):
    """Internal: the current page is malformed; resynchronize at ``resume`` (buffer index)."""

    def __init__(self, reason: str, resume: int | None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.resume = resume


class _Utf16ToUtf8(io.RawIOBase):
    """Recodes a UTF-16 stream (with or without BOM) to UTF-8 for the byte scanner."""

    def __init__(self, raw: BinaryIO, encoding: str) -> None:
        super().__init__()
        self._raw = raw
        self._dec = codecs.getincrementaldecoder(encoding)()
        self._pending = b""

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        while not self._pending:
            chunk = self._raw.read(1 << 16)
            self._pending = self._dec.decode(chunk, final=not chunk).encode("utf-8")
            if not chunk:
                break
        n = min(len(buffer), len(self._pending))
        buffer[:n] = self._pending[:n]
        self._pending = self._pending[n:]
        return n


class _Scanner:
    """A byte window over the stream, addressed by absolute stream offsets.

    Data before ``mark`` may be dropped on refill; any offset at or after ``mark`` stays
    valid across refills, so callers never have to re-locate what they found.

    A read error (a damaged archive) ends the data like EOF, so that the complete pages
    before it are parsed as in a cut plain file; it is raised where the data runs out.
    """

    def __init__(self, stream: BinaryIO, chunk: int = _CHUNK) -> None:
        self.stream = stream
        self.chunk = chunk
        self.buf = b""
        self.base = 0  # absolute stream offset of buf[0]
        self.mark = 0
        self.eof = False
        self.error: Exception | None = None

    def fill(self) -> None:
        """Append the next chunk (at least as large as what is kept: amortized linear)."""
        if self.eof:
            return
        keep = max(0, self.mark - self.base)
        kept = self.buf[keep:]
        try:
            data = self.stream.read(max(self.chunk, len(kept)))
        except Exception as exc:  # noqa: BLE001 - raised by out_of_data()
            self.error, data = exc, b""
        if not data:
            self.eof = True
        self.buf = kept + data if kept else data
        self.base += keep

    @property
    def end(self) -> int:
        return self.base + len(self.buf)

    def out_of_data(self) -> None:
        """Where the data ran out: a read error, not the end of the stream, may be why."""
        if self.error is not None:
            raise self.error

    def drain(self) -> None:
        """Read on to the end of the stream, dropping the data, and raise a read error met
        there (a cut archive trailer, a decompressor's exit status) that no find reached."""
        while not self.eof:
            self.mark = self.end
            self.fill()
        self.out_of_data()

    def find(self, needle: bytes, start: int, *, discard: bool = False) -> int:
        """Absolute offset of needle at or after start, refilling; -1 at EOF.

        ``discard=True`` (skipping): bytes before the search point may be dropped, so
        skipping a multi-GB page never grows the buffer.
        """
        while True:
            i = self.buf.find(needle, max(0, start - self.base))
            if i >= 0:
                return i + self.base
            if self.eof:
                self.out_of_data()
                return -1
            start = max(start, self.end - len(needle) + 1)
            if discard:
                self.mark = max(self.mark, start)
            self.fill()

    def find_any(
        self, needles: tuple[bytes, ...], start: int, *, discard: bool = False
    ) -> tuple[int, bytes | None]:
        """Earliest occurrence of any needle at or after start (refilling); (-1, None) at EOF."""
        longest = max(len(n) for n in needles)
        while True:
            best, which = -1, None
            rel = max(0, start - self.base)
            buf = self.buf
            for n in needles:
                # only an earlier hit matters: bounded by the best so far, a needle that
                # is rare (or absent) costs a short scan, not one to the buffer's end
                i = buf.find(n, rel, len(buf) if best < 0 else best + len(n) - 1)
                if i >= 0 and (best < 0 or i < best):
                    best, which = i, n
            if best >= 0:
                return best + self.base, which
            if self.eof:
                self.out_of_data()
                return -1, None
            start = max(start, self.end - longest + 1)
            if discard:
                self.mark = max(self.mark, start)
            self.fill()

    def next_tag(self, start: int) -> tuple[int, int]:
        """(lt, gt) absolute offsets of the next tag at or after start; -1 where missing."""
        lt = self.find(b"<", start)
        if lt < 0:
            return -1, -1
        return lt, self.find(b">", lt)

    def slice(self, a: int, b: int) -> bytes:
        return self.buf[a - self.base : b - self.base]


def _split_tag(inner: bytes) -> tuple[bytes, bytes, bool]:
    """Tag bytes between < and > -> (name, attribute bytes, self-closing)."""
    closed = inner.endswith(b"/")
    if closed:
        inner = inner[:-1]
    sp = -1
    for ws in (b" ", b"\n", b"\t", b"\r"):
        j = inner.find(ws)
        if j >= 0 and (sp < 0 or j < sp):
            sp = j
    if sp < 0:
        return inner, b"", closed
    return inner[:sp], inner[sp + 1 :], closed


_STRUCTURAL = frozenset((b"page", b"revision", b"mediawiki", b"siteinfo", b"/page", b"/mediawiki"))


_HEADER_WINDOW = 1 << 16
_HEADER_FIELD = re.compile(rb"<(title|ns|id|restrictions)>([^<]*)</\1>|<redirect(\s[^>]*?)?\s*/>")


def _int_or_none(value: bytes) -> int | None:
    try:
        return int(value)
    except ValueError:
        return None


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
        from .compressed import open_dump

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
                try:
                    rev = _parse_revision(buf, lt + 10, end, page.page_id, self.unknown_tags,
                                          self._text_of)
                except _PageBroken as exc:  # the same handling as in the loop below
                    resume = None if exc.resume is None else exc.resume + base
                    self._reject(page, exc.reason, resume, lt + base)
                    return None
                except (ValueError, MalformedXMLError) as exc:
                    self._pos = end + len(b"</revision>") + base
                    self._reject_revision(page, f"bad revision value: {exc}", lt + base)
                else:
                    self._pos = end + len(b"</revision>") + base
                    return rev
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
                base = sc.base
                try:
                    rev = _parse_revision(
                        sc.buf, gt + 1 - base, end - base, page.page_id, self.unknown_tags,
                        self._text_of,
                    )
                except _PageBroken as exc:
                    resume = None if exc.resume is None else exc.resume + base
                    self._reject(page, exc.reason, resume, lt)
                    return None
                except (ValueError, MalformedXMLError) as exc:
                    # A well-delimited revision with a bad value: drop just this revision.
                    self._pos = end + len(b"</revision>")
                    self._reject_revision(page, f"bad revision value: {exc}", lt)
                    continue
                self._pos = end + len(b"</revision>")
                return rev
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


# Leaf elements of <revision> whose character data we keep, by tag name.
_LEAF_ID, _LEAF_PARENT, _LEAF_TS, _LEAF_USER, _LEAF_COMMENT = 1, 2, 3, 4, 5
_LEAF_MODEL, _LEAF_FORMAT, _LEAF_TEXT, _LEAF_SHA1, _LEAF_IGNORED = 6, 7, 8, 9, 10
_LEAVES: dict[bytes, int] = {
    b"id": _LEAF_ID,
    b"parentid": _LEAF_PARENT,
    b"timestamp": _LEAF_TS,
    b"username": _LEAF_USER,
    b"ip": _LEAF_USER,
    b"comment": _LEAF_COMMENT,
    b"model": _LEAF_MODEL,
    b"format": _LEAF_FORMAT,
    b"text": _LEAF_TEXT,
    b"sha1": _LEAF_SHA1,
    b"origin": _LEAF_IGNORED,
    b"role": _LEAF_IGNORED,
}


def _parse_revision(
    buf: bytes,
    pos: int,
    end: int,
    page_id: int,
    unknown: Counter[str],
    text_of: _TextOf = unescape_text,
) -> Revision:
    """Parse the body of one <revision> (buf[pos:end]); raises _PageBroken on bad structure.

    Hot loop: one pass over the tags with bytes.find; only leaf values are sliced. The
    canonical layout (what current dumps write for nearly every revision) is first tried
    with two regexes, which builds the same Revision in a fraction of the time.
    """
    hit = _parse_canonical_revision(buf, pos, end, page_id, text_of)
    if hit is not None:
        return hit[0]
    rev_id: int | None = None
    parent_id: int | None = None
    timestamp: int | None = None
    c_id: int | None = None
    c_name: str | None = None
    c_deleted = False
    minor = False
    comment: str | None = None
    comment_deleted = False
    model: str | None = None
    fmt: str | None = None
    text: str | None = None
    text_deleted = False
    text_size: int | None = None
    text_sha1: str | None = None
    sha1: str | None = None
    slots: list[Slot] = []
    ctx = b""  # b"contributor" or b"content" while inside those containers
    slot: dict[bytes, object] = {}
    find = buf.find
    leaves = _LEAVES
    while True:
        lt = find(b"<", pos, end)
        if lt < 0:
            break
        gt = find(b">", lt, end)
        if gt < 0:
            raise _PageBroken("unterminated tag in <revision>", None)
        inner = buf[lt + 1 : gt]
        if inner[:1] == b"/":
            name = inner[1:].strip()
            if name == ctx:
                if ctx == b"content":
                    slots.append(_make_slot(slot))
                    slot = {}
                ctx = b""
                pos = gt + 1
                continue
            raise _PageBroken(
                f"unexpected </{name.decode('utf-8', 'replace')}> in <revision>",
                lt if name == b"page" else None,
            )
        leaf = leaves.get(inner)  # the common case: a leaf without attributes
        if leaf is not None:
            name, attrs, closed = inner, b"", False
        else:
            name, attrs, closed = _split_tag(inner)
            leaf = leaves.get(name)
        if closed:
            pos = gt + 1
            deleted = b"deleted" in attrs
            if leaf == _LEAF_TEXT:
                a = _attrs(attrs) if attrs else {}
                if ctx == b"content":
                    slot[b"deleted"] = deleted
                    slot[b"text"] = None if deleted else ""
                    slot[b"sha1"] = a.get(b"sha1")
                else:
                    text_deleted = deleted
                    text = None if deleted else ""
                    tb = a.get(b"bytes")
                    text_size = int(tb) if tb else None
                    ts = a.get(b"sha1")
                    text_sha1 = ts.decode() if ts else None
            elif leaf == _LEAF_COMMENT:
                comment_deleted = deleted
            elif name == b"minor":
                minor = True
            elif name == b"contributor":
                c_deleted = deleted
            elif leaf is None:
                if name in _STRUCTURAL:
                    raise _PageBroken(
                        f"<{name.decode()}> inside <revision> (truncated revision?)", lt
                    )
                unknown[name.decode("utf-8", "replace")] += 1
            continue  # other empty leaves (<sha1/>, <comment/>...) carry nothing
        if leaf is None:
            if name == b"contributor":
                ctx = b"contributor"
                c_deleted = b"deleted" in attrs
                pos = gt + 1
                continue
            if name == b"content":
                ctx = b"content"
                slot = {}
                pos = gt + 1
                continue
            if name in _STRUCTURAL:
                raise _PageBroken(f"<{name.decode()}> inside <revision> (truncated revision?)", lt)
            # Unknown element: skip it whole (no nesting of the same name in the schema).
            close = find(b"</" + name + b">", gt + 1, end)
            if close < 0:
                raise _PageBroken(
                    f"unterminated <{name.decode('utf-8', 'replace')}> in <revision>", None
                )
            unknown[name.decode("utf-8", "replace")] += 1
            pos = close + len(name) + 3
            continue
        # leaf element with character data up to its closing tag
        nxt = find(b"<", gt + 1, end)
        if nxt < 0 or not buf.startswith(b"</" + name + b">", nxt):
            raise _PageBroken(
                f"<{name.decode()}> not closed in <revision>", None if nxt < 0 else nxt
            )
        pos = nxt + len(name) + 3
        if ctx == b"content":
            if leaf == _LEAF_TEXT:
                deleted = b"deleted" in attrs
                slot[b"deleted"] = deleted
                slot[b"text"] = None if deleted else unescape_text(buf[gt + 1 : nxt])
                slot[b"sha1"] = _attrs(attrs).get(b"sha1")
            else:
                slot[name] = buf[gt + 1 : nxt]
            continue
        if leaf == _LEAF_TEXT:
            text_deleted = b"deleted" in attrs
            text = None if text_deleted else text_of(buf, gt + 1, nxt)
            if attrs:
                a = _attrs(attrs)
                tb = a.get(b"bytes")
                text_size = int(tb) if tb else None
                ts = a.get(b"sha1")
                text_sha1 = ts.decode() if ts else None
            continue
        value = buf[gt + 1 : nxt]
        if ctx == b"contributor":
            if leaf == _LEAF_ID:
                c_id = int(value) if value.strip() else None
            elif leaf == _LEAF_USER:
                c_name = _ustr(value)
            else:
                unknown[name.decode("utf-8", "replace")] += 1
        elif leaf == _LEAF_ID:
            rev_id = int(value)
        elif leaf == _LEAF_TS:
            timestamp = parse_timestamp(value)
        elif leaf == _LEAF_PARENT:
            parent_id = int(value)
        elif leaf == _LEAF_SHA1:
            sha1 = value.decode() or None
        elif leaf == _LEAF_MODEL:
            model = value.decode()
        elif leaf == _LEAF_FORMAT:
            fmt = value.decode()
        elif leaf == _LEAF_COMMENT:
            comment_deleted = b"deleted" in attrs
            comment = None if comment_deleted else _ustr(value)
        elif leaf == _LEAF_USER:
            unknown[name.decode("utf-8", "replace")] += 1  # <username> outside <contributor>
    if ctx:
        raise _PageBroken(f"<{ctx.decode()}> not closed in <revision>", None)
    if rev_id is None or timestamp is None:
        raise _PageBroken("revision lacks <id> or <timestamp>", None)
    return Revision(
        page_id=page_id,
        rev_id=rev_id,
        parent_id=parent_id,
        timestamp=timestamp,
        contributor_id=c_id,
        contributor_name=c_name,
        contributor_deleted=c_deleted,
        minor=minor,
        comment=comment,
        comment_deleted=comment_deleted,
        model=model,
        format=fmt,
        text=text,
        text_deleted=text_deleted,
        text_size=text_size,
        text_sha1=text_sha1,
        sha1=sha1,
        slots=tuple(slots),
    )


# The canonical revision layout up to the opening <text> tag. Only values the general
# loop reads the same way are captured (digits, text without markup); any variation
# (deleted fields, slots, unknown elements, attributes elsewhere) misses and falls back.
_REV_HEAD = re.compile(
    rb"\s*<id>(\d+)</id>"
    rb"\s*(?:<parentid>(\d+)</parentid>\s*)?"
    rb"<timestamp>([^<]*)</timestamp>"
    rb"\s*<contributor>\s*(?:<username>([^<]*)</username>\s*(?:<id>(\d+)</id>\s*)?"
    rb"|<ip>([^<]*)</ip>\s*)</contributor>"
    rb"\s*(<minor\s*/>\s*)?"
    rb"(?:<comment>([^<]*)</comment>\s*)?"
    rb"(?:<origin>\d+</origin>\s*)?"
    rb"<model>([^<]*)</model>"
    rb"\s*<format>([^<]*)</format>"
    rb'\s*<text((?:\s+[\w:.-]+="[^"<&]*")*)\s*>'
)
_REV_TAIL = re.compile(rb"\s*(?:<sha1>([^<]*)</sha1>|<sha1\s*/>)?\s*")
_REV_TAIL_END = re.compile(rb"\s*(?:<sha1>([^<]*)</sha1>|<sha1\s*/>)?\s*</revision>")
# <text> attributes as current (bytes, sha1, xml:space) and older (xml:space, bytes) dumps
# write them; values that _attrs would return unchanged
_TEXT_ATTRS = re.compile(
    rb'\s+bytes="(\d*)"(?:\s+sha1="([0-9a-z]*)")?\s+xml:space="preserve"\s*'
    rb'|\s+xml:space="preserve"(?:\s+bytes="(\d*)")?\s*'
)


def _parse_canonical_revision(
    buf: bytes,
    pos: int,
    end: int,
    page_id: int,
    text_of: _TextOf = unescape_text,
) -> tuple[Revision, int] | None:
    """The canonical layout via regexes: (revision, end of its body), or None when the
    general loop must decide. ``end < 0``: the body ends at the first ``</revision>``,
    found here (no value in the canonical layout can contain a ``<``), which saves
    searching the whole revision text for it."""
    if end < 0:
        m = _REV_HEAD.match(buf, pos)
        if m is None:
            return None
        start = m.end()
        nxt = buf.find(b"<", start)
        if nxt < 0 or not buf.startswith(b"</text>", nxt):
            return None
        tail = _REV_TAIL_END.match(buf, nxt + 7)
        if tail is None:
            return None
        end = tail.end() - len(b"</revision>")
    else:
        m = _REV_HEAD.match(buf, pos, end)
        if m is None:
            return None
        start = m.end()
        nxt = buf.find(b"<", start, end)
        if nxt < 0 or not buf.startswith(b"</text>", nxt):
            return None
        tail = _REV_TAIL.fullmatch(buf, nxt + 7, end)
        if tail is None:
            return None
    rev_id, parent, ts, user, uid, ip, minor, comment, model, fmt, attrs = m.groups()
    if b"deleted" in attrs:
        return None  # the general loop's test for a deleted text
    sha1 = tail.group(1)
    # values in document order, so a bad one raises what the general loop would raise
    rev_num = int(rev_id)
    parent_id = None if parent is None else int(parent)
    timestamp = parse_timestamp(ts)
    contributor_id = None if uid is None else int(uid)
    contributor_name = _ustr(user if ip is None else ip)
    comment_text = None if comment is None else _ustr(comment)
    model_name = model.decode()
    format_name = fmt.decode()
    text_size = text_sha1 = None
    if attrs:
        common = _TEXT_ATTRS.fullmatch(attrs)
        if common is not None:
            tb, tsha, tb_old = common.groups()
            tb = tb if tb_old is None else tb_old
        else:
            a = _attrs(attrs)
            tb, tsha = a.get(b"bytes"), a.get(b"sha1")
        text_size = int(tb) if tb else None
        text_sha1 = tsha.decode() if tsha else None
    rev = Revision(
        page_id=page_id,
        rev_id=rev_num,
        parent_id=parent_id,
        timestamp=timestamp,
        contributor_id=contributor_id,
        contributor_name=contributor_name,
        contributor_deleted=False,
        minor=minor is not None,
        comment=comment_text,
        comment_deleted=False,
        model=model_name,
        format=format_name,
        text=text_of(buf, start, nxt),
        text_deleted=False,
        text_size=text_size,
        text_sha1=text_sha1,
        sha1=(sha1.decode() or None) if sha1 is not None else None,
    )
    return rev, end


def _make_slot(d: dict[bytes, object]) -> Slot:
    def s(key: bytes) -> str | None:
        v = d.get(key)
        return _ustr(v) if isinstance(v, bytes) else None

    text = d.get(b"text")
    return Slot(
        role=s(b"role"),
        model=s(b"model"),
        format=s(b"format"),
        text=text if isinstance(text, str) else None,
        text_deleted=bool(d.get(b"deleted", False)),
        sha1=s(b"sha1"),
    )


def _recode_if_utf16(stream: BinaryIO) -> BinaryIO:
    """Sniff the encoding (XML spec appendix F): UTF-16 with or without BOM is recoded to
    UTF-8 for the byte scanner; a UTF-8 BOM is dropped."""
    buffered = stream if isinstance(stream, io.BufferedReader) else io.BufferedReader(stream)  # type: ignore[arg-type]
    head = buffered.peek(4)[:4]
    if head.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return io.BufferedReader(_Utf16ToUtf8(buffered, "utf-16"))  # type: ignore[arg-type]
    if head == b"\x00<\x00?" or head == b"\x00<\x00m":
        return io.BufferedReader(_Utf16ToUtf8(buffered, "utf-16-be"))  # type: ignore[arg-type]
    if head == b"<\x00?\x00" or head == b"<\x00m\x00":
        return io.BufferedReader(_Utf16ToUtf8(buffered, "utf-16-le"))  # type: ignore[arg-type]
    if head.startswith(codecs.BOM_UTF8):
        buffered.read(3)
    return buffered


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
