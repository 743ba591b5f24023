"""The sample world's logging dumps (sample.logdump): Wikimedia's name, job and checksums,
a format an independent reader (mwxml) parses, the planted events up to each run's date,
and the planted pages absent from (or back in) the full dumps exactly as the log says."""

from __future__ import annotations

import bz2
import gzip
import json
from pathlib import Path

import mwxml
import pytest

from emerge_lib.dumps.mirror import Mirror
from emerge_lib.ingest.reconcile import read_logging
from emerge_lib.sample import SampleSpec, generate_world

SPEC = SampleSpec(seed=3, items=30, articles=8, revisions=1, logging=True)


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("logdump") / "world"
    generate_world(out, SPEC)
    return out


def _page_ids(folder: Path) -> set[int]:
    out: set[int] = set()
    for path in folder.glob("*.bz2"):
        out |= {page.id for page in mwxml.Dump.from_file(bz2.open(path))}
    return out


def test_each_run_publishes_its_logging_dump(world: Path) -> None:
    about = json.loads((world / "world.json").read_text())
    planted = about["logging"]
    old, new = about["dumps"]["dates"][0], about["dumps"]["dates"][-1]
    mirror = Mirror((world / "mirror").as_uri())
    seen = {}
    for wiki in ("wikidatawiki", "enwiki"):
        for date in (old, new):
            [f] = mirror.logging_dump(wiki, date)
            assert f.name == f"{wiki}-{date}-pages-logging.xml.gz"
            path = mirror.local_path(f, verify=True)  # size and checksum as published
            sums = (world / "mirror" / wiki / date / f"{wiki}-{date}-md5sums.txt").read_text()
            assert f"{f.md5}  {f.name}\n" in sums
            items = list(mwxml.Dump.from_file(gzip.open(path)).log_items)
            ours = read_logging(path)
            assert [(i.id, i.type, i.action, i.page.title if i.page else None)
                    for i in items] == [(i.log_id, i.type, i.action, i.title) for i in ours]
            assert all(i.ts < _day(date) for i in ours)
            seen[(wiki, date)] = {(i.type, i.action, i.title): i.log_id for i in ours}
    deleted = {(r["wiki"], r["title"]) for r in planted["deleted"]}
    restored = {r["title"] for r in planted["restored"]}
    moved = planted["moved"][0]
    for (wiki, date), events in seen.items():
        got = {(t, a, title) for t, a, title in events if (wiki, title) in deleted
               or title in restored or title == moved["from"]}
        want = {("delete", "delete", t) for w, t in deleted if w == wiki and date == new}
        if wiki == "enwiki":
            want |= {("delete", "delete", t) for t in restored}  # before the older dump
            if date == new:
                want |= {("delete", "restore", t) for t in restored}
                want.add(("move", "move", moved["from"]))
        assert got == want, (wiki, date)
    # an event keeps its id in every run
    for wiki in ("wikidatawiki", "enwiki"):
        assert seen[(wiki, old)].items() <= seen[(wiki, new)].items()


def test_the_full_dumps_agree_with_the_log(world: Path) -> None:
    about = json.loads((world / "world.json").read_text())
    old, new = about["dumps"]["dates"][0], about["dumps"]["dates"][-1]
    planted = about["logging"]
    ids = {(w, d): _page_ids(world / "mirror" / w / d)
           for w in ("wikidatawiki", "enwiki") for d in (old, new)}
    for r in planted["deleted"]:
        assert r["page_id"] in ids[(r["wiki"], old)] and r["page_id"] not in ids[(r["wiki"], new)]
    for r in planted["restored"]:
        assert r["page_id"] not in ids[("enwiki", old)] and r["page_id"] in ids[("enwiki", new)]
    moved = planted["moved"][0]
    assert moved["page_id"] in ids[("enwiki", old)] and moved["page_id"] in ids[("enwiki", new)]
    # each dump names the moved page as it was titled then
    for date, title in ((old, moved["from"]), (new, moved["title"])):
        titles = {page.id: page.title for path in (world / "mirror" / "enwiki" / date).glob("*.bz2")
                  for page in mwxml.Dump.from_file(bz2.open(path))}
        assert titles[moved["page_id"]] == title, date


def _day(date: str):
    from datetime import UTC, datetime

    return datetime.strptime(date, "%Y%m%d").replace(tzinfo=UTC)
