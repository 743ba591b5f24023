"""Open (possibly compressed) dump files as one binary stream of decompressed bytes.

Why a module of its own: history dumps are tens of GB of bz2, and decompression, not XML
parsing, is the slowest step. bz2 is therefore decoded in parallel (``indexed_bzip2`` with
one thread per core, else an external ``lbzip2 -dc``), falling back to the stdlib.

Damage must behave like a cut plain XML file: every byte that can be decoded and checked
before the damage reaches the reader, then :class:`CorruptDumpError` says what is wrong and
where (a dump that ends too soon would otherwise look like a dump with fewer revisions).
The fast decoders cannot give that: indexed_bzip2 raises for a whole read and loses what it
had decoded, and its messages are often just ``std::exception``. So after a failure the
file is decoded again, once, by the stdlib in small feeds (bz2: cut at block ends, so each
block comes out as soon as its CRC has passed), the bytes already delivered are skipped and
the rest is delivered up to the damage. That costs a sequential decode up to the damage
(about 25 MB/s of XML here), on the error path only. A path that is no dump at all
(missing, a directory, empty, another format) raises :class:`DumpInputError` instead.
"""

from __future__ import annotations

import bz2
import codecs
import contextlib
import errno
import gzip
import io
import logging
import lzma
import os
import re
import shutil
import stat
import subprocess
import tempfile
import zlib
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, BinaryIO, Literal

from emerge_lib.core.children import dying_with_parent
from emerge_lib.core.errors import EmergeError
from emerge_lib.core.resources import cpu_count

logger = logging.getLogger(__name__)

Codec = Literal["bz2", "gz", "xz", "lzma", "7z", "plain"]
Bz2Backend = Literal["auto", "indexed_bzip2", "lbzip2", "stdlib"]

_MAGIC: tuple[tuple[bytes, Codec], ...] = (
    (b"BZh", "bz2"),
    (b"\x1f\x8b", "gz"),
    (b"7z\xbc\xaf\x27\x1c", "7z"),
    (b"\xfd7zXZ\x00", "xz"),
)
_EXTENSIONS: dict[str, Codec] = {
    ".bz2": "bz2",
    ".gz": "gz",
    ".7z": "7z",
    ".xz": "xz",
    ".lzma": "lzma",
}
_CHUNK = 1 << 20
_NAMES: dict[str, str] = {
    "bz2": "bz2", "gz": "gzip", "xz": "xz", "lzma": "lzma", "7z": "7z", "plain": "XML",
}
# what a fast decoder raises for bad data (indexed_bzip2: RuntimeError/ValueError)
_DECODE_ERRORS = (EOFError, OSError, RuntimeError, ValueError, zlib.error, lzma.LZMAError)
_FEED = 16 << 10  # compressed bytes per stdlib call when decoding again: a close position
_READ = 1 << 20
_BZ2_MARKS = ((0x314159265359, True), (0x177245385090, False))  # block start, stream end
_IB2_AT = re.compile(r"at offset (\d+) B (\d+) b")  # indexed_bzip2: where a bad block starts


class DumpReadError(EmergeError):
    """Base class of the errors raised while opening or reading a dump file."""


class DumpInputError(DumpReadError):
    """``path`` cannot be a dump at all (missing, a directory, empty, another kind of file):
    said in one line before any decoder runs, since a decoder would only say "corrupt"."""

    def __init__(self, path: str | os.PathLike[str], problem: str) -> None:
        self.path = str(path)
        self.problem = problem
        super().__init__(f"{self.path}: {problem}")


class DumpNotFoundError(DumpInputError, FileNotFoundError):
    """No file at ``path``. Also a FileNotFoundError, which open_dump raised before."""

    def __init__(self, path: str | os.PathLike[str], problem: str = "not found") -> None:
        super().__init__(path, problem)
        self.errno = errno.ENOENT


