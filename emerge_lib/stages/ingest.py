"""Dump files → timelines, for both wikis, in three steps: plan → extract → commit.

- **plan** (`plan_ingest`): the dump files (given paths, or the configured mirror's dump
  dates) with their sizes and the mirror's sha1, each marked *done* when the warehouse
  already holds it as it is now (same size and sha1, read to its end, and for Wikipedia
  covering the ranges asked for): done files are neither read nor committed again. Paths
  are checked before anything starts (`check_inputs`).
- **extract** (`extract`): one file, in any process or on any machine. The worker reads
  its own share of the stored state (the watermarks of its page-id range, and for
  Wikipedia the coverage) from the catalog, stages Parquet under a staging URI, and
  returns a picklable `FileSummary` with a digest of the state it read (``basis``).
- **commit** (`commit`): one file's or a batch's staged output into Delta, idempotently.
  A file whose basis changed since its extraction (another writer committed pages of its
  range meanwhile) is not committed but returned, to be extracted again.

`run_ingest` runs the three here (extraction in a process pool of ``dumps.workers``, or as
Spark tasks with ``dumps.executor: spark``), dump date by dump date (each newer dump must
see the watermarks the older one left). An Airflow DAG maps extract over files and commits
what they staged. Rejects are judged on stored state (`check_rejects`), so a rerun gives
the same verdict as the first run.
"""

from __future__ import annotations

import hashlib
import logging
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from emerge_lib.config import Config, ConfigError
from emerge_lib.errors import InputError
from emerge_lib.stages.ingest_common import (
    DumpFileRef,
    IngestError,
    WorkerPool,
    log_file,
    refs_by_date,
    run_workers,
)
from emerge_lib.stages.ingest_wikidata import page_filters
from emerge_lib.stages.staging import FileSummary, missing_outputs, remove_staging
from emerge_lib.tables import Catalog

log = logging.getLogger(__name__)

Kind = Literal["wikidata", "wikipedia"]
Range = tuple[int, int]
KINDS: tuple[Kind, ...] = ("wikidata", "wikipedia")
DELETED = "text_deleted"  # normal in real dumps: counted, not held against the reject ratio
FILE_ERROR = "file_error"


# -- plan ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class PlannedFile:
    """One dump file of a plan; ``ranges``: the paragraph ranges a Wikipedia file is read for."""

    ref: DumpFileRef
    bytes: int
    ranges: tuple[Range, ...] = ()
    done: bool = False

    @property
    def name(self) -> str:
        return self.ref.name


@dataclass
class IngestPlan:
    kind: Kind
    wiki: str
    files: list[PlannedFile]
    needed: list[Range] = field(default_factory=list)  # Wikipedia: what the snapshots need
    rewrite: bool = False  # dumps.reingest: every page rewritten unless stored newer

    @property
    def pending(self) -> list[PlannedFile]:
        return [f for f in self.files if not f.done]

    def pending_by_date(self) -> list[list[PlannedFile]]:
        by_ref = {f.ref: f for f in self.pending}
        return [[by_ref[r] for r in refs] for refs in refs_by_date(list(by_ref)).values()]

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON data (a plan travels between Airflow tasks through XCom)."""
        return {"kind": self.kind, "wiki": self.wiki, "rewrite": self.rewrite,
                "needed": [list(r) for r in self.needed],
                "files": [{"path": str(f.ref.path), "dump_date": f.ref.dump_date,
                           "sha1": f.ref.sha1, "bytes": f.bytes,
                           "ranges": [list(r) for r in f.ranges], "done": f.done}
                          for f in self.files]}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> IngestPlan:
        files = [PlannedFile(DumpFileRef(Path(f["path"]), f["dump_date"], f["sha1"]), f["bytes"],
                             tuple((a, b) for a, b in f["ranges"]), f["done"])
                 for f in data["files"]]
        return cls(data["kind"], data["wiki"], files,
                   [(a, b) for a, b in data["needed"]], data["rewrite"])


def check_inputs(paths: Sequence[str | Path]) -> list[Path]:
    """Every path must be a non-empty regular file that looks like a dump (XML or a known
    compression by its magic bytes); one InputError names every bad one, before any
    engine starts or any file is read."""
    from emerge_lib.dumps.compressed import DumpInputError, check_input, detect_codec

    problems, out = [], []
    for raw in paths:
        p = Path(raw)
        try:
            check_input(p)
            detect_codec(p)
        except DumpInputError as exc:
            problems.append(str(exc))
        else:
            out.append(p)
    if len(problems) == 1:
        raise InputError(f"cannot read {problems[0]}")
    if problems:
        raise InputError(f"cannot use {len(problems)} dump files: " + "; ".join(problems))
    seen: dict[str, Path] = {}
    for p in out:  # Wikimedia publishes each history file as .bz2 and .7z: one will do
        same = seen.setdefault(_content_name(p), p)
        if same != p:
            raise InputError(f"{same.name} and {p.name} are the same dump file in two formats "
                             "(or twice): give one of them")
    return out


def _content_name(path: Path) -> str:
    """A dump file's name without its compression suffix (the same pages in any format)."""
    name = path.name
    for suffix in (".bz2", ".7z", ".gz", ".xz"):
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name


