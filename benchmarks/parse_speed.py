"""Side-by-side parse speeds: our XML byte scanner vs mwxml vs lxml iterparse, and the
Wikidata entity decoder (typed msgspec vs generic orjson/json walkers, statement reuse).

Builds a synthetic but realistic input from the real samples in ../shared/realdata
(enwiki wikitext pages and legacy + current Wikidata entity revisions, repeated with fresh
ids) in a temp dir, so nothing large is committed. Runs in well under two minutes:

    python benchmarks/parse_speed.py --mb 40
"""

from __future__ import annotations

import argparse
import bz2
import gzip
import json
import re
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import msgspec
from _harness import REPO

from emerge_lib.dumps import wikidata as W
from emerge_lib.dumps.xml import iter_dump

REALDATA = REPO.parent / "shared" / "realdata"


def _pages_of(xml: bytes) -> list[bytes]:
    return re.findall(rb"<page>.*?</page>", xml, re.S)


def build_xml(out: Path, kind: str, target_mb: int) -> int:
    """Repeat real <page> blocks (fresh page/rev ids) until ``target_mb`` of XML."""
    if kind == "wikitext":
        src = bz2.decompress(
            (
                REALDATA
                / "gensim/enwiki-latest-pages-articles1.xml-p000000010p000030302-shortened.bz2"
            ).read_bytes()
        )
    else:
        src = (REALDATA / "wdtk/sample-daily-dump-20140220.xml").read_bytes()
        src += bz2.decompress((REALDATA / "dbpedia-minidump-wikidata/wiki.xml.bz2").read_bytes())
    header = src[: src.index(b"<page>")]
    if b"</siteinfo>" not in header:
        header = b'<mediawiki version="0.10">'
    pages = _pages_of(src)
    n = 0
    written = 0
    with open(out, "wb") as fh:
        fh.write(header)
        while written < target_mb * 1_000_000:
            for p in pages:
                n += 1
                p = re.sub(
                    rb"(<page>\s*<title>[^<]*</title>\s*(?:<ns>\d+</ns>\s*)?<id>)\d+",
                    rb"\g<1>%d" % n,
                    p,
                    count=1,
                )
                fh.write(p)
                written += len(p)
        fh.write(b"</mediawiki>\n")
    return out.stat().st_size


def run_scanner(path: Path) -> int:
    n = 0
    with iter_dump(path) as dump:
        for page in dump:
            for r in page:
                n += len(r.text or "")
    return n


def run_mwxml(path: Path) -> int:
    import mwxml

    n = 0
    with open(path, "rb") as fh:
        for page in mwxml.Dump.from_file(fh):
            for r in page:
                n += len(r.text or "")
    return n


def run_lxml(path: Path) -> int:
    from lxml import etree

    n = 0
    for _, el in etree.iterparse(str(path), events=("end",), huge_tree=True):
        tag = el.tag.rsplit("}", 1)[-1]
        if tag == "revision":
            for child in el:
                if child.tag.rsplit("}", 1)[-1] == "text":
                    n += len(child.text or "")
        elif tag == "page":
            el.clear()
            while el.getprevious() is not None:
                del el.getparent()[0]
    return n


def timed(fn: Callable[[Path], int], path: Path, size: int, repeat: int = 1) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn(path)
        best = min(best, time.perf_counter() - t0)
    return size / 1e6 / best


def xml_section(mb: int, skip_mwxml: bool, bz2_mb: int) -> None:
    print("XML parse, MB/s of uncompressed XML (best of 2; mwxml once)")
    with tempfile.TemporaryDirectory() as tmp:
        for kind in ("wikitext", "wikidata"):
            path = Path(tmp) / f"{kind}.xml"
            size = build_xml(path, kind, mb)
            row = [f"  {kind:9s} {size / 1e6:6.1f} MB"]
            row.append(f"scanner {timed(run_scanner, path, size, 2):6.1f}")
            row.append(f"lxml iterparse {timed(run_lxml, path, size, 2):6.1f}")
            if not skip_mwxml:
                row.append(f"mwxml {timed(run_mwxml, path, size):6.1f}")
            print("  ".join(row), flush=True)
        if bz2_mb:
            bz2_section(Path(tmp), bz2_mb)


def bz2_section(tmp: Path, mb: int) -> None:
    """Decompression alone and decompression + scanner, per backend and thread count."""
    from emerge_lib.dumps.compressed import _external_bz2, open_dump
    from emerge_lib.dumps.xml import Dump

    xml = tmp / "wd-bz2.xml"
    size = build_xml(xml, "wikidata", mb)
    packed = tmp / "wd.xml.bz2"
    packed.write_bytes(bz2.compress(xml.read_bytes(), 9))
    print(f"bz2: {size / 1e6:.1f} MB XML -> {packed.stat().st_size / 1e6:.1f} MB; MB/s of XML")
    backends = [("stdlib", 1), ("indexed_bzip2", 1), ("indexed_bzip2", 2)]
    if _external_bz2():
        backends += [("lbzip2", 1), ("lbzip2", 2)]

    def drain(backend: str, threads: int) -> int:
        with open_dump(packed, bz2_backend=backend, threads=threads) as fh:  # type: ignore[arg-type]
            while fh.read(1 << 22):
                pass
        return 0

    def scan(backend: str, threads: int) -> int:
        n = 0
        with Dump(open_dump(packed, bz2_backend=backend, threads=threads), close_stream=True) as d:
            for _, r in d.revisions():
                n += len(r.text or "")
        return n

    for backend, threads in backends:
        d = timed(lambda _p, b=backend, t=threads: drain(b, t), packed, size)
        e = timed(lambda _p, b=backend, t=threads: scan(b, t), packed, size)
        print(
            f"  {backend:13s} threads={threads}: decompress {d:6.1f}  decompress+scan {e:6.1f}",
            flush=True,
        )


