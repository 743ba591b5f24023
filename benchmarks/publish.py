"""Publish and download throughput: ``emerge publish`` / ``emerge download`` (the commands
a user runs, with their defaults: gate hashing, SHA256 per part, every file verified on
the way back) against a plain boto3 script (``upload_file`` / ``download_file`` of the
same files in a loop, default transfer settings) on the same local S3 server, in one run.

The release is generated in the release layout at a realistic size (default ~300 MB):
per snapshot five cumulative delta JSONL files of EMERGE-like instances (growing with
the window), their evaluation_set/ split, and the KG snapshot as Parquet; validation
results and a card; a manifest that passed validation. Both sides run as fresh
processes (interpreter and boto3 import included) against SeaweedFS on 127.0.0.1, in
alternating rounds to new prefixes; the figures are the median over rounds. Target:
emerge >= 0.9x plain boto3 both ways.

    python benchmarks/publish.py              # ~2 min on 2 cores
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

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import pyarrow as pa  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402

from emerge_lib.manifest import write_manifest  # noqa: E402
from emerge_lib.publish import local_s3  # noqa: E402

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
            rel = f"snapshot_{snapshot}/delta_{delta}.jsonl"
            jsonl(root / rel, rng, pool, size, snapshot, delta)
            paths.append(rel)
            rel = f"evaluation_set/snapshot_{snapshot}/delta_{delta}.jsonl"
            jsonl(root / rel, rng, pool, size // 100, snapshot, delta)
            paths.append(rel)
        rows = int(per_snapshot * 0.2 / 28)
        kg = pa.table({"s": [f"Q{rng.randrange(10**8)}" for _ in range(rows)],
                       "p": [f"P{rng.randrange(10**4)}" for _ in range(rows)],
                       "o": [f"Q{rng.randrange(10**8)}" for _ in range(rows)]})
        rel = f"snapshot_{snapshot}/kg_triples.parquet"
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
                   "PYTHONPATH": str(REPO), "AWS_EC2_METADATA_DISABLED": "true"}
            runs: dict[str, list[float]] = {k: [] for k in
                                            ("plain up", "emerge up", "plain down", "emerge down")}
            for r in range(args.rounds):
                runs["plain up"].append(timed([sys.executable, "-c", PLAIN_UPLOAD, str(release),
                                               BUCKET, f"plain{r}"], env))
                runs["emerge up"].append(timed([emerge, "publish", "--release", str(release),
                                                "--to", f"s3://{BUCKET}/emerge{r}"], env))
                plain_out, emerge_out = work / f"plain{r}", work / f"emerge{r}"
                runs["plain down"].append(timed([sys.executable, "-c", PLAIN_DOWNLOAD, BUCKET,
                                                 f"plain{r}", str(plain_out)], env))
                runs["emerge down"].append(timed([emerge, "download", "--from",
                                                  f"s3://{BUCKET}/emerge{r}", "--to",
                                                  str(emerge_out)], env))
                assert same_tree(release, plain_out) and same_tree(release, emerge_out)
                shutil.rmtree(plain_out)
                shutil.rmtree(emerge_out)
                print(f"round {r + 1}: " + ", ".join(f"{k} {size / 1e6 / v[-1]:.0f} MB/s"
                                                     for k, v in runs.items()))
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    mbps = {k: size / 1e6 / statistics.median(v) for k, v in runs.items()}
    print(f"\nmedian of {args.rounds} rounds, {size / 1e6:.0f} MB, local SeaweedFS, "
          f"fresh processes:")
    print(f"{'':10} {'plain boto3':>12} {'emerge':>12} {'ratio':>7}")
    ok = True
    for way in ("up", "down"):
        plain, ours = mbps[f"plain {way}"], mbps[f"emerge {way}"]
        ok &= ours >= 0.9 * plain
        label = "publish" if way == "up" else "download"
        print(f"{label:10} {plain:9.1f} MB/s {ours:7.1f} MB/s {ours / plain:6.2f}x")
    print("target >= 0.9x plain boto3 (emerge also hashes, verifies and resumes): "
          + ("met" if ok else "NOT met"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
