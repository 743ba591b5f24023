"""Wikipedia ingest: exact page and paragraph timelines on hand-written and real dumps,
moves, redirects, ranges, incremental and idempotent commits, rejects, coverage."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from ingestkit import T, ingest_wikipedia, killed_before, pages, runs, state, ts
from sparkkit import on_each_engine
from wikipedia_builder import (
    B2,
    MOVE,
    A,
    B,
    C,
    D,
    E,
    WPage,
    WRev,
    article,
    render,
    world_v1,
    write_bz2,
)

from emerge_lib.catalog import Catalog
from emerge_lib.core.schedule import SnapshotPlan
from emerge_lib.dumps.xml import Dump
from emerge_lib.ingest.files import IngestError
from emerge_lib.ingest.wikipedia.coverage import CoverageError, require_coverage, snapshot_range
from emerge_lib.ingest.wikipedia.extract import parse_move, title_key
from emerge_lib.text.wikitext import normalize_title
from emerge_lib.transform.titles import resolve_titles, status_counts


def span(t: str, windows: int = 2, window_days: float = 7) -> tuple[datetime, datetime]:
    return snapshot_range(SnapshotPlan(t, windows, window_days), 30)

def v1_file(tmp_path: Path, date: str = "20240301") -> Path:
    return write_bz2(tmp_path / f"enwiki-{date}-pages-meta-history1.xml-p1p100.bz2", world_v1())


def test_move_comments_and_titles() -> None:
    assert parse_move(MOVE) == ("Old name", "New name")
    assert parse_move("[[User:Bo|Bo]] moved page [[A b]] to [[A_c]] over redirect") == ("A b", "A_c")
    assert parse_move("moved [[Pyrus]] to [[Pyrus (brand)]]: all links") == ("Pyrus", "Pyrus (brand)")
    assert parse_move("[[Foo]] moved to [[Bar]]") == ("Foo", "Bar")
    assert parse_move("I have moved [[Foo]] to [[Bar]] in the text") is None
    assert parse_move("copyedit") is None
    assert title_key("new_name") == ("New name", True)
    assert title_key("draft:thing") == ("Draft:Thing", False)


def test_exact_timelines_of_a_generated_history(tmp_path: Path, catalog: Catalog) -> None:
    report = ingest_wikipedia(catalog, [v1_file(tmp_path)], max_reject_ratio=0.1)
    (summary,) = report.files
    # page 5 (Talk) is skipped unread; 7 + 1 + 3 + 5 revisions of the articles
    assert (summary.pages, summary.skipped_pages, summary.revisions) == (4, 1, 16)
    assert (summary.rejects, summary.moves) == (1, 2)  # r303 deleted; pages 1 and 3 moved
    d = ts
    assert pages(catalog) == {
        (1, "Old name", d("2023-06-01T00:00:00Z"), d("2024-01-03T00:00:00Z"), 101, 105, False, None),
        (1, "New name", d("2024-01-03T00:00:00Z"), None, 105, None, False, None),
        (2, "Old name", d("2024-01-03T00:00:00Z"), None, 104, None, True, "New name"),
        # a draft until the move: no rows before it
        (3, "Thing", d("2024-01-04T00:00:00Z"), None, 203, None, False, None),
        (4, "Redirects", d("2023-01-01T00:00:00Z"), d("2023-02-01T00:00:00Z"), 301, 302, True, "Target one"),
        # the deleted r303 keeps the state of r302
        (4, "Redirects", d("2023-02-01T00:00:00Z"), d("2023-04-01T00:00:00Z"), 302, 304, True, "Target two"),
        (4, "Redirects", d("2023-04-01T00:00:00Z"), d("2023-05-01T00:00:00Z"), 304, 305, True, None),
        (4, "Redirects", d("2023-05-01T00:00:00Z"), None, 305, None, True, "Ziel drei"),
    }
    a = "Alpha is a town in Gamma on the Delta."
    b2 = "It was founded by John Smith in 1851."
    c = "In 2024 it joined the union with Beta."
    assert runs(catalog) == {
        # r102 is the revision current at t; r101 and r109 lie outside the range
        (1, a, 0, 102, d("2023-12-20T00:00:00Z"), 107, d("2024-01-06T12:00:00Z")),
        (1, "Alpha is the WORST town ever lol.", 0, 107, d("2024-01-06T12:00:00Z"),
         108, d("2024-01-06T12:05:00Z")),
        (1, a, 0, 108, d("2024-01-06T12:05:00Z"), None, None),
        (1, b2, 1, 102, d("2023-12-20T00:00:00Z"), None, None),
        (1, c, 2, 106, d("2024-01-05T10:00:00Z"), None, None),
        # draft revisions are not article text: the paragraphs start at the move
        (3, "A thing is an object.", 0, 203, d("2024-01-04T00:00:00Z"), None, None),
        (3, "Things are countable.", 1, 203, d("2024-01-04T00:00:00Z"), None, None),
    }
    # the five-minute vandalism is a run of 5 minutes: the passages stage drops it
    c_row = next(r for r in catalog.read_arrow("paragraph_timeline").to_pylist() if r["text"] == c)
    assert [(m["anchor"], m["target"]) for m in c_row["mentions"]] == [
        ("union", "Union of towns"), ("Beta", "Beta (town)")]
    assert all(c[m["start"]:m["end"]] == m["anchor"] for m in c_row["mentions"])
    assert c_row["tokens"] == 8 and 0 < c_row["markup_ratio"] < 0.5
    # identical texts (the null revision, the revert) are cleaned once: r102, r106, r107,
    # r203 and r201/r202 of page 3, and page 4's r305
    assert summary.decoded == 7
    rejects = {(r["page_id"], r["rev_id"], r["reason"])
               for r in catalog.read_arrow("ingest_rejects").to_pylist()}
    assert rejects == {(4, 303, "text_deleted")}
    marks = {r["page_id"]: (r["last_rev_id"], r["max_rev_id"])
             for r in catalog.read_arrow("page_watermarks").to_pylist()}
    assert marks == {1: (109, 109), 2: (104, 104), 3: (203, 203), 4: (305, 305)}


def test_titles_resolve_through_moves_and_redirects_as_of_tau(tmp_path: Path, catalog: Catalog) -> None:
    ingest_wikipedia(catalog, [v1_file(tmp_path)], max_reject_ratio=0.1)
    d = ts

    def item(qid: str, title: str, start: str, end: str | None) -> dict:
        return {"qid": qid, "valid_from": d(start), "valid_to": d(end) if end else None,
                "rev_from": 1, "enwiki_title": title, "label_en": None, "description_en": None,
                "created_at": d(start), "redirect_to": None, "qid_bucket": 0}

    catalog.merge("item_timeline", catalog.frame("item_timeline", [
        item("Q1", "Old name", "2023-06-01T00:00:00Z", "2024-01-03T00:10:00Z"),
        {**item("Q1", "New name", "2024-01-03T00:10:00Z", None), "rev_from": 2},
        item("Q3", "Thing", "2024-01-04T00:05:00Z", None),
    ]))
    spark = catalog.spark
    queries = [("Old name", "2024-01-02T00:00:00Z"), ("New name", "2024-01-02T00:00:00Z"),
               ("Old name", "2024-01-03T00:05:00Z"), ("Old name", "2024-01-10T00:00:00Z"),
               ("Redirects", "2023-04-15T00:00:00Z"), ("Redirects", "2024-01-10T00:00:00Z"),
               ("Thing", "2024-01-03T00:00:00Z"), ("Thing", "2024-01-10T00:00:00Z")]
    frame = spark.createDataFrame([(t, d(x)) for t, x in queries], "title string, tau timestamp")
    got = {(r.title, r.tau.astimezone(UTC), r.qid, r.status, r.hops)
           for r in resolve_titles(catalog, frame, max_hops=5, resolve_redirects=False).collect()}
    assert got == {
        ("Old name", d("2024-01-02T00:00:00Z"), "Q1", "ok", 0),  # page 1, before the move
        ("New name", d("2024-01-02T00:00:00Z"), None, "no_page", 0),
        # after the move: the redirect left behind, but the sitelink is not moved yet
        ("Old name", d("2024-01-03T00:05:00Z"), None, "no_item", 1),
        ("Old name", d("2024-01-10T00:00:00Z"), "Q1", "ok", 1),
        ("Redirects", d("2023-04-15T00:00:00Z"), None, "dead_end", 0),  # to Wikipedia:Sandbox
        ("Redirects", d("2024-01-10T00:00:00Z"), None, "dead_end", 1),  # to a missing page
        ("Thing", d("2024-01-03T00:00:00Z"), None, "no_page", 0),  # still a draft
        ("Thing", d("2024-01-10T00:00:00Z"), "Q3", "ok", 0),
    }
    one_tau = resolve_titles(catalog, spark.createDataFrame([("Old name",), ("Nowhere",)], "title string"),
                             tau="2024-01-10T00:00:00Z", max_hops=5, resolve_redirects=False)
    assert status_counts(one_tau) == {"ok": 1, "no_page": 1, "no_item": 0, "redirect_loop": 0,
                                      "dead_end": 0, "too_many_hops": 0}


def test_rerun_skips_the_file_and_reingest_rewrites_the_same_rows(tmp_path: Path, catalog: Catalog) -> None:
    f = v1_file(tmp_path)
    ingest_wikipedia(catalog, [f], max_reject_ratio=0.1)
    before = state(catalog)
    version = catalog.version("paragraph_timeline")
    again = ingest_wikipedia(catalog, [f], max_reject_ratio=0.1)
    assert again.files == [] and again.done == [f.name]
    assert state(catalog) == before and catalog.version("paragraph_timeline") == version
    forced = ingest_wikipedia(catalog, [f], max_reject_ratio=0.1, reingest=True)
    assert forced.files[0].unchanged_pages == 0 and forced.files[0].decoded == 7
    assert state(catalog) == before
    assert catalog.read_arrow("ingest_rejects").num_rows == 1  # replaced, not appended


def world_v2() -> list[WPage]:
    pages_ = world_v1()
    pages_[0].revisions.append(WRev(110, "2024-03-10T00:00:00Z", article(A, C, "New text.")))
    pages_.append(WPage(6, "Newcomer", [WRev(501, "2024-01-07T00:00:00Z", article(D))]))
    return pages_


def test_incremental_dump_equals_a_fresh_ingest(tmp_path: Path, spark) -> None:
    f1 = v1_file(tmp_path / "d1")
    f2 = write_bz2(tmp_path / "d2" / "enwiki-20240401-pages-meta-history1.xml-p1p100.bz2", world_v2())
    incremental = Catalog(tmp_path / "inc", spark)
    ingest_wikipedia(incremental, [f1], max_reject_ratio=0.1)
    report = ingest_wikipedia(incremental, [f2], max_reject_ratio=0.1)
    (s,) = report.files
    assert (s.unchanged_pages, s.replayed_pages) == (3, 1)  # page 1 changed, page 6 is new
    fresh = Catalog(tmp_path / "fresh", spark)
    ingest_wikipedia(fresh, [f2], max_reject_ratio=0.1)
    assert state(incremental) == state(fresh)
    # the older dump again: already ingested, nothing is read; re-ingested, the page the
    # newer dump changed is stale and kept, the others are rewritten the same
    assert ingest_wikipedia(incremental, [f1], max_reject_ratio=0.1).files == []
    old = ingest_wikipedia(incremental, [f1], max_reject_ratio=0.1, reingest=True)
    assert (old.files[0].stale_pages, old.files[0].unchanged_pages) == (1, 0)
    assert state(incremental) == state(fresh)


def test_an_increment_of_newer_revisions_alone_keeps_the_stored_history(tmp_path: Path,
                                                                        spark) -> None:
    """A file holding only a page's newer revisions (a daily adds/changes increment) after
    its full history was ingested, without the <parentid> that shows it follows on from
    them: rebuilt from them the page would lose its history. The
    page is a counted reject (partial_history) and keeps its rows; a page new in the file
    is ingested whole; the full dump later brings the same tables as a fresh ingest."""
    f1 = v1_file(tmp_path / "d1")
    increment = [WPage(1, world_v2()[0].title, [world_v2()[0].revisions[-1]]),
                 world_v2()[-1]]  # page 1's new revision alone, and the new page 6
    f_incr = write_bz2(tmp_path / "incr" / "enwiki-20240311-pages-meta-hist-incr.xml.bz2",
                       increment)
    catalog = Catalog(tmp_path / "wh", spark)
    ingest_wikipedia(catalog, [f1], max_reject_ratio=0.1)
    before = state(catalog)
    report = ingest_wikipedia(catalog, [f_incr], max_reject_ratio=0.6)
    rejects = [r for r in catalog.read_arrow("ingest_rejects").to_pylist()
               if r["dump_file"] == f_incr.name]
    assert [(r["page_id"], r["reason"]) for r in rejects] == [(1, "partial_history")]
    assert "does not follow on" in rejects[0]["detail"]  # no <parentid>: it cannot tell
    assert report.files[0].rejects == 1
    assert state(catalog) != before  # page 6 came in
    fresh = Catalog(tmp_path / "fresh", spark)
    ingest_wikipedia(fresh, [f1], max_reject_ratio=0.1)
    assert {r["page_id"] for r in catalog.read_arrow("page_timeline").to_pylist()} == \
        {r["page_id"] for r in fresh.read_arrow("page_timeline").to_pylist()} | {6}
    old_page1 = {repr(sorted(r.items())) for r in fresh.read_arrow("paragraph_timeline")
                 .to_pylist() if r["page_id"] == 1}
    kept_page1 = {repr(sorted(r.items())) for r in catalog.read_arrow("paragraph_timeline")
                  .to_pylist() if r["page_id"] == 1}
    assert kept_page1 == old_page1 and old_page1  # page 1's history, untouched
    f2 = write_bz2(tmp_path / "d2" / "enwiki-20240401-pages-meta-history1.xml-p1p100.bz2",
                   world_v2())
    ingest_wikipedia(catalog, [f2], max_reject_ratio=0.1)
    full = Catalog(tmp_path / "full", spark)
    ingest_wikipedia(full, [f2], max_reject_ratio=0.1)
    assert state(catalog) == state(full)


def test_a_new_snapshot_rewrites_pages_and_coverage_guards_the_passages(tmp_path: Path, catalog: Catalog) -> None:
    f = v1_file(tmp_path)
    ingest_wikipedia(catalog, [f], max_reject_ratio=0.1)
    require_coverage(catalog, *span(T))
    require_coverage(catalog, *span(T, 1, 10))  # shorter windows: covered
    later = "2023-06-01T00:00:00Z"
    with pytest.raises(CoverageError, match=r"not ingested for 2023-06-01 00:00\.\.2023-06-15 00:30"):
        require_coverage(catalog, *span(later))
    report = ingest_wikipedia(catalog, [f], [later], max_reject_ratio=0.1)
    assert report.files[0].unchanged_pages == 0  # the old coverage lacks the new range
    # coverage accumulates: asking for `later` alone keeps T's paragraphs too
    require_coverage(catalog, *span(later))
    require_coverage(catalog, *span(T))
    ranges = {(r["range_from"], r["range_to"]) for r in catalog.read_arrow("paragraph_coverage").to_pylist()}
    assert ranges == {span(later), span(T)}
    # page 1 at 2023-06-01: r101 is current; nothing changes until r102 (outside both ranges)
    first = {(r["first_seen_rev"], r["removed_rev"]) for r in catalog.read_arrow("paragraph_timeline").to_pylist()
             if r["page_id"] == 1 and r["text"].startswith("It was founded")}
    # "1850" runs from r101 until r102 (the base of the second range) drops it
    assert first == {(101, 102), (102, None)}
    # a snapshot whose last window ends after the dump was taken: edits are missing
    ingest_wikipedia(catalog, [f], ["2024-02-25T00:00:00Z"], windows=1, max_reject_ratio=0.1)
    with pytest.raises(CoverageError, match=r"newest ingested enwiki dump \(20240301\)"):
        require_coverage(catalog, *span("2024-02-25T00:00:00Z", 1))
    # and going back to a covered snapshot reads nothing: the file is done for it
    assert ingest_wikipedia(catalog, [f], [later], max_reject_ratio=0.1).files == []


def test_title_seen_by_an_older_dump_is_kept_without_a_move_comment(tmp_path: Path, catalog: Catalog) -> None:
    v1 = [WPage(7, "Alpha", [WRev(401, "2023-01-01T00:00:00Z", article(A))])]
    v2 = [WPage(7, "Beta", [WRev(401, "2023-01-01T00:00:00Z", article(A)),
                            WRev(402, "2024-03-05T00:00:00Z", article(A), comment=None)])]
    f1 = write_bz2(tmp_path / "enwiki-20240301-pages-meta-history1.xml-p1p9.bz2", v1)
    f2 = write_bz2(tmp_path / "enwiki-20240401-pages-meta-history1.xml-p1p9.bz2", v2)
    ingest_wikipedia(catalog, [f1])
    report = ingest_wikipedia(catalog, [f2])
    assert report.files[0].unexplained_moves == 1
    d = ts
    assert pages(catalog) == {
        (7, "Alpha", d("2023-01-01T00:00:00Z"), d("2024-03-05T00:00:00Z"), 401, 402, False, None),
        (7, "Beta", d("2024-03-05T00:00:00Z"), None, 402, None, False, None),
    }


def test_truncated_file_fails_keeps_its_complete_pages_and_covers_nothing(
    tmp_path: Path, catalog: Catalog
) -> None:
    good = write_bz2(tmp_path / "enwiki-20240301-pages-meta-history1.xml-p1p2.bz2", world_v1()[:2])
    xml = render(world_v1()[2:4])
    bad = tmp_path / "enwiki-20240301-pages-meta-history2.xml-p3p100"
    bad.write_text(xml[: xml.index("<id>302</id>")])  # page 3 complete, page 4 cut
    with pytest.raises(IngestError, match="1 of 2 enwiki files failed"):
        ingest_wikipedia(catalog, [good, bad], max_reject_ratio=1.0)
    assert {r["page_id"] for r in catalog.read_arrow("page_watermarks").to_pylist()} == {1, 2, 3}
    reasons = {(r["dump_file"], r["reason"]) for r in catalog.read_arrow("ingest_rejects").to_pylist()}
    assert (bad.name, "file_error") in reasons
    assert {r["dump_file"] for r in catalog.read_arrow("paragraph_coverage").to_pylist()} == {good.name}
    # page 3 came from the failed file: the passages stage must not trust it
    with pytest.raises(CoverageError, match=r"1 dump file\(s\), e.g. enwiki-20240301-pages-meta-history2"):
        require_coverage(catalog, *span(T))


def test_reject_ratio_limit_fails_loudly_after_committing(tmp_path: Path, catalog: Catalog) -> None:
    # the deleted r303 is normal in real dumps: counted, not held against the ratio
    ingest_wikipedia(catalog, [v1_file(tmp_path)])
    pages_ = world_v1()
    pages_[3].revisions.append(WRev(306, "2023-06-01T00:00:00Z", "{}", model="json"))
    f = write_bz2(tmp_path / "enwiki-20240302-pages-meta-history1.xml-p1p100.bz2", pages_)
    other = Catalog(tmp_path / "other", catalog.spark)
    with pytest.raises(IngestError, match=r"1 of 17 revisions rejected \(5\.88% > "
                                          r"dumps\.max_reject_ratio 1\.00%; 1 deleted"):
        ingest_wikipedia(other, [f])
    assert other.read_arrow("ingest_rejects").num_rows == 2  # committed all the same
    with pytest.raises(IngestError, match=r"1 of 17 revisions rejected"):  # and on a rerun
        ingest_wikipedia(other, [f])


# -- real samples ----------------------------------------------------------------------------
def test_real_pyrus_redirect_target_changes_over_time(realdata: Path, catalog: Catalog) -> None:
    f = realdata / "pywikibot" / "article-pyrus.xml.bz2"
    ingest_wikipedia(catalog, [f], ["2008-02-01T00:00:00Z"], windows=2)
    d = ts
    # old-style empty <redirect />: redirects come from the text; the first revision's
    # move comment ("moved [[Pyrus]] to [[Pyrus (brand)]]") belongs to the redirect left
    # behind at Pyrus, so the title stays
    assert pages(catalog) == {
        (9261472, "Pyrus", d("2007-02-02T02:39:52Z"), d("2007-02-02T02:41:24Z"), 104997415, 104997738,
         True, "Pyrus (brand)"),
        (9261472, "Pyrus", d("2007-02-02T02:41:24Z"), d("2008-02-07T14:06:10Z"), 104997738, 189729426,
         True, "Pear"),
        (9261472, "Pyrus", d("2008-02-07T14:06:10Z"), d("2008-02-10T07:21:12Z"), 189729426, 190346463,
         False, None),
        (9261472, "Pyrus", d("2008-02-10T07:21:12Z"), None, 190346463, None, True, "Pear"),
    }
    # the disambiguation revision (inside the range) has one prose line, then list items
    assert runs(catalog) == {(9261472, "Pyrus may refer to:", 0, 189729426, d("2008-02-07T14:06:10Z"),
                              190346463, d("2008-02-10T07:21:12Z"))}


def test_real_pear_paragraphs_and_offsets_are_exact(realdata: Path, catalog: Catalog) -> None:
    f = realdata / "pywikibot" / "article-pear-0.10.xml"
    ingest_wikipedia(catalog, [f], ["2015-01-01T00:00:00Z"], windows=1)
    rows = sorted(catalog.read_arrow("paragraph_timeline").to_pylist(), key=lambda r: r["paragraph_idx"])
    assert {(r["first_seen_rev"], r["removed_at"]) for r in rows} == {(638548877, None)}
    lead, etymology = rows[0], rows[1]
    # hand-read from the wikitext: "The '''pear''' is any of several tree and shrub
    # [[species]] of [[genus]] '''''Pyrus''''' {{IPAc-en|…}}, in the [[family]] Rosaceae. It is
    # also the name of the [[pome|pomaceous]] fruit …"
    assert lead["text"].startswith("The pear is any of several tree and shrub species of genus "
                                   "Pyrus , in the family Rosaceae. It is also the name of the "
                                   "pomaceous fruit of these trees.")
    assert [(m["anchor"], m["target"]) for m in lead["mentions"]] == [
        ("species", "Species"), ("genus", "Genus"), ("family", "Family"), ("pomaceous", "Pome"),
        ("Pyrinae", "Pyrinae"), ("Pyreae", "Pyreae")]
    # "[[Perry (disambiguation)#Places|place name ''Perry'']]": fragment dropped, italics gone
    assert ("place name Perry", "Perry (disambiguation)") in [
        (m["anchor"], m["target"]) for m in etymology["mentions"]]
    for r in rows:
        for m in r["mentions"]:
            assert r["text"][m["start"]:m["end"]] == m["anchor"]
    assert pages(catalog) == {(24278, "Pear", ts("2014-12-17T21:09:18Z"), None, 638548877, None, False, None)}


def test_real_enwiki_excerpt_redirects_match_the_dump_tags(realdata: Path, catalog: Catalog) -> None:
    f = realdata / "gensim" / "enwiki-latest-pages-articles1.xml-p000000010p000030302-shortened.bz2"
    report = ingest_wikipedia(catalog, [f], ["2016-06-01T00:00:00Z"], windows=1)
    assert (report.files[0].pages, report.files[0].skipped_pages) == (205, 1)
    tags: dict[int, str | None] = {}
    with Dump.from_file(f) as dump:
        for page in dump:
            if page.ns == 0 and page.redirect:
                tags[page.page_id] = normalize_title(page.redirect_title or "")
    assert len(tags) == 99  # the 100th redirect of the excerpt is in namespace 4
    got = {r[0]: r[7] for r in pages(catalog) if r[6]}
    assert got == tags  # the text rule finds every redirect the dump tags, with its target
    rows = catalog.read_arrow("paragraph_timeline").to_pylist()
    assert len(rows) > 1000
    bad = [(r["page_id"], m) for r in rows for m in r["mentions"]
           if r["text"][m["start"]:m["end"]] != m["anchor"]]
    assert bad == []
    assert not {r["page_id"] for r in rows} & set(tags)  # redirects have no paragraphs


def test_real_redirect_resolves_to_the_target_item(realdata: Path, catalog: Catalog) -> None:
    f = realdata / "wikipedia2vec" / "enwiki-pages-articles-sample.xml.bz2"
    ingest_wikipedia(catalog, [f], ["2015-01-01T00:00:00Z"], windows=1)
    catalog.merge("item_timeline", catalog.frame("item_timeline", [{
        "qid": "Q1758702", "valid_from": ts("2013-01-01T00:00:00Z"), "valid_to": None, "rev_from": 1,
        "enwiki_title": "Computer accessibility", "label_en": None, "description_en": None,
        "created_at": None, "redirect_to": None, "qid_bucket": 0}]))
    frame = catalog.spark.createDataFrame([("AccessibleComputing",), ("Accessibility",)], "title string")
    got = {(r.title, r.qid, r.status, r.hops)
           for r in resolve_titles(catalog, frame, tau="2015-01-01T00:00:00Z", max_hops=5,
                                   resolve_redirects=False).collect()}
    assert got == {("AccessibleComputing", "Q1758702", "ok", 1), ("Accessibility", None, "no_item", 0)}


def test_real_small_histories_skip_talk_pages(realdata: Path, catalog: Catalog) -> None:
    files = [realdata / "pywikibot" / "pair-0.10.xml", realdata / "mwxml" / "dump.xml"]
    report = ingest_wikipedia(catalog, files, ["2004-08-10T00:00:00Z"], windows=1)
    assert [(s.pages, s.skipped_pages, s.revisions) for s in
            sorted(report.files, key=lambda s: s.dump_file)] == [(1, 1, 2), (1, 1, 2)]
    titles = {r[1] for r in pages(catalog)}
    assert titles == {"Çullu, Agdam", "Foo"}


@on_each_engine
def test_spark_map_in_arrow_executor_gives_the_same_tables(tmp_path: Path, engine) -> None:
    """``dumps.executor: spark``: the extraction in the engine's Python workers (Sail's
    threads; the Spark cluster's executors, another process and interpreter) gives the
    process pool's tables."""
    f = v1_file(tmp_path)
    local = Catalog(tmp_path / "local", engine)
    ingest_wikipedia(local, [f], max_reject_ratio=0.1)
    in_spark = Catalog(tmp_path / "spark", engine)
    ingest_wikipedia(in_spark, [f], max_reject_ratio=0.1, executor="spark")
    assert state(in_spark) == state(local)