class CorruptDumpError(DumpReadError):
    """The archive is truncated or corrupt.

    ``offset``: decompressed bytes delivered before the error (all that could be decoded
    before the damage); ``reason``: what is wrong, in words. Where known: ``codec``,
    ``compressed_offset`` (the compressed byte by which the decoder had found the damage:
    it lies before), ``block`` (the bz2 block it is in, counted from 1, or right after when
    ``after_block``: a cut or bad stream trailer) and ``block_start`` (where that block
    starts, in compressed bytes).
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        offset: int,
        reason: str,
        *,
        codec: str | None = None,
        compressed_offset: int | None = None,
        block: int | None = None,
        block_start: int | None = None,
        after_block: bool = False,
    ) -> None:
        self.path = str(path)
        self.offset = offset
        self.reason = reason
        self.codec = codec
        self.compressed_offset = compressed_offset
        self.block = block
        self.block_start = block_start
        self.after_block = after_block
        kind = f"corrupt {_NAMES.get(codec, codec)} data" if codec else "corrupt archive"
        where = f"decompressed byte {offset}"
        if compressed_offset is not None:
            where += f", compressed byte {compressed_offset}"
        if block is not None:
            where += (f" ({'after' if after_block else 'in'} bz2 block {block}, which starts at"
                      f" compressed byte {block_start})")
        super().__init__(f"{self.path}: {kind} at {where}: {reason}")


class MissingToolError(DumpReadError):
    """An external program needed for this format (e.g. ``7z``) is not on PATH."""


def _looks_like_xml(head: bytes) -> bool:
    """XML starts with ``<`` after an optional BOM and whitespace; UTF-16 without a BOM
    shows a NUL next to its first ``<``."""
    if head.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)) or head[:2] in (
        b"\x00<", b"<\x00"
    ):
        return True
    text = head.removeprefix(codecs.BOM_UTF8).lstrip(b" \t\r\n")
    return not text or text.startswith(b"<")


def detect_codec(path: str | os.PathLike[str]) -> Codec:
    """Codec by magic bytes (trustworthy), else by extension (``.lzma`` has no magic).

    A file with a compressed extension but not its magic, or with no known magic and no
    XML start (a PNG, a text file, an HTML error page saved as ``.bz2``), raises
    :class:`DumpInputError`: it is some other file, not a damaged dump.
    """
    try:
        with open(path, "rb") as fh:
            head = fh.read(64)
    except FileNotFoundError:
        raise DumpNotFoundError(path) from None
    except IsADirectoryError:
        raise DumpInputError(path, "is a directory, not a dump file") from None
    except OSError as exc:
        raise DumpInputError(path, f"cannot be read: {exc.strerror or exc}") from exc
    for magic, codec in _MAGIC:
        if head.startswith(magic):
            return codec
    suffix = Path(path).suffix.lower()
    if suffix == ".lzma":
        return "lzma"
    if not head:
        return "plain"  # empty: nothing to tell (open_dump says "empty file")
    if suffix in _EXTENSIONS:
        codec = _EXTENSIONS[suffix]
        magic = next(m for m, c in _MAGIC if c == codec)
        raise DumpInputError(
            path, f"not a {_NAMES[codec]} file (starts with {head[:8]!r}, not {magic!r})"
        )
    if not _looks_like_xml(head):
        raise DumpInputError(
            path,
            f"not a dump file (starts with {head[:8]!r}: neither XML nor bz2, gzip, xz, 7z)",
        )
    return "plain"


def check_input(p: Path) -> None:
    """One clear error for a path that cannot be a dump, before a decoder gets it."""
    try:
        st = p.stat()
    except FileNotFoundError:
        raise DumpNotFoundError(
            p, "not found (a broken symbolic link)" if p.is_symlink() else "not found"
        ) from None
    except OSError as exc:
        raise DumpInputError(p, f"cannot be read: {exc.strerror or exc}") from exc
    if stat.S_ISDIR(st.st_mode):
        raise DumpInputError(p, "is a directory, not a dump file")
    if not stat.S_ISREG(st.st_mode):
        raise DumpInputError(p, "is not a regular file")
    if st.st_size == 0:
        raise DumpInputError(p, "empty file (0 bytes)")


# -- decoding again with the stdlib, after a failure ------------------------------------
_STDLIB: dict[str, Callable[[], Any]] = {
    "bz2": bz2.BZ2Decompressor,
    "gz": lambda: zlib.decompressobj(31),  # gzip members only
    "xz": lambda: lzma.LZMADecompressor(format=lzma.FORMAT_XZ),
    "lzma": lambda: lzma.LZMADecompressor(format=lzma.FORMAT_ALONE),
}
_STREAM_MAGIC: dict[str, bytes] = {"bz2": b"BZh", "gz": b"\x1f\x8b", "xz": b"\xfd7zXZ\x00"}


class _Damage(Exception):
    """Internal: where the stdlib decoder stopped; ``cause`` None: the data ended early;
    ``after``: bz2 block ``block`` had come out whole, the damage follows it."""

    def __init__(
        self,
        cause: BaseException | None,
        at: int,
        block: int | None,
        block_start: int | None,
        after: bool,
    ) -> None:
        super().__init__(str(cause))
        self.cause = cause
        self.at = at
        self.block = block
        self.block_start = block_start
        self.after = after


def _bz2_marks(data: bytes) -> Iterator[tuple[int, bool]]:
    """(bit offset, is a block start) of the 48-bit bz2 block and end-of-stream magics in
    ``data``, at any bit alignment (as bzip2recover finds blocks). A chance match in
    compressed data only adds a feed boundary and miscounts a block number."""
    for magic, is_block in _BZ2_MARKS:
        for shift in range(8):
            window = magic << (8 - shift)  # the magic at bit ``shift`` of 7 bytes
            mask = ((1 << 48) - 1) << (8 - shift)
            probe = window.to_bytes(7, "big")[1:6]  # its 5 whole bytes: a plain find
            i = data.find(probe, 1)
            while i >= 0:
                if i + 6 <= len(data) and int.from_bytes(data[i - 1 : i + 6]) & mask == window:
                    yield (i - 1) * 8 + shift, is_block
                i = data.find(probe, i + 1)


def _feeds(
    fh: BinaryIO, codec: str, hints: Iterable[int]
) -> Iterator[tuple[int, bytes, int | None]]:
    """The compressed file as (file offset, bytes, bit offset of a bz2 block starting here).

    Feeds are at most ``_FEED`` bytes. A bz2 feed also ends just after the last bit of a
    block (before a whole byte of the next magic): the block's output then comes out of
    its own call, once its CRC has passed. Decoded in one call with the next header, a
    bad header would make the stdlib drop it. ``hints``: more block starts (bits).
    """
    base, buf = 0, b""
    starts: dict[int, int | None] = {}  # feed boundary (file offset) -> block bit or None
    hints = sorted(hints)
    while True:
        chunk = fh.read(_READ)
        buf += chunk
        end = len(buf) - (7 if chunk else 0)  # a magic may go on in the next chunk
        if end <= 0:
            if not chunk:
                return
            continue
        stop = base + end
        if codec == "bz2":
            marks = [(base * 8 + bit, is_block) for bit, is_block in _bz2_marks(buf)]
            for bit, is_block in sorted(marks + [(h, True) for h in hints]):
                cut = -(-bit // 8)
                if base < cut <= stop:
                    starts[cut] = bit if is_block else starts.get(cut)
        pos = base
        for bound in [*sorted(c for c in starts if base < c < stop), stop]:
            while pos < bound:
                n = min(bound - pos, _FEED)
                yield pos, buf[pos - base : pos - base + n], starts.pop(pos, None)
                pos += n
        buf, base = buf[end:], stop
        if not chunk:
            return


def _stdlib_decode(path: Path, codec: str, hints: Iterable[int] = ()) -> Iterator[bytes]:
    """Decode ``path`` with the stdlib in small feeds, yielding only output its decoder has
    checked as far as the format allows (bz2: whole blocks after their CRC); raises
    :class:`_Damage` where it fails or where the data ends inside a stream."""
    new = _STDLIB[codec]
    magic = _STREAM_MAGIC.get(codec)
    dec = new()
    fed = False
    block, block_start, whole = 0, None, False  # whole: the block's output came out
    size = 0
    with open(path, "rb") as fh:
        for pos, feed, block_bit in _feeds(fh, codec, hints):
            size = pos + len(feed)
            if block_bit is not None:
                block, block_start, whole = block + 1, block_bit // 8, False
            data = feed
            while data:
                if dec.eof:  # a stream ended inside this feed: the next one, or trailing bytes
                    if magic is None or not data.startswith(magic[: len(data)]):
                        return  # trailing bytes that start no stream: ignored, as bz2 readers do
                    dec = new()
                fed = True
                try:
                    parts = [dec.decompress(data)]
                    # the stdlib may keep a full output buffer's rest (and the CRC check)
                    # for a later call: drain it, so that what is yielded is checked
                    while parts[-1] and not dec.eof:
                        parts.append(dec.decompress(b""))
                except _DECODE_ERRORS as exc:
                    raise _Damage(exc, size, block or None, block_start, whole) from exc
                out = parts[0] if len(parts) == 1 else b"".join(parts)
                if out:
                    whole = True  # bz2 hands out a block only whole (feeds end with blocks)
                    yield out
                data = dec.unused_data if dec.eof else b""
    if fed and not dec.eof:
        raise _Damage(None, size, block or None, block_start, whole)


def _what(codec: str, cause: BaseException | None, fast: BaseException, decoder: str) -> str:
    """What is wrong, in words: alone, indexed_bzip2 often says ``std::exception`` and the
    stdlib bz2 ``Invalid data stream``; the fast decoder's text is added where it says more."""
    fast_text = " ".join(str(fast).split())  # one line (indexed_bzip2 may end with one)
    if cause is None:
        what = f"unexpected end of data: the file ends inside the {_NAMES[codec]} stream (truncated)"
    elif codec == "bz2":
        low = fast_text.lower()
        if "crc" in low:
            what = "stream CRC mismatch" if "stream" in low else "block CRC mismatch"
        elif "magic" in low or "header" in low:
            what = "bad block header"
        else:
            what = "invalid data (a bad block header, Huffman code or CRC)"
    else:
        what = re.sub(r"^Error -?\d+ while decompressing data: ", "", str(cause))
    if fast_text and fast_text not in ("std::exception", str(cause)):
        what += f" [{decoder}: {fast_text}]"
    return what


