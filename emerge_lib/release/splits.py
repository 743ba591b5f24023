"""The release's leak-free splits: ``train``, ``validation`` and ``test``, disjoint by
article, written as the lines' typed Parquet per snapshot (``parquet/splits/``).

The corpus-wide files do not make splits: the evaluation set is a draw from the corpus
(every ``test`` line is also a corpus line), a passage repeats in every cumulative window
after the one it appeared in, and one article has lines in several windows and snapshots.
A model fitted on the corpus and scored on the evaluation set is scored on what it saw.

- ``test`` is the authors' stratified draw as it is (``evaluation_set/``): the paper's
  numbers are computed on it, so it is kept whole rather than thinned;
- every other line whose article (``anchor_page_id``) has no line in ``test``, in any
  snapshot, goes to ``validation`` when a hash of its page_id falls under
  ``release.splits.validation_share`` and to ``train`` otherwise: an article's lines, its
  passages' cumulative-window repeats included, all land in one split;
- the other lines, those of an article in ``test`` that were not drawn (the draw's
  cumulative-window repeats among them), are left out of every split and counted
  (``excluded``: ``article in test``).

Inside a snapshot's file the lines are in time order: window, then the revision the
paragraph first appeared in, then ``hash_id``. The splits are a pure function of the
release's lines: the same lines give the same bytes.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from emerge_lib.core.config import SplitSettings
from emerge_lib.formats.layout import SPLITS, split_path
from emerge_lib.formats.schema import LINE_SCHEMA, write_table
from emerge_lib.release._atomic import atomic_file
from emerge_lib.release.windows import ReleaseError

#: why a corpus line is in no split
ARTICLE_IN_TEST = "article in test"
NO_ARTICLE = "no article"
#: time order inside a snapshot's split file
ORDER = [("window", "ascending"), ("revision_timestamp", "ascending"),
         ("hash_id", "ascending")]


def validation_article(page_id: int, share: float) -> bool:
    """Does the article ``page_id`` go to validation (rather than train)? A hash of the
    page_id, so the same article goes to the same split in every release."""
    digest = hashlib.sha256(f"emerge-split:{page_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big") < share * 2**64


@dataclass
class SplitCounts:
    """What the splits hold: lines and articles per split, lines left out per reason."""

    lines: dict[str, int] = field(default_factory=lambda: dict.fromkeys(SPLITS, 0))
    articles: dict[str, int] = field(default_factory=lambda: dict.fromkeys(SPLITS, 0))
    excluded: dict[str, int] = field(default_factory=dict)

    def record(self) -> dict[str, dict[str, int]]:
        """The manifest's and release.json's ``splits``."""
        return {"lines": dict(self.lines), "articles": dict(self.articles),
                "excluded": dict(sorted(self.excluded.items()))}


def assign(lines: Sequence[tuple[str, int | None]], test: set[str], share: float, *,
           test_pages: set[int] | None = None) -> tuple[dict[str, str], Counter[str]]:
    """(hash_id, page_id) of every corpus line and the hash_ids drawn into ``test`` →
    hash_id → split of the lines in a split, and the lines left out per reason.
    ``test_pages``: the articles of the corpus lines in ``test``, of every snapshot (by
    default those among ``lines``; :func:`drawn` finds them when ``lines`` are one
    snapshot's)."""
    if test_pages is None:
        test_pages = {page for hid, page in lines if hid in test and page is not None}
    out: dict[str, str] = {}
    left: Counter[str] = Counter()
    for hid, page in lines:
        if hid in test:
            out[hid] = "test"
        elif page is None:
            left[NO_ARTICLE] += 1
        elif page in test_pages:
            left[ARTICLE_IN_TEST] += 1
        else:
            out[hid] = "validation" if validation_article(page, share) else "train"
    return out, left


def _read(files: Sequence[Path], columns: Sequence[str] | None = None) -> pa.Table:
    tables = [pq.read_table(f, columns=columns) for f in files]
    if not tables:
        schema = LINE_SCHEMA if columns is None else pa.schema(
            [LINE_SCHEMA.field(c) for c in columns])
        return schema.empty_table()
    return pa.concat_tables(tables)


def drawn(out: Path, corpus: Sequence[str], evaluation: Sequence[str]
          ) -> tuple[set[str], set[int]]:
    """The hash_ids drawn into ``test`` (every evaluation-set line) and the articles of
    the corpus lines among them, of every snapshot: all a snapshot's splits need from the
    others (``corpus``, ``evaluation``: the lines' Parquet twins, release-relative). Two
    columns read, the lines in test found by Arrow, not row by row in Python."""
    test = set(_read([out / f for f in evaluation], ["hash_id"]).column("hash_id").to_pylist())
    keys = _read([out / f for f in corpus], ["hash_id", "anchor_page_id"])
    found = keys.filter(pc.is_in(keys.column("hash_id"), value_set=pa.array(
        sorted(test), keys.schema.field("hash_id").type)))
    return test, set(found.column("anchor_page_id").drop_null().to_pylist())


@dataclass
class SnapshotSplits:
    """What one snapshot's splits hold: the files written with their rows, the lines left
    out per reason and the articles per split (joined over the snapshots: an article's
    lines are in one split in all of them)."""

    written: dict[str, int]
    excluded: Counter[str]
    pages: dict[str, set[int]]


def write_snapshot_splits(out: Path, snapshot: str, files: Sequence[str], test: set[str],
                          test_pages: set[int], settings: SplitSettings) -> SnapshotSplits:
    """``snapshot``'s split files under ``out``, from its corpus lines' Parquet twins
    (``files``) and :func:`drawn`'s ``test`` and ``test_pages`` of every snapshot."""
    lines = _read([out / f for f in files])
    hids = lines.column("hash_id").to_pylist()
    split_of, left = assign(list(zip(hids, lines.column("anchor_page_id").to_pylist(),
                                     strict=True)), test, settings.validation_share,
                            test_pages=test_pages)
    which = pa.array([split_of.get(h) for h in hids], pa.string())
    pages: dict[str, set[int]] = {s: set() for s in SPLITS}
    for hid, page in zip(hids, lines.column("anchor_page_id").to_pylist(), strict=True):
        if hid in split_of:
            pages[split_of[hid]].add(page)
    written: dict[str, int] = {}
    for split in SPLITS:
        part = lines.filter(pc.equal(which, split)).sort_by(ORDER) if lines.num_rows else lines
        rel = split_path(snapshot, split)
        with atomic_file(out / rel) as tmp:
            written[rel] = write_table(tmp, part)
    return SnapshotSplits(written, left, pages)


def merge_splits(parts: Sequence[SnapshotSplits]) -> tuple[SplitCounts, dict[str, int]]:
    """Every snapshot's splits (in snapshot order) → the counts and the files with their
    rows; an article in two splits is refused."""
    counts = SplitCounts()
    left: Counter[str] = Counter()
    pages: dict[str, set[int]] = {s: set() for s in SPLITS}
    written: dict[str, int] = {}
    for part in parts:
        left.update(part.excluded)
        for split in SPLITS:
            pages[split] |= part.pages[split]
        written.update(part.written)
        for rel, rows in part.written.items():
            counts.lines[rel.rsplit("/", 1)[-1].removesuffix(".parquet")] += rows
    shared = [(a, b) for i, a in enumerate(SPLITS) for b in SPLITS[i + 1:]
              if pages[a] & pages[b]]
    if shared:  # assign() makes this impossible; a release must never ship a leak
        raise ReleaseError(f"splits share articles: {shared}")
    counts.excluded = dict(left)
    counts.articles = {s: len(pages[s]) for s in SPLITS}
    return counts, written
