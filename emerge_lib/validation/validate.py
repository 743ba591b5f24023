"""A snapshot's tables → validation_results: the Great Expectations gate (write, audit,
publish).

The stages before it wrote their tables (write); this stage audits the snapshot's rows of
every table the release reads, at pinned Delta versions, with the suites of
``emerge_lib.validation.suites`` (audit); the release then publishes a snapshot only when
its results passed at exactly the versions it reads (publish), and S3 publishing refuses a
release whose manifest does not say so. Results go to the ``validation_results`` table
(one row per check) and, as ``results.json`` and a page of the checks (``index.html``,
``emerge_lib.validation.page``), to ``<warehouse>/_validation/snapshot_*/``.

A failing suite fails the stage with a summary of what failed (after writing the results,
so they can be read); a check that could not run at all (an expectation the engine does
not support) fails it too, as a gate error: that says nothing about the data.

The release's own audit (``validate_release``) also holds its Croissant to mlcroissant
(``check_croissant``): the writer calls it once croissant.json exists (it states the
version, which the validation results are part of), and a Croissant that does not
validate fails the release as a failed suite does (``ReleaseValidation.add_croissant``).
"""

from __future__ import annotations

import json
import logging
import shutil
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from emerge_lib.catalog import Catalog
from emerge_lib.core.errors import EmergeError
from emerge_lib.core.schedule import SnapshotPlan
from emerge_lib.formats.about import suite_rows
from emerge_lib.formats.layout import VALIDATION_PAGE, VALIDATION_RESULTS, snapshot_dir_name
from emerge_lib.formats.manifest import validated_files
from emerge_lib.validation.gate import GateReport, ValidationFailed, ValidationGateError
from emerge_lib.validation.suites import SuiteSettings

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

log = logging.getLogger(__name__)

#: The tables a snapshot's validation reads (the release's sources and what feeds them).
VALIDATE_READS = ("kg_triples", "entities", "relations", "passages", "instances",
                  "selection", "verdicts")
REQUIRED = ("kg_triples", "entities", "relations", "passages", "instances", "selection")
#: the entry of a result's ``fingerprints`` that holds its suites' key (``suites_key``)
SUITES = "_suites"


def docs_uri(warehouse: str, snapshot: str) -> str:
    return f"{warehouse.rstrip('/')}/_validation/{snapshot_dir_name(snapshot)}"


def _upload_dir(local: Path, uri: str) -> None:
    """Replace the folder ``uri`` (local path or filesystem URI) by ``local``'s files."""
    from pyarrow import fs as pafs

    from emerge_lib.catalog.storage import filesystem_of

    filesystem, root = filesystem_of(uri)
    filesystem.create_dir(root, recursive=True)
    filesystem.delete_dir_contents(root, missing_dir_ok=True)
    pafs.copy_files(str(local), root, source_filesystem=pafs.LocalFileSystem(),
                    destination_filesystem=filesystem)


@dataclass(frozen=True)
class Kept:
    """A snapshot's stored results, kept: every check passed on exactly these rows, with
    these suites (``validate_snapshot`` did not run them again)."""

    checks: int
    validated_at: str
    warnings: list[str]


