#!/usr/bin/env bash
# A real local Airflow for emerge: api-server, scheduler, dag-processor and triggerer as
# separate processes on 127.0.0.1, each stopped by its PID, with the LocalExecutor or,
# with AIRFLOW_EXECUTOR=celery, the CeleryExecutor of the deployment (docker-compose.yaml):
# a Celery worker beside them, Redis as its broker and Postgres as its result backend.
# (`airflow standalone` shuts down only on SIGINT and leaves its workers behind.)
#
#   scripts/airflow-local.sh start    # `make airflow`; `AIRFLOW_EXECUTOR=celery make airflow`
#   scripts/airflow-local.sh stop     # `make airflow-stop`
#   scripts/airflow-local.sh status
#   eval "$(scripts/airflow-local.sh env)"   # the airflow CLI then uses this instance
#
# The metadata database is PostgreSQL when Debian's server is installed (a private
# cluster, started and stopped with Airflow), SQLite otherwise; EMERGE_AIRFLOW_DB=sqlite
# forces SQLite. The CeleryExecutor needs PostgreSQL and Redis (Debian's postgresql and
# redis-server, installed here with apt-get when missing and run as root; a private Redis
# on a free port, started and stopped with Airflow). Settings (environment): AIRFLOW_HOME
# (./airflow_home), AIRFLOW_PORT (8080), AIRFLOW_EXECUTOR (local | celery),
# AIRFLOW_PARALLELISM (4), AIRFLOW_WORKER_CONCURRENCY (celery: 4), plus anything emerge
# reads (EMERGE_CONFIG, EMERGE__*: curation.<route>.workers sizes the curate pools).
# The UI's admin password: $AIRFLOW_HOME/simple_auth_manager_passwords.json.generated
set -euo pipefail

REPO="$(cd "$(dirname "$0")/.." && pwd)"
VENV_BIN="${VENV_BIN:-$REPO/.venv/bin}"
AIRFLOW="${AIRFLOW:-$VENV_BIN/airflow}"
export AIRFLOW_HOME="${AIRFLOW_HOME:-$REPO/airflow_home}"
PORT="${AIRFLOW_PORT:-8080}"
RUN="$AIRFLOW_HOME/run"
LOGS="$AIRFLOW_HOME/logs"
# an instance keeps the executor it was started with (stop, status and env read it)
if [ -s "$RUN/executor" ] && [ "${1:-}" != start ]; then EXECUTOR="$(cat "$RUN/executor")"
else EXECUTOR="${AIRFLOW_EXECUTOR:-local}"; fi
case "$EXECUTOR" in
  local|LocalExecutor) EXECUTOR=local; COMPONENTS=(api-server scheduler dag-processor triggerer) ;;
  celery|CeleryExecutor) EXECUTOR=celery; COMPONENTS=(api-server scheduler dag-processor triggerer worker) ;;
  *) echo "AIRFLOW_EXECUTOR must be local or celery, not $EXECUTOR" >&2; exit 2 ;;
esac

export AIRFLOW__CORE__DAGS_FOLDER="$REPO/dags"
# the UI's extra links of emerge's tasks (plugins/: docs/operations.md)
export AIRFLOW__CORE__PLUGINS_FOLDER="$REPO/plugins"
export AIRFLOW__CORE__LOAD_EXAMPLES=False
if [ "$EXECUTOR" = celery ]; then
  export AIRFLOW__CORE__EXECUTOR=CeleryExecutor
else
  export AIRFLOW__CORE__EXECUTOR=LocalExecutor
fi
export AIRFLOW__CORE__PARALLELISM="${AIRFLOW_PARALLELISM:-4}"
export AIRFLOW__API__HOST=127.0.0.1
export AIRFLOW__API__PORT="$PORT"
export AIRFLOW__API__BASE_URL="http://127.0.0.1:$PORT"
# tasks talk to the api-server's Execution API: without it every task fails
export AIRFLOW__CORE__EXECUTION_API_SERVER_URL="http://127.0.0.1:$PORT/execution/"
# a small machine under load answers slowly: give task→api-server calls time (default 5 s)
export AIRFLOW__WORKERS__EXECUTION_API_TIMEOUT="${AIRFLOW__WORKERS__EXECUTION_API_TIMEOUT:-60}"
export AIRFLOW__WORKERS__EXECUTION_API_RETRIES="${AIRFLOW__WORKERS__EXECUTION_API_RETRIES:-10}"

