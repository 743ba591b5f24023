"""What a run waits for (emerge_lib/pipeline/waits.py): the dump that covers a snapshot."""

from __future__ import annotations

from pathlib import Path


def test_the_dump_that_covers_a_snapshot(tmp_path: Path) -> None:
    """The earliest dump listed for both wikis at or after the snapshot's last window end
    (2024-04-01 + 5 weeks = 2024-05-06): the configured dates
    first, else the mirror's folders; none listed is said with what is there."""
    from emerge_lib.core.config import load_config
    from emerge_lib.pipeline.waits import covering_dump

    mirror = tmp_path / "mirror"
    for wiki, dates in (("wikidatawiki", ("20240501", "20240520", "20240601")),
                        ("enwiki", ("20240501", "20240601"))):
        for date in dates:
            (mirror / wiki / date).mkdir(parents=True)
    listed = load_config(overrides={"dumps": {"mirror": mirror.as_uri()}})
    date, words = covering_dump(listed, "2024-04-01T00:00:00Z")
    assert date == "20240601"  # 20240520 is wikidata's alone
    assert "from 20240506 or later" in words
    date, words = covering_dump(listed, "2024-07-01T00:00:00Z")
    assert date is None
    assert "from 20240805 or later" in words and "lists: 20240501, 20240601" in words
    configured = load_config(overrides={"dumps": {
        "mirror": mirror.as_uri(), "wikidata": {"wiki": "wikidatawiki", "dates": ["20240515"]},
        "wikipedia": {"wiki": "enwiki", "dates": ["20240515", "20240601"]}}})
    assert covering_dump(configured, "2024-04-01T00:00:00Z")[0] == "20240515"
    date, words = covering_dump(configured, "2024-07-01T00:00:00Z")
    assert date is None and "the configured dump dates: 20240515" in words