def suites_key(settings: SuiteSettings, plan: SnapshotPlan) -> str:
    """What decides a snapshot's checks besides its rows: the settings the suites read,
    the snapshot's windows and the code (package version and commit)."""
    import dataclasses
    import hashlib

    from emerge_lib.formats.manifest import code_version

    decided = {f.name: getattr(settings, f.name).model_dump(mode="json")
               for f in dataclasses.fields(settings)}
    decided["validation"].pop("rerun", None)  # how to run, not what is checked
    decided["plan"] = [plan.key, plan.window_count, plan.window_days]
    decided["code"] = code_version()
    text = json.dumps(decided, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def validate_snapshot(catalog: Catalog, plan: SnapshotPlan, settings: SuiteSettings, *,
                      rerun: bool) -> GateReport | Kept:
    """Run the snapshot's suites, record the results, and raise when they failed.

    When every check already passed on exactly the rows the tables hold (their digests,
    ``fingerprints``) with the same suites (``suites_key``), the stored results are kept
    and nothing runs (``Kept``): the checks read nothing else, so they would give the
    same results, and the time it saves is the build's (the release holds no run time).
    ``rerun`` runs them anyway."""
    from pyspark.sql import functions as F

    from emerge_lib.validation.suites import snapshot_suites

    versions = {name: catalog.version(name) for name in VALIDATE_READS}
    missing = [n for n in REQUIRED if versions[n] is None]
    if missing:
        raise EmergeError(f"validate {plan.key}: tables {missing} do not exist yet; run the "
                          "snapshot's stages first (emerge build)")
    suites = suites_key(settings, plan)
    kept = None if rerun else passed_for(catalog, plan.key, versions, suites=suites)
    if kept is not None:
        stored = _stored_results(catalog, plan.key)
        warnings = _warnings(stored)
        log.info("validate %s: every check passed on these same rows at %s, with these "
                 "suites: kept, not run again", plan.key, kept["validated_at"])
        for line in warnings:
            log.warning("validate %s: %s (a warning: the release says so)", plan.key, line)
        return Kept(kept["checks"], kept["validated_at"], warnings)
    frames = {name: catalog.read(name, versions[name]).filter(F.col("snapshot") == plan.key)
              for name in VALIDATE_READS}
    spark = catalog.session()
    local_docs = Path(tempfile.mkdtemp(prefix="emerge-validation-"))
    try:
        from emerge_lib.validation.gate import run_gate
        from emerge_lib.validation.page import render_page

        report = run_gate(snapshot_suites(spark, catalog, settings, plan, frames, versions),
                          run_name=f"tables {plan.key}")
        now = datetime.now(UTC)
        results = {"snapshot": plan.key, "versions": versions, **report.to_dict()}
        (local_docs / "results.json").write_text(json.dumps(
            results, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        (local_docs / "index.html").write_text(render_page(
            title=f"Validation of snapshot {plan.key}'s tables",
            verdict="every check passed" if report.success else report.summary(),
            ok=report.success, rows=suite_rows(results["suites"], plan.key, "tables"),
            run_times={plan.key: now.isoformat()}), encoding="utf-8")
        _upload_dir(local_docs, docs_uri(catalog.warehouse, plan.key))
    finally:
        catalog.clean_scratch()
        shutil.rmtree(local_docs, ignore_errors=True)
    validated = json.dumps({**fingerprints(catalog, plan.key, versions), SUITES: suites},
                           sort_keys=True)
    rows = [{"snapshot": plan.key, "suite": r.suite, "expectation": r.check,
             "success": r.success, "raised": r.raised, "severity": r.severity,
             "unexpected_count": r.unexpected_count,
             "observed": json.dumps(r.observed, default=str, sort_keys=True),
             "fingerprints": validated, "validated_at": now}
            for r in report.results]
    catalog.replace_partition("validation_results", catalog.frame("validation_results", rows),
                              {"snapshot": plan.key})
    if report.raised:
        raise ValidationGateError(
            f"validate {plan.key}: {len(report.raised)} checks could not run on this engine "
            f"(the gate itself failed, not the data): {report.raised[0].line()}")
    if not report.success:
        raise ValidationFailed(f"validate {plan.key}: {report.summary()}; nothing may be "
                               f"released (details: {docs_uri(catalog.warehouse, plan.key)})")
    for r in report.warnings:
        log.warning("validate %s: %s (a warning: the release says so)", plan.key, r.line())
    return report


def _blocks(row: Mapping[str, Any]) -> bool:
    """Whether a stored result keeps its snapshot from being released."""
    return bool(row["raised"]) or (not row["success"] and row.get("severity") != "warning")


def fingerprints(catalog: Catalog, snapshot: str, versions: dict[str, int | None]
                 ) -> dict[str, str | None]:
    """The snapshot's rows of every validated table, fingerprinted (a digest of the rows,
    ``Catalog.partition_digest``: a stage run again on the same rows keeps it)."""
    return {name: catalog.partition_digest(name, versions.get(name), snapshot)
            for name in VALIDATE_READS}


def passed_for(catalog: Catalog, snapshot: str, versions: dict[str, int | None], *,
               suites: str | None = None) -> dict[str, Any] | None:
    """The snapshot's stored results when every check passed on exactly the rows the
    tables hold at ``versions`` (what the release reads), and, given ``suites``, with
    those suites (``suites_key``); None when it was never validated, failed, or its rows
    (or suites) changed since."""
    version = catalog.version("validation_results")
    if version is None:
        return None
    rows = catalog.read_arrow("validation_results", filters=[("snapshot", "=", snapshot)],
                              version=version).to_pylist()
    if not rows or any(_blocks(r) for r in rows):
        return None
    stored = json.loads(rows[0]["fingerprints"])
    if suites is not None and stored.get(SUITES) != suites:
        return None
    stored.pop(SUITES, None)
    if stored != fingerprints(catalog, snapshot, versions):
        return None
    return {"checks": len(rows),
            "validated_at": min(r["validated_at"] for r in rows).isoformat()}


# --- the release files ---------------------------------------------------------------------


@dataclass
class ReleaseValidation:
    """What the release's audit wrote and decided."""

    files: list[str]  # under validation/, relative to the release folder
    manifest: dict[str, Any]  # the manifest's ``validation`` entry
    failure: EmergeError | None = None
    gates: dict[str, GateReport] = field(default_factory=dict)  # the release suites' reports

    def raise_for_failure(self) -> None:
        if self.failure is not None:
            raise self.failure

    def add_croissant(self, verdict: Mapping[str, Any]) -> None:
        """Fold ``check_croissant``'s verdict into the manifest's: one that does not
        validate makes the release unpublishable and fails it."""
        self.manifest["croissant"] = dict(verdict)
        if verdict.get("success"):
            return
        reason = f"croissant.json does not validate: {'; '.join(verdict['problems'][:3])}"
        self.manifest["success"] = False
        self.manifest["reason"] = "; ".join(filter(None, [self.manifest.get("reason"), reason]))
        if self.failure is None:
            self.failure = ValidationFailed(f"release validation failed: {reason}; the "
                                            "manifest says so and nothing will publish it")


def _stored_results(catalog: Catalog, snapshot: str) -> list[dict[str, Any]]:
    """The snapshot's stored checks, sorted (when they ran is the warehouse's record,
    not the release's: ``emerge validate`` shows it)."""
    version = catalog.version("validation_results")
    if version is None:
        return []
    rows = catalog.read_arrow("validation_results", filters=[("snapshot", "=", snapshot)],
                              version=version).to_pylist()
    checks = sorted(({"suite": r["suite"], "check": r["expectation"], "success": r["success"],
                      "raised": r["raised"], "severity": r.get("severity") or "critical",
                      "unexpected_count": r["unexpected_count"],
                      "observed": json.loads(r["observed"])} for r in rows),
                    key=lambda r: (r["suite"], r["check"]))
    return checks


def _warnings(stored: list[dict[str, Any]]) -> list[str]:
    """The stored checks that failed as warnings (what a snapshot lacks), one line each."""
    return [f"{r['suite']}: {r['check']} ({r['observed']})" for r in stored
            if not r["success"] and r["severity"] == "warning"]


def validate_release(catalog: Catalog, out: Path, snapshots: list[str],
                     records: dict[str, list[tuple[str, dict[str, Any]]]],
                     versions: dict[str, int | None],
                     checked: Mapping[str, GateReport] | None = None) -> ReleaseValidation:
    """Audit a release being written: every snapshot must have passed its table suites on
    exactly the rows released, and the JSONL lines written must pass the release suites.
    Writes ``validation/results.json``; the page of its checks (``validation/index.html``)
    states the version, so the release's description writes it (``release.describe``).
    ``checked``: the release suites' reports of snapshots whose lines they checked before
    as they are (a release carrying their files over: release/carry.py), not run again."""
    from emerge_lib.formats.format import RELEASE_FIELDS
    from emerge_lib.validation.gate import run_gate
    from emerge_lib.validation.suites import flatten_release, release_suites

    folder = out / "validation"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    spark = catalog.session()
    results: dict[str, Any] = {}
    states: dict[str, dict[str, str | list[str]]] = {}
    problems: list[str] = []  # bad data: the release fails
    unvalidated: list[str] = []  # not checked on these rows: written, not publishable
    stale: list[str] = []  # checked on other rows: changed by a concurrent writer
    raised: list[str] = []
    gates: dict[str, GateReport] = {}
    for snap in snapshots:
        stored = _stored_results(catalog, snap)
        if passed_for(catalog, snap, versions):
            tables = "passed"
        elif stored and any(_blocks(r) for r in stored):
            tables = "failed"
        else:
            tables = "not validated on the rows released"
        report = (checked or {}).get(snap)
        if report is None:
            lines, mentions, triples = flatten_release(records.get(snap, []))
            report = run_gate(release_suites(spark, lines, mentions, triples, RELEASE_FIELDS),
                              run_name=f"release {snap}")
        gates[snap] = report
        release = "passed" if report.success else "failed"
        states[snap] = {"tables": tables, "release": release}
        # what this snapshot lacks (warnings of its table suites): said, not blocking
        empty = _warnings(stored)
        if empty:
            states[snap]["warnings"] = empty
        results[snap] = {"tables": {"state": tables, "checks": stored},
                         "release": report.to_dict()}
        if tables == "failed":
            problems.append(f"{snap}: tables failed their suites")
        elif tables != "passed":
            unvalidated.append(snap)
            if stored:
                stale.append(snap)
        if not report.success:
            problems.append(f"{snap}: release files: {report.summary()}")
        raised += [r.line() for r in report.raised]
    annotation = None
    if annotation_files(out):  # carried over from the release before (emerge annotate import)
        released = [(rec["hash_id"], *tr["triple"]) for snap in snapshots
                    for _, rec in records.get(snap, []) for tr in rec["tkgu_triples"]]
        annotation = validate_annotation(spark, out, released)
        raised += [r.line() for r in annotation.raised]
        if not annotation.success:
            problems.append(annotation_verdict(annotation)["reason"])
    success = not problems and not unvalidated
    (out / VALIDATION_RESULTS).write_text(json.dumps(
        {"success": success, "snapshots": results, "files": validated_files(out),
         **({"human_annotation": annotation.to_dict()} if annotation else {})},
        indent=1, sort_keys=True, default=str) + "\n", encoding="utf-8")
    files = sorted(p.relative_to(out).as_posix() for p in folder.rglob("*") if p.is_file())
    verdict: dict[str, Any] = {"success": success, "results": VALIDATION_RESULTS,
                               "page": VALIDATION_PAGE, "snapshots": states}
    if annotation is not None:
        verdict["human_annotation"] = annotation_verdict(annotation)
    failure: EmergeError | None = None
    if raised:
        verdict["reason"] = f"{len(raised)} checks could not run"
        failure = ValidationGateError(f"release validation: {len(raised)} checks could not run "
                                      f"on this engine: {raised[0]}")
    elif problems:
        verdict["reason"] = "; ".join(problems)
        failure = ValidationFailed(f"release validation failed: {'; '.join(problems)}; the "
                                   "manifest says so and nothing will publish it")
    elif unvalidated:
        verdict["reason"] = (f"snapshots {', '.join(unvalidated)} were not validated on the "
                             "rows released")
        if stale:
            # validated, then rewritten before the release read them (a concurrent build of
            # the snapshot): a release nothing will publish is a failed run, not a warning
            failure = ValidationFailed(
                f"release: snapshots {', '.join(stale)} changed after their validation (as "
                "a concurrent build of the same snapshot does); the release is written but "
                "not publishable: run `emerge build` again (under Airflow: the snapshot's "
                "validate and release tasks)", retryable=True)
        else:
            log.warning("release: %s (the validate stage never ran on them: `emerge build` "
                        "runs it); the release is written but not publishable",
                        verdict["reason"])
    return ReleaseValidation(files, verdict, failure, gates)


# --- the release's Croissant ---------------------------------------------------------------
#: a record set whose Parquet files hold more than this is checked by its files' schemas
#: only: mlcroissant reads a record set with pandas, whole files at a time (5 s for
#: 20,000 nested rows measured here), far too slow for a KG snapshot of Wikidata's size
CROISSANT_READ_LIMIT = 256 << 20


@contextmanager
def _quiet_absl() -> Iterator[None]:
    """mlcroissant logs every warning through absl, and a line on the root logger for
    every record set it reads ("Setting up generation for dataset: _:N…", six in a
    release's task log); its findings come back as values."""
    logger = logging.getLogger("absl")
    level = logger.level
    logger.setLevel(logging.ERROR)
    chatter = _MlcroissantChatter()
    logging.getLogger().addFilter(chatter)
    try:
        yield
    finally:
        logger.setLevel(level)
        logging.getLogger().removeFilter(chatter)


class _MlcroissantChatter(logging.Filter):
    """mlcroissant's own INFO lines on the root logger."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.levelno >= logging.WARNING or "mlcroissant" not in record.pathname


def _root_cause(exc: BaseException) -> BaseException:
    while exc.__cause__ is not None or exc.__context__ is not None:
        exc = exc.__cause__ or exc.__context__  # type: ignore[assignment]
    return exc


def check_croissant(out: Path, files: Mapping[str, Mapping[str, Any]],
                    name: str = "croissant.json") -> dict[str, Any]:
    """The release's Croissant, checked: mlcroissant validates it (the schema, the
    context, the types), every FileObject is a file of ``files`` (the manifest's entries
    by path) with its size and sha256, every field's column is in every Parquet file of
    its FileSet, and the first record of each record set is read (of a record set under
    ``CROISSANT_READ_LIMIT`` bytes). Returns the manifest's ``validation.croissant``
    entry: ``{"success", "problems", "record_sets"}``."""
    from fnmatch import fnmatch
    from itertools import islice

    import mlcroissant as mlc
    import pyarrow.parquet as pq

    path = out / name
    problems: list[str] = []
    read: dict[str, str] = {}
    with _quiet_absl():
        try:
            dataset = mlc.Dataset(jsonld=str(path))
        except mlc.ValidationError as exc:
            text = str(exc).split(" warning(s)")[0]  # errors first, then the warnings
            errors = [line.strip(" -") for line in text.splitlines()
                      if line.strip().startswith("-")] or [" ".join(text.split())]
            return {"success": False, "problems": errors[:20], "record_sets": {}}
        doc = json.loads(path.read_text(encoding="utf-8"))
        sets: dict[str, list[str]] = {}
        for node in doc.get("distribution", []):
            if node.get("@type") == "cr:FileObject":
                entry = files.get(node.get("contentUrl"))
                if entry is None:
                    problems.append(f"{node.get('contentUrl')}: not a file of the release")
                elif node.get("sha256") != entry["sha256"] or \
                        node.get("contentSize") != f"{entry['bytes']} B":
                    problems.append(f"{node['contentUrl']}: size or sha256 differs from the "
                                    "file's")
            elif node.get("@type") == "cr:FileSet":
                sets[node["@id"]] = sorted(p for p in files if fnmatch(p, node["includes"]))
        columns: dict[str, list[str]] = {}
        for record_set in doc.get("recordSet", []):
            rs = record_set["@id"]
            members: list[str] = []
            for f in record_set.get("field", []):
                source = f.get("source") or (f.get("subField") or [{}])[0].get("source", {})
                members = sets.get(source.get("fileSet", {}).get("@id"), [])
                column = source.get("extract", {}).get("column")
                for member in members:
                    if member not in columns:
                        columns[member] = pq.read_schema(out / member).names
                    if column not in columns[member]:
                        problems.append(f"{rs}/{f['name']}: no column {column!r} in {member}")
                        break
            if not members:
                problems.append(f"{rs}: its FileSet matches no file of the release")
                continue
            if sum(files[m]["bytes"] for m in members) > CROISSANT_READ_LIMIT:
                read[rs] = "columns checked (too large to read in the gate)"
                continue
            try:
                list(islice(dataset.records(rs), 1))
                read[rs] = "read"
            except Exception as exc:  # mlcroissant wraps every failure in GenerationError
                cause = _root_cause(exc)
                problems.append(f"{rs}: mlcroissant cannot read it: {type(cause).__name__}: "
                                f"{' '.join(str(cause).split())[:300]}")
    return {"success": not problems, "problems": problems, "record_sets": read}


# --- the human annotation ------------------------------------------------------------------

#: where an earlier emerge wrote the human annotation's Data Docs (removed on import)
ANNOTATION_DOCS = "validation/docs/human_annotation"


def annotation_files(out: Path) -> list[Path]:
    """The release's ``human_annotation/*.jsonl`` (the authors' folder)."""
    from emerge_lib.formats.layout import HUMAN_ANNOTATION

    return sorted((out / HUMAN_ANNOTATION).glob("*.jsonl"))


def validate_annotation(spark: SparkSession, out: Path,
                        released: list[tuple[str, str, str, str]]) -> GateReport:
    """Run the human annotation's suites on ``out/human_annotation/*.jsonl`` against the
    release's triples ``released`` ((hash_id, s, p, o)). A line that is not JSON is a
    failed check, not a crash: the report says which file."""
    from emerge_lib.formats.format import HUMAN_ASSESSMENT_FIELDS
    from emerge_lib.validation.gate import run_gate
    from emerge_lib.validation.suites import annotation_suites, flatten_annotation

    records: list[tuple[str, dict[str, Any]]] = []
    for path in annotation_files(out):
        rel = path.relative_to(out).as_posix()
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if not line.strip():
                continue
            try:
                records.append((rel, json.loads(line)))
            except ValueError:
                records.append((rel, {"hash_id": None, "tkgu_triples": [],
                                      "_bad_line": f"{rel}:{n}"}))
    lines, entries = flatten_annotation(records)
    shutil.rmtree(out / ANNOTATION_DOCS, ignore_errors=True)  # the page shows the checks
    return run_gate(annotation_suites(spark, lines, entries, released, HUMAN_ASSESSMENT_FIELDS),
                    run_name="human annotation")


def annotation_verdict(report: GateReport) -> dict[str, Any]:
    """The manifest's ``validation.human_annotation`` entry."""
    verdict: dict[str, Any] = {"success": report.success, "checks": len(report.results),
                               "results": VALIDATION_RESULTS, "page": VALIDATION_PAGE}
    if not report.success:
        verdict["reason"] = f"human annotation: {report.summary()}"
    return verdict


def settle(verdict: Mapping[str, Any]) -> dict[str, Any]:
    """The release's validation verdict with ``success`` and ``reason`` recomputed from its
    parts, after a part changed on a written release (``emerge annotate import`` adds
    ``human_annotation`` and rewrites croissant.json): every snapshot passed its table and
    release suites, croissant.json validates (when checked), the human annotation passed
    (when there). A release written with validation off stays unvalidated."""
    out = {k: v for k, v in verdict.items() if k not in ("success", "reason")}
    snapshots = out.get("snapshots") or {}
    reasons = [] if snapshots else [str(verdict.get("reason") or "not validated")]
    reasons += [f"{snap}: tables {st.get('tables')}, release files {st.get('release')}"
                for snap, st in sorted(snapshots.items())
                if st.get("tables") != "passed" or st.get("release") != "passed"]
    croissant = out.get("croissant")
    if isinstance(croissant, Mapping) and not croissant.get("success"):
        reasons.append("croissant.json does not validate: "
                       + "; ".join(map(str, croissant.get("problems", [])[:3])))
    annotation = out.get("human_annotation")
    if isinstance(annotation, Mapping) and not annotation.get("success"):
        reasons.append(str(annotation.get("reason") or "human annotation failed"))
    out["success"] = not reasons
    if reasons:
        out["reason"] = "; ".join(reasons)
    return out
