"""The byte scanner must equal mwxml on every real sample mwxml reads, and survive bad input."""

from __future__ import annotations

import html
import io
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from emerge_lib.dumps.compressed import open_dump
from emerge_lib.dumps.xml import (
    Dump,
    MalformedXMLError,
    PageReject,
    TruncatedXMLError,
    iter_dump,
    parse_timestamp,
    unescape,
)

# Every XML sample in realdata that mwxml 0.3.8 reads completely (PROVENANCE.md).
MWXML_READABLE = [
    "dbpedia-minidump-en/wiki.xml.bz2",
    "dbpedia-minidump-wikidata/wiki.xml.bz2",
    "gensim/bgwiki-latest-pages-articles-shortened.xml.bz2",
    "gensim/enwiki-latest-pages-articles1.xml-p000000010p000030302-shortened.bz2",
    "gensim/testcorpus.xml.bz2",
    "mwxml/dump.xml",
    "pywikibot/article-pear-0.10.xml",
    "pywikibot/article-pear.xml",
    "pywikibot/article-pyrus-utf16.xml",
    "pywikibot/article-pyrus.xml",
    "pywikibot/article-pyrus.xml.7z",
    "pywikibot/article-pyrus.xml.bz2",
    "pywikibot/article-pyrus.xml.gz",
    "pywikibot/dummy-reflinks.xml",
    "pywikibot/pair-0.10.xml",
    "refinery/MediawikiDumperOutputTest.Commonswiki.Sample.xml",
    "refinery/MediawikiDumperOutputTest.Simplewiki.Sample.xml",
    "sansa-ml/data.xml",
    "wdtk/empty-dump.xml",
    "wdtk/mock-dump-for-testing.xml",
    "wdtk/sample-daily-dump-20140220.xml",
    "wdtk/wikidatawiki-20150101-pages-meta-current.xml.bz2",
    "wikipedia2vec/enwiki-pages-articles-sample.xml.bz2",
    "wikiwho/small.xml.lzma",
]


def _sample(realdata: Path, rel: str) -> Path:
    p = realdata / rel
    if not p.exists():
        pytest.skip(f"{rel} not in realdata")
    return p


def _mwxml_records(path: Path) -> tuple[dict[str, Any], list[tuple[Any, ...]]]:
    import mwxml

    with open_dump(path) as fh:
        dump = mwxml.Dump.from_file(fh)
        info = {"sitename": dump.site_info.name, "dbname": dump.site_info.dbname}
        out = []
        for page in dump:
            for r in page:
                main = r.slots.contents["main"]
                extra = sorted(
                    (c.role, c.model, c.format, c.text, bool(c.deleted))
                    for role, c in r.slots.contents.items()
                    if role != "main"
                )
                out.append(
                    (
                        page.id,
                        page.namespace,
                        page.title,
                        page.redirect,
                        r.id,
                        None if r.parent_id is None else int(r.parent_id),
                        int(r.timestamp.unix()),
                        r.user.id if r.user else None,
                        r.user.text if r.user else None,
                        bool(r.minor),
                        r.comment,
                        bool(r.deleted.text),
                        bool(r.deleted.comment),
                        bool(r.deleted.user),
                        r.text,
                        r.slots.sha1,
                        main.sha1,
                        main.model,
                        main.format,
                        extra,
                    )
                )
    return info, out


def _my_records(path: Path, **kw: Any) -> tuple[Dump, list[tuple[Any, ...]]]:
    out = []
    with iter_dump(path, **kw) as dump:
        for page in dump:
            for r in page:
                title = page.title
                out.append(
                    (
                        page.page_id,
                        page.ns,
                        title,
                        page.redirect_title,
                        r.rev_id,
                        r.parent_id,
                        r.timestamp,
                        r.contributor_id,
                        r.contributor_name,
                        r.minor,
                        r.comment,
                        r.text_deleted,
                        r.comment_deleted,
                        r.contributor_deleted,
                        r.text or None,  # mwxml maps empty text to None
                        r.sha1,
                        r.text_sha1 or r.sha1,
                        r.model,
                        r.format,
                        sorted(
                            (
                                s.role,
                                s.model,
                                s.format,
                                s.text or None,
                                s.text_deleted,
                            )
                            for s in r.slots
                        ),
                    )
                )
    return dump, out


