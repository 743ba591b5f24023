"""The sample world's daily adds/changes dumps (sample.incr): Wikimedia's layout and names,
checksums that verify, and, the promise the incremental ingest is tested on, a full dump
of D0 plus the increments of D0 … D1-1 hold exactly the revisions of D1's full dump."""

from __future__ import annotations

import bz2
import gzip
import hashlib
import json
from collections import defaultdict
from pathlib import Path

import mwxml
import pytest

from emerge_lib.sample import SampleSpec, generate_world

SPEC = SampleSpec(seed=3, items=30, articles=8, revisions=1, increments=True)


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("incr") / "world"
    generate_world(out, SPEC)
    return out


def _revisions(paths: list[Path], opener=bz2.open) -> dict[int, set[int]]:
    """page id → revision ids in these files."""
    out: dict[int, set[int]] = defaultdict(set)
    for path in paths:
        for page in mwxml.Dump.from_file(opener(path)):
            out[page.id] |= {rev.id for rev in page}
    return out


def _days(world: Path, wiki: str) -> list[Path]:
    return sorted((world / "mirror" / "other" / "incr" / wiki).iterdir())


def test_each_day_has_wikimedias_files_and_they_verify(world: Path) -> None:
    dates = json.loads((world / "world.json").read_text())["dumps"]["dates"]
    for wiki in ("wikidatawiki", "enwiki"):
        days = _days(world, wiki)
        assert [d.name for d in days][0] == dates[0]
        assert len(days) == 90  # 2024-02-20 … 2024-05-19: up to the day before the newest dump
        for day in days:
            date = day.name
            pages = f"{wiki}-{date}-pages-meta-hist-incr.xml.bz2"
            stubs = f"{wiki}-{date}-stubs-meta-hist-incr.xml.gz"
            assert sorted(p.name for p in day.iterdir()) == sorted(
                [pages, stubs, f"{wiki}-{date}-md5sums.txt", "maxrevid.txt", "status.txt"])
            assert (day / "status.txt").read_text() == "done\n"
            sums = dict(line.split("  ")[::-1] for line in
                        (day / f"{wiki}-{date}-md5sums.txt").read_text().splitlines())
            assert sums == {name: hashlib.md5((day / name).read_bytes()).hexdigest()
                            for name in (pages, stubs)}


def test_full_d0_plus_the_increments_is_full_d1(world: Path) -> None:
    dates = json.loads((world / "world.json").read_text())["dumps"]["dates"]
    d0, d1 = dates[0], dates[-1]
    for wiki in ("wikidatawiki", "enwiki"):
        base = _revisions(sorted((world / "mirror" / wiki / d0).glob("*.bz2")))
        full = _revisions(sorted((world / "mirror" / wiki / d1).glob("*.bz2")))
        days = _days(world, wiki)
        increments = [_revisions([next(d.glob("*pages-meta-hist-incr.xml.bz2"))]) for d in days]
        combined: dict[int, set[int]] = defaultdict(set, {p: set(r) for p, r in base.items()})
        for day in increments:
            for page, revs in day.items():
                assert not combined[page] & revs, "a revision in two files"
                combined[page] |= revs
        assert dict(combined) == dict(full)
        new = sum(len(r) for day in increments for r in day.values())
        assert new > 20  # the planted edits around the second snapshot, at least
        assert set().union(*increments) - set(base), "no page created in an increment"
        # the stubs hold the same revisions, without text
        for day in days:
            stub = next(day.glob("*stubs*"))
            assert _revisions([stub], gzip.open) == _revisions(
                [next(day.glob("*pages*"))])
            assert "xml:space" not in gzip.decompress(stub.read_bytes()).decode()
        # maxrevid: the wiki's newest revision id by the end of the day
        newest = max(r for revs in full.values() for r in revs)
        assert int((days[-1] / "maxrevid.txt").read_text()) == newest


def test_without_the_flag_there_are_no_increments(tmp_path: Path) -> None:
    out = tmp_path / "plain"
    generate_world(out, SampleSpec(seed=3, items=30, articles=8, revisions=1))
    assert not (out / "mirror" / "other").exists()
    assert "increments" not in json.loads((out / "world.json").read_text())["dumps"]