class _CheckedReader(io.RawIOBase):
    """Wraps a decompressing reader: counts bytes, turns backend errors into CorruptDumpError.

    After a decoder error the stdlib decodes the file again (see the module docstring), so
    the bytes before the damage are still delivered; then CorruptDumpError is raised, and
    again on every later read (a reader that goes on must never see a quiet end).
    """

    def __init__(
        self,
        inner: BinaryIO,
        path: str | os.PathLike[str],
        proc: subprocess.Popen[bytes] | None = None,
        *,
        codec: str = "plain",
        decoder: str = "",
    ) -> None:
        super().__init__()
        self._inner = inner
        self._path = path
        self._proc = proc
        self._codec = codec
        self._decoder = decoder or f"{codec} decoder"
        self._readinto = getattr(inner, "readinto", None)
        self.offset = 0
        self._error: CorruptDumpError | None = None
        self._fast_error: BaseException | None = None
        self._again: Iterator[bytes] | None = None  # the stdlib decoding again
        self._again_pos = 0  # decompressed bytes it produced
        self._skip = 0  # bytes the fast decoder delivered: not to be delivered twice
        self._pending = memoryview(b"")

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        if self._error is not None:
            raise self._error
        try:
            n = self._read(buffer)
        except CorruptDumpError as exc:
            self._error = exc
            raise
        self.offset += n
        return n

    def _read(self, buffer: memoryview) -> int:
        if self._again is not None:
            return self._read_again(buffer)
        try:
            if self._readinto is not None:  # straight into the caller's buffer: no copy
                n = self._readinto(buffer) or 0
            else:
                data = self._inner.read(len(buffer))
                n = len(data)
                buffer[:n] = data
        except _DECODE_ERRORS as exc:
            if self._codec not in _STDLIB:
                raise CorruptDumpError(
                    self._path, self.offset, f"{type(exc).__name__}: {exc}", codec=self._codec
                ) from exc
            self._decode_again(exc)
            return self._read_again(buffer)
        if n == 0:
            self._check_process_exit()
        return n

    def _decode_again(self, exc: BaseException) -> None:
        """Switch to the stdlib, which re-decodes from the start and skips what was read."""
        logger.warning(
            "%s: %s failed at decompressed byte %d (%s: %s); decoding it again with the "
            "stdlib to deliver the data before the damage",
            self._path, self._decoder, self.offset, type(exc).__name__, exc,
        )
        self._fast_error = exc
        with contextlib.suppress(Exception):  # a failed decoder may fail to close, too
            self._inner.close()
        hints = [int(m[1]) * 8 + int(m[2]) for m in _IB2_AT.finditer(str(exc))]
        self._again = _stdlib_decode(Path(self._path), self._codec, hints)
        self._skip = self.offset

    def _read_again(self, buffer: memoryview) -> int:
        assert self._again is not None and self._fast_error is not None
        while not self._pending:
            try:
                chunk = next(self._again)
            except StopIteration:
                raise self._clean_end_error() from self._fast_error
            except _Damage as damage:
                raise self._damage_error(damage) from damage.cause or self._fast_error
            start = self._again_pos
            self._again_pos += len(chunk)
            if self._again_pos > self._skip:
                self._pending = memoryview(chunk)[max(0, self._skip - start) :]
        n = min(len(buffer), len(self._pending))
        buffer[:n] = self._pending[:n]
        self._pending = self._pending[n:]
        return n

    def _damage_error(self, damage: _Damage) -> CorruptDumpError:
        assert self._fast_error is not None
        reason = _what(self._codec, damage.cause, self._fast_error, self._decoder)
        if self._again_pos < self._skip:  # a sequential fast decoder hands out unchecked data
            reason += (
                f"; {self._decoder} had delivered decompressed bytes {self._again_pos}-"
                f"{self._skip} before finding it: they are from the damaged part"
            )
        return CorruptDumpError(
            self._path, self.offset, reason, codec=self._codec,
            compressed_offset=damage.at, block=damage.block, block_start=damage.block_start,
            after_block=damage.after,
        )

    def _clean_end_error(self) -> CorruptDumpError:
        """The stdlib found no damage: the fast decoder's failure still stands (it may have
        seen what the stdlib ignores, e.g. trailing garbage); never a quiet success."""
        exc = self._fast_error
        return CorruptDumpError(
            self._path, self.offset,
            f"{self._decoder} failed ({type(exc).__name__}: {exc}); the stdlib decoder found "
            f"no damage in the {self._again_pos} bytes it decoded",
            codec=self._codec,
        )

    def _check_process_exit(self) -> None:
        """An external decompressor reports corruption only through its exit status."""
        if self._proc is None:
            return
        rc = self._proc.wait()
        errfile = self._proc.errfile  # type: ignore[attr-defined]
        errfile.seek(0)
        err = " ".join(errfile.read().decode("utf-8", "replace").split())  # one line
        errfile.close()
        self._proc = None
        if rc != 0:
            raise CorruptDumpError(
                self._path, self.offset, f"{self._decoder} exited {rc}: {err[-500:]}",
                codec=self._codec,
            )

    def close(self) -> None:
        if self.closed:
            return
        try:
            if self._proc is not None:
                self._proc.kill()
                self._proc.wait()
                self._proc.errfile.close()  # type: ignore[attr-defined]
            self._inner.close()
            if self._again is not None:
                self._again.close()
        finally:
            super().close()


