"""Bad input through the `emerge` command, as a user meets it: one clear line, a non-zero
exit, no traceback, and the good files of the same run committed."""

from __future__ import annotations

import bz2
from pathlib import Path

import pytest
from dumpbuilder import PageSpec, Rev, claim, item, write_bz2
from wikipedia_builder import WPage, WRev, article, render

from emerge_lib.catalog import Catalog
from emerge_lib.cli import main

AT = "2024-01-10T00:00:00Z"


def wikidata_file(folder: Path, name: str = "wikidatawiki-20240301-pages-meta-history1.xml-p1p9.bz2"
                  ) -> Path:
    pages = [PageSpec(1, "Q1", [Rev(10, "2024-01-01T00:00:00Z",
                                    item("Q1", [claim("P31", "Q2", "a")], "One"))]),
             PageSpec(2, "Q2", [Rev(20, "2024-01-01T00:00:00Z", item("Q2", [], "Two"))])]
    return write_bz2(folder / name, pages)


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    rc = main(list(args))
    err = capsys.readouterr().err
    assert "Traceback" not in err
    lines = [x for x in err.splitlines() if x.startswith("emerge: ")]
    return rc, lines[-1] if lines else ""


@pytest.fixture()
def no_engine(monkeypatch: pytest.MonkeyPatch) -> None:
    """Path problems are reported before any engine starts."""
    import emerge_lib.core.engine

    def refuse(*_a: object, **_k: object) -> None:
        raise AssertionError("an engine was started for input that cannot be read")

    monkeypatch.setattr(emerge_lib.core.engine, "spark_session", refuse)
    monkeypatch.setattr(emerge_lib.core.engine, "session_for", refuse)


def test_paths_that_cannot_be_read_are_named_before_anything_starts(
        tmp_path: Path, capsys, no_engine) -> None:
    good = wikidata_file(tmp_path)
    (tmp_path / "a-folder").mkdir()
    (tmp_path / "empty.xml").write_bytes(b"")
    cases = {str(tmp_path / "missing.xml.bz2"): "missing.xml.bz2: not found",
             str(tmp_path / "a-folder"): "a-folder: is a directory, not a dump file",
             str(tmp_path / "empty.xml"): "empty.xml: empty file (0 bytes)"}
    for path, message in cases.items():
        rc, line = cli(capsys, "inspect", "statements", "--wikidata", path, "--at", AT)
        assert rc == 1 and line.startswith("emerge: cannot read ") and line.endswith(message)
    # one bad path among good ones: every bad one named, nothing ingested
    rc, line = cli(capsys, "build", "--wikidata", str(good), *cases, "--out", str(tmp_path / "r"),
                   "--warehouse", str(tmp_path / "wh"), "--snapshot", "2024-01-01T00:00:00Z")
    assert rc == 1 and "cannot use 3 dump files" in line
    assert all(message in line for message in cases.values())
    assert not (tmp_path / "wh").exists()


def test_one_dump_file_in_two_formats_is_refused_before_anything_starts(
        tmp_path: Path, capsys, no_engine) -> None:
    """Wikimedia (and `emerge sample`) publish every history file as .bz2 and .7z: given
    both, the same pages would be read twice; one line says so and nothing starts."""
    from emerge_lib.dumps.sevenzip import SevenZipWriter

    good = wikidata_file(tmp_path)
    twin = good.with_name(good.name.removesuffix(".bz2") + ".7z")
    with twin.open("wb") as fh:
        writer = SevenZipWriter(fh, twin.name.removesuffix(".7z"))
        writer.write(bz2.decompress(good.read_bytes()))
        writer.close()
    rc, line = cli(capsys, "inspect", "statements", "--wikidata", str(good), str(twin),
                   "--at", AT)
    assert rc == 1 and "same dump file in two formats" in line and twin.name in line


def test_files_that_are_not_dumps_are_refused_with_what_and_where(tmp_path: Path, capsys) -> None:
    good = wikidata_file(tmp_path)
    text = tmp_path / "notes.xml"
    text.write_text("just some notes\n")
    fake = tmp_path / "wikidatawiki-20240301-pages-meta-history2.xml-p10p19.bz2"
    fake.write_bytes(b"PNG not a bz2 file at all")
    other_xml = tmp_path / "feed.xml"
    other_xml.write_text("<rss><channel><title>news</title></channel></rss>\n")
    cut = tmp_path / "wikidatawiki-20240301-pages-meta-history3.xml-p20p29.bz2"
    cut.write_bytes(good.read_bytes()[:60])
    enwiki = tmp_path / "enwiki-20240301-pages-meta-history1.xml-p1p9.bz2"
    enwiki.write_bytes(bz2.compress(render([WPage(1, "Alpha", [WRev(1, "2024-01-01T00:00:00Z",
                                                                 article("Alpha."))])]).encode()))
    # told before anything starts: the bytes say it is no dump
    for path, message in {text: "not a dump file (starts with b'just som'",
                          fake: "not a bz2 file (starts with b'PNG not ', not b'BZh')"}.items():
        rc, line = cli(capsys, "inspect", "statements", "--wikidata", str(path), "--at", AT)
        assert rc == 1 and line == f"emerge: cannot read {path}: {message}: neither XML nor " \
            "bz2, gzip, xz, 7z)" if path is text else line == f"emerge: cannot read {path}: {message}"
    # found when read: the file fails, saying what and where
    for path, message in {other_xml: "not a MediaWiki export",
                          cut: "corrupt bz2 data at decompressed byte 0",
                          enwiki: "is a dump of enwiki, not of wikidatawiki"}.items():
        rc, line = cli(capsys, "inspect", "statements", "--wikidata", str(path), "--at", AT)
        assert rc == 1 and message in line and path.name in line, line
    # among good files: the good one is committed, the run fails and says which file
    wh = tmp_path / "wh"
    rc, line = cli(capsys, "ingest", "--wiki", "wikidata", "--wikidata", str(good), str(cut),
                   "--warehouse", str(wh))
    assert rc == 1 and "1 of 2 wikidatawiki files failed" in line and cut.name in line
    assert "the other files are committed" in line
    assert {r["qid"] for r in Catalog(wh).read_arrow("item_timeline").to_pylist()} == {"Q1", "Q2"}


