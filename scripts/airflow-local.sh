#!/usr/bin/env bash
# A real local Airflow for emerge: api-server, scheduler, dag-processor and triggerer as
# four separate processes (LocalExecutor) on 127.0.0.1, each stopped by its PID.
# (`airflow standalone` shuts down only on SIGINT and leaves its workers behind.)
#
#   scripts/airflow-local.sh start    # `make airflow`
#   scripts/airflow-local.sh stop     # `make airflow-stop`
#   scripts/airflow-local.sh status
#   eval "$(scripts/airflow-local.sh env)"   # the airflow CLI then uses this instance
#
# The metadata database is PostgreSQL when Debian's server is installed (a private
# cluster, started and stopped with Airflow), SQLite otherwise; EMERGE_AIRFLOW_DB=sqlite
# forces SQLite. Settings (environment): AIRFLOW_HOME (./airflow_home), AIRFLOW_PORT
# (8080), EMERGE_LLM_SLOTS (slots of the emerge_llm pool: one per GPU worker; 1),
# AIRFLOW_PARALLELISM (4), plus anything emerge reads (EMERGE_CONFIG, EMERGE__*).
# The UI's admin password: $AIRFLOW_HOME/simple_auth_manager_passwords.json.generated
set -euo pipefail

REPO="$(cd "$(dirname "$0")/.." && pwd)"
VENV_BIN="${VENV_BIN:-$REPO/.venv/bin}"
AIRFLOW="${AIRFLOW:-$VENV_BIN/airflow}"
export AIRFLOW_HOME="${AIRFLOW_HOME:-$REPO/airflow_home}"
PORT="${AIRFLOW_PORT:-8080}"
RUN="$AIRFLOW_HOME/run"
LOGS="$AIRFLOW_HOME/logs"
COMPONENTS=(api-server scheduler dag-processor triggerer)

export AIRFLOW__CORE__DAGS_FOLDER="$REPO/dags"
export AIRFLOW__CORE__LOAD_EXAMPLES=False
export AIRFLOW__CORE__EXECUTOR=LocalExecutor
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

PGDIR="${EMERGE_PG_DIR:-/tmp/emerge-airflow-pg/$(printf '%s' "$AIRFLOW_HOME" | md5sum | cut -c1-12)}"
PGPORT_FILE="$RUN/postgres.port"

free_port() {
  "$VENV_BIN/python" -c "import socket; s = socket.socket(); s.bind(('127.0.0.1', 0)); print(s.getsockname()[1])"
}

database() {
  local bin
  bin="$(pg_bin || true)"
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
  for c in "${COMPONENTS[@]}"; do
    if alive "$c"; then echo "airflow $c already running (pid $(cat "$RUN/$c.pid")); make airflow-stop first" >&2; exit 1; fi
  done
  AIRFLOW__DATABASE__SQL_ALCHEMY_CONN="$(database)"
  export AIRFLOW__DATABASE__SQL_ALCHEMY_CONN
  echo "$AIRFLOW__DATABASE__SQL_ALCHEMY_CONN" > "$RUN/database"
  "$AIRFLOW" db migrate >"$LOGS/db-migrate.log" 2>&1 || { tail -20 "$LOGS/db-migrate.log" >&2; exit 1; }
  api_connection
  # a task naming a missing pool waits forever: create it before anything is scheduled
  "$AIRFLOW" pools set emerge_llm "${EMERGE_LLM_SLOTS:-1}" "curation: one slot per GPU LLM worker" >/dev/null
  for c in "${COMPONENTS[@]}"; do
    local args=()
    [ "$c" = api-server ] && args=(--host 127.0.0.1 --port "$PORT")
    nohup "$AIRFLOW" "$c" "${args[@]}" >"$LOGS/$c.log" 2>&1 &
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
  echo "Airflow is up: http://127.0.0.1:$PORT (database: ${AIRFLOW__DATABASE__SQL_ALCHEMY_CONN%%:*})"
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
  # workers exit with it), the api-server last (tasks report to it); under 15 s in all
  stop_pids 8 scheduler triggerer dag-processor
  stop_pids 4 api-server
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
  for v in AIRFLOW_HOME AIRFLOW__CORE__DAGS_FOLDER \
           AIRFLOW__CORE__LOAD_EXAMPLES AIRFLOW__CORE__EXECUTOR AIRFLOW__API__BASE_URL \
           AIRFLOW__CORE__EXECUTION_API_SERVER_URL; do
    printf 'export %s=%q\n' "$v" "${!v}"
  done
  printf 'export AIRFLOW__DATABASE__SQL_ALCHEMY_CONN=%q\n' "$db"
}

case "${1:-}" in
  start) start ;;
  env) print_env ;;
  stop) stop ;;
  status) status ;;
  *) echo "usage: $0 start|stop|status|env" >&2; exit 2 ;;
esac
