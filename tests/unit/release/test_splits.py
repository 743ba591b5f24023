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
