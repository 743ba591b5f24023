#!/usr/bin/env bash
# A real Apache Spark 4 standalone cluster for emerge on this machine: a master, two
# workers and the Spark Connect server (with Delta Lake's SQL extension and catalog), all
# on 127.0.0.1 with free ports, each started by Spark's own spark-daemon.sh and stopped by
# its PID. emerge then runs on it with `engine.url` set to the server's sc:// URL.
#
#   scripts/spark-local.sh start     # `make spark-start`; prints the sc:// URL
#   scripts/spark-local.sh stop      # `make spark-stop`
#   scripts/spark-local.sh status
#   eval "$(scripts/spark-local.sh env)"   # EMERGE__ENGINE__URL for this shell
#
# Needs `make spark` (.venv-spark: PyPI's pyspark 4.2.1; .venv-spark/jars: Delta, hadoop-aws)
# and Java 17. The cluster's Python workers (mapInArrow: `dumps.executor: spark`) run
# .venv's Python, where emerge is installed. Settings (environment): SPARK_LOCAL_HOME
# (./.spark-local: run/ pid and port files, logs/, work/), SPARK_WORKERS (2),
# SPARK_WORKER_CORES (1), SPARK_WORKER_MEMORY (2g), SPARK_EXECUTOR_MEMORY (1g),
# SPARK_DRIVER_MEMORY (1g), SPARK_SHUFFLE_PARTITIONS (4), SPARK_CONNECT_PORT (free),
# SPARK_JVM_OPTS (every JVM's options: below),
# EMERGE_SPARK_PYTHON (.venv/bin/python), SPARK_EXTRA_CONF (more `--conf k=v` words for
# the Connect server). S3 settings come from emerge's own (`s3`), per session.
set -euo pipefail

REPO="$(cd "$(dirname "$0")/.." && pwd)"
SPARK_VENV="${SPARK_VENV:-$REPO/.venv-spark}"
HOME_DIR="${SPARK_LOCAL_HOME:-$REPO/.spark-local}"
RUN="$HOME_DIR/run"
LOGS="$HOME_DIR/logs"
WORKERS="${SPARK_WORKERS:-2}"
PYTHON_WORKERS="${EMERGE_SPARK_PYTHON:-$REPO/.venv/bin/python}"
CONNECT_CLASS=org.apache.spark.sql.connect.service.SparkConnectServer
MASTER_CLASS=org.apache.spark.deploy.master.Master
WORKER_CLASS=org.apache.spark.deploy.worker.Worker

spark_home() {
  local home
  home="$(ls -d "$SPARK_VENV"/lib/python3*/site-packages/pyspark 2>/dev/null | head -1)"
  if [ -z "$home" ] || [ ! -x "$home/sbin/spark-daemon.sh" ] || [ ! -d "$SPARK_VENV/jars" ]; then
    echo "no Spark at $SPARK_VENV: run make spark first" >&2
    exit 1
  fi
  echo "$home"
}

export SPARK_PID_DIR="$RUN" SPARK_LOG_DIR="$LOGS" SPARK_WORKER_DIR="$HOME_DIR/work"
export SPARK_CONF_DIR="$HOME_DIR/conf"
export SPARK_IDENT_STRING=emerge
export SPARK_LOCAL_IP=127.0.0.1 SPARK_LOCAL_HOSTNAME=127.0.0.1 SPARK_MASTER_HOST=127.0.0.1
# the master and the workers hold only bookkeeping (the default is 1 GiB each); not
# exported: spark-submit's driver would take it too
DAEMON_MEMORY="${SPARK_DAEMON_MEMORY:-256m}"
# a small machine's JVMs: the client compiler only (C2's compilations took most of the CPU
# of a small build: measured in docs/performance.md) and the serial collector
JVM_OPTS="${SPARK_JVM_OPTS:--XX:TieredStopAtLevel=1 -XX:+UseSerialGC -XX:-UseCodeCacheFlushing -XX:ReservedCodeCacheSize=512m}"
export SPARK_DAEMON_JAVA_OPTS="$JVM_OPTS"
export SPARK_MASTER_OPTS="-Dspark.master.rest.enabled=false"

free_port() {
  python3 -c "import socket; s = socket.socket(); s.bind(('127.0.0.1', 0)); print(s.getsockname()[1])"
}

pid_file() { echo "$RUN/spark-$SPARK_IDENT_STRING-$1-$2.pid"; }  # spark-daemon.sh's name

