"""``emerge download``: a published release from ``s3://BUCKET/PREFIX`` into a folder,
every file verified against the manifest.

The version is ``latest``'s (whose ``manifest_sha256`` proves the manifest) or the one
asked for; the manifest must name itself (its version is the hash of its file list). Files
are fetched in parallel into ``NAME.part`` and renamed only once their size and sha256
match the manifest, so no half-written or wrong file ever has its final name. A run that
is cut off (or a connection that drops) continues each ``.part`` file with a ranged GET;
files already present and correct are not fetched again. A mismatch fails with one line
naming the file; the bad ``.part`` is removed. ``manifest.json`` is written last.

The manifest is untrusted input (whoever can write to the bucket can forge one whose
hashes agree): before anything is written its file list must keep the path rule of
:func:`emerge_lib.formats.manifest.check_files` (relative paths under ``--to``, no ``..``,
no duplicates), and each file is written only where no symbolic link leads out of
``--to``. ``--version`` pins a content version; ``manifest_sha256`` (the figure
``emerge publish`` prints) pins the manifest's bytes.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

from emerge_lib.formats.manifest import (
    MANIFEST,
    ManifestError,
    check_files,
    content_version,
    inside,
    sha256_file,
)
from emerge_lib.publish.s3 import (
    LATEST,
    VERSIONS,
    ChecksumMismatchError,
    PublishError,
    RateLog,
    S3Location,
    S3NotFoundError,
    TransferError,
    error_code,
    s3_error,
)

log = logging.getLogger(__name__)

CHUNK = 1 << 20
EVALUATION_SET = ("evaluation_set/", "parquet/evaluation_set/")  # the JSONL and its twins
Progress = Callable[[int], None]
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
#: a snapshot's files: corpus/, evaluation_set/ and kg_snapshots/ folders, their typed twins
#: under parquet/ (corpus, evaluation_set, triples), and its KG TSV
_SNAPSHOT = re.compile(r"(?:(?:corpus|evaluation_set|kg_snapshots"
                       r"|parquet/(?:corpus|evaluation_set|triples|splits|context))/snapshot_"
                       r"|kg_snapshots/kg_snapshot_)(\d{4}-\d{2}-\d{2})(?:/|\.tsv\.gz$)")


@dataclass
class DownloadReport:
    source: str
    version: str
    out: str
    files: int = 0  # files selected
    bytes: int = 0
    downloaded_files: int = 0
    downloaded_bytes: int = 0
    present_files: int = 0  # already there and verified
    resumed_files: int = 0  # continued from a .part file
    seconds: float = 0.0

    def brief(self) -> str:
        rate = (f", {self.downloaded_bytes / 1e6 / self.seconds:.1f} MB/s"
                if self.downloaded_bytes and self.seconds else "")
        extra = "".join(f", {n} {what}" for n, what in (
            (self.present_files, "already present"), (self.resumed_files, "resumed")) if n)
        return (f"downloaded {self.version} from {self.source} to {self.out}: "
                f"{self.files} file{'s' if self.files != 1 else ''} verified ({self.bytes / 1e6:.1f} MB), "
                f"{self.downloaded_files} fetched{extra} in {self.seconds:.1f}s{rate}")


def snapshot_date(value: str) -> str:
    """``2024-01-01``, ``2024-01-01T00:00:00Z`` or ``snapshot_2024-01-01`` → 2024-01-01."""
    match = _DATE.search(value)
    if match is None:
        raise PublishError(f"--snapshot {value!r}: expected a date, YYYY-MM-DD")
    return match.group(0)


def select_files(manifest: Mapping[str, Any], snapshots: Sequence[str] = (),
                 evaluation_set_only: bool = False) -> list[dict[str, Any]]:
    """The manifest's files under the filters: ``snapshots`` keeps the files of those
    snapshots (``corpus/``, ``evaluation_set/`` and ``kg_snapshots/``, and their typed
    twins under ``parquet/``); ``evaluation_set_only`` keeps ``evaluation_set/…`` (and
    ``parquet/evaluation_set/…``); both: their intersection. A filter that matches nothing
    is an error naming what there is."""
    files = list(manifest["files"])
    if evaluation_set_only:
        files = [f for f in files if f["path"].startswith(EVALUATION_SET)]
        if not files:
            raise S3NotFoundError("this release has no evaluation_set/ files")
    if snapshots:
        dates = {snapshot_date(s) for s in snapshots}
        present = sorted({m.group(1) for f in manifest["files"]
                          if (m := _SNAPSHOT.match(f["path"]))})
        missing = sorted(dates - set(present))
        if missing:
            raise S3NotFoundError(f"no snapshot {', '.join(missing)} in this release; it has "
                                  f"{', '.join(present) or 'none'}")
        files = [f for f in files if (m := _SNAPSHOT.match(f["path"])) and m.group(1) in dates]
    return files


class _Fetcher:
    """Parallel, resumable, verified fetches of one version's files."""

    def __init__(self, client: Any, source: S3Location, version: str, out: Path,
                 workers: int, retries: int, progress: Progress | None) -> None:
        self.client, self.source, self.version, self.out = client, source, version, out
        self.workers, self.retries, self.progress = workers, retries, progress
        self.lock = threading.Lock()
        self.report = DownloadReport(str(source), version, str(out))

    def run(self, files: list[dict[str, Any]]) -> None:
        with ThreadPoolExecutor(self.workers, thread_name_prefix="download") as pool:
            futures = [pool.submit(self.fetch, f)
                       for f in sorted(files, key=lambda f: -f["bytes"])]
            done, pending = wait(futures, return_when=FIRST_EXCEPTION)
            failed = [fut.exception() for fut in done if fut.exception() is not None]
            if failed:
                for fut in pending:
                    fut.cancel()
                mismatch = [e for e in failed if isinstance(e, ChecksumMismatchError)]
                raise (mismatch or failed)[0]  # type: ignore[misc]

    def _tick(self, n: int) -> None:
        if self.progress and n:
            self.progress(n)

    def fetch(self, f: Mapping[str, Any]) -> None:
        final = inside(self.out, f["path"])
        part = final.with_name(final.name + ".part")
        if not final.is_symlink() and final.is_file() and \
                final.stat().st_size == f["bytes"] and sha256_file(final) == f["sha256"]:
            with self.lock:
                self.report.present_files += 1
            self._tick(f["bytes"])
            return
        final.parent.mkdir(parents=True, exist_ok=True)
        final = inside(self.out, f["path"])  # no link swapped in on the way
        if part.is_symlink():
            part.unlink()
        key = self.source.version_key(self.version, f["path"])
        url = f"s3://{self.source.bucket}/{key}"
        for fresh in (False, True):
            hasher = hashlib.sha256()
            have = 0
            if part.exists():
                have = part.stat().st_size
                if fresh or have > f["bytes"]:
                    part.unlink()
                    have = 0
                elif have:
                    with open(part, "rb") as fh:
                        while chunk := fh.read(CHUNK):
                            hasher.update(chunk)
            self._tick(have)
            fetched = self._stream(key, url, part, have, hasher, f["bytes"])
            with self.lock:
                self.report.downloaded_bytes += fetched
            if hasher.hexdigest() == f["sha256"]:
                os.replace(part, final)
                with self.lock:
                    self.report.downloaded_files += 1
                    self.report.resumed_files += bool(have)
                return
            part.unlink(missing_ok=True)
            if not have:
                break
            log.warning("%s: resumed download does not verify; fetching it whole", f["path"])
        raise ChecksumMismatchError(
            f"{url}: sha256 {hasher.hexdigest()[:16]}… is not the manifest's "
            f"{f['sha256'][:16]}…: the object in the bucket is not the published file "
            "(nothing kept under its name)")

    def _stream(self, key: str, url: str, part: Path, have: int, hasher: Any,
                size: int) -> int:
        """Append the object's bytes from ``have`` to ``part``, hashing them; a dropped
        connection continues where it stopped (``retries`` times). Returns bytes read."""
        # botocore wraps urllib3's read errors (ResponseStreamingError, ReadTimeoutError)
        from botocore.exceptions import BotoCoreError, ClientError

        attempt, fetched, first = 0, 0, True
        while first or have < size:
            first = False
            args: dict[str, Any] = {"Range": f"bytes={have}-"} if have else {}
            try:
                r = self.client.get_object(Bucket=self.source.bucket, Key=key, **args)
                total = _object_size(r)
                if total != size:
                    part.unlink(missing_ok=True)
                    raise ChecksumMismatchError(
                        f"{url}: {total:,} bytes in the bucket, the manifest says {size:,}: "
                        "the object is not the published file")
                with _local(part, "ab" if have else "wb") as out:
                    for chunk in r["Body"].iter_chunks(CHUNK):
                        out.write(chunk)
                        hasher.update(chunk)
                        have += len(chunk)
                        fetched += len(chunk)
                        self._tick(len(chunk))
                if have < size:
                    raise TransferError(f"{url}: the body ended at byte {have:,} of {size:,}")
            except PublishError as exc:
                if not exc.retryable:
                    raise
                attempt = self._again(url, have, attempt, exc)
            except ClientError as exc:
                if error_code(exc) in ("NoSuchKey", "404"):
                    raise S3NotFoundError(f"{url}: listed in the manifest but not in the "
                                          "bucket (an incomplete or damaged publish)") from None
                err = s3_error(exc, url)
                if not err.retryable:
                    raise err from None
                attempt = self._again(url, have, attempt, err)
            except (BotoCoreError, OSError) as exc:
                attempt = self._again(url, have, attempt, exc)
        return fetched

    def _again(self, url: str, have: int, attempt: int, exc: BaseException) -> int:
        attempt += 1
        if attempt > self.retries:
            raise TransferError(f"{url}: giving up after {attempt} attempts at byte "
                                f"{have:,} ({type(exc).__name__}: {exc}); run again to "
                                "resume") from None
        delay = min(10.0, 0.2 * 2 ** (attempt - 1))
        log.warning("%s: %s; continuing at byte %d in %.1fs", url, exc, have, delay)
        time.sleep(delay)
        return attempt


