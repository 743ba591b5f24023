"""Wikidata ingest throughput vs the bz2 decompression floor and a naive parser, and the
``emerge`` CLI vs a naive one-process reference, side by side in one run.

The same generated bz2 history (the newest dump date of a sample world, >= 1 GB of XML),
figures in MB/s of uncompressed XML, CPU seconds next to wall seconds:

* floor: decompression alone with all N cores, reading every file once: indexed_bzip2
  with N threads per file, ``lbzip2 -nN`` when installed, and a pool of N processes with
  one indexed_bzip2 thread each (the extraction pool's layout); the best is the floor.
* naive (per core): one process doing stdlib bz2 -> mwxml -> json.loads of every revision
  -> statements, on a fixed prefix of whole files (>= --naive-mb of XML).
* ours per core: the extraction worker (``wikidata_extract.WikidataFileExtractor``), one
  process, one decompression thread, on the same prefix.
* ours end to end: ``ingest.plan_ingest`` -> ``ingest.job_for`` -> ``ingest.extract`` in
  ``ingest_common.run_workers`` with a process pool of N, on all files (no Delta commit);
  and ``run_stage(StageContext(cfg, catalog, wikidata=files), "ingest_wikidata")``, the
  whole stage including the Delta commit on the embedded engine, with the default
  configuration (``dumps.workers: 0``, one extraction process per core: what users get).
* CLI (through subprocesses, CPU = their user + sys from ``getrusage(RUSAGE_CHILDREN)``):
  - ``emerge inspect statements --wikidata <every file of the dump date> --at τ`` with its
    defaults, stdout (the sorted TSV ``s<TAB>p<TAB>o`` of T_τ) kept;
  - the naive reference (this script with ``--reference-tsv``): one process, stdlib bz2
    -> mwxml -> json.loads of every revision -> each item's statement presence timelines
    -> the 168 h KG stability rule -> T_τ with V_τ (docs/semantics.md §1.1-1.2) -> the same TSV,
    reading both the current and the legacy JSON serialization (the sample world has
    both: planted entities start in the 2012-14 legacy form). Both outputs must be
    byte-identical; a difference lists the triples on each side;
  - ``emerge build -c <world>/config.yaml`` on the same dump date's Wikidata and enwiki
    files, a fresh --warehouse and --out, with its defaults (no --workers).
  τ defaults to the first snapshot of the world's config.yaml (--at to change it).

Targets: end to end (pool) >= 0.8 x floor; per core >= 1.6 x naive (issue 4). On a
2-core machine, ``emerge inspect statements`` and ``emerge build`` use both cores by
default: CPU / wall >= 1.6 each on an ingest of >= 1 GB of XML (for build, its ingest
stages, whose log lines give their cores: CPU / wall; the whole build's figure is printed
beside it); ``emerge inspect
statements`` >= 2.5 x the naive reference (wall clock) with identical output. Each
measurement runs --repeat times (--commit-repeat for the Delta commit run, --cli-repeat
for the CLI section), in rounds that run every measurement once in turn, so a change in
the machine's load hits all alike; the best is used and the spread is printed, because
the machine may be shared (the load average is printed every round).

    .venv/bin/python benchmarks/ingest_wikidata.py --world /tmp/bench-world-1000

A missing world is generated first (about 2.3 GB of XML over two dump dates, 1.4 GB in
the newest; 10+ minutes on 2 cores, bz2 level 9 being the bottleneck) with:

    emerge sample --out DIR --items 22000 --articles 10 --revisions 8 \\
        --pages-per-file 1000 --jobs N --compress-level 9 --quiet

1,000 pages per file gives 23 history files of about 60 MB of XML: Wikimedia splits the
Wikidata history into hundreds of files, and with only a handful (3,000 pages per file
gives 8) the pool's last file runs alone for a tenth of the run, which measures the
file count, not the extraction.
"""

from __future__ import annotations

import argparse
import bz2
import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from calendar import timegm
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from _harness import EMERGE, REPO, Figure, children_cpu, cpu_count, cpu_seconds, measure
from _harness import ensure_world as harness_world

from emerge_lib.ingest.pool import keep_freed_memory

FLOOR_TARGET = 0.8
NAIVE_TARGET = 1.6
CLI_NAIVE_TARGET = 2.5
CLI_CORES_TARGET = 1.6
CLI_MIN_XML = 1e9  # the CPU/wall targets are stated for an ingest of >= 1 GB of XML
KG_SPAN = 168 * 3600  # stability.kg_hours, the default


# ----------------------------------------------------------------------------- the world
def ensure_world(world: Path, jobs: int, articles: int = 10, items: int = 22000,
                 revisions: int = 8, pages_per_file: int = 1000) -> None:
    """Generate the benchmark's world unless ``world`` holds one (whatever its shape)."""
    harness_world(world, ["--items", str(items), "--articles", str(articles),
                          "--revisions", str(revisions), "--pages-per-file", str(pages_per_file),
                          "--jobs", str(jobs), "--compress-level", "9", "--quiet"],
                  marker="mirror/wikidatawiki", note=" (10+ minutes)")


