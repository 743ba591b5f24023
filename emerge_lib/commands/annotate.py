"""``emerge annotate``: human annotation of a release in Label Studio, and the paper's
agreement table (docs/annotation.md)::

    emerge annotate export --release DIR --per-op N --seed S --out DIR
    emerge annotate import --release DIR --from FILE [--annotator NAME | ID=NAME ...]
    emerge annotate agreement --annotations PATH [--assessor LLM] [--annotators H1,H2] --out DIR
    emerge annotate disagreements --annotations PATH [--between both|humans|llm] --out DIR
"""

from __future__ import annotations

import argparse

from emerge_lib.commands._common import config_flag, count, examples


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "annotate", help="human annotation in Label Studio, and the agreement table",
        description="Sample a release for human annotation (Label Studio tasks and EMERGE "
                    "JSONL), import the verdicts into its human_annotation/, and compute the "
                    "paper's agreement table (Cohen's, Fleiss' κ, Krippendorff's α). See "
                    "docs/annotation.md.")
    examples(p, "emerge annotate export --release demo/release --per-op 20 --out tasks",
             "emerge annotate import --release demo/release --from export.json "
             "--annotator 1=annotator_1 --annotator 2=annotator_2",
             "emerge annotate agreement --annotations demo/release --out agreement")
    acts = p.add_subparsers(dest="action", metavar="ACTION", required=True)

    e = acts.add_parser(
        "export", help="a stratified sample, N per operation, as Label Studio tasks and "
        "EMERGE JSONL",
        description="Draw N questions per operation from a release (seeded, stratified "
                    "as the authors drew theirs: round robin over the delta files) and write "
                    "them as Label Studio tasks with their labeling configuration, and as "
                    "EMERGE JSONL in the authors' annotation layout.")
    examples(e, "emerge annotate export --release demo/release --per-op 20 --out tasks",
             "emerge annotate export --release demo/release --split corpus --seed 7 "
             "--out tasks-corpus")
    e.add_argument("--release", required=True, metavar="DIR", help="a release folder")
    e.add_argument("--per-op", type=count(1), default=100, metavar="N",
                   help="questions per operation (default 100, the authors' number)")
    e.add_argument("--seed", type=int, default=0, help="the draw's seed (default 0)")
    e.add_argument("--split", choices=("auto", "evaluation", "corpus"), default="auto",
                   help="draw from the evaluation set or the corpus (default: the "
                        "evaluation set when the release has one)")
    e.add_argument("--out", required=True, metavar="DIR",
                   help="tasks.json, labeling_config.xml, instances_to_annotate.jsonl, "
                        "sample.json")
    e.set_defaults(func=run_export)

    i = acts.add_parser(
        "import", help="verdicts (a Label Studio JSON export, or annotation JSONL) into the "
        "release's human_annotation/",
        description="Merge annotators' verdicts into the release's human_annotation/ "
                    "(the authors' layout), validate them with their suites, write the "
                    "agreement table when two annotators and a judge are there, and "
                    "describe the release again (card, croissant.json, manifest).")
    examples(i, "emerge annotate import --release demo/release --from export.json "
             "--annotator 1=annotator_1 --annotator 2=annotator_2",
             "emerge annotate import --release demo/release --from verdicts.jsonl "
             "--annotator annotator_1")
    i.add_argument("--release", required=True, metavar="DIR",
                   help="the release folder to import into (written in place)")
    i.add_argument("--from", dest="source", required=True, metavar="FILE",
                   help="Label Studio JSON export, or JSONL in the authors' layout")
    i.add_argument("--annotator", action="append", default=[], metavar="NAME|ID=NAME",
                   help="NAME: every verdict of FILE is NAME's; ID=NAME (repeatable): the "
                        "Label Studio user id (or e-mail) → annotator name (default: from "
                        "completed_by when the export gives e-mails)")
    config_flag(i, "the engine that runs the validation suites")
    i.set_defaults(func=run_import)

    for name, helptext, func, describe, out in (
            ("agreement", "the agreement table per operation and overall", run_agreement,
             "The paper's agreement table between two annotators and the LLM judge: "
             "Cohen's κ per pair, Fleiss' κ and Krippendorff's α, per operation and "
             "overall, as JSON, Markdown and LaTeX.",
             "where agreement.json, agreement.md and agreement.tex are written"),
            ("disagreements", "the questions where the annotators and the LLM differ, as "
             "tasks for a resolving annotator", run_disagreements,
             "The questions on which the two annotators, or an annotator and the LLM "
             "judge, differ, written as Label Studio tasks for a third annotator to "
             "resolve, and as JSONL and Markdown.",
             "where the resolving annotator's tasks are written")):
        a = acts.add_parser(name, help=helptext, description=describe)
        examples(a, f"emerge annotate {name} --annotations demo/release --out {name}",
                 f"emerge annotate {name} --annotations annotations.jsonl "
                 f"--assessor Meta-Llama-3.1-405B --annotators alice,bob --out {name}")
        a.add_argument("--annotations", required=True, metavar="PATH",
                       help="an annotation JSONL file, a folder of them, or a release folder")
        a.add_argument("--assessor", default=None, metavar="LLM",
                       help="the llm_name judging every operation (e.g. Meta-Llama-3.1-405B)")
        a.add_argument("--assertion-assessor", default=None, metavar="LLM",
                       help="the llm_name judging X, E, EE, EE-KG (default: the release's "
                            "configured judge)")
        a.add_argument("--deprecation-assessor", default=None, metavar="LLM",
                       help="the llm_name judging D (default: the release's configured judge)")
        a.add_argument("--annotators", default=None, metavar="H1,H2",
                       help="the two annotators (default annotator_1,annotator_2, or the two "
                            "there are)")
        if name == "disagreements":
            a.add_argument("--between", choices=("both", "humans", "llm"), default="both",
                           help="humans: H1 ≠ H2; llm: an annotator ≠ the LLM; both (default)")
        config_flag(a, "its curation judges, when PATH is no release")
        a.add_argument("--out", required=True, metavar="DIR", help=out)
        a.set_defaults(func=func)


