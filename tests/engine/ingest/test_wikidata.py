"""Wikidata ingest on hand-written dumps: exact timelines, incremental, idempotent, rejects."""

from __future__ import annotations

import bz2
import re
from pathlib import Path

import pytest
from dumpbuilder import PageSpec, Rev, claim, item, legacy_item, redirect, write_bz2
from ingestkit import ingest_wikidata, items, killed_before, snapshot_of, statements, ts
from sparkkit import on_each_engine

from emerge_lib.catalog import Catalog
from emerge_lib.ingest.files import IngestError


def q1_history() -> list[Rev]:
    """Q1 over time. Revision 13 is stored before 12 in the dump, dated after it."""
    return [
        Rev(10, "2024-01-01T00:00:00Z",
            legacy_item("Q1", [("P31", "Q5", "q1$a", 1)], enwiki="One")),
        Rev(11, "2024-01-02T00:00:00Z",
            item("Q1", [claim("P31", "Q5", "q1$a"), claim("P27", "Q30", "q1$b")], enwiki="One")),
        Rev(13, "2024-01-04T00:00:00Z",
            item("Q1", [claim("P31", "Q5", "q1$a", rank="deprecated"),
                        claim("P27", "Q30", "q1$b",
                              quals={"P582": ("+2024-01-00T00:00:00Z", 10)})], enwiki="One")),
        Rev(12, "2024-01-03T00:00:00Z",
            item("Q1", [claim("P31", "Q5", "q1$a"), claim("P27", "Q30", "q1$b")], enwiki="Uno")),
    ]


def pages_v1() -> list[PageSpec]:
    return [
        PageSpec(1, "Q1", q1_history()),
        PageSpec(2, "Q2", [
            Rev(20, "2024-01-01T00:00:00Z", item("Q2", [claim("P31", "Q5", "q2$a")], "Two")),
            Rev(21, "2024-01-05T00:00:00Z", None),  # suppressed text: a reject, state continues
            Rev(22, "2024-01-06T00:00:00Z", "{not json"),
        ]),
        PageSpec(3, "Q3", [
            Rev(30, "2024-01-01T00:00:00Z", item("Q3", [claim("P31", "Q1", "q3$a")], "Three")),
            Rev(31, "2024-01-07T00:00:00Z", redirect("Q3", "Q1")),
        ]),
        PageSpec(5, "Property:P27", [
            Rev(50, "2023-01-01T00:00:00Z",
                '{"type":"property","id":"P27","datatype":"wikibase-item",'
                '"labels":{"en":{"language":"en","value":"country of citizenship"}},'
                '"descriptions":[],"aliases":[],"claims":[]}', model="wikibase-property"),
        ], ns=120),
        PageSpec(6, "Wikidata:Sandbox", [Rev(60, "2024-01-01T00:00:00Z", "hello", model="wikitext")], ns=4),
    ]






def test_exact_timelines_for_multi_revision_pages(tmp_path: Path, catalog: Catalog) -> None:
    f = write_bz2(tmp_path / "wikidatawiki-20240201-pages-meta-history1.xml-p1p10.bz2", pages_v1())
    report = ingest_wikidata(catalog, [f], max_reject_ratio=1.0)
    assert report.pages == 4 and report.revisions == 10
    d = ts
    assert statements(catalog) == {
        # legacy rev 10 and current rev 11 hold the same statement: one interval
        ("Q1", "P31", "Q5", "normal", 10, 13, d("2024-01-01T00:00:00Z"), d("2024-01-04T00:00:00Z"), ()),
        ("Q1", "P31", "Q5", "deprecated", 13, None, d("2024-01-04T00:00:00Z"), None, ()),
        ("Q1", "P27", "Q30", "normal", 11, 13, d("2024-01-02T00:00:00Z"), d("2024-01-04T00:00:00Z"), ()),
        ("Q1", "P27", "Q30", "normal", 13, None, d("2024-01-04T00:00:00Z"), None, ("P582",)),
        ("Q2", "P31", "Q5", "normal", 20, None, d("2024-01-01T00:00:00Z"), None, ()),
        ("Q3", "P31", "Q1", "normal", 30, 31, d("2024-01-01T00:00:00Z"), d("2024-01-07T00:00:00Z"), ()),
    }
    created1 = d("2024-01-01T00:00:00Z")
    assert items(catalog) == {
        ("Q1", 10, d("2024-01-01T00:00:00Z"), d("2024-01-03T00:00:00Z"), "One", None, created1),
        ("Q1", 12, d("2024-01-03T00:00:00Z"), d("2024-01-04T00:00:00Z"), "Uno", None, created1),
        ("Q1", 13, d("2024-01-04T00:00:00Z"), None, "One", None, created1),
        ("Q2", 20, d("2024-01-01T00:00:00Z"), None, "Two", None, created1),
        ("Q3", 30, d("2024-01-01T00:00:00Z"), d("2024-01-07T00:00:00Z"), "Three", None, created1),
        ("Q3", 31, d("2024-01-07T00:00:00Z"), None, None, "Q1", created1),
    }
    (prop,) = catalog.read_arrow("property_timeline").to_pylist()
    assert (prop["pid"], prop["label_en"], prop["datatype"]) == ("P27", "country of citizenship", "wikibase-item")
    qualifier = next(r for r in catalog.read_arrow("statement_timeline").to_pylist() if r["qualifiers"])
    assert qualifier["qualifiers"][0]["instant"] == d("2024-01-01T00:00:00Z")  # month precision
    rejects = {(r["rev_id"], r["reason"]) for r in catalog.read_arrow("ingest_rejects").to_pylist()}
    assert rejects == {(21, "text_deleted"), (22, "invalid_json")}
    marks = {r["page_id"]: r["last_rev_id"] for r in catalog.read_arrow("page_watermarks").to_pylist()}
    assert marks == {1: 13, 2: 22, 3: 31, 5: 50}
    # a rerun reads nothing (the file is ingested as it is), commits nothing, and reports
    # the same stored rejects; the quarantine keeps what the first run found
    versions = {n: catalog.version(n) for n in ("statement_timeline", "ingested_files")}
    again = ingest_wikidata(catalog, [f], max_reject_ratio=1.0)
    assert again.files == [] and again.done == [f.name] and again.rejects == 2
    assert {n: catalog.version(n) for n in versions} == versions
    assert catalog.read_arrow("ingest_rejects").num_rows == 2
    (row,) = catalog.read_arrow("ingested_files").to_pylist()
    assert (row["pages"], row["revisions"], row["rejects"], row["deleted_revisions"],
            row["rejected_pages"], row["error"]) == (4, 10, 2, 1, 0, None)




