"""Ingest of a cut bz2 or 7z history file: like a cut plain file, the pages before the
damage (of its complete bz2 blocks; before the cut of a 7z) are kept, the file fails and
covers nothing."""

from __future__ import annotations

import bz2
import random
from pathlib import Path

import indexed_bzip2
import pytest
from ingestkit import ingest_wikipedia
from wikipedia_builder import render, world_v1, write_bz2

from emerge_lib.catalog import Catalog
from emerge_lib.ingest.files import IngestError


def test_cut_bz2_keeps_the_pages_of_its_complete_blocks(tmp_path: Path, catalog: Catalog) -> None:
    good = write_bz2(tmp_path / "enwiki-20240301-pages-meta-history1.xml-p1p2.bz2", world_v1()[:2])
    xml = render(world_v1()[2:4]).encode()
    # ~250 kB of letters between pages 3 and 4 (an XML comment): several 100 kB blocks
    rnd = random.Random(1)
    filler = "".join(rnd.choice("abcdefghij ") for _ in range(250_000)).encode()
    at = xml.index(b"  <page>", xml.index(b"</page>"))
    data = bz2.compress(xml[:at] + b"<!-- " + filler + b" -->\n" + xml[at:], 1)
    bad = tmp_path / "enwiki-20240301-pages-meta-history2.xml-p3p100.bz2"
    bad.write_bytes(data)
    with indexed_bzip2.open(str(bad)) as fh:
        fh.read()
        blocks = sorted(fh.raw.bz2reader.block_offsets())
    assert len(blocks) >= 4  # the last offset is the end of the stream
    bad.write_bytes(data[: (blocks[-2] + blocks[-1]) // 16])  # page 4 is in the cut block
    with pytest.raises(IngestError, match="1 of 2 enwiki files failed"):
        ingest_wikipedia(catalog, [good, bad], max_reject_ratio=1.0)
    assert {r["page_id"] for r in catalog.read_arrow("page_watermarks").to_pylist()} == {1, 2, 3}
    rejects = catalog.read_arrow("ingest_rejects").to_pylist()
    errors = [r for r in rejects if (r["dump_file"], r["reason"]) == (bad.name, "file_error")]
    assert len(errors) == 1
    assert {r["dump_file"] for r in catalog.read_arrow("paragraph_coverage").to_pylist()} == {good.name}


def test_cut_7z_keeps_the_pages_before_the_cut(tmp_path: Path, catalog: Catalog) -> None:
    """A cut 7z has lost its header (it is at the end): its data is decoded without it, the
    pages before the cut are committed, the file fails and covers nothing."""
    import lzma

    from emerge_lib.dumps.sevenzip import SevenZipWriter

    def write_7z(path: Path, data: bytes) -> Path:
        with open(path, "wb") as fh:
            w = SevenZipWriter(fh, path.stem)
            w.write(data)
            w.close()
        return path

    good = write_7z(tmp_path / "enwiki-20240301-pages-meta-history1.xml-p1p2.7z",
                    render(world_v1()[:2]).encode())
    xml = render(world_v1()[2:4]).encode()
    rnd = random.Random(1)
    filler = "".join(rnd.choice("abcdefghij ") for _ in range(250_000)).encode()
    at = xml.index(b"  <page>", xml.index(b"</page>"))
    xml = xml[:at] + b"<!-- " + filler + b" -->\n" + xml[at:]
    bad = write_7z(tmp_path / "enwiki-20240301-pages-meta-history2.xml-p3p100.7z", xml)
    data = bad.read_bytes()
    bad.write_bytes(data[: len(data) // 2])  # inside the filler, before page 4
    dec = lzma.LZMADecompressor(lzma.FORMAT_RAW,
                                filters=[{"id": lzma.FILTER_LZMA2, "dict_size": 16 << 20}])
    decodable = len(dec.decompress(bad.read_bytes()[32:]))
    assert xml.index(b"</page>") < decodable < xml.rindex(b"</page>")
    with pytest.raises(IngestError, match="1 of 2 enwiki files failed"):
        ingest_wikipedia(catalog, [good, bad], max_reject_ratio=1.0)
    assert {r["page_id"] for r in catalog.read_arrow("page_watermarks").to_pylist()} == {1, 2, 3}
    errors = [r for r in catalog.read_arrow("ingest_rejects").to_pylist()
              if (r["dump_file"], r["reason"]) == (bad.name, "file_error")]
    assert len(errors) == 1 and "corrupt 7z data" in errors[0]["detail"]
    assert "the header is missing" in errors[0]["detail"]
    assert {r["dump_file"] for r in catalog.read_arrow("paragraph_coverage").to_pylist()} == {good.name}
