"""``emerge demo``: the main job on the embedded defaults, end to end, on generated data.

It runs every stage that exists today on the embedded engine and prints where the output
is. New stages join the list in ``emerge_lib.demo``.
"""

from __future__ import annotations

import argparse


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "demo",
        help="run the pipeline end to end on generated sample data (embedded engine)",
        description=(
            "Generate a small sample world with planted truth, then run the existing stages "
            "on the embedded Sail engine into a local Delta warehouse. Rerunning is safe: "
            "every stage is idempotent."
        ),
    )
    p.add_argument("--out", default="demo", help="output folder (default: ./demo)")
    p.add_argument("--seed", type=int, default=1, help="sample-world seed (default 1)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from emerge_lib.demo import run_demo

    return run_demo(args.out, seed=args.seed)
