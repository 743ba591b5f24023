"""Spark sessions over Spark Connect: an embedded Sail server (default) or a remote cluster
(a Sail cluster, or Apache Spark 4 with Delta Lake).

One code path for all: the stages only see a ``SparkSession`` from pyspark-client. The
embedded server is started in-process on 127.0.0.1 with a free port and stopped on exit,
so nothing is left running after a test or a command. Sail reads S3 settings from its
process environment, so they are exported before the server starts; Spark takes them as
the session's Hadoop settings (``fs.s3a.*``). Where the engines differ in what emerge's
writes rely on, :func:`engine_traits` says which one a session talks to, from what the
engine reports (never from a setting), and the catalog asks it.
"""

from __future__ import annotations

import contextvars
import logging
import os
import re
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from emerge_lib.core.config import SESSION_TIMEOUT_S, Config, EngineSettings, S3Settings
from emerge_lib.core.errors import EmergeError

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

log = logging.getLogger(__name__)


class EngineError(EmergeError):
    """The engine could not be started or reached (a retry may find it up)."""

    retryable = True


class EngineCallTimeout(EngineError):
    """An engine call gave no answer within ``engine.call_timeout_s``; it was cancelled.
    Every stage's writes are idempotent, so running the stage again is safe."""


#: the answer to a call on a session the server has ended: Sail's, Spark's
_SESSION_GONE = re.compile(r"session \S+ is not running|INVALID_HANDLE\.SESSION_(CLOSED|NOT_FOUND)")

#: what the engine is being asked for, outermost first (a stage, then a table's write):
#: the words of a timeout's message
_ACTIVITY: contextvars.ContextVar[tuple[str, ...]] = contextvars.ContextVar(
    "emerge_engine_activity", default=())


@contextmanager
def engine_activity(label: str) -> Iterator[None]:
    """Name what the engine calls inside this block do (``stage deltas 2024-01-01…``,
    ``delta_triples: replace partitions``), for the message of a call that times out."""
    token = _ACTIVITY.set((*_ACTIVITY.get(), label))
    try:
        yield
    finally:
        _ACTIVITY.reset(token)


