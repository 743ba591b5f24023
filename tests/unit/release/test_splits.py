"""The leak-free splits' assignment (emerge_lib/release/splits.py): planted lines, exact
splits, every line in one split or counted out."""

from __future__ import annotations

from emerge_lib.release.splits import ARTICLE_IN_TEST, NO_ARTICLE, assign, validation_article


def test_test_is_the_draw_and_its_articles_other_lines_are_left_out() -> None:
    lines = [("t1", 1), ("t1-repeat", 1), ("t1-other-snapshot", 1), ("x", 2), ("x-repeat", 2),
             ("y", 3), ("t4", 4), ("orphan", None)]
    split_of, left = assign(lines, {"t1", "t4"}, 0.5)
    expect = {3: "validation" if validation_article(3, 0.5) else "train",
              2: "validation" if validation_article(2, 0.5) else "train"}
    assert split_of == {"t1": "test", "t4": "test", "x": expect[2], "x-repeat": expect[2],
                        "y": expect[3]}
    assert left == {ARTICLE_IN_TEST: 2, NO_ARTICLE: 1}
    assert len(split_of) + sum(left.values()) == len(lines)  # every line placed or counted


def test_the_validation_share_is_a_share_of_articles_and_stable() -> None:
    pages = range(1, 4001)
    share = sum(validation_article(p, 0.1) for p in pages) / len(pages)
    assert 0.08 < share < 0.12
    assert [validation_article(p, 0.1) for p in pages] == [validation_article(p, 0.1)
                                                             for p in pages]
    assert not any(validation_article(p, 0.0) for p in pages)
    assert all(validation_article(p, 1.0) for p in pages)


def test_one_snapshot_at_a_time_gives_every_snapshot_at_once() -> None:
    """A snapshot's lines split alone (as a release's unit splits them), given the articles
    drawn into test in any snapshot, land where the lines of every snapshot at once put
    them: an article drawn in A keeps its B lines out; the joined counts refuse a leak."""
    from collections import Counter

    import pytest

    from emerge_lib.release.splits import SnapshotSplits, merge_splits
    from emerge_lib.release.windows import ReleaseError

    a = [("a-t1", 1), ("a-x", 2)]
    b = [("b-1", 1), ("b-x", 2), ("b-y", 3), ("b-none", None)]
    together, left = assign(a + b, {"a-t1"}, 0.5)
    alone = [assign(lines, {"a-t1"}, 0.5, test_pages={1}) for lines in (a, b)]
    assert {**alone[0][0], **alone[1][0]} == together
    assert alone[0][1] + alone[1][1] == left == {ARTICLE_IN_TEST: 1, NO_ARTICLE: 1}
    assert "b-1" not in alone[1][0]  # without test_pages, B alone would have trained on it
    assert "b-1" in assign(b, {"a-t1"}, 0.5)[0]
    rows = {"parquet/splits/snapshot_2024-01-01/train.parquet": 2,
            "parquet/splits/snapshot_2024-01-01/test.parquet": 1}
    counts, written = merge_splits([
        SnapshotSplits(rows, Counter({NO_ARTICLE: 1}),
                       {"train": {2, 3}, "validation": set(), "test": {1}}),
        SnapshotSplits({}, Counter({NO_ARTICLE: 2}),
                       {"train": {3, 4}, "validation": set(), "test": set()})])
    assert written == rows and counts.lines == {"train": 2, "validation": 0, "test": 1}
    assert counts.articles == {"train": 3, "validation": 0, "test": 1}
    assert counts.excluded == {NO_ARTICLE: 3}
    with pytest.raises(ReleaseError, match="splits share articles"):
        merge_splits([SnapshotSplits({}, Counter(), {"train": {5}, "validation": set(),
                                                     "test": {5}})])
