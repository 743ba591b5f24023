"""Read and write ``.7z`` archives of one dump file with the standard library's ``lzma``.

Why our own container code: Wikimedia's 7z history files are one XML file compressed by
``7za a -mx=4`` (LZMA2; the header itself LZMA-compressed). Decoding LZMA is liblzma's
work, which Python's ``lzma`` module runs without the GIL, so the decoder runs in a thread
of the reading process, on another core than the XML scanner, with no program to install
and no pipe in between (docs/performance.md, "7z input", has the measurements that chose
this over ``7z e -so``, libarchive and py7zr). The container around it is small: a 32-byte
start header pointing at a header at the end of the file that lists the packed streams,
their coders and the files with their CRC32s.

Damage: the header is at the end, so a cut archive has none. Its data is then decoded
without it (LZMA2, or LZMA with 7-Zip's default properties: the first byte tells them
apart), so the pages before the cut still come out, and the error says the header is
missing. LZMA has no checksum before the end of the file: output is handed on as it is
decoded, and a decoder error, a short stream or a CRC mismatch at the end raises
:class:`~emerge_lib.dumps.compressed.CorruptDumpError` with the compressed offset.

Archives this module does not decode itself (PPMd, BCJ2, encryption, several files)
raise :class:`UnsupportedArchive`; ``compressed.open_dump`` then hands them to an
external ``7z`` program when one is installed.
"""

from __future__ import annotations

import bz2
import io
import lzma
import os
import queue
import struct
import threading
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

try:  # the C build: the same CRC32, 4x faster (PCLMULQDQ), the GIL released
    from emerge_lib.dumps._crc32 import crc32 as _crc32
except ImportError:  # pragma: no cover - exercised where no compiler exists
    from zlib import crc32 as _crc32

SIGNATURE = b"7z\xbc\xaf\x27\x1c"
START_HEADER = 32  # signature, version, start-header CRC, next-header offset, size, CRC
VERSION = b"\x00\x04"

# property ids of the 7z header (7-Zip's 7zFormat.txt)
K_END, K_HEADER, K_ARCHIVE_PROPERTIES, K_ADDITIONAL_STREAMS = 0x00, 0x01, 0x02, 0x03
K_MAIN_STREAMS, K_FILES_INFO, K_PACK_INFO, K_UNPACK_INFO = 0x04, 0x05, 0x06, 0x07
K_SUBSTREAMS_INFO, K_SIZE, K_CRC, K_FOLDER = 0x08, 0x09, 0x0A, 0x0B
K_CODERS_UNPACK_SIZE, K_NUM_UNPACK_STREAM, K_EMPTY_STREAM, K_EMPTY_FILE = 0x0C, 0x0D, 0x0E, 0x0F
K_NAME, K_ENCODED_HEADER, K_DUMMY = 0x11, 0x17, 0x19

COPY, LZMA2, LZMA1 = b"\x00", b"\x21", b"\x03\x01\x01"
BZIP2, DEFLATE = b"\x04\x02\x02", b"\x04\x01\x08"
METHOD_NAMES = {
    COPY: "Copy", LZMA2: "LZMA2", LZMA1: "LZMA", BZIP2: "BZip2", DEFLATE: "Deflate",
    b"\x03\x04\x01": "PPMd", b"\x03\x03\x01\x1b": "BCJ2", b"\x03\x03\x01\x03": "BCJ",
    b"\x06\xf1\x07\x01": "7zAES (encrypted)", b"\x03": "Delta", b"\x04\x01\x09": "Deflate64",
    b"\x0a": "ARM64",
}

OUT_CHUNK = 4 << 20  # decompressed bytes per chunk handed to the reader (its window size)
IN_CHUNK = 64 << 10  # compressed bytes per decoder call: where an error is found, to 64 KiB
QUEUE_CHUNKS = 4  # chunks decoded ahead of the reader: bounded memory
SALVAGE_DICT = 64 << 20  # dictionary assumed when the header is lost (7-Zip up to -mx=7)
MAX_HEADER = 64 << 20


