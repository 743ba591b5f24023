"""``emerge query``: SQL over a release's typed Parquet with DuckDB."""

from __future__ import annotations

import argparse
from typing import Any


def add_release_flags(p: argparse.ArgumentParser) -> None:
    """What ``query`` and ``diff`` share for a release on S3 (``download``'s flags)."""
    from emerge_lib.commands.publish import add_s3_flags

    p.add_argument("--cache-dir", metavar="DIR",
                   help="where S3 releases are cached (default: $EMERGE_CACHE, else "
                        "~/.cache/emerge/releases)")
    p.add_argument("--no-sign-request", action="store_true",
                   help="anonymous requests to a public bucket")
    add_s3_flags(p)


def open_source(args: argparse.Namespace, source: str, snapshots: list[str] | None = None
                ) -> Any:
    """The release at ``source`` (a folder or an S3 URL, fetched verified into the cache)."""
    from emerge_lib.hub import open_release

    if not source.startswith("s3://"):
        return open_release(source, snapshots=snapshots or (), cache_dir=args.cache_dir)
    from emerge_lib.commands._common import load
    from emerge_lib.commands.download import anonymous_hint
    from emerge_lib.commands.publish import s3_overrides
    from emerge_lib.publish import S3AccessError, client_for

    cfg = load(args, **s3_overrides(args))
    with anonymous_hint(args.no_sign_request, S3AccessError):
        client = client_for(cfg, unsigned=args.no_sign_request)
        return open_release(source, snapshots=snapshots or (), cache_dir=args.cache_dir,
                            client=client)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "query",
        help="SQL over a release's Parquet with DuckDB (counts per operation, a passage)",
        description=(
            "Run SQL over a release (a folder, or s3://BUCKET/PREFIX fetched verified into "
            "a cache) with DuckDB. Views: lines, evaluation (the lines, with snapshot and "
            "delta_end in front), triples (a row per TKGU triple), operations (a row per "
            "triple and operation), evaluation_triples, evaluation_operations, train, "
            "validation, test (the leak-free splits' lines), context (a line's k-hop KG "
            "context), relation_priors, kg_triples, entities, relations, instances. See "
            "docs/using-a-release.md."
        ),
    )
    from emerge_lib.commands._common import examples

    examples(p, "emerge query --release demo/release \"SELECT operation, count(*) FROM "
             "operations GROUP BY ALL ORDER BY ALL\"",
             "emerge query --release demo/release --format csv \"SELECT hash_id, passage "
             "FROM evaluation LIMIT 3\"",
             "emerge query --release s3://my-bucket/emerge --snapshot 2024-01-01 "
             "\"SELECT count(*) FROM lines\"")
    p.add_argument("sql", help="the SQL statement (DuckDB's dialect, over the views above)")
    p.add_argument("--release", required=True, metavar="DIR|s3://BUCKET/PREFIX",
                   help="the release: a folder, or a published one")
    p.add_argument("--format", choices=("table", "csv", "json"), default="table",
                   help="output: a table (default), CSV, or JSON lines")
    p.add_argument("--snapshot", action="append", default=[], metavar="DATE",
                   help="from S3: fetch only this snapshot's files (repeatable)")
    add_release_flags(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from emerge_lib.hub.query import render
    from emerge_lib.hub.query import run as run_query

    release = open_source(args, args.release, args.snapshot)
    columns, rows = run_query(release, args.sql)
    print(render(columns, rows, args.format), end="")
    return 0