def test_extract_and_commit_as_separate_steps(tmp_path: Path, catalog: Catalog) -> None:
    """What mapped tasks do: files of disjoint page ranges, extracted side by side and
    committed one after the other, do not invalidate each other (each one's basis covers
    its own pages only) and equal a one-shot ingest; a writer that changes the coverage
    of the dump file a page was last read from still makes an extraction stale."""
    from stagekit import config

    from emerge_lib.ingest.commit import commit
    from emerge_lib.ingest.extract import extract, job_for
    from emerge_lib.ingest.plan import plan_ingest

    low = write_bz2(tmp_path / "enwiki-20240301-pages-meta-history1.xml-p1p2.bz2", world_v1()[:2])
    high = write_bz2(tmp_path / "enwiki-20240301-pages-meta-history2.xml-p3p9.bz2", world_v1()[2:])
    snapshots = {"timestamps": [T], "windows": 2, "window_days": 7}
    cfg = config(catalog, dumps={"max_reject_ratio": 0.1}, snapshots=snapshots)
    plan = plan_ingest(cfg, catalog, "wikipedia", [low, high], None)
    assert [f.ref.page_range for f in plan.files] == [(1, 2), (3, 9)]
    staged = [extract(job_for(plan, f, cfg.staging, catalog)) for f in plan.files]
    assert [commit(catalog, plan, [s]) for s in staged] == [[], []]  # neither is stale
    one_shot = Catalog(tmp_path / "one-shot", catalog.spark)
    ingest_wikipedia(one_shot, [low, high], max_reject_ratio=0.1)

    def coverage_rows(c: Catalog) -> set[tuple]:
        return {(r["dump_file"], r["range_from"], r["range_to"])
                for r in c.read_arrow("paragraph_coverage").to_pylist()}

    assert state(catalog) == state(one_shot)
    assert coverage_rows(catalog) == coverage_rows(one_shot) and len(coverage_rows(catalog)) == 2

    # a newer dump of the high pages, extracted; meanwhile another writer reads `high` again
    # for one more snapshot: its pages' watermarks stay the same, their coverage grows
    newer = write_bz2(tmp_path / "enwiki-20240401-pages-meta-history2.xml-p3p9.bz2", world_v1()[2:])
    later_plan = plan_ingest(cfg, catalog, "wikipedia", [newer], None)
    (pending,) = later_plan.files
    behind = extract(job_for(later_plan, pending, cfg.staging, catalog))
    def marks() -> list[dict]:
        return sorted(catalog.read_arrow("page_watermarks").to_pylist(), key=lambda r: r["page_id"])

    before = marks()
    ingest_wikipedia(catalog, [high], ["2023-06-01T00:00:00Z", T], max_reject_ratio=0.1)
    assert marks() == before
    assert commit(catalog, later_plan, [behind]) == [behind]


