"""``emerge publish``: a validated release folder to S3, through the ``publish`` stage."""

from __future__ import annotations

import argparse
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from emerge_lib.commands._common import config_flag, examples


def add_s3_flags(p: argparse.ArgumentParser) -> None:
    """Flags ``publish`` and ``download`` share: configuration, endpoint, profile, workers."""
    config_flag(p, "flags override it")
    p.add_argument("--endpoint-url", metavar="URL",
                   help="S3 endpoint (SeaweedFS, MinIO; default: s3.endpoint_url, else "
                        "AWS_ENDPOINT_URL, else AWS)")
    p.add_argument("--profile", help="AWS profile for credentials (default: publish.profile, "
                                     "else the environment's AWS_* variables or AWS_PROFILE)")
    p.add_argument("--workers", type=int, help="parallel requests (default: publish.workers, 8)")


def s3_overrides(args: argparse.Namespace, **publish: object) -> dict[str, object]:
    sections: dict[str, object] = {}
    if args.endpoint_url:
        sections["s3"] = {"endpoint_url": args.endpoint_url}
    settings = {"profile": args.profile, "workers": args.workers, **publish}
    settings = {k: v for k, v in settings.items() if v is not None}
    if settings:
        sections["publish"] = settings
    return sections


@contextmanager
def byte_bar(desc: str) -> Iterator[tuple[Callable[[int], None], Callable[[int], None]]]:
    """A bytes bar fed from many threads: (set the total, add bytes)."""
    from tqdm import tqdm

    lock = threading.Lock()
    with tqdm(total=0, unit="B", unit_scale=True, desc=desc, disable=None) as bar:
        def on_total(n: int) -> None:
            with lock:
                bar.reset(total=n)

        def on_bytes(n: int) -> None:
            with lock:
                bar.update(n)

        yield on_total, on_bytes


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "publish",
        help="publish a validated release folder to s3://BUCKET/PREFIX",
        description=(
            "Upload a release folder to s3://BUCKET/PREFIX/v/<version>/ (the version is the "
            "manifest's content hash), manifest.json last, then point PREFIX/latest at it "
            "with a conditional write. Refuses a release that has not passed validation or "
            "whose files changed since its manifest. Republishing sends nothing; an "
            "interrupted publish continues where it stopped. Credentials come from the "
            "environment (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY) or a profile, never "
            "from files of this repository. See docs/publishing.md."
        ),
    )
    examples(p, "emerge publish --release demo/release --to s3://my-bucket/emerge",
             "emerge publish --release release --to s3://my-bucket/emerge "
             "--endpoint-url http://127.0.0.1:8333 --profile publisher")
    p.add_argument("--release", required=True, metavar="DIR", help="the release folder")
    p.add_argument("--to", metavar="s3://BUCKET/PREFIX",
                   help="where to publish (default: publish.to)")
    p.add_argument("--part-size-mb", type=int, metavar="MB",
                   help="multipart part size in MB (default: publish.part_size_mb, 16)")
    add_s3_flags(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from emerge_lib.commands._common import bars, load
    from emerge_lib.pipeline.context import open_context
    from emerge_lib.pipeline.runner import run_stage

    cfg = load(args, **s3_overrides(args, to=args.to, part_size_mb=args.part_size_mb))
    with open_context(cfg, engine=False, release_dir=args.release) as ctx, bars(), \
            byte_bar("publish") as (on_total, on_bytes):
        ctx.on_transfer_total, ctx.on_transfer = on_total, on_bytes
        result = run_stage(ctx, "publish")
    print(result.detail.brief())
    return 0