class _DumpReader(io.BufferedReader):
    """A BufferedReader whose ``read(n)``/``readinto`` return the bytes they got before an
    error instead of dropping them: the C BufferedReader loses a whole call's data when its
    raw reader raises (one scanner read can be a whole 50 MB page). The error then comes
    with the next call, from the raw reader, which keeps raising it: a short read is not
    the end. ``read()`` of everything raises at once (a short result would look complete).
    """

    def __init__(self, raw: io.RawIOBase, buffer_size: int = _CHUNK) -> None:
        super().__init__(raw, buffer_size)
        self._size = buffer_size

    def read(self, size: int | None = -1) -> bytes:
        want = -1 if size is None or size < 0 else size
        parts: list[bytes] = []
        got = 0
        try:
            while want < 0 or got < want:
                rest = self._size * 8 if want < 0 else want - got
                if rest < self._size:
                    self.peek(1)  # small reads stay buffered: fill, then serve from it
                part = self.read1(rest)  # at most one raw read, straight into the result
                if not part:
                    break
                parts.append(part)
                got += len(part)
        except DumpReadError:
            if not parts or want < 0:
                raise
        return parts[0] if len(parts) == 1 else b"".join(parts)

    def readinto(self, buffer: Any) -> int:
        data = self.read(len(memoryview(buffer).cast("B")))
        memoryview(buffer).cast("B")[: len(data)] = data
        return len(data)


