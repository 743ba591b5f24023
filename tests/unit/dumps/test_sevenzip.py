"""7z history files: read here (stdlib lzma in a thread), written as Wikimedia does, damage
said in one line after the pages before it, and the mirror's choice between 7z and bz2."""

from __future__ import annotations

import bz2
import hashlib
import json
import lzma
import shutil
import subprocess
import zlib
from pathlib import Path

import pytest
from dumpbuilder import paged_xml, read_dump, read_until_error

from emerge_lib.dumps import compressed, sevenzip
from emerge_lib.dumps.compressed import CorruptDumpError, MissingToolError, open_dump
from emerge_lib.dumps.mirror import ChecksumMismatchError, DumpNotReadyError, Mirror
from emerge_lib.dumps.xml import Dump
from emerge_lib.sample.mirror import DumpRun, HistoryWriter, publish

TOOL = next((t for t in ("7z", "7za", "7zz") if shutil.which(t)), None)


def _write_7z(path: Path, data: bytes, name: str = "dump.xml", piece: int = 100_000,
              **kw: object) -> Path:
    with open(path, "wb") as fh:
        w = sevenzip.SevenZipWriter(fh, name, **kw)  # type: ignore[arg-type]
        for i in range(0, len(data), piece):
            w.write(data[i : i + piece])
        w.close()
    return path


@pytest.fixture()
def small_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Many chunks through the decoding thread's queue, and errors placed to 4 KiB."""
    monkeypatch.setattr(sevenzip, "OUT_CHUNK", 50_000)
    monkeypatch.setattr(sevenzip, "IN_CHUNK", 4096)


@pytest.fixture(scope="module")
def paged() -> tuple[bytes, dict[int, int]]:
    return paged_xml(60)