def history_files(world: Path, dump_date: str | None, wiki: str = "wikidatawiki",
                  suffix: str = "bz2") -> tuple[str, list[Path], dict[str, int]]:
    """The newest (or given) dump date's history files in one format (``suffix``: the
    sample world writes bz2 and 7z) and their XML sizes (world.json)."""
    root = world / "mirror" / wiki
    dates = sorted(p.name for p in root.iterdir() if p.is_dir())
    date = dump_date or dates[-1]
    files = sorted((root / date).glob(f"*pages-meta-history*.{suffix}"),
                   key=lambda p: int(p.name.split("history")[1].split(".")[0]))
    sizes: dict[str, int] = {}
    manifest = world / "world.json"
    if manifest.is_file():
        entries = json.loads(manifest.read_text())["dumps"]["files"].get(f"{wiki}/{date}", [])
        sizes = {e["name"]: e["xml_bytes"] for e in entries}
    return date, files, sizes


def first_snapshot(world: Path) -> str | None:
    """The first snapshot timestamp of the world's config.yaml (inside its history)."""
    import yaml

    config = world / "config.yaml"
    if not config.is_file():
        return None
    stamps = ((yaml.safe_load(config.read_text()) or {}).get("snapshots") or {}).get("timestamps")
    return str(sorted(stamps)[0]) if stamps else None


def drain(stream, chunk: int = 1 << 22) -> int:
    n = 0
    while True:
        block = stream.read(chunk)
        if not block:
            return n
        n += len(block)


def decompress_ibz2(files: list[Path], threads: int) -> int:
    import indexed_bzip2

    n = 0
    for f in files:
        with indexed_bzip2.open(str(f), parallelization=threads) as fh:
            n += drain(fh)
    return n


def _ibz2_one(path: str) -> int:
    return decompress_ibz2([Path(path)], 1)


def decompress_ibz2_pool(files: list[Path], workers: int) -> int:
    """One file per process, one thread each: the layout the extraction pool uses."""
    from concurrent.futures import ProcessPoolExecutor
    from multiprocessing import get_context

    with ProcessPoolExecutor(max_workers=workers, mp_context=get_context("spawn"),
                             initializer=keep_freed_memory) as pool:
        return sum(pool.map(_ibz2_one, [str(f) for f in files]))


def decompress_lbzip2(files: list[Path], threads: int) -> int:
    n = 0
    for f in files:
        proc = subprocess.Popen(["lbzip2", "-dc", f"-n{threads}", str(f)], stdout=subprocess.PIPE)
        assert proc.stdout is not None
        n += drain(proc.stdout)
        if proc.wait() != 0:
            raise RuntimeError(f"lbzip2 failed on {f}")
    return n


# ----------------------------------------------------------------------------- naive path
def naive_statements(obj: dict) -> list[tuple]:
    """What a straightforward reader extracts: item-valued statements with qualifiers."""
    out = []
    claims = obj.get("claims")
    if isinstance(claims, dict):  # current format
        for group in claims.values():
            for c in group:
                snak = c.get("mainsnak", {})
                value = (snak.get("datavalue") or {}).get("value")
                if isinstance(value, dict) and value.get("entity-type") == "item":
                    quals = [(q.get("property"), q.get("snaktype"))
                             for qs in (c.get("qualifiers") or {}).values() for q in qs]
                    out.append((c.get("id"), snak.get("property"), value.get("id"),
                                c.get("rank"), quals))
    elif isinstance(claims, list):  # legacy format
        for c in claims:
            m = c.get("m") or []
            if len(m) > 3 and m[2] == "wikibase-entityid":
                out.append((c.get("g"), m[1], m[3], c.get("rank"), c.get("q")))
    return out


def naive(files: list[Path]) -> int:
    """stdlib bz2 -> mwxml -> json.loads -> statements, one process."""
    revisions = 0
    for f in files:
        with bz2.open(f, "rb") as fh:
            revisions += naive_parse(fh)
    return revisions


def naive_parse(xml) -> int:
    """The naive parse of one decompressed XML stream: mwxml -> json.loads of every
    revision -> statements (and the English label); returns the revisions read."""
    import mwxml

    revisions = 0
    for page in mwxml.Dump.from_file(xml):
        for rev in page:
            revisions += 1
            if rev.text:
                try:
                    obj = json.loads(rev.text)
                except ValueError:
                    continue
                if isinstance(obj, dict):
                    naive_statements(obj)
                    labels = obj.get("labels")
                    _ = labels.get("en") if isinstance(labels, dict) else None
    return revisions