def local_inputs(cfg: Config, paths: Sequence[str | Path],
                 progress_factory: Any = None) -> list[str | Path]:
    """Paths as given; a ``file://`` URL as its path; an ``http(s)://`` URL of a file on a
    dump mirror (``…/{wiki}/{YYYYMMDD}/{name}``) downloaded into ``dumps.download_dir``,
    resumably and verified against the mirror's published size and checksums."""
    from urllib.parse import unquote, urlparse

    out: list[str | Path] = []
    for raw in paths:
        text = str(raw)
        url = urlparse(text)
        if url.scheme == "file":
            out.append(Path(unquote(url.path)))
        elif url.scheme in ("http", "https"):
            out.append(_download_url(cfg, text, progress_factory))
        else:
            out.append(raw)
    return out


def _download_url(cfg: Config, url: str, progress_factory: Any = None) -> Path:
    from emerge_lib.dumps.mirror import Mirror

    base, _, tail = url.rstrip("/").rpartition("/")
    base, _, date = base.rpartition("/")
    base, _, wiki = base.rpartition("/")
    if not (len(date) == 8 and date.isdigit() and wiki and base):
        raise InputError(f"{url}: not a dump file URL of the form MIRROR/WIKI/YYYYMMDD/NAME")
    with Mirror(base) as mirror:
        found = [f for f in mirror.files(wiki, date, require_done=False) if f.name == tail]
        if not found:
            raise InputError(f"{url}: {tail} is not listed in {wiki} {date}'s dumpstatus.json")
        progress = progress_factory(found[0]) if progress_factory else None
        return mirror.download(found[0], Path(cfg.dumps.download_dir) / wiki / date,
                               progress=progress)


def wiki_of(cfg: Config, kind: Kind) -> str:
    return (cfg.dumps.wikidata if kind == "wikidata" else cfg.dumps.wikipedia).wiki


def needed_ranges_of(cfg: Config, kind: Kind) -> list[Range]:
    if kind != "wikipedia":
        return []
    from emerge_lib.stages.ingest_wikipedia import ranges_from_config

    ranges = ranges_from_config(cfg)
    if not ranges:
        raise ConfigError("ingesting Wikipedia needs snapshots.timestamps: paragraphs are "
                          "kept for the time ranges the snapshots need")
    return ranges


def refs_from_mirror(cfg: Config, kind: Kind, done: Callable[[str, int | None, str | None], bool],
                     progress_factory: Any = None) -> list[DumpFileRef]:
    """The configured mirror's history files of the configured dump dates, as local files
    (a file:// mirror is read in place, an http(s) one downloaded, resumably), one per page
    range in the ``dumps.prefer`` format where both are published (a file the warehouse
    already holds in the other format stays as it is); files the warehouse already holds
    are not verified or downloaded again."""
    from emerge_lib.dumps.mirror import Mirror

    dumps = cfg.dumps.wikidata if kind == "wikidata" else cfg.dumps.wikipedia
    out: list[DumpFileRef] = []
    with Mirror(cfg.dumps.mirror) as mirror:
        for date in dumps.dates:
            for f in mirror.history_files(dumps.wiki, date, cfg.dumps.prefer,
                                          held=lambda held: done(held.name, held.size, held.sha1)):
                skip = done(f.name, f.size, f.sha1)
                if mirror.scheme == "file":
                    path = mirror.local_path(f, verify=not skip)
                elif skip:
                    path = Path(cfg.dumps.download_dir) / dumps.wiki / date / f.name
                else:
                    progress = progress_factory(f) if progress_factory else None
                    dest = Path(cfg.dumps.download_dir) / dumps.wiki / date
                    path = mirror.download(f, dest, progress=progress)
                out.append(DumpFileRef(path, date, f.sha1))
    return out


