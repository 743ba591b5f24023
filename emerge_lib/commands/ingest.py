"""``emerge ingest``: dump files → Delta timelines (incremental and idempotent)."""

from __future__ import annotations

import argparse
import logging
import re
from typing import TYPE_CHECKING

from emerge_lib.commands._common import config_flag, examples

if TYPE_CHECKING:
    from emerge_lib.core.config import Config

log = logging.getLogger(__name__)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "ingest",
        help="ingest Wikidata and Wikipedia history dumps into the timelines",
        description=(
            "Ingest Wikidata history files into statement_timeline, item_timeline and "
            "property_timeline (then apply the KG stability rule), and English Wikipedia "
            "history files into page_timeline and paragraph_timeline for the time ranges "
            "the configured snapshots need. Files come from --wikidata/--wikipedia paths, "
            "or from the mirror and dump dates of the configuration. Older dumps first; a "
            "newer dump only adds what is past each page's watermark; rerunning changes "
            "nothing. Rejected revisions go to ingest_rejects."
        ),
    )
    examples(p, "emerge ingest -c world/config.yaml",
             "emerge ingest --wiki wikidata --wikidata "
             "dumps/wikidatawiki-20240101-pages-meta-history1.xml-p1p1000.bz2",
             "emerge ingest -c world/config.yaml --incr 20240220:20240519",
             "emerge ingest -c world/config.yaml --wikipedia "
             "mirror/enwiki/20240520/enwiki-20240520-pages-logging.xml.gz")
    p.add_argument("--wiki", choices=["wikidata", "wikipedia", "both"], default="both",
                   help="which history to ingest (default both)")
    config_flag(p)
    p.add_argument("--wikidata", nargs="+", metavar="PATH",
                   help="Wikidata history files (default: the configured mirror's dumps), or "
                        "its logging dump (*-pages-logging.xml.gz, or all its parts "
                        "*-pages-logging1..N.xml.gz: reconciled, docs/operations.md)")
    p.add_argument("--wikipedia", nargs="+", metavar="PATH",
                   help="Wikipedia history files (default: the configured mirror's dumps), or "
                        "its logging dump (*-pages-logging.xml.gz, or all its parts: "
                        "reconciled)")
    p.add_argument("--warehouse", help="warehouse root (overrides the configuration)")
    p.add_argument("--engine", help="embedded or sc://host:port (overrides the configuration)")
    p.add_argument("--workers", type=int,
                   help="extraction processes (default: dumps.workers, 0 = one per core)")
    p.add_argument("--incr", metavar="FIRST[:LAST]",
                   help="ingest the mirror's daily adds/changes dumps (other/incr) of these "
                        "days (YYYYMMDD, inclusive) instead of full dumps, each day continued "
                        "from the warehouse (docs/operations.md)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from emerge_lib.commands._common import bars, ingest_progress, load
    from emerge_lib.ingest.plan import check_inputs
    from emerge_lib.ingest.reconcile import is_logging
    from emerge_lib.pipeline.context import open_context
    from emerge_lib.pipeline.runner import run_stage

    cfg = load(args)
    if args.incr:
        return _run_incr(cfg, args)
    if any(is_logging(p) for p in [*(args.wikidata or []), *(args.wikipedia or [])]):
        return _run_reconcile(cfg, args)
    kinds = kinds_to_ingest(cfg, args)  # before any engine, as the paths
    check_inputs([*(args.wikidata or []), *(args.wikipedia or [])])
    with open_context(cfg, wikidata=args.wikidata, wikipedia=args.wikipedia) as ctx, bars():
        ingest_progress(ctx)
        # each stage logs its own one-line summary; the KG stability rule follows the
        # Wikidata ingest at once, so a failing Wikipedia ingest does not leave it stale
        for kind in kinds:
            run_stage(ctx, f"ingest_{kind}")
            if kind == "wikidata":
                run_stage(ctx, "stability")
    print(f"warehouse: {cfg.warehouse}")
    return 0


def _run_incr(cfg: Config, args: argparse.Namespace) -> int:
    """``--incr FIRST[:LAST]``: the days' increments (emerge_lib.pipeline.incr)."""
    from emerge_lib.commands._common import bars
    from emerge_lib.core.errors import InputError
    from emerge_lib.ingest.plan import Kind
    from emerge_lib.pipeline.incr import ingest_increments

    m = re.fullmatch(r"(\d{8})(?::(\d{8}))?", args.incr)
    if m is None or (m.group(2) and m.group(2) < m.group(1)):
        raise InputError(f"--incr {args.incr}: give FIRST[:LAST] as YYYYMMDD days, "
                         "FIRST not after LAST")
    if args.wikidata or args.wikipedia:
        raise InputError("--incr reads the increments from the configured mirror: give no "
                         "--wikidata/--wikipedia paths (an increment given as a path is "
                         "continued all the same)")
    kinds: tuple[Kind, ...] = (("wikidata", "wikipedia") if args.wiki == "both" else
                               ("wikidata",) if args.wiki == "wikidata" else ("wikipedia",))
    with bars():
        ingest_increments(cfg, m.group(1), m.group(2) or m.group(1), kinds=kinds)
    print(f"warehouse: {cfg.warehouse}")
    return 0


def _run_reconcile(cfg: Config, args: argparse.Namespace) -> int:
    """Logging dumps given as paths (one a wiki): their deletions and restorations applied
    to the timelines continued from increments (docs/operations.md, the reconciliation)."""
    from emerge_lib.core.errors import InputError
    from emerge_lib.ingest.files import IngestError
    from emerge_lib.ingest.plan import check_inputs
    from emerge_lib.ingest.reconcile import in_order, is_logging
    from emerge_lib.pipeline.context import open_context
    from emerge_lib.pipeline.runner import run_stage

    logs = {}
    for kind in ("wikidata", "wikipedia"):
        paths = getattr(args, kind) or []
        if any(not is_logging(p) for p in paths):
            raise InputError(f"--{kind}: give one logging dump (*-pages-logging.xml.gz, or "
                             "all its parts *-pages-logging1..N.xml.gz) a wiki, and history "
                             "files in another run")
        if paths:
            try:
                ordered = in_order(paths)
            except IngestError as exc:
                raise InputError(f"--{kind}: {exc}") from None
            logs[kind] = [str(p) for p in check_inputs(ordered)]
    with open_context(cfg) as ctx:
        result = run_stage(ctx, "reconcile", logs=logs)
        if any(r.wiki == cfg.dumps.wikidata.wiki and not r.skipped for r in result.detail):
            run_stage(ctx, "stability")
    print(f"warehouse: {cfg.warehouse}")
    return 0


NAMES = {"wikidata": "Wikidata", "wikipedia": "Wikipedia"}


def kinds_to_ingest(cfg: Config, args: argparse.Namespace) -> list[str]:
    """The wikis to ingest: with ``--wiki both``, those with input (paths, or configured
    dump dates), as a build does; a wiki named alone without input, or none with input,
    is refused with what to give."""
    from emerge_lib.core.errors import InputError
    from emerge_lib.core.stage import has_inputs

    asked = ["wikidata", "wikipedia"] if args.wiki == "both" else [args.wiki]
    kinds = [k for k in asked if has_inputs(cfg, k, getattr(args, k))]
    if not kinds:
        what = " or ".join(NAMES[k] for k in asked)
        how = "; or ".join(f"--{k} paths, or dumps.{k}.dates with dumps.mirror" for k in asked)
        raise InputError(f"no {what} dump to ingest: give {how}")
    for k in asked:
        if k not in kinds:
            log.info("%s: no paths and no dumps.%s.dates; not ingested", NAMES[k], k)
    return kinds
