"""What publishing and downloading share: ``s3://`` locations, the boto3 client, and
S3 failures turned into one-line errors a user can act on.

Credentials come only from boto3's own chain (environment variables, a named profile,
an instance role) or from a session or client handed in (Airflow's amazon provider
connection); never from emerge's configuration files, and they are never logged. The
endpoint (SeaweedFS, MinIO) and the region are the configuration's ``s3`` section.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from emerge_lib.core.config import S3Settings
from emerge_lib.core.errors import EmergeError

VERSIONS = "v"  # PREFIX/v/<version>/… holds each published release
LATEST = "latest"  # PREFIX/latest: which version readers get by default


class PublishError(EmergeError):
    """Publishing or downloading a release failed."""


class ReleaseGateError(PublishError):
    """The release may not be published: unvalidated, failed validation, or changed
    since its manifest. Publishing it again cannot succeed until it is rebuilt."""


class S3AccessError(PublishError):
    """No credentials, wrong credentials, or no permission."""


class S3NotFoundError(PublishError):
    """A bucket, a release or a version that does not exist."""


class ChecksumMismatchError(PublishError):
    """A downloaded file differs from the manifest: the object in the bucket is not the
    published file."""


class TransferError(PublishError):
    """The S3 server could not be reached or kept failing; running again resumes."""

    retryable = True


_BUCKET = re.compile(r"^[a-z0-9][a-z0-9.\-]{1,61}[a-z0-9]$")


@dataclass(frozen=True)
class S3Location:
    """``s3://bucket/prefix`` with the prefix normalized (no leading or trailing slash)."""

    bucket: str
    prefix: str

    @classmethod
    def parse(cls, url: str) -> S3Location:
        scheme, sep, rest = url.partition("://")
        bucket, _, prefix = rest.partition("/")
        if scheme != "s3" or not sep or not bucket:
            raise PublishError(f"not an S3 location: {url!r} (expected s3://BUCKET/PREFIX)")
        if not _BUCKET.match(bucket):
            raise PublishError(f"{url!r}: {bucket!r} is not a valid bucket name")
        return cls(bucket, prefix.strip("/"))

    def key(self, *parts: str) -> str:
        return "/".join(p for p in (self.prefix, *parts) if p)

    def version_key(self, version: str, path: str = "") -> str:
        return self.key(VERSIONS, version, path)

    def url(self, *parts: str) -> str:
        return f"s3://{self.bucket}/{self.key(*parts)}"

    def __str__(self) -> str:
        return self.url()


class RateLog:
    """Byte increments from many threads → a log line with the rate at most every
    ``every_s`` seconds (task logs have no progress bar), and the caller's ``progress``."""

    def __init__(self, what: str, total: int, progress: Callable[[int], None] | None = None,
                 every_s: float = 10.0, logger: logging.Logger | None = None) -> None:
        self.what, self.total, self.progress, self.every_s = what, total, progress, every_s
        self.log = logger or logging.getLogger(__name__)
        self.done = 0
        self.started = self.last = time.monotonic()
        self.lock = threading.Lock()

    def __call__(self, n: int) -> None:
        if not n:
            return
        with self.lock:
            self.done += n
            now = time.monotonic()
            due = now - self.last >= self.every_s
            if due:
                self.last = now
            done, seconds = self.done, now - self.started
        if self.progress is not None:
            self.progress(n)
        if due and seconds:
            share = f" ({100 * done / self.total:.0f}%)" if self.total else ""
            self.log.info("%s: %.1f of %.1f MB%s, %.1f MB/s", self.what, done / 1e6,
                          self.total / 1e6, share, done / 1e6 / seconds)


#: a request unanswered this long gets a line naming the endpoint, then one every
#: STALL_REPEAT_S while it waits (a hung endpoint was 120 s of silence, then a timeout
#: naming no endpoint, and up to 6 attempts of that)
STALL_S = 10.0
STALL_REPEAT_S = 30.0
READ_TIMEOUT_S = 120