def plan_ingest(cfg: Config, catalog: Catalog, kind: Kind,
                paths: Sequence[str | Path] | None = None,
                progress_factory: Any = None) -> IngestPlan:
    """The files to ingest (``paths``, else the configured mirror's dump dates)."""
    wiki = wiki_of(cfg, kind)
    needed = needed_ranges_of(cfg, kind)
    stored = {r["dump_file"]: r for r in catalog.read_arrow(
        "ingested_files", filters=[("wiki", "=", wiki)]).to_pylist()}
    cov: dict[str, list[Range]] = {}
    kept: tuple[Range, ...] = ()
    if kind == "wikipedia":
        from emerge_lib.stages.ingest_wikipedia import coverage, covers, merge_ranges

        cov = coverage(catalog, wiki)
        # coverage accumulates: a file is read for what the warehouse covers and what the
        # snapshots now need, so no earlier snapshot loses its paragraphs
        kept = tuple(merge_ranges([r for have in cov.values() for r in have] + needed))

    def is_done(name: str, size: int | None, sha1: str | None) -> bool:
        if cfg.dumps.reingest:
            return False
        row = stored.get(name)
        if row is None or row["error"] is not None or size is None or row["bytes"] != size:
            return False
        if sha1 and row["sha1"] and row["sha1"] != sha1:
            return False
        return kind != "wikipedia" or covers(cov.get(name, []), needed)

    if paths:
        refs = [DumpFileRef.of(p) for p in check_inputs(local_inputs(cfg, paths,
                                                                   progress_factory))]
    else:
        refs = refs_from_mirror(cfg, kind, is_done, progress_factory)
    files = []
    for ref in refs:
        size = ref.path.stat().st_size
        row = stored.get(ref.name)
        if row is not None and (row["bytes"] != size or (ref.sha1 and row["sha1"]
                                                         and row["sha1"] != ref.sha1)):
            log.warning("%s: the warehouse %s already holds a different file of this name "
                        "(%s bytes, now %s): it is read again, and pages only the other one "
                        "had stay; use a fresh warehouse for unrelated dumps", ref.name,
                        catalog.warehouse, row["bytes"], size)
        files.append(PlannedFile(ref, size, kept, is_done(ref.name, size, ref.sha1)))
    return IngestPlan(kind, wiki, files, needed, rewrite=cfg.dumps.reingest)


# -- extract -------------------------------------------------------------------------------
@dataclass(frozen=True)
class ExtractJob:
    """Everything one extraction needs, picklable (a pool, a Spark task, an Airflow task)."""

    kind: Kind
    wiki: str
    file: PlannedFile
    staging: str  # this job's own staging folder (a path or a filesystem URI)
    warehouse: str
    storage_options: dict[str, str] = field(default_factory=dict)
    rewrite: bool = False  # every page written anew, unless the warehouse holds a newer state

    @property
    def bytes(self) -> int:  # run_workers starts the largest files first
        return self.file.bytes


def job_for(plan: IngestPlan, f: PlannedFile, staging_root: str, catalog: Catalog) -> ExtractJob:
    folder = f"{staging_root.rstrip('/')}/{plan.wiki}/{f.ref.dump_date or 'undated'}/" \
             f"{f.name}-{uuid.uuid4().hex[:12]}"
    return ExtractJob(plan.kind, plan.wiki, f, folder, catalog.warehouse,
                      dict(catalog.storage_options), plan.rewrite)