def test_a_browser_saved_export_fails_loudly_and_covers_nothing(tmp_path: Path, capsys) -> None:
    """A page saved from a browser's XML view: a banner line, the text unescaped. Its one
    page is unreadable (a page reject, no revision): the file fails, it covers no range,
    and the build says so instead of releasing without it."""
    body = "Salt & pepper [[Spice]] and [[Food]] are good<ref>A book</ref> to eat. " * 4
    xml = render([WPage(7, "Ampersand", [WRev(701, "2024-01-03T00:00:00Z", article(body))])])
    xml = xml.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")
    banner = tmp_path / "enwiki-20240301-pages-meta-history2.xml-p7p9.saved"
    banner.write_text("This XML file does not appear to have any style information associated "
                      "with it. The document tree is shown below.\n" + xml)
    rc, line = cli(capsys, "inspect", "statements", "--wikidata", str(banner), "--at", AT)
    assert rc == 1 and "not a dump file (starts with b'This XML'" in line  # before any engine
    saved = tmp_path / "enwiki-20240301-pages-meta-history2.xml-p7p9"
    saved.write_text(xml)  # the same without its banner line: it reads, but yields nothing
    good = tmp_path / "enwiki-20240301-pages-meta-history1.xml-p1p6.bz2"
    good.write_bytes(bz2.compress(render([WPage(1, "Alpha", [WRev(1, "2024-01-02T00:00:00Z",
                                                                article("Alpha [[Beta]]."))])]).encode()))
    wh = tmp_path / "wh"
    rc, line = cli(capsys, "build", "--wikidata", str(wikidata_file(tmp_path)), "--wikipedia",
                   str(good), str(saved), "--out", str(tmp_path / "rel"), "--warehouse", str(wh),
                   "--snapshot", "2024-01-01T00:00:00Z", "--windows", "1")
    assert rc == 1 and "1 of 2 enwiki files failed" in line and "no revision could be read" in line
    catalog = Catalog(wh)
    covered = {r["dump_file"] for r in catalog.read_arrow("paragraph_coverage").to_pylist()}
    assert covered == {good.name}
    (row,) = [r for r in catalog.read_arrow("ingested_files").to_pylist() if r["dump_file"] == saved.name]
    assert (row["pages"], row["revisions"], row["rejected_pages"]) == (1, 0, 1)
    assert not (tmp_path / "rel").exists()


def test_a_snapshot_past_the_newest_wikidata_dump_is_refused(tmp_path: Path, capsys,
                                                            spark) -> None:
    """Two wikis that do not overlap the snapshot's windows: refused, not empty windows;
    by `emerge build` before anything starts (the dump's name has its date), and by the
    snapshot stage itself for whoever runs it on an ingested warehouse (Airflow)."""
    from stagekit import ingest, run

    from emerge_lib.ingest.wikipedia.coverage import CoverageError

    old = wikidata_file(tmp_path, "wikidatawiki-20240105-pages-meta-history1.xml-p1p9.bz2")
    rc, line = cli(capsys, "build", "--wikidata", str(old), "--out", str(tmp_path / "rel"),
                   "--warehouse", str(tmp_path / "wh"), "--snapshot", "2024-01-01T00:00:00Z")
    assert rc == 1 and not (tmp_path / "wh").exists()
    assert "wikidatawiki dump of this build (20240105) is older than 2024-02-05" in line
    catalog = Catalog(tmp_path / "wh2", spark)
    ingest(catalog, "wikidata", [old])
    with pytest.raises(CoverageError, match=r"newest ingested wikidatawiki dump \(20240105\) "
                                            "is older than 2024-02-05"):
        run(catalog, "stability")
        run(catalog, "snapshot", "2024-01-01T00:00:00Z")


def test_secrets_are_never_printed_or_logged(tmp_path: Path, capsys, caplog,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    secret = "s3cr3t-XYZ-never-shown"
    monkeypatch.setenv("EMERGE__S3__SECRET_ACCESS_KEY", secret)
    monkeypatch.setenv("EMERGE__S3__ACCESS_KEY_ID", "AKIA-also-hidden")
    assert main(["config"]) == 0
    out = capsys.readouterr().out
    assert secret not in out and "AKIA-also-hidden" not in out and "secret_access_key: '**********'" in out
    from emerge_lib.core.config import load_config

    cfg = load_config()
    assert secret not in repr(cfg) and secret not in str(cfg.redacted())
    assert cfg.s3.environment()["AWS_SECRET_ACCESS_KEY"] == secret  # handed to the engine only
    caplog.set_level("DEBUG")
    f = wikidata_file(tmp_path)
    assert main(["inspect", "statements", "--wikidata", str(f), "--at", AT]) == 0
    captured = capsys.readouterr()
    assert secret not in caplog.text + captured.out + captured.err
