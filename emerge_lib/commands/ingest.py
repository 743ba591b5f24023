"""``emerge ingest``: dump files → Delta timelines (incremental and idempotent)."""

from __future__ import annotations

import argparse


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
    p.add_argument("--wiki", choices=["wikidata", "wikipedia", "both"], default="both",
                   help="which history to ingest (default both)")
    p.add_argument("--config", "-c", help="YAML configuration file")
    p.add_argument("--wikidata", nargs="+", metavar="PATH",
                   help="Wikidata history files (default: the configured mirror's dumps)")
    p.add_argument("--wikipedia", nargs="+", metavar="PATH",
                   help="Wikipedia history files (default: the configured mirror's dumps)")
    p.add_argument("--warehouse", help="warehouse root (overrides the configuration)")
    p.add_argument("--engine", help="embedded or sc://host:port (overrides the configuration)")
    p.add_argument("--workers", type=int, help="extraction processes (default: config, 0 = cores)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import os

    from tqdm import tqdm

    from emerge_lib.config import ConfigError, load_config
    from emerge_lib.dumps.locate import history_files
    from emerge_lib.engine import session_for
    from emerge_lib.stages.ingest_common import DumpFileRef
    from emerge_lib.stages.ingest_wikidata import ingest_wikidata
    from emerge_lib.stages.ingest_wikipedia import ingest_wikipedia, ranges_from_config
    from emerge_lib.stages.stability import build_stable_statements
    from emerge_lib.tables import Catalog

    overrides: dict = {}
    if args.warehouse:
        overrides["warehouse"] = args.warehouse
    if args.engine:
        overrides["engine"] = {"url": args.engine}
    cfg = load_config(args.config, overrides=overrides)

    def bar(f):
        t = tqdm(total=f.size, unit="B", unit_scale=True, desc=f.name, leave=False)
        return t.update

    def refs(paths, dumps):
        if paths:
            return [DumpFileRef.of(p) for p in paths]
        return [DumpFileRef.of(p, d) for p, d in history_files(cfg, dumps, bar)]

    workers = args.workers if args.workers is not None else cfg.dumps.workers
    workers = workers or os.cpu_count() or 1
    with session_for(cfg) as spark:
        catalog = Catalog(cfg.warehouse, spark)
        if args.wiki in ("wikidata", "both"):
            files = refs(args.wikidata, cfg.dumps.wikidata)
            with tqdm(total=len(files), unit="file", desc="wikidata") as done:
                report = ingest_wikidata(
                    catalog, files, wiki=cfg.dumps.wikidata.wiki, workers=workers,
                    max_reject_ratio=cfg.dumps.max_reject_ratio,
                    on_file=lambda s: done.update(1),
                )
            stable = build_stable_statements(catalog, cfg.stability.kg_hours)
            print(f"wikidata: {len(report.files)} files, {report.pages} pages, "
                  f"{report.revisions} revisions, {report.rejects} rejects in "
                  f"{report.seconds:.1f}s; {stable} stable statement intervals")
        if args.wiki in ("wikipedia", "both"):
            ranges = ranges_from_config(cfg)
            if not ranges:
                raise ConfigError("ingesting Wikipedia needs snapshots.timestamps: paragraphs "
                                  "are kept for the ranges the snapshots need")
            files = refs(args.wikipedia, cfg.dumps.wikipedia)
            with tqdm(total=len(files), unit="file", desc="wikipedia") as done:
                report = ingest_wikipedia(
                    catalog, files, ranges=ranges, wiki=cfg.dumps.wikipedia.wiki,
                    workers=workers, max_reject_ratio=cfg.dumps.max_reject_ratio,
                    on_file=lambda s: done.update(1),
                )
            print(f"wikipedia: {len(report.files)} files, {report.pages} pages, "
                  f"{report.revisions} revisions, {report.rejects} rejects in "
                  f"{report.seconds:.1f}s")
    print(f"warehouse: {cfg.warehouse}")
    return 0