class _LocalWriteError(Exception):
    """An OSError of the local file (a full disk, no permission), kept apart from the
    network's OSErrors, which are retried."""

    def __init__(self, error: OSError, path: Path) -> None:
        super().__init__(str(error))
        if error.filename is None:  # a failed write names no file
            error.filename = str(path)
        self.error = error


class _local:  # noqa: N801 (used as a function: ``with _local(path, mode) as out``)
    """``open(path, mode)`` whose open and write errors are ``_LocalWriteError``."""

    def __init__(self, path: Path, mode: str) -> None:
        try:
            self.fh = open(path, mode)  # noqa: SIM115 (closed by __exit__)
        except OSError as exc:
            raise _LocalWriteError(exc, path) from None
        self.path = path

    def __enter__(self) -> _local:
        return self

    def write(self, chunk: bytes) -> None:
        try:
            self.fh.write(chunk)
        except OSError as exc:
            raise _LocalWriteError(exc, self.path) from None

    def __exit__(self, *exc: object) -> None:
        try:
            self.fh.close()
        except OSError as err:
            if exc[0] is None:
                raise _LocalWriteError(err, self.path) from None


def _object_size(response: Mapping[str, Any]) -> int:
    """The whole object's size: Content-Range's total for a ranged GET, else the length."""
    content_range = response.get("ContentRange")
    if content_range and "/" in content_range:
        return int(content_range.rsplit("/", 1)[1])
    return int(response["ContentLength"])


