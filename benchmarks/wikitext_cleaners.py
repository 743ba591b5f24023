"""Compare the fast wikitext cleaner with the mwparserfromhell reference on real articles.

Reports, per implementation, throughput (MB/s of UTF-8 wikitext, one core) and, between
them, agreement on paragraph texts and on (anchor, target) mentions; checks that
`text[start:end] == anchor` for every mention of both. Real samples are read from
../shared/realdata (see its PROVENANCE.md); nothing is copied.

    .venv/bin/python benchmarks/wikitext_cleaners.py [--repeat 3] [--show 5]
"""

from __future__ import annotations

import argparse
import bz2
import html
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import BinaryIO

import mwparserfromhell
import mwxml

from emerge_lib.text.reference import reference_paragraphs
from emerge_lib.text.wikitext import extract_paragraphs

REALDATA = Path(__file__).resolve().parents[1].parent / "shared" / "realdata"
XML_SAMPLES = (
    "gensim/enwiki-latest-pages-articles1.xml-p000000010p000030302-shortened.bz2",
    "dbpedia-minidump-en/wiki.xml.bz2",
    "wikipedia2vec/enwiki-pages-articles-sample.xml.bz2",
    "pywikibot/article-pear-0.10.xml",
)


def _open(path: Path) -> BinaryIO:
    return bz2.open(path) if path.suffix == ".bz2" else path.open("rb")


def load_articles(realdata: Path = REALDATA) -> Iterator[tuple[str, str]]:
    """(name, wikitext) of every article-namespace revision in the real samples."""
    for relative in XML_SAMPLES:
        with _open(realdata / relative) as handle:
            for page in mwxml.Dump.from_file(handle):
                if page.namespace != 0:
                    continue
                for revision in page:
                    if revision.text:
                        yield f"{relative}:{page.title}", revision.text
    for path in sorted((realdata / "wtf_wikipedia").glob("*.txt")):
        text = path.read_text(encoding="utf-8")
        if "&lt;ref" in text:  # stored XML-escaped, as inside <text>: unescape once
            text = html.unescape(text)
        yield f"wtf_wikipedia/{path.name}", text


def _throughput(
    func: Callable[[str], object], articles: list[tuple[str, str]], repeat: int
) -> float:
    size = sum(len(text.encode("utf-8")) for _, text in articles)
    best = float("inf")
    for _ in range(repeat):
        started = time.perf_counter()
        for _, text in articles:
            func(text)
        best = min(best, time.perf_counter() - started)
    return size / best / 1e6


def compare(articles: list[tuple[str, str]], show: int = 0) -> dict[str, float]:
    """Agreement statistics between the two implementations."""
    stats: Counter[str] = Counter()
    shown = 0
    for name, text in articles:
        fast = extract_paragraphs(text)
        ref = reference_paragraphs(text)
        for p in fast:
            for m in p.mentions:
                stats["fast_mentions"] += 1
                stats["fast_offset_errors"] += p.text[m.start : m.end] != m.anchor
        for plain, mentions in ref:
            for start, end, anchor, _ in mentions:
                stats["ref_mentions"] += 1
                stats["ref_offset_errors"] += plain[start:end] != anchor
        fast_texts = Counter(p.text for p in fast)
        ref_texts = Counter(plain for plain, _ in ref)
        stats["fast_paragraphs"] += len(fast)
        stats["ref_paragraphs"] += len(ref)
        stats["same_paragraphs"] += sum((fast_texts & ref_texts).values())
        fast_links = Counter((m.anchor, m.target) for p in fast for m in p.mentions)
        ref_links = Counter((a, t) for _, ms in ref for _, _, a, t in ms)
        stats["same_mentions"] += sum((fast_links & ref_links).values())
        if show and shown < show and fast_texts != ref_texts:
            only_fast = list((fast_texts - ref_texts).elements())[:1]
            only_ref = list((ref_texts - fast_texts).elements())[:1]
            print(f"--- {name}\n  fast: {only_fast}\n  ref:  {only_ref}")
            shown += 1
    result = dict(stats)
    result["paragraph_agreement"] = stats["same_paragraphs"] / max(
        stats["fast_paragraphs"], stats["ref_paragraphs"], 1
    )
    result["mention_recall_vs_ref"] = stats["same_mentions"] / max(stats["ref_mentions"], 1)
    result["mention_precision_vs_ref"] = stats["same_mentions"] / max(stats["fast_mentions"], 1)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--show", type=int, default=0, help="print N differing paragraphs")
    args = parser.parse_args()
    if not REALDATA.is_dir():  # as the tests do: `make bench` goes on to the others
        print(f"skipped: wikitext_cleaners needs the real samples at {REALDATA}")
        return
    articles = list(load_articles())
    megabytes = sum(len(text.encode("utf-8")) for _, text in articles) / 1e6
    print(f"{len(articles)} articles, {megabytes:.2f} MB of wikitext")
    fast = _throughput(extract_paragraphs, articles, args.repeat)
    ref = _throughput(reference_paragraphs, articles, 1)
    parse_only = _throughput(mwparserfromhell.parse, articles, 1)
    strip_code = _throughput(lambda text: mwparserfromhell.parse(text).strip_code(), articles, 1)
    print(f"fast scanner (extract_paragraphs):      {fast:7.2f} MB/s")
    print(f"mwparserfromhell reference paragraphs:  {ref:7.2f} MB/s  ({fast / ref:.1f}x slower)")
    print(f"mwparserfromhell parse() alone:         {parse_only:7.2f} MB/s")
    print(f"mwparserfromhell parse().strip_code():  {strip_code:7.2f} MB/s (no paragraphs/links)")
    for key, value in compare(articles, args.show).items():
        print(f"{key:26} {value:.4f}" if isinstance(value, float) else f"{key:26} {value}")


if __name__ == "__main__":
    main()
