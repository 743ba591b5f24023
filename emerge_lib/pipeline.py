"""The stage registry: every stage, what it reads and writes, and one way to run it.

The CLI, the demo, the tests and the Airflow tasks all call stages through
:func:`run_stage` (or :func:`build_dataset`, a loop over :data:`STAGES`), so the wiring of
configuration to stage parameters exists once, here. Each stage is a pure function of the
catalog tables it declares in ``reads`` writing those in ``writes`` (its own partitions,
idempotently); ``settings`` names the configuration sections it uses. A test checks the
catalog's producers and consumers against these declarations.

Scopes: ``ingest`` stages read dump files (given paths, or the configured mirror);
``global`` stages rebuild a whole table; ``snapshot`` stages run once per snapshot t;
``release`` writes files outside the warehouse.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from emerge_lib.config import Config
from emerge_lib.dumps.compressed import cpu_seconds
from emerge_lib.errors import EmergeError
from emerge_lib.schedule import SnapshotPlan
from emerge_lib.tables import Catalog

log = logging.getLogger(__name__)

Scope = Literal["ingest", "global", "snapshot", "release"]


@dataclass
class StageContext:
    """What a stage runs with: the configuration, the catalog, and where inputs and
    outputs are (``wikidata``/``wikipedia``: dump file paths; None: the configured
    mirror's dump dates)."""

    cfg: Config
    catalog: Catalog
    wikidata: Sequence[str | Path] | None = None
    wikipedia: Sequence[str | Path] | None = None
    release_dir: str | Path | None = None
    on_file: Callable[[Any], None] | None = None  # after each dump file is extracted
    on_plan: Callable[[Any], None] | None = None  # with each ingest plan, before extraction
    on_curation: Callable[[Any], None] | None = None  # curation progress (a CurateReport)
    progress_factory: Any = None  # per-download progress (http mirrors)
    # publish: a boto3 session or S3 client handed in (Airflow's amazon connection); None:
    # one from the environment's credentials (or publish.profile) on the s3 endpoint
    s3_client: Any = None
    on_transfer_total: Callable[[int], None] | None = None  # bytes a transfer will move
    on_transfer: Callable[[int], None] | None = None  # byte increments as they move

    def inputs(self, kind: str) -> Sequence[str | Path] | None:
        return self.wikidata if kind == "wikidata" else self.wikipedia

    def has_inputs(self, kind: str) -> bool:
        return has_inputs(self.cfg, kind, self.inputs(kind))


def has_inputs(cfg: Config, kind: str, paths: Sequence[str | Path] | None) -> bool:
    """Whether a wiki has something to ingest: paths, or configured dump dates."""
    dumps = cfg.dumps.wikidata if kind == "wikidata" else cfg.dumps.wikipedia
    return bool(paths) or bool(dumps.dates)


def _figure(v: float) -> str:
    """A count as 1,234; a small fractional rate with two significant digits (0.33)."""
    return f"{v:.2g}" if 0 < abs(v) < 10 and v != int(v) else f"{v:,.0f}"


@dataclass(frozen=True)
class StageResult:
    """What one stage run did: rows written per table, seconds, and a few figures."""

    stage: str
    snapshot: str | None
    rows: dict[str, int]
    seconds: float
    metrics: dict[str, float] = field(default_factory=dict)
    note: str = ""  # e.g. "up to date": nothing was written
    # the stage's own report (per-file ingest summaries, the release summary), for callers
    # in this process; not part of to_dict()
    detail: Any = field(default=None, compare=False, repr=False)
    # CPU seconds of this process and of the workers it reaped during the stage (0: not
    # measured); over ``seconds`` it says how many cores the stage kept busy
    cpu_seconds: float = 0.0

    def brief(self) -> str:
        """One line for logs: rows per table and a rate."""
        where = f" {self.snapshot}" if self.snapshot else ""
        parts = [f"{name} {n:,} rows" for name, n in self.rows.items()]
        total = sum(self.rows.values())
        rate = ""
        if self.metrics.get("MB") and self.seconds:
            rate = f", {self.metrics['MB'] / self.seconds:.1f} MB/s"
        elif total and self.seconds:
            rate = f", {total / self.seconds:,.0f} rows/s"
        extra = "".join(f", {_figure(v)} {k}" for k, v in self.metrics.items() if k != "MB")
        what = "; ".join(parts) or "nothing written"
        note = f" ({self.note})" if self.note else ""
        cores = ""
        if self.cpu_seconds and self.seconds >= 1:
            cores = f", {self.cpu_seconds / self.seconds:.2f} cores"
        return f"{self.stage}{where}: {what}{extra} in {self.seconds:.1f}s{rate}{cores}{note}"

    def to_dict(self) -> dict[str, Any]:
        """Plain data (for Airflow's XCom and JSON reports)."""
        out = asdict(replace(self, detail=None))
        out.pop("detail")
        return out


@dataclass(frozen=True)
class Outcome:
    """What a stage function returns to the runner."""

    rows: dict[str, int]
    metrics: dict[str, float] = field(default_factory=dict)
    note: str = ""
    detail: Any = None


@dataclass(frozen=True)
class Stage:
    name: str
    scope: Scope
    reads: tuple[str, ...]
    writes: tuple[str, ...]
    settings: tuple[str, ...]
    run: Callable[[StageContext, SnapshotPlan | None], Outcome]
    summary: str
    when: Callable[[Config], bool] | None = None  # a build runs it only when this holds


# -- the stages ----------------------------------------------------------------------------
def _ingest(kind: str) -> Callable[[StageContext, SnapshotPlan | None], Outcome]:
    def run(ctx: StageContext, _: SnapshotPlan | None) -> Outcome:
        from emerge_lib.stages.ingest import describe, run_ingest

        report = run_ingest(ctx.cfg, ctx.catalog, kind, ctx.inputs(kind),  # type: ignore[arg-type]
                            on_file=ctx.on_file, progress_factory=ctx.progress_factory,
                            on_plan=ctx.on_plan)
        log.debug("%s", describe(report))  # run_stage logs the one summary line
        metrics: dict[str, float] = {"files": len(report.files)}
        if report.files and report.done:
            metrics["already ingested"] = len(report.done)
        # rejects: stored, over every file of the plan (what the reject-ratio check judged)
        metrics |= {"revisions": report.revisions, "rejects": report.rejects,
                    "MB": report.bytes / 1e6}
        note = "" if report.files else f"{len(report.done)} files already ingested"
        return Outcome(report.rows(), metrics, note, report)

    return run


def _stability(ctx: StageContext, _: SnapshotPlan | None) -> Outcome:
    from emerge_lib.stages.stability import build_stable_statements

    catalog, settings = ctx.catalog, ctx.cfg.stability
    state = {"statement_timeline": catalog.version("statement_timeline"),
             "kg_hours": settings.kg_hours}
    if catalog.exists("stable_statements") and read_state(catalog, "stability") == state:
        return Outcome({}, note="up to date")
    rows = build_stable_statements(catalog, settings)
    write_state(catalog, "stability", state)
    return Outcome({"stable_statements": rows})


def _snapshot(ctx: StageContext, plan: SnapshotPlan | None) -> Outcome:
    from emerge_lib.stages.snapshot import build_snapshot, require_kg_coverage

    assert plan is not None
    require_kg_coverage(ctx.catalog, plan, ctx.cfg.dumps.wikidata.wiki)
    return Outcome(build_snapshot(ctx.catalog, plan))


def _windows(table: str, rows: dict[int, int]) -> Outcome:
    return Outcome({table: sum(rows.values())}, {"windows": len(rows)})


def _deltas(ctx: StageContext, plan: SnapshotPlan | None) -> Outcome:
    from emerge_lib.stages.deltas import build_deltas

    assert plan is not None
    return _windows("delta_triples", build_deltas(ctx.catalog, plan, ctx.cfg.qualifiers,
                                                  ctx.cfg.deltas))


def _passages(ctx: StageContext, plan: SnapshotPlan | None) -> Outcome:
    from emerge_lib.stages.passages import build_passages

    assert plan is not None
    rows = build_passages(ctx.catalog, plan, ctx.cfg.passages, ctx.cfg.stability)
    if not sum(rows.values()):
        log.warning("passages %s: no new passage in any window; does the Wikipedia history "
                    "reach into (t, τ_n]?", plan.key)
    return _windows("passages", rows)


def _align(ctx: StageContext, plan: SnapshotPlan | None) -> Outcome:
    from emerge_lib.stages.align import build_instances

    assert plan is not None
    return _windows("instances", build_instances(ctx.catalog, plan, ctx.cfg.passages,
                                                 ctx.cfg.qualifiers))


def _curate(ctx: StageContext, plan: SnapshotPlan | None) -> Outcome:
    from emerge_lib.stages.curate import build_verdicts

    assert plan is not None
    report = build_verdicts(ctx.catalog, plan, ctx.cfg.curation, ctx.cfg.passages,
                            on_progress=ctx.on_curation)
    metrics = {"requests": report.requests, "asked": report.answered,
               "already answered": report.answered_before, "unparsed": report.unparsed,
               "left": report.left, "tokens out": report.tokens_out}
    if report.replayed:  # answers a killed run received, committed from its journal
        metrics["replayed"] = report.replayed
    if report.seconds and report.answered:
        metrics["requests/s"] = report.answered / report.seconds
        metrics["tokens/s"] = report.tokens_out / report.seconds
    return Outcome({"verdicts": report.rows}, metrics, detail=report)


def _select(ctx: StageContext, plan: SnapshotPlan | None) -> Outcome:
    from emerge_lib.stages.select import build_selection

    assert plan is not None
    return _windows("selection", build_selection(ctx.catalog, plan, ctx.cfg))


def _validate(ctx: StageContext, plan: SnapshotPlan | None) -> Outcome:
    from emerge_lib.stages.validate import validate_snapshot

    assert plan is not None
    report = validate_snapshot(ctx.catalog, plan, ctx.cfg)
    return Outcome({"validation_results": len(report.results)},
                   {"checks passed": sum(r.success for r in report.results)}, detail=report)


def _release(ctx: StageContext, _: SnapshotPlan | None) -> Outcome:
    from emerge_lib.stages.release import write_release

    if ctx.release_dir is None:
        raise EmergeError("the release stage needs an output folder (--out)")
    summary = write_release(ctx.catalog, ctx.release_dir, ctx.cfg.plans(), ctx.cfg.passages,
                            ctx.cfg.curation, ctx.cfg.validation, ctx.cfg.dataset_settings())
    return Outcome(summary.rows(), {"files": len(summary.files)}, detail=summary)


def _publish(ctx: StageContext, _: SnapshotPlan | None) -> Outcome:
    from emerge_lib.publish import client_for, publish_release

    if ctx.release_dir is None:
        raise EmergeError("the publish stage needs the release folder (--release)")
    settings = ctx.cfg.publish
    if not settings.to:
        raise EmergeError("nowhere to publish: set publish.to (or --to s3://BUCKET/PREFIX)")
    report = publish_release(ctx.release_dir, settings.to, client_for(ctx.cfg, ctx.s3_client),
                             workers=settings.workers, part_size_mb=settings.part_size_mb,
                             progress=ctx.on_transfer, on_total=ctx.on_transfer_total)
    note = (f"{report.version} → {report.target}"
            + (", already published" if report.already_published else "")
            + (", latest → this version" if report.latest_changed else ", latest unchanged"))
    return Outcome({}, {"files uploaded": report.uploaded_files,
                        "MB": report.uploaded_bytes / 1e6}, note, report)


INGEST_READS = ("page_watermarks", "ingested_files", "ingest_rejects")
STAGES: dict[str, Stage] = {s.name: s for s in (
    Stage("ingest_wikidata", "ingest", INGEST_READS,
          ("statement_timeline", "item_timeline", "property_timeline", "page_watermarks",
           "ingested_files", "ingest_rejects"),
          ("dumps",), _ingest("wikidata"),
          "Wikidata history files → statement, item and property timelines"),
    Stage("ingest_wikipedia", "ingest", (*INGEST_READS, "paragraph_coverage"),
          ("page_timeline", "paragraph_timeline", "paragraph_coverage", "page_watermarks",
           "ingested_files", "ingest_rejects"),
          ("dumps", "snapshots", "stability"), _ingest("wikipedia"),
          "Wikipedia history files → page and paragraph timelines for the snapshots' ranges"),
    Stage("stability", "global", ("statement_timeline",), ("stable_statements",),
          ("stability",), _stability, "the 168 h KG stability rule over statement_timeline"),
    Stage("snapshot", "snapshot",
          ("stable_statements", "item_timeline", "property_timeline", "page_timeline",
           "paragraph_timeline", "ingested_files"),
          ("kg_triples", "entities", "relations"), ("snapshots", "dumps"), _snapshot,
          "G_t: T_t, V_t and R_t of a snapshot"),
    Stage("deltas", "snapshot", ("statement_timeline", "stable_statements", "item_timeline"),
          ("delta_triples",), ("snapshots", "qualifiers", "deltas"), _deltas,
          "the cumulative KG delta of every window, with operation candidates"),
    Stage("passages", "snapshot",
          ("paragraph_timeline", "page_timeline", "item_timeline", "paragraph_coverage",
           "page_watermarks", "ingested_files"),
          ("passages",), ("snapshots", "passages", "stability"), _passages,
          "new paragraphs of every window, links resolved to QIDs"),
    Stage("align", "snapshot",
          ("passages", "delta_triples", "kg_triples", "stable_statements", "statement_timeline",
           "item_timeline", "property_timeline", "page_timeline", "paragraph_timeline"),
          ("instances",), ("snapshots", "passages", "qualifiers"), _align,
          "passages × deltas → the TKGU instances"),
    Stage("curate", "snapshot", ("instances", "passages", "verdicts"), ("verdicts",),
          ("curation", "passages"), _curate,
          "the paper's prompts to the configured LLMs: a verdict per instance triple",
          when=lambda cfg: cfg.curation.enabled),
    Stage("select", "snapshot", ("instances", "passages", "verdicts"), ("selection",),
          ("selection", "curation", "passages"), _select,
          "near-duplicate passages removed, the seeded stratified test split drawn"),
    Stage("validate", "snapshot",
          ("kg_triples", "entities", "relations", "passages", "instances", "selection",
           "verdicts"),
          ("validation_results",),
          ("validation", "deltas", "passages", "selection", "curation", "snapshots"),
          _validate, "the Great Expectations gate over the snapshot's tables",
          when=lambda cfg: cfg.validation.enabled),
    Stage("release", "release",
          ("instances", "passages", "verdicts", "selection", "validation_results",
           "ingested_files", "kg_triples", "entities", "relations"),
          (), ("snapshots", "stability", "passages", "deltas", "qualifiers", "curation",
               "selection", "validation"),
          _release,
          "the EMERGE-format release (JSONL + Parquet + manifest.json) of every configured "
          "snapshot"),
    Stage("publish", "release", (), (), ("publish", "s3"), _publish,
          "a validated release folder to s3://BUCKET/PREFIX/v/<version>/, manifest last, "
          "then the latest pointer",
          when=lambda cfg: bool(cfg.publish.to)),
)}


def stage(name: str) -> Stage:
    try:
        return STAGES[name]
    except KeyError:
        raise EmergeError(f"no stage named {name!r}; stages: {', '.join(STAGES)}") from None


def run_stage(ctx: StageContext, name: str,
              snapshot: SnapshotPlan | datetime | str | None = None) -> StageResult:
    """Run one stage; a snapshot stage needs ``snapshot`` (a plan, or t with the
    configured windows), the others refuse one. Logs the stage's one-line brief."""
    st = stage(name)
    if st.scope == "snapshot":
        if snapshot is None:
            raise EmergeError(f"stage {name} runs per snapshot: give the snapshot t")
        plan = snapshot if isinstance(snapshot, SnapshotPlan) else ctx.cfg.plan(snapshot)
    elif snapshot is not None:
        raise EmergeError(f"stage {name} is not per snapshot; it takes no snapshot")
    else:
        plan = None
    started, cpu_started = time.monotonic(), cpu_seconds()
    outcome = st.run(ctx, plan)
    result = StageResult(name, plan.key if plan else None, outcome.rows,
                         time.monotonic() - started, outcome.metrics, outcome.note,
                         outcome.detail, cpu_seconds() - cpu_started)
    log.info("stage %s", result.brief())
    return result


def build_steps(ctx: StageContext) -> list[tuple[str, SnapshotPlan | None]]:
    """The (stage, snapshot) steps of a whole build, in order: ingest what inputs exist,
    stability, every configured snapshot's stages, the release when asked for, and its
    publication when ``publish.to`` is set."""
    plans = ctx.cfg.plans()
    if not plans:
        raise EmergeError("no snapshot timestamps configured (snapshots.timestamps / --snapshot)")
    steps: list[tuple[str, SnapshotPlan | None]] = []
    for st in STAGES.values():
        if st.scope == "ingest":
            kind = st.name.removeprefix("ingest_")
            if ctx.has_inputs(kind):
                steps.append((st.name, None))
        elif st.scope == "global":
            steps.append((st.name, None))
    for plan in plans:
        steps += [(st.name, plan) for st in STAGES.values() if st.scope == "snapshot"
                  and (st.when is None or st.when(ctx.cfg))]
    if ctx.release_dir is not None:
        steps.append(("release", None))
        if ctx.cfg.publish.to:  # the release just written, validated, to S3
            steps.append(("publish", None))
    return steps


def build_dataset(ctx: StageContext,
                  on_step: Callable[[str, SnapshotPlan | None], None] | None = None,
                  on_result: Callable[[StageResult], None] | None = None) -> list[StageResult]:
    """Every step of :func:`build_steps`, in order; returns their results."""
    results = []
    for name, plan in build_steps(ctx):
        if on_step:
            on_step(name, plan)
        result = run_stage(ctx, name, plan)
        results.append(result)
        if on_result:
            on_result(result)
    return results


# -- an ingest stage as separate steps: plan → extract (mapped, anywhere) → commit ---------
#: Airflow's default ``[core] max_map_length``: a mapped task expands to at most this many
MAX_MAP_LENGTH = 1024


def _ingest_kind(kind: str) -> str:
    kind = kind.removeprefix("ingest_")
    if kind not in ("wikidata", "wikipedia"):
        raise EmergeError(f"no ingest of {kind!r}; ingests: wikidata, wikipedia")
    return kind


def plan_ingest_groups(ctx: StageContext, kind: str, max_groups: int = 256) -> dict[str, Any]:
    """The plan of one ingest stage, for extraction in separate tasks, as JSON data:
    ``plan`` (every file, done or not), ``groups`` (the pending files of the oldest pending
    dump date, balanced by bytes into at most ``max_groups`` plans of their own: one mapped
    task each, so a dump of thousands of files stays under Airflow's ``max_map_length``)
    and ``later`` (pending files of newer dump dates: each newer dump continues from the
    watermarks the older one left, so the commit step extracts them)."""
    from dataclasses import replace as with_files

    from emerge_lib.stages.ingest import plan_ingest

    kind = _ingest_kind(kind)
    if not 1 <= max_groups <= MAX_MAP_LENGTH:
        raise EmergeError(f"max_groups must be 1..{MAX_MAP_LENGTH}, not {max_groups}")
    if not ctx.has_inputs(kind):
        return {"plan": None, "groups": [], "later": []}
    plan = plan_ingest(ctx.cfg, ctx.catalog, kind, ctx.inputs(kind),  # type: ignore[arg-type]
                       ctx.progress_factory)
    dates = plan.pending_by_date()
    first = dates[0] if dates else []
    groups: list[list[Any]] = [[] for _ in range(min(max_groups, len(first)))]
    load = [0] * len(groups)
    for f in sorted(first, key=lambda f: (-f.bytes, f.name)):  # largest first, to the lightest
        i = load.index(min(load))
        groups[i].append(f)
        load[i] += f.bytes
    log.info("plan %s: %d files, %d done, %d pending in %d groups%s", plan.wiki,
             len(plan.files), len(plan.files) - len(plan.pending), len(first), len(groups),
             f"; {sum(map(len, dates[1:]))} of newer dump dates follow" if len(dates) > 1 else "")
    return {"plan": plan.to_dict(),
            "groups": [with_files(plan, files=g).to_dict() for g in groups],
            "later": [f.name for batch in dates[1:] for f in batch]}


def extract_ingest_group(ctx: StageContext, group: dict[str, Any] | None
                         ) -> list[dict[str, Any]]:
    """Extract the pending files of one group (a plan of its own, from
    :func:`plan_ingest_groups`) here, in a process pool of ``dumps.workers``, into the
    staging area; returns their summaries as JSON data for the commit step. Needs no
    engine session."""
    from emerge_lib.stages.ingest import IngestPlan, extract, job_for
    from emerge_lib.stages.ingest_common import WorkerPool, log_file, run_workers
    from emerge_lib.stages.staging import remove_staging

    if not group:
        return []
    parsed = IngestPlan.from_dict(group)
    jobs = [(job_for(parsed, f, ctx.cfg.staging, ctx.catalog),) for f in parsed.pending]
    workers = max(1, min(ctx.cfg.workers, len(jobs)))
    try:
        with WorkerPool(workers) as pool:
            summaries = run_workers(extract, jobs, workers, log_file, None, pool)
    except BaseException:
        for (job,) in jobs:
            remove_staging(job.staging)
        raise
    return [asdict(s) for s in summaries]


def commit_ingest(ctx: StageContext, plan: dict[str, Any] | None,
                  summaries: Sequence[dict[str, Any] | Sequence[dict[str, Any]]] = ()
                  ) -> StageResult:
    """Commit the staged output of the extract steps (summaries, or lists of them as mapped
    tasks return), extract here what went stale and the newer dump dates, and judge the
    rejects: the ingest stage's result. A rerun commits nothing twice."""
    from emerge_lib.stages.ingest import IngestPlan, describe, finish_ingest
    from emerge_lib.stages.staging import FileSummary

    if plan is None:
        return StageResult("ingest", None, {}, 0.0, note="no input files")
    parsed = IngestPlan.from_dict(plan)
    flat = [item for entry in summaries or () if entry
            for item in ([entry] if isinstance(entry, dict) else entry)]
    started, cpu_started = time.monotonic(), cpu_seconds()
    if parsed.kind == "wikipedia":  # its summaries carry the title-move counts too
        from emerge_lib.stages.wikipedia_extract import WikipediaFileSummary as FileSummary
    report = finish_ingest(ctx.cfg, ctx.catalog, parsed, [FileSummary(**d) for d in flat])
    log.info("%s", describe(report))
    metrics = {"files": len(report.files), "revisions": report.revisions,
               "MB": report.bytes / 1e6}
    note = "" if report.files else f"{len(report.done)} files already ingested"
    result = StageResult(f"ingest_{parsed.kind}", None, report.rows(),
                         time.monotonic() - started, metrics, note, report,
                         cpu_seconds() - cpu_started)
    log.info("stage %s", result.brief())
    return result


# -- waiting for inputs (deferrable waits call these off the event loop) --------------------
def dump_pending(cfg: Config, dump_date: str) -> str | None:
    """None when the history dumps of ``dump_date`` are done on the configured mirror for
    both wikis, else what is still running; a failed dump job raises."""
    from emerge_lib.dumps.mirror import Mirror

    waiting = []
    with Mirror(cfg.dumps.mirror) as mirror:
        for wiki in (cfg.dumps.wikidata.wiki, cfg.dumps.wikipedia.wiki):
            status = mirror.job_status(wiki, dump_date)
            if status == "failed":
                raise EmergeError(f"the {wiki} {dump_date} history dump failed on "
                                  f"{cfg.dumps.mirror}; choose another dump date")
            if status != "done":
                waiting.append(f"{wiki} {dump_date}: {status or 'not started'}")
    return "; ".join(waiting) or None


def warehouse_pending(catalog: Catalog, cfg: Config,
                      snapshot: SnapshotPlan | datetime | str) -> str | None:
    """None when the warehouse holds dumps of both wikis dated at or after the snapshot's
    last window end τ_n (the ingest has caught up with it), else what is missing."""
    plan = snapshot if isinstance(snapshot, SnapshotPlan) else cfg.plan(snapshot)
    missing = []
    for wiki in (cfg.dumps.wikidata.wiki, cfg.dumps.wikipedia.wiki):
        dates = [d for d in catalog.read_arrow("ingested_files", filters=[("wiki", "=", wiki)],
                                               columns=["dump_date"]).column(0).to_pylist()
                 if d] if catalog.exists("ingested_files") else []
        newest = max(dates, default=None)
        if newest is None or newest < f"{plan.horizon:%Y%m%d}":
            missing.append(f"{wiki}: newest ingested dump {newest or 'none'}, "
                           f"needs one from {plan.horizon:%Y%m%d} or later")
    return "; ".join(missing) or None


# -- small stage state (what a global stage was last built from) ---------------------------
def _state_path(catalog: Catalog, name: str) -> str:
    return f"{catalog.warehouse}/_state/{name}.json"


def read_state(catalog: Catalog, name: str) -> dict[str, Any] | None:
    from emerge_lib.stages.staging import filesystem_of

    filesystem, path = filesystem_of(_state_path(catalog, name))
    try:
        with filesystem.open_input_stream(path) as fh:
            return json.loads(fh.read().decode("utf-8"))
    except (FileNotFoundError, OSError, ValueError):
        return None


def write_state(catalog: Catalog, name: str, state: dict[str, Any]) -> None:
    from emerge_lib.stages.staging import filesystem_of

    filesystem, path = filesystem_of(_state_path(catalog, name))
    filesystem.create_dir(path.rsplit("/", 1)[0], recursive=True)
    with filesystem.open_output_stream(path) as fh:
        fh.write(json.dumps(state, sort_keys=True).encode("utf-8"))