# ----------------------------------------------------------------------------- naive T_τ
# The reference for ``emerge inspect statements``: docs/semantics.md §1.1-1.2 read plainly, one
# process, every revision decoded with json.loads. Not optimized: it is the baseline.
ITEM_TITLE = re.compile(r"Q[0-9]+")
LEGACY_RANKS = {0: "deprecated", 1: "normal", 2: "preferred"}


def _is_legacy(obj: dict) -> bool:
    """The pre-2014 serialization: ``label``/``description``/``links``, claims a list."""
    if any(k in obj for k in ("type", "labels", "descriptions", "sitelinks")):
        return False
    return any(k in obj for k in ("label", "description", "links", "entity"))


def item_value(value: object) -> str | None:
    """The item id of an entity-id data value (current: ``id`` or ``numeric-id``;
    legacy: ``numeric-id`` only); None for properties, lexemes and anything else."""
    if not isinstance(value, dict) or value.get("entity-type") != "item":
        return None
    if isinstance(value.get("id"), str):
        return value["id"]
    num = value.get("numeric-id")
    return f"Q{num}" if isinstance(num, int) else None


def state_of(obj: dict) -> tuple[bool, frozenset[tuple[str, str]]]:
    """One revision's (has an enwiki sitelink, keys (p, o) of its item-valued statements of
    rank other than deprecated). An entity redirect is absent: no sitelink, no statements."""
    if "redirect" in obj:
        return False, frozenset()
    keys = set()
    claims = obj.get("claims")
    if _is_legacy(obj):
        links = obj.get("links")
        link = links.get("enwiki") if isinstance(links, dict) else None
        if isinstance(link, dict):
            link = link.get("name")
        for c in claims if isinstance(claims, list) else []:
            m = c.get("m")
            if (isinstance(m, list) and len(m) >= 4 and m[0] == "value"
                    and m[2] == "wikibase-entityid"):
                o = item_value(m[3])
                if o is not None and LEGACY_RANKS.get(c.get("rank", 1)) != "deprecated":
                    keys.add((f"P{m[1]}", o))
    else:
        sitelinks = obj.get("sitelinks")
        link = sitelinks.get("enwiki") if isinstance(sitelinks, dict) else None
        if isinstance(link, dict):
            link = link.get("title")
        for group in claims.values() if isinstance(claims, dict) else []:
            for c in group:
                snak = c.get("mainsnak") or {}
                datavalue = snak.get("datavalue") or {}
                if snak.get("snaktype") == "value" and datavalue.get("type") == "wikibase-entityid":
                    o = item_value(datavalue.get("value"))
                    if o is not None and c.get("rank", "normal") != "deprecated":
                        keys.add((snak.get("property"), o))
    return isinstance(link, str) and link != "", frozenset(keys)


def stable_intervals(intervals: list[list], span: int) -> list[list]:
    """The KG stability rule on one key's presences [start, end) (end None: still present
    at the end of the history), in time order: fill absences shorter than the span, then
    drop presences shorter than the span; an open presence counts as long."""
    merged: list[list] = []
    for start, end in intervals:
        if merged and merged[-1][1] is not None and start - merged[-1][1] < span:
            merged[-1][1] = end
        else:
            merged.append([start, end])
    return [iv for iv in merged if iv[1] is None or iv[1] - iv[0] >= span]


def reference_item(revisions: list[tuple[int, int, bool, frozenset]], tau: int, span: int,
                   stability: bool = True) -> tuple[bool, set[tuple[str, str]]]:
    """One item's (in V at τ, keys (p, o) present at τ) from its readable revisions
    (timestamp, revision id, enwiki, keys), in any order."""
    revisions.sort(key=lambda r: (r[0], r[1]))
    # the state at an instant is the revision with the greatest (timestamp, id) at or
    # before it: of several revisions with one timestamp only the last ever is a state
    steps = [r for i, r in enumerate(revisions)
             if i + 1 == len(revisions) or revisions[i + 1][0] != r[0]]
    at = [r for r in steps if r[0] <= tau]
    in_v = bool(at) and at[-1][2]
    if not stability:
        return in_v, set(at[-1][3]) if at else set()
    presences: dict[tuple[str, str], list[list]] = {}
    before: frozenset = frozenset()  # before the first revision: not an absence, nothing
    for ts, _, _, keys in steps:
        for key in keys - before:
            presences.setdefault(key, []).append([ts, None])
        for key in before - keys:
            presences[key][-1][1] = ts
        before = keys
    present = set()
    for key, intervals in presences.items():
        if any(a <= tau and (b is None or tau < b) for a, b in stable_intervals(intervals, span)):
            present.add(key)
    return in_v, present