def basis(catalog: Catalog, kind: Kind, wiki: str, page_range: Range | None) -> str:
    """A digest of the stored state an extraction of ``page_range`` depends on: its pages'
    watermarks and, for Wikipedia, the coverage of the dump files those pages were last
    read from (what says which pages may be skipped). Only that: files of disjoint page
    ranges, committed one after the other, leave each other's basis as it was."""
    digest = hashlib.blake2b(digest_size=12)
    marks = catalog.read_arrow(
        "page_watermarks", filters=page_filters(wiki, page_range),
        columns=["page_id", "last_rev_id", "last_timestamp", "max_rev_id", "revisions",
                 "dump_file"])
    parts = [marks.sort_by("page_id")]
    read_from = sorted(set(marks.column("dump_file").to_pylist()) - {None})
    if kind == "wikipedia" and read_from:
        cov = catalog.read_arrow(
            "paragraph_coverage", filters=[("wiki", "=", wiki), ("dump_file", "in", read_from)],
            columns=["dump_file", "range_from", "range_to"])
        parts.append(cov.sort_by([("dump_file", "ascending"), ("range_from", "ascending")]))
    for table in parts:
        for column in table.combine_chunks().columns:
            digest.update(repr(column.to_pylist()).encode())
    return digest.hexdigest()


def extract(job: ExtractJob, threads: int | None = 1) -> FileSummary:
    """Extract one file (module-level and picklable: the process-pool and Spark entry point)."""
    catalog = Catalog(job.warehouse, storage_options=job.storage_options)
    ref = job.file.ref
    page_range = ref.page_range
    stamp = basis(catalog, job.kind, job.wiki, page_range)
    if job.kind == "wikidata":
        from emerge_lib.stages.ingest_wikidata import load_watermarks
        from emerge_lib.stages.wikidata_extract import WikidataFileExtractor

        marks = load_watermarks(catalog, job.wiki, page_range)
        summary = WikidataFileExtractor(ref.path, job.staging, job.wiki, ref.name,
                                        ref.dump_date, marks, threads,
                                        replace_pages=job.rewrite).run()
    else:
        from emerge_lib.stages.ingest_wikipedia import load_marks
        from emerge_lib.stages.wikipedia_extract import WikipediaFileExtractor

        ranges = list(job.file.ranges)
        pages = load_marks(catalog, job.wiki, ranges, page_range, skippable=not job.rewrite)
        summary = WikipediaFileExtractor(ref.path, job.staging, ranges, job.wiki, ref.name,
                                         ref.dump_date, pages, threads).run()
    summary.basis, summary.sha1, summary.staging = stamp, ref.sha1, job.staging
    return summary


# -- commit --------------------------------------------------------------------------------
def commit(catalog: Catalog, plan: IngestPlan,
           summaries: Sequence[FileSummary]) -> list[FileSummary]:
    """Commit the staged outputs of ``summaries``; returns those not committed because the
    state their extraction read has changed since (extract them again)."""
    ranges = {f.name: f.ref.page_range for f in plan.files}
    fresh, stale = [], []
    for s in summaries:
        same = s.basis == basis(catalog, plan.kind, plan.wiki, ranges.get(s.dump_file))
        (fresh if same else stale).append(s)
    for s in stale:
        log.warning("%s: another writer committed pages of this file since it was read; "
                    "it is read again", s.dump_file)
        remove_staging(s.staging)
    if not fresh:
        return stale
    lost = missing_outputs(fresh)
    if lost:
        raise IngestError(f"{len(lost)} staged file(s) vanished before the commit, e.g. "
                          f"{lost[0]}; nothing was committed: extract again", retryable=True)
    spark = catalog.session()
    if plan.kind == "wikidata":
        from emerge_lib.stages.ingest_wikidata import commit_staged

        commit_staged(catalog, fresh)
    else:
        from emerge_lib.stages.ingest_wikipedia import commit_staged as commit_wikipedia

        commit_wikipedia(catalog, fresh, plan.wiki,
                         {f.name: f.ranges for f in plan.files})
    _commit_rejects(catalog, fresh, plan.wiki)
    marks = [s.outputs["page_watermarks"] for s in fresh if "page_watermarks" in s.outputs]
    if marks:
        catalog.merge("page_watermarks", spark.read.parquet(*marks))
    catalog.merge("ingested_files", catalog.frame("ingested_files",
                                                  _file_rows(catalog, plan.wiki, fresh)))
    for s in fresh:
        remove_staging(s.staging)
    return stale


REJECT_KEY = ("wiki", "dump_file", "page_id", "rev_id", "reason")