# -- reading ---------------------------------------------------------------------------------
@pytest.mark.realdata
def test_real_7z_samples_need_no_7z_program(realdata: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """7-Zip's own archives (LZMA, plain headers) are read by the stdlib, no tool on PATH."""
    monkeypatch.setattr(compressed.shutil, "which", lambda name: None)
    plain = (realdata / "pywikibot/article-pyrus.xml").read_bytes()
    assert read_dump(realdata / "pywikibot/article-pyrus.xml.7z") == plain
    assert read_dump(realdata / "mwxml/test.7z").strip() == b"foobartest"
    entry = sevenzip.read_archive(realdata / "pywikibot/article-pyrus.xml.7z").only_file()
    assert (entry.name, entry.size, entry.coder.name) == ("article-pyrus.xml", len(plain), "LZMA")
    with Dump.from_file(realdata / "pywikibot/article-pyrus.xml.7z") as dump:
        assert [p.title for p in dump] == ["Pyrus"]


def test_written_7z_reads_back_through_many_chunks(tmp_path: Path, small_chunks: None,
                                                   paged: tuple[bytes, dict[int, int]]) -> None:
    xml, ends = paged
    p = _write_7z(tmp_path / "enwiki-pages.xml.7z", xml, "enwiki-pages.xml")
    assert p.read_bytes().startswith(sevenzip.SIGNATURE) and p.stat().st_size < len(xml) // 3
    entry = sevenzip.read_archive(p).only_file()
    assert (entry.name, entry.size, entry.crc, entry.coder.name) == (
        "enwiki-pages.xml", len(xml), zlib.crc32(xml), "LZMA2")
    assert read_dump(p) == xml
    with open_dump(p) as fh:  # small reads, across chunk boundaries
        got = b"".join(iter(lambda: fh.read(7777), b""))
    assert got == xml
    with Dump.from_file(p) as dump:
        assert [page.page_id for page in dump if list(page)] == list(ends)
    # the same input gives the same bytes (the sample world is byte-reproducible)
    assert _write_7z(tmp_path / "again.7z", xml, "enwiki-pages.xml").read_bytes() == p.read_bytes()


def test_other_methods_and_several_files(tmp_path: Path) -> None:
    data = b"<mediawiki>" + b"abc" * 50_000 + b"</mediawiki>"
    for flt in ({"id": lzma.FILTER_LZMA2, "dict_size": 1 << 20, "preset": 1},):
        assert read_dump(_write_7z(tmp_path / "x.7z", data, filters=flt)) == data
    # BZip2, Deflate and Copy coders, in an archive with a plain header
    deflate = zlib.compressobj(6, zlib.DEFLATED, -15)
    for method, packed in ((sevenzip.BZIP2, bz2.compress(data)),
                           (sevenzip.DEFLATE, deflate.compress(data) + deflate.flush()),
                           (sevenzip.COPY, data)):
        p = _archive_with(tmp_path / f"m{method.hex()}.7z", method, b"", packed, data)
        assert read_dump(p) == data


def _archive_with(path: Path, method: bytes, props: bytes, packed: bytes, data: bytes,
                  files: int = 1) -> Path:
    """An archive with a plain (not encoded) header, one folder of one coder."""
    import struct

    coder = sevenzip._coder_record(method, props) if props or method != sevenzip.COPY else (
        bytes([len(method)]) + method)
    header = bytes([sevenzip.K_HEADER, sevenzip.K_MAIN_STREAMS])
    header += sevenzip._streams_record(0, len(packed), coder, len(data), zlib.crc32(data), False)
    names = "".join(f"f{i}.xml\x00" for i in range(files)).encode("utf-16-le")
    header += bytes([sevenzip.K_FILES_INFO]) + sevenzip._number(files)
    header += bytes([sevenzip.K_NAME]) + sevenzip._number(len(names) + 1) + b"\x00" + names
    header += bytes([sevenzip.K_END, sevenzip.K_END])
    tail = struct.pack("<QQI", len(packed), len(header), zlib.crc32(header))
    start = sevenzip.SIGNATURE + sevenzip.VERSION + struct.pack("<I", zlib.crc32(tail)) + tail
    path.write_bytes(start + packed + header)
    return path


def test_a_method_not_decoded_here_needs_the_7z_program(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    data = b"<mediawiki></mediawiki>"
    p = _archive_with(tmp_path / "ppmd.7z", b"\x03\x04\x01", b"\x06\x00\x00\x00\x01", b"x" * 9, data)
    monkeypatch.setattr(compressed.shutil, "which", lambda name: None)
    with pytest.raises(MissingToolError) as info:
        open_dump(p)
    message = str(info.value)
    assert message.startswith(f"{p}: this 7z archive uses PPMd, which emerge does not decode")
    assert "apt-get install p7zip-full" in message and "\n" not in message


@pytest.mark.skipif(TOOL is None, reason="no 7z program (apt-get install p7zip-full)")
def test_7zip_reads_ours_and_we_read_7zips(tmp_path: Path, paged: tuple[bytes, dict[int, int]]) -> None:
    """Wikimedia's command, `7za a -mx=4 -si`: LZMA2 with an LZMA-encoded header."""
    xml, _ = paged
    ours = _write_7z(tmp_path / "ours.7z", xml)
    tested = subprocess.run([TOOL, "t", str(ours)], capture_output=True, text=True)
    assert tested.returncode == 0 and "Everything is Ok" in tested.stdout
    theirs = tmp_path / "theirs.7z"
    subprocess.run([TOOL, "a", "-mx=4", "-si", str(theirs)], input=xml, check=True,
                   capture_output=True)
    entry = sevenzip.read_archive(theirs).only_file()
    assert entry.coder.name == "LZMA2" and read_dump(theirs) == xml


# -- damage ----------------------------------------------------------------------------------
def test_cut_7z_yields_every_page_before_the_cut(tmp_path: Path, small_chunks: None,
                                                 paged: tuple[bytes, dict[int, int]]) -> None:
    """The header is at the end: a cut archive has none. Its data is decoded without it."""
    xml, ends = paged
    full = _write_7z(tmp_path / "full.7z", xml).read_bytes()
    cut = tmp_path / "enwiki-cut.xml.7z"
    cut.write_bytes(full[: len(full) * 2 // 3])
    # what an independent raw LZMA2 decoder gets from the bytes that are there
    dec = lzma.LZMADecompressor(lzma.FORMAT_RAW, filters=[{"id": lzma.FILTER_LZMA2,
                                                            "dict_size": 16 << 20}])
    decodable = len(dec.decompress(cut.read_bytes()[32:]))
    expected = [i for i, end in ends.items() if end <= decodable]
    assert 0 < len(expected) < len(ends)
    done, err = read_until_error(Dump.from_file(cut))
    assert done == expected
    assert err.offset == decodable and err.compressed_offset == cut.stat().st_size
    message = str(err)
    assert message.startswith(f"{cut}: corrupt 7z data at decompressed byte {decodable}, "
                              f"compressed byte {cut.stat().st_size}: the header is missing")
    assert "(truncated)" in message and "\n" not in message
    got = b""
    with pytest.raises(CorruptDumpError), open_dump(cut) as fh:
        while chunk := fh.read(65536):
            got += chunk
    assert got == xml[:decodable]  # a correct prefix, nothing invented


@pytest.mark.parametrize("where", [0.3, 0.7])
def test_flipped_bytes_in_7z_data_say_where(tmp_path: Path, small_chunks: None, where: float,
                                            paged: tuple[bytes, dict[int, int]]) -> None:
    xml, ends = paged
    raw = bytearray(_write_7z(tmp_path / "full.7z", xml).read_bytes())
    entry = sevenzip.read_archive(tmp_path / "full.7z").only_file()
    at = entry.pack_offset + int(entry.pack_size * where)
    for k in range(4):
        raw[at + k] ^= 0x55
    bad = tmp_path / "bad.xml.7z"
    bad.write_bytes(bytes(raw))
    done, err = read_until_error(Dump.from_file(bad))
    message = str(err)
    assert str(bad) in message and "corrupt 7z data" in message and "\n" not in message
    assert "LZMA2 data error" in err.reason or "CRC mismatch" in err.reason
    assert at < err.compressed_offset <= entry.pack_offset + entry.pack_size
    assert done == list(ends)[: len(done)] and done  # whole pages, in order, up to the damage
    assert all(ends[i] <= err.offset for i in done)
    got = b""
    with pytest.raises(CorruptDumpError), open_dump(bad) as fh:
        while chunk := fh.read(65536):
            got += chunk
    assert got == xml[: len(got)] and len(got) == err.offset


def test_crc_mismatch_fails_after_all_pages(tmp_path: Path, paged: tuple[bytes, dict[int, int]],
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    xml, ends = paged
    bad = tmp_path / "crc.xml.7z"
    with open(bad, "wb") as fh:
        w = sevenzip.SevenZipWriter(fh, "crc.xml")
        w.write(xml)
        w.crc ^= 1  # the header will state a wrong CRC
        w.close()
    done, err = read_until_error(Dump.from_file(bad))
    assert done == list(ends)
    assert "CRC mismatch" in err.reason and err.offset == len(xml)


@pytest.mark.parametrize("damage", ["start header", "header", "no data"])
def test_damaged_headers_are_reported_after_what_can_be_decoded(
        tmp_path: Path, paged: tuple[bytes, dict[int, int]], damage: str) -> None:
    xml, ends = paged
    raw = bytearray(_write_7z(tmp_path / "full.7z", xml).read_bytes())
    if damage == "start header":
        raw[14] ^= 0x01  # the next-header offset: its CRC fails
    elif damage == "header":
        raw[-3] ^= 0x01
    else:
        raw[32:] = b"this is no LZMA data at all" * 3
    bad = tmp_path / "bad.xml.7z"
    bad.write_bytes(bytes(raw))
    if damage == "no data":
        with pytest.raises(CorruptDumpError, match="no LZMA or LZMA2 data follows the start"):
            Dump.from_file(bad)
        return
    done, err = read_until_error(Dump.from_file(bad))
    assert done == list(ends)  # the data is whole; the file still fails
    assert ("start header's CRC" if damage == "start header" else "the header's CRC") in err.reason
    assert "decoded as LZMA2 without it" in err.reason and err.offset == len(xml)


# -- the sample mirror and the client's choice ------------------------------------------------
WIKI, DATE = "wikidatawiki", "20240301"


def _mirror(tmp_path: Path, formats: tuple[str, ...] = ("bz2", "7z"),
            status_7z: str = "done", drop_7z: int | None = None) -> Path:
    """Three history files written by the sample generator's writer, published like
    Wikimedia (both jobs in dumpstatus.json, every file in the sums files)."""
    folder = tmp_path / "mirror" / WIKI / DATE
    run = DumpRun(WIKI, DATE)
    for part, (lo, hi) in enumerate([(1, 3), (4, 6), (7, 9)], 1):
        w = HistoryWriter(folder, WIKI, DATE, part, "<mediawiki>\n", formats=formats, level=1)
        for pid in range(lo, hi + 1):
            w.write_page(pid, f"<page><id>{pid}</id>{'x' * 5000}</page>\n", 1)
        run.files += w.close("</mediawiki>\n")
    if drop_7z is not None:
        run.files = [f for f in run.files if not (f.format == "7z" and f"history{drop_7z}." in f.name)]
    publish(folder, run)
    if status_7z != "done":
        status = json.loads((folder / "dumpstatus.json").read_text())
        status["jobs"]["metahistory7zdump"]["status"] = status_7z
        (folder / "dumpstatus.json").write_text(json.dumps(status))
    return tmp_path / "mirror"


def test_sample_writer_publishes_both_formats_like_wikimedia(tmp_path: Path) -> None:
    root = _mirror(tmp_path)
    folder = root / WIKI / DATE
    status = json.loads((folder / "dumpstatus.json").read_text())["jobs"]
    assert set(status) == {"metahistorybz2dump", "metahistory7zdump"}
    sevens = status["metahistory7zdump"]["files"]
    assert sorted(sevens) == [f"{WIKI}-{DATE}-pages-meta-history{i}.xml-p{lo}p{hi}.7z"
                              for i, (lo, hi) in enumerate([(1, 3), (4, 6), (7, 9)], 1)]
    sums = (folder / f"{WIKI}-{DATE}-sha1sums.txt").read_text()
    for name, meta in sevens.items():
        data = (folder / name).read_bytes()
        assert meta["size"] == len(data) and meta["sha1"] == hashlib.sha1(data).hexdigest()
        assert meta["md5"] == hashlib.md5(data).hexdigest() and name in sums
        # the same XML as the bz2 file; inside, the name 7za -si gives it
        assert read_dump(folder / name) == bz2.decompress((folder / name.replace(".7z", ".bz2")).read_bytes())
        assert sevenzip.read_archive(folder / name).only_file().name == name[: -len(".7z")]
    assert "metahistory7zdump" in (folder / "dumpruninfo.txt").read_text()


def test_mirror_prefers_7z_verifies_it_and_falls_back_per_file(tmp_path: Path) -> None:
    with Mirror(f"file://{_mirror(tmp_path)}") as m:
        chosen = m.history_files(WIKI, DATE)
        assert [f.name.rsplit(".", 1)[1] for f in chosen] == ["7z", "7z", "7z"]
        assert [f.name.split("history")[1][:1] for f in chosen] == ["1", "2", "3"]
        for f in chosen:  # checksums verified as for bz2
            assert m.local_path(f, verify=True).read_bytes()[:6] == sevenzip.SIGNATURE
        assert {f.name.rsplit(".", 1)[1] for f in m.history_files(WIKI, DATE, "bz2")} == {"bz2"}
        # a file the caller already holds as bz2 stays bz2 (not read again as 7z)
        held = {chosen[1].name.replace(".7z", ".bz2")}
        mixed = m.history_files(WIKI, DATE, held=lambda f: f.name in held)
        assert [f.name.rsplit(".", 1)[1] for f in mixed] == ["7z", "bz2", "7z"]
        bad = m.local_path(chosen[0])
        data = bad.read_bytes()
        bad.write_bytes(data[:-1] + bytes([data[-1] ^ 0xFF]))
        with pytest.raises(ChecksumMismatchError, match="differs from the published one"):
            m.local_path(chosen[0], verify=True)


def test_mirror_takes_bz2_until_the_7z_job_is_done(tmp_path: Path) -> None:
    with Mirror(f"file://{_mirror(tmp_path / 'a', status_7z='in-progress')}") as m:
        assert {f.name.rsplit(".", 1)[1] for f in m.history_files(WIKI, DATE)} == {"bz2"}
    with Mirror(f"file://{_mirror(tmp_path / 'b', drop_7z=2)}") as m:  # one 7z not listed
        assert [f.name.rsplit(".", 1)[1] for f in m.history_files(WIKI, DATE)] == ["7z", "bz2", "7z"]
    with Mirror(f"file://{_mirror(tmp_path / 'c', formats=('7z',))}") as m:  # 7z only
        assert {f.name.rsplit(".", 1)[1] for f in m.history_files(WIKI, DATE, "bz2")} == {"7z"}
    root = _mirror(tmp_path / "d", formats=("7z",), status_7z="failed")
    with Mirror(f"file://{root}") as m, pytest.raises(DumpNotReadyError) as info:
        m.history_files(WIKI, DATE)
    assert str(info.value) == (f"{WIKI} {DATE}: no history job is done (metahistory7zdump "
                               "failed, metahistorybz2dump absent)")


def test_7z_stream_close_stops_the_thread(tmp_path: Path, small_chunks: None,
                                          paged: tuple[bytes, dict[int, int]]) -> None:
    """A reader that stops early (a Dump closed after a few pages) leaves no thread behind."""
    import threading

    xml, _ = paged
    p = _write_7z(tmp_path / "x.7z", xml)
    before = threading.active_count()
    fh = open_dump(p)
    assert fh.read(1000) == xml[:1000]
    fh.close()
    assert threading.active_count() == before


def test_the_c_crc32_is_zlibs() -> None:
    """The 7z reader checks every byte's CRC32 with the C build's PCLMULQDQ version."""
    import os
    import random

    native = pytest.importorskip("emerge_lib.dumps._crc32")
    rnd = random.Random(4)
    for n in [*range(0, 200), *(rnd.randrange(1, 1 << 20) for _ in range(40))]:
        data = os.urandom(n)
        start = rnd.randrange(1 << 32)
        assert native.crc32(data) == zlib.crc32(data), n
        assert native.crc32(data, start) == zlib.crc32(data, start), n
        assert native.crc32(memoryview(data)[n // 3 :], start) == zlib.crc32(data[n // 3 :], start)
    assert sevenzip._crc32 is native.crc32