def reference_tsv(files: list[Path], tau: int, span: int = KG_SPAN, all_items: bool = False,
                  stability: bool = True) -> tuple[str, int]:
    """T_τ as ``emerge inspect statements`` prints it (sorted ``s\\tp\\to`` lines), and
    the number of revisions read: stdlib bz2 -> mwxml -> json.loads of every revision."""
    import mwxml

    v: set[str] = set()
    keys: set[tuple[str, str, str]] = set()
    revisions = 0
    for f in files:
        with bz2.open(f, "rb") as fh:
            for page in mwxml.Dump.from_file(fh):
                item = page.namespace == 0 and ITEM_TITLE.fullmatch(page.title or "")
                readable = []
                for rev in page:
                    revisions += 1
                    if rev.deleted.text or rev.text is None:
                        continue  # a revision-deleted text: the state before it goes on
                    try:
                        obj = json.loads(rev.text)
                    except ValueError:
                        continue  # unreadable: the state before it goes on
                    if item and isinstance(obj, dict):  # subjects are items (not properties)
                        readable.append((rev.timestamp.unix(), rev.id, *state_of(obj)))
                if readable:
                    in_v, present = reference_item(readable, tau, span, stability)
                    if in_v:
                        v.add(page.title)
                    keys.update((page.title, p, o) for p, o in present)
    triples = sorted(k for k in keys if all_items or (k[0] in v and k[2] in v))
    return "".join(f"{s}\t{p}\t{o}\n" for s, p, o in triples), revisions


def _unix(iso: str) -> int:
    stamp = datetime.fromisoformat(iso.replace("Z", "+00:00"))
    if stamp.tzinfo is None:
        stamp = stamp.replace(tzinfo=UTC)
    return timegm(stamp.utctimetuple())


# ----------------------------------------------------------------------------- ours
def _empty_catalog(staging: Path):
    from emerge_lib.catalog import Catalog
    from emerge_lib.core.config import load_config

    warehouse = Path(tempfile.mkdtemp(dir=staging))
    cfg = load_config(None, overrides={"warehouse": str(warehouse / "warehouse")})
    return warehouse, cfg, Catalog.for_config(cfg)


def ours_one_process(files: list[Path], staging: Path, date: str) -> int:
    from emerge_lib.ingest.wikidata.extract import WikidataFileExtractor

    revisions = 0
    for f in files:
        out = Path(tempfile.mkdtemp(dir=staging))
        revisions += WikidataFileExtractor(f, out, "wikidatawiki", f.name, date, {},
                                           threads=1).run().revisions
        shutil.rmtree(out)
    return revisions


POOL_BUSY: list[float] = []  # per ours_pool run: seconds the workers spent inside files
# per ours_pool run: (the files' suffix, CPU-s the workers spent inside files): the steady
# state of a long-running worker, without the pool's start-up
POOL_CPU: list[tuple[str, float]] = []


def ours_pool(files: list[Path], staging: Path, workers: int) -> int:
    """plan -> extract in a pool of ``workers`` (the ingest's own runner), no commit."""
    from emerge_lib.ingest.extract import extract, job_for
    from emerge_lib.ingest.plan import plan_ingest
    from emerge_lib.ingest.pool import run_workers

    warehouse, cfg, catalog = _empty_catalog(staging)
    try:
        plan = plan_ingest(cfg, catalog, "wikidata", files, None)
        jobs = [(job_for(plan, f, str(warehouse / "staging"), catalog),) for f in plan.pending]
        summaries = run_workers(extract, jobs, workers)
    finally:
        shutil.rmtree(warehouse, ignore_errors=True)
    failed = [s for s in summaries if s.error]
    if failed:
        raise RuntimeError(f"extraction failed: {failed[0].error}")
    POOL_BUSY.append(sum(s.seconds for s in summaries))
    POOL_CPU.append((files[0].suffix, sum(s.cpu_seconds for s in summaries)))
    return sum(s.revisions for s in summaries)


def ours_with_commit(files: list[Path], staging: Path, spark) -> int:
    """The ingest_wikidata stage as users run it: default configuration, Delta commit."""
    from emerge_lib.catalog import Catalog
    from emerge_lib.core.stage import StageContext
    from emerge_lib.pipeline.runner import run_stage

    warehouse, cfg, _ = _empty_catalog(staging)
    try:
        result = run_stage(StageContext(cfg, Catalog.for_config(cfg, spark), wikidata=files),
                           "ingest_wikidata")
        return int(result.metrics["revisions"])
    finally:
        shutil.rmtree(warehouse, ignore_errors=True)


# ----------------------------------------------------------------------------- the CLI
def run_logged(cmd: list[str], stdout: Path, stderr: Path) -> None:
    with open(stdout, "wb") as out, open(stderr, "wb") as err:
        proc = subprocess.run(cmd, stdout=out, stderr=err, cwd=REPO)
    if proc.returncode != 0:
        tail = stderr.read_text(errors="replace")[-3000:]
        raise RuntimeError(f"{cmd[0]} {' '.join(cmd[1:3])} exited {proc.returncode}:\n{tail}")