def test_a_wikidata_export_without_dbname_given_as_wikipedia_says_so(tmp_path: Path,
                                                                    catalog: Catalog) -> None:
    """Every revision a Wikibase entity: the content model names the other wiki."""
    import dumpbuilder

    header = dumpbuilder.HEADER.replace("    <dbname>{dbname}</dbname>\n", "").format()
    f = tmp_path / "enwiki-20240201-pages-meta-history1.xml-p1p10.bz2"
    dumpbuilder.write_bz2(f, [dumpbuilder.PageSpec(1, "Q1", [dumpbuilder.Rev(
        10, "2024-01-01T00:00:00Z", dumpbuilder.item("Q1", [], "One"))])], header=header)
    with pytest.raises(IngestError, match="1 unknown_content_model .content model "
                                          "wikibase-item: a Wikidata dump. pass it with "
                                          "--wikidata"):
        ingest_wikipedia(catalog, [f])


TWO = ("2024-01-01T00:00:00Z", "2024-04-01T00:00:00Z")  # ranges: Dec 31 - Jan 15, Mar 31 - Apr 15


def _increments(tmp_path: Path) -> tuple[Path, list[Path], Path]:
    """A full dump of 20240301, two days of increments, the full dump of all of it. Page 1's
    watermark revision (Feb 10) lies in no range: the older dump cleaned it as the base of
    the April range, but its March edit is that base in the full history. Page 3's lies in
    the January range. Page 7 is new on the first day."""
    def wrev(rev_id: int, stamp: str, text: str, parent: int | None = None) -> object:
        r = WRev(rev_id, stamp, text)
        r.parent = parent
        return r

    p1 = [wrev(101, "2023-06-01T00:00:00Z", article(A, B)),
          wrev(102, "2024-01-05T00:00:00Z", article(A, B2), 101),
          wrev(103, "2024-02-10T00:00:00Z", article(A, B2, C), 102)]
    p3 = [wrev(301, "2023-06-01T00:00:00Z", article(D)),
          wrev(302, "2024-01-10T00:00:00Z", article(D, E), 301)]
    day1 = [WPage(1, "New name", [wrev(110, "2024-03-10T00:00:00Z", article(A, C), 103)]),
            WPage(3, "Thing", [wrev(310, "2024-03-10T05:00:00Z", article(E), 302)]),
            WPage(7, "Seven", [wrev(701, "2024-03-10T06:00:00Z", article(D, C))])]
    day2 = [WPage(1, "New name", [wrev(111, "2024-04-03T00:00:00Z", article(A, C, E), 110)]),
            WPage(3, "Thing", [wrev(311, "2024-04-05T00:00:00Z", article(E, B), 310)])]
    base = write_bz2(tmp_path / "d0" / "enwiki-20240301-pages-meta-history1.xml-p1p100.bz2",
                     [WPage(1, "New name", p1), WPage(3, "Thing", p3)])
    incr = [write_bz2(tmp_path / "incr" / f"enwiki-{d}-pages-meta-hist-incr.xml.bz2", pages)
            for d, pages in (("20240310", day1), ("20240403", day2))]
    whole = write_bz2(tmp_path / "d1" / "enwiki-20240410-pages-meta-history1.xml-p1p100.bz2", [
        WPage(1, "New name", p1 + day1[0].revisions + day2[0].revisions),
        WPage(3, "Thing", p3 + day1[1].revisions + day2[1].revisions), day1[2]])
    return base, incr, whole