@pytest.mark.realdata
@pytest.mark.parametrize("rel", MWXML_READABLE)
def test_equals_mwxml(realdata: Path, rel: str) -> None:
    path = _sample(realdata, rel)
    info, expected = _mwxml_records(path)
    dump, mine = _my_records(path)
    assert dump.rejects == []
    assert dump.site_info.sitename == info["sitename"]
    assert dump.site_info.dbname == info["dbname"]
    assert len(mine) == len(expected)
    for exp, got in zip(expected, mine, strict=True):
        if got[2] != exp[2]:
            # Schemas < 0.5 have no <ns>; mwxml then strips the namespace prefix we keep.
            assert got[2] == f"{dump.site_info.namespaces[got[1]]}:{exp[2]}"
            got = (*got[:2], exp[2], *got[3:])
        assert got == exp


@pytest.mark.realdata
def test_small_buffer_refills_give_identical_records(realdata: Path) -> None:
    for rel in (
        "wdtk/sample-daily-dump-20140220.xml",
        "refinery/MediawikiDumperOutputTest.Commonswiki.Sample.xml",
    ):
        path = _sample(realdata, rel)
        _, normal = _my_records(path)
        with open(path, "rb") as fh:
            dump = Dump(fh, chunk_size=7)  # refill at almost every tag boundary
            tiny = [(p.page_id, r.rev_id, r.text, r.comment, r.slots) for p, r in dump.revisions()]
        assert [(x[0], x[4], x[14]) for x in normal] == [(t[0], t[1], t[2] or None) for t in tiny]


@pytest.mark.realdata
def test_out_of_order_revisions_kept_in_file_order(realdata: Path) -> None:
    path = _sample(realdata, "wdtk/mock-dump-for-testing.xml")
    with iter_dump(path) as dump:
        pages = {p.title: [(r.rev_id, r.timestamp, r.model) for r in p] for p in dump}
    q1 = pages["Q1"]
    assert [r[0] for r in q1] == [4, 5, 3, 2]
    ts = int(datetime(2014, 2, 19, 23, 34, 14, tzinfo=UTC).timestamp())
    assert q1[0][1] == ts and q1[1][1] == ts + 1 and q1[3][1] == ts - 2
    assert {r[2] for r in pages["Property:P1"]} == {"wikibase-property"}
    assert dump.site_info.namespaces[120] == "Property"


@pytest.mark.realdata
def test_pyrus_redirect_target_changes_over_time(realdata: Path) -> None:
    with iter_dump(_sample(realdata, "pywikibot/article-pyrus.xml")) as dump:
        (page,) = list(dump)  # consumed lazily below would fail: pages iterate once
    # Re-open: iterating pages without their revisions skips them.
    with iter_dump(realdata / "pywikibot/article-pyrus.xml") as dump:
        page = next(iter(dump))
        revs = list(page)
    assert page.title == "Pyrus" and page.page_id == 9261472
    assert page.redirect_title is None  # old-style empty <redirect />
    assert [r.rev_id for r in revs][:2] == [104997415, 104997738]
    assert revs[0].text == "#REDIRECT [[Pyrus (brand)]]"
    assert revs[1].text == "#REDIRECT [[Pear]]"
    assert revs[-1].timestamp == int(datetime(2008, 9, 14, 17, 8, 56, tzinfo=UTC).timestamp())


@pytest.mark.realdata
def test_redirect_title_attribute_is_unescaped(realdata: Path) -> None:
    with iter_dump(_sample(realdata, "dbpedia-minidump-en/wiki.xml.bz2")) as dump:
        redirects = {p.title: p.redirect_title for p in dump if p.redirect_title}
    # <redirect title="&#x2BB;Abdu'l-Bah&#xE1;"/> in the file
    assert redirects["`Abdu'l-Bahá"] == "\u02bbAbdu'l-Bah\u00e1"
    assert redirects["The Amazing Spider-Man (2012 film)"] == "The Amazing Spider-Man (film)"