def _commit_rejects(catalog: Catalog, summaries: Sequence[FileSummary], wiki: str) -> None:
    """Quarantine rows accumulate (MERGE on what was rejected), so an incremental rerun
    that does not decode old revisions again keeps their rows; a file that now reads to
    its end loses its earlier ``file_error`` row."""
    spark = catalog.session()
    paths = [s.outputs["ingest_rejects"] for s in summaries if "ingest_rejects" in s.outputs]
    if paths:
        # a replayed page can reject the same revision twice
        catalog.merge("ingest_rejects",
                      spark.read.parquet(*paths).dropDuplicates(list(REJECT_KEY)))
    recovered = [s.dump_file for s in summaries if not s.error]
    if recovered:
        catalog.delete_matching("ingest_rejects", catalog.frame("ingest_rejects", [
            {"wiki": wiki, "dump_file": f, "reason": FILE_ERROR} for f in recovered
        ]), on=["wiki", "dump_file", "reason"])


def _file_rows(catalog: Catalog, wiki: str,
               summaries: Sequence[FileSummary]) -> list[dict[str, Any]]:
    """ingested_files rows; reject counts come from the stored quarantine, not from this
    read (an incremental read decodes only new revisions)."""
    names = [s.dump_file for s in summaries]
    rejects = catalog.read_arrow(
        "ingest_rejects", filters=[("wiki", "=", wiki), ("dump_file", "in", names)],
        columns=["dump_file", "page_id", "rev_id", "reason"]).to_pylist()
    per_file = {n: {"rows": 0, "deleted": 0, "pages": 0} for n in names}
    for r in rejects:
        stats = per_file[r["dump_file"]]
        stats["rows"] += 1
        if r["reason"] == DELETED:
            stats["deleted"] += 1
        elif r["reason"] != FILE_ERROR and r["rev_id"] is None:  # the page itself
            stats["pages"] += 1
    now = datetime.now(UTC)
    return [{
        "wiki": wiki, "dump_date": s.dump_date, "dump_file": s.dump_file, "sha1": s.sha1,
        "pages": s.pages, "revisions": s.revisions, "rejects": per_file[s.dump_file]["rows"],
        "rejected_pages": per_file[s.dump_file]["pages"],
        "deleted_revisions": per_file[s.dump_file]["deleted"], "bytes": s.bytes,
        "seconds": s.seconds, "ingested_at": now, "error": s.error,
    } for s in summaries]


# -- the verdict ---------------------------------------------------------------------------
def check_rejects(catalog: Catalog, plan: IngestPlan, max_reject_ratio: float) -> dict[str, int]:
    """Fail loudly (after everything readable was committed) when a file of the plan failed,
    or rejected revisions or pages exceed ``max_reject_ratio``. Judged on the stored rows of
    every file of the plan, done ones included, so a rerun gives the same verdict. Deleted
    or suppressed revisions are counted, not held against the ratio. Returns the totals."""
    names = {f.name for f in plan.files}
    rows = [r for r in catalog.read_arrow("ingested_files",
                                          filters=[("wiki", "=", plan.wiki)]).to_pylist()
            if r["dump_file"] in names]
    totals = {k: sum(r[k] or 0 for r in rows)
              for k in ("pages", "revisions", "rejects", "rejected_pages", "deleted_revisions")}
    failed = [r for r in rows if r["error"]]
    if failed:
        listed = "; ".join(r["error"] if r["dump_file"] in r["error"] else
                           f"{r['dump_file']}: {r['error']}" for r in failed[:3])
        more = f" (and {len(failed) - 3} more)" if len(failed) > 3 else ""
        rest = "; the other files are committed" if len(failed) < len(names) else ""
        raise IngestError(f"{len(failed)} of {len(names)} {plan.wiki} files failed: "
                          f"{listed}{more}{rest}")
    bad_revisions = totals["rejects"] - totals["deleted_revisions"]
    checks = [("revisions", bad_revisions, totals["revisions"]),
              ("pages", totals["rejected_pages"], totals["pages"])]
    for what, bad, of in checks:
        if of and bad / of > max_reject_ratio:
            raise IngestError(
                f"{plan.wiki}: {bad} of {of} {what} rejected ({bad / of:.2%} > "
                f"dumps.max_reject_ratio {max_reject_ratio:.2%}; {totals['deleted_revisions']} "
                "deleted revisions not counted); see the ingest_rejects table")
    return totals