def resolve_version(client: Any, source: S3Location, version: str | None, *,
                    expect_version: str | None = None,
                    manifest_sha256: str | None = None) -> tuple[str, bytes, dict[str, Any]]:
    """The version to fetch with its manifest (bytes and parsed), proven: the manifest's
    sha256 is ``latest``'s (when the version came from there) and ``manifest_sha256``
    (when given), its file list hashes to its version and keeps the path rule; the
    version is ``expect_version`` (when given)."""
    expected_sha = None
    if version is None:
        from emerge_lib.publish.upload import read_latest

        latest, _ = read_latest(client, source)
        if latest is None:
            _no_latest(client, source)
        version, expected_sha = latest.get("version"), latest.get("manifest_sha256")
        if not isinstance(version, str) or not re.fullmatch(r"[0-9a-f]{16}", version):
            raise ChecksumMismatchError(f"{source.url(LATEST)}: names no version "
                                        f"({version!r:.40}); not a release pointer")
    if expect_version is not None and version != expect_version:
        raise ChecksumMismatchError(f"{source.url(LATEST)}: points at {version}, not the "
                                    f"version you expect ({expect_version}); nothing fetched")
    url = source.url(VERSIONS, version, MANIFEST)
    try:
        body = client.get_object(Bucket=source.bucket,
                                 Key=source.version_key(version, MANIFEST))["Body"].read()
    except Exception as exc:
        if error_code(exc) in ("NoSuchKey", "404"):
            known = published_versions(client, source)
            raise S3NotFoundError(f"{url}: no such version; published: "
                                  f"{', '.join(known) or 'none'}") from None
        raise
    digest = hashlib.sha256(body).hexdigest()
    if expected_sha and digest != expected_sha:
        raise ChecksumMismatchError(f"{url}: its sha256 is not the one {LATEST} records")
    if manifest_sha256 and digest != manifest_sha256.lower():
        raise ChecksumMismatchError(f"{url}: its sha256 {digest[:16]}… is not the "
                                    f"{manifest_sha256[:16]}… you pinned; nothing fetched")
    try:
        manifest = json.loads(body)
        files = manifest["files"]
    except (ValueError, KeyError, TypeError):
        raise ChecksumMismatchError(f"{url}: not a release manifest") from None
    check_files(files, url)  # the path rule, before anything is written
    if manifest.get("version") != version or content_version(files) != version:
        raise ChecksumMismatchError(f"{url}: its file list does not hash to {version}")
    return version, body, manifest


