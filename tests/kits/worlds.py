"""Generated worlds for the end-to-end tests, each made once and shared, as a seeded
catalog is in Kedro's pipeline tests:

- ``world(spec)``: the sample world of a spec (a dump mirror with planted truth), cached
  on disk under pytest's cache folder, keyed by the spec and a hash of the generator's
  code (``emerge_lib/sample``, and the 7z writer it uses): a second run, or a second test
  asking for the same spec, reads it as it is;
- ``ingested(spec)``: that world's dumps ingested (both wikis, every dump date) and the
  stability stage run, once; cached on disk too, keyed also by a hash of the whole
  library (any change to emerge_lib ingests again);
- ``built(spec, settings)``: a copy of the ingested warehouse with the later stages run
  under ``settings`` (post-ingest settings: a variant re-runs only what follows the
  ingest), and its release; one per (spec, settings), cached on disk like the ingested
  warehouse (so every pytest-xdist worker reads the same one). Validation is off unless
  the settings turn it on.

Everything these return is shared: a test that writes takes ``copy(...)`` first.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import shutil
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from emerge_lib.catalog import Catalog
from emerge_lib.core.config import Config, load_config
from emerge_lib.sample import SampleSpec, generate_world

REPO = Path(__file__).resolve().parents[2]
LIBRARY = REPO / "emerge_lib"

#: the worlds the end-to-end tests share (a test that needs its own says why)
SEED1 = SampleSpec(seed=1, items=260, articles=110, revisions=3)
SMALL = SampleSpec(seed=3, items=120, articles=60, revisions=2)
#: one snapshot, 65 passages: curation asks few requests (every planted case, little filler)
TINY = SampleSpec(seed=3, items=30, articles=8, revisions=1, snapshots=("2024-01-01T00:00:00Z",))
#: the same little filler and both default snapshots
TINY2 = SampleSpec(seed=3, items=30, articles=8, revisions=1)
#: TINY with one dump date (the first that covers its snapshot): the smallest world that
#: still exercises every stage, for the Spark 4 cluster, where every Delta operation costs
#: a second or more (a snapshot run of the Airflow DAG ingests that same dump)
TINY1 = SampleSpec(seed=3, items=30, articles=8, revisions=1,
                   snapshots=("2024-01-01T00:00:00Z",), dump_dates=("20240220",))

#: no dump dates: a build from the warehouse alone (nothing to ingest)
NO_INGEST = {"dumps": {"wikidata": {"wiki": "wikidatawiki", "dates": []},
                       "wikipedia": {"wiki": "enwiki", "dates": []}}}


def _code_hash(*roots: Path) -> str:
    digest = hashlib.sha256()
    for root in roots:
        files = [root] if root.is_file() else sorted(
            p for p in root.rglob("*") if p.suffix in (".py", ".c") and p.is_file())
        for p in files:
            digest.update(p.relative_to(REPO).as_posix().encode())
            digest.update(p.read_bytes())
    return digest.hexdigest()[:16]


@contextmanager
def _locked(folder: Path) -> Iterator[None]:
    """One maker of a cached folder at a time: the suite runs in several processes
    (pytest-xdist), and two of them may ask for the same world at once."""
    folder.parent.mkdir(parents=True, exist_ok=True)
    with open(folder.with_name(folder.name + ".lock"), "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _key(*parts: Any) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()[:16]


@dataclass
class Built:
    """One built variant: its world, its (shared, read-only) warehouse and release."""

    world: Path
    warehouse: Path
    release: Path
    settings: dict[str, Any]

    def catalog(self, spark: Any = None) -> Catalog:
        return Catalog(self.warehouse, spark)

    def config(self, **overrides: Any) -> Config:
        return load_config(self.world / "config.yaml",
                           overrides={**NO_INGEST, **self.settings, **overrides,
                                      "warehouse": str(self.warehouse)})


class Worlds:
    """The session's worlds (see the module docstring)."""

    def __init__(self, cache: Path, scratch: Path, spark: Any) -> None:
        self.cache, self.scratch, self.spark = cache, scratch, spark
        self.generator = _code_hash(LIBRARY / "sample", LIBRARY / "dumps" / "sevenzip.py")
        self.library = _code_hash(LIBRARY)
        self._built: dict[str, Built] = {}

    def world(self, spec: SampleSpec) -> Path:
        folder = self.cache / f"world-{_key(asdict(spec), self.generator)}"
        with _locked(folder):
            self._generate(spec, folder)
        return folder

    def _generate(self, spec: SampleSpec, folder: Path) -> None:
        if not (folder / "config.yaml").is_file():
            shutil.rmtree(folder, ignore_errors=True)
            partial = folder.with_name(folder.name + ".partial")
            shutil.rmtree(partial, ignore_errors=True)
            generate_world(partial, spec)  # its config names the mirror relative to itself
            partial.rename(folder)

    def ingested(self, spec: SampleSpec) -> Path:
        """A warehouse holding the world's dumps, ingested, with stable statements."""
        world = self.world(spec)
        folder = self.cache / f"ingested-{_key(asdict(spec), self.generator, self.library)}"
        with _locked(folder):
            self._ingest(world, folder)
        return folder

    def _ingest(self, world: Path, folder: Path) -> None:
        if not (folder / "_complete").is_file():
            from emerge_lib.pipeline.context import open_context
            from emerge_lib.pipeline.runner import run_stage

            shutil.rmtree(folder, ignore_errors=True)
            cfg = load_config(world / "config.yaml", overrides={"warehouse": str(folder)})
            with open_context(cfg, spark=self.spark) as ctx:
                for name in ("ingest_wikidata", "ingest_wikipedia", "stability"):
                    run_stage(ctx, name)
            (folder / "_complete").write_text("")

    def built(self, spec: SampleSpec, settings: Mapping[str, Any] | None = None,
              release: bool = True) -> Built:
        """The world ingested once, then the later stages under ``settings`` (their own
        copy of the warehouse; a release when ``release``). The Great Expectations gate is
        off unless ``settings`` name ``validation``: its own tests, and the end-to-end
        tests that check it, turn it on."""
        from emerge_lib.pipeline.context import open_context
        from emerge_lib.pipeline.runner import build_dataset

        settings = {"validation": {"enabled": False}, **dict(settings or {})}
        key = _key(asdict(spec), settings, release, self.generator, self.library)
        if key in self._built:
            return self._built[key]
        world = self.world(spec)
        ingested = self.ingested(spec)
        folder = self.cache / f"built-{key}"
        out = folder / "release"
        with _locked(folder):  # one build per variant, whichever worker asks first
            if not (folder / "_complete").is_file():
                shutil.rmtree(folder, ignore_errors=True)
                shutil.copytree(ingested, folder / "warehouse")
                cfg = load_config(world / "config.yaml", overrides={
                    **settings, **NO_INGEST, "warehouse": str(folder / "warehouse")})
                with open_context(cfg, spark=self.spark,
                                  release_dir=out if release else None) as ctx:
                    build_dataset(ctx)
                (folder / "_complete").write_text("")
        self._built[key] = Built(world, folder / "warehouse", out, settings)
        return self._built[key]

    def copy(self, built: Built, dest: Path) -> Built:
        """A writable copy of a built variant (warehouse and release) under ``dest``."""
        shutil.copytree(built.warehouse, dest / "warehouse")
        if built.release.is_dir():
            shutil.copytree(built.release, dest / "release")
        return Built(built.world, dest / "warehouse", dest / "release", built.settings)
