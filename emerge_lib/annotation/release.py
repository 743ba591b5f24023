"""A release folder as annotation reads it, and annotation files as the authors merge them.

The unit of annotation is a question: one triple of one line (``hash_id``) under one prompt
type; a ``["d-triples", "e-triples"]`` triple is two questions (assertion and deprecation),
as in the authors' s09b. A question is named by ``(hash_id, (s, p, o), prompt_type)``, never
by position, so a task survives a rebuild that reorders nothing it names.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from emerge_lib.core.errors import InputError
from emerge_lib.formats.layout import (
    AGREEMENT,
    CORPUS,
    EVALUATION_SET,
    HUMAN_ANNOTATION,
    kg_parquet_path,
)
from emerge_lib.formats.manifest import MANIFEST, read_manifest

log = logging.getLogger(__name__)

#: The file ``emerge annotate import`` writes: the authors' released name, so their
#: download and agreement scripts find it (their FORMAT: human_annotation/solved_disagreements.jsonl)
ANNOTATION_FILE = f"{HUMAN_ANNOTATION}/solved_disagreements.jsonl"
#: Our report of the annotation beside it (not in human_annotation/: the authors' s09e
#: reads every file of that folder as annotation lines)
AGREEMENT_DIR = AGREEMENT
NOT_FOUND = "<NOT FOUND>"  # the authors' definition of a relation without one

Triple = tuple[str, str, str]


class AnnotationError(InputError):
    """Annotation input that cannot be used: one line naming the file and the problem."""


def read_jsonl(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) of a JSONL file; a bad line is an error naming it."""
    with path.open(encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except ValueError as exc:
                raise AnnotationError(f"{path}:{n}: not a JSON line ({exc})") from None
            if not isinstance(obj, dict) or not isinstance(obj.get("hash_id"), str):
                raise AnnotationError(f"{path}:{n}: not an EMERGE line (no hash_id)")
            if not isinstance(obj.get("tkgu_triples"), list):
                raise AnnotationError(f"{path}:{n}: line {obj['hash_id']} has no tkgu_triples list")
            yield n, obj


def triple_of(entry: Mapping[str, Any], where: str) -> Triple:
    spo = entry.get("triple")
    if not (isinstance(spo, list) and len(spo) == 3 and all(isinstance(x, str) for x in spo)):
        raise AnnotationError(f"{where}: a triple is not [s, p, o]: {spo!r:.80}")
    return (spo[0], spo[1], spo[2])


def find_triple(record: Mapping[str, Any], spo: Triple) -> dict[str, Any] | None:
    return next((t for t in record["tkgu_triples"] if tuple(t.get("triple") or ()) == spo), None)


@dataclass
class ReleaseIndex:
    """A release folder: its manifest, its released lines by ``hash_id`` (the corpus: every
    kept line; the evaluation set is a subset) and the relations' definitions."""

    root: Path
    manifest: dict[str, Any]
    lines: dict[str, dict[str, Any]] = field(default_factory=dict)
    files: dict[str, str] = field(default_factory=dict)  # hash_id → file of the corpus
    _definitions: dict[str, dict[str, str]] = field(default_factory=dict)

    @classmethod
    def open(cls, root: str | Path) -> ReleaseIndex:
        root = Path(root)
        if not (root / MANIFEST).is_file():
            raise AnnotationError(f"{root}: not a release folder (no {MANIFEST})")
        index = cls(root, read_manifest(root))
        for path in sorted(root.glob(f"{CORPUS}/snapshot_*/delta_*.jsonl")):
            for _, rec in read_jsonl(path):
                index.lines[rec["hash_id"]] = rec
                index.files[rec["hash_id"]] = path.relative_to(root).as_posix()
        return index

    def split_files(self, split: str) -> list[Path]:
        """The JSONL files of ``corpus`` or ``evaluation`` (``auto``: the evaluation set
        when the release drew one, else the corpus)."""
        evaluation = sorted(self.root.glob(f"{EVALUATION_SET}/snapshot_*/delta_*.jsonl"))
        if split == "auto":
            split = "evaluation" if any(p.stat().st_size for p in evaluation) else "corpus"
        if split == "evaluation":
            return evaluation
        return sorted(self.root.glob(f"{CORPUS}/snapshot_*/delta_*.jsonl"))

    def definition(self, record: Mapping[str, Any], pid: str) -> str:
        """The relation's English description in the line's snapshot (R_t), as the
        authors' ``definition_relation``; ``<NOT FOUND>`` as theirs when it has none."""
        snapshot = str((record.get("delta_dates") or [""])[0])[:10]
        if snapshot not in self._definitions:
            import pyarrow.parquet as pq

            path = self.root / kg_parquet_path(snapshot, "relations")
            table = pq.read_table(path, columns=["pid", "description"]) if path.is_file() \
                else None
            self._definitions[snapshot] = {} if table is None else {
                r["pid"]: r["description"] for r in table.to_pylist() if r["description"]}
        return self._definitions[snapshot].get(pid) or NOT_FOUND

    @property
    def version(self) -> str:
        return str(self.manifest.get("version"))


def annotation_files(path: str | Path) -> list[Path]:
    """The annotation JSONL files ``path`` stands for: a file; a release folder (its
    ``human_annotation/*.jsonl``); or a folder of ``*.jsonl`` files."""
    p = Path(path)
    if p.is_file():
        return [p]
    if not p.is_dir():
        raise AnnotationError(f"{p}: no such file or folder")
    folder = p / HUMAN_ANNOTATION if (p / HUMAN_ANNOTATION).is_dir() else p
    files = sorted(folder.glob("*.jsonl"))
    if not files:
        raise AnnotationError(f"{folder}: no annotation file (*.jsonl) in it")
    return files


def _merge_entries(into: list[dict[str, Any]], more: Iterable[dict[str, Any]],
                   key: tuple[str, str]) -> None:
    seen = {(e.get(key[0]), e.get(key[1])) for e in into}
    for e in more:
        if (e.get(key[0]), e.get(key[1])) not in seen:
            into.append(e)
            seen.add((e.get(key[0]), e.get(key[1])))


def merge_lines(records: Iterable[tuple[str, dict[str, Any]]]) -> dict[str, dict[str, Any]]:
    """Lines of several annotation files merged by ``hash_id``, as the authors'
    ``merge_annotations``: a triple's ``human_assessment`` entries are kept once per
    (annotator_name, prompt_type) and its ``llm_assessment`` entries once per (llm_name,
    llm_prompt_type), the first seen winning; triples are matched by (s, p, o) (theirs by
    position, asserting the same triples)."""
    merged: dict[str, dict[str, Any]] = {}
    for where, rec in records:
        first = merged.get(rec["hash_id"])
        if first is None:
            merged[rec["hash_id"]] = json.loads(json.dumps(rec))  # a copy we may extend
            continue
        for t in rec["tkgu_triples"]:
            mine = find_triple(first, triple_of(t, where))
            if mine is None:
                raise AnnotationError(f"{where}: line {rec['hash_id']} has triple "
                                      f"{t.get('triple')} that another file's same line lacks")
            _merge_entries(mine.setdefault("human_assessment", []),
                           t.get("human_assessment") or (), ("annotator_name", "prompt_type"))
            _merge_entries(mine.setdefault("llm_assessment", []),
                           t.get("llm_assessment") or (), ("llm_name", "llm_prompt_type"))
    return merged


def read_annotations(path: str | Path) -> dict[str, dict[str, Any]]:
    """Every annotation line of ``path`` (see :func:`annotation_files`), merged."""
    def records() -> Iterator[tuple[str, dict[str, Any]]]:
        for f in annotation_files(path):
            for n, rec in read_jsonl(f):
                yield f"{f}:{n}", rec

    return merge_lines(records())


def release_of(path: str | Path) -> Path | None:
    """The release folder ``path`` is (or is the annotation folder or file of), if any."""
    p = Path(path).resolve()
    for candidate in (p, p.parent, p.parent.parent):
        if (candidate / MANIFEST).is_file():
            return candidate
    return None
