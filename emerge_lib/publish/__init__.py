"""Publishing a release to S3 and fetching it back, verified (docs/publishing.md).

- :mod:`~emerge_lib.publish.upload`: the gate (validation passed, files unchanged since
  the manifest), parallel multipart uploads with SHA256 checksums under
  ``PREFIX/v/<version>/``, the manifest last, then ``PREFIX/latest`` by compare-and-swap.
  Run it through the ``publish`` stage (``run_stage``), as ``emerge publish`` does.
- :mod:`~emerge_lib.publish.download`: ``emerge download``: parallel, resumable, every
  file checked against the manifest's sha256 before it gets its name.
- :mod:`~emerge_lib.publish.local_s3`: a real S3 server on 127.0.0.1 (SeaweedFS) for
  tests, the demo and Airflow.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from emerge_lib.publish.download import DownloadReport, download_release
from emerge_lib.publish.s3 import (
    ChecksumMismatchError,
    PublishError,
    ReleaseGateError,
    S3AccessError,
    S3Location,
    S3NotFoundError,
    TransferError,
    make_client,
)
from emerge_lib.publish.upload import PublishReport, check_release, publish_release

if TYPE_CHECKING:
    from emerge_lib.core.config import Config

__all__ = ["ChecksumMismatchError", "DownloadReport", "PublishError", "PublishReport",
           "ReleaseGateError", "S3AccessError", "S3Location", "S3NotFoundError",
           "TransferError", "check_release", "client_for", "download_release",
           "make_client", "publish_release"]


def client_for(cfg: Config, handed: Any = None, *, unsigned: bool = False) -> Any:
    """The S3 client a publish or download uses: ``handed`` when it is a client, a client
    of ``handed`` when it is a boto3 session (Airflow's connection), else one from the
    environment's credentials or ``publish.profile``; on ``s3.endpoint_url``."""
    settings = cfg.publish
    if handed is not None and hasattr(handed, "put_object"):
        from emerge_lib.publish.s3 import watch_stalls

        watch_stalls(handed)  # a stalled request is told on it too
        return handed
    return make_client(cfg.s3, session=handed, profile=settings.profile, unsigned=unsigned,
                       workers=settings.workers, retries=settings.retries)
