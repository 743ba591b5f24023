"""Spark sessions over Spark Connect: an embedded Sail server (default) or a remote cluster.

One code path for both: the stages only see a ``SparkSession`` from pyspark-client. The
embedded server is started in-process on 127.0.0.1 with a free port and stopped on exit,
so nothing is left running after a test or a command. Sail reads S3 settings from its
process environment, so they are exported before the server starts.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING

from emerge_lib.core.config import Config, EngineSettings, S3Settings
from emerge_lib.core.errors import EmergeError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

log = logging.getLogger(__name__)


class EngineError(EmergeError):
    """The engine could not be started or reached (a retry may find it up)."""

    retryable = True


@contextmanager
def _exported(env: Mapping[str, str]) -> Iterator[None]:
    """Export variables for the lifetime of the embedded server, then restore them.

    Process-wide (``os.environ``): not for two servers started at once from two threads.
    """
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


MODES = ("local", "local-cluster")


def resolve_mode(mode: str | None) -> str:
    """``engine.mode``, else the ``SAIL_MODE`` environment variable, else ``local``."""
    chosen = mode or os.environ.get("SAIL_MODE") or "local"
    if chosen not in MODES:
        raise EngineError(f"engine mode must be one of {', '.join(MODES)}, not {chosen!r}",
                          retryable=False)
    return chosen


@contextmanager
def embedded_server(s3: S3Settings | None = None, mode: str | None = None) -> Iterator[str]:
    """Start pysail's Spark Connect server on 127.0.0.1:<free port>; yield its sc:// URL.

    ``mode`` ``local-cluster`` runs Sail's driver and workers as separate actors talking
    over RPC (the execution path of a Sail cluster), in this process. Sail reads
    ``SAIL_MODE`` when the server object is built, so it is exported around that.
    """
    from pysail.spark import SparkConnectServer

    mode = resolve_mode(mode)
    env = s3.environment() if s3 else {}
    env["SAIL_MODE"] = mode
    # Sail logs every session at INFO to stderr; keep it quiet unless asked. Its cluster
    # mode warns about routine task bookkeeping on every query ("worker N was not pending").
    quiet = "warn" if mode == "local" else "warn,sail_execution=error"
    env.setdefault("RUST_LOG", os.environ.get("RUST_LOG", quiet))
    with _exported(env):
        server = SparkConnectServer("127.0.0.1", 0)
        server.start(background=True)
        try:
            address = server.listening_address
            if address is None:
                raise EngineError("the embedded Sail server did not report a listening address")
            host, port = address
            log.info("embedded Sail Spark Connect server (%s mode) listening on %s:%s", mode,
                     host, port)
            yield f"sc://127.0.0.1:{port}"
        finally:
            server.stop()
            log.info("embedded Sail server stopped")


def _connect(url: str, timeout_s: float) -> SparkSession:
    from pyspark.sql import SparkSession

    deadline = time.monotonic() + timeout_s
    last: Exception | None = None
    while time.monotonic() < deadline:
        try:
            # create(), not getOrCreate(): the latter hands back any active session, even
            # one on another server, and stopping it would stop that one
            spark = SparkSession.builder.remote(url).create()
            spark.sql("SELECT 1").collect()
            # everything in emerge is UTC; naming it once keeps Sail from mixing "UTC" and
            # the machine's "Etc/UTC" in one plan (its replaceWhere union then fails)
            spark.conf.set("spark.sql.session.timeZone", "UTC")
            return spark
        except Exception as exc:  # the server may still be binding
            last = exc
            time.sleep(0.2)
    raise EngineError(f"could not reach Spark Connect at {url} within {timeout_s}s: {last}")


@contextmanager
def spark_session(
    engine: EngineSettings | str | None = None, s3: S3Settings | None = None
) -> Iterator[SparkSession]:
    """A Spark session for the configured engine; everything it started is stopped on exit.

    ``engine`` is an EngineSettings, a URL string (``embedded`` or ``sc://host:port``), or
    None for the embedded default.
    """
    if engine is None or isinstance(engine, str):
        engine = EngineSettings(url=engine or "embedded")
    if engine.url == "embedded":
        with embedded_server(s3, engine.mode) as url:
            spark = _connect(url, engine.startup_timeout_s)
            try:
                yield spark
            finally:
                spark.stop()
    else:
        spark = _connect(engine.url, engine.startup_timeout_s)
        try:
            yield spark
        finally:
            spark.stop()


@contextmanager
def session_for(cfg: Config) -> Iterator[SparkSession]:
    """The session a configuration asks for (engine URL and S3 settings)."""
    with spark_session(cfg.engine, cfg.s3) as spark:
        yield spark