@pytest.mark.realdata
def test_suppressed_fields_match_the_raw_file(realdata: Path) -> None:
    path = _sample(realdata, "refinery/MediawikiDumperOutputTest.Simplewiki.Sample.xml")
    raw = path.read_text()
    expected: dict[str, set[int]] = {"contributor": set(), "comment": set(), "text": set()}
    for block in re.findall(r"<revision>(.*?)</revision>", raw, re.S):
        rid = int(re.search(r"<id>(\d+)</id>", block).group(1))  # type: ignore[union-attr]
        for tag in expected:
            if re.search(rf'<{tag}[^>]*deleted="deleted"', block):
                expected[tag].add(rid)
    assert expected["text"]  # the sample does carry suppressed texts
    with iter_dump(path) as dump:
        revs = [r for _, r in dump.revisions()]
    assert {r.rev_id for r in revs if r.contributor_deleted} == expected["contributor"]
    assert {r.rev_id for r in revs if r.comment_deleted} == expected["comment"]
    assert {r.rev_id for r in revs if r.text_deleted} == expected["text"]
    assert all(r.text is None for r in revs if r.text_deleted)


@pytest.mark.realdata
def test_deleted_wikidata_revision(realdata: Path) -> None:
    with iter_dump(_sample(realdata, "sansa-ml/data.xml")) as dump:
        revs = {r.rev_id: r for _, r in dump.revisions()}
    r = revs[61736190]  # Q23: <comment deleted="deleted" /> <text deleted="deleted" />
    assert r.text_deleted and r.comment_deleted and r.text is None and r.comment is None
    assert r.contributor_name == "67.191.156.138" and r.contributor_id is None
    assert r.sha1 is None and r.model == "wikibase-item"


@pytest.mark.realdata
def test_mediainfo_slots(realdata: Path) -> None:
    with iter_dump(
        _sample(realdata, "refinery/MediawikiDumperOutputTest.Commonswiki.Sample.xml")
    ) as dump:
        revs = [r for _, r in dump.revisions()]
    with_slot = [r for r in revs if any(s.role == "mediainfo" for s in r.slots)]
    assert len(revs) == 59 and len(with_slot) == 27
    slot = with_slot[0].slots[0]
    assert slot.model == "wikibase-mediainfo" and slot.text is not None
    assert slot.text.startswith('{"type":"mediainfo","id":"M13327093"')
    assert with_slot[0].model == "wikitext"


@pytest.mark.realdata
def test_no_siteinfo_is_still_read(realdata: Path) -> None:
    with iter_dump(_sample(realdata, "gensim/enwiki-table-markup.xml.bz2")) as dump:
        titles = [p.title for p in dump]
    assert dump.site_info.sitename is None
    assert "Economy of Estonia" in titles and len(titles) == 5


@pytest.mark.realdata
def test_unknown_element_is_skipped_and_counted(realdata: Path) -> None:
    with iter_dump(_sample(realdata, "wdtk/mock-dump-with-bugs.xml")) as dump:
        pages = [(p.title, [r.rev_id for r in p]) for p in dump]
    assert dump.rejects == []
    assert dump.unknown_tags["unexpected"] == 1
    assert pages[0] == ("Q1", [4, 5, 3, 2])


@pytest.mark.realdata
def test_truncated_sample_rejects_page_then_raises(realdata: Path) -> None:
    seen: list[int] = []
    rejects: list[PageReject] = []
    with (
        pytest.raises(TruncatedXMLError),
        iter_dump(
            _sample(realdata, "wdtk/mock-dump-incomplete-revision.xml"), on_reject=rejects.append
        ) as dump,
    ):
        for page in dump:
            seen.extend(r.rev_id for r in page)
    assert seen == [4]  # the complete first revision was delivered
    assert len(rejects) == 1 and rejects[0].title == "Q1" and rejects[0].revisions_read == 1
    with pytest.raises(TruncatedXMLError):
        list(iter_dump(realdata / "wdtk/mock-dump-header.xml"))


@pytest.mark.realdata
def test_broken_page_is_rejected_and_scanner_resyncs(realdata: Path) -> None:
    raw = _sample(realdata, "wdtk/mock-dump-for-testing.xml").read_bytes()
    # Cut the first page in the middle of its 2nd revision's text, then splice the rest.
    first_page_end = raw.index(b"</page>")
    second_rev = raw.index(b"<revision>", raw.index(b"</revision>"))
    cut_at = raw.index(b"<text", second_rev) + 40
    broken = raw[:cut_at] + raw[first_page_end + len(b"</page>") :]
    rejects: list[PageReject] = []
    dump = Dump(io.BytesIO(broken), on_reject=rejects.append)
    result = [(p.title, [r.rev_id for r in p], p.reject is not None) for p in dump]
    assert result[0] == ("Q1", [4], True)
    assert [t for t, _, _ in result[1:]] == [
        "Wikidata:Contact the development team",
        "Property:P1",
        "Lexeme:L1",
    ]
    assert [len(revs) for _, revs, _ in result[1:]] == [2, 2, 2]
    assert len(rejects) == 1 and rejects[0].page_id == 32
    with pytest.raises(MalformedXMLError):
        list(Dump(io.BytesIO(broken), strict=True).revisions())