class CallDeadline:
    """A deadline on every call a Spark Connect client makes (a plan executed, a command
    run, a schema analysed, a configuration read): one that gets no answer within
    ``timeout_s`` is interrupted on the server (``interruptAll``), and if it still has not
    returned ``grace_s`` later the channel is closed, so the caller always gets an
    :class:`EngineCallTimeout` naming what was asked instead of waiting forever.

    The deadline is per logical call, not per RPC: Spark's reattachable execution splits
    one long query into several streams, each of which would pass a per-RPC deadline.
    """

    #: the client's internal methods every action goes through (pyspark-client 4.2), and
    #: what each does in a message's words
    CALLS = {"_execute": "a command", "_execute_and_fetch_as_iterator": "a query",
             "_analyze": "a plan's analysis", "config": "a session setting"}

    def __init__(self, client: Any, timeout_s: float, grace_s: float = 15.0) -> None:
        self.client, self.timeout_s, self.grace_s = client, timeout_s, grace_s
        self._lock = threading.Lock()
        self._inflight: dict[int, tuple[float, str]] = {}  # token -> (deadline, what)
        self._expired: dict[int, str] = {}
        self._next = 0
        self._wake = threading.Event()
        self._closed = False
        for name, what in self.CALLS.items():
            original = getattr(client, name)
            wrapped = (self._generator(original, what)
                       if name == "_execute_and_fetch_as_iterator"
                       else self._function(original, what))
            setattr(client, name, wrapped)
        self._thread = threading.Thread(target=self._watch, name="emerge-engine-deadline",
                                        daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._closed = True
        self._wake.set()

    # -- bookkeeping -------------------------------------------------------------------------
    def _enter(self, call: str) -> int:
        what = ", ".join(_ACTIVITY.get()) or "an engine call"
        with self._lock:
            self._next += 1
            token = self._next
            self._inflight[token] = (time.monotonic() + self.timeout_s, f"{what} ({call})")
        self._wake.set()
        return token

    def _leave(self, token: int, error: BaseException | None) -> None:
        with self._lock:
            self._inflight.pop(token, None)
            what = self._expired.pop(token, None)
        if error is not None and _SESSION_GONE.search(str(error)):
            where = ", ".join(_ACTIVITY.get()) or "an engine call"
            raise EngineError(
                f"{where}: the engine ended this session (it sat idle longer than the "
                f"server keeps one: engine.session_timeout_s for the embedded engine, "
                f"Sail's spark.session_timeout_secs on a server, Spark's "
                f"spark.connect.session.manager.defaultSessionTimeout); retry the task"
            ) from None
        if what is not None and error is not None:
            raise EngineCallTimeout(
                f"{what}: the engine gave no answer within {self.timeout_s:g}s "
                f"(engine.call_timeout_s), so the call was cancelled; the stage's writes are "
                f"idempotent: retry it (raise engine.call_timeout_s if the data is that large)"
            ) from None

    def _function(self, original: Callable[..., Any], what: str) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            token = self._enter(what)
            try:
                result = original(*args, **kwargs)
            except BaseException as exc:
                self._leave(token, exc)
                raise
            self._leave(token, None)
            return result
        return call

    def _generator(self, original: Callable[..., Iterator[Any]],
                   what: str) -> Callable[..., Iterator[Any]]:
        def call(*args: Any, **kwargs: Any) -> Iterator[Any]:
            token = self._enter(what)
            try:
                yield from original(*args, **kwargs)
            except BaseException as exc:
                self._leave(token, exc)
                raise
            self._leave(token, None)
        return call

    # -- the watchdog ------------------------------------------------------------------------
    def _watch(self) -> None:
        while not self._closed:
            with self._lock:
                now = time.monotonic()
                due = [(t, what) for t, (deadline, what) in self._inflight.items()
                       if deadline <= now and t not in self._expired]
                later = [d for t, (d, _) in self._inflight.items() if t not in self._expired]
            if due:
                self._expire(due)
                continue
            self._wake.clear()
            self._wake.wait(timeout=max(0.05, min(later) - now) if later else None)

    def _expire(self, due: list[tuple[int, str]]) -> None:
        with self._lock:
            for token, what in due:
                self._expired[token] = what
        log.warning("%s: no answer from the engine within %gs; interrupting it",
                    due[0][1], self.timeout_s)
        try:
            self.client.interrupt_all()
        except Exception as exc:  # the engine may not answer this either
            log.debug("interruptAll failed: %s", exc)
        end = time.monotonic() + self.grace_s
        while time.monotonic() < end:
            with self._lock:
                if not any(t in self._inflight for t, _ in due):
                    return
            time.sleep(0.05)
        log.warning("the engine did not stop the call within %gs of the interrupt; closing "
                    "the connection", self.grace_s)
        try:
            self.client._channel.close()
        except Exception as exc:
            log.debug("closing the channel failed: %s", exc)


@dataclass(frozen=True)
class EngineTraits:
    """The engine behind a session, as it reports itself, and what follows for emerge's
    writes (docs/architecture.md, "Sail and Spark": each difference and the test that
    holds it).

    ``name`` is ``spark`` when the engine's ``version()`` begins with the Spark version it
    reports (Apache Spark: ``4.2.1 <git revision>``), else ``sail`` (Sail reports Spark's
    API version, 4.2.0, and its own in ``version()``: ``0.7.2``).
    """

    name: str  # "sail" or "spark"
    version: str  # the engine's own: Sail's 0.7.2, Spark's 4.2.1

    @property
    def caches(self) -> bool:
        """Whether ``localCheckpoint`` keeps a result where the engine runs (Spark). On
        Sail ``cache()`` is a no-op and ``localCheckpoint`` fails: a result used several
        times is written to a scratch Delta table instead (``Catalog.materialize``)."""
        return self.name == "spark"

    @property
    def replace_where_any_lists(self) -> bool:
        """Whether replaceWhere takes a list column from any frame (Spark). Sail's refuses
        list elements named otherwise than in the table's files (a frame from local data,
        or cast), so such a frame goes through a scratch Delta table first."""
        return self.name == "spark"

    def path(self, uri: str) -> str:
        """A warehouse path as this engine names it: Spark reaches S3 through Hadoop's
        S3A file system, ``s3a://`` (delta-rs and pyarrow read ``s3://``)."""
        if self.name == "spark" and uri.startswith("s3://"):
            return "s3a://" + uri[len("s3://"):]
        return uri


def engine_traits(spark: SparkSession) -> EngineTraits:
    """What engine ``spark`` talks to (asked once per session, two calls)."""
    traits = getattr(spark, "_emerge_traits", None)
    if traits is None:
        reported = str(spark.sql("SELECT version() AS v").collect()[0].v).strip()
        own = reported.split()[0] if reported else ""
        name = "spark" if own and own == spark.version else "sail"
        traits = EngineTraits(name, own)
        spark._emerge_traits = traits
    return traits


def local_checkpoint(df: DataFrame) -> DataFrame:
    """``df.localCheckpoint(eager=True)``, its result bound to ``df``'s own session.

    PySpark's Connect client binds a checkpoint's result to ``SparkSession.active()``,
    the first session the thread created, not to the one that ran it. In a process holding
    two sessions (Sail and Spark 4) the next plan over the result then went to the other
    server ("remote checkpoint relation does not exist"), and its release at garbage
    collection too. The session is made the thread's active one for the call (PySpark
    4.2 has no public setter for it), then the former one is put back.
    """
    from pyspark.sql.connect.session import SparkSession as ConnectSession

    own = df.sparkSession
    local = ConnectSession._active_session
    before = getattr(local, "session", None)
    local.session = own
    try:
        return df.localCheckpoint(eager=True)
    finally:
        local.session = before


def _spark_settings(s3: S3Settings | None) -> dict[str, str]:
    """The session settings emerge needs on Apache Spark with Delta Lake:

    - no deletion vectors on new tables: emerge reads its tables through delta-rs too,
      which cannot read them (deltalake 1.6), and a cluster may enable them by default;
    - the S3 settings of ``s3``, if any, as Hadoop S3A settings of this session (Sail takes
      the same from its process environment): the endpoint with path-style requests (a
      MinIO or SeaweedFS server), the region, and the key pair.
    """
    conf = {"spark.databricks.delta.properties.defaults.enableDeletionVectors": "false"}
    if s3 is None or not (s3.endpoint_url or s3.access_key_id):
        return conf
    conf["fs.s3a.endpoint.region"] = s3.region
    if s3.endpoint_url:
        conf["fs.s3a.endpoint"] = s3.endpoint_url
        conf["fs.s3a.path.style.access"] = "true"
        conf["fs.s3a.connection.ssl.enabled"] = str(
            s3.endpoint_url.startswith("https://")).lower()
    if s3.access_key_id and s3.secret_access_key:
        conf["fs.s3a.aws.credentials.provider"] = \
            "org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider"
        conf["fs.s3a.access.key"] = s3.access_key_id.get_secret_value()
        conf["fs.s3a.secret.key"] = s3.secret_access_key.get_secret_value()
    return conf


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
def embedded_server(s3: S3Settings | None = None, mode: str | None = None,
                    session_timeout_s: float = SESSION_TIMEOUT_S) -> Iterator[str]:
    """Start pysail's Spark Connect server on 127.0.0.1:<free port>; yield its sc:// URL.

    ``mode`` ``local-cluster`` runs Sail's driver and workers as separate actors talking
    over RPC (the execution path of a Sail cluster), in this process. Sail reads
    ``SAIL_MODE`` when the server object is built, so it is exported around that.

    ``session_timeout_s``: how long the session may sit idle. Sail ends an idle session
    after 15 minutes by default ("session … is not running" on the next call), and a
    stage may well go that long without the engine (an LLM curating a snapshot, a large
    extraction); the embedded server serves this process alone, so it keeps it far longer.
    """
    from pysail.spark import SparkConnectServer

    mode = resolve_mode(mode)
    env = s3.environment() if s3 else {}
    env["SAIL_MODE"] = mode
    env["SAIL_SPARK__SESSION_TIMEOUT_SECS"] = str(int(session_timeout_s))
    # Sail logs every session at INFO to stderr; keep it quiet unless asked. Its cluster
    # mode warns about routine task bookkeeping on every query ("worker N was not pending"),
    # and every server warns when it stops ("aborting 23 task(s) for SessionManagerActor":
    # its session manager's idle tasks), which a task's log (Airflow files stderr as
    # ERROR) showed on every successful run
    quiet = "warn,sail_common::actor=error" + ("" if mode == "local" else
                                               ",sail_execution=error")
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
            _stop_server(server)


def _stop_server(server: Any, timeout_s: float = 30.0) -> None:
    """Stop the embedded server, waiting at most ``timeout_s``: a server wedged by a call
    that timed out must not hold the process (its threads end with it)."""
    stopper = threading.Thread(target=server.stop, name="emerge-sail-stop", daemon=True)
    stopper.start()
    stopper.join(timeout_s)
    if stopper.is_alive():
        log.warning("the embedded Sail server did not stop within %gs; leaving it to the "
                    "process's exit", timeout_s)
    else:
        log.info("embedded Sail server stopped")


def _connect(url: str, timeout_s: float, call_timeout_s: float | None = None,
             s3: S3Settings | None = None) -> SparkSession:
    """A session on ``url``, reachable within ``timeout_s``; each of its engine calls bounded
    by ``call_timeout_s`` (:class:`CallDeadline`; None: unbounded). On Apache Spark the
    session gets emerge's settings (:func:`_spark_settings`, with ``s3``'s)."""
    from pyspark.sql import SparkSession

    deadline = time.monotonic() + timeout_s
    last: Exception | None = None
    while time.monotonic() < deadline:
        try:
            # create(), not getOrCreate(): the latter hands back any active session, even
            # one on another server, and stopping it would stop that one
            spark = SparkSession.builder.remote(url).create()
            traits = engine_traits(spark)
            # everything in emerge is UTC; naming it once keeps Sail from mixing "UTC" and
            # the machine's "Etc/UTC" in one plan (its replaceWhere union then fails)
            spark.conf.set("spark.sql.session.timeZone", "UTC")
            if traits.name == "spark":
                for key, value in _spark_settings(s3).items():
                    spark.conf.set(key, value)
            log.info("engine: %s %s at %s", traits.name, traits.version, url)
            if call_timeout_s is not None:
                spark._emerge_deadline = CallDeadline(spark.client, call_timeout_s)
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
        with embedded_server(s3, engine.mode, engine.session_timeout_s) as url:
            spark = _connect(url, engine.startup_timeout_s, engine.call_timeout_s, s3)
            try:
                yield spark
            finally:
                _stop(spark)
    else:
        spark = _connect(engine.url, engine.startup_timeout_s, engine.call_timeout_s, s3)
        try:
            yield spark
        finally:
            _stop(spark)


def _stop(spark: SparkSession) -> None:
    """End the session; after a call that timed out its channel may be closed already, and
    ending it must not raise over the error that is on its way out."""
    deadline = getattr(spark, "_emerge_deadline", None)
    if deadline is not None:
        deadline.close()
    try:
        spark.stop()
    except Exception as exc:
        log.debug("stopping the Spark session: %s", exc)


@contextmanager
def session_for(cfg: Config) -> Iterator[SparkSession]:
    """The session a configuration asks for (engine URL and S3 settings)."""
    with spark_session(cfg.engine, cfg.s3) as spark:
        yield spark
