"""How long a researcher waits for a release: ``load_release`` beside ``datasets.load_dataset``
on the same folder, in one run, and ``load_release`` of the same release published on a
local S3 server (SeaweedFS), first (the verified download into the cache) and after.

Every figure is the median of ``--rounds`` runs, each a fresh process (the interpreter
and every import included: what ``python -c "from emerge_lib import load_release; …"``
costs), and, inside one process after its imports, the call alone. ``load_dataset`` runs
in a fresh cache each round (its first call converts every split into Arrow) and again
in the same cache. Target: ``load_release`` under 2 s after the first download.

    python benchmarks/load_release.py                      # the demo's release, made once
    python benchmarks/load_release.py --release demo/release   # any release folder
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _harness import emerge

#: where the default release is made once (``emerge demo``), as `make bench` runs it
DEMO = Path(tempfile.gettempdir()) / "emerge-load-bench-demo"

CALL = """
import json, sys, time
started = time.perf_counter()
{imports}
imported = time.perf_counter()
{call}
called = time.perf_counter()
{again}
again = time.perf_counter()
print(json.dumps({{"import": imported - started, "call": called - imported,
                  "again": again - called, "rows": rows}}))
"""


def run(imports: str, call: str, again: str, env: dict[str, str] | None = None
        ) -> dict[str, float]:
    import os

    code = CALL.format(imports=imports, call=call, again=again)
    started = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, env={**os.environ, "HF_HUB_OFFLINE": "1", **(env or {})})
    figures = json.loads(out.stdout.strip().splitlines()[-1])
    figures["process"] = time.perf_counter() - started
    return figures


def median(rounds: list[dict[str, float]]) -> dict[str, float]:
    return {k: statistics.median(r[k] for r in rounds) for k in rounds[0]}


def show(name: str, figures: dict[str, float]) -> None:
    print(f"{name:<44} process {figures['process']:5.2f}s  imports {figures['import']:5.2f}s  "
          f"call {figures['call']:5.2f}s  again {figures['again']:5.2f}s  rows {figures['rows']:.0f}")


def demo_release() -> Path:
    """The demo's release (the path a newcomer's `make demo` takes), made when absent."""
    release = DEMO / "release"
    if not (release / "manifest.json").exists():
        print(f"no release at {release}; making it: emerge demo --out {DEMO}", flush=True)
        emerge("demo", "--out", str(DEMO), stdout=subprocess.DEVNULL)
    return release


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--release", type=Path, default=None,
                        help=f"a release folder (default: `emerge demo`'s, made once in {DEMO})")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--no-s3", action="store_true", help="skip the S3 figures")
    args = parser.parse_args()
    release = args.release.resolve() if args.release else demo_release()
    with tempfile.TemporaryDirectory(prefix="emerge-load-bench-") as scratch:
        tmp = Path(scratch)
        ours = [run("from emerge_lib import load_release",
                    f"rows = load_release({str(release)!r}).num_rows",
                    f"rows = load_release({str(release)!r}).num_rows") for _ in range(args.rounds)]
        pandas = [run("from emerge_lib import load_release",
                      f"rows = len(load_release({str(release)!r}, kind='triples', "
                      "format='pandas'))",
                      f"rows = len(load_release({str(release)!r}, kind='triples', "
                      "format='pandas'))") for _ in range(args.rounds)]
        theirs = [run("import datasets",
                      f"rows = sum(s.num_rows for s in datasets.load_dataset({str(release)!r}, "
                      f"cache_dir={str(tmp / f'hf{i}')!r}).values())",
                      f"rows = sum(s.num_rows for s in datasets.load_dataset({str(release)!r}, "
                      f"cache_dir={str(tmp / f'hf{i}')!r}).values())")
                  for i in range(args.rounds)]
        show("load_release(DIR) (datasets.Dataset)", median(ours))
        show("load_release(DIR, kind=triples, pandas)", median(pandas))
        show("datasets.load_dataset(DIR) (every split)", median(theirs))
        if args.no_s3:
            return 0
        import os

        from _harness import emerge

        from emerge_lib.publish import local_s3

        if not local_s3.available():
            print("no SeaweedFS (weed): S3 figures skipped")
            return 0
        with local_s3.start(tmp / "s3", buckets=["bench"]) as server:
            emerge("publish", "--release", str(release), "--to", "s3://bench/emerge",
                   "--endpoint-url", server.endpoint_url, capture_output=True,
                   env={**os.environ, **server.environment("publisher")})
            size = sum(f.stat().st_size for f in release.rglob("*") if f.is_file())
            env = {**server.environment("reader"),
                   "EMERGE__S3__ENDPOINT_URL": server.endpoint_url}
            first, cached = [], []
            for i in range(args.rounds):
                cache = str(tmp / f"cache{i}")
                call = (f"rows = load_release('s3://bench/emerge', cache_dir={cache!r})"
                        ".num_rows")
                first.append(run("from emerge_lib import load_release", call, call, env))
                cached.append(run("from emerge_lib import load_release", call, call, env))
            show(f"load_release(s3://…) first ({size / 1e6:.1f} MB)", median(first))
            show("load_release(s3://…) cached", median(cached))
    return 0


if __name__ == "__main__":
    sys.exit(main())
