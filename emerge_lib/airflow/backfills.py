"""Whether a run's backfill was cancelled, from Airflow's public REST API.

Airflow 3.3's cancel (the Backfills page's Cancel, ``PUT /api/v2/backfills/{id}/cancel``)
pauses the backfill, fails its *queued* runs and marks it completed; a run of it that is
already running is left alone, so a snapshot run waiting (deferred) for a dump still being
written would wait on for weeks. Neither a task nor a trigger can read backfills through
the task SDK (the Execution API has no route for them, and the metadata database is closed
to both), so the wait asks the public API, as the UI does: it finds its run's backfill
when it defers (one backfill of a DAG is active at a time; its range holds the run's
logical date) and its trigger asks every ``CANCEL_POLL_S`` whether that backfill has
been completed while the run still waits, which only a cancel does (a backfill completes
on its own only once none of its runs is running).

Where the API is: the ``emerge_airflow_api`` connection (host: the api-server's URL;
login and password: a user that may read backfills, exchanged for a token at
``/auth/token``, which the simple and FAB auth managers serve); else ``[api] base_url``
with no credentials. `make airflow` sets the connection (a read-only ``emerge`` user of
the simple auth manager) for every component.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

import httpx

API_CONN = "emerge_airflow_api"
#: how often a waiting backfill run asks whether its backfill was cancelled (a GET of one
#: small row); the run ends within about this long of the cancel
CANCEL_POLL_S = 10.0
TIMEOUT_S = 30.0


class ApiUnavailable(Exception):
    """The REST API did not answer, or refused these credentials (one line, for the log)."""


def _when(text: str | None) -> datetime | None:
    return datetime.fromisoformat(text) if text else None


@dataclass(frozen=True)
class AirflowApi:
    url: str  # the api-server's root, http://HOST:PORT
    login: str | None = None
    password: str | None = None

    @classmethod
    def configured(cls) -> AirflowApi:
        """From the ``emerge_airflow_api`` connection, else ``[api] base_url``."""
        from airflow.sdk import BaseHook
        from airflow.sdk.exceptions import AirflowNotFoundException

        try:
            conn = BaseHook.get_connection(API_CONN)
        except AirflowNotFoundException:
            conn = None
        if conn is not None and conn.host:
            host = conn.host if "://" in conn.host else f"{conn.schema or 'http'}://{conn.host}"
            port = f":{conn.port}" if conn.port else ""
            return cls(host.rstrip("/") + port, conn.login or None, conn.password or None)
        from airflow.configuration import conf

        return cls(conf.get("api", "base_url", fallback="http://127.0.0.1:8080").rstrip("/"))

    def _get(self, path: str, **params: Any) -> Any:
        try:
            with httpx.Client(base_url=self.url, timeout=TIMEOUT_S) as client:
                headers = {}
                if self.login:
                    token = client.post("/auth/token", json={"username": self.login,
                                                              "password": self.password or ""})
                    token.raise_for_status()
                    headers["Authorization"] = f"Bearer {token.json()['access_token']}"
                resp = client.get(f"/api/v2{path}", params=params, headers=headers)
                resp.raise_for_status()
                return resp.json()
        except (httpx.HTTPError, KeyError, ValueError) as exc:
            raise ApiUnavailable(f"Airflow's REST API at {self.url} ({API_CONN} connection): "
                                 f"{type(exc).__name__}: {exc}".splitlines()[0]) from None

    def backfill_of(self, dag_id: str, logical_date: datetime) -> dict[str, Any] | None:
        """The backfill a run of ``dag_id`` at ``logical_date`` belongs to (``pick``)."""
        return pick(self._get("/backfills", dag_id=dag_id, limit=100,
                              order_by="-id").get("backfills", []), logical_date)

    def cancelled(self, backfill_id: int) -> str | None:
        """Why the run should stop (its backfill was cancelled), or None."""
        return cancel_reason(self._get(f"/backfills/{backfill_id}"))


def pick(backfills: list[dict[str, Any]], logical_date: datetime) -> dict[str, Any] | None:
    """Of a DAG's backfills (the API's records), the one a running run at
    ``logical_date`` belongs to: the active one whose range holds that date (Airflow
    allows one active backfill per DAG), else, when it was cancelled meanwhile, the
    newest that holds it."""
    holding = sorted((b for b in backfills
                      if _when(b["from_date"]) <= logical_date <= _when(b["to_date"])),
                     key=lambda b: -int(b["id"]))
    active = [b for b in holding if b.get("completed_at") is None]
    return (active or holding or [None])[0]


def cancel_reason(backfill: dict[str, Any]) -> str | None:
    """One line when ``backfill`` (the API's record) is completed while its run still
    waits: only a cancel completes a backfill with a running run."""
    if backfill.get("completed_at") is None:
        return None
    span = f"{backfill['from_date'][:10]} to {backfill['to_date'][:10]}"
    return (f"backfill {backfill['id']} of {backfill['dag_id']} ({span}) was cancelled at "
            f"{backfill['completed_at'][:19].replace('T', ' ')} UTC")
