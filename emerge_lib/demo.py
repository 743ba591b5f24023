"""The demo job: the whole pipeline on a generated world, on the embedded defaults.

Generates a sample world (a Wikimedia-style dump mirror with planted truth), builds the
dataset from its mirror on the embedded Sail engine into a local Delta warehouse, writes
the EMERGE release, and checks the instances against the world's truth.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

from emerge_lib.build import build_dataset
from emerge_lib.config import load_config
from emerge_lib.dumps.locate import history_files
from emerge_lib.engine import session_for
from emerge_lib.sample import SampleSpec, generate_world
from emerge_lib.sample.compare import built, planted
from emerge_lib.tables import Catalog

log = logging.getLogger(__name__)


def run_demo(out: str | Path, seed: int = 1) -> int:
    out = Path(out).resolve()
    world = out / "world"
    started = time.monotonic()
    if not (world / "config.yaml").exists():
        print(f"generating a sample world (seed {seed}) in {world} ...")
        generate_world(world, SampleSpec(seed=seed, items=600, articles=200, revisions=4))
    cfg = load_config(world / "config.yaml")
    wikidata = [p for p, _ in history_files(cfg, cfg.dumps.wikidata)]
    wikipedia = [p for p, _ in history_files(cfg, cfg.dumps.wikipedia)]
    release = out / "release"
    with session_for(cfg) as spark:
        catalog = Catalog(cfg.warehouse, spark)
        report = build_dataset(cfg, catalog, wikidata, wikipedia, out=release, workers=2,
                               progress=lambda name: print(f"  stage: {name}", flush=True))
        got, _ = built(catalog)
    want = planted(world)
    for name, seconds, _ in report.stages:
        print(f"  {name:<36} {seconds:6.1f}s")
    print(f"instances: {len(got)} built, {len(want)} planted, {len(want - got)} missing, "
          f"{len(got - want)} unexpected")
    print(f"release:   {release}")
    print(f"warehouse: {cfg.warehouse}  (emerge tables --warehouse {cfg.warehouse})")
    print(f"demo finished in {time.monotonic() - started:.0f}s")
    return 0 if got == want else 1