pg_bin() {  # a folder with the server's tools (Debian keeps them off the PATH)
  local dir
  for dir in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r) \
             "$(dirname "$(command -v initdb 2>/dev/null || echo /nonexistent/x)")"; do
    if [ -x "$dir/initdb" ] && [ -x "$dir/pg_ctl" ] && [ -x "$dir/psql" ] && [ -x "$dir/createdb" ]; then
      echo "$dir"
      return 0
    fi
  done
  return 1
}

as_pg() {  # PostgreSQL refuses to run as root: run its tools as the postgres user then
  if [ "$(id -u)" = 0 ]; then (cd / && runuser -u postgres -- "$@"); else "$@"; fi
}

debian_package() {  # debian_package COMMAND PACKAGE: install Debian's PACKAGE where COMMAND
  # is missing (as root, with apt-get), else say what to install
  local cmd=$1 pkg=$2
  if [ "$cmd" = initdb ]; then pg_bin >/dev/null && return 0; else command -v "$cmd" >/dev/null && return 0; fi
  if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
    echo "AIRFLOW_EXECUTOR=celery needs Debian's $pkg: apt-get install $pkg (as root)" >&2
    exit 1
  fi
  echo "installing Debian's $pkg (AIRFLOW_EXECUTOR=celery needs it)" >&2
  mkdir -p "$LOGS"
  if ! { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
         --no-install-recommends "$pkg"; } >"$LOGS/apt-$pkg.log" 2>&1; then
    echo "apt-get install $pkg failed; see $LOGS/apt-$pkg.log:" >&2
    tail -5 "$LOGS/apt-$pkg.log" >&2
    exit 1
  fi
}

PGDIR="${EMERGE_PG_DIR:-/tmp/emerge-airflow-pg/$(printf '%s' "$AIRFLOW_HOME" | md5sum | cut -c1-12)}"
PGPORT_FILE="$RUN/postgres.port"

free_port() {
  "$VENV_BIN/python" -c "import socket; s = socket.socket(); s.bind(('127.0.0.1', 0)); print(s.getsockname()[1])"
}

port_file() {  # a free port for $1, chosen once per AIRFLOW_HOME and kept
  [ -s "$RUN/$1.port" ] || free_port > "$RUN/$1.port"
  cat "$RUN/$1.port"
}

database() {
  local bin
  bin="$(pg_bin || true)"
  if [ "$EXECUTOR" = celery ] && { [ "${EMERGE_AIRFLOW_DB:-}" = sqlite ] || [ -z "$bin" ]; }; then
    echo "the CeleryExecutor needs PostgreSQL (its result backend), not SQLite" >&2
    exit 1
  fi
  if [ "${EMERGE_AIRFLOW_DB:-}" = sqlite ] || [ -z "$bin" ]; then
    echo "sqlite:///$AIRFLOW_HOME/airflow.db"
    return
  fi
  local pgport
  if [ ! -s "$PGPORT_FILE" ]; then free_port > "$PGPORT_FILE"; fi
  pgport="$(cat "$PGPORT_FILE")"
  if [ ! -f "$PGDIR/data/PG_VERSION" ]; then
    mkdir -p "$PGDIR"
    [ "$(id -u)" = 0 ] && chown postgres "$PGDIR"
    as_pg "$bin/initdb" -D "$PGDIR/data" -U airflow --auth=trust >"$LOGS/postgres-init.log" 2>&1
  fi
  if ! as_pg "$bin/pg_ctl" -D "$PGDIR/data" status >/dev/null 2>&1; then
    as_pg "$bin/pg_ctl" -D "$PGDIR/data" -l "$PGDIR/postgres.log" -w start \
      -o "-p $pgport -k $PGDIR -c listen_addresses=127.0.0.1" >/dev/null
  fi
  if ! as_pg "$bin/psql" -h 127.0.0.1 -p "$pgport" -U airflow -d postgres -tAc \
      "SELECT 1 FROM pg_database WHERE datname = 'airflow'" 2>>"$LOGS/postgres-init.log" | grep -q 1; then
    as_pg "$bin/createdb" -h 127.0.0.1 -p "$pgport" -U airflow airflow >>"$LOGS/postgres-init.log" 2>&1
  fi
  echo "postgresql+psycopg2://airflow@127.0.0.1:$pgport/airflow"
}

alive() { [ -s "$RUN/$1.pid" ] && kill -0 "$(cat "$RUN/$1.pid")" 2>/dev/null; }