def test_incremental_dump_equals_a_fresh_ingest_and_reruns_change_nothing(
    tmp_path: Path, spark
) -> None:
    old = pages_v1()
    new = pages_v1()
    new[0].revisions.append(Rev(14, "2024-02-10T00:00:00Z",
                                item("Q1", [claim("P27", "Q30", "q1$b")], enwiki="One")))
    new[0].revisions.append(Rev(15, "2024-02-11T00:00:00Z",
                                item("Q1", [claim("P27", "Q30", "q1$b"), claim("P31", "Q5", "q1$a")],
                                     enwiki="One")))
    new[2].revisions.append(Rev(32, "2024-02-01T00:00:00Z",
                                item("Q3", [claim("P31", "Q1", "q3$a")], "Three")))
    new.append(PageSpec(7, "Q7", [Rev(70, "2024-02-02T00:00:00Z", item("Q7", [claim("P31", "Q5", "q7$a")], "Seven"))]))
    f1 = write_bz2(tmp_path / "d1" / "wikidatawiki-20240201-pages-meta-history1.xml-p1p10.bz2", old)
    f2 = write_bz2(tmp_path / "d2" / "wikidatawiki-20240301-pages-meta-history1.xml-p1p10.bz2", new)

    incremental = Catalog(tmp_path / "inc", spark)
    ingest_wikidata(incremental, [f1], max_reject_ratio=1.0)
    report = ingest_wikidata(incremental, [f2], max_reject_ratio=1.0)
    # only revisions past the watermarks were decoded (plus each changed page's watermark revision)
    assert report.files[0].decoded == (2 + 1) + (1 + 1) + 1  # Q1, Q3 (new + watermark), Q7
    fresh = Catalog(tmp_path / "fresh", spark)
    ingest_wikidata(fresh, [f2], max_reject_ratio=1.0)
    assert snapshot_of(incremental) == snapshot_of(fresh)

    before = snapshot_of(incremental)
    again = ingest_wikidata(incremental, [f1, f2], max_reject_ratio=1.0)
    assert again.files == [] and sorted(again.done) == sorted([f1.name, f2.name])
    assert snapshot_of(incremental) == before
    # a re-ingest reads both again: the older dump leaves the pages the newer one changed,
    # and every page is rewritten whole to the same rows
    redone = ingest_wikidata(incremental, [f1, f2], max_reject_ratio=1.0, reingest=True)
    assert len(redone.files) == 2 and snapshot_of(incremental) == before


