"""``emerge tables``: the catalog, and what each table holds in a warehouse."""

from __future__ import annotations

import argparse

from emerge_lib.commands._common import config_flag, examples


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "tables",
        help="list the catalog's tables (with row counts when a warehouse is given)",
        description=(
            "List every table of the catalog: producer, consumers, partitioning and write "
            "mode; with --warehouse (or a config), also its Delta version and row count, "
            "read through deltalake without starting an engine."
        ),
    )
    examples(p, "emerge tables", "emerge tables --warehouse demo/world/warehouse",
             "emerge tables -c world/config.yaml")
    config_flag(p)
    p.add_argument("--warehouse", help="warehouse root (overrides the configuration)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from emerge_lib.catalog import TABLES, Catalog
    from emerge_lib.commands._common import require_warehouse
    from emerge_lib.core.config import load_config

    catalog = None
    if args.warehouse or args.config:
        cfg = load_config(args.config, overrides={"warehouse": args.warehouse}
                          if args.warehouse else None)
        require_warehouse(cfg, "tables")
        catalog = Catalog.for_config(cfg)
    header = ["table", "producer", "consumers", "partition_by", "mode"]
    if catalog:
        header += ["version", "rows"]
    print("\t".join(header))
    for name, spec in TABLES.items():
        row = [name, ",".join(spec.producers), ",".join(spec.consumers),
               ",".join(spec.partition_by) or "-", spec.write_mode]
        if catalog:
            version = catalog.version(name)
            row += ["-", "-"] if version is None else [
                str(version), str(catalog.row_count(name))
            ]
        print("\t".join(row))
    return 0
