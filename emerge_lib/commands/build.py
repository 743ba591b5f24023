"""``emerge build``: from dump files to the EMERGE release, end to end."""

from __future__ import annotations

import argparse

from emerge_lib.commands._common import Renamed, config_flag, examples


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "build",
        help="build the dataset: ingest → snapshots → deltas → passages → align → release",
        description=(
            "Ingest the given Wikidata and Wikipedia history files (or, without paths, the "
            "configured mirror's dump dates; files already ingested are not read again), "
            "then build every snapshot's KG, weekly cumulative deltas, new passages and "
            "aligned TKGU instances on the chosen engine, and write the release to --out: "
            "corpus/snapshot_YYYY-MM-DD/delta_YYYY-MM-DD.jsonl per window in the EMERGE instance "
            "format, the KG snapshot and the instances as Parquet, and release.json. "
            "Changing --snapshot, --windows or --window-days needs no re-ingest of Wikidata; "
            "Wikipedia paragraphs are kept for every snapshot range ever asked for. The "
            "warehouse (default: the configuration's, .emerge/warehouse) is shared by every "
            "build that names it: it is the incremental store of one wiki's dumps over "
            "time; use a fresh --warehouse for unrelated dumps."
        ),
    )
    examples(p, "emerge build -c world/config.yaml --out release",
             "emerge build -c world/config.yaml --snapshot 2024-04-01T00:00:00Z --windows 3 "
             "--out release --local-llm",
             "emerge build --wikidata dumps/wikidatawiki-*-pages-meta-history*.bz2 "
             "--wikipedia dumps/enwiki-*-pages-meta-history*.bz2 "
             "--snapshot 2024-01-01T00:00:00Z --out release")
    config_flag(p, "flags override it")
    p.add_argument("--wikidata", nargs="+", metavar="PATH",
                   help="Wikidata history dump files (default: the configured mirror's)")
    p.add_argument("--wikipedia", nargs="+", metavar="PATH",
                   help="English Wikipedia history dump files (default: the configured mirror's)")
    p.add_argument("--snapshot", action="append", dest="snapshots", metavar="ISO_TS",
                   help="snapshot timestamp t (repeatable; default: the configuration's)")
    p.add_argument("--windows", type=int, metavar="N",
                   help="windows per snapshot, each --window-days long (default 5)")
    p.add_argument("--weeks", type=int, dest="windows", action=Renamed, new="--windows",
                   help=argparse.SUPPRESS)
    p.add_argument("--window-days", type=float, help="window length in days (default 7)")
    p.add_argument("--out", required=True, metavar="DIR", help="release folder")
    p.add_argument("--engine", help="embedded (default) or sc://host:port")
    p.add_argument("--warehouse", help="Delta warehouse root (default: the configuration's)")
    p.add_argument("--workers", type=int,
                   help="extraction processes (default: dumps.workers, 0 = one per core)")
    from emerge_lib.commands.curate import add_llm_flags

    add_llm_flags(p)
    p.set_defaults(func=run)


def empty_lines(summary: object) -> list[str]:
    """One line per snapshot the release holds nothing of, or lacks an operation of (the
    validation's warnings): a small or quiet history may rightly give none."""
    verdict = getattr(summary, "validation", None) or {}
    ops = getattr(summary, "ops", None) or {}
    out = []
    if not sum(ops.values()):
        out.append("no line to release: none was selected in any window of any snapshot (the "
                   "release holds the KG snapshots only)")
    for snap, state in sorted((verdict.get("snapshots") or {}).items()):
        for warning in state.get("warnings") or ():
            out.append(f"empty in {snap}: {warning}")
    return out


def run(args: argparse.Namespace) -> int:
    import logging
    import os

    from emerge_lib.commands._common import load, run_with_bar
    from emerge_lib.commands.curate import llm_curation
    from emerge_lib.ingest.plan import check_inputs, refuse_uncovered_snapshots
    from emerge_lib.pipeline.context import open_context

    snapshots = {k: v for k, v in (("timestamps", args.snapshots), ("windows", args.windows),
                                   ("window_days", args.window_days)) if v is not None}
    # a bad configuration, a bad file or a snapshot the dumps cannot reach is told before
    # anything starts
    cfg = load(args, snapshots=snapshots)
    check_inputs([*(args.wikidata or []), *(args.wikipedia or [])])
    refuse_uncovered_snapshots(cfg, args.wikidata)
    with llm_curation(args) as curation:
        cfg = load(args, snapshots=snapshots, curation=curation)
        logging.getLogger("emerge_lib").info("building into warehouse %s", cfg.warehouse)
        with open_context(cfg, wikidata=args.wikidata, wikipedia=args.wikipedia,
                          release_dir=args.out) as ctx:
            results = run_with_bar(ctx)
    released = next((r for r in results if r.stage == "release"), None)
    if released is not None:
        print(released.brief())
        for line in empty_lines(released.detail):
            print(line)
    print(f"release:   {os.path.abspath(args.out)}")
    print(f"warehouse: {cfg.warehouse}")
    return 0