def test_an_increment_of_newer_revisions_alone_keeps_the_stored_history(tmp_path: Path,
                                                                        spark) -> None:
    """A file holding only Q1's newer revisions (a daily adds/changes increment) after its
    full history was ingested, without the <parentid> that would show it follows on from
    the ingested ones: replayed from them alone, Q1 would lose its history. Q1 is a
    counted reject (partial_history) and keeps its rows; Q7, new in the file, is
    ingested; the full dump later gives the tables of a fresh ingest of it."""
    newer = [Rev(14, "2024-02-10T00:00:00Z",
                 item("Q1", [claim("P27", "Q30", "q1$b")], enwiki="One"))]
    q7 = PageSpec(7, "Q7", [Rev(70, "2024-02-02T00:00:00Z",
                                item("Q7", [claim("P31", "Q5", "q7$a")], "Seven"))])
    f1 = write_bz2(tmp_path / "d1" / "wikidatawiki-20240201-pages-meta-history1.xml-p1p10.bz2",
                   pages_v1())
    f_incr = write_bz2(tmp_path / "incr" / "wikidatawiki-20240211-pages-meta-hist-incr.xml.bz2",
                       [PageSpec(1, "Q1", newer), q7])
    catalog = Catalog(tmp_path / "wh", spark)
    ingest_wikidata(catalog, [f1], max_reject_ratio=1.0)
    q1_before = {r for r in statements(catalog) if r[0] == "Q1"}
    report = ingest_wikidata(catalog, [f_incr], max_reject_ratio=1.0)
    rejects = [r for r in catalog.read_arrow("ingest_rejects").to_pylist()
               if r["reason"] == "partial_history"]
    assert [(r["page_id"], r["dump_file"]) for r in rejects] == [(1, f_incr.name)]
    assert report.files[0].rejects == 1
    assert {r for r in statements(catalog) if r[0] == "Q1"} == q1_before and q1_before
    assert {r[0] for r in statements(catalog)} >= {"Q1", "Q7"}
    full = pages_v1()
    full[0].revisions += newer
    full.append(q7)
    f2 = write_bz2(tmp_path / "d2" / "wikidatawiki-20240301-pages-meta-history1.xml-p1p10.bz2",
                   full)
    ingest_wikidata(catalog, [f2], max_reject_ratio=1.0)
    fresh = Catalog(tmp_path / "fresh", spark)
    ingest_wikidata(fresh, [f2], max_reject_ratio=1.0)
    assert snapshot_of(catalog) == snapshot_of(fresh)


def _increments(tmp_path: Path) -> tuple[Path, list[Path], Path]:
    """pages_v1 as a full dump; three days of increments (Q1 edited on days 1 and 3, its
    statements and label changing; Q3 on day 2; Q7 created on day 1, edited on day 3;
    P27 relabelled on day 2; a day 3 revision of Q2 with unreadable text); and the full
    dump of all of it."""
    q1 = [Rev(14, "2024-02-01T10:00:00Z", item("Q1", [claim("P27", "Q30", "q1$b")],
                                                 enwiki="One"), parent=13),
          Rev(15, "2024-02-01T11:00:00Z", item("Q1", [claim("P27", "Q30", "q1$b"),
                                                      claim("P31", "Q5", "q1$a")],
                                                 enwiki="Eins"), parent=14)]
    q1_day3 = [Rev(18, "2024-02-03T09:00:00Z", item("Q1", [claim("P31", "Q5", "q1$a")],
                                                      enwiki="Eins"), parent=15)]
    q3 = [Rev(16, "2024-02-02T00:00:00Z", item("Q3", [claim("P31", "Q1", "q3$a")], "Three"),
              parent=31)]
    q7 = [Rev(70, "2024-02-01T12:00:00Z", item("Q7", [claim("P31", "Q5", "q7$a")], "Seven"))]
    q7_day3 = [Rev(71, "2024-02-03T10:00:00Z", item("Q7", [claim("P31", "Q1", "q7$b")],
                                                      "Seven"), parent=70)]
    p27 = [Rev(17, "2024-02-02T01:00:00Z",
               '{"type":"property","id":"P27","datatype":"wikibase-item",'
               '"labels":{"en":{"language":"en","value":"citizenship"}},'
               '"descriptions":[],"aliases":[],"claims":[]}', model="wikibase-property",
               parent=50)]
    q2 = [Rev(19, "2024-02-03T11:00:00Z", "{not json", parent=22)]
    days = [
        [PageSpec(1, "Q1", q1), PageSpec(7, "Q7", q7)],
        [PageSpec(3, "Q3", q3), PageSpec(5, "Property:P27", p27, ns=120)],
        [PageSpec(1, "Q1", q1_day3), PageSpec(2, "Q2", q2), PageSpec(7, "Q7", q7_day3)],
    ]
    base = write_bz2(tmp_path / "d0" / "wikidatawiki-20240201-pages-meta-history1.xml-p1p10.bz2",
                     pages_v1())
    incr = [write_bz2(tmp_path / "incr" / f"2024020{i + 1}" /
                      f"wikidatawiki-2024020{i + 1}-pages-meta-hist-incr.xml.bz2", pages)
            for i, pages in enumerate(days)]
    full = pages_v1()
    full[0].revisions += q1 + q1_day3
    full[1].revisions += q2
    full[2].revisions += q3
    full[3].revisions += p27
    full.append(PageSpec(7, "Q7", q7 + q7_day3))
    whole = write_bz2(tmp_path / "d1" / "wikidatawiki-20240204-pages-meta-history1.xml-p1p10.bz2",
                      full)
    return base, incr, whole


def _tables(catalog: Catalog) -> tuple:
    """Every timeline row, every column; the watermarks but the file they came from."""
    def rows(name: str, drop: tuple[str, ...] = ()) -> list:
        return sorted(repr({k: v for k, v in r.items() if k not in drop})
                      for r in catalog.read_arrow(name).to_pylist())

    return (rows("statement_timeline"), rows("item_timeline"), rows("property_timeline"),
            rows("page_watermarks", ("dump_date", "dump_file")))


