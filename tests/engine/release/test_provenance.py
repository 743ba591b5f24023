"""The provisional rule (release.provenance.provisional): a snapshot whose last window ends
after the day its wikis' deletions are known to (the newest full dump or reconciled logging
dump), while the timelines reach past that day on daily increments, is marked, with that
day; the reconciling data clears the mark; full dumps alone never mark."""

from __future__ import annotations

from pathlib import Path

from emerge_lib.catalog import Catalog
from emerge_lib.core.schedule import SnapshotPlan
from emerge_lib.formats.about import collection
from emerge_lib.release.provenance import dumps, history, provisional

PLANS = [SnapshotPlan("2024-01-01T00:00:00Z", 5, 7), SnapshotPlan("2024-04-01T00:00:00Z", 5, 7)]


def _files(catalog: Catalog, rows: list[tuple[str, str, str]]) -> None:
    catalog.merge("ingested_files", catalog.frame("ingested_files", [
        {"wiki": w, "dump_date": d, "dump_file": f} for w, d, f in rows]))


def _marks(catalog: Catalog) -> list[dict]:
    versions = {n: catalog.version(n) for n in ("ingested_files", "reconciled_logs")}
    return provisional(catalog, versions, PLANS)


def test_increments_past_the_reconciled_day_mark_the_later_snapshot(tmp_path: Path,
                                                                      spark) -> None:
    catalog = Catalog(tmp_path / "wh", spark)
    full = [(w, "20240220", f"{w}-20240220-pages-meta-history1.xml-p1p9.bz2")
            for w in ("wikidatawiki", "enwiki")]
    _files(catalog, full)
    assert _marks(catalog) == []  # full dumps alone: consistent as of their date
    _files(catalog, [(w, d, f"{w}-{d}-pages-meta-hist-incr.xml.bz2")
                     for w in ("wikidatawiki", "enwiki") for d in ("20240220", "20240519")])
    assert _marks(catalog) == [{"snapshot": "2024-04-01T00:00:00Z",
                                "last_window_end": "2024-05-06T00:00:00Z",
                                "covered_to": "2024-02-20"}]
    # one wiki reconciled: the other still holds the mark back
    catalog.merge("reconciled_logs", catalog.frame("reconciled_logs", [
        {"wiki": "enwiki", "dump_date": "20240520",
         "dump_file": "enwiki-20240520-pages-logging.xml.gz"}]))
    assert [m["covered_to"] for m in _marks(catalog)] == ["2024-02-20"]
    catalog.merge("reconciled_logs", catalog.frame("reconciled_logs", [
        {"wiki": "wikidatawiki", "dump_date": "20240401",
         "dump_file": "wikidatawiki-20240401-pages-logging.xml.gz"}]))
    assert [m["covered_to"] for m in _marks(catalog)] == ["2024-04-01"]
    catalog.merge("reconciled_logs", catalog.frame("reconciled_logs", [
        {"wiki": "wikidatawiki", "dump_date": "20240520",
         "dump_file": "wikidatawiki-20240520-pages-logging.xml.gz"}]))
    assert _marks(catalog) == []


def _history(catalog: Catalog) -> list[dict]:
    return history(catalog, {n: catalog.version(n) for n in ("ingested_files", "reconciled_logs")})


def test_the_history_held_is_the_same_from_a_full_dump_or_from_increments(tmp_path: Path,
                                                                         spark) -> None:
    """release.provenance: history names how far each wiki's revisions and deletions go:
    the newer full dump, and the older one with the daily increments to the day before it
    and that day's logging dump, hold the same history; the files each read differ."""
    full = Catalog(tmp_path / "full", spark)
    _files(full, [(w, d, f"{w}-{d}-pages-meta-history1.xml-p1p9.bz2")
                  for w in ("wikidatawiki", "enwiki") for d in ("20240220", "20240401")])
    full.merge("reconciled_logs", full.frame("reconciled_logs", [  # the newer one, complete
        {"wiki": w, "dump_date": "20240401", "dump_file": f"{w}-20240401-pages-meta-history"}
        for w in ("wikidatawiki", "enwiki")]))
    incr = Catalog(tmp_path / "incr", spark)
    _files(incr, [(w, "20240220", f"{w}-20240220-pages-meta-history1.xml-p1p9.bz2")
                  for w in ("wikidatawiki", "enwiki")])
    _files(incr, [(w, d, f"{w}-{d}-pages-meta-hist-incr.xml.bz2")
                  for w in ("wikidatawiki", "enwiki") for d in ("20240220", "20240331")])
    # before the logging dumps: revisions to the day after the last increment, deletions
    # known to the first full dump (the snapshot past it is provisional)
    assert _history(incr) == [
        {"wiki": "enwiki", "revisions_before": "2024-04-01", "deletions_known_to": "2024-02-20"},
        {"wiki": "wikidatawiki", "revisions_before": "2024-04-01",
         "deletions_known_to": "2024-02-20"}]
    incr.merge("reconciled_logs", incr.frame("reconciled_logs", [
        {"wiki": w, "dump_date": "20240401", "dump_file": f"{w}-20240401-pages-logging.xml.gz"}
        for w in ("wikidatawiki", "enwiki")]))
    assert _history(incr) == _history(full) == [
        {"wiki": w, "revisions_before": "2024-04-01", "deletions_known_to": "2024-04-01"}
        for w in ("enwiki", "wikidatawiki")]
    files = {c: {d["file"] for d in dumps(c, c.version("ingested_files"))} for c in (full, incr)}
    assert files[full] != files[incr]
    # the card's and croissant.json's words: the history, or every dump date read
    assert collection({}, [], _history(incr)).startswith(
        "Built by emerge from Wikimedia revision-history dumps (enwiki: every revision before "
        "2024-04-01, deletions and moves known to 2024-04-01; wikidatawiki:")
    said = collection({}, dumps(incr, incr.version("ingested_files")))
    assert "wikidatawiki dumps of 20240220, 20240331; every file with its sha1" in said