def _external_bz2() -> str | None:
    return shutil.which("lbzip2")


def _find_7z() -> str | None:
    for name in ("7z", "7za", "7zz"):
        found = shutil.which(name)
        if found:
            return found
    return None


def _spawn(args: list[str]) -> subprocess.Popen[bytes]:
    """Start a decompressor; stderr goes to a temp file (``proc.errfile``), not a pipe, so a
    chatty tool can never block on it, and its message is still there for the error."""
    err = tempfile.TemporaryFile()
    proc = subprocess.Popen(dying_with_parent(args), stdout=subprocess.PIPE, stderr=err,
                            bufsize=_CHUNK)
    proc.errfile = err  # type: ignore[attr-defined]
    return proc


def _check_bz2_start(path: Path) -> None:
    """The first block must follow the stream header at byte 4. indexed_bzip2's parallel
    reader finds blocks by their magic, so a damaged first one is skipped without a word
    (the rest comes out, shifted); a bz2 header before garbage reads as empty."""
    with open(path, "rb") as fh:
        head = fh.read(10)
    magics = [m.to_bytes(6, "big") for m, _ in _BZ2_MARKS]
    if len(head) < 10:
        reason = "unexpected end of data: the file ends in the first block header (truncated)"
    elif head[3:4] not in tuple(b"%d" % i for i in range(1, 10)) or head[4:10] not in magics:
        reason = f"bad block header (the file starts {head!r}: not BZh1-9 and a block magic)"
    else:
        return
    raise CorruptDumpError(path, 0, reason, codec="bz2", compressed_offset=min(4, len(head)),
                           block=1, block_start=4)


