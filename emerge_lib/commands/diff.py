"""``emerge diff``: the lines one release adds, removes and changes against another."""

from __future__ import annotations

import argparse


def register(sub: argparse._SubParsersAction) -> None:
    from emerge_lib.commands.query import add_release_flags

    p = sub.add_parser(
        "diff",
        help="lines added, removed and changed between two releases (by hash_id)",
        description=(
            "Compare two releases (folders, or s3://BUCKET/PREFIX[/v/VERSION] fetched "
            "verified into a cache) line by line by hash_id, the corpus and the evaluation "
            "set each on its own: per snapshot, the lines added, removed, changed (with the "
            "fields that differ) and unchanged. See docs/using-a-release.md."
        ),
    )
    from emerge_lib.commands._common import examples

    examples(p, "emerge diff --old release-2024Q1 --new demo/release",
             "emerge diff --old s3://my-bucket/emerge/v/0123456789abcdef --new demo/release "
             "--list")
    p.add_argument("--old", required=True, metavar="REL", help="the earlier release")
    p.add_argument("--new", required=True, metavar="REL", help="the later release")
    p.add_argument("--list", action="store_true",
                   help="also every line that differs: state, section, file, hash_id, fields")
    p.add_argument("--json", action="store_true", help="the whole report as JSON")
    p.add_argument("--unverified", action="store_true",
                   help="compare a release whose files no longer match its manifest (by "
                        "default refused: its version does not name what is there); each "
                        "mismatch is printed as a warning")
    add_release_flags(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import json

    from emerge_lib.commands.query import open_source
    from emerge_lib.hub.diff import diff_releases

    report = diff_releases(open_source(args, args.old), open_source(args, args.new),
                           verify=not args.unverified)
    if args.json:
        print(json.dumps(report.to_dict(), indent=1))
        return 0
    print(report.brief())
    if args.list:
        from emerge_lib.hub.query import terminal_safe

        for c in report.changes:  # a release's ids are its text: no control reaches the tty
            print("\t".join(terminal_safe(x, cell=True) for x in
                            [c.state, c.section, c.path, c.hash_id, ",".join(c.fields)]))
    return 0