def _wp_tables(catalog: Catalog) -> tuple:
    def rows(name: str, drop: tuple[str, ...] = ()) -> list:
        return sorted(repr({k: v for k, v in r.items() if k not in drop})
                      for r in catalog.read_arrow(name).to_pylist())

    return (rows("page_timeline"), rows("paragraph_timeline"),
            rows("page_watermarks", ("dump_date", "dump_file")))


def test_daily_increments_continue_stored_pages_and_equal_the_full_dump(
        tmp_path: Path, spark) -> None:
    """A full dump, then two days of increments: the page and paragraph runs (and the
    watermarks) of an ingest of the full dump of all of it, row for row; page 1's run of
    C starts at its March edit, not at the watermark revision the older dump cleaned."""
    base, incr, whole = _increments(tmp_path)
    catalog = Catalog(tmp_path / "inc", spark)
    ingest_wikipedia(catalog, [base], snapshots=TWO)
    assert any(r[3] == 103 for r in runs(catalog))  # C, first seen at the watermark
    report = ingest_wikipedia(catalog, incr, snapshots=TWO)
    assert [f.replayed_pages for f in report.files] == [2, 2]
    fresh = Catalog(tmp_path / "fresh", spark)
    ingest_wikipedia(fresh, [whole], snapshots=TWO)
    assert _wp_tables(catalog) == _wp_tables(fresh)
    assert {r[3] for r in runs(catalog) if r[0] == 1 and "union" in r[1]} == {110}
    assert ingest_wikipedia(catalog, incr, snapshots=TWO).files == []
    assert _wp_tables(catalog) == _wp_tables(fresh)