def test_daily_increments_continue_from_the_warehouse_and_equal_the_full_dump(
        tmp_path: Path, spark) -> None:
    """Full dump, then three days of adds/changes increments (which lack the watermark
    revisions): every timeline row equals an ingest of the full dump of all of it, and a
    rerun of the increments changes nothing."""
    base, incr, whole = _increments(tmp_path)
    catalog = Catalog(tmp_path / "inc", spark)
    ingest_wikidata(catalog, [base], max_reject_ratio=1.0)
    report = ingest_wikidata(catalog, incr, max_reject_ratio=1.0)
    assert [f.dump_file for f in report.files] == [f.name for f in incr]  # day by day
    reasons = {(r["page_id"], r["reason"]) for r in catalog.read_arrow("ingest_rejects").to_pylist()}
    assert not {r for r in reasons if r[1] == "partial_history"}
    assert (2, "invalid_json") in reasons
    fresh = Catalog(tmp_path / "fresh", spark)
    ingest_wikidata(fresh, [whole], max_reject_ratio=1.0)
    assert _tables(catalog) == _tables(fresh)
    # continued, not rewritten: Q1's qualified P27 that the full dump left open ends on
    # day 1, the P27 opened on day 1 ends on day 3
    assert {r for r in statements(catalog) if r[:2] == ("Q1", "P27")} >= {
        ("Q1", "P27", "Q30", "normal", 13, 14, ts("2024-01-04T00:00:00Z"),
         ts("2024-02-01T10:00:00Z"), ("P582",)),
        ("Q1", "P27", "Q30", "normal", 14, 18, ts("2024-02-01T10:00:00Z"),
         ts("2024-02-03T09:00:00Z"), ())}
    again = ingest_wikidata(catalog, incr, max_reject_ratio=1.0)
    assert again.files == [] and len(again.done) == 3
    assert _tables(catalog) == _tables(fresh)


def test_an_increment_read_again_after_a_kill_gives_the_same_tables(
        tmp_path: Path, spark) -> None:
    """A commit killed after the timelines, before the watermarks (what kill -9 leaves):
    the rerun continues from the state as of the old watermarks, not from the rows the
    killed commit wrote, and gives the tables of an uninterrupted ingest."""
    base, incr, whole = _increments(tmp_path)
    catalog = Catalog(tmp_path / "inc", spark)
    ingest_wikidata(catalog, [base], max_reject_ratio=1.0)
    with killed_before("page_watermarks"):
        ingest_wikidata(catalog, incr[:1], max_reject_ratio=1.0)
    ingest_wikidata(catalog, incr, max_reject_ratio=1.0)
    fresh = Catalog(tmp_path / "fresh", spark)
    ingest_wikidata(fresh, [whole], max_reject_ratio=1.0)
    assert _tables(catalog) == _tables(fresh)


def test_an_increment_after_a_skipped_day_is_refused_page_by_page(tmp_path: Path,
                                                                   spark) -> None:
    """Day 1 missing: day 3's Q1 and Q7 revisions follow revisions never ingested (their
    parents), so both are counted partial_history rejects and keep their rows; Q2 (its
    parent ingested) goes on; the missing day and then day 3 again repair them."""
    base, incr, whole = _increments(tmp_path)
    catalog = Catalog(tmp_path / "inc", spark)
    ingest_wikidata(catalog, [base], max_reject_ratio=1.0)
    before = {r for r in statements(catalog) if r[0] == "Q1"}
    ingest_wikidata(catalog, [incr[2]], max_reject_ratio=1.0)
    refused = {r["page_id"]: r["detail"] for r in catalog.read_arrow("ingest_rejects").to_pylist()
               if r["reason"] == "partial_history"}
    assert sorted(refused) == [1] and "day skipped" in refused[1]  # Q7 is not stored: new
    assert {r for r in statements(catalog) if r[0] == "Q1"} == before
    marks = {r["page_id"]: r["last_rev_id"] for r in catalog.read_arrow("page_watermarks").to_pylist()}
    assert marks[1] == 13 and marks[2] == 19


def test_late_revision_replays_the_page(tmp_path: Path, spark) -> None:
    old = pages_v1()
    new = pages_v1()
    # a revision imported later but dated before the watermark of Q1 (2024-01-04)
    new[0].revisions.append(Rev(16, "2024-01-02T12:00:00Z",
                                item("Q1", [claim("P31", "Q5", "q1$a")], enwiki="One")))
    f1 = write_bz2(tmp_path / "d1" / "wikidatawiki-20240201-pages-meta-history1.xml-p1p10.bz2", old)
    f2 = write_bz2(tmp_path / "d2" / "wikidatawiki-20240301-pages-meta-history1.xml-p1p10.bz2", new)
    incremental = Catalog(tmp_path / "inc", spark)
    ingest_wikidata(incremental, [f1], max_reject_ratio=1.0)
    report = ingest_wikidata(incremental, [f2], max_reject_ratio=1.0)
    assert report.files[0].replayed_pages == 1
    fresh = Catalog(tmp_path / "fresh", spark)
    ingest_wikidata(fresh, [f2], max_reject_ratio=1.0)
    assert snapshot_of(incremental) == snapshot_of(fresh)
    # P27 is absent from 12:00 on 2024-01-02 until rev 12
    p27 = sorted((r[4], r[5]) for r in statements(fresh) if r[1] == "P27")
    assert p27 == [(11, 16), (12, 13), (13, None)]


