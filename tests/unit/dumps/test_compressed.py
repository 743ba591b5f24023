"""Compressed readers: same bytes from every codec/backend; damage raises, never ends quietly."""

from __future__ import annotations

import bz2
import gzip
import lzma
import re
import shutil
import zlib
from collections.abc import Callable
from pathlib import Path

import pytest
from dumpbuilder import paged_xml, read_dump, read_until_error

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
from emerge_lib.dumps.xml import Dump

HAS_LBZIP2 = shutil.which("lbzip2") is not None
BACKENDS = [
    "indexed_bzip2",
    "stdlib",
    pytest.param("lbzip2", marks=pytest.mark.skipif(not HAS_LBZIP2, reason="lbzip2 not installed")),
]


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
    assert read_dump(realdata / "pywikibot/article-pyrus.xml") == plain
    assert read_dump(realdata / "pywikibot/article-pyrus.xml.gz") == plain
    for backend in ("indexed_bzip2", "stdlib"):
        assert read_dump(realdata / "pywikibot/article-pyrus.xml.bz2", bz2_backend=backend) == plain


@pytest.mark.realdata
def test_7z_sample(realdata: Path) -> None:
    """Read by the stdlib (dumps.sevenzip): no 7z program needed (tests/unit/dumps/test_sevenzip.py)."""
    plain = (realdata / "pywikibot/article-pyrus.xml").read_bytes()
    assert read_dump(realdata / "pywikibot/article-pyrus.xml.7z") == plain
    assert read_dump(realdata / "mwxml/test.7z").strip() == b"foobartest"


@pytest.mark.realdata
def test_lzma_alone_and_codec_detection(realdata: Path) -> None:
    p = realdata / "wikiwho/small.xml.lzma"
    assert detect_codec(p) == "lzma"
    assert detect_codec(realdata / "gensim/testcorpus.xml.bz2") == "bz2"
    assert detect_codec(realdata / "pywikibot/article-pyrus.xml.gz") == "gz"
    assert detect_codec(realdata / "pywikibot/article-pyrus.xml.7z") == "7z"
    assert detect_codec(realdata / "mwxml/dump.xml") == "plain"
    text = read_dump(p)
    assert b"<title>Talk:Pilsbury Block</title>" in text
    assert text.rstrip().endswith(b"</mediawiki>")


@pytest.mark.parametrize("backend", BACKENDS)
def test_bz2_backends_multiblock_and_multistream(tmp_path: Path, backend: str) -> None:
    p, data = _big_bz2(tmp_path)
    assert read_dump(p, bz2_backend=backend, threads=2) == data
    # Wikimedia "multistream" files are concatenated bz2 streams.
    multi = tmp_path / "multi.xml.bz2"
    multi.write_bytes(bz2.compress(data[:300_000], 1) + bz2.compress(data[300_000:], 1))
    assert read_dump(multi, bz2_backend=backend) == data