def run_export(args: argparse.Namespace) -> int:
    from emerge_lib.annotation.sample import export

    sample = export(args.release, args.out, args.per_op, args.seed, args.split)
    from emerge_lib.formats.format import OP_NAMES

    counts = ", ".join(f"{op} {sample.counts[op]}" for op in OP_NAMES.values())
    print(f"{len(sample.questions)} questions ({counts}) written to {args.out}/")
    return 0


def run_import(args: argparse.Namespace) -> int:
    from emerge_lib.annotation.importer import import_annotations
    from emerge_lib.commands._common import load
    from emerge_lib.core.engine import session_for

    cfg = load(args)
    with session_for(cfg) as spark:
        summary = import_annotations(args.release, args.source, spark, args.annotator)
    print(summary)
    if summary.table is not None:
        from emerge_lib.annotation.agreement import markdown

        print(markdown(summary.table))
    return 0


def _setup(args: argparse.Namespace):
    from emerge_lib.annotation import agreement as ag
    from emerge_lib.annotation.importer import release_assessors
    from emerge_lib.annotation.release import AnnotationError, read_annotations, release_of
    from emerge_lib.formats.format import ASSERTION, DEPRECATION
    from emerge_lib.formats.manifest import read_manifest

    if args.assessor and (args.assertion_assessor or args.deprecation_assessor):
        raise AnnotationError("--assessor names the judge of both prompt types: give it, or "
                              "--assertion-assessor/--deprecation-assessor, not both")
    lines = read_annotations(args.annotations)
    release = release_of(args.annotations)
    if release is not None:
        defaults = release_assessors(read_manifest(release))
    else:
        from emerge_lib.commands._common import load

        cur = load(args).curation
        defaults = {ASSERTION: cur.route(cur.assertion_judges[0]).name,
                    DEPRECATION: cur.route(cur.deprecation_judges[0]).name}
    assessors = {ASSERTION: args.assessor or args.assertion_assessor or defaults[ASSERTION],
                 DEPRECATION: args.assessor or args.deprecation_assessor or defaults[DEPRECATION]}
    annotators = (tuple(n.strip() for n in args.annotators.split(",")) if args.annotators
                  else ag.default_annotators(lines, args.annotations))
    if len(annotators) != 2:
        raise AnnotationError(f"--annotators: two names, not {args.annotators!r}")
    ag.check_names(lines, annotators, assessors, args.annotations)
    return lines, annotators, assessors, release


def run_agreement(args: argparse.Namespace) -> int:
    from emerge_lib.annotation import agreement as ag

    lines, annotators, assessors, _ = _setup(args)
    table = ag.agreement(lines, annotators, assessors)
    ag.write(table, args.out)
    print(ag.markdown(table))
    print(f"written to {args.out}/ (agreement.json, agreement.md, agreement.tex)")
    return 0


def run_disagreements(args: argparse.Namespace) -> int:
    from emerge_lib.annotation import disagreements as dis
    from emerge_lib.formats.manifest import read_manifest

    lines, annotators, assessors, release = _setup(args)
    rows = dis.find(lines, annotators, assessors, args.between)
    version = str(read_manifest(release).get("version")) if release else ""
    dis.write(lines, rows, args.out, version)
    print(f"{len(rows)} questions where {annotators[0]}, {annotators[1]} and the LLM differ "
          f"({args.between}) written to {args.out}/; annotate tasks.json in Label Studio and "
          "import the export with --annotator NAME (a third, resolving annotator)")
    return 0
