"""``emerge leaderboard``: runs of ``emerge evaluate`` ranked per operation and overall."""

from __future__ import annotations

import argparse


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "leaderboard",
        help="rank evaluation runs per operation and overall (Markdown, CSV, HTML)",
        description=(
            "Rank the models of several `emerge evaluate` runs (their --out folders) per "
            "metric and operation (Exists, Add, Mint+Add, Infer, Deprecate) and overall "
            "(the micro-average over every operation's gold triples), with each cell's "
            "interval where the run has one. Runs must have scored the same gold with the "
            "same gold filter, threshold and assessors, else the first difference is "
            "named. Writes leaderboard.md, leaderboard.csv and index.html (a static page "
            "with its plot) into --out. See docs/evaluation.md."
        ),
    )
    from emerge_lib.commands._common import examples

    examples(p, "emerge leaderboard scores-edc scores-relik --out board")
    p.add_argument("runs", nargs="+", metavar="RUN", help="an `emerge evaluate` --out folder")
    p.add_argument("--out", default="leaderboard", metavar="DIR",
                   help="output folder (default ./leaderboard)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from emerge_lib.evaluation.leaderboard import leaderboard, markdown

    ranked = leaderboard(args.runs, args.out)
    print(markdown(ranked))
    print(f"{len(args.runs)} runs ranked; written to {args.out}/ (index.html, "
          "leaderboard.md, leaderboard.csv)")
    return 0