def cli_inspect(files: list[Path], at: str, out: Path, all_items: bool = False) -> None:
    cmd = [str(EMERGE), "inspect", "statements", "--wikidata", *map(str, files), "--at", at]
    run_logged(cmd + (["--all-items"] if all_items else []), out, out.with_suffix(".err"))


def naive_cli(files: list[Path], at: str, out: Path, all_items: bool = False) -> None:
    """The reference in a process of its own, measured like the CLI (from start-up on)."""
    cmd = [sys.executable, str(Path(__file__).resolve()), "--reference-tsv",
           "--at", at, *map(str, files)]
    run_logged(cmd + (["--all-items"] if all_items else []), out, out.with_suffix(".err"))


def cli_build(world: Path, wikidata: list[Path], wikipedia: list[Path], scratch: Path) -> None:
    run_dir = Path(tempfile.mkdtemp(dir=scratch, prefix="build-"))
    try:
        cmd = [str(EMERGE), "build", "-c", str(world / "config.yaml"),
               "--wikidata", *map(str, wikidata), "--wikipedia", *map(str, wikipedia),
               "--out", str(run_dir / "release"), "--warehouse", str(run_dir / "warehouse")]
        n = len(list(scratch.glob("build[0-9]*.err")))
        run_logged(cmd, scratch / f"build{n}.out", scratch / f"build{n}.err")
    finally:
        shutil.rmtree(run_dir, ignore_errors=True)


STAGE_LINE = re.compile(r"emerge_lib\.pipeline(?:\.runner)?: stage (\S+(?: \S+)?): .* in ([0-9.]+)s")
STAGE_CORES = re.compile(r"emerge_lib\.pipeline(?:\.runner)?: stage (ingest_\w+): .* in ([0-9.]+)s.*?, "
                         r"([0-9.]+) cores")


def ingest_cores(log: Path) -> tuple[float, float] | None:
    """(wall s, CPU s) of a CLI run's ingest stages together, from their log lines
    (``stage ingest_wikidata: ... in 16.2s, 25.0 MB/s, 1.85 cores``)."""
    if not log.is_file():
        return None
    found = [(float(m.group(2)), float(m.group(2)) * float(m.group(3)))
             for m in map(STAGE_CORES.search, log.read_text(errors="replace").splitlines()) if m]
    return (sum(w for w, _ in found), sum(c for _, c in found)) if found else None


def stage_seconds(log: Path) -> list[tuple[str, float]]:
    """(stage, seconds) from a CLI run's log lines (``stage NAME: ... in 12.3s``)."""
    if not log.is_file():
        return []
    return [(m.group(1), float(m.group(2)))
            for m in map(STAGE_LINE.search, log.read_text(errors="replace").splitlines()) if m]


def stage_breakdown(log: Path, wall: float) -> str:
    """Where a CLI run's wall time went: each stage, and the rest (start-up, engine,
    reading the result, exit)."""
    stages = stage_seconds(log)
    if not stages:
        return "no stage lines in its log"
    rest = wall - sum(sec for _, sec in stages)
    return ", ".join(f"{name} {sec:.1f}" for name, sec in stages) + f"; rest {rest:.1f} s"


def compare_tsv(ours: Path, reference: Path, what: str) -> bool:
    """Byte-identical? If not, print the triples each side has alone."""
    a, b = ours.read_bytes(), reference.read_bytes()
    same = a == b
    n_cli, n_ref = a.count(b"\n"), b.count(b"\n")
    print(f"{what}: identical output: {'yes' if same else 'no'} "
          f"({n_cli} triples from the CLI, {n_ref} from the reference)")
    if not same:
        la, lb = a.decode().splitlines(), b.decode().splitlines()
        only_cli, only_ref = sorted(set(la) - set(lb)), sorted(set(lb) - set(la))
        print(f"  only in the CLI ({len(only_cli)}): " + "; ".join(only_cli[:20]))
        print(f"  only in the reference ({len(only_ref)}): " + "; ".join(only_ref[:20]))
        if not only_cli and not only_ref:
            print(f"  same lines, different order or duplicates ({len(la)} vs {len(lb)} lines)")
    return same


# ----------------------------------------------------------------------------- report
def verdict(ok: bool) -> str:
    return "PASS" if ok else "FAIL"


def reference_main(argv: list[str]) -> None:
    """``--reference-tsv --at T [--all-items] [--no-stability] FILES...``: the naive T_τ."""
    ap = argparse.ArgumentParser(prog="ingest_wikidata.py --reference-tsv")
    ap.add_argument("--reference-tsv", action="store_true")
    ap.add_argument("--at", required=True)
    ap.add_argument("--all-items", action="store_true")
    ap.add_argument("--no-stability", action="store_true")
    ap.add_argument("files", nargs="+", type=Path)
    args = ap.parse_args(argv)
    text, revisions = reference_tsv(args.files, _unix(args.at), all_items=args.all_items,
                                    stability=not args.no_stability)
    sys.stdout.write(text)
    print(f"# {text.count(chr(10))} triples at {args.at} from {revisions} revisions",
          file=sys.stderr)


