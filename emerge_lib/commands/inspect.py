"""``emerge inspect statements``: T_τ straight from dump files, as sorted TSV."""

from __future__ import annotations

import argparse

from emerge_lib.commands._common import config_flag, examples


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "inspect",
        help="look inside dump files without building anything",
        description="Read dump files directly and print what the pipeline would see.",
    )
    examples(p, "emerge inspect statements --wikidata dumps/wikidatawiki-*.bz2 "
             "--at 2024-01-01T00:00:00Z")
    what = p.add_subparsers(dest="what", metavar="WHAT", required=True)
    st = what.add_parser(
        "statements",
        help="print T_τ (s<TAB>p<TAB>o, sorted) from Wikidata history files",
        description=(
            "Ingest the given Wikidata history files into a throw-away warehouse on the "
            "embedded engine, apply the KG stability rule, and print the sorted TSV "
            "s<TAB>p<TAB>o of T_τ: item-valued, non-deprecated statements whose subject and "
            "object are in V_τ (items with an enwiki sitelink at τ)."
        ),
    )
    examples(st, "emerge inspect statements --wikidata dumps/wikidatawiki-*.bz2 "
             "--at 2024-01-01T00:00:00Z > t.tsv",
             "emerge inspect statements --wikidata dump.xml.bz2 --at 2024-01-01T00:00:00Z "
             "--no-stability --all-items")
    st.add_argument("--wikidata", nargs="+", required=True, metavar="PATH",
                    help="Wikidata history dump files (bz2, gz, 7z or plain XML)")
    st.add_argument("--at", required=True, metavar="ISO_TS", type=_instant,
                    help="the instant τ (UTC)")
    st.add_argument("--all-items", action="store_true",
                    help="do not restrict s and o to V_τ")
    st.add_argument("--no-stability", action="store_true",
                    help="raw revision states, without the KG stability rule")
    st.add_argument("--kg-hours", type=float,
                    help="stability span in hours (default: stability.kg_hours, 168)")
    config_flag(st, "workers, stability")
    st.add_argument("--workers", type=int,
                    help="extraction processes (default: dumps.workers, 0 = one per core)")
    st.set_defaults(func=run_statements)


def _instant(value: str):
    from emerge_lib.core.schedule import parse_utc

    try:
        return parse_utc(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def run_statements(args: argparse.Namespace) -> int:
    import sys
    import tempfile

    from emerge_lib.commands._common import bars, ingest_progress, load
    from emerge_lib.ingest.plan import check_inputs
    from emerge_lib.pipeline.context import open_context
    from emerge_lib.pipeline.runner import run_stage
    from emerge_lib.transform.snapshot import triples_at

    tau = args.at
    check_inputs(args.wikidata)  # before any engine
    with tempfile.TemporaryDirectory(prefix="emerge-inspect-") as tmp:
        stability = {"kg_hours": args.kg_hours} if args.kg_hours is not None else {}
        # every revision is shown: nothing is held against a reject ratio here
        cfg = load(args, warehouse=tmp, stability=stability,
                   dumps={"max_reject_ratio": 1.0})
        with open_context(cfg, wikidata=args.wikidata) as ctx, bars():
            ingest_progress(ctx)
            ingested = run_stage(ctx, "ingest_wikidata")
            if not args.no_stability:
                run_stage(ctx, "stability")
            rows = triples_at(ctx.catalog, tau, all_items=args.all_items,
                              stable=not args.no_stability,
                              resolve=ctx.cfg.deltas.resolve_redirects).collect()
        for s, p, o in sorted((r.s, r.p, r.o) for r in rows):
            sys.stdout.write(f"{s}\t{p}\t{o}\n")
        print(f"# {len(rows)} triples at {tau.isoformat()} from "
              f"{ingested.metrics.get('revisions', 0):.0f} revisions", file=sys.stderr)
    return 0
