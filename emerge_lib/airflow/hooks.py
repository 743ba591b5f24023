"""Connections → emerge configuration: the engine, the LLM workers, S3.

Each hook reads one Airflow connection and returns configuration overrides (plain data
for ``emerge_lib.pipeline.runs.SnapshotRun``); a connection that does not exist adds nothing, so
the YAML file and the ``EMERGE__*`` environment decide, as for the CLI.

- ``emerge_engine`` (type ``emerge_engine``, registered by the provider entry point; any
  type works): host ``embedded`` (or empty) starts Sail
  inside the task (extra ``{"mode": "local-cluster"}`` for Sail's cluster execution path);
  any other host is a Spark Connect server, ``sc://HOST:PORT`` (port 15002 by default): a
  Sail server (``sail spark server``, one node or a cluster) or Spark 4 with delta-spark;
  the password, when set, is sent as the Spark Connect token; extra ``params`` adds
  ``;key=value`` URL parameters (``{"use_ssl": "true"}``).
- ``emerge_llm`` (type ``emerge_llm``, or ``http``): the OpenAI-compatible workers (vLLM on GPUs, llama.cpp
  locally): ``http(s)://HOST:PORT`` + extra ``path`` (default ``/v1``) serves both
  curation routes unless extra ``additions``/``deprecations`` give a route of their own
  (``{"url", "model", "name", "backend"}``); extra ``backend`` (vllm | llamacpp |
  openai), ``model`` (the served name; the release then records it as the judge),
  ``concurrency`` (requests in flight); the password is the API key.
- ``emerge_s3`` (``aws``, the amazon provider's): credentials, region and extra
  ``endpoint_url`` (SeaweedFS, MinIO) become the ``s3`` settings Sail and delta-rs use,
  and its boto3 session is handed to the stages that upload (publish).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from airflow.sdk import BaseHook
from airflow.sdk.exceptions import AirflowNotFoundException

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from emerge_lib.core.config import Config

ENGINE_CONN = "emerge_engine"
LLM_CONN = "emerge_llm"
S3_CONN = "emerge_s3"


def mask_in_task_logs() -> None:
    """Every secret emerge knows (the configuration's, the connections', credential-named
    environment variables), now and later, masked by Airflow's secrets masker too: a task's
    log lines (an error quoting an endpoint's answer that quoted the API key) pass
    Airflow's masker, not emerge's formatter."""
    from airflow.sdk.log import mask_secret

    from emerge_lib.core.logs import also_mask_with

    also_mask_with(mask_secret)


def _credentials(extra: object) -> Iterator[str]:
    """The credential-named string values of a connection's extra, nested ones too (a
    route's own ``api_key`` under ``deprecations``)."""
    from emerge_lib.core.logs import SECRET_NAME

    if isinstance(extra, dict):
        for key, value in extra.items():
            if isinstance(value, str) and SECRET_NAME.search(str(key)):
                yield value
            else:
                yield from _credentials(value)
    elif isinstance(extra, list):
        for value in extra:
            yield from _credentials(value)


def _connection(conn_id: str) -> Any | None:
    """The connection, its secrets (the password, any credential-named extra) masked in
    every later line of the task's log, by emerge's formatter and by Airflow's masker."""
    from emerge_lib.core.logs import register_secrets

    mask_in_task_logs()
    try:
        conn = BaseHook.get_connection(conn_id)
    except AirflowNotFoundException:
        return None
    register_secrets([conn.password, *_credentials(conn.extra_dejson or {})])
    return conn


class EngineHook(BaseHook):
    """The engine a task's Spark session runs on, from the ``emerge_engine`` connection."""

    conn_name_attr = "conn_id"
    default_conn_name = ENGINE_CONN
    conn_type = "emerge_engine"
    hook_name = "emerge engine"

    def __init__(self, conn_id: str = ENGINE_CONN) -> None:
        super().__init__()
        self.conn_id = conn_id

    def overrides(self) -> dict[str, Any]:
        """``{"engine": {...}}``, or {} without the connection."""
        conn = _connection(self.conn_id)
        if conn is None:
            return {}
        extra = conn.extra_dejson or {}
        host = (conn.host or "").strip()
        if host in ("", "embedded"):
            engine: dict[str, Any] = {"url": "embedded"}
            if extra.get("mode"):
                engine["mode"] = extra["mode"]
        else:
            host = host.removeprefix("sc://")
            params = dict(extra.get("params") or {})
            if conn.password:
                params["token"] = conn.password
            tail = "".join(f";{k}={v}" for k, v in params.items())
            engine = {"url": f"sc://{host}:{conn.port or 15002}" + (f"/{tail}" if tail else "")}
        for key in ("startup_timeout_s", "call_timeout_s"):
            if extra.get(key):
                engine[key] = float(extra[key])
        return {"engine": engine}

    @contextmanager
    def session(self, cfg: Config) -> Iterator[SparkSession]:
        """A Spark session for ``cfg`` (whose engine these overrides already set)."""
        from emerge_lib.core.engine import session_for

        with session_for(cfg) as spark:
            yield spark


class LLMWorkersHook(BaseHook):
    """Where curation's LLM workers are served, from the ``emerge_llm`` connection."""

    conn_name_attr = "conn_id"
    default_conn_name = LLM_CONN
    conn_type = "emerge_llm"
    hook_name = "emerge LLM workers"

    def __init__(self, conn_id: str = LLM_CONN) -> None:
        super().__init__()
        self.conn_id = conn_id

    def overrides(self) -> dict[str, Any]:
        """``{"curation": {...}}`` (endpoints, not ``enabled``), or {} without the connection."""
        conn = _connection(self.conn_id)
        if conn is None:
            return {}
        extra = conn.extra_dejson or {}
        route: dict[str, Any] = {}
        if conn.host:
            scheme = conn.schema or "http"
            port = f":{conn.port}" if conn.port else ""
            route["url"] = f"{scheme}://{conn.host}{port}{extra.get('path', '/v1')}"
        if extra.get("backend"):
            route["backend"] = extra["backend"]
        if extra.get("model"):  # one served model: the release records it as the judge
            route |= {"name": extra["model"], "model": extra["model"]}
        if conn.password:
            route["api_key"] = conn.password
        curation: dict[str, Any] = {}
        for judge in ("additions", "deprecations"):
            own = dict(extra.get(judge) or {})
            if route or own:
                curation[judge] = {**route, **own}
        for key in ("concurrency", "timeout_s", "retries", "max_requests"):
            if extra.get(key) is not None:
                curation[key] = extra[key]
        return {"curation": curation} if curation else {}


class EmergeS3:
    """S3 through the amazon provider's ``emerge_s3`` connection, asked once for all this
    object's uses (its overrides, its session, its client)."""

    def __init__(self, conn_id: str = S3_CONN) -> None:
        self.conn_id = conn_id
        self._hooked: tuple[Any | None] | None = None

    def _hook(self) -> Any | None:
        if self._hooked is None:
            conn = _connection(self.conn_id)
            self._hooked = (None if conn is None else _s3_hook(conn, self.conn_id),)
        return self._hooked[0]

    def overrides(self) -> dict[str, Any]:
        """``{"s3": {...}}`` (endpoint, region, keys), or {} without the connection."""
        hook = self._hook()
        if hook is None:
            return {}
        wrapper = hook.conn_config
        s3: dict[str, Any] = {}
        endpoint = wrapper.get_service_endpoint_url("s3") or wrapper.endpoint_url
        if endpoint:
            s3["endpoint_url"] = endpoint
        if wrapper.region_name:
            s3["region"] = wrapper.region_name
        if wrapper.aws_access_key_id:
            s3["access_key_id"] = wrapper.aws_access_key_id
            s3["secret_access_key"] = wrapper.aws_secret_access_key
        return {"s3": s3} if s3 else {}

    def session(self) -> Any | None:
        """The connection's boto3 Session (None without the connection)."""
        hook = self._hook()
        return None if hook is None else hook.get_session()

    def client(self) -> Any | None:
        """A boto3 S3 client on the connection's endpoint (None without the connection)."""
        hook = self._hook()
        return None if hook is None else hook.get_conn()


def _s3_hook(conn: Any, conn_id: str) -> Any:
    """The amazon provider's S3Hook on a connection already fetched (it would ask
    Airflow for it again)."""
    from airflow.providers.amazon.aws.hooks.s3 import S3Hook

    class FetchedS3Hook(S3Hook):
        def get_connection(self, conn_id: str) -> Any:
            return conn

    return FetchedS3Hook(aws_conn_id=conn_id)


def connection_overrides(s3: EmergeS3 | None = None) -> dict[str, Any]:
    """What every connection adds, merged (engine, curation endpoints, s3)."""
    out: dict[str, Any] = {}
    for part in (EngineHook().overrides(), LLMWorkersHook().overrides(),
                 (s3 or EmergeS3()).overrides()):
        out.update(part)
    return out


def connections() -> tuple[dict[str, Any], Any | None]:
    """Each connection asked once: what they add to the configuration
    (:func:`connection_overrides`) and the S3 connection's boto3 session (None without
    it)."""
    s3 = EmergeS3()
    return connection_overrides(s3), s3.session()