# The CeleryExecutor's settings: the same as docker-compose.yaml's (a test holds the two
# together), but for the hosts. Its broker is a private Redis, its result backend the
# metadata database (Postgres). task_acks_late (Airflow's default) does not stop Redis
# from handing a task that runs longer than the visibility timeout to a second worker:
# it must exceed the longest task's execution_timeout (the snapshot DAG's ingest, 3 days)
celery_settings() {
  local redis_port
  redis_port="$(port_file redis)"
  export AIRFLOW__CELERY__BROKER_URL="redis://127.0.0.1:$redis_port/0"
  export AIRFLOW__CELERY__RESULT_BACKEND="db+postgresql://${AIRFLOW__DATABASE__SQL_ALCHEMY_CONN#*://}"
  export AIRFLOW__CELERY__WORKER_CONCURRENCY="${AIRFLOW_WORKER_CONCURRENCY:-4}"
  export AIRFLOW__CELERY_BROKER_TRANSPORT_OPTIONS__VISIBILITY_TIMEOUT=345600
  export AIRFLOW__OPERATORS__DEFAULT_QUEUE=default
  # the worker's log server (Airflow's default 8793) on a port of this instance's own
  export AIRFLOW__LOGGING__WORKER_LOG_SERVER_PORT="$(port_file worker-logs)"
}

# every queue a task of emerge's goes to: default, and curation's per-model queues
# (emerge_lib.airflow.pools); one worker serves them all here
celery_queues() { "$VENV_BIN/python" -c "from emerge_lib.airflow.pools import ALL_QUEUES; print(','.join(ALL_QUEUES))"; }

start_redis() {  # a private Redis, no persistence (the broker holds only queued tasks)
  local port pid
  port="$(port_file redis)"
  mkdir -p "$RUN/redis"
  if [ -s "$RUN/redis.pid" ] && kill -0 "$(cat "$RUN/redis.pid")" 2>/dev/null; then return 0; fi
  rm -f "$RUN/redis-server.pid"
  redis-server --port "$port" --bind 127.0.0.1 --dir "$RUN/redis" --daemonize yes \
    --pidfile "$RUN/redis-server.pid" --logfile "$LOGS/redis.log" --save "" --appendonly no \
    >/dev/null
  # Redis deletes its own pidfile when it exits: keep the pid in a file of ours
  for _ in $(seq 1 100); do
    [ -s "$RUN/redis-server.pid" ] && redis-cli -p "$port" ping 2>/dev/null | grep -q PONG && break
    sleep 0.1
  done
  pid="$(cat "$RUN/redis-server.pid" 2>/dev/null || true)"
  if [ -z "$pid" ] || ! kill -0 "$pid" 2>/dev/null; then
    echo "redis-server did not start; see $LOGS/redis.log:" >&2
    tail -5 "$LOGS/redis.log" >&2
    exit 1
  fi
  echo "$pid" > "$RUN/redis.pid"
}

stop_redis() {
  local pid
  [ -s "$RUN/redis.pid" ] || return 0
  pid="$(cat "$RUN/redis.pid")"
  if kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$pid" 2>/dev/null && { echo "redis: pid $pid still running; killing it" >&2; kill -KILL "$pid" 2>/dev/null || true; }
  fi
  rm -f "$RUN/redis.pid"
}

api_connection() {
  # A backfill run waiting for a dump asks the REST API whether its backfill was cancelled
  # (Airflow's cancel fails only queued runs): a read-only user of the simple auth manager,
  # `emerge`, its password kept beside the admin's, and the emerge_airflow_api connection
  # naming it, for every component (an environment connection: no database write). With
  # another auth manager, or users of one's own, create that connection by hand.
  case "${AIRFLOW__CORE__AUTH_MANAGER:-simple}" in *[Ss]imple*) ;; *) return 0 ;; esac
  export AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS="${AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS:-admin:admin,emerge:viewer}"
  case ",$AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS," in *,emerge:*) ;; *) return 0 ;; esac
  AIRFLOW_CONN_EMERGE_AIRFLOW_API="$("$VENV_BIN/python" - "${AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE:-$AIRFLOW_HOME/simple_auth_manager_passwords.json.generated}" "http://127.0.0.1:$PORT" <<'PY'
import json, os, secrets, sys
path, url = sys.argv[1:]
# the simple auth manager keeps what this file holds and generates only missing passwords
passwords = json.load(open(path)) if os.path.exists(path) and os.path.getsize(path) else {}
passwords.setdefault("emerge", secrets.token_urlsafe(16))
with open(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as out:
    json.dump(passwords, out)
print(json.dumps({"conn_type": "http", "host": url, "login": "emerge",
                  "password": passwords["emerge"]}))
PY
)"
  export AIRFLOW_CONN_EMERGE_AIRFLOW_API
}

