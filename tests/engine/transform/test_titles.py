"""Title resolution on hand-written timelines: loops, hops, duplicate titles, item rules."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from emerge_lib.catalog import Catalog
from emerge_lib.transform.titles import resolve_titles, status_counts


def d(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


def page(page_id: int, title: str, target: str | None = None, start: str = "2020-01-01",
         end: str | None = None, redirect: bool | None = None) -> dict:
    return {"page_id": page_id, "title": title, "valid_from": d(start),
            "valid_to": d(end) if end else None, "rev_from": page_id * 10, "rev_to": None,
            "is_redirect": target is not None if redirect is None else redirect,
            "redirect_target": target}


def item(qid: str, title: str, redirect_to: str | None = None) -> dict:
    return {"qid": qid, "valid_from": d("2019-01-01"), "valid_to": None, "rev_from": 1,
            "enwiki_title": title, "label_en": None, "description_en": None,
            "created_at": None, "redirect_to": redirect_to, "qid_bucket": 0}


@pytest.fixture()
def world(catalog: Catalog) -> Catalog:
    catalog.merge("page_timeline", catalog.frame("page_timeline", [
        page(1, "Loop A", "Loop B"), page(2, "Loop B", "Loop A"), page(3, "Self", "Self"),
        page(4, "Chain 1", "Chain 2"), page(5, "Chain 2", "Chain 3"), page(6, "Chain 3", "End"),
        page(7, "End"),
        # two pages hold "Dup" from 2021 on (the older one's end was never seen): the newer wins
        page(8, "Dup", "End"), page(9, "Dup", start="2021-01-01"),
        page(10, "Lonely"),
        page(11, "Out", redirect=True),  # a redirect out of the article namespace
    ]))
    catalog.merge("item_timeline", catalog.frame("item_timeline", [
        item("Q7", "End"), item("Q70", "End"), item("Q9", "Dup"),
        item("Q99", "Lonely", redirect_to="Q7"),  # a merged item: not a sitelink holder
    ]))
    return catalog


def resolve(catalog: Catalog, titles: list[str], tau: str, max_hops: int = 5) -> set[tuple]:
    frame = catalog.spark.createDataFrame([(t,) for t in titles], "title string")
    rows = resolve_titles(catalog, frame, tau=tau, max_hops=max_hops).collect()
    assert len(rows) == len(set(titles))  # one row per distinct title, never multiplied
    return {(r.title, r.qid, r.status, r.hops) for r in rows}


def test_statuses_as_of_tau(world: Catalog) -> None:
    titles = ["Loop A", "Self", "Chain 1", "Dup", "Lonely", "Missing", "End", "Out", "End"]
    assert resolve(world, titles, "2022-01-01T00:00:00Z") == {
        ("Loop A", None, "redirect_loop", 1),  # A → B, and B points back to A
        ("Self", None, "redirect_loop", 0),
        ("Chain 1", "Q7", "ok", 3),
        ("Dup", "Q9", "ok", 0),  # page 9, an article
        ("Lonely", None, "no_item", 0),
        ("Missing", None, "no_page", 0),
        ("End", "Q7", "ok", 0),  # Q7 and Q70 share the sitelink: the lower id wins
        ("Out", None, "dead_end", 0),
    }
    # before page 9 existed, "Dup" was page 8's redirect to End
    assert resolve(world, ["Dup"], "2020-06-01T00:00:00Z") == {("Dup", "Q7", "ok", 1)}
    # before any page existed
    assert resolve(world, ["End"], "2019-06-01T00:00:00Z") == {("End", None, "no_page", 0)}


def test_hop_limit_is_counted_not_guessed(world: Catalog) -> None:
    got = resolve(world, ["Chain 1", "Chain 2"], "2022-01-01T00:00:00Z", max_hops=2)
    assert got == {("Chain 1", None, "too_many_hops", 2), ("Chain 2", "Q7", "ok", 2)}
    assert resolve(world, ["Chain 3"], "2022-01-01T00:00:00Z", max_hops=0) == {
        ("Chain 3", None, "too_many_hops", 0)}


def test_each_row_can_carry_its_own_tau(world: Catalog) -> None:
    frame = world.spark.createDataFrame(
        [("Dup", d("2020-06-01")), ("Dup", d("2022-01-01")), ("Missing", d("2022-01-01"))],
        "title string, tau timestamp")
    resolved = resolve_titles(world, frame, max_hops=5)
    got = {(r.title, r.tau.astimezone(UTC), r.qid, r.status) for r in resolved.collect()}
    assert got == {("Dup", d("2020-06-01"), "Q7", "ok"), ("Dup", d("2022-01-01"), "Q9", "ok"),
                   ("Missing", d("2022-01-01"), None, "no_page")}
    assert status_counts(resolved) == {"ok": 2, "no_page": 1, "no_item": 0, "redirect_loop": 0,
                                       "dead_end": 0, "too_many_hops": 0}
    with pytest.raises(ValueError, match="tau"):
        resolve_titles(world, world.spark.createDataFrame([("x",)], "title string"), max_hops=5)