alive() { [ -s "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }

components() {  # the pid files of this cluster: the Connect server first, the master last
  pid_file "$CONNECT_CLASS" 1
  for i in $(seq 1 "$WORKERS"); do pid_file "$WORKER_CLASS" "$i"; done
  pid_file "$MASTER_CLASS" 1
}

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

write_conf() {
  mkdir -p "$SPARK_CONF_DIR"
  # read by spark-class for every daemon and every executor it launches
  cat > "$SPARK_CONF_DIR/spark-env.sh" <<EOF
export SPARK_LOCAL_IP=127.0.0.1
export SPARK_LOCAL_HOSTNAME=127.0.0.1
export PYSPARK_PYTHON=$PYTHON_WORKERS
export SPARK_LOCAL_DIRS=$HOME_DIR/tmp
EOF
  cat > "$SPARK_CONF_DIR/log4j2.properties" <<'EOF'
rootLogger.level = warn
rootLogger.appenderRef.stdout.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{yy/MM/dd HH:mm:ss} %p %c{1}: %m%n%ex
logger.deploy.name = org.apache.spark.deploy
logger.deploy.level = info
logger.connect.name = org.apache.spark.sql.connect.service.SparkConnectServer
logger.connect.level = info
EOF
}

start() {
  local home daemon f master_port connect_port url t0
  home="$(spark_home)"
  # this Spark's, not an inherited one (emerge's .venv points SPARK_HOME at pyspark-client)
  export SPARK_HOME="$home"
  daemon="$home/sbin/spark-daemon.sh"
  command -v java >/dev/null || { echo "Java 17 is needed (java is not on the PATH)" >&2; exit 1; }
  [ -x "$PYTHON_WORKERS" ] || { echo "no Python for the workers at $PYTHON_WORKERS (make venv)" >&2; exit 1; }
  for f in $(components); do
    if alive "$f"; then echo "Spark already running (pid $(cat "$f")); scripts/spark-local.sh stop first" >&2; exit 1; fi
  done
  mkdir -p "$RUN" "$LOGS" "$SPARK_WORKER_DIR" "$HOME_DIR/tmp"
  write_conf
  t0=$SECONDS
  master_port="$(free_port)"
  connect_port="${SPARK_CONNECT_PORT:-$(free_port)}"
  url="spark://127.0.0.1:$master_port"
  SPARK_DAEMON_MEMORY="$DAEMON_MEMORY" "$daemon" start "$MASTER_CLASS" 1 --host 127.0.0.1 --port "$master_port" \
    --webui-port "$(free_port)" >/dev/null
  for i in $(seq 1 "$WORKERS"); do
    SPARK_DAEMON_MEMORY="$DAEMON_MEMORY" "$daemon" start "$WORKER_CLASS" "$i" --host 127.0.0.1 --webui-port "$(free_port)" \
      --cores "${SPARK_WORKER_CORES:-1}" --memory "${SPARK_WORKER_MEMORY:-2g}" \
      --work-dir "$SPARK_WORKER_DIR/$i" "$url" >/dev/null
  done
  local jars="$SPARK_VENV/jars/*"
  # shellcheck disable=SC2086  # SPARK_EXTRA_CONF is a list of words
  "$daemon" submit "$CONNECT_CLASS" 1 --name "emerge Spark Connect" --master "$url" \
    --driver-memory "${SPARK_DRIVER_MEMORY:-1g}" \
    --executor-memory "${SPARK_EXECUTOR_MEMORY:-1g}" \
    --executor-cores "${SPARK_WORKER_CORES:-1}" \
    --total-executor-cores "$((WORKERS * ${SPARK_WORKER_CORES:-1}))" \
    --conf "spark.driver.extraClassPath=$jars" --conf "spark.executor.extraClassPath=$jars" \
    --conf spark.driver.host=127.0.0.1 --conf spark.driver.bindAddress=127.0.0.1 \
    --conf spark.ui.port="$(free_port)" \
    --conf spark.connect.grpc.binding.address=127.0.0.1 \
    --conf spark.connect.grpc.binding.port="$connect_port" \
    --conf spark.sql.extensions=io.delta.sql.DeltaSparkSessionExtension \
    --conf spark.sql.catalog.spark_catalog=org.apache.spark.sql.delta.catalog.DeltaCatalog \
    --conf spark.databricks.delta.properties.defaults.enableDeletionVectors=false \
    --conf spark.pyspark.python="$PYTHON_WORKERS" \
    --conf spark.executorEnv.PYSPARK_PYTHON="$PYTHON_WORKERS" \
    --conf spark.sql.warehouse.dir="$HOME_DIR/spark-warehouse" \
    --conf spark.local.dir="$HOME_DIR/tmp" \
    --conf spark.sql.shuffle.partitions="${SPARK_SHUFFLE_PARTITIONS:-4}" \
    --conf spark.databricks.delta.snapshotPartitions=2 \
    --conf spark.driver.extraJavaOptions="$JVM_OPTS -Dderby.system.home=$HOME_DIR/derby" \
    --conf spark.executor.extraJavaOptions="$JVM_OPTS" \
    --conf spark.locality.wait=0s \
    --conf spark.connect.session.manager.defaultSessionTimeout=7d \
    ${SPARK_EXTRA_CONF:-} >/dev/null
  echo "$connect_port" > "$RUN/connect.port"
  echo "$url" > "$RUN/master.url"
  # the server answers once its session is up (a minute or two on a busy 2-core machine)
  for _ in $(seq 1 "${SPARK_START_TIMEOUT:-600}"); do
    port_open "$connect_port" && break
    for f in $(components); do
      alive "$f" || { echo "Spark: $(basename "$f" .pid) exited; its log:" >&2
                      tail -30 "$LOGS"/*"$(basename "$f" .pid | sed 's/^spark-//')"*.out >&2 || true
                      stop >/dev/null; exit 1; }
    done
    sleep 1
  done
  port_open "$connect_port" || { echo "the Spark Connect server did not answer on port $connect_port" >&2; stop >/dev/null; exit 1; }
  echo "Spark is up in $((SECONDS - t0)) s: sc://127.0.0.1:$connect_port (master $url, $WORKERS workers)"
  echo "  pids:  $(for f in $(components); do printf '%s ' "$(cat "$f")"; done)"
  echo "  logs:  $LOGS"
  echo "  stop:  scripts/spark-local.sh stop"
}

descendants() {  # every process below $1 (a worker's executors, their Python workers)
  local child
  for child in $(ps -o pid= --ppid "$1" 2>/dev/null); do
    echo "$child"
    descendants "$child"
  done
}

stop_pids() {  # SIGTERM to the given pid files' processes at once, up to $1 seconds for
  # them to exit, then SIGKILL to what is left of them and of their children
  local grace=$1 f pid left
  shift
  local pids=() tree=()
  for f in "$@"; do
    [ -s "$f" ] || continue
    pid="$(cat "$f")"
    if kill -0 "$pid" 2>/dev/null; then
      pids+=("$pid")
      mapfile -t -O "${#tree[@]}" tree < <(descendants "$pid")
      kill -TERM "$pid" 2>/dev/null || true
    fi
  done
  for _ in $(seq 1 $((grace * 5))); do
    left=0
    for pid in "${pids[@]}" "${tree[@]}"; do kill -0 "$pid" 2>/dev/null && left=1; done
    [ "$left" = 0 ] && break
    sleep 0.2
  done
  for pid in "${pids[@]}" "${tree[@]}"; do
    if kill -0 "$pid" 2>/dev/null; then
      echo "spark: pid $pid still running after ${grace}s; killing it" >&2
      kill -KILL "$pid" 2>/dev/null || true
    fi
  done
  for f in "$@"; do rm -f "$f"; done
}

stop() {
  # the Connect server first (its executors end with the application), then the workers
  # (any executor left is their child), the master last
  stop_pids 20 "$(pid_file "$CONNECT_CLASS" 1)"
  local workers=()
  for i in $(seq 1 "$WORKERS"); do workers+=("$(pid_file "$WORKER_CLASS" "$i")"); done
  stop_pids 15 "${workers[@]}"
  stop_pids 10 "$(pid_file "$MASTER_CLASS" 1)"
  rm -f "$RUN/connect.port" "$RUN/master.url"
  echo "Spark stopped"
}

status() {
  local f running=0
  for f in $(components); do
    if alive "$f"; then echo "$(basename "$f" .pid): running (pid $(cat "$f"))"; running=1
    else echo "$(basename "$f" .pid): stopped"; fi
  done
  if [ "$running" = 1 ] && [ -s "$RUN/connect.port" ]; then
    echo "Spark Connect: sc://127.0.0.1:$(cat "$RUN/connect.port")"
  fi
}

print_env() {  # for `eval "$(scripts/spark-local.sh env)"`: emerge then runs on this cluster
  if ! alive "$(pid_file "$CONNECT_CLASS" 1)" || [ ! -s "$RUN/connect.port" ]; then
    echo "no Spark of emerge is running under SPARK_LOCAL_HOME=$HOME_DIR: start it with" \
         "scripts/spark-local.sh start" >&2
    exit 1
  fi
  printf 'export EMERGE__ENGINE__URL=%q\n' "sc://127.0.0.1:$(cat "$RUN/connect.port")"
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  status) status ;;
  env) print_env ;;
  *) echo "usage: $0 start|stop|status|env" >&2; exit 2 ;;
esac
