"""The ingest on generated worlds: two dump dates in turn equal a fresh ingest of the
newer one (both wikis), the planted passages' first appearances are where the truth says,
`emerge ingest` reads the configured mirror, and the C entity scanner leaves the staged
rows as the Python path makes them."""

from __future__ import annotations

import hashlib
import json
from datetime import datetime
from pathlib import Path

import pytest
from ingestkit import ingest_wikidata, ingest_wikipedia, same_rows_both_ways, snapshot_of, state, ts

from emerge_lib.catalog import Catalog
from emerge_lib.ingest.wikipedia.coverage import require_coverage, snapshot_range


def _rows_without_format(catalog: Catalog, name: str) -> list[str]:
    """A table's rows, sorted, with the file format taken out (``dump_file`` names end in
    .7z or .bz2; the compressed size, its sha1 and the timings differ by nature)."""
    rows = []
    for row in catalog.read_arrow(name).to_pylist():
        for key in ("bytes", "sha1", "seconds", "ingested_at"):
            row.pop(key, None)
        if row.get("dump_file"):
            row["dump_file"] = row["dump_file"].rsplit(".", 1)[0]
        rows.append(repr(sorted(row.items())))
    assert rows, name
    return sorted(rows)


def test_generated_world_incremental_equals_fresh(sample_world: Path, tmp_path: Path,
                                                  spark) -> None:
    """Two dump dates ingested in turn give the tables a fresh ingest of the newer one gives."""
    mirror = sample_world / "mirror" / "wikidatawiki"
    dates = sorted(p.name for p in mirror.iterdir())
    assert len(dates) >= 2
    older = sorted((mirror / dates[0]).glob("*.bz2"))
    newer = sorted((mirror / dates[-1]).glob("*.bz2"))
    incremental = Catalog(tmp_path / "wh-inc", spark)
    ingest_wikidata(incremental, older, workers=2)
    report = ingest_wikidata(incremental, newer, workers=2)
    fresh = Catalog(tmp_path / "wh-fresh", spark)
    fresh_report = ingest_wikidata(fresh, newer, workers=2)
    assert snapshot_of(incremental) == snapshot_of(fresh)

    def rejected(catalog: Catalog) -> set[tuple]:
        return {(r["page_id"], r["rev_id"], r["reason"])
                for r in catalog.read_arrow("ingest_rejects").to_pylist()}

    # the world plants deleted revisions; each is quarantined once, by the dump that had it first
    assert fresh_report.rejects > 0
    assert rejected(incremental) == rejected(fresh)
    # the incremental pass decoded far fewer revisions than a fresh one
    decoded = sum(f.decoded for f in report.files)
    assert decoded < 0.6 * sum(f.decoded for f in fresh_report.files)


