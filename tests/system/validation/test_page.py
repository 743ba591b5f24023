"""The checks page of a release (validation/index.html) in headless Chromium with the
network cut off: every suite is listed and every status icon is drawn in its colour (Great
Expectations' Data Docs, which fetched their styling and icons from CDNs, showed no suite
and blank icons offline)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from browserkit import dom, screenshot
from hubkit import validated_release

from emerge_lib.validation.page import ICON_COLOURS


def _rgb(colour: str) -> list[int]:
    return [int(colour[i:i + 2], 16) for i in (1, 3, 5)]


def test_the_checks_page_opens_offline_with_its_suites_and_icons(tmp_path: Path) -> None:
    import matplotlib.image as mpimg

    page = validated_release(tmp_path / "release") / "validation" / "index.html"
    text = dom(page, tmp_path / "profile", offline=True)
    for suite in ("kg_triples", "instances", "lines", "human_lines"):
        assert f">{suite}</a>" in text, suite
    shot = tmp_path / "page.png"
    screenshot(page, shot, tmp_path / "profile", size="1200,1400", offline=True)
    pixels = (mpimg.imread(shot)[..., :3] * 255).round()
    drawn = {status: int(np.all(np.abs(pixels - _rgb(colour)) <= 8, axis=-1).sum())
             for status, colour in ICON_COLOURS.items()}
    # the page's passed, warning and failed icons (8, 3 and 3 of them), each drawn
    assert drawn["passed"] > 8 * 100 and drawn["warning"] > 3 * 100 and \
        drawn["failed"] > 3 * 100, drawn
