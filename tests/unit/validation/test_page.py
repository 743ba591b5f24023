"""The checks page (emerge_lib/validation/page.py) of a release: every suite and check with
its status icon, the real run time, the failed checks first; self-contained (nothing
fetched, no script), small, and the same bytes for the same results. Files only."""

from __future__ import annotations

import re
from pathlib import Path

from hubkit import CHECKED_AT, validated_release, validation_results

from emerge_lib.formats.about import check_rows
from emerge_lib.formats.manifest import read_manifest, verify_release
from emerge_lib.validation.page import ICON_COLOURS, render_page


def test_the_page_shows_every_suite_and_check_with_its_status(tmp_path: Path) -> None:
    root = validated_release(tmp_path / "release")
    page = (root / "validation" / "index.html").read_text()
    manifest = read_manifest(root)
    assert f"EMERGE release {manifest['version']}: validation" in page
    # the verdict; no run time (a release holds nothing of the clock)
    assert "Not publishable" in page and "Run time" not in page
    suites = page[page.index("<h2>Suites</h2>"):page.index("<h2>Checks that did not pass")]
    assert re.findall(r'aria-label="([^"]+)"><title>[^<]+</title><use href="#[^"]+"/></svg>'
                      r"</td><td>([^<]+)</td><td>([^<]+)</td><td><a[^>]*>([^<]+)</a>",
                      suites) == [
        ("passed", "2024-01-01", "tables", "kg_triples"),  # in results.json's order
        ("warning", "2024-01-01", "tables", "instances"),
        ("failed", "2024-01-01", "release files", "lines"),
        ("passed", "2024-04-01", "tables", "kg_triples"),
        ("passed", "2024-04-01", "release files", "lines"),
        ("passed", "–", "human annotation", "human_lines")]
    failing = page[page.index("<h2>Checks that did not pass"):page.index("<h2>Every check")]
    assert failing.count("<tr>") == 1 + 2  # the header, the failed check and the warning
    assert "hash_id is unique per file" in failing and "missing D; present E, X" in failing
    # every status has its icon defined once, as inline SVG with its colour
    for status, colour in ICON_COLOURS.items():
        assert page.count(f'<symbol id="{status.replace(" ", "-")}"') == 1
        assert f'fill="{colour}"' in page
    assert 'id="snapshot-2024-04-01"' in page  # the card links each snapshot's checks here
    # self-contained: no script, no stylesheet, image or font from anywhere
    assert not re.search(r"<script|<link|<img|@import|url\(|src=", page)
    assert len(page.encode()) < 20_000
    # the version names the data, not the page (it states the version and a run time)
    assert verify_release(root).ok and "validation/index.html" in {
        f["path"] for f in manifest["files"]}


def test_the_same_results_give_the_same_bytes() -> None:
    results, verdict = validation_results()
    rows = check_rows(results)
    args = {"title": "t", "verdict": "v", "ok": False, "rows": rows,
            "run_times": {"2024-01-01T00:00:00Z": CHECKED_AT}}
    assert render_page(**args) == render_page(**args)
    # a warehouse snapshot's page says when its checks ran
    assert f"Run time (the tables' checks): 2024-01-01: {CHECKED_AT}." in render_page(**args)
    assert [r["status"] for r in rows].count("passed") == 5
    passed = render_page(**{**args, "ok": True, "rows": check_rows(validation_results(
        failed=False)[0])})
    assert "<h2>Checks that did not pass</h2>\n<table>" in passed  # the warning is still there
