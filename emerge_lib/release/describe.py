"""What states a release's version, written in one order by the build and by a
re-description after files were added to a written release (``emerge annotate import``):

1. the version: the hash of every file but those that state it
   (``emerge_lib.formats.manifest.content_version``), the card's plots and release.json
   included, so those are written first (the caller's :func:`~emerge_lib.formats.card.prepare`);
2. ``croissant.json``;
3. the validation verdict, which may check croissant.json with mlcroissant (``judge``);
4. the card's text (README.md, card.html) and the validation page (validation/index.html,
   when validation/results.json is one of the files), which state the version and the
   verdict;
5. the manifest, last.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from emerge_lib.formats.card import CardFacts, Prepared, prepare
from emerge_lib.formats.card import render as render_card
from emerge_lib.formats.croissant import write_croissant
from emerge_lib.formats.layout import (
    CARD,
    CARD_HTML,
    CROISSANT,
    KG_SNAPSHOT_TABLES,
    LISTING,
    PLOTS,
    VALIDATION_PAGE,
    VALIDATION_RESULTS,
    kg_parquet_path,
)
from emerge_lib.formats.manifest import (
    SELF_DESCRIBING,
    content_version,
    file_entries,
    write_manifest,
)
from emerge_lib.release.windows import ReleaseError
from emerge_lib.validation.page import write_release_page
from emerge_lib.validation.validate import check_croissant, settle

#: a file's manifest entry (path, bytes, sha256, rows), by path
Entries = Mapping[str, Mapping[str, Any]]
#: the validation verdict of the release, given its files' entries (croissant.json among
#: them, written): the manifest's ``validation``
Judge = Callable[[Entries], dict[str, Any]]


def validation_line(verdict: Mapping[str, Any]) -> str:
    """The card's one line on the verdict."""
    if verdict.get("success"):
        return ("Every snapshot passed its table suites on the rows released, the release "
                "files passed theirs, and croissant.json validates with mlcroissant: "
                "every check in validation/index.html (a page that opens offline) and "
                "validation/results.json.")
    return f"Not publishable: {verdict.get('reason', 'a suite failed')}."


def describe(out: Path, prepared: Prepared, files: Sequence[str], record: Mapping[str, Any],
             judge: Judge, carried: Entries | None = None) -> dict[str, Any]:
    """Steps 1-5 of the module docstring for the release in ``out``, whose files are
    ``files`` (the self-describing ones included); ``record``: the manifest's account of
    what made the release (``code_version``, ``settings``, ``settings_sha256``, ``history`` or ``dumps``,
    ``curation.judges``), to which the verdict and the card's rows are added;
    ``carried``: the entries of files carried over, verified as they were (not hashed
    again). Returns the manifest written."""
    known = {e["path"]: e for e in file_entries(out, [f for f in files
                                                      if f not in SELF_DESCRIBING],
                                                known=carried)}
    version = content_version(known.values())
    settings = dict(record.get("settings") or {})
    dumps, history = list(record.get("dumps") or []), list(record.get("history") or [])
    judges = list((record.get("curation") or {}).get("judges") or [])
    write_croissant(out, list(known.values()), version=version, settings=settings,
                    dumps=dumps, history=history, snapshots=prepared.snapshots, judges=judges)
    verdict = judge(known)
    meta = {**record, "validation": verdict, "card": [s.row() for s in prepared.stats]}
    render_card(out, prepared, validation_line(verdict), CardFacts(
        version=version, code_version=meta.get("code_version"), settings=settings,
        settings_sha256=meta.get("settings_sha256"), dumps=dumps, history=history,
        judges=judges,
        gold=(record.get("curation") or {}).get("gold"), validation=verdict))
    if VALIDATION_PAGE in files:
        write_release_page(out, verdict, version, validation_line(verdict))
    manifest = write_manifest(out, files, meta=meta, known=known)
    if manifest["version"] != version:  # the card and croissant.json state it
        raise ReleaseError(f"release {out}: its version changed while the card was written "
                           f"({version} → {manifest['version']})")
    return manifest


@contextmanager
def rewriting(out: Path) -> Iterator[None]:
    """Hold the release folder's lock (the one a build's writer holds while it swaps a
    release into place) while a command rewrites files of ``out`` in place: an import
    beside a rebuild or another import would otherwise lose one of the two writes."""
    from emerge_lib.release._atomic import release_lock

    with release_lock(out):
        yield


def describe_again(out: Path, paths: Sequence[str], meta: Mapping[str, Any]) -> dict[str, Any]:
    """:func:`describe` of a written release after files were added to it (``emerge
    annotate import``): the snapshots and KG rows from release.json; the settings, dumps,
    judges and validation verdict from ``meta`` (the manifest's record, updated by the
    caller; croissant.json is checked again when the verdict had it checked, and the
    verdict settled from its parts). ``paths``: the release's files. Returns the manifest
    written."""
    listing = json.loads((out / LISTING).read_text(encoding="utf-8"))
    keys = listing["snapshots"]
    kg_rows = {snap: {name: listing["parquet_rows"].get(kg_parquet_path(snap, name), 0)
                      for name in KG_SNAPSHOT_TABLES} for snap in keys}
    prepared = prepare(out, keys, kg_rows)
    files = sorted(set(paths) | {f"{PLOTS}/{p}" for p in prepared.plots}
                   | {CROISSANT, CARD, CARD_HTML, LISTING}
                   | ({VALIDATION_PAGE} if VALIDATION_RESULTS in paths else set()))

    def judge(known: Entries) -> dict[str, Any]:
        verdict = dict(meta.get("validation") or {})
        if "croissant" in verdict:
            verdict["croissant"] = check_croissant(out, known, CROISSANT)
        return settle(verdict)

    record = {k: v for k, v in meta.items() if k not in ("validation", "card")}
    return describe(out, prepared, files, record, judge)