# -- the local driver ----------------------------------------------------------------------
@dataclass
class IngestReport:
    """What one ingest did: per-file summaries of the files read, files found done."""

    kind: Kind
    wiki: str
    files: list[FileSummary] = field(default_factory=list)
    done: list[str] = field(default_factory=list)
    totals: dict[str, int] = field(default_factory=dict)  # stored, over the whole plan
    seconds: float = 0.0

    @property
    def revisions(self) -> int:
        return sum(f.revisions for f in self.files)

    @property
    def pages(self) -> int:
        return sum(f.pages for f in self.files)

    @property
    def rejects(self) -> int:
        return self.totals.get("rejects", 0)

    @property
    def bytes(self) -> int:
        return sum(f.bytes for f in self.files)

    def rows(self) -> dict[str, int]:
        """Rows staged and committed per catalog table."""
        from emerge_lib.tables import TABLES

        out: dict[str, int] = {}
        for f in self.files:
            for name, n in f.rows.items():
                if name in TABLES:
                    out[name] = out.get(name, 0) + n
        return out


STALE_ATTEMPTS = 3


def run_ingest(cfg: Config, catalog: Catalog, kind: Kind,
               paths: Sequence[str | Path] | None = None,
               on_file: Callable[[FileSummary], None] | None = None,
               progress_factory: Any = None,
               on_plan: Callable[[IngestPlan], None] | None = None) -> IngestReport:
    """Plan, extract and commit one wiki's files here (see the module docstring)."""
    started = time.monotonic()
    with ingest_lock(catalog, wiki_of(cfg, kind)):
        plan = plan_ingest(cfg, catalog, kind, paths, progress_factory)
        if on_plan:
            on_plan(plan)
        report = IngestReport(kind, plan.wiki, done=[f.name for f in plan.files if f.done])
        spark = catalog.session() if cfg.dumps.executor == "spark" else None

        def finished(summary: FileSummary) -> None:
            log_file(summary)
            if on_file:
                on_file(summary)

        with WorkerPool(cfg.workers) as pool:
            _run_batches(cfg, catalog, plan, report, pool, spark, finished)
        report.totals = check_rejects(catalog, plan, cfg.dumps.max_reject_ratio)
    report.seconds = time.monotonic() - started
    return report


def _run_batches(cfg: Config, catalog: Catalog, plan: IngestPlan, report: IngestReport,
                 pool: WorkerPool, spark: Any, finished: Callable[[FileSummary], None]) -> None:
    """Extract and commit the pending files, dump date by dump date; stale ones again."""
    for batch in plan.pending_by_date():
        for attempt in range(1, STALE_ATTEMPTS + 1):
            jobs = [(job_for(plan, f, cfg.staging, catalog),) for f in batch]
            try:
                summaries = run_workers(extract, jobs, cfg.workers, finished, spark, pool)
                stale = commit(catalog, plan, summaries)
            except BaseException:
                for (job,) in jobs:
                    remove_staging(job.staging)
                raise
            report.files.extend(s for s in summaries if s not in stale)
            if not stale:
                break
            if attempt == STALE_ATTEMPTS:
                raise IngestError(
                    f"{len(stale)} {plan.wiki} file(s) kept changing under concurrent "
                    f"writers ({stale[0].dump_file}); run the ingest again",
                    retryable=True)
            names = {s.dump_file for s in stale}
            batch = [replace(f, ranges=_kept(catalog, plan, f)) for f in batch
                     if f.name in names]