class SevenZipError(Exception):
    """Internal: the archive cannot be read as it stands; ``at`` is a file offset."""

    def __init__(self, reason: str, at: int | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.at = at


class UnsupportedArchive(SevenZipError):
    """A well-formed archive this module does not decode (a method, several files)."""


@dataclass
class Coder:
    method: bytes
    props: bytes
    ins: int = 1
    outs: int = 1

    @property
    def name(self) -> str:
        return METHOD_NAMES.get(self.method, f"method {self.method.hex()}")


@dataclass
class Folder:
    """A chain of coders with its unpacked size and CRC (one solid block of data)."""

    coders: list[Coder]
    packed_streams: int
    unpack_sizes: list[int] = field(default_factory=list)
    bound_outs: set[int] = field(default_factory=set)
    crc: int | None = None

    @property
    def size(self) -> int:
        """The size of the folder's final output (the out stream no coder consumes)."""
        free = [i for i in range(len(self.unpack_sizes)) if i not in self.bound_outs]
        return self.unpack_sizes[free[0]] if free else 0


@dataclass
class Streams:
    pack_pos: int = 0
    pack_sizes: list[int] = field(default_factory=list)
    folders: list[Folder] = field(default_factory=list)
    sub_sizes: list[list[int]] = field(default_factory=list)  # per folder: its files' sizes
    sub_crcs: list[list[int | None]] = field(default_factory=list)


@dataclass
class Entry:
    """One file of the archive: where its data is."""

    name: str
    size: int
    crc: int | None
    folder: int | None  # None: an empty file
    pack_offset: int  # absolute file offset of the folder's packed data
    pack_size: int
    coder: Coder | None


@dataclass
class Archive:
    path: Path
    entries: list[Entry]
    header_at: int  # where the header (or the encoded header block) starts
    size: int  # of the archive file

    def only_file(self) -> Entry:
        """The one file a dump archive holds (empty entries, such as folders, ignored)."""
        files = [e for e in self.entries if e.size > 0 or e.folder is not None]
        if len(files) != 1:
            names = ", ".join(e.name for e in files[:5])
            raise UnsupportedArchive(f"holds {len(files)} files ({names}); a dump archive "
                                     "holds one XML file")
        return files[0]


# -- reading the header --------------------------------------------------------------------
class _Bytes:
    """A cursor over header bytes; ``base`` is their file offset (for error positions)."""

    def __init__(self, data: bytes, base: int) -> None:
        self.data, self.pos, self.base = data, 0, base

    def fail(self, what: str) -> SevenZipError:
        return SevenZipError(f"bad header: {what}", self.base + self.pos)

    def byte(self) -> int:
        if self.pos >= len(self.data):
            raise self.fail("it ends early")
        self.pos += 1
        return self.data[self.pos - 1]

    def take(self, n: int) -> bytes:
        if n < 0 or self.pos + n > len(self.data):
            raise self.fail("it ends early")
        self.pos += n
        return self.data[self.pos - n : self.pos]

    def number(self) -> int:
        """7z's variable-length integer: the first byte's leading 1 bits count the bytes
        that follow (little-endian); its other bits are the high part."""
        first = self.byte()
        mask, value = 0x80, 0
        for i in range(8):
            if not first & mask:
                return value | ((first & (mask - 1)) << (8 * i))
            value |= self.byte() << (8 * i)
            mask >>= 1
        return value

    def count(self, limit: int = 1 << 20) -> int:
        n = self.number()
        if n > limit:
            raise self.fail(f"a count of {n}")
        return n

    def bits(self, n: int) -> list[bool]:
        out: list[bool] = []
        for i in range((n + 7) // 8):
            b = self.byte()
            out.extend(bool(b & (0x80 >> k)) for k in range(8) if i * 8 + k < n)
        return out

    def digests(self, n: int) -> list[int | None]:
        defined = [True] * n if self.byte() else self.bits(n)
        return [struct.unpack("<I", self.take(4))[0] if d else None for d in defined]

    def expect(self, pid: int, what: str) -> None:
        if self.byte() != pid:
            raise self.fail(f"{what} expected")


def _folder(r: _Bytes) -> Folder:
    coders = []
    for _ in range(r.count(64)):
        flags = r.byte()
        if flags & 0x80:
            raise UnsupportedArchive("a coder with alternative methods", r.base + r.pos)
        method = r.take(flags & 0x0F)
        ins, outs = (r.count(64), r.count(64)) if flags & 0x10 else (1, 1)
        props = r.take(r.count(1 << 16)) if flags & 0x20 else b""
        coders.append(Coder(method, props, ins, outs))
    total_out = sum(c.outs for c in coders)
    total_in = sum(c.ins for c in coders)
    bound_ins, bound_outs = set(), set()
    for _ in range(total_out - 1):
        bound_ins.add(r.number())
        bound_outs.add(r.number())
    packed = total_in - (total_out - 1)
    if packed > 1:
        for _ in range(packed):
            r.number()
    return Folder(coders, packed, bound_outs=bound_outs)


def _streams(r: _Bytes) -> Streams:
    s = Streams()
    pid = r.byte()
    if pid == K_PACK_INFO:
        s.pack_pos = r.number()
        n = r.count()
        while (pid := r.byte()) != K_END:
            if pid == K_SIZE:
                s.pack_sizes = [r.number() for _ in range(n)]
            elif pid == K_CRC:
                r.digests(n)
            else:
                raise r.fail(f"property {pid} in the pack info")
        pid = r.byte()
    if pid == K_UNPACK_INFO:
        r.expect(K_FOLDER, "folders")
        nf = r.count()
        if r.byte() != 0:
            raise UnsupportedArchive("folders stored outside the header", r.base + r.pos)
        s.folders = [_folder(r) for _ in range(nf)]
        r.expect(K_CODERS_UNPACK_SIZE, "unpack sizes")
        for f in s.folders:
            f.unpack_sizes = [r.number() for c in f.coders for _ in range(c.outs)]
        while (pid := r.byte()) != K_END:
            if pid == K_CRC:
                for f, crc in zip(s.folders, r.digests(nf), strict=True):
                    f.crc = crc
            else:
                raise r.fail(f"property {pid} in the unpack info")
        pid = r.byte()
    counts = [1] * len(s.folders)
    sizes: list[list[int]] | None = None
    crcs: list[int | None] | None = None
    if pid == K_SUBSTREAMS_INFO:
        while (pid := r.byte()) != K_END:
            if pid == K_NUM_UNPACK_STREAM:
                counts = [r.count() for _ in s.folders]
            elif pid == K_SIZE:
                sizes = []
                for f, n in zip(s.folders, counts, strict=True):
                    part = [r.number() for _ in range(n - 1)] if n else []
                    if n:
                        part.append(f.size - sum(part))
                    sizes.append(part)
            elif pid == K_CRC:
                unknown = sum(n for f, n in zip(s.folders, counts, strict=True)
                              if not (n == 1 and f.crc is not None))
                crcs = r.digests(unknown)
            else:
                raise r.fail(f"property {pid} in the substreams info")
        pid = r.byte()
    if pid != K_END:
        raise r.fail(f"property {pid} in the streams info")
    if sizes is None:
        sizes = [[f.size] if n == 1 else [0] * n for f, n in zip(s.folders, counts, strict=True)]
    pending = iter(crcs or [])
    for f, n, part in zip(s.folders, counts, sizes, strict=True):
        s.sub_sizes.append(part)
        if n == 1 and f.crc is not None:
            s.sub_crcs.append([f.crc])
        else:
            s.sub_crcs.append([next(pending, None) for _ in range(n)])
    return s


def _files(r: _Bytes) -> tuple[list[str], list[bool]]:
    n = r.count()
    names, empty = [""] * n, [False] * n
    while (pid := r.byte()) != K_END:
        data = _Bytes(r.take(r.number()), r.base + r.pos)
        if pid == K_EMPTY_STREAM:
            empty = data.bits(n)
        elif pid == K_NAME:
            if data.byte() != 0:
                raise UnsupportedArchive("file names stored outside the header", r.base + r.pos)
            text = data.data[1:].decode("utf-16-le", "replace")
            names = (text.split("\x00") + [""] * n)[:n]
    return names, empty


def _decode_header_block(fh: BinaryIO, r: _Bytes) -> bytes:
    """A header stored compressed (``kEncodedHeader``): decode it whole (it is small)."""
    s = _streams(r)
    if len(s.folders) != 1 or len(s.pack_sizes) != 1:
        raise UnsupportedArchive("an encoded header in several streams", r.base)
    folder = s.folders[0]
    if folder.size > MAX_HEADER:
        raise SevenZipError(f"bad header: an encoded header of {folder.size} bytes", r.base)
    coder = _single_coder(folder)
    fh.seek(START_HEADER + s.pack_pos)
    packed = fh.read(s.pack_sizes[0])
    out = b"".join(out for out, _ in _inflate(io.BytesIO(packed), len(packed), coder,
                                              folder.size, START_HEADER + s.pack_pos))
    if len(out) != folder.size:
        raise SevenZipError("bad header: the encoded header ends early", r.base)
    if folder.crc is not None and zlib.crc32(out) != folder.crc:
        raise SevenZipError("bad header: CRC mismatch of the encoded header", r.base)
    return out


DECODED = (COPY, LZMA2, LZMA1, BZIP2, DEFLATE)  # the methods decoded here


def check_supported(coder: Coder | None) -> Coder:
    """``coder`` if this module decodes it, else :class:`UnsupportedArchive`."""
    if coder is None:
        raise UnsupportedArchive("holds its file in a block shared with others, or behind "
                                 "a chain of coders")
    if coder.method not in DECODED:
        raise UnsupportedArchive(f"uses {coder.name}")
    return coder


def _single_coder(folder: Folder) -> Coder:
    if len(folder.coders) != 1 or folder.packed_streams != 1:
        names = " + ".join(c.name for c in folder.coders)
        raise UnsupportedArchive(f"uses a chain of coders ({names})")
    return check_supported(folder.coders[0])


def read_archive(path: str | os.PathLike[str]) -> Archive:
    """The archive's files and where their data is; raises :class:`SevenZipError` (a
    truncated or damaged archive) or :class:`UnsupportedArchive`."""
    p = Path(path)
    size = p.stat().st_size
    with open(p, "rb") as fh:
        start = fh.read(START_HEADER)
        if len(start) < START_HEADER or not start.startswith(SIGNATURE):
            raise SevenZipError("the 32-byte start header is incomplete", len(start))
        if zlib.crc32(start[12:32]) != struct.unpack("<I", start[8:12])[0]:
            raise SevenZipError("the start header's CRC does not match (damaged)", 8)
        offset, length, crc = struct.unpack("<QQI", start[12:32])
        at = START_HEADER + offset
        if at + length > size:
            raise SevenZipError(
                f"the header is missing: it was to be at bytes {at}-{at + length}, but the "
                f"file has {size} bytes (truncated)", size)
        if length > MAX_HEADER:
            raise SevenZipError(f"bad header: {length} bytes", at)
        fh.seek(at)
        data = fh.read(length)
        if zlib.crc32(data) != crc:
            raise SevenZipError("the header's CRC does not match (damaged)", at)
        r = _Bytes(data, at)
        pid = r.byte() if data else K_END
        if pid == K_ENCODED_HEADER:
            r = _Bytes(_decode_header_block(fh, r), at)
            pid = r.byte()
        if pid != K_HEADER:
            raise r.fail("no header record")
        streams = Streams()
        names: list[str] = []
        empty: list[bool] = []
        while (pid := r.byte()) != K_END:
            if pid == K_ARCHIVE_PROPERTIES:
                while r.byte() != K_END:
                    r.take(r.number())
            elif pid == K_ADDITIONAL_STREAMS:
                _streams(r)
            elif pid == K_MAIN_STREAMS:
                streams = _streams(r)
            elif pid == K_FILES_INFO:
                names, empty = _files(r)
            else:
                raise r.fail(f"property {pid} in the header")
    return Archive(p, _entries(streams, names, empty, size), at, size)


def _entries(s: Streams, names: list[str], empty: list[bool], size: int) -> list[Entry]:
    """Files in order, each with its folder's packed data (one file per folder: a dump)."""
    offsets, pos = [], START_HEADER + s.pack_pos
    for n in s.pack_sizes:
        offsets.append(pos)
        pos += n
    if pos > size:
        raise SevenZipError("the packed data runs past the end of the file", size)
    entries: list[Entry] = []
    stream, pack = 0, 0
    flat = [(fi, sz, crc) for fi, (sizes, crcs) in enumerate(zip(s.sub_sizes, s.sub_crcs,
                                                                 strict=True))
            for sz, crc in zip(sizes, crcs, strict=True)]
    folder_pack = []
    for f in s.folders:
        folder_pack.append(pack)
        pack += f.packed_streams
    for i, name in enumerate(names or [f"file{k}" for k in range(len(flat))]):
        if i < len(empty) and empty[i]:
            entries.append(Entry(name, 0, None, None, 0, 0, None))
            continue
        if stream >= len(flat):
            raise SevenZipError("bad header: more files than streams")
        fi, sz, crc = flat[stream]
        stream += 1
        folder = s.folders[fi]
        if s.sub_sizes[fi] != [sz] or len(s.sub_sizes[fi]) != 1:
            entries.append(Entry(name, sz, crc, fi, 0, 0, None))  # solid: not for us
            continue
        k = folder_pack[fi]
        coder = folder.coders[0] if len(folder.coders) == 1 else None
        entries.append(Entry(name, sz, crc, fi, offsets[k] if k < len(offsets) else 0,
                             s.pack_sizes[k] if k < len(s.pack_sizes) else 0, coder))
    return entries


# -- decoding ------------------------------------------------------------------------------
def lzma2_dict_size(prop: int) -> int:
    if prop > 40:
        raise SevenZipError(f"bad LZMA2 dictionary property {prop}")
    return 0xFFFFFFFF if prop == 40 else (2 | (prop & 1)) << (prop // 2 + 11)


def lzma1_filter(props: bytes) -> dict[str, int]:
    if len(props) != 5 or props[0] >= 9 * 5 * 5:
        raise SevenZipError(f"bad LZMA properties {props.hex()}")
    d = props[0]
    lc, lp, pb = d % 9, (d // 9) % 5, d // 45
    dict_size = max(struct.unpack("<I", props[1:5])[0], 1 << 12)
    return {"id": lzma.FILTER_LZMA1, "lc": lc, "lp": lp, "pb": pb, "dict_size": dict_size}


class _Copy:
    """The stored method, with a decompressor's interface."""

    eof = False
    needs_input = True
    unused_data = b""

    def decompress(self, data: bytes, max_length: int = -1) -> bytes:
        return data


class _Inflate:
    """Raw deflate (7z's Deflate) with the interface of the lzma and bz2 decompressors."""

    def __init__(self) -> None:
        self._z = zlib.decompressobj(-15)

    @property
    def eof(self) -> bool:
        return self._z.eof

    @property
    def needs_input(self) -> bool:
        return not self._z.unconsumed_tail

    @property
    def unused_data(self) -> bytes:
        return self._z.unused_data

    def decompress(self, data: bytes, max_length: int = -1) -> bytes:
        if not data and self._z.unconsumed_tail:
            data = self._z.unconsumed_tail
        return self._z.decompress(data, max(0, max_length))


def decompressor(coder: Coder) -> Any:
    if coder.method == LZMA2:
        if len(coder.props) != 1:
            raise SevenZipError("bad LZMA2 properties")
        filters = [{"id": lzma.FILTER_LZMA2, "dict_size": lzma2_dict_size(coder.props[0])}]
        return lzma.LZMADecompressor(lzma.FORMAT_RAW, filters=filters)
    if coder.method == LZMA1:
        return lzma.LZMADecompressor(lzma.FORMAT_RAW, filters=[lzma1_filter(coder.props)])
    if coder.method == BZIP2:
        return bz2.BZ2Decompressor()
    if coder.method == DEFLATE:
        return _Inflate()
    if coder.method == COPY:
        return _Copy()
    raise UnsupportedArchive(f"uses {coder.name}")


_DECODE_ERRORS = (lzma.LZMAError, OSError, EOFError, ValueError, zlib.error)


class Damage(Exception):
    """Where decoding stopped: ``at`` the compressed file offset read so far, ``cause``
    the decoder's error (None: the data ended early)."""

    def __init__(self, reason: str, at: int, cause: BaseException | None = None) -> None:
        super().__init__(reason)
        self.reason, self.at, self.cause = reason, at, cause


def _inflate(fh: BinaryIO, pack_size: int, coder: Coder, size: int | None,
             base: int) -> Iterator[tuple[bytes, int]]:
    """(output, compressed file offset read so far) for one coder's packed stream.

    ``size``: the unpacked size (None: unknown, the header being lost: decode until the
    stream ends or the data runs out). Raises :class:`Damage`.
    """
    dec = decompressor(coder)
    left = pack_size
    at = base
    produced = 0
    while (size is None or produced < size) and not dec.eof:
        want = OUT_CHUNK if size is None else min(OUT_CHUNK, size - produced)
        data = b""
        if dec.needs_input and left:
            data = fh.read(min(IN_CHUNK, left))
            left -= len(data)
            at += len(data)
            if not data:
                left = 0
        try:
            out = dec.decompress(data, want)
        except _DECODE_ERRORS as exc:
            raise Damage(f"{coder.name} data error ({exc})", at, exc) from exc
        if out:
            produced += len(out)
            yield out, at
        elif not left and dec.needs_input:
            break
    if size is not None and produced < size:
        if dec.eof:
            raise Damage(f"the {coder.name} stream ends after {produced} of {size} bytes", at)
        raise Damage(f"unexpected end of data: the file ends inside the {coder.name} stream "
                     "(truncated)", at)
    if size is None and not dec.eof and coder.method != LZMA1:
        raise Damage(f"unexpected end of data: the file ends inside the {coder.name} stream "
                     "(truncated)", at)


def salvage_coder(path: Path, start: int = START_HEADER) -> Coder | None:
    """The coder of a packed stream whose header is lost, from its first byte: an LZMA
    stream starts with a zero byte (the range coder's), an LZMA2 one with a chunk that
    resets the dictionary (1: stored, 0xE0 and up: compressed)."""
    with open(path, "rb") as fh:
        fh.seek(start)
        first = fh.read(1)
    if first == b"\x00":
        return Coder(LZMA1, bytes([0x5D]) + struct.pack("<I", SALVAGE_DICT))
    if first == b"\x01" or (first and first[0] >= 0xE0):
        prop = next(p for p in range(41) if lzma2_dict_size(p) >= SALVAGE_DICT)
        return Coder(LZMA2, bytes([prop]))
    return None


def packed_region(path: str | os.PathLike[str]) -> tuple[int, int]:
    """Where the packed data of an archive with a lost header lies: from the start header
    to the header it points at, or to the end of the file (a cut or damaged start header)."""
    p = Path(path)
    size = p.stat().st_size
    with open(p, "rb") as fh:
        start = fh.read(START_HEADER)
    end = size
    if len(start) == START_HEADER and zlib.crc32(start[12:32]) == struct.unpack(
            "<I", start[8:12])[0]:
        end = min(size, START_HEADER + struct.unpack("<Q", start[12:20])[0])
    return min(START_HEADER, size), max(end, min(START_HEADER, size))


_END = object()


class SevenZipStream(io.RawIOBase):
    """The decompressed bytes of one packed stream, decoded ahead in a thread.

    The thread reads the file, decodes (liblzma releases the GIL) and checks the CRC32,
    handing chunks of up to ``OUT_CHUNK`` bytes through a bounded queue. ``on_error``
    turns a :class:`Damage` (and the bytes delivered before it) into the exception the
    reader raises, after every decoded byte has been read; with ``fail_at_end`` it is
    called with None at the end of the data too.
    """

    def __init__(self, path: Path, offset: int, pack_size: int, coder: Coder,
                 size: int | None, crc: int | None,
                 on_error: Callable[[Damage | None, int], BaseException],
                 *, fail_at_end: bool = False) -> None:
        super().__init__()
        self._fail_at_end = fail_at_end  # salvaging: even a clean end is no success
        self._queue: queue.Queue[Any] = queue.Queue(QUEUE_CHUNKS)
        self._stop = threading.Event()
        self._on_error = on_error
        self._pending = memoryview(b"")
        self._done = False
        self._error: BaseException | None = None
        self.delivered = 0
        self._thread = threading.Thread(
            target=self._decode, args=(path, offset, pack_size, coder, size, crc),
            name=f"7z-decode {path.name}", daemon=True)
        self._thread.start()

    # the decoding thread --------------------------------------------------------------
    def _put(self, item: Any) -> bool:
        while not self._stop.is_set():
            try:
                self._queue.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def _decode(self, path: Path, offset: int, pack_size: int, coder: Coder,
                size: int | None, crc: int | None) -> None:
        try:
            check = 0
            with open(path, "rb", buffering=0) as fh:
                fh.seek(offset)
                at = offset
                for out, read_to in _inflate(fh, pack_size, coder, size, offset):
                    at = read_to
                    if crc is not None:
                        check = _crc32(out, check)
                    if not self._put(out):
                        return
            if crc is not None and check != crc:
                raise Damage(f"CRC mismatch: the decoded data has CRC32 {check:08x}, the "
                             f"header says {crc:08x}", at)
            self._put(_END)
        except Damage as damage:
            self._put(damage)
        except BaseException as exc:  # noqa: BLE001 - handed to the reader, never lost
            self._put(exc)

    # the reader -----------------------------------------------------------------------
    def readable(self) -> bool:
        return True

    def _next(self) -> bool:
        if self._done:
            return False
        item = self._queue.get()
        if item is _END:
            self._done = True
            if self._fail_at_end:
                self._error = self._on_error(None, self.delivered)
                raise self._error
            return False
        if isinstance(item, Damage):
            self._done = True
            self._error = self._on_error(item, self.delivered)
            raise self._error
        if isinstance(item, BaseException):
            self._done = True
            self._error = item
            raise item
        self._pending = memoryview(item)
        return True

    def readinto(self, buffer: Any) -> int:
        if self._error is not None:
            raise self._error
        while not self._pending:
            if not self._next():
                return 0
        n = min(len(buffer), len(self._pending))
        buffer[:n] = self._pending[:n]
        self._pending = self._pending[n:]
        self.delivered += n
        return n

    def close(self) -> None:
        if self.closed:
            return
        self._stop.set()
        while self._thread.is_alive():
            try:
                self._queue.get(timeout=0.05)
            except queue.Empty:
                continue
        self._thread.join()
        super().close()


# -- writing -------------------------------------------------------------------------------
def _number(n: int) -> bytes:
    """7z's variable-length integer (see ``_Bytes.number``)."""
    for extra in range(8):
        if n < 1 << (8 * extra + 7 - extra):
            first = (0xFF00 >> extra) & 0xFF
            return bytes([first | (n >> (8 * extra))]) + (n & ((1 << 8 * extra) - 1)).to_bytes(
                extra, "little")
    return b"\xff" + n.to_bytes(8, "little")


def lzma2_dict_prop(dict_size: int) -> int:
    return next(p for p in range(41) if lzma2_dict_size(p) >= dict_size)


# 7-Zip's -mx=4 (what Wikimedia runs): LZMA2, fast mode, hash-chain match finder
WIKIMEDIA_LZMA2 = {"id": lzma.FILTER_LZMA2, "dict_size": 16 << 20, "mode": lzma.MODE_FAST,
                   "mf": lzma.MF_HC4, "nice_len": 32, "lc": 3, "lp": 0, "pb": 2}
_HEADER_LZMA = {"id": lzma.FILTER_LZMA1, "dict_size": 1 << 16, "lc": 3, "lp": 0, "pb": 2}


def _coder_record(method: bytes, props: bytes) -> bytes:
    return bytes([len(method) | 0x20]) + method + _number(len(props)) + props


def _streams_record(pack_pos: int, pack_size: int, coder: bytes, size: int,
                    crc: int, in_folder: bool) -> bytes:
    """Pack info, one folder of one coder, and the CRC: in the folder (an encoded header,
    as 7-Zip writes it) or in the substreams info (a file)."""
    out = bytes([K_PACK_INFO]) + _number(pack_pos) + _number(1) + bytes([K_SIZE])
    out += _number(pack_size) + bytes([K_END])
    out += bytes([K_UNPACK_INFO, K_FOLDER]) + _number(1) + b"\x00" + _number(1) + coder
    out += bytes([K_CODERS_UNPACK_SIZE]) + _number(size)
    digest = b"\x01" + struct.pack("<I", crc)
    if in_folder:
        return out + bytes([K_CRC]) + digest + bytes([K_END, K_END])
    out += bytes([K_END, K_SUBSTREAMS_INFO, K_CRC]) + digest + bytes([K_END])
    return out + bytes([K_END])


class SevenZipWriter:
    """Streams one file into a ``.7z`` archive as Wikimedia's ``7za a -mx=4`` does: LZMA2
    (fast mode, 16 MiB dictionary), the header LZMA-compressed. Deterministic (no times
    are stored), so the same input gives the same bytes. ``fh`` must be seekable: the
    start header, which points at the header, is written last."""

    def __init__(self, fh: BinaryIO, name: str, filters: dict[str, Any] | None = None) -> None:
        self._fh = fh
        self.name = name
        self._filter = dict(filters or WIKIMEDIA_LZMA2)
        self._comp = lzma.LZMACompressor(lzma.FORMAT_RAW, filters=[self._filter])
        self._base = fh.tell()
        fh.write(b"\x00" * START_HEADER)
        self.crc = 0
        self.size = 0
        self.packed = 0

    def write(self, data: bytes) -> None:
        self.crc = _crc32(data, self.crc)
        self.size += len(data)
        self._out(self._comp.compress(data))

    def _out(self, data: bytes) -> None:
        if data:
            self._fh.write(data)
            self.packed += len(data)

    def close(self) -> int:
        """Finish the archive; returns its size in bytes."""
        self._out(self._comp.flush())
        if not self.size:
            raise ValueError("a 7z archive of an empty file is not written here")
        coder = _coder_record(LZMA2, bytes([lzma2_dict_prop(self._filter["dict_size"])]))
        name = self.name.encode("utf-16-le") + b"\x00\x00"
        header = bytes([K_HEADER, K_MAIN_STREAMS])
        header += _streams_record(0, self.packed, coder, self.size, self.crc, in_folder=False)
        header += bytes([K_FILES_INFO]) + _number(1)
        header += bytes([K_NAME]) + _number(len(name) + 1) + b"\x00" + name
        header += bytes([K_END, K_END])
        packed_header = lzma.compress(header, lzma.FORMAT_RAW, filters=[_HEADER_LZMA])
        self._fh.write(packed_header)
        h = _HEADER_LZMA  # the 5 LZMA property bytes: lc/lp/pb in one, the dictionary size
        props = bytes([(h["pb"] * 5 + h["lp"]) * 9 + h["lc"]]) + struct.pack("<I", h["dict_size"])
        encoded = bytes([K_ENCODED_HEADER]) + _streams_record(
            self.packed, len(packed_header), _coder_record(LZMA1, props), len(header),
            zlib.crc32(header), in_folder=True)
        self._fh.write(encoded)
        next_offset = self.packed + len(packed_header)
        tail = struct.pack("<QQI", next_offset, len(encoded), zlib.crc32(encoded))
        end = self._fh.tell()
        self._fh.seek(self._base)
        self._fh.write(SIGNATURE + VERSION + struct.pack("<I", zlib.crc32(tail)) + tail)
        self._fh.seek(end)
        return end - self._base