@pytest.mark.parametrize("backend", BACKENDS)
def test_truncated_bz2_raises_with_offset(tmp_path: Path, backend: str) -> None:
    p, data = _big_bz2(tmp_path)
    cut = tmp_path / "cut.xml.bz2"
    cut.write_bytes(p.read_bytes()[: p.stat().st_size * 2 // 3])
    got = bytearray()
    with pytest.raises(CorruptDumpError) as info, open_dump(cut, bz2_backend=backend) as fh:  # type: ignore[arg-type]
        while chunk := fh.read(65536):
            got += chunk
    # every byte of the complete blocks comes out (a correct prefix), then the error; an
    # external lbzip2 stops at the last block it wrote when its input breaks off (its
    # workers' later blocks are dropped): a shorter prefix, still correct, the offset exact;
    # on a loaded machine it can break off before writing any block (seen: offset 0)
    good = max(d for bit, d in _bz2_blocks(p) if bit < cut.stat().st_size * 8)
    if backend == "lbzip2":
        assert 0 <= info.value.offset == len(got) <= good
    else:
        assert info.value.offset == len(got) == good
    assert bytes(got) == data[:len(got)]


@pytest.mark.parametrize("backend", BACKENDS)
def test_corrupt_bz2_raises(tmp_path: Path, backend: str) -> None:
    p, _ = _big_bz2(tmp_path)
    raw = bytearray(p.read_bytes())
    raw[len(raw) // 2] ^= 0xFF
    bad = tmp_path / "bad.xml.bz2"
    bad.write_bytes(bytes(raw))
    with pytest.raises(CorruptDumpError, match=r"corrupt bz2 data at decompressed byte [1-9]"):
        read_dump(bad, bz2_backend=backend)


def test_truncated_gz_raises(tmp_path: Path) -> None:
    data = b"<mediawiki>" + b"x" * 200_000 + b"</mediawiki>"
    raw = gzip.compress(data)
    p = tmp_path / "cut.xml.gz"
    p.write_bytes(raw[: len(raw) - 10])
    with pytest.raises(CorruptDumpError):
        read_dump(p)


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



# -- damage: the pages before it are delivered, the error says what and where ----------------
def _bz2_blocks(path: Path) -> list[tuple[int, int]]:
    """(compressed bit offset, decompressed offset) of each block of an intact bz2 file,
    then of its end-of-stream marker."""
    import indexed_bzip2

    with indexed_bzip2.open(str(path)) as fh:
        fh.read()
        return sorted(fh.raw.bz2reader.block_offsets().items())


# the default (indexed_bzip2 on all cores), 2 and 1 threads (pool workers), the stdlib
READERS: dict[str, Callable[[Path], Dump]] = {
    "default": lambda p: Dump.from_file(p),
    "threads=2": lambda p: Dump.from_file(p, threads=2),
    "threads=1": lambda p: Dump.from_file(p, threads=1),
    "stdlib": lambda p: Dump(open_dump(p, bz2_backend="stdlib"), close_stream=True),
}
Paged = tuple[Path, dict[int, int], list[tuple[int, int]]]


@pytest.fixture(scope="module")
def paged_bz2(tmp_path_factory: pytest.TempPathFactory) -> Paged:
    xml, ends = paged_xml()
    p = tmp_path_factory.mktemp("paged") / "enwiki-pages.xml.bz2"
    p.write_bytes(bz2.compress(xml, 1))
    blocks = _bz2_blocks(p)
    assert len(blocks) >= 5
    return p, ends, blocks


@pytest.mark.parametrize("reader", READERS)
def test_cut_bz2_yields_every_page_of_the_complete_blocks(
    tmp_path: Path, paged_bz2: Paged, reader: str
) -> None:
    p, ends, blocks = paged_bz2
    j = len(blocks) - 2  # cut in the middle of a later block
    cut = tmp_path / p.name
    cut.write_bytes(p.read_bytes()[: (blocks[j][0] + blocks[j + 1][0]) // 16])
    good = blocks[j][1]  # decompressed bytes of the complete blocks
    expected = [i for i, end in ends.items() if end <= good]
    assert 0 < len(expected) < len(ends)
    done, err = read_until_error(READERS[reader](cut))
    assert done == expected
    assert (err.offset, err.block, err.compressed_offset) == (good, j + 1, cut.stat().st_size)
    assert err.block_start == blocks[j][0] // 8
    assert str(cut) in str(err) and "unexpected end of data" in str(err)


@pytest.mark.parametrize("reader", READERS)
def test_flipped_bytes_in_a_bz2_block_say_what_and_where(
    tmp_path: Path, paged_bz2: Paged, reader: str
) -> None:
    p, ends, blocks = paged_bz2
    j = len(blocks) // 2
    first, last = blocks[j][0] // 8, blocks[j + 1][0] // 8
    raw = bytearray(p.read_bytes())
    for k in range(4):  # inside the block's Huffman data, away from its header
        raw[(first + last) // 2 + k] ^= 0xFF
    bad = tmp_path / "bad.xml.bz2"
    bad.write_bytes(bytes(raw))
    good = blocks[j][1]
    done, err = read_until_error(READERS[reader](bad))
    assert set(done) >= {i for i, end in ends.items() if end <= good}
    message = str(err)
    assert str(bad) in message and "corrupt bz2 data" in message and "\n" not in message
    assert re.search(r"CRC mismatch|bad block header|invalid data", err.reason), message
    assert err.offset >= good > 0
    assert f"(in bz2 block {j + 1}, which starts at compressed byte {first})" in message
    assert (err.block, err.block_start) == (j + 1, first)
    assert first < err.compressed_offset <= last + 1
    if reader != "threads=1":  # a sequential decoder may hand out a bad block's bytes first
        assert err.offset == good and set(done) == {i for i, end in ends.items() if end <= good}


@pytest.mark.parametrize("reader", READERS)
@pytest.mark.parametrize("damage", ["first block magic", "garbage after the header"])
def test_damaged_first_bz2_block_is_reported_not_skipped(
    tmp_path: Path, paged_bz2: Paged, reader: str, damage: str
) -> None:
    """indexed_bzip2's parallel reader skips a first block whose magic is gone (and reads
    b"BZh9" + garbage as empty): the header parser would then say "not a MediaWiki export"."""
    p, _, _ = paged_bz2
    raw = bytearray(p.read_bytes())
    if damage == "first block magic":
        raw[5] ^= 0xFF
    else:
        raw[4:] = b"this is not bz2 data"
    bad = tmp_path / "bad.xml.bz2"
    bad.write_bytes(bytes(raw))
    with pytest.raises(CorruptDumpError) as info:
        READERS[reader](bad)
    assert f"{bad}: corrupt bz2 data at decompressed byte 0, compressed byte 4 (in bz2 block 1, " \
        "which starts at compressed byte 4): bad block header" in str(info.value)


@pytest.mark.parametrize("codec", ["gz", "xz"])
def test_cut_gz_and_xz_yield_everything_a_streaming_decoder_gets(tmp_path: Path, codec: str) -> None:
    xml, ends = paged_xml(30)
    packed = gzip.compress(xml) if codec == "gz" else lzma.compress(xml)
    cut = tmp_path / f"cut.xml.{codec}"
    cut.write_bytes(packed[: len(packed) * 2 // 3])
    dec = zlib.decompressobj(31) if codec == "gz" else lzma.LZMADecompressor()
    decodable = len(dec.decompress(cut.read_bytes()))
    expected = [i for i, end in ends.items() if end <= decodable]
    assert 0 < len(expected) < len(ends)
    done, err = read_until_error(Dump.from_file(cut))
    assert done == expected
    assert err.offset == decodable and "unexpected end of data" in str(err)
    assert err.compressed_offset == cut.stat().st_size


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
    from emerge_lib.dumps.xml import MalformedXMLError

    p = tmp_path / "feed.xml"
    p.write_bytes(b'<?xml version="1.0"?>\n<rss><channel></channel></rss>\n')
    with pytest.raises(MalformedXMLError, match="no <mediawiki> root element"):
        Dump.from_file(p)


def test_cut_stream_trailer_fails_after_all_pages(tmp_path: Path, paged_bz2: Paged) -> None:
    """</mediawiki> is in the last whole block, only the end-of-stream trailer is cut: every
    page comes out, and the error still comes (the reader reads on to the end)."""
    p, ends, blocks = paged_bz2
    cut = tmp_path / p.name
    cut.write_bytes(p.read_bytes()[:-4])
    done, err = read_until_error(Dump.from_file(cut))
    assert done == list(ends)
    assert f"(after bz2 block {len(blocks) - 1}," in str(err) and err.after_block
    assert "unexpected end of data" in err.reason


def test_decompressor_exit_status_fails_after_all_pages(
    tmp_path: Path, paged_bz2: Paged, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An external decompressor that says "damage" only by its exit status, after all its
    output, still fails the file (that status is read at the end of the data)."""
    import sys

    p, ends, _ = paged_bz2
    tool = tmp_path / "fake-lbzip2"
    tool.write_text(f"#!{sys.executable}\nimport bz2, sys\n"
                    "sys.stdout.buffer.write(bz2.decompress(open(sys.argv[-1], 'rb').read()))\n"
                    "sys.exit('fake-lbzip2: CRC error in block 9')\n")
    tool.chmod(0o755)
    monkeypatch.setattr(compressed, "_external_bz2", lambda: str(tool))
    done, err = read_until_error(Dump(open_dump(p, bz2_backend="lbzip2"), close_stream=True))
    assert done == list(ends)
    assert "lbzip2 exited 1: fake-lbzip2: CRC error in block 9" in str(err)
