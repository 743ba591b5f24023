"""``emerge publish``: a validated release folder to ``s3://BUCKET/PREFIX``, atomically
for readers.

Layout in the bucket (docs/publishing.md)::

    PREFIX/v/<version>/<every file of the manifest>
    PREFIX/v/<version>/manifest.json      written last: its presence means "complete"
    PREFIX/latest                         {"version": …, "manifest_sha256": …, "published": […]}

The version is the manifest's content hash, so a version's files never change: a reader
that found ``latest`` finds every file it names. Order: the gate (validation passed, files
unchanged since the manifest), the files (parallel; multipart above one part with a
SHA256 per part, checked by the server, and the composite checksum compared after
completion), the manifest, then ``latest`` by compare-and-swap (``If-Match`` on the ETag
read, ``If-None-Match: *`` when absent), retried on a lost race, so concurrent publishers
all end with their version in the history and ``latest`` naming a complete one.

Idempotent and resumable: files already in the bucket with the manifest's sha256 are not
sent again, a multipart upload left open by an interrupted run is continued (its parts of
the right size are kept; the composite checksum, computed by the server from the stored
part checksums, proves them), and republishing a published release sends nothing.

A republish repairs: what the bucket holds of the version is checked against the manifest
(each object's size and the SHA-256 checksum the server computed and stored when it was
written, never the ``sha256`` metadata, which whoever writes an object writes), and what
differs or is missing is sent again, the manifest too; a version whose object was changed
or deleted downloads byte-identical again after one ``emerge publish``.
"""

from __future__ import annotations

import base64
import hashlib
import json
import logging
import random
import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import FIRST_EXCEPTION, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from emerge_lib.formats.manifest import (
    MANIFEST,
    ManifestError,
    inside,
    is_line_file,
    read_manifest,
    verify_release,
)
from emerge_lib.publish.s3 import (
    LATEST,
    PublishError,
    RateLog,
    ReleaseGateError,
    S3Location,
    error_code,
    s3_error,
)

log = logging.getLogger(__name__)

MiB = 1 << 20
MAX_PARTS = 10_000
LATEST_ATTEMPTS = 20
Progress = Callable[[int], None]


@dataclass
class PublishReport:
    """What one publish did."""

    target: str
    version: str
    files: int = 0  # files of the release
    bytes: int = 0
    uploaded_files: int = 0
    uploaded_bytes: int = 0
    resumed_parts: int = 0  # parts of an interrupted multipart upload kept
    already_published: bool = False  # the version's manifest was there: nothing sent
    latest_changed: bool = False
    seconds: float = 0.0
    notes: list[str] = field(default_factory=list)
    manifest_sha256: str = ""  # what a consumer pins: emerge download --manifest-sha256

    def brief(self) -> str:
        rate = (f", {self.uploaded_bytes / 1e6 / self.seconds:.1f} MB/s"
                if self.uploaded_bytes and self.seconds else "")
        what = ("already published, nothing uploaded" if self.already_published and
                not self.uploaded_files else
                f"{'already published, repaired: ' if self.already_published else ''}"
                f"{self.uploaded_files} of {self.files} files uploaded "
                f"({self.uploaded_bytes / 1e6:.1f} of {self.bytes / 1e6:.1f} MB)")
        latest = "latest → this version" if self.latest_changed else "latest unchanged"
        return (f"published {self.version} to {self.target}: {what}, {latest} in "
                f"{self.seconds:.1f}s{rate}; manifest sha256 {self.manifest_sha256}")


