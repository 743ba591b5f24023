"""Ingest of a cut bz2 history file: like a cut plain file, the pages of its complete bz2
blocks are kept, the file fails and covers nothing."""

from __future__ import annotations

import bz2
import random
from pathlib import Path

import indexed_bzip2
import pytest
from test_ingest_wikipedia import ingest_wikipedia, world_v1
from wikipedia_builder import render, write_bz2

from emerge_lib.stages.ingest_common import IngestError
from emerge_lib.tables import Catalog


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