@pytest.mark.realdata
def test_fragment_of_pages_without_envelope(realdata: Path) -> None:
    raw = _sample(realdata, "wdtk/mock-dump-for-testing.xml").read_bytes()
    pages = raw[raw.index(b"<page>") : raw.rindex(b"</page>") + len(b"</page>")]
    titles = [p.title for p in Dump(io.BytesIO(pages), fragment=True)]
    assert titles == ["Q1", "Wikidata:Contact the development team", "Property:P1", "Lexeme:L1"]
    with pytest.raises(TruncatedXMLError):  # a cut inside a page is still an error
        list(Dump(io.BytesIO(pages[:-200]), fragment=True).revisions())
    with pytest.raises(TruncatedXMLError):  # and a full dump needs its </mediawiki>
        list(Dump(io.BytesIO(raw[: raw.rindex(b"</mediawiki>")])))


class _Endless(io.RawIOBase):
    """An endless non-XML stream that counts what was read from it."""

    def __init__(self) -> None:
        super().__init__()
        self.read_bytes = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        buffer[:] = b"x" * len(buffer)
        self.read_bytes += len(buffer)
        return len(buffer)


def test_not_a_dump() -> None:
    with pytest.raises(MalformedXMLError, match="mediawiki"):
        Dump(io.BytesIO(b'{"json": true}'))
    # a root named mediawiki in another vocabulary was read as a dump without a word
    foreign = (b'<mediawiki xmlns="http://example.org/not-mediawiki/" version="0.11">'
               b"<page><title>Q1</title><ns>0</ns><id>1</id></page></mediawiki>")
    with pytest.raises(MalformedXMLError, match="example.org/not-mediawiki.*not a MediaWiki"):
        Dump(io.BytesIO(foreign))
    for ns in (b"http://www.mediawiki.org/xml/export-0.10/",
               b"https://www.mediawiki.org/xml/export-0.3/"):  # both seen in real exports
        assert Dump(io.BytesIO(foreign.replace(b"http://example.org/not-mediawiki/", ns)))
    endless = _Endless()
    with pytest.raises(MalformedXMLError, match="mediawiki"):
        Dump(endless)  # type: ignore[arg-type]
    assert endless.read_bytes < 16 << 20  # gave up early instead of reading forever


def test_skipping_unconsumed_pages_and_bad_values() -> None:
    xml = (
        b"<mediawiki version='0.10'><siteinfo><sitename>T</sitename></siteinfo>"
        b"<page><title>A</title><ns>0</ns><id>1</id>"
        b"<revision><id>1</id><timestamp>2020-01-01T00:00:00Z</timestamp><text>a</text></revision>"
        b"<revision><id>2</id><timestamp>2020-01-02T00:00:00Z</timestamp><text>b</text></revision></page>"
        b"<page><title>B</title><ns>0</ns><id>oops</id><revision><id>3</id></revision></page>"
        b"<page><title>C</title><ns>0</ns><id>3</id>"
        b"<revision><id>4</id><timestamp>not a time</timestamp></revision>"
        b"<revision><id>5</id><timestamp>2020-01-02T00:00:00Z</timestamp></revision></page>"
        b"<page><title>D &amp; E</title><ns>0</ns><id>4</id>"
        b"<revision><id>6</id><timestamp>2020-01-03T00:00:00Z</timestamp><text bytes='0' /></revision></page>"
        b"</mediawiki>"
    )
    dump = Dump(io.BytesIO(xml))
    assert dump.site_info.schema_version == "0.10"
    titles = [p.title for p in dump]  # revisions never consumed
    assert titles == ["A", "C", "D & E"]
    assert [(r.title, r.partial) for r in dump.rejects] == [("B", False)]  # C never parsed
    dump = Dump(io.BytesIO(xml))
    revs = {p.title: [(r.rev_id, r.text) for r in p] for p in dump}
    # A bad value drops only its (well-delimited) revision; the page goes on.
    assert revs == {"A": [(1, "a"), (2, "b")], "C": [(5, None)], "D & E": [(6, "")]}
    assert [(r.title, r.partial) for r in dump.rejects] == [("B", False), ("C", True)]
    assert "timestamp" in dump.rejects[1].reason


