#!/usr/bin/env bash
# Label Studio for emerge's human annotation (docs/annotation.md): one server on 127.0.0.1,
# in its own virtualenv (make labelstudio: .venv-labelstudio; its pins differ from emerge's),
# started with a generated admin password and API token, stopped by its PID.
#
#   scripts/labelstudio-local.sh start    # `make labelstudio-start`
#   scripts/labelstudio-local.sh stop     # `make labelstudio-stop`
#   scripts/labelstudio-local.sh status
#   scripts/labelstudio-local.sh seed     # `make labelstudio`: the migrated empty database
#   eval "$(scripts/labelstudio-local.sh env)"   # LABEL_STUDIO_URL, LABEL_STUDIO_API_KEY
#
# Settings (environment): LABEL_STUDIO_HOME (./.labelstudio: data/ holds the SQLite database
# and uploads, run/ the pid, port and credentials, labelstudio.log), LABEL_STUDIO_PORT (a
# free port when unset), LS_VENV_BIN (./.venv-labelstudio/bin), LS_PARENT_PID (a process
# the server dies with: a watchdog stops it when that pid is gone, as the test session's
# kit asks; unset, the server runs until `stop`, as `make labelstudio-start` wants). The admin is
# admin@emerge.local; password and token are generated at the first start (run/, mode 600)
# and kept with the data. Legacy tokens are enabled (the REST API's `Authorization: Token`,
# which Label Studio 1.23 turns off by default, and only decides when the data is created);
# the version check, telemetry and Sentry are off; signup needs the organization's invite link.
# A fresh data folder starts from the seed `make labelstudio` made (Django's migrations run
# once there: about 40 s on 2 cores; a start from the seed takes seconds).
set -euo pipefail

REPO="$(cd "$(dirname "$0")/.." && pwd)"
LS_BIN="${LS_VENV_BIN:-$REPO/.venv-labelstudio/bin}"
HOME_DIR="${LABEL_STUDIO_HOME:-$REPO/.labelstudio}"
RUN="$HOME_DIR/run"
DATA="$HOME_DIR/data"
LOG="$HOME_DIR/labelstudio.log"
ADMIN=admin@emerge.local
SEED="${LS_SEED:-$LS_BIN/../seed-data}"

alive() { [ -s "$RUN/labelstudio.pid" ] && kill -0 "$(cat "$RUN/labelstudio.pid")" 2>/dev/null; }

py() { "$LS_BIN/python" -c "$1"; }

start() {
  if alive; then echo "Label Studio already running (pid $(cat "$RUN/labelstudio.pid")); stop it first" >&2; exit 1; fi
  [ -x "$LS_BIN/label-studio" ] || { echo "no Label Studio at $LS_BIN: run make labelstudio" >&2; exit 1; }
  mkdir -p "$RUN"
  if [ ! -e "$DATA/label_studio.sqlite3" ] && [ -s "$SEED/label_studio.sqlite3" ]; then
    mkdir -p "$DATA" && cp -a "$SEED/." "$DATA/"  # migrated, no user: created at this start
  fi
  mkdir -p "$DATA"
  (umask 077
   [ -s "$RUN/token" ] || py "import secrets; print(secrets.token_hex(20))" > "$RUN/token"
   [ -s "$RUN/password" ] || py "import secrets; print(secrets.token_urlsafe(18))" > "$RUN/password")
  local port="${LABEL_STUDIO_PORT:-}"
  [ -n "$port" ] || port="$(py "import socket; s = socket.socket(); s.bind(('127.0.0.1', 0)); print(s.getsockname()[1])")"
  # a clean environment: Label Studio also reads bare USERNAME, PASSWORD, HOST, PORT, DEBUG
  setsid env -i PATH="$LS_BIN:/usr/bin:/bin" HOME="$HOME_DIR" LANG=C.UTF-8 PYTHONUNBUFFERED=1 \
    LABEL_STUDIO_BASE_DATA_DIR="$DATA" \
    LABEL_STUDIO_USERNAME="$ADMIN" LABEL_STUDIO_PASSWORD="$(cat "$RUN/password")" \
    LABEL_STUDIO_USER_TOKEN="$(cat "$RUN/token")" \
    LABEL_STUDIO_ENABLE_LEGACY_API_TOKEN=true LABEL_STUDIO_DISABLE_SIGNUP_WITHOUT_LINK=true \
    LATEST_VERSION_CHECK=false COLLECT_ANALYTICS=false SENTRY_DSN= FRONTEND_SENTRY_DSN= \
    "$LS_BIN/label-studio" start --no-browser --internal-host 127.0.0.1 --port "$port" \
    --log-level WARNING >"$LOG" 2>&1 < /dev/null &
  echo $! > "$RUN/labelstudio.pid"
  if [ -n "${LS_PARENT_PID:-}" ]; then  # the watchdog: the server's group goes with that pid
    local server=$!
    setsid bash -c 'while kill -0 "$1" 2>/dev/null && kill -0 "$2" 2>/dev/null; do sleep 1; done
      kill -TERM -- "-$2" 2>/dev/null; sleep 10; kill -KILL -- "-$2" 2>/dev/null' \
      watchdog "$LS_PARENT_PID" "$server" >/dev/null 2>&1 < /dev/null &
  fi
  local started=$SECONDS
  for _ in $(seq 1 600); do
    alive || { echo "Label Studio exited; see $LOG:" >&2; tail -20 "$LOG" >&2; rm -f "$RUN/labelstudio.pid"; exit 1; }
    # it moves to the next port silently when this one is taken: read the one it serves
    local served
    served="$(grep -o 'http://127.0.0.1:[0-9]*' "$LOG" 2>/dev/null | tail -1 | cut -d: -f3 || true)"
    served="${served:-$port}"
    if curl -fsS "http://127.0.0.1:$served/health" >/dev/null 2>&1; then
      port="$served"
      echo "$port" > "$RUN/port"
      echo "Label Studio is up: http://127.0.0.1:$port ($((SECONDS - started)) s)"
      echo "  pid:    $(cat "$RUN/labelstudio.pid")   log: $LOG"
      echo "  login:  $ADMIN, password in $RUN/password; API token in $RUN/token"
      echo "  stop:   make labelstudio-stop"
      return 0
    fi
    sleep 0.5
  done
  echo "Label Studio did not answer in 300 s; see $LOG" >&2
  stop
  exit 1
}

