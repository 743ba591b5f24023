"""Publish and download throughput: ``emerge publish`` / ``emerge download`` (the commands
a user runs, with their defaults: gate hashing, SHA256 per part, every file verified on
the way back) against plain boto3 scripts on the same local S3 server, in one run: ``upload_file`` /
``download_file`` of the same files in a loop with default transfer settings (the
baseline of the target), and the same calls on 8 threads (what a careful script does).

The release is generated in the release layout at a realistic size (default ~300 MB):
per snapshot five cumulative delta JSONL files of EMERGE-like instances (growing with
the window), their evaluation_set/ split, and the KG snapshot as Parquet; validation
results and a card; a manifest that passed validation. Every side runs as a fresh
process (interpreter and boto3 import included) against SeaweedFS on 127.0.0.1, in
rounds of alternating order to new prefixes; every download is compared byte for byte;
the figures are the median over rounds. Target: emerge >= 0.9x the boto3 loop both ways.

    python benchmarks/publish.py              # ~4 min on 2 quiet cores
    python benchmarks/publish.py --mb 100 --rounds 1
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from emerge_lib.formats.manifest import write_manifest
from emerge_lib.publish import local_s3

BUCKET = "bench"
SNAPSHOTS = ["2021-01-01", "2022-01-01", "2023-01-01", "2024-01-01"]
VOCABULARY = ("the of and in a to was is for on as by with he at from his an were are which "
         "this also be has or had first one their its new after who they two her she been "
         "other when time during there into school university city team film season "
         "album river county party election league club championship war born died "
         "company state national american british french german world president")
WORDS = VOCABULARY.split()

PLAIN_UPLOAD = """
import os, sys, boto3
root, bucket, prefix = sys.argv[1:4]
s3 = boto3.client("s3")
for dirpath, _, names in os.walk(root):
    for name in sorted(names):
        path = os.path.join(dirpath, name)
        s3.upload_file(path, bucket, prefix + "/" + os.path.relpath(path, root))
"""
# the same with files in parallel (8 threads, one client): what a careful script does
THREADED_UPLOAD = """
import os, sys, boto3
from concurrent.futures import ThreadPoolExecutor
root, bucket, prefix = sys.argv[1:4]
s3 = boto3.client("s3")
paths = [os.path.join(d, n) for d, _, names in os.walk(root) for n in names]
with ThreadPoolExecutor(8) as pool:
    list(pool.map(lambda p: s3.upload_file(p, bucket, prefix + "/" + os.path.relpath(p, root)),
                  paths))
"""
THREADED_DOWNLOAD = """
import os, sys, boto3
from concurrent.futures import ThreadPoolExecutor
bucket, prefix, out = sys.argv[1:4]
s3 = boto3.client("s3")
keys = [o["Key"] for page in s3.get_paginator("list_objects_v2").paginate(
    Bucket=bucket, Prefix=prefix + "/") for o in page.get("Contents", [])]
def get(key):
    dest = os.path.join(out, key[len(prefix) + 1:])
    os.makedirs(os.path.dirname(dest), exist_ok=True)
    s3.download_file(bucket, key, dest)
with ThreadPoolExecutor(8) as pool:
    list(pool.map(get, keys))
