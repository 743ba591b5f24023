"""The demo job: the whole pipeline on a generated world, on the embedded defaults.

Generates a sample world (a Wikimedia-style dump mirror with planted truth), builds the
dataset from its mirror on the embedded Sail engine into a local Delta warehouse, curates
it with the local LLM server (llama.cpp with SmolLM2-135M, when installed), validates it,
writes the EMERGE release, publishes it to the local S3 server (SeaweedFS, when installed)
and downloads it back, verified, and checks the instances against the world's truth.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from emerge_lib.config import Config, load_config
from emerge_lib.pipeline import StageContext, StageResult
from emerge_lib.sample import SampleSpec, generate_world
from emerge_lib.tables import Catalog

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

DEMO_WORLD = dict(items=600, articles=200, revisions=4)
DEMO_BUCKET = "emerge"
DEMO_RELEASES = f"s3://{DEMO_BUCKET}/releases"


@dataclass
class DemoResult:
    cfg: Config
    world: Path
    release: Path
    results: list[StageResult] = field(default_factory=list)
    built: int = 0
    planted: int = 0
    missing: int = 0
    unexpected: int = 0
    seconds: float = 0.0
    published: Any = None  # the PublishReport, when the local S3 server ran
    downloaded: Any = None  # the DownloadReport of fetching it back
    card: list[dict[str, Any]] = field(default_factory=list)  # the card's table rows

    @property
    def ok(self) -> bool:
        return self.missing == 0 and self.unexpected == 0


def world_for(out: str | Path, seed: int = 1, on_generate: Callable[[Path], None] | None = None
              ) -> Path:
    """The demo's sample world under ``out`` (generated once; reruns reuse it)."""
    world = Path(out).resolve() / "world"
    if not (world / "config.yaml").exists():
        if on_generate:
            on_generate(world)
        generate_world(world, SampleSpec(seed=seed, **DEMO_WORLD))
    return world


def run_demo(out: str | Path, seed: int = 1,
             build: Callable[[StageContext], list[StageResult]] | None = None,
             on_generate: Callable[[Path], None] | None = None,
             curate: bool | None = None, *, endpoint: str | None = None,
             spark: SparkSession | None = None,
             overrides: Mapping[str, Any] | None = None,
             publish: bool | None = None) -> DemoResult:
    """Generate (once) and build the demo world; ``build`` runs the stages (default:
    ``pipeline.build_dataset``), so a caller can draw progress around it. ``curate``:
    curate with the local LLM server (default: when it is installed).

    For tests, with the demo's own wiring: ``endpoint`` curates against that
    OpenAI-compatible server (``…/v1``, e.g. the instant stub) under the released judge
    names instead of starting the local one; ``spark``: an open session to build with;
    ``overrides``: configuration on top of the world's. ``publish``: publish the release
    to the local S3 server and download it back into ``out/downloaded`` (default: when the
    server is installed)."""
    from contextlib import ExitStack

    from emerge_lib.curation import endpoint_overrides, local_server
    from emerge_lib.engine import session_for
    from emerge_lib.pipeline import build_dataset
    from emerge_lib.publish import local_s3
    from emerge_lib.sample.compare import built, planted

    started = time.monotonic()
    world = world_for(out, seed, on_generate)
    release = Path(out).resolve() / "release"
    with ExitStack() as stack:
        settings: dict[str, Any] = dict(overrides or {})
        if endpoint is not None:
            settings["curation"] = endpoint_overrides(endpoint)
        elif curate or (curate is None and local_server.available()):
            server = stack.enter_context(local_server.start())
            settings["curation"] = endpoint_overrides(
                server.url, backend="llamacpp", model=server.model, concurrency=1)
        s3 = None
        if publish or (publish is None and local_s3.available()):
            s3 = stack.enter_context(local_s3.start(Path(out).resolve() / "s3",
                                                    buckets=[DEMO_BUCKET]))
            settings["publish"] = {"to": DEMO_RELEASES}
            settings["s3"] = {"endpoint_url": s3.endpoint_url, "region": s3.region}
        cfg = load_config(world / "config.yaml", overrides=settings)
        result = DemoResult(cfg, world, release)
        if spark is None:
            spark = stack.enter_context(session_for(cfg))
        ctx = StageContext(cfg, Catalog.for_config(cfg, spark), release_dir=release,
                           s3_client=s3.client("publisher") if s3 else None)
        result.results = (build or build_dataset)(ctx)
        got, _ = built(ctx.catalog)
        for r in result.results:
            if r.stage == "release":
                result.card = r.detail.card
            elif r.stage == "publish":
                result.published = r.detail
        if s3 is not None:
            from emerge_lib.publish import download_release

            result.downloaded = download_release(
                DEMO_RELEASES, Path(out).resolve() / "downloaded", s3.client("reader"))
    want = planted(world)
    result.built, result.planted = len(got), len(want)
    result.missing, result.unexpected = len(want - got), len(got - want)
    result.seconds = time.monotonic() - started
    return result


def run_demo_airflow(out: str | Path, seed: int = 1, curate: bool | None = None,
                     publish: bool | None = None,
                     on_generate: Callable[[Path], None] | None = None) -> DemoResult:
    """The demo as its users run it: the ``emerge_snapshot`` DAG (``airflow dags test``,
    ``emerge_lib.demo_airflow``) on the demo world's first snapshot, curating with the
    local LLM server and publishing to the local S3 server through the DAG's connections
    (each when installed, or as asked), then the release downloaded back and verified,
    and the instances compared with the planted truth of that snapshot."""
    from contextlib import ExitStack

    from emerge_lib.demo_airflow import run_snapshot_dag
    from emerge_lib.manifest import read_manifest
    from emerge_lib.publish import download_release, local_s3
    from emerge_lib.sample.compare import built, planted

    started = time.monotonic()
    root = Path(out).resolve()
    world = world_for(root, seed, on_generate)
    cfg = load_config(world / "config.yaml", overrides={"warehouse": str(root / "warehouse")})
    snapshot = cfg.plans()[0].key
    with ExitStack() as stack:
        s3 = None
        if publish or (publish is None and local_s3.available()):
            s3 = stack.enter_context(local_s3.start(root / "s3", buckets=[DEMO_BUCKET]))
        release = run_snapshot_dag(world, root, snapshot, curate,
                                   publish_to=DEMO_RELEASES if s3 else None, s3=s3)
        result = DemoResult(cfg, world, release)
        result.card = read_manifest(release).get("card", [])
        if s3 is not None:
            result.downloaded = download_release(DEMO_RELEASES, root / "downloaded",
                                                 s3.client("reader"))
    got, _ = built(Catalog(cfg.warehouse))
    got = {k for k in got if k[0] == snapshot}
    want = {k for k in planted(world) if k[0] == snapshot}
    result.built, result.planted = len(got), len(want)
    result.missing, result.unexpected = len(want - got), len(got - want)
    result.seconds = time.monotonic() - started
    return result
