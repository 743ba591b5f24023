"""``emerge annotate import``: human verdicts into a release, in the authors' format.

Input: a Label Studio JSON export of the tasks ``emerge annotate export`` (or
``disagreements``) wrote, or annotation JSONL in the authors' layout (``human_assessment``
entries, e.g. their s09b output or a file of another release of the same lines).

Every verdict must name a question of this release: its line (``hash_id``), its triple
(s, p, o) in that line, and a prompt type the triple's operations ask; anything else stops
the import in one line, before anything is written. Then, in this order:

1. ``human_annotation/solved_disagreements.jsonl`` (the authors' released name): one line per
   annotated release line (sorted by ``hash_id``), the release line without
   ``predictions``, every triple's ``human_assessment`` holding its entries exactly in the
   authors' format (``annotator_name``, ``prompt_type``, ``assessment``,
   ``human_readable_triple``, ``definition_relation``), one per (annotator, prompt type),
   sorted by both. The verdicts already there are kept; a verdict of the same annotator
   for the same question replaces the old one (an annotator's changed answer); so a second
   import of the same file writes the same bytes, and a second annotator's file adds;
2. ``agreement/`` (the table of ``emerge annotate agreement`` with the release's judges,
   once two annotators are there; annotators' comments in ``agreement/comments.jsonl``);
3. validation: the Great Expectations suites of the human annotation (``validation``
   room), results in ``validation/results.json`` (and on the checks page,
   ``validation/index.html``), the verdict in the manifest;
4. what states the release's version (its content hash, which the new files change)
   again, as the release writer writes it: croissant.json (checked again with
   mlcroissant), the card (README.md, card.html) with the agreement table, and
   ``manifest.json``, last: every file with its sha256. The other files of the release are
   not touched.
"""

from __future__ import annotations

import copy
import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from emerge_lib.annotation import agreement as agreement_mod
from emerge_lib.annotation.labelstudio import (
    Verdict,
    annotator_names,
    read_annotation_lines,
    read_export,
)
from emerge_lib.annotation.release import (
    AGREEMENT_DIR,
    ANNOTATION_FILE,
    AnnotationError,
    ReleaseIndex,
    find_triple,
    read_annotations,
    read_jsonl,
)
from emerge_lib.formats.format import (
    ASSERTION,
    DEPRECATION,
    HUMAN_ASSESSMENT_FIELDS,
    dumps_line,
    human_readable_triple,
    prompt_types_of,
)
from emerge_lib.formats.manifest import MANIFEST, verify_release

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

log = logging.getLogger(__name__)

COMMENTS = f"{AGREEMENT_DIR}/comments.jsonl"


@dataclass
class ImportSummary:
    release: Path
    verdicts: int = 0  # read from the input
    added: int = 0  # new (annotator, question) entries
    changed: int = 0  # replaced with another verdict
    annotators: list[str] = field(default_factory=list)
    lines: int = 0  # lines of the annotation file
    table: agreement_mod.Table | None = None
    validation: dict[str, Any] = field(default_factory=dict)
    files: list[str] = field(default_factory=list)  # written or rewritten

    def __str__(self) -> str:
        return (f"imported {self.verdicts} verdicts by {', '.join(self.annotators)} into "
                f"{self.release / ANNOTATION_FILE} ({self.added} new, {self.changed} changed; "
                f"{self.lines} lines); validation "
                f"{'passed' if self.validation.get('success') else 'did not pass'}")


def read_verdicts(source: str | Path, annotator: Sequence[str] = ()) -> list[Verdict]:
    """The verdicts of a Label Studio JSON export or of authors' layout JSONL."""
    path = Path(source)
    if not path.is_file():
        raise AnnotationError(f"{path}: no such file")
    single, names = annotator_names(annotator)
    text = path.read_text(encoding="utf-8")
    if text.lstrip().startswith("["):
        try:
            tasks = json.loads(text)
        except ValueError as exc:
            raise AnnotationError(f"{path}: not JSON ({exc})") from None
        return read_export(tasks, str(path), single, names)
    if names:
        raise AnnotationError(f"{path}: annotation lines name their annotators; --annotator "
                              "ID=NAME is for a Label Studio export")
    return read_annotation_lines([(f"{path}:{n}", rec) for n, rec in read_jsonl(path)], single)


