"""Compressed readers: same bytes from every codec/backend; damage raises, never ends quietly."""

from __future__ import annotations

import bz2
import gzip
import re
import shutil
from pathlib import Path

import pytest

from emerge_lib.dumps import compressed
from emerge_lib.dumps.compressed import (
    CorruptDumpError,
    DumpInputError,
    DumpNotFoundError,
    DumpReadError,
    MissingToolError,
    detect_codec,
    open_dump,
)
from emerge_lib.dumps.xmlstream import Dump

HAS_LBZIP2 = shutil.which("lbzip2") is not None
HAS_7Z = any(shutil.which(t) for t in ("7z", "7za", "7zz"))
BACKENDS = [
    "indexed_bzip2",
    "stdlib",
    pytest.param("lbzip2", marks=pytest.mark.skipif(not HAS_LBZIP2, reason="lbzip2 not installed")),
]


def _read(path: Path, **kw: object) -> bytes:
    with open_dump(path, **kw) as fh:  # type: ignore[arg-type]
        return fh.read()


def _big_bz2(tmp_path: Path) -> tuple[Path, bytes]:
    """Several bz2 blocks (block size 1 = 100 kB) of incompressible-ish text."""
    import random

    rnd = random.Random(7)
    data = "".join(f"<page>{rnd.random():.17f}</page>\n" for _ in range(40_000)).encode()
    p = tmp_path / "big.xml.bz2"
    p.write_bytes(bz2.compress(data, 1))
    return p, data


@pytest.mark.realdata
def test_pyrus_codecs_decompress_identically(realdata: Path) -> None:
    plain = (realdata / "pywikibot/article-pyrus.xml").read_bytes()
    assert plain.startswith(b"<mediawiki")
    assert _read(realdata / "pywikibot/article-pyrus.xml") == plain
    assert _read(realdata / "pywikibot/article-pyrus.xml.gz") == plain
    for backend in ("indexed_bzip2", "stdlib"):
        assert _read(realdata / "pywikibot/article-pyrus.xml.bz2", bz2_backend=backend) == plain


@pytest.mark.realdata
@pytest.mark.skipif(not HAS_7Z, reason="7z/7za not installed (apt-get install p7zip-full)")
def test_7z_sample(realdata: Path) -> None:
    plain = (realdata / "pywikibot/article-pyrus.xml").read_bytes()
    assert _read(realdata / "pywikibot/article-pyrus.xml.7z") == plain
    assert _read(realdata / "mwxml/test.7z").strip() == b"foobartest"


