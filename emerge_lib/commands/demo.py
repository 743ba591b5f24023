"""``emerge demo``: the main job on the embedded defaults, end to end, on generated data."""

from __future__ import annotations

import argparse


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "demo",
        help="run the pipeline end to end on generated sample data (embedded engine)",
        description=(
            "Generate a small sample world with planted truth (once), then run every stage "
            "on the embedded Sail engine into a local Delta warehouse, curate it with the "
            "local LLM server (llama.cpp with SmolLM2-135M: it answers at chance, the demo "
            "shows the machinery), validate it, write the release, publish it to the local "
            "S3 server (SeaweedFS) and download it back verified, and compare the instances "
            "with the planted truth. Rerunning is safe: every stage is idempotent, files already "
            "ingested are not read again, and answered prompts are not asked again."
        ),
    )
    p.add_argument("--out", default="demo", help="output folder (default: ./demo)")
    p.add_argument("--seed", type=int, default=1, help="sample-world seed (default 1)")
    p.add_argument("--no-llm", action="store_true",
                   help="skip curation (by default the local llama.cpp server curates the "
                        "release when it is installed)")
    p.add_argument("--no-s3", action="store_true",
                   help="skip publishing (by default the release goes to a local S3 server, "
                        "SeaweedFS, when installed, and is downloaded back verified)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from emerge_lib.commands._common import run_with_bar
    from emerge_lib.demo import run_demo

    result = run_demo(
        args.out, seed=args.seed, build=lambda ctx: run_with_bar(ctx, desc="demo"),
        on_generate=lambda w: print(f"generating a sample world (seed {args.seed}) in {w} ..."),
        curate=False if args.no_llm else None, publish=False if args.no_s3 else None,
    )
    from emerge_lib.release_card import table2_text

    print(f"instances: {result.built} built, {result.planted} planted, {result.missing} "
          f"missing, {result.unexpected} unexpected")
    print(f"release:   {result.release}  (dataset card: {result.release / 'README.md'})")
    if result.card:
        print("\n" + table2_text(result.card) + "\n")
    if result.published is not None:
        print(f"published: {result.published.brief()}")
    if result.downloaded is not None:
        print(f"{result.downloaded.brief()}")
    print(f"warehouse: {result.cfg.warehouse}  (emerge tables --warehouse {result.cfg.warehouse})")
    print(f"demo finished in {result.seconds:.0f}s")
    return 0 if result.ok else 1
