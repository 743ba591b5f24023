"""``emerge download``: a published release from S3, every file verified."""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from contextlib import contextmanager


def register(sub: argparse._SubParsersAction) -> None:
    from emerge_lib.commands.publish import add_s3_flags

    p = sub.add_parser(
        "download",
        help="download a published release from s3://BUCKET/PREFIX, verified",
        description=(
            "Fetch a release published with `emerge publish` (the latest, or --version), "
            "in parallel, resuming interrupted downloads, and check every file's sha256 "
            "against the manifest before it gets its name; a mismatch fails with the "
            "file's name. manifest.json is written last. A manifest naming a path outside "
            "--to (absolute, '..', a duplicate) is refused before anything is written. See docs/publishing.md."
        ),
    )
    from emerge_lib.commands._common import examples

    examples(p, "emerge download --from s3://my-bucket/emerge --to emerge-release",
             "emerge download --from s3://my-bucket/emerge --to test-only "
             "--snapshot 2024-01-01 --evaluation-set-only",
             "emerge download --from s3://public-bucket/emerge --to emerge-release "
             "--no-sign-request --expect-version 0123456789abcdef")
    p.add_argument("--from", dest="source", required=True, metavar="s3://BUCKET/PREFIX",
                   help="where the release was published")
    p.add_argument("--to", required=True, metavar="DIR", help="destination folder")
    p.add_argument("--version", help="a published version (default: latest)")
    p.add_argument("--expect-version", metavar="VERSION",
                   help="refuse unless latest points at VERSION (the one you reviewed)")
    p.add_argument("--manifest-sha256", metavar="HEX",
                   help="refuse unless the manifest's sha256 is HEX (printed by publish): "
                        "pins the release's bytes")
    p.add_argument("--snapshot", action="append", default=[], metavar="DATE",
                   help="only the files of snapshot DATE: corpus/, evaluation_set/, "
                        "kg_snapshots/ and their parquet/ twins (repeatable)")
    p.add_argument("--evaluation-set-only", action="store_true",
                   help="only evaluation_set/ (the test split) and its Parquet twins "
                        "(parquet/evaluation_set/)")
    p.add_argument("--no-sign-request", action="store_true",
                   help="anonymous requests (a public bucket; no credentials needed)")
    add_s3_flags(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from emerge_lib.commands._common import bars, load
    from emerge_lib.commands.publish import byte_bar, s3_overrides
    from emerge_lib.publish import S3AccessError, client_for, download_release

    cfg = load(args, **s3_overrides(args))
    client = client_for(cfg, unsigned=args.no_sign_request)
    with bars(), byte_bar("download") as (on_total, on_bytes), \
            anonymous_hint(args.no_sign_request, S3AccessError):
        report = download_release(args.source, args.to, client, version=args.version,
                                  expect_version=args.expect_version,
                                  manifest_sha256=args.manifest_sha256,
                                  snapshots=args.snapshot,
                                  evaluation_set_only=args.evaluation_set_only,
                                  workers=cfg.publish.workers, retries=cfg.publish.retries,
                                  progress=on_bytes, on_total=on_total)
    print(report.brief())
    return 0


@contextmanager
def anonymous_hint(unsigned: bool, access_error: type[Exception]) -> Iterator[None]:
    """An access error of an anonymous request says the bucket is private, not which AWS
    key is wrong."""
    try:
        yield
    except access_error as exc:
        if not unsigned:
            raise
        raise access_error(f"{str(exc).split(': ')[0]}: access denied to anonymous requests: "
                           "the bucket is not public; drop --no-sign-request and give "
                           "credentials (AWS_ACCESS_KEY_ID, AWS_PROFILE)") from None