def _open_bz2(
    path: Path, backend: Bz2Backend, threads: int
) -> tuple[BinaryIO, subprocess.Popen[bytes] | None, str]:
    if backend in ("auto", "indexed_bzip2"):
        try:
            import indexed_bzip2
        except ImportError:
            if backend == "indexed_bzip2":
                raise
        else:
            return indexed_bzip2.open(str(path), parallelization=threads), None, "indexed_bzip2"
    if backend in ("auto", "lbzip2"):
        tool = _external_bz2()
        if tool:
            proc = _spawn([tool, "-dc", f"-n{threads}", str(path)])
            assert proc.stdout is not None
            return proc.stdout, proc, "lbzip2"
        if backend == "lbzip2":
            raise MissingToolError("lbzip2 is not on PATH (apt-get install lbzip2)")
    return bz2.open(path, "rb"), None, "the bz2 module"


def _open_7z(p: Path) -> tuple[BinaryIO, subprocess.Popen[bytes] | None, str]:
    """A 7z archive: decoded here by the stdlib's lzma in a thread (``dumps.sevenzip``);
    one it does not decode (PPMd, BCJ2, encryption, several files) by an external 7z."""
    from emerge_lib.dumps import sevenzip

    def damaged(damage: sevenzip.Damage, delivered: int) -> CorruptDumpError:
        return CorruptDumpError(p, delivered, damage.reason, codec="7z",
                                compressed_offset=damage.at)

    try:
        entry = sevenzip.read_archive(p).only_file()
        coder = sevenzip.check_supported(entry.coder)  # raises here, not in the thread
    except sevenzip.UnsupportedArchive as exc:
        tool = _find_7z()
        if tool is None:
            raise MissingToolError(
                f"{p}: this 7z archive {exc.reason}, which emerge does not decode itself; "
                "reading it needs the program 7z, 7za or 7zz on PATH (Debian/Ubuntu: "
                "apt-get install p7zip-full)"
            ) from None
        proc = _spawn([tool, "e", "-so", "-bd", str(p)])
        assert proc.stdout is not None
        return proc.stdout, proc, Path(tool).name
    except sevenzip.SevenZipError as exc:
        return _salvage_7z(p, exc), None, "the lzma module"
    stream = sevenzip.SevenZipStream(p, entry.pack_offset, entry.pack_size, coder,
                                     entry.size, entry.crc, damaged)
    return stream, None, "the lzma module"  # type: ignore[return-value]