start() {
  mkdir -p "$RUN" "$LOGS"
  for c in api-server scheduler dag-processor triggerer worker; do
    if alive "$c"; then echo "airflow $c already running (pid $(cat "$RUN/$c.pid")); make airflow-stop first" >&2; exit 1; fi
  done
  echo "$EXECUTOR" > "$RUN/executor"
  if [ "$EXECUTOR" = celery ]; then
    debian_package initdb postgresql
    debian_package redis-server redis-server
  fi
  AIRFLOW__DATABASE__SQL_ALCHEMY_CONN="$(database)"
  export AIRFLOW__DATABASE__SQL_ALCHEMY_CONN
  echo "$AIRFLOW__DATABASE__SQL_ALCHEMY_CONN" > "$RUN/database"
  if [ "$EXECUTOR" = celery ]; then
    celery_settings
    start_redis
  fi
  "$AIRFLOW" db migrate >"$LOGS/db-migrate.log" 2>&1 || { tail -20 "$LOGS/db-migrate.log" >&2; exit 1; }
  api_connection
  # a task naming a missing pool waits forever: curation's pools (one per model, a slot
  # per server of it: curation.<route>.workers) before anything is scheduled
  "$VENV_BIN/python" -m emerge_lib.airflow.pools > "$RUN/pools.json" \
    || { echo "cannot read the configuration's curation workers (EMERGE_CONFIG)" >&2; exit 1; }
  "$AIRFLOW" pools import "$RUN/pools.json" >"$LOGS/pools.log" 2>&1 || { tail -20 "$LOGS/pools.log" >&2; exit 1; }
  for c in "${COMPONENTS[@]}"; do
    local args=("$c")
    [ "$c" = api-server ] && args+=(--host 127.0.0.1 --port "$PORT")
    [ "$c" = worker ] && args=(celery worker --queues "$(celery_queues)" --concurrency
                               "$AIRFLOW__CELERY__WORKER_CONCURRENCY" --celery-hostname "emerge@%h")
    nohup "$AIRFLOW" "${args[@]}" >"$LOGS/$c.log" 2>&1 &
    echo $! > "$RUN/$c.pid"
  done
  for _ in $(seq 1 180); do
    if curl -fsS "http://127.0.0.1:$PORT/api/v2/monitor/health" >/dev/null 2>&1; then break; fi
    for c in "${COMPONENTS[@]}"; do
      alive "$c" || { echo "airflow $c exited; see $LOGS/$c.log:" >&2; tail -20 "$LOGS/$c.log" >&2; stop; exit 1; }
    done
    sleep 1
  done
  curl -fsS "http://127.0.0.1:$PORT/api/v2/monitor/health" >/dev/null || { echo "api-server did not answer" >&2; stop; exit 1; }
  if [ "$EXECUTOR" = celery ]; then  # the worker has joined the broker (it answers a ping)
    local ok=0
    for _ in $(seq 1 90); do
      alive worker || { echo "airflow worker exited; see $LOGS/worker.log:" >&2; tail -20 "$LOGS/worker.log" >&2; stop; exit 1; }
      if "$VENV_BIN/celery" --app airflow.providers.celery.executors.celery_executor.app \
           inspect ping --timeout 5 -d "emerge@$(hostname)" >/dev/null 2>&1; then ok=1; break; fi
      sleep 2
    done
    [ "$ok" = 1 ] || { echo "the Celery worker did not answer a ping; see $LOGS/worker.log" >&2; stop; exit 1; }
  fi
  echo "Airflow is up: http://127.0.0.1:$PORT (${AIRFLOW__CORE__EXECUTOR}; database: ${AIRFLOW__DATABASE__SQL_ALCHEMY_CONN%%:*})"
  echo "  pids:   $(for c in "${COMPONENTS[@]}"; do printf '%s=%s ' "$c" "$(cat "$RUN/$c.pid")"; done)"
  echo "  logs:   $LOGS"
  echo "  login:  admin, password in $AIRFLOW_HOME/simple_auth_manager_passwords.json.generated"
  echo "  stop:   make airflow-stop"
}

descendants() {  # every process below $1 (task runners, uvicorn and gunicorn workers)
  local child
  for child in $(ps -o pid= --ppid "$1" 2>/dev/null); do
    echo "$child"
    descendants "$child"
  done
}