def test_emerge_ingest_reads_the_configured_mirror(sample_world: Path, tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    from emerge_lib.cli import main

    args = ["ingest", "-c", str(sample_world / "config.yaml"), "--warehouse", str(tmp_path / "wh"),
            "--workers", "1"]
    assert main(args) == 0
    assert str(tmp_path / "wh") in capsys.readouterr().out
    catalog = Catalog(tmp_path / "wh")
    mirror = sample_world / "mirror"
    files = catalog.read_arrow("ingested_files").to_pylist()
    # the mirror publishes bz2 and 7z; dumps.prefer (7z by default) chooses
    assert {(r["wiki"], r["dump_file"]) for r in files} == {
        (p.parent.parent.name, p.name) for p in mirror.glob("*/*/*.7z")}
    # each file's sha1 is the one the mirror publishes (dumpstatus.json), and is the file's
    published = {name: entry["sha1"] for status in mirror.glob("*/*/dumpstatus.json")
                 for job in json.loads(status.read_text())["jobs"].values()
                 for name, entry in job.get("files", {}).items()}
    assert {r["dump_file"]: r["sha1"] for r in files} == {r["dump_file"]: published[r["dump_file"]]
                                                          for r in files}
    some = next(mirror.glob("*/*/*.7z"))
    assert published[some.name] == hashlib.sha1(some.read_bytes()).hexdigest()
    sizes = {n: catalog.read_arrow(n).num_rows
             for n in ("statement_timeline", "paragraph_timeline", "ingest_rejects")}
    assert all(sizes.values())
    versions = {n: catalog.version(n) for n in sizes}
    assert main(args) == 0  # a rerun reads and commits nothing
    assert {n: catalog.read_arrow(n).num_rows for n in sizes} == sizes
    assert {n: catalog.version(n) for n in sizes} == versions
    # ... nor does one that prefers bz2: the files are held, as 7z
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("EMERGE__DUMPS__PREFER", "bz2")
        assert main(args) == 0
    assert {n: catalog.version(n) for n in sizes} == versions

    # the same dumps read from bz2 give the same tables
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("EMERGE__DUMPS__PREFER", "bz2")
        assert main([*args[:3], "--warehouse", str(tmp_path / "wh-bz2"), *args[5:]]) == 0
    from_bz2 = Catalog(tmp_path / "wh-bz2")
    read = {(r["wiki"], r["dump_file"]) for r in from_bz2.read_arrow("ingested_files").to_pylist()}
    assert read == {(p.parent.parent.name, p.name) for p in mirror.glob("*/*/*.bz2")}
    for name in ("statement_timeline", "item_timeline", "property_timeline", "page_timeline",
                 "paragraph_timeline", "paragraph_coverage", "page_watermarks",
                 "ingest_rejects", "stable_statements", "ingested_files"):
        assert _rows_without_format(from_bz2, name) == _rows_without_format(catalog, name), name


# -- the generated sample world (emerge_lib.sample) ------------------------------------------
def test_generated_world_incremental_equals_fresh_and_carries_the_truth(
        sample_world: Path, tmp_path: Path, spark) -> None:
    """Two dump dates in turn equal a fresh ingest of the newer one; every planted passage
    has a run that starts when the truth says it first appeared; reverted vandalism is a
    run shorter than the 30-minute passage rule."""
    import json

    from emerge_lib.core.config import load_config

    cfg = load_config(sample_world / "config.yaml")
    world = {"snapshots": [t.isoformat() for t in cfg.snapshots.timestamps],
             "windows": cfg.snapshots.windows, "window_days": cfg.snapshots.window_days}
    mirror = sample_world / "mirror" / "enwiki"
    dates = sorted(p.name for p in mirror.iterdir())
    older, newer = (sorted((mirror / d).glob("*.bz2")) for d in (dates[0], dates[-1]))
    incremental = Catalog(tmp_path / "wp-inc", spark)
    ingest_wikipedia(incremental, older, **world, workers=2, max_reject_ratio=0.05)
    report = ingest_wikipedia(incremental, newer, **world, workers=2, max_reject_ratio=0.05)
    assert sum(f.unchanged_pages for f in report.files) > 0
    fresh = Catalog(tmp_path / "wp-fresh", spark)
    ingest_wikipedia(fresh, newer, **world, workers=2, max_reject_ratio=0.05)
    assert state(incremental) == state(fresh)
    for plan in cfg.plans():
        require_coverage(fresh, *snapshot_range(plan, cfg.stability.passage_minutes))

    first_seen: dict[tuple[int, str], datetime] = {}
    lasted: dict[tuple[int, str], list[float]] = {}
    for r in fresh.read_arrow("paragraph_timeline").to_pylist():
        key = (r["page_id"], r["text"])
        first_seen[key] = min(first_seen.get(key, r["first_seen_at"]), r["first_seen_at"])
        if r["removed_at"] is not None:
            lasted.setdefault(key, []).append((r["removed_at"] - r["first_seen_at"]).total_seconds())
        assert all(r["text"][m["start"]:m["end"]] == m["anchor"] for m in r["mentions"])
    truth = [json.loads(x) for x in (sample_world / "truth.jsonl").read_text().splitlines()]
    planted = {(t["page_id"], t["paragraph"], t["paragraph_first_seen"]) for t in truth if t["paragraph"]}
    assert planted
    assert {(p, text, first_seen.get((p, text))) for p, text, _ in planted} == {
        (p, text, ts(when)) for p, text, when in planted}
    traps = [json.loads(x) for x in (sample_world / "traps.jsonl").read_text().splitlines()]
    vandalism = [(t["page_id"], t["paragraph"]) for t in traps if t["kind"] == "vandalism-reverted"]
    assert vandalism
    for key in vandalism:
        assert lasted[key] and max(lasted[key]) < 30 * 60


def test_extractor_rows_are_the_same_without_the_scanner(sample_world: Path,
                                                         tmp_path: Path) -> None:
    files = sorted(sample_world.glob("mirror/wikidatawiki/*/*pages-meta-history*"))
    assert len(files) >= 2
    same_rows_both_ways(files, tmp_path)