def _salvage_7z(p: Path, problem: Any) -> BinaryIO:
    """A 7z archive whose header is lost (a cut file: the header is at the end) or damaged:
    its packed data is decoded without it, so the pages before the damage come out; the
    reader then raises, whatever the data looked like (never a quiet end)."""
    from emerge_lib.dumps import sevenzip

    start, end = sevenzip.packed_region(p)
    coder = sevenzip.salvage_coder(p, start)
    if coder is None:
        raise CorruptDumpError(p, 0, f"{problem.reason}; no LZMA or LZMA2 data follows the "
                               "start header", codec="7z", compressed_offset=problem.at)
    logger.warning("%s: %s; decoding its data as %s without the header", p, problem.reason,
                   coder.name)

    def damaged(damage: sevenzip.Damage | None, delivered: int) -> CorruptDumpError:
        how = f"; decoded as {coder.name} without it: {damage.reason}" if damage else (
            f"; decoded as {coder.name} without it, to the end of its data")
        at = damage.at if damage else end
        return CorruptDumpError(p, delivered, problem.reason + how, codec="7z",
                                compressed_offset=at)

    return sevenzip.SevenZipStream(p, start, end - start, coder, None, None,  # type: ignore[return-value]
                                   damaged, fail_at_end=True)


def open_dump(
    path: str | os.PathLike[str],
    *,
    codec: Codec | None = None,
    bz2_backend: Bz2Backend = "auto",
    threads: int | None = None,
) -> io.BufferedReader:
    """Open ``path`` for reading decompressed bytes, choosing the codec from its magic bytes.

    ``threads`` (default: usable cores) is the bz2 parallelism. A path that cannot be a dump
    raises :class:`DumpInputError` (:class:`DumpNotFoundError` when missing). Reading a
    truncated or corrupt archive delivers what precedes the damage, then raises
    :class:`CorruptDumpError`. A 7z archive is decoded here (``dumps.sevenzip``); one with
    a method it does not decode needs a ``7z``/``7za``/``7zz`` program, else
    :class:`MissingToolError` names the package to install.
    """
    p = Path(path)
    check_input(p)
    codec = codec or detect_codec(p)
    threads = threads or cpu_count()
    proc: subprocess.Popen[bytes] | None = None
    inner: BinaryIO
    decoder = {"gz": "the gzip module", "xz": "the lzma module", "lzma": "the lzma module"}.get(
        codec, ""
    )
    if codec == "bz2":
        _check_bz2_start(p)
        inner, proc, decoder = _open_bz2(p, bz2_backend, threads)
    elif codec == "gz":
        inner = gzip.open(p, "rb")
    elif codec == "xz":
        inner = lzma.open(p, "rb", format=lzma.FORMAT_XZ)
    elif codec == "lzma":
        inner = lzma.open(p, "rb", format=lzma.FORMAT_ALONE)
    elif codec == "7z":
        inner, proc, decoder = _open_7z(p)
    else:
        inner = open(p, "rb")  # noqa: SIM115 - ownership passes to the wrapper
        decoder = "reading"
    logger.debug("opened %s as %s", p, codec)
    raw = _CheckedReader(inner, p, proc, codec=codec, decoder=decoder)
    return _DumpReader(raw, buffer_size=_CHUNK)