def test_truncated_file_fails_its_task_only_and_keeps_complete_pages(tmp_path: Path, catalog: Catalog) -> None:
    good = write_bz2(tmp_path / "wikidatawiki-20240201-pages-meta-history1.xml-p1p10.bz2", pages_v1()[:1])
    data = bz2.compress(Path(good).read_bytes() and __import__("dumpbuilder").render(
        [PageSpec(40, "Q40", [Rev(400, "2024-01-01T00:00:00Z", item("Q40", [], "Forty"))]),
         PageSpec(41, "Q41", [Rev(410, "2024-01-01T00:00:00Z", item("Q41", [], "FortyOne"))])]).encode())
    bad = tmp_path / "wikidatawiki-20240201-pages-meta-history2.xml-p11p50.bz2"
    bad.write_bytes(data[: len(data) - 40])  # cut the end of the bz2 stream
    with pytest.raises(IngestError, match="1 of 2 wikidatawiki files failed"):
        ingest_wikidata(catalog, [good, bad], workers=2, max_reject_ratio=1.0)
    qids = {r["qid"] for r in catalog.read_arrow("item_timeline").to_pylist()}
    assert "Q1" in qids
    reasons = {(r["dump_file"], r["reason"]) for r in catalog.read_arrow("ingest_rejects").to_pylist()}
    assert (bad.name, "file_error") in reasons


def test_bad_character_reference_rejects_its_page_or_revision_only(
    tmp_path: Path, catalog: Catalog
) -> None:
    from dumpbuilder import render

    pages = [
        PageSpec(40, "QBADTITLE", [Rev(400, "2024-01-01T00:00:00Z", item("Q40", [], "Forty"))]),
        PageSpec(41, "Q41", [Rev(410, "2024-01-01T00:00:00Z", item("Q41", [], "FortyOne")),
                             Rev(411, "2024-01-02T00:00:00Z", item("Q41", [], "BADLABEL"))]),
        PageSpec(42, "Q42", [Rev(420, "2024-01-01T00:00:00Z", item("Q42", [], "FortyTwo"))]),
    ]
    xml = render(pages).encode().replace(b"BADTITLE", b"&#x110000;").replace(
        b"BADLABEL", b"&#99999999999999999999;")  # beyond Unicode: not a character
    f = tmp_path / "wikidatawiki-20240201-pages-meta-history1.xml-p40p42.bz2"
    f.write_bytes(bz2.compress(xml))
    report = ingest_wikidata(catalog, [f], max_reject_ratio=1.0)
    assert report.files[0].error is None
    titles = {(r["qid"], r["rev_from"]): r["enwiki_title"]
              for r in catalog.read_arrow("item_timeline").to_pylist()}
    assert titles == {("Q41", 410): "FortyOne", ("Q42", 420): "FortyTwo"}
    reasons = sorted(r["reason"] for r in catalog.read_arrow("ingest_rejects").to_pylist())
    assert reasons == ["malformed_xml", "malformed_xml"]  # the page and the one revision


