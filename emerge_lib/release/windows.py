"""One window of a release: its corpus JSONL (the kept lines) and, when the snapshot was
selected, its evaluation-set JSONL, each with its typed Parquet twin, and the corpus
lines' triples as Parquet, a row each (``emerge_lib.formats.schema``).

A window is streamed on its own: no step holds more than one window's passages and
instances in memory. Lines follow the authors' instance format
(``emerge_lib.formats.format``), sorted by ``hash_id``, so a rebuild writes the same bytes.
"""

from __future__ import annotations

import logging
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from emerge_lib.catalog import Catalog
from emerge_lib.core.config import CurationSettings, PassageSettings
from emerge_lib.core.errors import EmergeError
from emerge_lib.curation.verdicts import gold_assessments
from emerge_lib.formats.format import FormatError, dumps_line, hash_id, passage_record
from emerge_lib.formats.layout import PARQUET_TRIPLES, parquet_twin
from emerge_lib.formats.schema import lines_table, triples_table, write_table
from emerge_lib.release._atomic import atomic_file

log = logging.getLogger(__name__)

#: a line as the release suites read it: (the JSONL file's name, the line's record)
Record = tuple[str, dict[str, Any]]


class ReleaseError(EmergeError):
    """Input that must not be published as is (bad offsets, unknown op, name clashes)."""


@dataclass(frozen=True)
class Reads:
    """What every window of a release reads: the catalog at the Delta versions the release
    pinned, and the settings its lines follow."""

    catalog: Catalog
    versions: Mapping[str, int | None]
    passages: PassageSettings
    curation: CurationSettings


@dataclass(frozen=True)
class Window:
    """One window to write: its snapshot and index, and the release-relative paths of its
    corpus file and (when the snapshot was selected) its evaluation-set file."""

    snapshot: str
    k: int
    window_days: float
    corpus: str
    evaluation: str | None


@dataclass
class Written:
    """What one window wrote (paths relative to the release folder)."""

    lines: int = 0  # corpus lines
    drawn: int = 0  # evaluation-set lines
    parquet_rows: dict[str, int] = field(default_factory=dict)  # Parquet file → rows
    ops: Counter[str] = field(default_factory=Counter)  # op code → instances released
    left_out: Counter[str] = field(default_factory=Counter)  # reason → lines (selection)
    orphan_instances: int = 0  # instances whose passage is missing from `passages`
    anchor_mismatches: int = 0  # mentions whose anchor differs from text[start:end]
    # whose verdicts are the gold of the curated lines: "final judge" | "configured judges"
    gold: Counter[str] = field(default_factory=Counter)
    records: list[Record] = field(default_factory=list)  # what the release suites read


def _rows(reads: Reads, name: str, window: Window,
          passage_ids: Sequence[str] | None = None) -> list[dict[str, Any]]:
    """A window's rows of a table as Python rows (only those of ``passage_ids``, when
    given: a window's passages are mostly without instances, and converting every one
    of them to Python cost more than the rest of the window)."""
    version = reads.versions[name]
    if version is None:
        return []
    filters: list[tuple[str, str, Any]] = [("snapshot", "=", window.snapshot),
                                           ("window", "=", window.k)]
    if passage_ids is not None:
        if not passage_ids:
            return []
        filters.append(("passage_id", "in", list(passage_ids)))
    rows: list[dict[str, Any]] = reads.catalog.read_arrow(name, filters=filters,
                                                          version=version).to_pylist()
    return rows


def _fates(reads: Reads, window: Window, passage_ids: Sequence[str]
           ) -> dict[str, tuple[bool, bool, str | None]]:
    """passage_id → (kept, in the evaluation set, why left out); a window that was not
    selected (no ``select`` run) keeps every line and draws none."""
    selected = {r["passage_id"]: (r["kept"], r["evaluation_set"], r.get("reason"))
                for r in _rows(reads, "selection", window)}
    return {pid: selected.get(pid, (True, False, None)) for pid in passage_ids}