stop_pids() {  # SIGTERM to the named components at once, up to $1 seconds for them to
  # exit, then SIGKILL to what is left of them and of their children
  local grace=$1 name pid left
  shift
  local pids=() tree=()
  for name in "$@"; do
    [ -s "$RUN/$name.pid" ] || continue
    pid="$(cat "$RUN/$name.pid")"
    if kill -0 "$pid" 2>/dev/null; then
      pids+=("$pid")
      mapfile -t -O "${#tree[@]}" tree < <(descendants "$pid")
      kill -TERM "$pid" 2>/dev/null || true
    fi
  done
  for _ in $(seq 1 $((grace * 5))); do
    left=0
    for pid in "${pids[@]}"; do kill -0 "$pid" 2>/dev/null && left=1; done
    [ "$left" = 0 ] && break
    sleep 0.2
  done
  for pid in "${pids[@]}" "${tree[@]}"; do
    if kill -0 "$pid" 2>/dev/null; then
      echo "airflow: pid $pid still running after ${grace}s; killing it" >&2
      kill -KILL "$pid" 2>/dev/null || true
    fi
  done
  for _ in $(seq 1 30); do  # a killed process is gone once the kernel has reaped it
    left=0
    for pid in "${pids[@]}" "${tree[@]}"; do
      [ -d "/proc/$pid" ] && ! grep -q '^State:.*Z' "/proc/$pid/status" 2>/dev/null && left=1
    done
    [ "$left" = 0 ] && break
    sleep 0.1
  done
  for name in "$@"; do rm -f "$RUN/$name.pid"; done
}

stop() {
  # the scheduler, triggerer and dag-processor together (the scheduler's LocalExecutor
  # workers exit with it; a Celery worker's warm shutdown lets its running tasks end
  # within the grace), the api-server last (tasks report to it); under 15 s in all
  stop_pids 8 worker scheduler triggerer dag-processor
  stop_pids 4 api-server
  stop_redis
  local bin
  bin="$(pg_bin || true)"
  if [ -n "$bin" ] && [ -f "$PGDIR/data/PG_VERSION" ]; then
    as_pg "$bin/pg_ctl" -D "$PGDIR/data" -m fast -w stop >/dev/null 2>&1 || true
  fi
  echo "Airflow stopped"
}

status() {
  for c in "${COMPONENTS[@]}"; do
    if alive "$c"; then echo "$c: running (pid $(cat "$RUN/$c.pid"))"; else echo "$c: stopped"; fi
  done
  if [ "$EXECUTOR" = celery ]; then
    if alive redis; then echo "redis: running (pid $(cat "$RUN/redis.pid"))"; else echo "redis: stopped"; fi
  fi
}

print_env() {  # for `eval "$(scripts/airflow-local.sh env)"`: the CLI then talks to this Airflow
  local db c running=0
  for c in "${COMPONENTS[@]}"; do alive "$c" && running=1; done
  if [ "$running" = 0 ]; then  # else the CLI would silently use a new, empty database
    echo "no Airflow of emerge is running under AIRFLOW_HOME=$AIRFLOW_HOME: start it with" \
         "make airflow, or set AIRFLOW_HOME to the folder it was started with" >&2
    exit 1
  fi
  db="$(cat "$RUN/database" 2>/dev/null || echo "sqlite:///$AIRFLOW_HOME/airflow.db")"
  export AIRFLOW__DATABASE__SQL_ALCHEMY_CONN="$db"
  local vars=(AIRFLOW_HOME AIRFLOW__CORE__DAGS_FOLDER AIRFLOW__CORE__PLUGINS_FOLDER
              AIRFLOW__CORE__LOAD_EXAMPLES AIRFLOW__CORE__EXECUTOR AIRFLOW__API__BASE_URL
              AIRFLOW__CORE__EXECUTION_API_SERVER_URL AIRFLOW__DATABASE__SQL_ALCHEMY_CONN)
  if [ "$EXECUTOR" = celery ]; then
    celery_settings
    vars+=(AIRFLOW__CELERY__BROKER_URL AIRFLOW__CELERY__RESULT_BACKEND
           AIRFLOW__CELERY__WORKER_CONCURRENCY AIRFLOW__OPERATORS__DEFAULT_QUEUE
           AIRFLOW__CELERY_BROKER_TRANSPORT_OPTIONS__VISIBILITY_TIMEOUT)
  fi
  for v in "${vars[@]}"; do
    printf 'export %s=%q\n' "$v" "${!v}"
  done
}

case "${1:-}" in
  start) start ;;
  env) print_env ;;
  stop) stop ;;
  status) status ;;
  *) echo "usage: $0 start|stop|status|env" >&2; exit 2 ;;
esac