def test_unexpected_error_fails_its_file_only(tmp_path: Path, catalog: Catalog,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    from emerge_lib.ingest.wikidata import extract as wikidata_extract

    good = write_bz2(tmp_path / "wikidatawiki-20240201-pages-meta-history1.xml-p1p10.bz2",
                     pages_v1()[:1])
    odd = write_bz2(tmp_path / "wikidatawiki-20240201-pages-meta-history2.xml-p11p50.bz2",
                    [PageSpec(40, "Q40", [Rev(400, "2024-01-01T00:00:00Z", item("Q40", [], "F"))])])
    process_page = wikidata_extract.WikidataFileExtractor.process_page

    def explode(self, page, replay_all=False):  # a bug, or an input nobody foresaw
        if page.page_id == 40:
            raise RuntimeError("boom")
        return process_page(self, page, replay_all)

    monkeypatch.setattr(wikidata_extract.WikidataFileExtractor, "process_page", explode)
    with pytest.raises(IngestError, match="1 of 2 wikidatawiki files failed"):
        ingest_wikidata(catalog, [good, odd], workers=1, max_reject_ratio=1.0)
    assert "Q1" in {r["qid"] for r in catalog.read_arrow("item_timeline").to_pylist()}
    rejects = {(r["dump_file"], r["reason"], r["detail"])
               for r in catalog.read_arrow("ingest_rejects").to_pylist()}
    assert (odd.name, "file_error", "RuntimeError: boom") in rejects


def test_a_files_cpu_seconds_are_measured_and_logged(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch,
                                                     caplog: pytest.LogCaptureFixture) -> None:
    """The CPU a file takes (what the 7z benchmark's cluster projection scales) is the
    process's while reading it: a page that burns 0.3 CPU-seconds shows in it."""
    import logging
    import time

    from emerge_lib.ingest.pool import log_file
    from emerge_lib.ingest.wikidata import extract as wikidata_extract

    f = write_bz2(tmp_path / "wikidatawiki-20240201-pages-meta-history1.xml-p1p10.bz2",
                  pages_v1())
    process_page = wikidata_extract.WikidataFileExtractor.process_page

    def busy(self, page, replay_all=False):
        if page.page_id == 1:
            until = time.process_time() + 0.3
            while time.process_time() < until:
                pass
        return process_page(self, page, replay_all)

    monkeypatch.setattr(wikidata_extract.WikidataFileExtractor, "process_page", busy)
    summary = wikidata_extract.extract_file(str(f), str(tmp_path / "staging"), "wikidatawiki",
                                            f.name, "20240201", {})
    assert summary.error is None and summary.revisions == 10
    assert 0.3 <= summary.cpu_seconds < 0.3 + 2 * summary.seconds
    with caplog.at_level(logging.INFO, logger="emerge_lib.ingest.pool"):
        log_file(summary)
    assert f" in {summary.seconds:.1f}s, {summary.cpu_seconds:.1f} CPU-s (" in caplog.text


def test_reject_ratio_limit_fails_loudly_after_committing(tmp_path: Path, catalog: Catalog) -> None:
    f = write_bz2(tmp_path / "wikidatawiki-20240201-pages-meta-history1.xml-p1p10.bz2", pages_v1())
    # 2 rejects in 10 revisions, one of them deleted text (normal, not held against it)
    with pytest.raises(IngestError, match="1 of 10 revisions rejected"):
        ingest_wikidata(catalog, [f], max_reject_ratio=0.05)
    assert catalog.read_arrow("ingest_rejects").num_rows == 2
    # the verdict is the same on a rerun: judged on what is stored, not on this read
    with pytest.raises(IngestError, match="1 of 10 revisions rejected"):
        ingest_wikidata(catalog, [f], max_reject_ratio=0.05)
    ingest_wikidata(catalog, [f], max_reject_ratio=0.1)  # within a looser limit


def test_inspect_statements_prints_t_tau(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from emerge_lib.cli import main

    pages = [
        PageSpec(1, "Q1", [
            Rev(10, "2024-01-01T00:00:00Z", item("Q1", [claim("P31", "Q2", "a"), claim("P27", "Q3", "b")], "One")),
            Rev(11, "2024-01-20T00:00:00Z", item("Q1", [claim("P31", "Q2", "a")], "One")),
        ]),
        PageSpec(2, "Q2", [Rev(20, "2024-01-01T00:00:00Z", item("Q2", [claim("P279", "Q1", "c")], "Two"))]),
        PageSpec(3, "Q3", [Rev(30, "2024-01-01T00:00:00Z", item("Q3", [], None))]),  # no article
    ]
    f = write_bz2(tmp_path / "wikidatawiki-20240201-pages-meta-history1.xml-p1p3.bz2", pages)
    assert main(["inspect", "statements", "--wikidata", str(f), "--at", "2024-01-10"]) == 0
    assert capsys.readouterr().out == "Q1\tP31\tQ2\nQ2\tP279\tQ1\n"
    assert main(["inspect", "statements", "--wikidata", str(f), "--at", "2024-01-10", "--all-items"]) == 0
    assert capsys.readouterr().out == "Q1\tP27\tQ3\nQ1\tP31\tQ2\nQ2\tP279\tQ1\n"
    assert main(["inspect", "statements", "--wikidata", str(f), "--at", "2024-01-25", "--all-items"]) == 0
    assert capsys.readouterr().out == "Q1\tP31\tQ2\nQ2\tP279\tQ1\n"


@on_each_engine
def test_spark_map_in_arrow_executor_gives_the_same_tables(tmp_path: Path, engine) -> None:
    """``dumps.executor: spark``: the extraction in the engine's Python workers (Sail's
    threads; the Spark cluster's executors, another process and interpreter) gives the
    process pool's tables."""
    f = write_bz2(tmp_path / "wikidatawiki-20240201-pages-meta-history1.xml-p1p10.bz2", pages_v1())
    local = Catalog(tmp_path / "local", engine)
    ingest_wikidata(local, [f], max_reject_ratio=1.0)
    in_spark = Catalog(tmp_path / "spark", engine)
    ingest_wikidata(in_spark, [f], max_reject_ratio=1.0, executor="spark")
    assert snapshot_of(in_spark) == snapshot_of(local)




def test_real_samples_legacy_chains_deleted_text_and_out_of_order(realdata: Path, catalog: Catalog) -> None:
    files = [realdata / "sansa-ml" / "data.xml",
             realdata / "wdtk" / "sample-daily-dump-20140220.xml",
             realdata / "wdtk" / "mock-dump-with-bugs.xml"]
    report = ingest_wikidata(catalog, files, max_reject_ratio=1.0)
    assert [f.error for f in report.files] == [None] * 3
    st = {(r["s"], r["p"], r["o"]): r for r in catalog.read_arrow("statement_timeline").to_pylist()}
    # sansa-ml Q18: the second revision (an undo) restores P107 -> Q618123
    assert st[("Q18", "P107", "Q618123")]["rev_from"] == 66322455
    assert st[("Q18", "P107", "Q618123")]["valid_from"] == ts("2013-08-20T13:26:25Z")
    assert st[("Q18", "P31", "Q5107")]["valid_from"] == ts("2013-08-20T12:32:39Z")
    assert st[("Q18", "P31", "Q5107")]["valid_to"] is None
    # wdtk Q1 (legacy JSON): five revisions with the same claims make one open interval each
    q1 = [r for r in st.values() if r["s"] == "Q1"]
    assert len(q1) >= 4 and {r["rev_from"] for r in q1} == {110652822}
    assert all(r["valid_to"] is None for r in q1)
    items = catalog.read_arrow("item_timeline").to_pylist()
    # sansa-ml Q23: revision 548 (2012) is stored after the deleted 61736190 (2013)
    (q23,) = [r for r in items if r["qid"] == "Q23"]
    assert (q23["rev_from"], q23["enwiki_title"], q23["valid_to"]) == (548, "George Washington", None)
    rejects = {(r["rev_id"], r["reason"]) for r in catalog.read_arrow("ingest_rejects").to_pylist()}
    assert (61736190, "text_deleted") in rejects
    # the non-entity project pages are skipped, not rejected
    assert not any(r in rejects for r in [(110689117, "invalid_json"), (110689111, "invalid_json")])






def _arrow_in_a_worker(rows: int, threads: int | None = None) -> tuple[int, bool]:
    """A pool job: what the extractors do with pyarrow, and whether pandas came along."""
    import sys

    import pyarrow as pa

    table = pa.table({"x": pa.array(list(range(rows)), pa.int64())})
    return table.num_rows, sys.modules.get("pandas") is not None


def test_pool_workers_start_without_pandas() -> None:
    """pyarrow imports pandas on the first pa.array when installed (0.3 s per worker);
    the workers never need it, and the parent keeps it."""
    from emerge_lib.ingest.pool import run_workers

    results = run_workers(_arrow_in_a_worker, [(3,), (5,)], workers=2)
    assert sorted(results) == [(3, False), (5, False)]
    import pandas  # noqa: F401  - the parent is untouched


def _faults_reallocating(blocks: int = 8, size: int = 16 << 20, threads: int | None = None
                         ) -> int:
    """Minor page faults while fresh multi-MB bytes objects are built and freed, each a
    little larger than the one before (as the kept tail of the XML window varies)."""
    import resource

    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for i in range(blocks):
        block = b"x" * (size + i * 65536)  # written, as a decompressor fills it
        del block
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before


def test_pool_workers_reuse_freed_memory() -> None:
    """By default glibc unmaps a freed multi-MB block, so every new one is faulted in and
    zeroed by the kernel again (page by page); the workers keep it for reuse."""
    import ctypes
    from concurrent.futures import ProcessPoolExecutor
    from multiprocessing import get_context

    from emerge_lib.ingest.pool import run_workers

    if not hasattr(ctypes.CDLL(None), "mallopt"):
        pytest.skip("not glibc: the allocator setting does not apply")
    pages = 8 * (16 << 20) // 4096
    with ProcessPoolExecutor(1, mp_context=get_context("spawn")) as plain_pool:
        default = plain_pool.submit(_faults_reallocating, 8).result()
    assert default > pages * 3 // 4  # the premise: by default every block faults again
    in_workers = run_workers(_faults_reallocating, [(8,), (8,)], workers=2)
    assert max(in_workers) < pages // 6  # the first block, then 16 new pages per block


def test_extract_and_commit_as_separate_steps(tmp_path: Path, catalog: Catalog) -> None:
    """What mapped tasks do: plan, extract each file on its own, commit what was staged.
    An extraction whose page range changed meanwhile is not committed (it is stale), and a
    file that vanished after the plan fails that file only, with a clear reason."""
    from stagekit import config

    from emerge_lib.ingest.commit import commit
    from emerge_lib.ingest.extract import extract, job_for
    from emerge_lib.ingest.plan import plan_ingest

    f = write_bz2(tmp_path / "wikidatawiki-20240201-pages-meta-history1.xml-p1p10.bz2", pages_v1())
    cfg = config(catalog, dumps={"max_reject_ratio": 1.0})
    plan = plan_ingest(cfg, catalog, "wikidata", [f], None)
    (planned,) = plan.files
    assert (planned.bytes, planned.done, planned.ref.page_range) == (f.stat().st_size, False, (1, 10))
    first, second = (extract(job_for(plan, planned, cfg.staging, catalog)) for _ in range(2))
    assert first.staging != second.staging and first.basis == second.basis
    assert commit(catalog, plan, [second]) == []
    assert commit(catalog, plan, [first]) == [first]  # the watermarks it read are gone
    assert not Path(first.staging).exists() and not Path(second.staging).exists()
    assert plan_ingest(cfg, catalog, "wikidata", [f], None).files[0].done
    f.unlink()
    lost = extract(job_for(plan, planned, cfg.staging, catalog))
    assert lost.error and "No such file" in lost.error and lost.outputs.get("ingest_rejects")


def test_emerge_ingest_of_wikidata_paths_alone_builds_stable_statements(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`--wiki both` (the default) with Wikidata paths only and no snapshots configured:
    Wikipedia has nothing to read and is skipped; the KG stability rule still runs."""
    from emerge_lib.cli import main

    f = write_bz2(tmp_path / "wikidatawiki-20240201-pages-meta-history1.xml-p1p10.bz2", pages_v1())
    wh = tmp_path / "wh"
    assert main(["ingest", "--wikidata", str(f), "--warehouse", str(wh), "--workers", "1",
                 "--config", str(_config_file(tmp_path, max_reject_ratio=1.0))]) == 0
    assert "emerge:" not in capsys.readouterr().err
    catalog = Catalog(wh)
    stable = {(r["s"], r["p"], r["o"]) for r in catalog.read_arrow("stable_statements").to_pylist()}
    assert ("Q2", "P31", "Q5") in stable
    assert {r["wiki"] for r in catalog.read_arrow("ingested_files").to_pylist()} == {"wikidatawiki"}
    # a wiki asked for by name with nothing to read is refused, not silently skipped
    assert main(["ingest", "--wiki", "wikipedia", "--warehouse", str(wh)]) == 1
    assert "no Wikipedia dump to ingest" in capsys.readouterr().err


def _config_file(folder: Path, **dumps: object) -> Path:
    """A YAML configuration of dumps settings only (no snapshots)."""
    import yaml

    path = folder / "emerge.yaml"
    path.write_text(yaml.safe_dump({"dumps": dict(dumps)}))
    return path


def test_the_ingest_stage_logs_one_summary_line(tmp_path: Path, catalog: Catalog,
                                                caplog: pytest.LogCaptureFixture) -> None:
    """Besides one rate line per file read, the stage logs one line: rows per table, the
    files, revisions and stored rejects, and MB/s."""
    import logging

    f = write_bz2(tmp_path / "wikidatawiki-20240201-pages-meta-history1.xml-p1p10.bz2", pages_v1())
    with caplog.at_level(logging.INFO, logger="emerge_lib"):
        ingest_wikidata(catalog, [f], max_reject_ratio=1.0)
    lines = [r.getMessage() for r in caplog.records if r.levelno >= logging.INFO
             and not r.getMessage().startswith(f.name)]  # the file's own rate line
    (line,) = [x for x in lines if "wikidatawiki" in x or "ingest_wikidata" in x]
    assert line.startswith("stage ingest_wikidata: statement_timeline 6 rows")
    assert ", 1 files, 10 revisions, 2 rejects in " in line
    # the cores it kept busy follow when the stage took a second or more (a loaded machine)
    assert re.search(r" MB/s(, [0-9.]+ cores)?$", line), line


@pytest.mark.parametrize("nest", ["objects", "arrays", "top level"])
def test_a_revision_nested_too_deep_is_one_reject(tmp_path: Path, catalog: Catalog,
                                                   nest: str) -> None:
    """A revision whose JSON nests 100,000 deep (objects inside a claims group failed the
    whole file with a RecursionError: none of its pages committed) is one reject; the
    page's other revisions and the other pages are ingested."""
    n = 100_000
    deep = '{"a":' * n + "1" + "}" * n if nest != "arrays" else "[" * n + "1" + "]" * n
    good = item("Q2", [claim("P31", "Q5", "q2$a")], "Two")
    text = (good[:-1] + f',"x":{deep}}}' if nest == "top level"
            else good.replace('"claims":{', f'"claims":{{"P9":{deep},', 1))
    f = write_bz2(tmp_path / "wikidatawiki-20240201-pages-meta-history1.xml-p1p10.bz2", [
        PageSpec(1, "Q1", q1_history()),
        PageSpec(2, "Q2", [Rev(20, "2024-01-01T00:00:00Z", good),
                           Rev(21, "2024-01-02T00:00:00Z", text),
                           Rev(22, "2024-01-03T00:00:00Z", good)]),
    ])
    report = ingest_wikidata(catalog, [f], max_reject_ratio=1.0)
    assert report.pages == 2
    rejects = {(r["rev_id"], r["reason"]) for r in catalog.read_arrow("ingest_rejects").to_pylist()}
    assert rejects == {(21, "too_deep")}
    assert {s for s, *_ in statements(catalog)} == {"Q1", "Q2"}


def test_a_wikipedia_export_without_dbname_given_as_wikidata_says_so(tmp_path: Path,
                                                                    catalog: Catalog) -> None:
    """It said "not a MediaWiki history dump, or every page is broken"."""
    from dumpbuilder import HEADER

    header = HEADER.replace("    <dbname>{dbname}</dbname>\n", "").format()
    f = write_bz2(tmp_path / "wikidatawiki-20240201-pages-meta-history1.xml-p1p10.bz2", [
        PageSpec(1, "Alma Keller", [Rev(10, "2024-01-01T00:00:00Z", "'''Alma''' is.",
                                        model="wikitext")])], header=header)
    with pytest.raises(IngestError):
        ingest_wikidata(catalog, [f], max_reject_ratio=1.0)
    (row,) = [r for r in catalog.read_arrow("ingest_rejects").to_pylist()
              if r["reason"] == "file_error"]
    assert "none is an entity page" in row["detail"] and "--wikipedia" in row["detail"]
