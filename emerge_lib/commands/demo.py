"""``emerge demo``: the main job on the embedded defaults, end to end, on generated data."""

from __future__ import annotations

import argparse


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "demo",
        help="run the pipeline end to end on generated sample data (embedded engine)",
        description=(
            "Generate a small sample world with planted truth (once), then run the "
            "snapshot DAG on it through Airflow (`airflow dags test emerge_snapshot`, as a "
            "deployment runs it; in-process stages with --no-airflow or where Airflow is "
            "not installed) on the embedded Sail engine into a local Delta warehouse: "
            "curate with the local LLM server (llama.cpp with SmolLM2-135M: it answers at "
            "chance, the demo shows the machinery), validate, write the release, publish "
            "it to the local S3 server (SeaweedFS) and download it back verified, and "
            "compare the instances with the planted truth. Rerunning is safe: every stage "
            "is idempotent, files already ingested are not read again, answered prompts "
            "are not asked again, and a release already published is not sent again."
        ),
    )
    from emerge_lib.commands._common import examples

    examples(p, "emerge demo", "emerge demo --out /tmp/demo --seed 2 --no-s3",
             "emerge demo --no-airflow --no-llm")
    p.add_argument("--out", default="demo", help="output folder (default: ./demo)")
    p.add_argument("--seed", type=int, default=1, help="sample-world seed (default 1)")
    p.add_argument("--no-llm", action="store_true",
                   help="skip curation (by default the local llama.cpp server curates the "
                        "release when it is installed)")
    p.add_argument("--no-s3", action="store_true",
                   help="skip publishing (by default the release goes to a local S3 server, "
                        "SeaweedFS, when installed, and is downloaded back verified)")
    p.add_argument("--no-airflow", action="store_true",
                   help="run the stages in this process (both snapshots) instead of the "
                        "snapshot DAG through Airflow (the first snapshot)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from emerge_lib.airflow.home import available as airflow_available
    from emerge_lib.commands._common import run_with_bar
    from emerge_lib.core.errors import EmergeError
    from emerge_lib.demo.dagtest import run_demo_airflow
    from emerge_lib.demo.local import run_demo
    from emerge_lib.formats.card import table2_text

    def generating(world) -> None:
        print(f"generating a sample world (seed {args.seed}) in {world} ...")

    curate = False if args.no_llm else None
    publish = False if args.no_s3 else None
    if args.no_airflow or not airflow_available():
        if not args.no_airflow:
            print("Airflow is not installed here: running the stages in this process")
        result = run_demo(args.out, seed=args.seed, on_generate=generating, curate=curate,
                          publish=publish,
                          build=lambda ctx: run_with_bar(ctx, desc="demo"))
    else:
        print("running the emerge_snapshot DAG through Airflow (airflow dags test) ...")
        try:
            result = run_demo_airflow(args.out, seed=args.seed, curate=curate,
                                      publish=publish, on_generate=generating)
        except EmergeError as exc:
            print(f"emerge: {exc}")
            return 1
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
