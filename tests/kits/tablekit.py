"""Hand-made timeline rows for the engine tier: statements, items, paragraphs and pages
dated in days from t = 2024-01-01 (the snapshot of the focused tests), and ``put``, which
writes hand-made rows of any table through the catalog."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from emerge_lib.catalog import Catalog, spec

T0 = datetime(2024, 1, 1, tzinfo=UTC)
T = "2024-01-01T00:00:00Z"


def day(n: float) -> datetime:
    return T0 + timedelta(days=n)


def stmt(s: str, p: str, o: str, start: float, end: float | None, *, sid: str = "a",
         rank: str = "normal", end_at: float | None = None,
         start_at: float | None = None) -> dict[str, Any]:
    """A statement version; ``end_at``/``start_at``: a P582 end / P580 start qualifier dated
    that day."""
    quals = [{"pid": pid, "kind": "time", "time": "t", "precision": 11, "instant": day(at),
              "item": None} for pid, at in (("P580", start_at), ("P582", end_at)) if at is not None]
    return {"s": s, "p": p, "o": o, "statement_id": f"{s}${p}{o}{sid}", "rank": rank,
            "version_hash": f"{s}{p}{o}{sid}{rank}{start}{end_at}{start_at}", "qualifiers": quals,
            "valid_from": day(start), "valid_to": None if end is None else day(end),
            "rev_from": int((start + 200) * 10), "rev_to": None, "s_bucket": 0}


def item_row(qid: str, start: float, end: float | None, title: str | None, rev: int,
             created: float = -100) -> dict[str, Any]:
    return {"qid": qid, "valid_from": day(start), "valid_to": None if end is None else day(end),
            "rev_from": rev, "enwiki_title": title, "label_en": f"label {qid}",
            "description_en": None, "created_at": day(created), "redirect_to": None, "qid_bucket": 0}


def paragraph(page: int, key: str, text: str, first: float, removed: float | None,
              links: list[tuple[str, str]], markup: float = 0.1, idx: int = 0) -> dict[str, Any]:
    mentions = []
    for anchor, target in links:
        start = text.index(anchor)
        mentions.append({"start": start, "end": start + len(anchor), "anchor": anchor,
                         "target": target})
    return {"page_id": page, "paragraph_hash": key, "paragraph_idx": idx, "text": text,
            "mentions": mentions, "tokens": len(text.split()), "markup_ratio": markup,
            "first_seen_rev": int(first * 100) + page * 10_000, "first_seen_at": day(first),
            "removed_rev": None if removed is None else int(removed * 100) + page * 10_000,
            "removed_at": None if removed is None else day(removed)}


def words(n: int, *names: str) -> str:
    """A paragraph of exactly ``n`` whitespace tokens holding ``names``."""
    taken = sum(len(name.split()) for name in names)
    return " ".join([*names, *(f"w{i}" for i in range(n - taken))])


def page_row(page: int, title: str, redirect_target: str | None = None) -> dict[str, Any]:
    return {"page_id": page, "title": title, "valid_from": day(-100), "valid_to": None,
            "rev_from": page, "rev_to": None, "is_redirect": redirect_target is not None,
            "redirect_target": redirect_target}


def put(cat: Catalog, name: str, rows: list[dict[str, Any]]) -> None:
    """Write hand-made rows through the catalog, one snapshot (and its windows) at a time."""
    for snap in sorted({r["snapshot"] for r in rows}):
        mine = cat.frame(name, [r for r in rows if r["snapshot"] == snap])
        if "window" in spec(name).partition_by:
            windows = sorted({r["window"] for r in rows if r["snapshot"] == snap})
            cat.replace_partitions(name, mine, {"snapshot": snap}, "window", windows)
        else:
            cat.replace_partition(name, mine, {"snapshot": snap})