def write_window(reads: Reads, out: Path, window: Window, keep_records: bool) -> Written:
    """Write ``window``'s files under ``out`` (see the module docstring); with
    ``keep_records``, the lines written are kept for the release suites."""
    by_passage: dict[str, list[dict[str, Any]]] = defaultdict(list)
    instances = _rows(reads, "instances", window)
    for r in instances:
        by_passage[r["passage_id"]].append(r)
    passages = {p["passage_id"]: p for p in _rows(reads, "passages", window, sorted(by_passage))}
    fates = _fates(reads, window, list(passages))
    # the kept lines' gold is the final judge's (curation.final_judge), where it judged
    kept_ids = [pid for pid, fate in fates.items() if fate[0]]
    curated, final = gold_assessments(
        reads.catalog, window.snapshot, window.k, reads.versions["verdicts"], instances,
        list(passages.values()), reads.curation, reads.passages, kept=kept_ids)
    done = Written()
    done.gold["final judge"] = len(final.intersection(kept_ids))
    done.gold["configured judges"] = sum(1 for pid in kept_ids if pid in curated
                                         and pid not in final)
    done.orphan_instances = sum(len(rows) for pid, rows in by_passage.items()
                                if pid not in passages)
    if done.orphan_instances:
        log.warning("%s window %d: %d instances have no passage", window.snapshot, window.k,
                    done.orphan_instances)
    done.left_out.update((reason or "duplicate").split(":")[0]  # no reason: an older selection
                         for kept, _, reason in fates.values() if not kept)
    keyed = sorted((hash_id(window.snapshot, window.k, p["page_id"], pid), pid)
                   for pid, p in passages.items() if fates[pid][0])
    kept: list[dict[str, Any]] = []
    chosen: list[dict[str, Any]] = []
    with ExitStack() as stack:
        def open_text(rel: str) -> TextIO:
            tmp = stack.enter_context(atomic_file(out / rel))
            return stack.enter_context(tmp.open("w", encoding="utf-8", newline="\n"))

        corpus = open_text(window.corpus)
        evaluation = open_text(window.evaluation) if window.evaluation else None
        for _, pid in keyed:
            p, rows = passages[pid], by_passage[pid]
            done.anchor_mismatches += sum(
                1 for m in p.get("mentions") or ()
                if m.get("qid") is not None and p["text"][m["start"]:m["end"]] != m["anchor"])
            try:
                record = passage_record(p, rows, window.snapshot, window.k, window.window_days,
                                        reads.passages.title_prefix, curated.get(pid))
            except FormatError as exc:
                raise ReleaseError(str(exc)) from None
            line = dumps_line(record) + "\n"
            corpus.write(line)
            kept.append(record)
            if keep_records:
                done.records.append((Path(window.corpus).name, record))
            if evaluation is not None and fates[pid][1]:
                evaluation.write(line)
                chosen.append(record)
            done.ops.update(r["op"] for r in rows)
    done.lines, done.drawn = len(keyed), len(chosen)
    _write_twins(out, window, kept, chosen, done)
    return done


def _write_twins(out: Path, window: Window, kept: list[dict[str, Any]],
                 chosen: list[dict[str, Any]], done: Written) -> None:
    """The typed Parquet twins of the window's JSONL files, and the corpus lines' triples."""
    try:
        twins = [(window.corpus, kept)]
        if window.evaluation:
            twins.append((window.evaluation, chosen))
        for rel, lines in twins:
            with atomic_file(out / parquet_twin(rel)) as tmp:
                table = lines_table(lines)
                write_table(tmp, table)
            done.parquet_rows[parquet_twin(rel)] = table.num_rows
            if rel == window.corpus:
                triples = parquet_twin(rel, PARQUET_TRIPLES)
                with atomic_file(out / triples) as tmp:
                    done.parquet_rows[triples] = write_table(tmp, triples_table(table))
    except FormatError as exc:
        raise ReleaseError(str(exc)) from None
