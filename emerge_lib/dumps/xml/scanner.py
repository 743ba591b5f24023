"""The byte-level scanner under the dump reader: a growing buffer over the stream
(``_Scanner``: ``find``, ``next_tag``, ``slice``), tag splitting and attributes, UTF-16
input recoded to UTF-8, and the errors of malformed XML. MediaWiki escapes ``<`` and
``&`` in every text node and attribute, so tags are found with ``bytes.find``.
"""

from __future__ import annotations

import codecs
import io
import re
from typing import Any, BinaryIO

from emerge_lib.core.errors import EmergeError
from emerge_lib.dumps.xml.escape import unescape

_CHUNK = 4 << 20


_ATTR = re.compile(rb"""([\w:.-]+)\s*=\s*(?:"([^"]*)"|'([^']*)')""")


class MalformedXMLError(EmergeError, ValueError):
    """The XML is not a MediaWiki export (or strict mode met a broken page)."""

    def __init__(self, message: str, offset: int | None = None) -> None:
        self.offset = offset
        super().__init__(message if offset is None else f"{message} (at byte {offset})")


class TruncatedXMLError(MalformedXMLError):
    """The stream ended before ``</mediawiki>``: the file is incomplete."""


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


def _attrs(raw: bytes) -> dict[bytes, bytes]:
    return {
        m.group(1): unescape(m.group(2) if m.group(2) is not None else m.group(3))
        for m in _ATTR.finditer(raw)
    }


def _recode_if_utf16(stream: BinaryIO) -> BinaryIO:
    """Sniff the encoding (XML spec appendix F): UTF-16 with or without BOM is recoded to
    UTF-8 for the byte scanner; a UTF-8 BOM is dropped."""
    raw: Any = stream  # any binary stream: BufferedReader wraps what has readinto
    buffered = stream if isinstance(stream, io.BufferedReader) else io.BufferedReader(raw)
    head = buffered.peek(4)[:4]
    if head.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return io.BufferedReader(_Utf16ToUtf8(buffered, "utf-16"))
    if head == b"\x00<\x00?" or head == b"\x00<\x00m":
        return io.BufferedReader(_Utf16ToUtf8(buffered, "utf-16-be"))
    if head == b"<\x00?\x00" or head == b"<\x00m\x00":
        return io.BufferedReader(_Utf16ToUtf8(buffered, "utf-16-le"))
    if head.startswith(codecs.BOM_UTF8):
        buffered.read(3)
    return buffered


#: the dump's structural tags: one inside a revision means the revision was cut short
_STRUCTURAL = frozenset((b"page", b"revision", b"mediawiki", b"siteinfo", b"/page", b"/mediawiki"))