class _Stalls:
    """The S3 requests in flight, by thread (a request runs in one thread, start to end),
    and one watcher thread that logs a line for each one unanswered for ``STALL_S``."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.flying: dict[int, list[Any]] = {}  # thread → [endpoint, operation, start, told]
        self.watcher: threading.Thread | None = None
        self.last_endpoint: str | None = None  # for a timeout whose error names none

    def sent(self, request: Any = None, event_name: str = "", **_: Any) -> None:
        url = str(getattr(request, "url", "") or "")
        endpoint = "/".join(url.split("/", 3)[:3]) if "://" in url else url
        with self.lock:
            self.flying[threading.get_ident()] = [endpoint, event_name.rsplit(".", 1)[-1],
                                                  time.monotonic(), 0.0]
            self.last_endpoint = endpoint or self.last_endpoint
            if self.watcher is None:
                self.watcher = threading.Thread(target=self._watch, name="emerge-s3-stalls",
                                                daemon=True)
                self.watcher.start()

    def answered(self, **_: Any) -> None:
        with self.lock:
            self.flying.pop(threading.get_ident(), None)

    def _watch(self) -> None:
        log = logging.getLogger(__name__)
        while True:
            time.sleep(1.0)
            now = time.monotonic()
            with self.lock:
                due = [entry for entry in self.flying.values()
                       if now - entry[2] >= STALL_S and now - entry[3] >= STALL_REPEAT_S]
                for entry in due:
                    entry[3] = now
            for endpoint, operation, started, _ in due:
                log.warning("S3 endpoint %s: no answer to %s for %.0f s (each attempt waits "
                            "up to %d s); still waiting: check s3.endpoint_url and the network",
                            endpoint, operation, now - started, READ_TIMEOUT_S)


_STALLS = _Stalls()


def make_client(s3: S3Settings, *, session: Any = None, profile: str | None = None,
                unsigned: bool = False, workers: int = 8, retries: int = 5,
                read_timeout_s: float = READ_TIMEOUT_S) -> Any:
    """A boto3 S3 client on the configured endpoint and region, with a connection pool
    for ``workers`` parallel requests and ``retries`` attempts per request (botocore's
    standard mode: throttling, 5xx and connection errors). ``session``: a boto3 session
    handed in (Airflow); else one from ``profile`` or the environment's chain.
    ``unsigned``: anonymous requests (public buckets, ``--no-sign-request``)."""
    import boto3
    from botocore import UNSIGNED
    from botocore.config import Config
    from botocore.exceptions import ProfileNotFound

    if session is None:
        try:
            session = boto3.Session(profile_name=profile) if profile else boto3.Session()
        except ProfileNotFound as exc:  # a line, not botocore's traceback
            raise S3AccessError(f"{exc}: set AWS_PROFILE (publish.profile, --profile) to a "
                                "profile of ~/.aws/config, or give AWS_ACCESS_KEY_ID and "
                                "AWS_SECRET_ACCESS_KEY") from None
    config = Config(
        max_pool_connections=max(10, workers * 2),
        retries={"mode": "standard", "total_max_attempts": retries + 1},
        connect_timeout=10, read_timeout=read_timeout_s, tcp_keepalive=True,
        signature_version=UNSIGNED if unsigned else None,
        s3={"addressing_style": "path"} if s3.endpoint_url else None,
    )
    region = session.region_name or s3.region
    client = session.client("s3", endpoint_url=s3.endpoint_url, region_name=region,
                            config=config)
    watch_stalls(client)
    return client


def watch_stalls(client: Any) -> None:
    """Have ``client``'s requests told when unanswered (see ``_Stalls``); a client handed
    in (Airflow's) too."""
    events = client.meta.events
    events.register("before-send.s3", _STALLS.sent, unique_id="emerge-stall-sent")
    events.register("needs-retry.s3", _STALLS.answered, unique_id="emerge-stall-answered")


_ACCESS_CODES = {"InvalidAccessKeyId", "SignatureDoesNotMatch", "AccessDenied",
                 "InvalidToken", "ExpiredToken", "TokenRefreshRequired", "403",
                 "AllAccessDisabled", "AccountProblem"}


def s3_error(exc: BaseException, where: str) -> PublishError:
    """``exc`` from boto3 as one line naming ``where`` (an s3:// URL) and what to do."""
    from botocore.exceptions import (
        BotoCoreError,
        ClientError,
        ConnectTimeoutError,
        EndpointConnectionError,
        NoCredentialsError,
        PartialCredentialsError,
        ProfileNotFound,
        ReadTimeoutError,
    )

    if isinstance(exc, PublishError):
        return exc
    if isinstance(exc, NoCredentialsError | PartialCredentialsError):
        return S3AccessError(
            f"{where}: no AWS credentials found: set AWS_ACCESS_KEY_ID and "
            "AWS_SECRET_ACCESS_KEY, or AWS_PROFILE (publish.profile), or read a public "
            "bucket with --no-sign-request")
    if isinstance(exc, ProfileNotFound):
        return S3AccessError(f"{where}: {exc}")
    if isinstance(exc, EndpointConnectionError):
        return TransferError(f"{where}: cannot reach the S3 endpoint ({exc}); check "
                             "s3.endpoint_url")
    if isinstance(exc, ConnectTimeoutError | ReadTimeoutError):
        url = str(getattr(exc, "kwargs", {}).get("endpoint_url") or "")
        endpoint = "/".join(url.split("/", 3)[:3]) if "://" in url else \
            (_STALLS.last_endpoint or "(the configured one)")
        return TransferError(f"{where}: the S3 endpoint {endpoint} did not answer "
                             f"({'connecting' if isinstance(exc, ConnectTimeoutError) else 'reading'}"
                             "; retried); check s3.endpoint_url and the network; run again to "
                             "resume")
    if isinstance(exc, ClientError):
        err = exc.response.get("Error", {})
        code = str(err.get("Code", ""))
        status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
        message = err.get("Message") or code
        if code == "NoSuchBucket":
            bucket = err.get("BucketName") or where.removeprefix("s3://").split("/")[0]
            return S3NotFoundError(f"{where}: the bucket {bucket!r} does not exist (create "
                                   "it first; emerge does not create buckets)")
        if code in _ACCESS_CODES or status == 403:
            hint = ("the access key is unknown to the server" if code == "InvalidAccessKeyId"
                    else "the secret key does not match the access key"
                    if code == "SignatureDoesNotMatch" else "access denied for these credentials")
            return S3AccessError(f"{where}: {hint} ({code}); check AWS_ACCESS_KEY_ID / "
                                 "AWS_SECRET_ACCESS_KEY or the profile")
        if status == 404 and code in ("", "404", "NotFound") and \
                exc.operation_name not in ("HeadObject", "HeadBucket"):
            # a 404 with no S3 error in its body: a web server, not an S3 API
            return S3NotFoundError(f"{where}: the endpoint answered 404 Not Found without an "
                                   "S3 error: is s3.endpoint_url (--endpoint-url) an S3 "
                                   "server?")
        if code in ("NoSuchKey", "404", "NotFound") or status == 404:
            return S3NotFoundError(f"{where}: not found")
        retryable = status is None or status >= 500 or code in (
            "SlowDown", "RequestTimeout", "ThrottlingException", "InternalError")
        return PublishError(f"{where}: {code or status}: {message}", retryable=retryable)
    if isinstance(exc, BotoCoreError | OSError):
        return TransferError(f"{where}: {type(exc).__name__}: {exc}; run again to resume")
    return PublishError(f"{where}: {type(exc).__name__}: {exc}")


def probe_prefix(url: str, s3: S3Settings, *, retries: int = 1) -> bool:
    """Whether anything lies under ``url`` (an ``s3://`` folder such as a warehouse), asked
    with the credentials delta-rs would use (``s3.access_key_id`` when set, else boto3's
    chain): one listing request, its failure as :func:`s3_error`'s one line. Readers that
    go through delta-rs see an unreachable or forbidden store as "no table" instead."""
    import boto3

    where = S3Location.parse(url)
    session = None
    if s3.access_key_id and s3.secret_access_key:
        session = boto3.Session(aws_access_key_id=s3.access_key_id.get_secret_value(),
                                aws_secret_access_key=s3.secret_access_key.get_secret_value())
    client = make_client(s3, session=session, workers=1, retries=retries)
    try:
        listed = client.list_objects_v2(Bucket=where.bucket, MaxKeys=1,
                                        Prefix=where.key() + "/" if where.prefix else "")
    except Exception as exc:  # noqa: BLE001 - every boto3 failure becomes one line
        raise s3_error(exc, url) from None
    return bool(listed.get("KeyCount") or listed.get("Contents"))


def error_code(exc: BaseException) -> str | None:
    from botocore.exceptions import ClientError

    if isinstance(exc, ClientError):
        return str(exc.response.get("Error", {}).get("Code", "")) or None
    return None
