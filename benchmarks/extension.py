"""A quarter's extension from Wikimedia's daily increments against the same quarter from
the next full dump, on a generated world at two sizes whose histories differ 2x and whose
quarters hold the same revisions (issue 44, "Measured").

Each size is one sample world with two full dumps, D0 and D1 = D0 + 90 days, and the
daily adds/changes dumps of the days between (``emerge sample --increments``). Its
history is sized apart from its quarter by ``--revisions`` (revisions per filler page)
and ``--recent-share`` (the share of a page's later edits in the last 200 days before
D1): the small world has ``--revisions R --recent-share 0.5`` (the generator's default),
the large one ``--revisions 2R`` with a share chosen so that D1 - D0 holds about the same
revisions (0.12 for R = 4 on 4,000 items and 1,000 articles: at 0.13 the quarter held
4,197 revisions against 3,929, Wikidata +13 % and enwiki -21 %, the history 2.2x; the
share that matches depends on the planted pages' weight: 0.17 at 400 items). Through the
``emerge`` command as a user runs it (subprocesses, CPU from
``getrusage(RUSAGE_CHILDREN)``, each stage's wall and CPU from its log line,
``_harness.watch_emerge``):

* (a) increments: ``emerge ingest`` of D0's full dumps into a fresh warehouse (the base,
  timed but not part of the quarter), then ``emerge ingest --incr D0:D1-1``, the quarter;
* (b) full dump: ``emerge ingest`` of D1's full dumps into a fresh warehouse, as a
  quarter is extended without increments (each history dump holds the whole history).

Then the quarter's downstream, as a user runs it (``emerge build``; skipped with
``--ingest-only``): after the base ingest, the base warehouse builds and releases the
snapshots whose windows the older dump covers (``emerge build`` of the world's
configuration with those snapshots and the older dump date, ``--out`` a release folder:
the release the quarter extends; timed, not part of the quarter). The quarter then ends,
in (a), with ``emerge build`` of the configuration with every snapshot (the new one
added) into the same ``--out``, so the release may carry the old snapshots' files over by
hash (``release.carry_unchanged``; measured 2026-12-05: none, the quarter's merge changed
the older snapshot's rows: docs/performance.md), and then runs that build again with
nothing changed (every snapshot's files carried); in (b), with the same build on the newer dump date,
into a copy of the base release (its carry sidecar ``.NAME.carry.json`` copied beside
it). Per stage: wall and CPU from the stage's log line; for the release, the files
written and carried (the stage's ``files``, ``carried_files``, ``carried_mb``); at the
end, whether the two releases are the same bytes (``release.provenance: history``, the
default: the manifest, card and croissant.json name the history held, not the files
read), as tests/e2e/pipeline/test_incr.py asserts.

Bytes read from dumps: the compressed files each run opens (the full dumps' bz2 history
files; the days' ``pages-meta-hist-incr.xml.bz2``) and their XML. The ingest and
stability (incremental after ``--incr``: only the touched keys) are in the ingest runs'
stages; the per-snapshot stages and the release in the builds'. The target: (a)'s cost
grows <= 1.1x while the history doubles; (a) beside (b) at each size.

    .venv/bin/python benchmarks/extension.py [--worlds /tmp/bench-extension]
        [--items 4000] [--articles 1000] [--revisions 4] [--recent-share 0.12]
        [--sizes small,large] [--workers N] [--ingest-only]

A missing world is generated first (``emerge sample … --increments --logging --formats
bz2 --compress-level 9``; one to three minutes each on 2 cores): the logging dumps carry
the moves and deletions the increments lack, which ``--incr`` reconciles.
"""

from __future__ import annotations

import argparse
import bz2
import hashlib
import json
import os
import pickle
import re
import shutil
import sys
import tempfile
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

import yaml
from _harness import REPO, Watched, cpu_count, ensure_world, loglog_slope, watch_emerge

sys.path.insert(0, str(REPO / "tests" / "kits"))  # the release comparison the tests use
from buildkit import release_files  # noqa: E402