def main() -> None:
    if "--reference-tsv" in sys.argv[1:]:
        reference_main(sys.argv[1:])
        return
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--world", type=Path, default=Path("/tmp/bench-world-1000"))
    ap.add_argument("--dump-date", help="default: the newest in the world")
    ap.add_argument("--cores", type=int, default=cpu_count())
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--naive-mb", type=int, default=200,
                    help="naive and per-core runs use whole files until this much XML")
    ap.add_argument("--skip-commit", action="store_true", help="skip the Delta commit run")
    ap.add_argument("--commit-repeat", type=int, default=1,
                    help="runs of the (slow) ingest with Delta commit")
    ap.add_argument("--skip-cli", action="store_true",
                    help="skip the CLI section (inspect statements, its reference, build)")
    ap.add_argument("--skip-build", action="store_true", help="skip the emerge build run")
    ap.add_argument("--cli-repeat", type=int, default=1,
                    help="runs of each (slow) CLI measurement and of the reference")
    ap.add_argument("--at", help="τ for inspect statements (default: the world's first "
                                 "snapshot in config.yaml)")
    ap.add_argument("--check-all-items", action="store_true",
                    help="also compare `inspect statements --all-items` with the reference "
                         "(untimed: T without the V restriction, a stricter identity check)")
    args = ap.parse_args()
    # the extraction workers keep freed memory for reuse (ingest_common); every process
    # measured here does too, so the floor is not handicapped by page faults ours avoids
    kept = keep_freed_memory()

    ensure_world(args.world, args.cores)
    date, files, sizes = history_files(args.world, args.dump_date)
    cores = args.cores
    at = args.at or first_snapshot(args.world) or "2024-01-01T00:00:00Z"
    staging = Path(tempfile.mkdtemp(prefix="emerge-bench-ingest-"))
    try:
        xml_total = sum(sizes.get(f.name, 0) for f in files)
        if not xml_total or len(sizes) < len(files):
            xml_total = decompress_ibz2(files, cores)
            sizes = {}
        bz2_total = sum(f.stat().st_size for f in files)
        prefix: list[Path] = []
        for f in files:
            prefix.append(f)
            if sum(sizes.get(p.name, 0) for p in prefix) >= args.naive_mb * 1e6:
                break
        xml_prefix = (sum(sizes[p.name] for p in prefix) if sizes
                      else decompress_ibz2(prefix, cores))
        print(f"world {args.world}, wikidatawiki {date}: {len(files)} files, "
              f"{bz2_total / 1e6:.0f} MB bz2, {xml_total / 1e6:.0f} MB XML; "
              f"per-core prefix: {len(prefix)} files, {xml_prefix / 1e6:.0f} MB XML; "
              f"{cores} cores, repeat {args.repeat}; load average {os.getloadavg()[0]:.1f}; "
              f"allocator keeps freed memory in every process: {kept}", flush=True)

        # (key, figure, run, rounds, clock): every round runs each measurement once, in
        # this order, so a change in the machine's load hits the floor and ours alike
        revs: dict[str, int] = {}

        def counted(key: str, fn: Callable[[], int]) -> Callable[[], None]:
            return lambda: revs.__setitem__(key, fn())

        plan: list[tuple[str, Figure, Callable[[], object], int, Callable[[], float]]] = [
            ("floor_ibz2", Figure(f"floor indexed_bzip2 x{cores} threads", xml_total),
             lambda: decompress_ibz2(files, cores), args.repeat, cpu_seconds),
            ("floor_pool", Figure(f"floor indexed_bzip2 pool of {cores} x 1 thread", xml_total),
             lambda: decompress_ibz2_pool(files, cores), args.repeat, cpu_seconds),
        ]
        if shutil.which("lbzip2"):
            plan.append(("floor_lbzip2", Figure(f"floor lbzip2 -n{cores}", xml_total),
                         lambda: decompress_lbzip2(files, cores), args.repeat, cpu_seconds))
        plan += [
            ("ours_pool", Figure(f"ours plan+extract, run_workers pool of {cores}", xml_total),
             counted("ours_pool", lambda: ours_pool(files, staging, cores)), args.repeat, cpu_seconds),
            ("bz2_1core", Figure("indexed_bzip2 1 thread (prefix)", xml_prefix),
             lambda: decompress_ibz2(prefix, 1), args.repeat, cpu_seconds),
            ("naive", Figure("naive 1 process (prefix)", xml_prefix),
             counted("naive", lambda: naive(prefix)), args.repeat, cpu_seconds),
            ("ours_1", Figure("ours 1 process (prefix)", xml_prefix),
             counted("ours_1", lambda: ours_one_process(prefix, staging, date)), args.repeat,
             cpu_seconds),
        ]
        with contextlib.ExitStack() as stack:
            if not args.skip_commit:
                from emerge_lib.core.config import load_config
                from emerge_lib.core.engine import spark_session

                spark = stack.enter_context(spark_session("embedded"))
                workers = load_config(None).workers  # the default: dumps.workers 0
                plan.append((
                    "ours_commit",
                    Figure(f"ours run_stage ingest_wikidata + Delta, {workers} workers",
                           xml_total),
                    counted("ours_commit", lambda: ours_with_commit(files, staging, spark)),
                    args.commit_repeat, cpu_seconds,
                ))
            cli_out = staging / "cli"
            cli_out.mkdir()

            def numbered(stem: str) -> Path:  # inspect0.tsv, inspect1.tsv, ... one per run
                return cli_out / f"{stem}{len(list(cli_out.glob(f'{stem}[0-9]*.tsv')))}.tsv"

            if not args.skip_cli:
                plan += [
                    ("cli_inspect", Figure("CLI emerge inspect statements (defaults)", xml_total),
                     lambda: cli_inspect(files, at, numbered("inspect")), args.cli_repeat,
                     children_cpu),
                    ("cli_naive", Figure("naive reference T_τ, 1 process", xml_total),
                     lambda: naive_cli(files, at, numbered("naive")), args.cli_repeat,
                     children_cpu),
                ]
            if not args.skip_cli and not args.skip_build:
                wiki_dates = sorted(p.name for p in (args.world / "mirror" / "enwiki").iterdir())
                wdate, wiki_files, wsizes = history_files(
                    args.world, date if date in wiki_dates else None, "enwiki")
                build_xml = xml_total + sum(wsizes.get(f.name, 0) for f in wiki_files)
                plan.append((
                    "cli_build",
                    Figure(f"CLI emerge build (defaults; + enwiki {wdate})", build_xml),
                    lambda: cli_build(args.world, files, wiki_files, cli_out),
                    args.cli_repeat, children_cpu))
            for round_no in range(max(rounds for *_, rounds, _ in plan)):
                print(f"round {round_no + 1}, load average {os.getloadavg()[0]:.1f}", flush=True)
                for _, fig, fn, rounds, clock in plan:
                    if round_no < rounds:
                        measure(fig, 1, fn, clock)
        figs: dict[str, Figure] = {key: fig for key, fig, *_ in plan}
        for key, fig in figs.items():
            fig.revisions = revs.get(key)
        identical = all_identical = build_ingest = None
        breakdown: dict[str, str] = {}  # CLI runs: seconds per stage, from their logs
        if "cli_inspect" in figs:
            print()
            outputs = sorted(cli_out.glob("inspect*.tsv")) + sorted(cli_out.glob("naive*.tsv"))
            reference = cli_out / "naive0.tsv"
            identical = all(compare_tsv(o, reference, f"{o.name} vs {reference.name}")
                            for o in outputs if o != reference)
            if args.check_all_items:
                cli_inspect(files, at, cli_out / "inspect-all.tsv", all_items=True)
                naive_cli(files, at, cli_out / "naive-all.tsv", all_items=True)
                all_identical = compare_tsv(cli_out / "inspect-all.tsv",
                                            cli_out / "naive-all.tsv", "--all-items")
            print((cli_out / "inspect0.err").read_text().strip().splitlines()[-1])
            print((cli_out / "naive0.err").read_text().strip().splitlines()[-1])
            fig = figs["cli_inspect"]
            breakdown["inspect"] = stage_breakdown(cli_out / f"inspect{fig.best}.err", fig.wall)
        if "cli_build" in figs:
            fig = figs["cli_build"]
            breakdown["build"] = stage_breakdown(cli_out / f"build{fig.best}.err", fig.wall)
            build_ingest = ingest_cores(cli_out / f"build{fig.best}.err")
    finally:
        load_end = os.getloadavg()
        shutil.rmtree(staging, ignore_errors=True)

    floor = max((f for k, f in figs.items() if k.startswith("floor")), key=lambda f: f.mb_s)
    print()
    print(f"{'measurement':<52} {'XML MB':>7} {'best s':>7} {'CPU s':>7} {'CPU/wall':>8} "
          f"{'MB/s':>7} {'runs MB/s':>11} {'MB/CPU-s':>8} {'rev/s':>8}")
    for f in figs.values():
        rev_s = f"{f.revisions / f.wall:8.0f}" if f.revisions else f"{'':>8}"
        print(f"{f.name:<52} {f.xml_bytes / 1e6:7.0f} {f.wall:7.1f} {f.cpu:7.1f} "
              f"{f.cores_used:8.2f} {f.mb_s:7.1f} {f.spread():>11} {f.mb_cpu_s:8.1f} {rev_s}")
    print()
    print(f"load average at the end: {load_end[0]:.1f} {load_end[1]:.1f} {load_end[2]:.1f} "
          f"(1/5/15 min; {os.cpu_count()} CPUs)")
    print(f"floor = {floor.name}: {floor.mb_s:.1f} MB/s")
    pool = figs["ours_pool"]
    ratio = pool.mb_s / floor.mb_s
    print(f"ours end to end (extract, pool of {cores}) / floor = {ratio:.2f} "
          f"(target >= {FLOOR_TARGET}): {verdict(ratio >= FLOOR_TARGET)}")
    floors = [f for k, f in figs.items() if k.startswith("floor")]
    same_round = [
        (pool.xml_bytes / pool.walls[r]) / max(f.xml_bytes / f.walls[r] for f in floors)
        for r in range(min(len(f.walls) for f in [pool, *floors]))
    ]
    print("  per round, against that round's best floor: "
          + ", ".join(f"{x:.2f}" for x in same_round))
    print("  pool utilization (worker seconds inside files / (workers x wall)): "
          + ", ".join(f"{busy / (cores * wall):.2f}" for busy, wall in zip(POOL_BUSY, pool.walls,
                                                                        strict=False)))
    if "ours_commit" in figs:
        rc = figs["ours_commit"].mb_s / floor.mb_s
        print(f"ours with Delta commit / floor = {rc:.2f} (target >= {FLOOR_TARGET}): "
              f"{verdict(rc >= FLOOR_TARGET)}")
    per_core = figs["ours_1"].mb_s / figs["naive"].mb_s
    print(f"ours per core / naive per core = {per_core:.2f} (target >= {NAIVE_TARGET}): "
          f"{verdict(per_core >= NAIVE_TARGET)}")
    per_core_cpu = figs["ours_1"].mb_cpu_s / figs["naive"].mb_cpu_s
    print(f"  (same in MB per CPU-second, robust to a shared machine: {per_core_cpu:.2f})")
    print(f"naive / floor = {figs['naive'].mb_s / floor.mb_s:.2f}; ours per core = "
          f"{figs['ours_1'].mb_cpu_s:.1f} MB/CPU-s (the rate the cluster projection uses)")
    if "cli_inspect" in figs:
        cli, ref = figs["cli_inspect"], figs["cli_naive"]
        big = xml_total >= CLI_MIN_XML
        size_note = "" if big else (f" (ingest of {xml_total / 1e9:.2f} GB < "
                                    f"{CLI_MIN_XML / 1e9:.0f} GB: not the stated setting)")
        print(f"CLI at τ = {at}, {xml_total / 1e6:.0f} MB of XML{size_note}:")
        print(f"  inspect statements: {cli.wall:.1f} s wall, {cli.cpu:.1f} s CPU, "
              f"CPU/wall {cli.cores_used:.2f}, {cli.mb_s:.1f} MB/s")
        print(f"    stages (s): {breakdown.get('inspect', '-')}")
        print(f"  naive reference:    {ref.wall:.1f} s wall, {ref.cpu:.1f} s CPU, "
              f"CPU/wall {ref.cores_used:.2f}, {ref.mb_s:.1f} MB/s")
        print(f"  identical output: {'yes' if identical else 'no'}"
              + ("" if all_identical is None
                 else f"; with --all-items: {'yes' if all_identical else 'no'}"))
        speedup = ref.wall / cli.wall
        print(f"inspect statements / naive reference = {speedup:.2f}x (target >= "
              f"{CLI_NAIVE_TARGET}, identical output): "
              f"{verdict(speedup >= CLI_NAIVE_TARGET and bool(identical))}")
        print(f"  (in CPU seconds: {ref.cpu / cli.cpu:.2f}x)")
        print(f"inspect statements CPU/wall = {cli.cores_used:.2f} (target >= "
              f"{CLI_CORES_TARGET} on {cores} cores): "
              f"{verdict(cli.cores_used >= CLI_CORES_TARGET)}{size_note}")
        if "cli_build" in figs:
            b = figs["cli_build"]
            if build_ingest:
                wall, cpu = build_ingest
                print(f"build's ingest CPU/wall = {cpu / wall:.2f} ({wall:.1f} s wall, "
                      f"{cpu:.1f} s CPU, {b.xml_bytes / 1e6:.0f} MB of XML; target >= "
                      f"{CLI_CORES_TARGET}): {verdict(cpu / wall >= CLI_CORES_TARGET)}{size_note}")
            else:
                print("build's ingest CPU/wall: no ingest stage line with cores in its log: FAIL")
            print(f"  whole build CPU/wall = {b.cores_used:.2f} ({b.wall:.1f} s wall, "
                  f"{b.cpu:.1f} s CPU; the per-snapshot stages after the ingest are mostly "
                  f"one engine query or one Python loop at a time; no target)")
            print(f"  stages (s): {breakdown.get('build', '-')}")


if __name__ == "__main__":
    main()