@pytest.mark.realdata
def test_7z_without_tool_names_the_package(realdata: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(compressed.shutil, "which", lambda name: None)
    with pytest.raises(MissingToolError, match="p7zip-full"):
        open_dump(realdata / "pywikibot/article-pyrus.xml.7z")


@pytest.mark.realdata
def test_lzma_alone_and_codec_detection(realdata: Path) -> None:
    p = realdata / "wikiwho/small.xml.lzma"
    assert detect_codec(p) == "lzma"
    assert detect_codec(realdata / "gensim/testcorpus.xml.bz2") == "bz2"
    assert detect_codec(realdata / "pywikibot/article-pyrus.xml.gz") == "gz"
    assert detect_codec(realdata / "pywikibot/article-pyrus.xml.7z") == "7z"
    assert detect_codec(realdata / "mwxml/dump.xml") == "plain"
    text = _read(p)
    assert b"<title>Talk:Pilsbury Block</title>" in text
    assert text.rstrip().endswith(b"</mediawiki>")


@pytest.mark.parametrize("backend", BACKENDS)
def test_bz2_backends_multiblock_and_multistream(tmp_path: Path, backend: str) -> None:
    p, data = _big_bz2(tmp_path)
    assert _read(p, bz2_backend=backend, threads=2) == data
    # Wikimedia "multistream" files are concatenated bz2 streams.
    multi = tmp_path / "multi.xml.bz2"
    multi.write_bytes(bz2.compress(data[:300_000], 1) + bz2.compress(data[300_000:], 1))
    assert _read(multi, bz2_backend=backend) == data


@pytest.mark.parametrize("backend", BACKENDS)
def test_truncated_bz2_raises_with_offset(tmp_path: Path, backend: str) -> None:
    p, data = _big_bz2(tmp_path)
    cut = tmp_path / "cut.xml.bz2"
    cut.write_bytes(p.read_bytes()[: p.stat().st_size * 2 // 3])
    got = bytearray()
    with pytest.raises(CorruptDumpError) as info, open_dump(cut, bz2_backend=backend) as fh:  # type: ignore[arg-type]
        while chunk := fh.read(65536):
            got += chunk
    # offset = bytes the decompressor produced before failing (>= what a buffered reader
    # handed out); everything that did come out is a correct prefix.
    assert len(got) <= info.value.offset < len(data)
    assert data.startswith(bytes(got))


@pytest.mark.parametrize("backend", BACKENDS)
def test_corrupt_bz2_raises(tmp_path: Path, backend: str) -> None:
    p, _ = _big_bz2(tmp_path)
    raw = bytearray(p.read_bytes())
    raw[len(raw) // 2] ^= 0xFF
    bad = tmp_path / "bad.xml.bz2"
    bad.write_bytes(bytes(raw))
    with pytest.raises(CorruptDumpError, match="corrupt or truncated"):
        _read(bad, bz2_backend=backend)


def test_truncated_gz_raises(tmp_path: Path) -> None:
    data = b"<mediawiki>" + b"x" * 200_000 + b"</mediawiki>"
    raw = gzip.compress(data)
    p = tmp_path / "cut.xml.gz"
    p.write_bytes(raw[: len(raw) - 10])
    with pytest.raises(CorruptDumpError):
        _read(p)


def test_wrong_magic_for_extension_is_not_that_format(tmp_path: Path) -> None:
    p = tmp_path / "fake.xml.bz2"
    p.write_bytes(b"<mediawiki></mediawiki>")
    with pytest.raises(DumpInputError, match=r"not a bz2 file \(starts with b'<mediawi'"):
        open_dump(p)
    with pytest.raises(FileNotFoundError):  # as before, for callers that catch that
        open_dump(tmp_path / "missing.xml")


@pytest.mark.skipif(not HAS_LBZIP2, reason="lbzip2 not installed")
def test_lbzip2_missing_is_reported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    p, _ = _big_bz2(tmp_path)
    monkeypatch.setattr(compressed, "_external_bz2", lambda: None)
    with pytest.raises(MissingToolError, match="lbzip2"):
        open_dump(p, bz2_backend="lbzip2")


# -- a path that is no dump at all: one line naming the path and what is wrong ---------------
PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"
BAD_INPUTS = {
    # name: (how to make it, the message after "<path>: ")
    "missing": (None, "not found"),
    "directory": ("dir", "is a directory, not a dump file"),
    "empty.xml.bz2": (b"", r"empty file \(0 bytes\)"),
    "empty": (b"", r"empty file \(0 bytes\)"),
    "picture.xml.bz2": (PNG, r"not a bz2 file \(starts with b'\\x89PNG\\r\\n\\x1a\\n', not b'BZh'\)"),
    "error-page.xml.gz": (b"<html>404</html>", r"not a gzip file \(starts with b'<html>40'"),
    "picture.xml": (PNG, r"not a dump file \(starts with b'\\x89PNG.*neither XML nor bz2, gzip"),
    "notes": (b"hello, this is text", r"not a dump file \(starts with b'hello, t'"),
}


@pytest.mark.parametrize("name", BAD_INPUTS)
def test_bad_inputs_say_what_is_wrong_in_one_line(tmp_path: Path, name: str) -> None:
    content, message = BAD_INPUTS[name]
    p = tmp_path / name
    if content == "dir":
        p.mkdir()
    elif content is not None:
        p.write_bytes(content)
    for opener in (open_dump, Dump.from_file):
        with pytest.raises(DumpInputError) as info:
            opener(p)
        assert re.fullmatch(re.escape(str(p)) + ": " + message + ".*", str(info.value))
        assert "\n" not in str(info.value) and info.value.path == str(p)
        assert isinstance(info.value, DumpReadError)
        assert isinstance(info.value, FileNotFoundError) == (name == "missing")


def test_missing_file_is_also_a_file_not_found_error(tmp_path: Path) -> None:
    with pytest.raises(DumpNotFoundError) as info:
        open_dump(tmp_path / "gone.xml.bz2")
    assert isinstance(info.value, FileNotFoundError) and info.value.errno == 2
    assert str(info.value) == f"{tmp_path / 'gone.xml.bz2'}: not found"


def test_xml_that_is_no_mediawiki_export_is_malformed_xml(tmp_path: Path) -> None:
    from emerge_lib.dumps.xmlstream import MalformedXMLError

    p = tmp_path / "feed.xml"
    p.write_bytes(b'<?xml version="1.0"?>\n<rss><channel></channel></rss>\n')
    with pytest.raises(MalformedXMLError, match="no <mediawiki> root element"):
        Dump.from_file(p)