GROWTH_TARGET = 1.1  # issue 44: the quarter's cost grows <= 1.1x while the history doubles
WIKIS = {"wikidata": "wikidatawiki", "wikipedia": "enwiki"}
_CARRIED = re.compile(r"\(carried [\d,]+ files \(([\d.]+) MB\)")
_METRIC = re.compile(r", ([\d,.]+) (files|carried_files|carried_mb)\b")


@dataclass
class Dumps:
    """What one run reads: its files, their compressed and XML bytes, their revisions."""

    files: dict[str, list[Path]]  # kind -> paths
    bz2_bytes: int = 0
    xml_bytes: int = 0
    revisions: int = 0


@dataclass
class Size:
    """One world: its dumps and the three runs."""

    name: str
    world: Path
    d0: str = ""
    d1: str = ""
    base: Dumps = field(default_factory=lambda: Dumps({}))
    quarter: Dumps = field(default_factory=lambda: Dumps({}))
    full: Dumps = field(default_factory=lambda: Dumps({}))
    days: int = 0
    runs: dict[str, Watched] = field(default_factory=dict)
    snapshots: tuple[list[str], list[str]] = ([], [])  # the base's, the quarter's new ones
    release: dict[str, dict[str, float]] = field(default_factory=dict)  # build -> metrics
    differ: list[str] | None = None  # files the two releases differ in (None: not compared)
    rebuild_differ: list[str] | None = None  # files (a)'s rebuild changed (None: not run)


def world_args(revisions: int, share: float, items: int, articles: int, jobs: int) -> list[str]:
    return ["--items", str(items), "--articles", str(articles), "--revisions", str(revisions),
            "--recent-share", str(share), "--increments", "--logging", "--formats", "bz2",
            "--compress-level", "9", "--jobs", str(jobs), "--quiet"]


def full_dump(world: Path, about: dict, date: str) -> Dumps:
    """A full dump date's bz2 history files of both wikis (sizes from world.json)."""
    out = Dumps({})
    for kind, wiki in WIKIS.items():
        entries = [e for e in about["dumps"]["files"][f"{wiki}/{date}"] if e["format"] == "bz2"]
        out.files[kind] = sorted(world / "mirror" / wiki / date / e["name"] for e in entries)
        out.bz2_bytes += sum(e["size"] for e in entries)
        out.xml_bytes += sum(e["xml_bytes"] for e in entries)
        out.revisions += sum(e["revisions"] for e in entries)
    return out


def increments(world: Path, first: str, last: str) -> tuple[Dumps, int]:
    """The days' pages-meta-hist-incr files of both wikis and their bytes (XML: read)."""
    out = Dumps({})
    days = 0
    for kind, wiki in WIKIS.items():
        root = world / "mirror" / "other" / "incr" / wiki
        folders = [d for d in sorted(root.iterdir()) if first <= d.name <= last]
        days = len(folders)
        out.files[kind] = [d / f"{wiki}-{d.name}-pages-meta-hist-incr.xml.bz2" for d in folders]
        for f in out.files[kind]:
            out.bz2_bytes += f.stat().st_size
            data = bz2.decompress(f.read_bytes())
            out.xml_bytes += len(data)
            out.revisions += data.count(b"<revision>")
    return out, days


def prepare(size: Size) -> None:
    about = json.loads((size.world / "world.json").read_text())
    size.d0, size.d1 = about["dumps"]["dates"][0], about["dumps"]["dates"][-1]
    size.base, size.full = full_dump(size.world, about, size.d0), full_dump(size.world, about,
                                                                           size.d1)
    last = (datetime.strptime(size.d1, "%Y%m%d").replace(tzinfo=UTC)
            - timedelta(days=1)).strftime("%Y%m%d")
    size.quarter, size.days = increments(size.world, size.d0, last)
    size.snapshots = split_snapshots(size.world, about)