stop() {
  if ! [ -s "$RUN/labelstudio.pid" ]; then echo "Label Studio is not running"; return 0; fi
  local pid
  pid="$(cat "$RUN/labelstudio.pid")"
  kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true  # its process group
  for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
  if kill -0 "$pid" 2>/dev/null; then
    echo "Label Studio (pid $pid) still running after 10 s; killing it" >&2
    kill -KILL -- "-$pid" 2>/dev/null || kill -KILL "$pid" 2>/dev/null || true
  fi
  rm -f "$RUN/labelstudio.pid" "$RUN/port"
  echo "Label Studio stopped"
}

seed() {  # the migrated, empty database every new data folder starts from (no user, no key)
  [ -x "$LS_BIN/python" ] || { echo "no Label Studio at $LS_BIN" >&2; exit 1; }
  local manage tmp
  manage="$("$LS_BIN/python" -c 'import label_studio, os; print(os.path.dirname(label_studio.__file__))')/manage.py"
  tmp="$SEED.partial"
  rm -rf "$tmp" && mkdir -p "$tmp"
  env -i PATH="$LS_BIN:/usr/bin:/bin" HOME="$tmp" LANG=C.UTF-8 LABEL_STUDIO_BASE_DATA_DIR="$tmp" \
    LATEST_VERSION_CHECK=false COLLECT_ANALYTICS=false SENTRY_DSN= FRONTEND_SENTRY_DSN= \
    DJANGO_SETTINGS_MODULE=core.settings.label_studio \
    "$LS_BIN/python" "$manage" migrate --noinput >"$tmp.log" 2>&1 || { tail -20 "$tmp.log" >&2; exit 1; }
  rm -f "$tmp/.env" "$tmp.log"  # its generated SECRET_KEY: each data folder makes its own
  rm -rf "$SEED" && mv "$tmp" "$SEED"
  echo "Label Studio seed database: $SEED"
}

status() {
  if alive; then echo "labelstudio: running (pid $(cat "$RUN/labelstudio.pid"), http://127.0.0.1:$(cat "$RUN/port" 2>/dev/null))"
  else echo "labelstudio: stopped"; fi
}

print_env() {
  alive && [ -s "$RUN/port" ] || { echo "no Label Studio of emerge is running under LABEL_STUDIO_HOME=$HOME_DIR: make labelstudio-start" >&2; exit 1; }
  printf 'export LABEL_STUDIO_URL=%q\n' "http://127.0.0.1:$(cat "$RUN/port")"
  printf 'export LABEL_STUDIO_API_KEY=%q\n' "$(cat "$RUN/token")"
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  status) status ;;
  env) print_env ;;
  seed) seed ;;
  *) echo "usage: $0 start|stop|status|env|seed" >&2; exit 2 ;;
esac