# -- the gate ------------------------------------------------------------------------------
def check_release(release_dir: str | Path) -> tuple[dict[str, Any], bytes]:
    """The release's manifest (parsed and as bytes) if it may be published: it has passed
    validation (``validation.success`` is true) and its files are those the manifest
    lists; otherwise ReleaseGateError, before anything is sent."""
    root = Path(release_dir)
    if not root.is_dir():
        raise ReleaseGateError(f"{root}: no such release folder")
    try:
        manifest = read_manifest(root)
    except ManifestError as exc:
        raise ReleaseGateError(f"refusing to publish: {exc}") from None
    validation = manifest.get("validation")
    if not isinstance(validation, Mapping):
        raise ReleaseGateError(f"refusing to publish {root}: its manifest has no validation "
                               "results (build it with the gate on: emerge build)")
    if validation.get("success") is not True:
        suites = validation.get("suites")
        failed = [name for name, suite in (suites.items() if isinstance(suites, Mapping) else ())
                  if suite is False or (isinstance(suite, Mapping) and suite.get("success") is False)]
        which = (f" (failed: {', '.join(sorted(failed))})" if failed
                 else f" ({validation['reason']})" if validation.get("reason") else "")
        results = validation.get("results") or "validation/results.json"
        raise ReleaseGateError(f"refusing to publish {root}: validation did not pass{which}; "
                               f"see {root / results}")
    # the listed files only: an unlisted file is not published, so it needs no hashing
    result = verify_release(root, [f["path"] for f in manifest["files"]])
    if not result.ok:
        parts = []
        if result.mismatched:
            parts.append(f"{len(result.mismatched)} changed ({_some(result.mismatched)})")
        if result.missing:
            parts.append(f"{len(result.missing)} missing ({_some(result.missing)})")
        raise ReleaseGateError(f"refusing to publish {root}: files differ from its manifest: "
                               f"{'; '.join(parts)}; rebuild the release")
    _check_validated(root, manifest, str(validation.get("results") or "validation/results.json"))
    return manifest, (root / MANIFEST).read_bytes()


def _check_validated(root: Path, manifest: Mapping[str, Any], results: str) -> None:
    """The release's line files must be those its validation checked (the sha256 of each
    recorded in its results): the manifest's own verdict is not enough, since an edited
    file with a rewritten manifest passed it."""
    listed = {f["path"]: f for f in manifest["files"]}
    if results not in listed:
        raise ReleaseGateError(f"refusing to publish {root}: its validation results "
                               f"({results}) are not among its files; rebuild the release")
    try:
        checked = json.loads(inside(root, results).read_text(encoding="utf-8")).get("files")
    except (OSError, ValueError, AttributeError):
        checked = None
    if not isinstance(checked, Mapping):
        raise ReleaseGateError(f"refusing to publish {root}: its validation results do not "
                               "name the files they checked (a release of an older emerge, "
                               "or edited): rebuild it with emerge build")
    differ = sorted(rel for rel, f in listed.items()
                    if is_line_file(rel) and checked.get(rel) != f["sha256"])
    if differ:
        raise ReleaseGateError(f"refusing to publish {root}: {len(differ)} files are not the "
                               f"ones its validation checked ({_some(differ)}); rebuild the "
                               "release")


def _some(paths: list[str], n: int = 3) -> str:
    return ", ".join(paths[:n]) + (f", … {len(paths) - n} more" if len(paths) > n else "")


# -- one file's upload ---------------------------------------------------------------------
def _b64(digest: bytes) -> str:
    return base64.b64encode(digest).decode()


def _read(path: Path, offset: int, size: int) -> bytes:
    with open(path, "rb") as fh:
        fh.seek(offset)
        return fh.read(size)


def part_size_for(nbytes: int, part_size: int) -> int:
    """``part_size``, doubled until the file fits in S3's 10,000 parts."""
    while nbytes > part_size * MAX_PARTS:
        part_size *= 2
    return part_size