def _iso(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def split_snapshots(world: Path, about: dict) -> tuple[list[str], list[str]]:
    """The configured snapshots whose last window ends by the older dump's cutoff (the base
    release's) and the rest (the quarter's)."""
    snaps = yaml.safe_load((world / "config.yaml").read_text())["snapshots"]
    span = timedelta(days=snaps["windows"] * snaps["window_days"])
    cutoff = _iso(about["dumps"]["cutoffs"][0])
    old = [t for t in snaps["timestamps"] if _iso(t) + span <= cutoff]
    return old, [t for t in snaps["timestamps"] if t not in old]


def build_config(world: Path, name: str, snapshots: list[str], date: str) -> Path:
    """The world's configuration with these snapshots and one dump date of both wikis, in
    the world's folder (its relative paths are resolved against it)."""
    cfg = yaml.safe_load((world / "config.yaml").read_text())
    cfg["snapshots"]["timestamps"] = snapshots
    for kind in WIKIS:
        cfg["dumps"][kind]["dates"] = [date]
    out = world / f"bench-extension-{name}.yaml"
    out.write_text(yaml.safe_dump(cfg, sort_keys=False))
    return out


def release_metrics(line: str) -> dict[str, float]:
    """The release stage line's files, carried_files and carried_mb (the line rounds the
    MB past 10; its note gives them to 0.1)."""
    out = {k: float(v.replace(",", "")) for v, k in _METRIC.findall(line)}
    note = _CARRIED.search(line)
    if note:
        out["carried_mb"] = float(note[1])
    return out


def release_digests(folder: Path) -> dict[str, str]:
    """A release's files by path, their sha256, with the validation's run times taken out
    by the tests' own rule (tests/kits/buildkit.py ``release_files``): what two builds of
    the same rows must have equal."""
    return {name: hashlib.sha256(data).hexdigest()
            for name, data in release_files(folder).items()}


def compare_releases(a: Path, b: Path) -> list[str]:
    """The files (relative paths) in which two releases differ, or that one lacks."""
    got, want = release_digests(a), release_digests(b)
    return sorted(n for n in set(got) | set(want) if got.get(n) != want.get(n))


def copy_release(src: Path, dst: Path) -> None:
    """A release folder and its carry sidecar (``.NAME.carry.json``), under a new name."""
    shutil.copytree(src, dst)
    sidecar = src.with_name(f".{src.name}.carry.json")
    if sidecar.exists():
        shutil.copy2(sidecar, dst.with_name(f".{dst.name}.carry.json"))


def run(size: Size, scratch: Path, workers: int | None, downstream: bool = True) -> None:
    """The runs of one size: the three ``emerge ingest`` runs, each into a fresh or its
    warehouse, and (``downstream``) the three ``emerge build`` runs after them."""
    config = str(size.world / "config.yaml")
    extra = ["--workers", str(workers)] if workers else []

    def emerge_run(key: str, command: str, warehouse: Path, *args: str) -> None:
        print(f"[{size.name}] {key}: emerge {command} {' '.join(args)[:100]}…", flush=True)
        lines: list[str] = []

        def echo(line: str) -> None:
            lines.append(line)
            print("   ", line[-150:], flush=True)

        watched = watch_emerge([command, "--warehouse", str(warehouse), *extra, *args],
                               echo=echo)
        if watched.returncode != 0:
            raise SystemExit(f"{key} failed ({watched.returncode}):\n{watched.log_tail[-3000:]}")
        size.runs[key] = watched
        released = [line for line in lines if " stage release:" in line]
        if released:
            size.release[key] = release_metrics(released[-1])
        print(f"[{size.name}] {key}: {watched.wall:.1f} s wall, {watched.cpu:.1f} s CPU",
              flush=True)

    def paths(d: Dumps) -> list[str]:
        return ["--wikidata", *map(str, d.files["wikidata"]),
                "--wikipedia", *map(str, d.files["wikipedia"])]

    old, new = size.snapshots
    if downstream and not (old and new):
        raise SystemExit(f"{size.world}: its snapshots do not split around the older dump "
                         f"{size.d0} (base {old}, quarter {new}): no quarter to build")
    last = size.quarter.files["wikidata"][-1].parent.name
    emerge_run("base", "ingest", scratch / "a", "-c", config, *paths(size.base))
    if downstream:
        base = build_config(size.world, "base", old, size.d0)
        emerge_run("base build", "build", scratch / "a", "-c", str(base),
                   "--out", str(scratch / "release-a"))
        copy_release(scratch / "release-a", scratch / "release-b")
    emerge_run("increments", "ingest", scratch / "a", "-c", config, "--incr",
               f"{size.d0}:{last}")
    if downstream:
        incr = build_config(size.world, "increments", [*old, *new], size.d0)
        emerge_run("increments build", "build", scratch / "a", "-c", str(incr),
                   "--out", str(scratch / "release-a"))
        # the same build again, nothing changed: every snapshot's stages run again and
        # write the same rows, and the release carries their files (release/carry.py)
        before = release_digests(scratch / "release-a")
        emerge_run("increments rebuild", "build", scratch / "a", "-c", str(incr),
                   "--out", str(scratch / "release-a"))
        after = release_digests(scratch / "release-a")
        size.rebuild_differ = sorted(n for n in set(before) | set(after)
                                     if before.get(n) != after.get(n))
    emerge_run("full", "ingest", scratch / "b", "-c", config, *paths(size.full))
    if downstream:
        full = build_config(size.world, "full", [*old, *new], size.d1)
        emerge_run("full build", "build", scratch / "b", "-c", str(full),
                   "--out", str(scratch / "release-b"))
        size.differ = compare_releases(scratch / "release-a", scratch / "release-b")


def stage_table(size: Size) -> None:
    print(f"\n{size.name}: {size.world}; D0 {size.d0} -> D1 {size.d1}, {size.days} days of "
          f"increments; history at D0 {size.base.revisions:,} revisions "
          f"({size.base.xml_bytes / 1e6:.1f} MB XML), quarter {size.quarter.revisions:,}")
    print(f"  {'run / stage':<34} {'wall s':>8} {'CPU s':>8} {'dump MB bz2':>12} "
          f"{'XML MB':>8} {'revisions':>10}")
    reads = {"base": size.base, "increments": size.quarter, "full": size.full}
    release = getattr(size, "release", {})
    for key, watched in size.runs.items():
        d = reads.get(key)
        read = (f" {d.bz2_bytes / 1e6:12.2f} {d.xml_bytes / 1e6:8.1f} {d.revisions:10,}"
                if d else "")
        print(f"  {key + ' (whole command)':<34} {watched.wall:8.1f} {watched.cpu:8.1f}{read}")
        for s in watched.stages:
            carried = ""
            if s.name == "release" and key in release:
                m = release[key]
                carried = (f"   files {m.get('files', 0):,.0f}: carried "
                           f"{m.get('carried_files', 0):,.0f} ({m.get('carried_mb', 0):g} MB)")
            print(f"    {s.key:<32} {s.seconds:8.1f} {s.cpu:8.1f}{carried}")
        rest_wall, rest_cpu = watched.rest()
        print(f"    {'(start-up, engine, exit)':<32} {rest_wall:8.1f} {rest_cpu:8.1f}")


def downstream_table(sizes: list[Size]) -> None:
    """Each path's quarter end to end: its ingest, its build (the snapshot stages and the
    release), the release's files written and carried, and the two releases compared."""
    built = [s for s in sizes if "increments build" in s.runs and "full build" in s.runs]
    if not built:
        return
    print("\nthe quarter end to end: ingest, then emerge build of every snapshot "
          "(wall / CPU s; release files written + carried)")
    print(f"  {'size / path':<22} {'ingest':>13} {'build':>13} {'old snapshots':>15} "
          f"{'new snapshot':>15} {'release':>15} {'quarter':>13} {'written':>8} "
          f"{'carried':>8} {'carried MB':>10}")
    for s in built:
        for path, ingest, build in (("(a) increments", "increments", "increments build"),
                                    ("(b) full dump", "full", "full build")):
            i, b = s.runs[ingest], s.runs[build]
            parts = {"old": [st for st in b.stages if st.snapshot in s.snapshots[0]],
                     "new": [st for st in b.stages if st.snapshot in s.snapshots[1]],
                     "release": [st for st in b.stages if st.name == "release"]}
            cols = " ".join(f"{sum(st.seconds for st in v):7.1f}/{sum(st.cpu for st in v):7.1f}"
                            for v in parts.values())
            m = s.release.get(build, {})
            files, carried = m.get("files", 0), m.get("carried_files", 0)
            print(f"  {s.name + ' ' + path:<22} {i.wall:6.1f}/{i.cpu:6.1f} "
                  f"{b.wall:6.1f}/{b.cpu:6.1f} {cols} "
                  f"{i.wall + b.wall:6.1f}/{i.cpu + b.cpu:6.1f} {files - carried:8,.0f} "
                  f"{carried:8,.0f} {m.get('carried_mb', 0):10g}")
        again = s.runs.get("increments rebuild")
        if again is not None:
            m = s.release.get("increments rebuild", {})
            files, carried = m.get("files", 0), m.get("carried_files", 0)
            changed = getattr(s, "rebuild_differ", None)
            print(f"  {s.name + ' (a) rebuilt':<22} {'':>13} {again.wall:6.1f}/{again.cpu:6.1f} "
                  f"{'':>47} {'':>13} {files - carried:8,.0f} {carried:8,.0f} "
                  f"{m.get('carried_mb', 0):10g}   (nothing changed; files changed: "
                  f"{', '.join(changed or []) or 'none'})")
        base = s.runs.get("base build")
        if base is not None:
            m = s.release.get("base build", {})
            print(f"  {s.name + ' base build':<22} {'':>13} {base.wall:6.1f}/{base.cpu:6.1f} "
                  f"{'':>47} {'':>13} {m.get('files', 0):8,.0f}   (the release the quarter "
                  f"extends: {', '.join(s.snapshots[0])})")
        if s.differ is not None:
            extra = sorted(s.differ)
            verdict = ("are the same bytes" if not extra else
                       f"differ in {len(extra)} files: "
                       f"{', '.join(extra[:8])}{' …' if len(extra) > 8 else ''}")
            print(f"  {s.name}: the two releases {verdict}")


def report(sizes: list[Size]) -> None:
    for size in sizes:
        stage_table(size)
    downstream_table(sizes)
    print("\nthe quarter: (a) increments beside (b) the next full dump")
    print(f"  {'size':<8} {'history revs':>12} {'quarter revs':>12} {'(a) wall':>9} "
          f"{'(a) CPU':>8} {'(a) MB':>8} {'(b) wall':>9} {'(b) CPU':>8} {'(b) MB':>8} "
          f"{'b/a CPU':>8}")
    for s in sizes:
        a, b = s.runs["increments"], s.runs["full"]
        print(f"  {s.name:<8} {s.base.revisions:12,} {s.quarter.revisions:12,} {a.wall:9.1f} "
              f"{a.cpu:8.1f} {s.quarter.bz2_bytes / 1e6:8.2f} {b.wall:9.1f} {b.cpu:8.1f} "
              f"{s.full.bz2_bytes / 1e6:8.2f} {b.cpu / a.cpu:8.2f}")
    if len(sizes) < 2:
        return
    small, large = sizes[0], sizes[-1]
    hist = large.base.revisions / small.base.revisions
    quarter = large.quarter.revisions / small.quarter.revisions
    quarter_xml = large.quarter.xml_bytes / small.quarter.xml_bytes
    print(f"\nfrom {small.name} to {large.name}: history x{hist:.2f} "
          f"({large.base.xml_bytes / small.base.xml_bytes:.2f}x its XML), quarter "
          f"x{quarter:.2f} ({quarter_xml:.2f}x its XML)")
    for key, label in (("increments", "(a) increments"), ("full", "(b) full dump")):
        lo, hi = small.runs[key], large.runs[key]
        wall, cpu = hi.wall / lo.wall, hi.cpu / lo.cpu
        xs = [s.base.revisions for s in (small, large)]
        slope = loglog_slope(xs, [s.runs[key].cpu for s in (small, large)])
        verdict = ""
        if key == "increments":
            read = large.quarter.bz2_bytes / small.quarter.bz2_bytes
            verdict = (f", dump bytes read x{read:.2f} (target: CPU and bytes <= "
                       f"{GROWTH_TARGET}x while the history doubles; wall is printed, not "
                       f"judged, on a shared machine: "
                       f"{'PASS' if cpu <= GROWTH_TARGET and read <= GROWTH_TARGET else 'FAIL'})")
        print(f"  {label}: wall x{wall:.2f}, CPU x{cpu:.2f}, "
              f"log-log slope of CPU on history {slope:.2f}{verdict}" if slope is not None
              else f"  {label}: wall x{wall:.2f}, CPU x{cpu:.2f}{verdict}")
        for name in sorted({st.key for st in hi.stages} & {st.key for st in lo.stages}):
            c_lo = sum(st.cpu for st in lo.stages if st.key == name)
            c_hi = sum(st.cpu for st in hi.stages if st.key == name)
            w_lo = sum(st.seconds for st in lo.stages if st.key == name)
            w_hi = sum(st.seconds for st in hi.stages if st.key == name)
            print(f"    {name:<28} wall {w_lo:7.1f} -> {w_hi:7.1f} s, CPU {c_lo:7.1f} -> "
                  f"{c_hi:7.1f} s")
    a_cpu = large.runs["increments"].cpu / small.runs["increments"].cpu
    print(f"  (a) CPU per MB of the quarter's XML: x{a_cpu / quarter_xml:.2f} "
          "(the growth the quarter's own size does not explain)")
    print("  per day of increments, (a) at each size: "
          + ", ".join(f"{s.name} {s.runs['increments'].wall / s.days:.2f} s wall, "
                      f"{s.runs['increments'].cpu / s.days:.2f} s CPU" for s in sizes))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--worlds", type=Path, default=Path("/tmp/bench-extension"),
                    help="where the two worlds are (generated when missing)")
    ap.add_argument("--items", type=int, default=4000)
    ap.add_argument("--articles", type=int, default=1000)
    ap.add_argument("--revisions", type=int, default=4,
                    help="the small world's; the large one has twice as many")
    ap.add_argument("--recent-share", type=float, default=0.12,
                    help="the large world's share of later edits in the last 200 days "
                         "(the small one has the default 0.5)")
    ap.add_argument("--sizes", default="small,large", help="which of the two to run")
    ap.add_argument("--workers", type=int, help="extraction processes (default: one per core)")
    ap.add_argument("--ingest-only", action="store_true",
                    help="the ingest runs only, not the builds and releases after them")
    ap.add_argument("--keep", action="store_true",
                    help="keep the warehouses and releases (printed)")
    ap.add_argument("--replay", type=Path, help="print the report of a saved run "
                                                "(WORLDS/last-run.pickle) and stop")
    args = ap.parse_args()
    if args.replay:
        report(pickle.loads(args.replay.read_bytes()))
        return

    shapes = {"small": (args.revisions, 0.5), "large": (2 * args.revisions, args.recent_share)}
    names = [n.strip() for n in args.sizes.split(",") if n.strip()]
    unknown = sorted(set(names) - set(shapes))
    if unknown:
        raise SystemExit(f"--sizes: no size named {', '.join(unknown)} (small, large)")
    sizes: list[Size] = []
    for name in names:
        revisions, share = shapes[name]
        world = (args.worlds
                 / f"{name}-i{args.items}-a{args.articles}-r{revisions}-s{share}-logging")
        ensure_world(world, world_args(revisions, share, args.items, args.articles,
                                       cpu_count()))
        size = Size(name, world)
        prepare(size)
        sizes.append(size)
    print(f"{cpu_count()} cores, load average {os.getloadavg()[0]:.1f}", flush=True)
    for size in sizes:
        scratch = Path(tempfile.mkdtemp(prefix=f"emerge-bench-extension-{size.name}-"))
        try:
            run(size, scratch, args.workers, downstream=not args.ingest_only)
        finally:
            if args.keep:
                print(f"warehouses kept in {scratch}")
            else:
                shutil.rmtree(scratch, ignore_errors=True)
    print(f"\nload average at the end: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    saved = args.worlds / "last-run.pickle"
    saved.write_bytes(pickle.dumps(sizes))
    print(f"measurements saved in {saved} (--replay {saved} prints the report again)")
    report(sizes)


if __name__ == "__main__":
    main()
