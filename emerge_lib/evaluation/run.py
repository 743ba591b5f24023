"""``evaluate``: gold + predictions → scores → the output folder (what ``emerge evaluate``
runs)."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from emerge_lib.core.errors import InputError
from emerge_lib.evaluation.data import (
    DEFAULT_ASSESSORS,
    Instance,
    llm_filter_problem,
    read_gold,
    read_predictions,
)
from emerge_lib.evaluation.metrics import (
    InstanceScore,
    Settings,
    instant,
    model_predictions,
    score,
    summarize,
    zero_by_construction,
)

if TYPE_CHECKING:
    from emerge_lib.core.config import EvaluationSettings

log = logging.getLogger(__name__)


@dataclass
class Result:
    rows: list[dict[str, Any]]
    scores: list[InstanceScore]
    run: dict[str, Any]
    written: list[Path] = field(default_factory=list)
    #: (model, operation, metric) rows left out of the tables: zero by construction
    hidden: set[tuple[str, str, str]] = field(default_factory=set)


def _bar(enabled: bool):
    """A progress callback drawing one tqdm bar per stage (embed, score)."""
    if not enabled:
        return None, lambda: None
    from tqdm import tqdm

    bars: dict[str, Any] = {}

    def progress(stage: str, advance: int, total: int | None) -> None:
        if total is not None:
            if stage in bars:
                bars[stage].close()
            bars[stage] = tqdm(total=total, desc=stage, unit="text" if stage == "embed"
                               else "inst", leave=False, disable=None)
        elif stage in bars:
            bars[stage].update(advance)

    def close() -> None:
        for b in bars.values():
            b.close()

    return progress, close


def evaluate(gold: str | Path | Sequence[str | Path],
             predictions: Sequence[str | Path] = (),
             settings: Settings | None = None, *,
             out: str | Path | None = None,
             embedding_model: str = "all-mpnet-base-v2",
             model_cache: str | Path | None = None,
             embedding_cache: str | Path | None = None,
             batch_size: int = 128, threads: int = 1,
             progress: bool = False, png: bool = True) -> Result:
    settings = settings or Settings()
    t0 = time.monotonic()
    instances = read_gold(gold)
    if not instances:
        raise InputError(f"gold: {gold} holds no instance")
    read = len(instances)
    if settings.after is not None:
        instances = appeared_after(instances, settings.after)
    external = read_predictions(predictions) if predictions else {}
    try:
        preds = model_predictions(instances, external, settings.models)
    except KeyError as exc:
        raise InputError(str(exc.args[0])) from None
    if not preds:
        raise InputError("no predictions: give --predictions, or gold files whose records "
                         "carry predictions blocks")
    known = {i.hash_id for i in instances}
    unmatched = {m: sum(h not in known for h in by) for m, by in preds.items()}
    for m, n in unmatched.items():
        if n:
            log.warning("%s: %d predicted instances are not in the gold set (ignored)", m, n)
    asked = settings.gold_filter
    if asked == "auto":
        problem = llm_filter_problem(instances, settings.assessors)
        settings = replace(settings, gold_filter="all" if problem else "llm-asserted")
        log.info("gold filter: %s (%s)", settings.gold_filter,
                 f"uncurated gold: {problem}" if problem else
                 "the gold carries LLM verdicts: scored as the paper's Tables 3 and 4")
    if settings.gold_filter == "llm-asserted" and (
            problem := llm_filter_problem(instances, settings.assessors)):
        raise InputError(f"--gold-filter llm-asserted: {problem}")
    elif settings.gold_filter == "human":
        _check_annotations(instances, settings)

    embedder = None
    if {"completeness", "pred_completeness"} & set(settings.metrics):
        from emerge_lib.evaluation.embed import Embedder
        from emerge_lib.evaluation.models import ensure

        ref = ensure(embedding_model, model_cache)
        embedder = Embedder(ref, cache_dir=embedding_cache, batch_size=batch_size,
                            threads=threads)
    bar, close = _bar(progress)
    try:
        scores = score(instances, preds, settings, embedder, bar)
    finally:
        close()
        if embedder is not None:
            embedder.close()
    rows = summarize(scores, settings.metrics)
    if settings.bootstrap:
        from emerge_lib.evaluation.bootstrap import intervals

        ci = intervals(scores, settings.metrics, settings.bootstrap, settings.seed)
        for r in rows:
            if (key := (r["model"], r["operation"], r["snapshot"], r["metric"])) in ci:
                r["ci_low"], r["ci_high"] = ci[key]
    hidden = zero_by_construction(preds, known, settings.metrics)
    run = {
        "gold": [str(g) for g in ([gold] if isinstance(gold, str | Path) else gold)],
        "predictions": [str(p) for p in predictions],
        "instances": len(instances), "gold_digest": gold_digest(instances),
        "after": settings.after, "instances_read": read,
        "models": {m: {"predicted_instances": sum(h in known for h in by),
                       "not_in_gold": unmatched[m]} for m, by in preds.items()},
        "metrics": list(settings.metrics), "threshold": settings.threshold,
        "gold_filter": settings.gold_filter, "gold_filter_asked": asked,
        "assessors": (dict(settings.assessors) if settings.assessors is not None else
                      "asserted_operations where present, else "
                      + json.dumps(DEFAULT_ASSESSORS)),
        "annotator": settings.annotator, "snapshot_key": settings.snapshot_key,
        "only_predicted": settings.only_predicted,
        "bootstrap": {"resamples": settings.bootstrap, "seed": settings.seed, "level": 0.95,
                      "strata": "snapshot x delta"} if settings.bootstrap else None,
        "embedding_model": embedder.model.name if embedder else None,
        "texts_encoded": embedder.encoded if embedder else 0,
        "not_in_tables": [list(h) for h in sorted(hidden)],
        "seconds": round(time.monotonic() - t0, 2),
    }
    result = Result(rows, scores, run, hidden=hidden)
    if out is not None:
        from emerge_lib.evaluation.report import write_outputs

        result.written = write_outputs(out, rows, scores, settings.metrics, run, png=png,
                                       hide=hidden)
    return result


def gold_digest(instances: Sequence[Instance]) -> str:
    """A fingerprint of the gold scored (each instance's id, snapshot, triples and their
    operations): two runs with the same one scored the same gold (``emerge leaderboard``)."""
    import hashlib

    h = hashlib.sha256()
    for inst in sorted(instances, key=lambda i: i.hash_id):
        triples = sorted(f"{' '.join(t.triple)}:{','.join(sorted(t.ops))}"
                         for t in inst.triples)
        h.update(f"{inst.hash_id}\t{inst.snapshot}\t{';'.join(triples)}\n".encode())
    return h.hexdigest()[:16]


def appeared_after(instances: list[Instance], after: str) -> list[Instance]:
    """The instances whose passage appeared after ``after`` (a model's training cutoff:
    §4.1's reason for temporal data), said in one line; a line without a revision date
    cannot be placed after anything and is left out, counted."""
    cutoff = instant(after)
    undated = [i for i in instances if not i.revision_date]
    kept = []
    for inst in instances:
        if inst.revision_date:
            try:
                when = instant(inst.revision_date)
            except ValueError:
                raise InputError(f"{inst.source}: revision_date {inst.revision_date!r} is "
                                 "not an ISO 8601 instant") from None
            if when > cutoff:
                kept.append(inst)
    log.info("--after %s: %d of %d lines appeared after it%s", after, len(kept),
             len(instances), f" ({len(undated)} without a revision_date, left out)"
             if undated else "")
    if not kept:
        latest = max((i.revision_date for i in instances if i.revision_date), default=None)
        raise InputError(f"--after {after}: no gold line's passage appeared after it (of "
                         f"{len(instances)} lines; the latest revision_date is {latest})")
    return kept


def _check_annotations(instances, settings: Settings) -> None:
    """``--gold-filter human`` on gold without that annotator's verdicts would score
    nothing and say nothing: refuse it."""
    names = sorted({n for inst in instances for t in inst.triples for n, _ in t.human})
    if settings.annotator not in names:
        where = (f"it has annotations by {names} (choose one with --annotator)" if names
                 else "it has none: the authors' human verdicts are in their "
                 "data/human_annotation/solved_disagreements.jsonl, ours in a release's "
                 "human_annotation/ once `emerge annotate import` wrote it (give that file as "
                 "--gold); evaluation sets carry none")
        raise InputError(f"--gold-filter human: no gold triple has a verdict by "
                         f"{settings.annotator!r}; {where}")


def evaluate_release(ev: EvaluationSettings, release_dir: str | Path, snapshot: str | None,
                     version: str | None) -> Result:
    """Score the configured predictions (the ``evaluation`` settings) against one release
    folder, writing into ``evaluation.out/<snapshot date>/<release version>``: what the
    evaluation DAG runs for every published release."""
    from emerge_lib.evaluation.metrics import Settings

    if not ev.predictions:
        raise InputError("no predictions configured: set evaluation.predictions (JSONL "
                         "files of {hash_id, model, predicted}) in the configuration")
    out = Path(ev.out) / (snapshot or "release")[:10] / (version or "unversioned")
    settings = Settings(metrics=tuple(ev.metrics), threshold=ev.threshold,
                        gold_filter=ev.gold_filter)
    log.info("evaluating %s (%s) with %d prediction files into %s", release_dir,
             snapshot or "all snapshots", len(ev.predictions), out)
    return evaluate(str(release_dir), ev.predictions, settings, out=out,
                    embedding_model=ev.embedding_model)
