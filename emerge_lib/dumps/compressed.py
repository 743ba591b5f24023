"""Open (possibly compressed) dump files as one binary stream of decompressed bytes.

Why a module of its own: history dumps are tens of GB of bz2, and decompression, not XML
parsing, is the slowest step. bz2 is therefore decoded in parallel (``indexed_bzip2`` with
one thread per core, else an external ``lbzip2 -dc``), falling back to the stdlib. Every
reader is wrapped so that a truncated or corrupt archive raises :class:`CorruptDumpError`
(with the decompressed byte offset reached) instead of silently ending early: a dump that
ends too soon would otherwise look like a dump with fewer revisions.
"""

from __future__ import annotations

import bz2
import codecs
import errno
import gzip
import io
import logging
import lzma
import os
import shutil
import stat
import subprocess
import tempfile
import zlib
from pathlib import Path
from typing import BinaryIO, Literal

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


class DumpReadError(Exception):
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
    """The archive is truncated or corrupt; ``offset`` is the decompressed bytes read so far."""

    def __init__(self, path: str | os.PathLike[str], offset: int, reason: str) -> None:
        self.path = str(path)
        self.offset = offset
        self.reason = reason
        super().__init__(
            f"{self.path}: corrupt or truncated archive at decompressed byte {offset}: {reason}"
        )


class MissingToolError(DumpReadError):
    """An external program needed for this format (e.g. ``7z``) is not on PATH."""


def cpu_count() -> int:
    """Cores this process may use (respects affinity masks, unlike ``os.cpu_count``)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - non-Linux
        return max(1, os.cpu_count() or 1)


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


def _check_input(p: Path) -> None:
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


class _CheckedReader(io.RawIOBase):
    """Wraps a decompressing reader: counts bytes, turns backend errors into CorruptDumpError."""

    def __init__(
        self,
        inner: BinaryIO,
        path: str | os.PathLike[str],
        proc: subprocess.Popen[bytes] | None = None,
    ) -> None:
        super().__init__()
        self._inner = inner
        self._path = path
        self._proc = proc
        self._readinto = getattr(inner, "readinto", None)
        self.offset = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        try:
            if self._readinto is not None:  # straight into the caller's buffer: no copy
                n = self._readinto(buffer) or 0
            else:
                data = self._inner.read(len(buffer))
                n = len(data)
                buffer[:n] = data
        except (EOFError, OSError, RuntimeError, ValueError, zlib.error, lzma.LZMAError) as exc:
            raise CorruptDumpError(self._path, self.offset, f"{type(exc).__name__}: {exc}") from exc
        if n == 0:
            self._check_process_exit()
        self.offset += n
        return n

    def _check_process_exit(self) -> None:
        """An external decompressor reports corruption only through its exit status."""
        if self._proc is None:
            return
        rc = self._proc.wait()
        errfile = self._proc.errfile  # type: ignore[attr-defined]
        errfile.seek(0)
        err = errfile.read().decode("utf-8", "replace").strip()
        errfile.close()
        self._proc = None
        if rc != 0:
            raise CorruptDumpError(
                self._path, self.offset, f"decompressor exited {rc}: {err[-500:]}"
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
        finally:
            super().close()


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
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=err, bufsize=_CHUNK)
    proc.errfile = err  # type: ignore[attr-defined]
    return proc


def _open_bz2(
    path: Path, backend: Bz2Backend, threads: int
) -> tuple[BinaryIO, subprocess.Popen[bytes] | None]:
    if backend in ("auto", "indexed_bzip2"):
        try:
            import indexed_bzip2
        except ImportError:
            if backend == "indexed_bzip2":
                raise
        else:
            return indexed_bzip2.open(str(path), parallelization=threads), None
    if backend in ("auto", "lbzip2"):
        tool = _external_bz2()
        if tool:
            proc = _spawn([tool, "-dc", f"-n{threads}", str(path)])
            assert proc.stdout is not None
            return proc.stdout, proc
        if backend == "lbzip2":
            raise MissingToolError("lbzip2 is not on PATH (apt-get install lbzip2)")
    return bz2.open(path, "rb"), None


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
    truncated or corrupt archive raises :class:`CorruptDumpError`; a 7z file without a
    ``7z``/``7za`` program raises :class:`MissingToolError` naming the package to install.
    """
    p = Path(path)
    _check_input(p)
    codec = codec or detect_codec(p)
    threads = threads or cpu_count()
    proc: subprocess.Popen[bytes] | None = None
    inner: BinaryIO
    if codec == "bz2":
        inner, proc = _open_bz2(p, bz2_backend, threads)
    elif codec == "gz":
        inner = gzip.open(p, "rb")
    elif codec == "xz":
        inner = lzma.open(p, "rb", format=lzma.FORMAT_XZ)
    elif codec == "lzma":
        inner = lzma.open(p, "rb", format=lzma.FORMAT_ALONE)
    elif codec == "7z":
        tool = _find_7z()
        if tool is None:
            raise MissingToolError(
                f"{p}: reading .7z needs the external program 7z or 7za on PATH "
                "(Debian/Ubuntu: apt-get install p7zip-full)"
            )
        proc = _spawn([tool, "e", "-so", "-bd", str(p)])
        assert proc.stdout is not None
        inner = proc.stdout
    else:
        inner = open(p, "rb")  # noqa: SIM115 - ownership passes to the wrapper
    logger.debug("opened %s as %s", p, codec)
    return io.BufferedReader(_CheckedReader(inner, p, proc), buffer_size=_CHUNK)
