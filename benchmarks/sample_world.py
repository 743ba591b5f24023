"""How fast does ``emerge sample`` write? MB/s of uncompressed XML on one core.

Three figures, because bz2 dominates: (1) generation alone (plain XML files), (2) the
real thing (bz2 level 9, as Wikimedia), (3) bz2 level 9 alone on the same XML, for
context. The target is >= 20 MB/s of XML for (1); (2) is bounded by (3) per core, and
``--jobs N`` (one process per history file) multiplies it by the cores you give it.

    .venv/bin/python benchmarks/sample_world.py [--items 2000] [--articles 600]
        [--revisions 6] [--jobs 1] [--keep DIR]
"""

from __future__ import annotations

import argparse
import bz2
import shutil
import tempfile
import time
from pathlib import Path

from emerge_lib.sample import SampleSpec, generate_world


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--items", type=int, default=2000)
    ap.add_argument("--articles", type=int, default=600)
    ap.add_argument("--revisions", type=int, default=6)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--skip-compressed", action="store_true", help="measure generation only")
    ap.add_argument("--keep", help="write into this folder and keep it (default: a temp folder)")
    args = ap.parse_args()

    base = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="emerge-sample-bench-"))
    try:
        common = dict(seed=args.seed, items=args.items, articles=args.articles,
                      revisions=args.revisions, jobs=args.jobs)
        plain = generate_world(base / "plain", SampleSpec(compress=False, **common))
        print(f"world: --items {args.items} --articles {args.articles} --revisions {args.revisions}: "
              f"{plain.pages} pages, {plain.revisions} revisions, {plain.xml_bytes / 1e6:.0f} MB of XML "
              f"in {len(plain.files)} files (all dump dates), jobs={args.jobs}")
        print(f"(1) generation, no compression: {plain.seconds:6.1f} s  {plain.mb_per_s:6.1f} MB/s of XML")
        if not args.skip_compressed:
            packed = generate_world(base / "bz2", SampleSpec(**common))
            ratio = packed.compressed_bytes / packed.xml_bytes
            print(f"(2) generation + bz2 level 9:   {packed.seconds:6.1f} s  {packed.mb_per_s:6.1f} MB/s of XML "
                  f"({packed.compressed_bytes / 1e6:.1f} MB bz2, ratio {ratio:.3f})")
            sample = max((base / "plain" / "mirror").glob("*/*/*history*"), key=lambda p: p.stat().st_size)
            data = sample.read_bytes()[:20_000_000]
            started = time.perf_counter()
            bz2.compress(data, 9)
            took = time.perf_counter() - started
            print(f"(3) bz2 level 9 alone:          {took:6.1f} s  {len(data) / 1e6 / took:6.1f} MB/s of XML "
                  f"(on {len(data) / 1e6:.0f} MB of {sample.name})")
    finally:
        if not args.keep:
            shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