"""
PLAIN_DOWNLOAD = """
import os, sys, boto3
bucket, prefix, out = sys.argv[1:4]
s3 = boto3.client("s3")
for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix + "/"):
    for obj in page.get("Contents", []):
        dest = os.path.join(out, obj["Key"][len(prefix) + 1:])
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        s3.download_file(bucket, obj["Key"], dest)
"""


def text(rng: random.Random, n_words: int) -> str:
    return " ".join(rng.choices(WORDS, k=n_words))


def record_pool(rng: random.Random, n: int = 4000) -> list[str]:
    """EMERGE-like instances without their ids: a passage of 40-400 words and triples."""
    def triples(k: int) -> list[list[str]]:
        return [[f"Q{rng.randrange(10**7)}", f"P{rng.randrange(3000)}",
                 f"Q{rng.randrange(10**7)}"] for _ in range(k)]

    return [json.dumps({"passage": text(rng, rng.randint(40, 400)),
                        "x-triples": triples(rng.randint(0, 6)),
                        "e-triples": triples(rng.randint(0, 3))})[1:] for _ in range(n)]


def jsonl(path: Path, rng: random.Random, pool: list[str], target_bytes: int,
          snapshot: str, delta: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    written = i = 0
    with open(path, "w", encoding="utf-8") as fh:
        while written < target_bytes:
            line = (f'{{"hash_id": "{snapshot}-{delta}-{i}", "snapshot_date": "{snapshot}", '
                    f'"delta_date": "{delta}", {rng.choice(pool)}\n')
            fh.write(line)
            written += len(line)
            i += 1


def make_release(root: Path, total_mb: float, seed: int = 7) -> dict:
    rng = random.Random(seed)
    per_snapshot = total_mb * 1e6 / len(SNAPSHOTS)
    pool = record_pool(rng)
    paths: list[str] = []
    for snapshot in SNAPSHOTS:
        deltas = [f"{snapshot[:8]}{8 + 7 * k:02d}" for k in range(4)] + [f"{snapshot[:5]}02-05"]
        weights = [1, 2, 3, 4, 5]  # cumulative deltas grow
        for delta, w in zip(deltas, weights, strict=True):
            size = int(per_snapshot * 0.78 * w / sum(weights))
            rel = f"corpus/snapshot_{snapshot}/delta_{delta}.jsonl"
            jsonl(root / rel, rng, pool, size, snapshot, delta)
            paths.append(rel)
            rel = f"evaluation_set/snapshot_{snapshot}/delta_{delta}.jsonl"
            jsonl(root / rel, rng, pool, size // 100, snapshot, delta)
            paths.append(rel)
        rows = int(per_snapshot * 0.2 / 28)
        kg = pa.table({"s": [f"Q{rng.randrange(10**8)}" for _ in range(rows)],
                       "p": [f"P{rng.randrange(10**4)}" for _ in range(rows)],
                       "o": [f"Q{rng.randrange(10**8)}" for _ in range(rows)]})
        rel = f"kg_snapshots/snapshot_{snapshot}/kg_triples.parquet"
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(kg, root / rel)
        paths.append(rel)
    (root / "validation").mkdir(exist_ok=True)
    (root / "validation/results.json").write_text('{"success": true}\n')
    (root / "README.md").write_text("# EMERGE (benchmark release)\n")
    paths += ["validation/results.json", "README.md"]
    return write_manifest(root, paths, meta={"validation": {
        "success": True, "results": "validation/results.json", "suites": {}}})


def timed(cmd: list[str], env: dict[str, str]) -> float:
    started = time.perf_counter()
    done = subprocess.run(cmd, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - started
    if done.returncode:
        raise SystemExit(f"{' '.join(cmd[:3])} failed:\n{done.stderr[-2000:]}")
    return seconds


def same_tree(a: Path, b: Path) -> bool:
    files = sorted(p.relative_to(a) for p in a.rglob("*") if p.is_file())
    return files == sorted(p.relative_to(b) for p in b.rglob("*") if p.is_file()) and all(
        (a / f).read_bytes() == (b / f).read_bytes() for f in files)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--mb", type=float, default=300, help="release size in MB (default 300)")
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--keep", action="store_true", help="keep the temporary folder")
    args = p.parse_args()
    emerge = shutil.which("emerge", path=str(Path(sys.executable).parent)) or "emerge"
    work = Path(tempfile.mkdtemp(prefix="emerge-bench-publish-"))
    try:
        release = work / "release"
        t = time.perf_counter()
        manifest = make_release(release, args.mb)
        size = sum(f["bytes"] for f in manifest["files"]) + (release / "manifest.json").stat().st_size
        print(f"release: {len(manifest['files']) + 1} files, {size / 1e6:.0f} MB "
              f"(generated in {time.perf_counter() - t:.0f}s)")
        with local_s3.start(work / "s3", buckets=[BUCKET]) as server:
            env = {**os.environ, **server.environment("publisher"),
                   "AWS_EC2_METADATA_DISABLED": "true"}
            sides = {"plain": (PLAIN_UPLOAD, PLAIN_DOWNLOAD),
                     "threaded": (THREADED_UPLOAD, THREADED_DOWNLOAD), "emerge": None}
            runs: dict[tuple[str, str], list[float]] = {
                (side, way): [] for side in sides for way in ("up", "down")}
            for r in range(args.rounds):
                order = list(sides) if r % 2 == 0 else list(reversed(sides))
                for side in order:
                    prefix, out = f"{side}{r}", work / f"{side}{r}"
                    if side == "emerge":
                        up = [emerge, "publish", "--release", str(release), "--to",
                              f"s3://{BUCKET}/{prefix}"]
                        down = [emerge, "download", "--from", f"s3://{BUCKET}/{prefix}",
                                "--to", str(out)]
                    else:
                        up = [sys.executable, "-c", sides[side][0], str(release), BUCKET, prefix]
                        down = [sys.executable, "-c", sides[side][1], BUCKET, prefix, str(out)]
                    runs[side, "up"].append(timed(up, env))
                    runs[side, "down"].append(timed(down, env))
                    assert same_tree(release, out), f"{side}: the download differs"
                    shutil.rmtree(out)
                print(f"round {r + 1}: " + ", ".join(
                    f"{side} {way} {size / 1e6 / v[-1]:.0f} MB/s"
                    for (side, way), v in runs.items()), flush=True)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    mbps = {k: size / 1e6 / statistics.median(v) for k, v in runs.items()}
    print(f"\nmedian of {args.rounds} rounds, {size / 1e6:.0f} MB, local SeaweedFS, fresh "
          "processes (MB/s):")
    print(f"{'':10} {'boto3 loop':>11} {'boto3 x8':>9} {'emerge':>7} {'vs loop':>8} "
          f"{'vs x8':>6}")
    ok = True
    for way, label in (("up", "publish"), ("down", "download")):
        loop, threaded, ours = (mbps["plain", way], mbps["threaded", way], mbps["emerge", way])
        ok &= ours >= 0.9 * loop
        print(f"{label:10} {loop:11.1f} {threaded:9.1f} {ours:7.1f} {ours / loop:7.2f}x "
              f"{ours / threaded:5.2f}x")
    print("boto3 loop: upload_file/download_file per file, default settings; boto3 x8: the "
          "same on 8 threads; emerge: the commands with their defaults (gate, SHA256 per "
          "part, every file verified)")
    print("target: emerge >= 0.9x the boto3 loop both ways: " + ("met" if ok else "NOT met"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
