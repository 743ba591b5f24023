"""``emerge inspect statements``: T_τ straight from dump files, as sorted TSV."""

from __future__ import annotations

import argparse


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "inspect",
        help="look inside dump files without building anything",
        description="Read dump files directly and print what the pipeline would see.",
    )
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
    st.add_argument("--wikidata", nargs="+", required=True, metavar="PATH",
                    help="Wikidata history dump files (bz2, gz, 7z or plain XML)")
    st.add_argument("--at", required=True, metavar="ISO_TS", help="the instant τ (UTC)")
    st.add_argument("--all-items", action="store_true",
                    help="do not restrict s and o to V_τ")
    st.add_argument("--no-stability", action="store_true",
                    help="raw revision states, without the KG stability rule")
    st.add_argument("--kg-hours", type=float, default=168,
                    help="stability span in hours (default 168)")
    st.set_defaults(func=run_statements)


def run_statements(args: argparse.Namespace) -> int:
    import sys
    import tempfile

    from emerge_lib.config import parse_utc
    from emerge_lib.engine import spark_session
    from emerge_lib.stages.ingest_wikidata import ingest_wikidata
    from emerge_lib.stages.snapshot import triples_at
    from emerge_lib.stages.stability import build_stable_statements
    from emerge_lib.tables import Catalog

    tau = parse_utc(args.at)
    with tempfile.TemporaryDirectory(prefix="emerge-inspect-") as tmp, spark_session() as spark:
        catalog = Catalog(tmp, spark)
        report = ingest_wikidata(catalog, args.wikidata, max_reject_ratio=1.0)
        if not args.no_stability:
            build_stable_statements(catalog, args.kg_hours)
        rows = triples_at(catalog, tau, all_items=args.all_items,
                          stable=not args.no_stability).collect()
        for s, p, o in sorted((r.s, r.p, r.o) for r in rows):
            sys.stdout.write(f"{s}\t{p}\t{o}\n")
        print(f"# {len(rows)} triples at {tau.isoformat()} from {report.revisions} revisions "
              f"({report.rejects} rejected)", file=sys.stderr)
    return 0