def _check(index: ReleaseIndex, v: Verdict) -> None:
    rec = index.lines.get(v.hash_id)
    if rec is None:
        raise AnnotationError(f"{v.where}: line {v.hash_id} is not in the release "
                              f"{index.root} (version {index.version}); was it exported "
                              "from another release?")
    triple = find_triple(rec, v.triple)
    if triple is None:
        raise AnnotationError(f"{v.where}: triple {list(v.triple)} is not a triple of line "
                              f"{v.hash_id} in the release {index.root}")
    if v.prompt_type not in prompt_types_of(triple.get("tkgu_operations") or ()):
        raise AnnotationError(f"{v.where}: triple {list(v.triple)} of line {v.hash_id} is "
                              f"{triple.get('tkgu_operations')}: not asked under "
                              f"{v.prompt_type}")


def _entry(index: ReleaseIndex, rec: Mapping[str, Any], triple: Mapping[str, Any],
           annotator: str, prompt_type: str, assessment: bool) -> dict[str, Any]:
    entry = {"annotator_name": annotator, "prompt_type": prompt_type, "assessment": assessment,
             "human_readable_triple": human_readable_triple(rec, triple),
             "definition_relation": index.definition(rec, triple["triple"][1])}
    assert tuple(entry) == HUMAN_ASSESSMENT_FIELDS
    return entry


def merged_lines(index: ReleaseIndex, existing: Mapping[str, dict[str, Any]],
                 verdicts: Sequence[Verdict], summary: ImportSummary
                 ) -> dict[str, dict[str, Any]]:
    """The annotation file's lines: the release's lines with the verdicts already there and
    the new ones (see the module docstring)."""
    # (hash_id, triple) → (annotator, prompt type) → assessment, old first
    answers: dict[tuple, dict[tuple[str, str], bool]] = {}
    for hid, rec in existing.items():
        for t in rec["tkgu_triples"]:
            for e in t.get("human_assessment") or ():
                answers.setdefault((hid, tuple(t["triple"])), {}).setdefault(
                    (e["annotator_name"], e["prompt_type"]), e["assessment"])
    for v in verdicts:
        mine = answers.setdefault((v.hash_id, v.triple), {})
        before = mine.get((v.annotator, v.prompt_type))
        if before is None:
            summary.added += 1
        elif before != v.assessment:
            summary.changed += 1
            log.info("%s: %s changes %s of %s in %s to %s", v.where, v.annotator,
                     v.prompt_type, list(v.triple), v.hash_id, v.assessment)
        mine[(v.annotator, v.prompt_type)] = v.assessment
    out: dict[str, dict[str, Any]] = {}
    for hid in sorted({h for h, _ in answers}):
        rec = index.lines.get(hid)
        if rec is None:  # annotated before a rebuild left this line out: kept as it was
            log.warning("annotation: line %s is not in the release any more; its verdicts "
                        "are kept as they were", hid)
            out[hid] = existing[hid]
            continue
        line = {k: copy.deepcopy(v) for k, v in rec.items() if k != "predictions"}
        annotated = False
        for t in line["tkgu_triples"]:
            mine = answers.get((hid, tuple(t["triple"])), {})
            t["human_assessment"] = [_entry(index, rec, t, a, kind, mine[(a, kind)])
                                     for a, kind in sorted(mine)]
            annotated |= bool(mine)
        if annotated:
            out[hid] = line
    return out


def _comments(release: Path, verdicts: Sequence[Verdict]) -> list[dict[str, Any]]:
    path = release / COMMENTS
    rows = {}
    if path.is_file():
        for line in path.read_text(encoding="utf-8").splitlines():
            r = json.loads(line)
            rows[(r["hash_id"], tuple(r["triple"]), r["prompt_type"], r["annotator_name"])] = r
    for v in verdicts:
        key = (v.hash_id, v.triple, v.prompt_type, v.annotator)
        if v.comment:
            rows[key] = {"hash_id": v.hash_id, "triple": list(v.triple),
                         "prompt_type": v.prompt_type, "annotator_name": v.annotator,
                         "comment": v.comment}
        else:
            rows.pop(key, None)  # a re-annotation without a comment drops the old one
    return [rows[k] for k in sorted(rows)]


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)


def release_assessors(manifest: Mapping[str, Any]) -> dict[str, str]:
    """The release's configured judges, one per prompt type: the first judge of the
    assertion rule and of the (end-qualified) deprecation rule, by the names the release
    records (curation settings of the manifest; the configuration's defaults otherwise)."""
    from emerge_lib.core.config import RELEASED_LLM, CurationSettings

    cur = (manifest.get("settings") or {}).get("curation") or {}
    names = {"additions": cur.get("additions") or RELEASED_LLM["additions"],
             "deprecations": cur.get("deprecations") or RELEASED_LLM["deprecations"]}
    defaults = CurationSettings()
    return {ASSERTION: names[(cur.get("assertion_judges") or defaults.assertion_judges)[0]],
            DEPRECATION: names[(cur.get("deprecation_judges") or
                                defaults.deprecation_judges)[0]]}