def test_a_wikipedia_increment_after_a_kill_or_a_skipped_day(
        tmp_path: Path, spark) -> None:
    """Day 2 alone: pages 1 and 3 follow revisions never ingested, refused and kept.
    A commit of day 1 killed before its watermarks, then the days again: the tables of
    the full dump."""
    base, incr, whole = _increments(tmp_path)
    catalog = Catalog(tmp_path / "inc", spark)
    ingest_wikipedia(catalog, [base], snapshots=TWO)
    before = state(catalog)
    ingest_wikipedia(catalog, [incr[1]], snapshots=TWO, max_reject_ratio=1.0)
    refused = sorted(r["page_id"] for r in catalog.read_arrow("ingest_rejects").to_pylist()
                     if r["reason"] == "partial_history")
    assert refused == [1, 3] and state(catalog) == before

    catalog = Catalog(tmp_path / "killed", spark)
    ingest_wikipedia(catalog, [base], snapshots=TWO)
    with killed_before("page_watermarks"):
        ingest_wikipedia(catalog, incr[:1], snapshots=TWO)
    ingest_wikipedia(catalog, incr, snapshots=TWO)
    fresh = Catalog(tmp_path / "fresh", spark)
    ingest_wikipedia(fresh, [whole], snapshots=TWO)
    assert _wp_tables(catalog) == _wp_tables(fresh)