def finish_ingest(cfg: Config, catalog: Catalog, plan: IngestPlan,
                  summaries: Sequence[FileSummary]) -> IngestReport:
    """Commit what extractions elsewhere staged (``summaries``, of the plan's oldest pending
    dump date), extract again here what went stale meanwhile and the files of newer dump
    dates (each needs the watermarks of the one before), then judge the rejects over the
    whole plan. Files whose staged output is gone because the warehouse already holds them
    (a rerun of the commit) are not committed again."""
    started = time.monotonic()
    report = IngestReport(plan.kind, plan.wiki, done=[f.name for f in plan.files if f.done])
    with ingest_lock(catalog, plan.wiki):
        stored = {r["dump_file"]: r for r in catalog.read_arrow(
            "ingested_files", filters=[("wiki", "=", plan.wiki)]).to_pylist()}
        missing = set(missing_outputs(summaries))
        held = [s for s in summaries if any(o in missing for o in s.outputs.values())
                and _holds(stored.get(s.dump_file), s)]
        if held:
            log.info("%d %s file(s) already committed (a rerun): not committed again",
                     len(held), plan.wiki)
            report.done += [s.dump_file for s in held]
        fresh = [s for s in summaries if s not in held]
        stale = commit(catalog, plan, fresh) if fresh else []
        report.files.extend(s for s in fresh if s not in stale)
        handled = {s.dump_file for s in fresh} - {s.dump_file for s in stale} | {
            s.dump_file for s in held}
        stored = {r["dump_file"]: r for r in catalog.read_arrow(
            "ingested_files", filters=[("wiki", "=", plan.wiki)]).to_pylist()}
        cov = _coverage(catalog, plan)
        left = [replace(f, ranges=_kept(catalog, plan, f)) for f in plan.pending
                if f.name not in handled and not _committed(stored.get(f.name), f, cov, plan)]
        if left:
            log.info("%s: %d file(s) extracted here (stale, or of a newer dump date)",
                     plan.wiki, len(left))
            rest = replace(plan, files=left)
            spark = catalog.session() if cfg.dumps.executor == "spark" else None
            with WorkerPool(cfg.workers) as pool:
                _run_batches(cfg, catalog, rest, report, pool, spark, log_file)
        report.totals = check_rejects(catalog, plan, cfg.dumps.max_reject_ratio)
    report.seconds = time.monotonic() - started
    return report


def _coverage(catalog: Catalog, plan: IngestPlan) -> dict[str, list[Range]]:
    if plan.kind != "wikipedia":
        return {}
    from emerge_lib.stages.ingest_wikipedia import coverage

    return coverage(catalog, plan.wiki)


def _committed(row: dict[str, Any] | None, f: PlannedFile, cov: dict[str, list[Range]],
               plan: IngestPlan) -> bool:
    """Does the warehouse already hold ``f`` as planned (a rerun after its commit)?"""
    if row is None or row["error"] is not None or row["bytes"] != f.bytes:
        return False
    if f.ref.sha1 and row["sha1"] and row["sha1"] != f.ref.sha1:
        return False
    if plan.kind != "wikipedia":
        return True
    from emerge_lib.stages.ingest_wikipedia import covers

    return covers(cov.get(f.name, []), plan.needed)


def _holds(row: dict[str, Any] | None, s: FileSummary) -> bool:
    return row is not None and row["error"] is None and row["bytes"] == s.bytes and (
        not s.sha1 or not row["sha1"] or row["sha1"] == s.sha1)


def _kept(catalog: Catalog, plan: IngestPlan, f: PlannedFile) -> tuple[Range, ...]:
    """A Wikipedia file's ranges, recomputed from the coverage as it is now."""
    if plan.kind != "wikipedia":
        return f.ranges
    from emerge_lib.stages.ingest_wikipedia import covered_ranges, merge_ranges

    return tuple(merge_ranges(covered_ranges(catalog, plan.wiki) + list(plan.needed)))


@contextmanager
def ingest_lock(catalog: Catalog, wiki: str) -> Iterator[None]:
    """One ingest of a wiki into a local warehouse at a time (two builds started side by
    side: the second waits, then finds the files done). An ``s3://`` warehouse has no lock
    here; the commit's basis check still refuses to commit an extraction that is stale."""
    if "://" in catalog.warehouse:
        yield
        return
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX
        yield
        return
    folder = Path(catalog.warehouse) / "_locks"
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / f"ingest-{wiki}.lock", "w") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            log.info("another ingest of %s into %s is running; waiting for it", wiki,
                     catalog.warehouse)
            fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def describe(report: IngestReport) -> str:
    """Every figure of one ingest on one line (logged at DEBUG; the stage line has the
    essentials)."""
    mb = report.bytes / 1e6
    rate = f", {mb / report.seconds:.1f} MB/s" if report.seconds and mb else ""
    done = f", {len(report.done)} already ingested" if report.done else ""
    return (f"{report.wiki}: {len(report.files)} files read{done}, {report.pages} pages, "
            f"{report.revisions} revisions, {mb:.1f} MB in {report.seconds:.1f}s{rate}; "
            f"{report.totals.get('rejects', 0)} rejects stored "
            f"({report.totals.get('deleted_revisions', 0)} deleted revisions)")


__all__ = ["KINDS", "ExtractJob", "IngestError", "IngestPlan", "IngestReport", "PlannedFile",
           "check_inputs", "check_rejects", "commit", "extract", "finish_ingest", "local_inputs",
           "plan_ingest", "run_ingest"]