def _entity_texts() -> list[bytes]:
    texts: list[bytes] = []
    for p in sorted(REALDATA.glob("wikibase-sdk/*.json")) + [REALDATA / "qwikidata/wd_Q42.json"]:
        d = json.loads(p.read_bytes())
        texts += [
            json.dumps(e).encode() for e in (d["entities"].values() if "entities" in d else [d])
        ]
    with gzip.open(REALDATA / "wdtk/sample-dump-20150815.json.gz") as fh:
        texts += [line.strip().rstrip(b",") for line in fh if line.strip().startswith(b"{")]
    with iter_dump(REALDATA / "wdtk/sample-daily-dump-20140220.xml") as dump:
        texts += [r.text for _, r in dump.revisions() if r.model == "wikibase-item" and r.text]
    return texts


def _json_generic(data: bytes) -> object:
    import json as std

    orig = W._loads
    W._loads = std.loads
    try:
        return W._parse_generic(data)
    finally:
        W._loads = orig


def entity_section(rounds: int) -> None:
    texts = _entity_texts()
    total = sum(len(t) for t in texts)
    print(
        f"entities: {len(texts)} texts, {total / 1e6:.2f} MB, mean {total / len(texts) / 1e3:.1f} kB"
    )
    variants: list[tuple[str, Callable[[bytes], object]]] = [
        ("msgspec typed", W.parse_entity),
        ("orjson generic", W._parse_generic),
        ("json generic", _json_generic),
    ]
    for name, fn in variants:
        t0 = time.perf_counter()
        for _ in range(rounds):
            for t in texts:
                fn(t)
        dt = time.perf_counter() - t0
        n = rounds * len(texts)
        print(
            f"  {name:15s} {n / dt:9.0f} entities/s  {rounds * total / 1e6 / dt:7.1f} MB/s  {dt / n * 1e6:7.1f} us/entity"
        )
    # Statement reuse: a history page's revisions, most of which leave the claims untouched.
    big = json.loads((REALDATA / "qwikidata/wd_Q42.json").read_bytes())
    revs = []
    for i in range(200):
        big["labels"]["en"]["value"] = f"Douglas Adams {i}"
        if i % 3 == 0:  # one edit in three touches a claim
            big["claims"]["P31"][0]["rank"] = "normal" if i % 2 else "preferred"
        revs.append(json.dumps(big).encode())
    for reuse in (False, True):
        parser = W.EntityParser(reuse_statements=reuse)
        t0 = time.perf_counter()
        for _ in range(max(1, rounds // 4)):
            for t in revs:
                parser.parse(t)
        dt = time.perf_counter() - t0
        n = max(1, rounds // 4) * len(revs)
        print(
            f"  Q42 history, reuse={reuse!s:5s}: {dt / n * 1e6:7.1f} us/revision (reused {parser.reused})"
        )
    # Cheap label skipping: a Struct with only `en` vs dict of raw values vs full dicts.
    # compact JSON as in dumps (the sample file is pretty-printed); best of 5, interleaved
    q42 = json.dumps(json.loads((REALDATA / "qwikidata/wd_Q42.json").read_bytes())).encode()
    decoders = {
        "labels: Struct(en)": msgspec.json.Decoder(_LabelsEn),
        "labels: dict[Raw]": msgspec.json.Decoder(_LabelsRaw),
        "labels: dict[dict]": msgspec.json.Decoder(_LabelsDict),
    }
    best = dict.fromkeys(decoders, float("inf"))
    for _ in range(5):
        for name, dec in decoders.items():
            t0 = time.perf_counter()
            for _ in range(rounds * 4):
                dec.decode(q42)
            best[name] = min(best[name], (time.perf_counter() - t0) / (rounds * 4))
    for name, dt in best.items():
        print(f"  {name:20s} {dt * 1e6:7.1f} us per Q42 ({len(q42) / 1e3:.0f} kB, rest skipped)")


class _LabelsEn(msgspec.Struct):
    labels: W._TermsEn | None = None


class _LabelsRaw(msgspec.Struct):
    labels: dict[str, msgspec.Raw] | None = None


class _LabelsDict(msgspec.Struct):
    labels: dict[str, dict[str, str]] | None = None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--mb", type=int, default=40, help="XML size per profile")
    ap.add_argument("--rounds", type=int, default=20, help="entity decode rounds")
    ap.add_argument("--skip-mwxml", action="store_true")
    ap.add_argument("--bz2-mb", type=int, default=15, help="bz2 section size (0: skip)")
    args = ap.parse_args()
    if not REALDATA.is_dir():
        # as the tests do: a checkout without ../shared skips this one, and `make bench`
        # goes on to the others (it stops at the first benchmark that fails)
        print(f"skipped: parse_speed needs the real samples at {REALDATA}")
        return
    xml_section(args.mb, args.skip_mwxml, args.bz2_mb)
    entity_section(args.rounds)


if __name__ == "__main__":
    main()
