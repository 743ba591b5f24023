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
from contextlib import ExitStack
from pathlib import Path
from typing import TYPE_CHECKING, Any

from emerge_lib.core.config import load_config
from emerge_lib.core.stage import StageContext, StageResult
from emerge_lib.demo.world import DEMO_BUCKET, DEMO_RELEASES, DemoResult, world_for

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


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
    from emerge_lib.curation import endpoint_overrides, local_server
    from emerge_lib.pipeline.context import open_context
    from emerge_lib.pipeline.runner import build_dataset
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
            settings["curation"] = server.curation_overrides(concurrency=1)
        s3 = None
        if publish or (publish is None and local_s3.available()):
            s3 = stack.enter_context(local_s3.start(Path(out).resolve() / "s3",
                                                    buckets=[DEMO_BUCKET]))
            settings["publish"] = {"to": DEMO_RELEASES}
            settings["s3"] = {"endpoint_url": s3.endpoint_url, "region": s3.region}
        cfg = load_config(world / "config.yaml", overrides=settings)
        result = DemoResult(cfg, world, release)
        ctx = stack.enter_context(open_context(
            cfg, spark=spark, release_dir=release,
            s3_client=s3.client("publisher") if s3 else None))
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
    result.compare(got, planted(world))
    result.seconds = time.monotonic() - started
    return result
