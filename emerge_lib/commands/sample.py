"""``emerge sample``: generate a sample world (a dump mirror with planted, known truth)."""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

DESCRIPTION = """\
Stream out a synthetic Wikimedia dump mirror for both wikis (wikidatawiki, enwiki) with
two or more dump dates, history files split by page-id range in bz2 and 7z (as
Wikimedia publishes them), dumpstatus.json and md5/sha1 sums; plus DIR/truth.jsonl (the
TKGU instances docs/semantics.md implies for the planted events), DIR/traps.jsonl (what
must not appear, and why), DIR/config.yaml (a ready configuration pointing at the
mirror) and DIR/world.json (a manifest).

Sizes: --items and --articles count all items and articles (planted + filler; about a
third as many redirects are added to enwiki); --revisions is the mean number of
revisions per filler page (each gets 1..2N-1). Roughly, uncompressed XML is
items x revisions x 6 KB + articles x revisions x 8 KB per dump; e.g. --items 200000
--revisions 20 gives tens of GB. The same --seed gives byte-identical output.
"""


def register(sub: argparse._SubParsersAction) -> None:
    from emerge_lib.commands._common import count, examples

    p = sub.add_parser(
        "sample",
        help="generate a sample dump mirror with planted truth (for tests and demos)",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    examples(p, "emerge sample --out world",
             "emerge sample --out world2 --seed 2 --snapshot 2024-01-01T00:00:00Z",
             "emerge sample --out big --items 200000 --articles 50000 --revisions 20 --jobs 2")
    p.add_argument("--out", required=True, metavar="DIR", help="output folder")
    p.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    p.add_argument("--items", type=count(1), default=1000, help="Wikidata items in total (default 1000)")
    p.add_argument("--articles", type=count(1), default=300,
                   help="English Wikipedia articles in total (default 300)")
    p.add_argument("--revisions", type=count(1), default=4,
                   help="mean revisions per filler page (default 4)")
    p.add_argument("--snapshot", action="append", dest="snapshots", metavar="TS",
                   help="snapshot timestamp t (repeatable; >= 60 days apart; "
                        "default 2024-01-01T00:00:00Z and 2024-04-01T00:00:00Z)")
    p.add_argument("--dump-date", action="append", dest="dump_dates", metavar="YYYYMMDD",
                   help="dump dates (repeatable; default: one covering each snapshot's "
                        "windows + 168 h, on the 1st/20th schedule, at least two)")
    p.add_argument("--pages-per-file", type=count(1), default=None,
                   help="pages per history file (default: 4+ files per wiki)")
    p.add_argument("--jobs", type=count(1), default=1,
                   help="processes writing files in parallel (default 1)")
    p.add_argument("--compress-level", type=int, default=9, choices=range(1, 10), metavar="1-9",
                   help="bz2 compression level (default 9, as Wikimedia)")
    p.add_argument("--formats", default="bz2,7z", metavar="LIST",
                   help="formats of the history files, comma-separated (default bz2,7z: both, "
                        "as Wikimedia publishes them, each listed in dumpstatus.json)")
    p.add_argument("--bench-statements", type=count(0), default=0, metavar="N",
                   help="bench mode: N extra item-valued statements per filler item, objects "
                        "being items with articles (default 0 = off)")
    p.add_argument("--bench-passages", type=count(0), default=0, metavar="N",
                   help="bench mode: about N linked paragraphs appended by filler articles "
                        "inside the windows (default 0 = off; truth.jsonl then lists planted "
                        "rows only)")
    p.add_argument("--scenarios", metavar="LIST",
                   help="plant only these scenarios around each t, comma-separated "
                        "(default: every one; the names: emerge_lib/sample/plan.py SCENARIOS)")
    p.add_argument("--case", metavar="NAME",
                   help="a history that gives a stage nothing: no_removal, no_addition, "
                        "no_emerging, no_new_passage, no_line or quiet (its scenarios; "
                        "with --items 1 --articles 1, no filler pages either)")
    p.add_argument("--increments", action="store_true",
                   help="also write Wikimedia's daily adds/changes dumps (mirror/other/incr/"
                        "WIKI/YYYYMMDD/), one per day from the first dump date to the day "
                        "before the newest")
    p.add_argument("--logging", action="store_true",
                   help="Wikimedia's logging dump (pages-logging.xml.gz) beside each full dump, "
                        "with a deletion of an article and of an item, a restoration and a move "
                        "planted between the last two dump dates (docs/dumps.md)")
    p.add_argument("--logging-parts", type=int, default=1, metavar="N",
                   help="with --logging, each logging dump in N parts (pages-logging1..N"
                        ".xml.gz, a range of log ids each), as the largest wikis' are "
                        "(default 1: one file)")
    p.add_argument("--recent-share", type=float, default=0.5, metavar="S",
                   help="of a filler page's later edits, the share in the last 200 days "
                        "before the newest dump (default 0.5; 0..1): with --revisions, sizes "
                        "the history apart from its newest quarter")
    p.add_argument("--force", action="store_true",
                   help="replace a sample world already in DIR")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from emerge_lib.sample import DEFAULT_SNAPSHOTS, SampleSpec, generate_world

    out = Path(args.out)
    if out.exists() and any(out.iterdir()):
        if not (out / "world.json").exists():
            print(f"emerge sample: {out} is not empty and holds no sample world; "
                  "choose an empty folder", file=sys.stderr)
            return 2
        if not args.force:
            print(f"emerge sample: {out} already holds a sample world (use --force to replace it)",
                  file=sys.stderr)
            return 2
        shutil.rmtree(out / "mirror", ignore_errors=True)
        for name in ("truth.jsonl", "traps.jsonl", "config.yaml", "world.json"):
            (out / name).unlink(missing_ok=True)
    from emerge_lib.sample.plan import EMPTY_CASES

    if not 0.0 <= args.recent_share <= 1.0:
        print(f"emerge sample: --recent-share {args.recent_share}: give a share from 0 to 1",
              file=sys.stderr)
        return 2

    scenarios, new_text = None, True
    if args.case:
        if args.case not in EMPTY_CASES:
            print(f"emerge sample: no case named {args.case!r}; cases: "
                  f"{', '.join(EMPTY_CASES)}", file=sys.stderr)
            return 2
        scenarios, new_text = EMPTY_CASES[args.case]
    if args.scenarios is not None:
        scenarios = tuple(x.strip() for x in args.scenarios.split(",") if x.strip())
    spec = SampleSpec(
        seed=args.seed, items=args.items, articles=args.articles, revisions=args.revisions,
        snapshots=tuple(args.snapshots or DEFAULT_SNAPSHOTS),
        dump_dates=tuple(args.dump_dates) if args.dump_dates else None,
        pages_per_file=args.pages_per_file, jobs=max(1, args.jobs),
        compress_level=args.compress_level,
        formats=tuple(f.strip() for f in args.formats.split(",") if f.strip()),
        bench_statements=max(0, args.bench_statements), bench_passages=max(0, args.bench_passages),
        scenarios=scenarios, new_text=new_text, increments=args.increments,
        logging=args.logging, logging_parts=max(1, args.logging_parts),
        recent_share=args.recent_share,
    )
    try:
        report = generate_world(out, spec, progress=not args.quiet)
    except ValueError as exc:
        print(f"emerge sample: {exc}", file=sys.stderr)
        return 2
    print(f"sample world written to {out.resolve()}")
    print(f"  mirror:  {(out / 'mirror').resolve()} (dumps {', '.join(next(iter(report.dumps.values())))})")
    print(f"  config:  {(out / 'config.yaml').resolve()}")
    print(f"  truth:   {report.truth_rows} instances in truth.jsonl, {report.trap_rows} traps in traps.jsonl")
    packed = ", ".join(f"{n / 1e6:.1f} MB {fmt}" for fmt, n in report.compressed.items())
    print(f"  size:    {report.xml_bytes / 1e6:.1f} MB XML -> {packed} "
          f"in {len(report.files)} files, {report.pages} pages, {report.revisions} revisions (all dumps)")
    print(f"  speed:   {report.seconds:.1f} s, {report.mb_per_s:.1f} MB/s of XML")
    return 0