def _no_latest(client: Any, source: S3Location) -> NoReturn:
    """Why there is no ``latest``, as one error: the versions the prefix holds (a publish
    that stopped before ``latest``), none, or an endpoint that is no S3 server."""
    try:
        known = published_versions(client, source)
    except Exception as exc:
        response: dict[str, Any] = getattr(exc, "response", None) or {}
        status = response.get("ResponseMetadata", {}).get("HTTPStatusCode")
        if status == 404 and error_code(exc) in (None, "404", "NotFound"):  # not an S3 API
            raise S3NotFoundError(f"{source.url()}: the endpoint answers 404 Not Found to an "
                                  "S3 listing: is s3.endpoint_url (--endpoint-url) an S3 "
                                  "server?") from None
        raise
    if known:
        raise S3NotFoundError(f"{source.url(LATEST)}: no latest pointer, but the prefix holds "
                              f"version{'s' if len(known) > 1 else ''} {', '.join(known[:10])}"
                              f"{' …' if len(known) > 10 else ''} (a publish stopped before "
                              "latest?): download one with --version, or publish again")
    raise S3NotFoundError(f"{source.url(LATEST)}: nothing published there (no latest "
                          "pointer, no version); check --from")


def published_versions(client: Any, source: S3Location) -> list[str]:
    prefix = source.key(VERSIONS) + "/"
    versions = []
    for page in client.get_paginator("list_objects_v2").paginate(
            Bucket=source.bucket, Prefix=prefix, Delimiter="/"):
        versions += [p["Prefix"][len(prefix):].rstrip("/") for p in page.get("CommonPrefixes", [])]
    return sorted(versions)


def download_release(source: S3Location | str, out: str | Path, client: Any, *,
                     version: str | None = None, expect_version: str | None = None,
                     manifest_sha256: str | None = None, snapshots: Iterable[str] = (),
                     evaluation_set_only: bool = False, workers: int = 8, retries: int = 5,
                     progress: Progress | None = None,
                     on_total: Callable[[int], None] | None = None) -> DownloadReport:
    """Fetch a published release (see the module docstring) into ``out``."""
    started = time.monotonic()
    if isinstance(source, str):
        source = S3Location.parse(source)
    root = Path(out)
    try:
        version, manifest_bytes, manifest = resolve_version(
            client, source, version, expect_version=expect_version,
            manifest_sha256=manifest_sha256)
        files = select_files(manifest, list(snapshots), evaluation_set_only)
        if on_total:
            on_total(sum(f["bytes"] for f in files))
        root.mkdir(parents=True, exist_ok=True)
        log.info("download %s from %s: %d files (%.1f MB)", version, source, len(files),
                 sum(f["bytes"] for f in files) / 1e6)
        total = sum(f["bytes"] for f in files)
        fetcher = _Fetcher(client, source, version, root, workers, retries,
                           RateLog(f"download {version}", total, progress, logger=log))
        fetcher.report.files = len(files)
        fetcher.report.bytes = total
        fetcher.run(files)
    except (PublishError, ManifestError):  # ManifestError: the path rule
        raise
    except _LocalWriteError as exc:  # this disk (full, read-only), not the network
        raise exc.error from None
    except OSError as exc:
        if exc.filename:  # a local file or folder (a file in the way, no permission)
            raise
        raise s3_error(exc, source.url()) from exc
    except Exception as exc:
        raise s3_error(exc, source.url()) from exc
    tmp = root / f".{MANIFEST}.tmp"
    tmp.write_bytes(manifest_bytes)
    os.replace(tmp, root / MANIFEST)
    report = fetcher.report
    report.seconds = time.monotonic() - started
    log.info("%s", report.brief())
    return report