def _track_peak(dump: Dump) -> list[int]:
    """Record the scanner's buffer size after every refill."""
    peaks = [0]
    fill = dump._sc.fill

    def spy() -> None:
        fill()
        peaks[0] = max(peaks[0], len(dump._sc.buf))

    dump._sc.fill = spy  # type: ignore[method-assign]
    return peaks


def test_skipping_a_huge_page_keeps_the_buffer_small() -> None:
    rev = (
        b"<revision><id>%d</id><timestamp>2020-01-01T00:00:00Z</timestamp><text>"
        + b"x" * 500
        + b"</text></revision>"
    )
    big = b"".join(rev % i for i in range(2000))  # ~1 MB page
    xml = (
        b"<mediawiki><page><title>Big</title><ns>0</ns><id>1</id>" + big + b"</page>"
        b"<page><title>Small</title><ns>0</ns><id>2</id>" + rev % 1 + b"</page></mediawiki>"
    )
    dump = Dump(io.BytesIO(xml), chunk_size=4096)
    peak = _track_peak(dump)
    titles = [page.title for page in dump]  # the big page's revisions are never consumed
    assert titles == ["Big", "Small"]
    assert 0 < peak[0] < 256 * 1024  # the page is 1.1 MB
    # consuming it revision by revision is bounded as well
    dump = Dump(io.BytesIO(xml), chunk_size=4096)
    peak = _track_peak(dump)
    assert sum(1 for _ in dump.revisions()) == 2001
    assert 0 < peak[0] < 256 * 1024  # the page is 1.1 MB


def test_unescape_matches_html_unescape() -> None:
    samples = [
        "plain",
        '{"a":"x < y & z > w"}',
        "&lt;already escaped&gt; &amp;lt; &#38; &#x26;",
        "emoji \U0001f600 and \u00e9",
        "quotes ' \"",
    ]
    for s in samples:
        escaped = html.escape(s, quote=True).encode()
        assert unescape(escaped) == s.encode()
    assert unescape(b"&#x1F600;&#233;") == "\U0001f600\u00e9".encode()
    assert unescape(b"a\r\nb\rc") == b"a\nb\nc"


def test_parse_timestamp() -> None:
    for ts in ("2001-01-15T13:15:00Z", "2024-02-29T23:59:59Z", "1970-01-01T00:00:00Z"):
        exp = int(datetime.fromisoformat(ts.replace("Z", "+00:00")).timestamp())
        assert parse_timestamp(ts.encode()) == exp
    with pytest.raises(MalformedXMLError):
        parse_timestamp(b"yesterday")


def test_character_reference_beyond_unicode_rejects_only_its_page() -> None:
    page = (b"<page><title>%s</title><ns>0</ns><id>%d</id>%s<revision><id>%d</id>"
            b"<timestamp>2020-01-01T00:00:00Z</timestamp><text>x</text></revision></page>")
    xml = (b"<mediawiki><siteinfo><sitename>T</sitename></siteinfo>"
           + page % (b"A", 1, b"", 1)
           + page % (b"B&#x110000;", 2, b"", 2)  # bad title
           + page % (b"C", 3, b'<redirect title="&#99999999999999999999;" />', 3)  # bad target
           + page % (b"D", 4, b"", 4) + b"</mediawiki>")
    dump = Dump(io.BytesIO(xml))
    assert [(p.title, [r.rev_id for r in p]) for p in dump] == [("A", [1]), ("D", [4])]
    assert [r.reason.split()[1] for r in dump.rejects] == ["<title>", "<redirect>"]
    with pytest.raises(MalformedXMLError, match="header"):  # the whole file is unreadable
        Dump(io.BytesIO(b"<mediawiki><siteinfo><sitename>&#x110000;</sitename></siteinfo>"
                        b"</mediawiki>"))