@dataclass
class _Multipart:
    """A file being sent in parts; the last part to finish completes it."""

    key: str
    rel: str  # the path in the release
    path: Path
    sha256: str
    size: int
    part_size: int
    upload_id: str
    digests: dict[int, bytes] = field(default_factory=dict)
    etags: dict[int, str] = field(default_factory=dict)
    left: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def count(self) -> int:
        return max(1, -(-self.size // self.part_size))

    def span(self, n: int) -> tuple[int, int]:
        start = (n - 1) * self.part_size
        return start, min(self.part_size, self.size - start)


class _Uploader:
    """Parallel uploads of one release's files into one version prefix."""

    def __init__(self, client: Any, target: S3Location, version: str, root: Path,
                 workers: int, part_size: int, progress: Progress | None) -> None:
        self.client, self.target, self.version, self.root = client, target, version, root
        self.workers, self.part_size, self.progress = workers, part_size, progress
        self.bucket = target.bucket
        self.report_lock = threading.Lock()
        self.uploaded_files = self.uploaded_bytes = self.resumed_parts = 0

    def key(self, path: str) -> str:
        return self.target.version_key(self.version, path)

    # what is there already
    def missing(self, files: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The manifest's files not yet in the bucket with their sha256 (a listing, then
        a HEAD of each candidate of the right size: its ``sha256`` metadata)."""
        present: dict[str, int] = {}
        paginator = self.client.get_paginator("list_objects_v2")
        for page in paginator.paginate(Bucket=self.bucket, Prefix=self.key("") + "/"):
            for obj in page.get("Contents", []):
                present[obj["Key"]] = obj["Size"]
        todo, candidates = [], []
        for f in files:
            if present.get(self.key(f["path"])) == f["bytes"]:
                candidates.append(f)
            else:
                todo.append(f)
        if candidates:
            with ThreadPoolExecutor(self.workers) as pool:
                same = list(pool.map(self._same, candidates))
            todo += [f for f, ok in zip(candidates, same, strict=True) if not ok]
        return sorted(todo, key=lambda f: -f["bytes"])

    def _same(self, f: Mapping[str, Any]) -> bool:
        """Whether the object holds the manifest's bytes, by the checksum the server
        stored (and checked) when it was written: a single upload's SHA-256, or a
        multipart upload's composite (the SHA-256 of its parts' digests, ``-N``), computed
        here from the local file, which the gate checked against the manifest. An object
        without one (written by something else) is sent again."""
        head = self.client.head_object(Bucket=self.bucket, Key=self.key(f["path"]),
                                       ChecksumMode="ENABLED")
        stored = str(head.get("ChecksumSHA256") or "")
        if not stored:
            return False
        if "-" not in stored:
            return stored == _b64(bytes.fromhex(f["sha256"]))
        count = int(stored.rsplit("-", 1)[1] or 0)
        if count < 1:
            return False
        first = self.client.head_object(Bucket=self.bucket, Key=self.key(f["path"]),
                                        PartNumber=1)
        return stored == _composite(self.root / f["path"], int(first["ContentLength"]), count)

    # sending
    def run(self, files: list[dict[str, Any]]) -> None:
        """Upload ``files`` (largest first), one pool for every part and small file; stop
        at the first failure, leaving open multipart uploads for the next run."""
        with ThreadPoolExecutor(self.workers, thread_name_prefix="publish") as pool:
            futures: list[Future[None]] = []
            for f in files:
                if f["bytes"] > self.part_size:
                    mpu = self._open_multipart(f)
                    for n in range(1, mpu.count + 1):
                        if n in mpu.etags:
                            continue
                        futures.append(pool.submit(self._part, mpu, n))
                    if not mpu.left:  # every part was kept from an earlier run
                        futures.append(pool.submit(self._complete, mpu))
                else:
                    futures.append(pool.submit(self._small, f))
            done, pending = wait(futures, return_when=FIRST_EXCEPTION)
            failed = [fut for fut in done if fut.exception() is not None]
            if failed:
                for fut in pending:
                    fut.cancel()
                exc = failed[0].exception()
                assert exc is not None
                raise exc

    def _small(self, f: Mapping[str, Any]) -> None:
        path = self.root / f["path"]
        body = path.read_bytes()
        digest = hashlib.sha256(body).digest()
        if digest.hex() != f["sha256"]:
            raise ReleaseGateError(f"{path} changed while publishing; rebuild the release")
        self.client.put_object(Bucket=self.bucket, Key=self.key(f["path"]), Body=body,
                               ChecksumSHA256=_b64(digest), Metadata={"sha256": f["sha256"]},
                               ContentType=_content_type(f["path"]))
        self._sent(len(body), file_done=True)

    def _open_multipart(self, f: Mapping[str, Any]) -> _Multipart:
        """Continue the open multipart upload of this key (an interrupted run's), keeping
        its parts of the right size, or start one."""
        key, path = self.key(f["path"]), self.root / f["path"]
        part_size = part_size_for(f["bytes"], self.part_size)
        listing = self.client.list_multipart_uploads(Bucket=self.bucket, Prefix=key)
        for upload in listing.get("Uploads", []):
            if upload["Key"] != key:
                continue
            mpu = _Multipart(key, f["path"], path, f["sha256"], f["bytes"], part_size,
                             upload["UploadId"])
            kept = self._kept_parts(mpu)
            if kept:
                mpu.etags.update(kept)
                mpu.left = mpu.count - len(kept)
                with self.report_lock:
                    self.resumed_parts += len(kept)
                if self.progress:
                    self.progress(sum(mpu.span(n)[1] for n in kept))
                log.info("%s: continuing an interrupted upload, %d of %d parts kept",
                         f["path"], len(kept), mpu.count)
                return mpu
        created = self.client.create_multipart_upload(
            Bucket=self.bucket, Key=key, ChecksumAlgorithm="SHA256",
            Metadata={"sha256": f["sha256"]}, ContentType=_content_type(f["path"]))
        mpu = _Multipart(key, f["path"], path, f["sha256"], f["bytes"], part_size,
                         created["UploadId"])
        mpu.left = mpu.count
        return mpu

    def _kept_parts(self, mpu: _Multipart) -> dict[int, str]:
        kept: dict[int, str] = {}
        paginator = self.client.get_paginator("list_parts")
        try:
            for page in paginator.paginate(Bucket=self.bucket, Key=mpu.key,
                                           UploadId=mpu.upload_id):
                for part in page.get("Parts", []):
                    n = part["PartNumber"]
                    if 1 <= n <= mpu.count and part["Size"] == mpu.span(n)[1]:
                        kept[n] = part["ETag"]
        except Exception as exc:  # the upload vanished (aborted, expired): start anew
            if error_code(exc) in ("NoSuchUpload", "404"):
                return {}
            raise
        return kept

    def _part(self, mpu: _Multipart, n: int) -> None:
        offset, size = mpu.span(n)
        body = _read(mpu.path, offset, size)
        digest = hashlib.sha256(body).digest()
        r = self.client.upload_part(Bucket=self.bucket, Key=mpu.key, UploadId=mpu.upload_id,
                                    PartNumber=n, Body=body, ChecksumSHA256=_b64(digest))
        with mpu.lock:
            mpu.etags[n] = r["ETag"]
            mpu.digests[n] = digest
            mpu.left -= 1
            last = mpu.left == 0
        self._sent(size)
        if last:
            self._complete(mpu)

    def _complete(self, mpu: _Multipart) -> None:
        """Complete the upload, then prove it: the composite checksum the server computed
        from its stored part checksums must equal the one of the local parts (parts kept
        from an earlier run are hashed here), and the file's sha256 must still be the
        manifest's."""
        whole = hashlib.sha256()
        digests = []
        with open(mpu.path, "rb") as fh:
            for n in range(1, mpu.count + 1):
                chunk = fh.read(mpu.part_size)
                whole.update(chunk)
                digests.append(mpu.digests.get(n) or hashlib.sha256(chunk).digest())
        if whole.hexdigest() != mpu.sha256:
            raise ReleaseGateError(f"{mpu.path} changed while publishing; rebuild the release")
        parts = [{"PartNumber": n, "ETag": mpu.etags[n], "ChecksumSHA256": _b64(d)}
                 for n, d in enumerate(digests, 1)]
        try:
            r = self.client.complete_multipart_upload(
                Bucket=self.bucket, Key=mpu.key, UploadId=mpu.upload_id,
                MultipartUpload={"Parts": parts})
        except Exception as exc:
            # another publisher of the same version completed this very upload first
            if error_code(exc) == "NoSuchUpload" and self._same(
                    {"path": mpu.rel, "sha256": mpu.sha256}):
                return
            raise
        expected = f"{_b64(hashlib.sha256(b''.join(digests)).digest())}-{len(digests)}"
        got = r.get("ChecksumSHA256")
        if got is not None and got != expected:
            self.client.delete_object(Bucket=self.bucket, Key=mpu.key)
            raise PublishError(f"s3://{self.bucket}/{mpu.key}: the server's checksum {got} is "
                               f"not the parts' {expected}; deleted it, run again",
                               retryable=True)
        self._sent(0, file_done=True)

    def _sent(self, nbytes: int, file_done: bool = False) -> None:
        with self.report_lock:
            self.uploaded_bytes += nbytes
            if file_done:
                self.uploaded_files += 1
        if self.progress and nbytes:
            self.progress(nbytes)


def _composite(path: Path, part_size: int, count: int) -> str:
    """The composite SHA-256 of ``path`` sent in ``count`` parts of ``part_size`` bytes."""
    digests = []
    with open(path, "rb") as fh:
        for _ in range(count):
            digests.append(hashlib.sha256(fh.read(part_size)).digest())
        if fh.read(1):
            return ""  # more bytes than those parts: not this upload
    return f"{_b64(hashlib.sha256(b''.join(digests)).digest())}-{count}"


def _content_type(path: str) -> str:
    suffix = path.rsplit(".", 1)[-1].lower() if "." in path else ""
    return {"jsonl": "application/x-ndjson", "json": "application/json",
            "parquet": "application/vnd.apache.parquet", "md": "text/markdown; charset=utf-8",
            "html": "text/html; charset=utf-8", "png": "image/png",
            "csv": "text/csv"}.get(suffix, "application/octet-stream")


# -- latest --------------------------------------------------------------------------------
def read_latest(client: Any, target: S3Location) -> tuple[dict[str, Any] | None, str | None]:
    """``latest`` as JSON with its ETag, or (None, None) when nothing was published."""
    try:
        r = client.get_object(Bucket=target.bucket, Key=target.key(LATEST))
    except Exception as exc:
        if error_code(exc) in ("NoSuchKey", "404", "NotFound"):
            return None, None
        raise
    body = r["Body"].read()
    try:
        pointer = json.loads(body)
    except ValueError:
        looks = body[:200].lstrip().lower()
        if looks.startswith((b"<!doctype html", b"<html")) or "html" in str(
                r.get("ContentType", "")):
            raise PublishError(f"{target.url(LATEST)}: the endpoint answered a web page, not "
                               "an object: is s3.endpoint_url (--endpoint-url) an S3 server?"
                               ) from None
        raise PublishError(f"{target.url(LATEST)} is not JSON; fix or delete it") from None
    if not isinstance(pointer, dict):
        raise PublishError(f"{target.url(LATEST)} is not a release pointer (a JSON object)")
    return pointer, r["ETag"]


def point_latest(client: Any, target: S3Location, version: str, manifest_sha256: str,
                 attempts: int = LATEST_ATTEMPTS) -> bool:
    """Make ``latest`` name ``version``, by compare-and-swap: write only if ``latest`` is
    still what was read (If-Match its ETag; If-None-Match: * when there was none), else
    read again and retry. Concurrent publishers therefore never lose each other's entry in
    ``published``, and ``latest`` always names a version whose manifest is in the bucket.
    Returns whether it changed."""
    for attempt in range(attempts):
        current, etag = read_latest(client, target)
        if current is not None and current.get("version") == version:
            return False
        history = list((current or {}).get("published", []))
        history.append({"version": version, "manifest_sha256": manifest_sha256,
                        "at": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")})
        body = json.dumps({"version": version, "manifest": f"v/{version}/{MANIFEST}",
                           "manifest_sha256": manifest_sha256, "published": history},
                          indent=1).encode()
        condition = {"IfMatch": etag} if etag else {"IfNoneMatch": "*"}
        try:
            client.put_object(Bucket=target.bucket, Key=target.key(LATEST), Body=body,
                              ContentType="application/json",
                              ChecksumSHA256=_b64(hashlib.sha256(body).digest()),
                              CacheControl="no-cache", **condition)
            return True
        except Exception as exc:
            if error_code(exc) not in ("PreconditionFailed", "ConditionalRequestConflict"):
                raise
            log.info("latest changed under us (another publisher); reading it again")
            time.sleep(min(2.0, 0.05 * 2 ** attempt) * random.random())
    raise PublishError(f"{target.url(LATEST)}: gave up after {attempts} lost races with "
                       "other publishers", retryable=True)


# -- the whole publish ---------------------------------------------------------------------
def publish_release(release_dir: str | Path, target: S3Location | str, client: Any, *,
                    workers: int, part_size_mb: int, progress: Progress | None,
                    on_total: Callable[[int], None] | None) -> PublishReport:
    """Publish the release folder to ``target`` (see the module docstring). ``progress``
    is called with byte increments, ``on_total`` once with the bytes to send."""
    started = time.monotonic()
    root = Path(release_dir)
    if isinstance(target, str):
        target = S3Location.parse(target)
    manifest, manifest_bytes = check_release(root)
    version = manifest["version"]
    files = manifest["files"]
    report = PublishReport(str(target), version, len(files), sum(f["bytes"] for f in files))
    manifest_key = target.version_key(version, MANIFEST)
    where = target.url()
    try:
        published = _get_bytes(client, target.bucket, manifest_key)
        manifest_sha256 = hashlib.sha256(manifest_bytes).hexdigest()
        if published is not None and not _manifest_of(published, version):
            report.notes.append("the published manifest of this version was damaged; "
                                "sent again")
            published = None
        report.already_published = published is not None
        uploader = _Uploader(client, target, version, root, workers, part_size_mb * MiB,
                             progress)
        todo = uploader.missing(files)
        todo_bytes = sum(f["bytes"] for f in todo)
        if on_total:
            on_total(todo_bytes)
        uploader.progress = RateLog(f"publish {version}", todo_bytes, progress, logger=log)
        if published is not None and todo:
            log.warning("publish %s → %s: the bucket's copy differs from the manifest in %d "
                        "files (%s); sending them again", version, where, len(todo),
                        ", ".join(f["path"] for f in todo[:3]))
            report.notes.append(f"repaired {len(todo)} files the bucket held otherwise")
        elif todo or published is None:
            log.info("publish %s → %s: %d of %d files to send (%.1f MB)", version, where,
                     len(todo), len(files), todo_bytes / 1e6)
        uploader.run(todo)
        report.uploaded_files = uploader.uploaded_files
        report.uploaded_bytes = uploader.uploaded_bytes
        report.resumed_parts = uploader.resumed_parts
        if published is None:
            # the manifest last: its presence says every file above is complete
            client.put_object(Bucket=target.bucket, Key=manifest_key, Body=manifest_bytes,
                              ChecksumSHA256=_b64(hashlib.sha256(manifest_bytes).digest()),
                              Metadata={"sha256": manifest_sha256},
                              ContentType="application/json")
        elif published != manifest_bytes:
            # same files (the version says so), other provenance: the first one stays
            report.notes.append("the published manifest of this version differs in its "
                                "metadata; kept the published one")
            manifest_sha256 = hashlib.sha256(published).hexdigest()
        report.manifest_sha256 = manifest_sha256
        report.latest_changed = point_latest(client, target, version, manifest_sha256)
    except ReleaseGateError:
        raise
    except Exception as exc:
        raise s3_error(exc, where) from exc
    report.seconds = time.monotonic() - started
    log.info("%s", report.brief())
    return report


def _manifest_of(body: bytes, version: str) -> bool:
    """Whether ``body`` is a manifest of ``version`` (its file list hashes to it)."""
    from emerge_lib.formats.manifest import content_version

    try:
        manifest = json.loads(body)
        return bool(manifest.get("version") == version
                    and content_version(manifest["files"]) == version)
    except (ValueError, KeyError, TypeError, AttributeError):
        return False


def _get_bytes(client: Any, bucket: str, key: str) -> bytes | None:
    try:
        body: bytes = client.get_object(Bucket=bucket, Key=key)["Body"].read()
        return body
    except Exception as exc:
        if error_code(exc) in ("NoSuchKey", "404", "NotFound"):
            return None
        raise