def import_annotations(release: str | Path, source: str | Path, spark: SparkSession,
                       annotator: Sequence[str] = ()) -> ImportSummary:
    """Import ``source`` into ``release`` (see the module docstring); ``spark`` runs the
    validation suites. Holds the release folder's lock throughout (a second import, or a
    build writing the same folder, waits)."""
    from emerge_lib.release.describe import rewriting

    with rewriting(Path(release)):
        return _import(Path(release), source, spark, annotator)


def _import(root: Path, source: str | Path, spark: SparkSession,
            annotator: Sequence[str]) -> ImportSummary:
    from emerge_lib.release.describe import describe_again
    from emerge_lib.validation.validate import annotation_verdict, validate_annotation

    index = ReleaseIndex.open(root)
    verdicts = read_verdicts(source, annotator)
    if not verdicts:
        raise AnnotationError(f"{source}: no verdict in it (nothing annotated, or every "
                              "task skipped)")
    for v in verdicts:
        _check(index, v)
    summary = ImportSummary(root, verdicts=len(verdicts),
                            annotators=sorted({v.annotator for v in verdicts}))
    target = root / ANNOTATION_FILE
    existing = {rec["hash_id"]: rec for _, rec in read_jsonl(target)} if target.is_file() else {}
    lines = merged_lines(index, existing, verdicts, summary)
    summary.lines = len(lines)
    written = [ANNOTATION_FILE]
    _write(target, "".join(dumps_line(rec) + "\n" for rec in lines.values()))
    comments = _comments(root, verdicts)
    if comments or (root / COMMENTS).is_file():
        _write(root / COMMENTS, "".join(json.dumps(c, ensure_ascii=False, sort_keys=True)
                                        + "\n" for c in comments))
        written.append(COMMENTS)

    merged = read_annotations(root)
    humans, _ = agreement_mod.names_present(merged)
    if len(humans) >= 2:
        try:
            annotators = agreement_mod.default_annotators(merged, str(root))
            assessors = release_assessors(index.manifest)
            agreement_mod.check_names(merged, annotators, assessors, str(root))
            summary.table = agreement_mod.agreement(merged, annotators, assessors)
            written += [p.relative_to(root).as_posix() for p in
                        agreement_mod.write(summary.table, root / AGREEMENT_DIR)]
        except AnnotationError as exc:  # no table yet (more than two annotators, no judge)
            log.warning("annotation: no agreement table: %s", exc)

    released = [(hid, *t["triple"]) for hid, rec in index.lines.items()
                for t in rec["tkgu_triples"]]
    report = validate_annotation(spark, root, released)
    results = root / "validation" / "results.json"
    stored = json.loads(results.read_text(encoding="utf-8")) if results.is_file() else {}
    stored["human_annotation"] = report.to_dict()
    _write(results, json.dumps(stored, indent=1, sort_keys=True, default=str) + "\n")

    manifest = index.manifest
    meta = {k: v for k, v in manifest.items()
            if k not in ("schema_version", "dataset", "version", "files")}
    meta["validation"] = {**(manifest.get("validation") or {}),
                          "human_annotation": annotation_verdict(report)}
    fresh = sorted(p.relative_to(root).as_posix()
                   for folder in ("validation", AGREEMENT_DIR, "human_annotation")
                   for p in (root / folder).rglob("*") if p.is_file()
                   and not p.name.startswith(".") and not p.name.endswith(".tmp"))
    paths = {f["path"] for f in manifest["files"] if (root / f["path"]).is_file()} | set(fresh)
    written_manifest = describe_again(root, sorted(paths), meta)
    summary.validation = written_manifest["validation"]
    summary.files = sorted(set(written) | {"README.md", "card.html", "croissant.json", MANIFEST})
    check = verify_release(root)
    if not check.ok:  # what we just wrote does not match: a bug, never a user's error
        raise AnnotationError(f"{root}: the release does not verify after the import "
                              f"(missing {check.missing}, changed {check.mismatched})")
    if not report.success:
        from emerge_lib.validation.gate import ValidationFailed

        raise ValidationFailed(f"{root}: the human annotation failed validation: "
                               f"{report.summary()}; the manifest says so")
    return summary
