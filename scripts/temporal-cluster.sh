#!/usr/bin/env bash
# A full Temporal server (not the dev server) on PostgreSQL, for tests and local runs:
#
#   scripts/temporal-cluster.sh --dir <dir> [--port <frontend gRPC port>] [--pg-port <port>] [--reset]
#   scripts/temporal-cluster.sh --dir <dir> --resume   (again on the state of an earlier run, its ports)
#   scripts/temporal-cluster.sh --build-only     (npm test runs this first: the build takes minutes)
#
# Builds the server and its SQL schema tool from Go modules into .tools/temporal-server/ if missing
# (version pinned below), starts PostgreSQL with scripts/postgres.mjs in <dir>/pg, creates and migrates
# the databases `temporal` and `temporal_visibility`, writes the server config to <dir>/config, starts
# the server (history, matching, frontend and worker in one process, frontend on 127.0.0.1), registers
# the namespace `default` with the search attributes the project uses, then prints
#   POSTGRES_URL=postgres://dmh:dmh-local@127.0.0.1:<pg port>/dmh
#   TEMPORAL_ADDRESS=127.0.0.1:<port>
# on stdout (the second line means ready) and runs until SIGTERM or SIGINT, when it stops the server,
# then PostgreSQL, and exits 0. If the server or PostgreSQL dies on its own, it stops the other and
# exits 1. Progress goes to stderr; logs to <dir>/temporal-server.log, <dir>/postgres.log and
# <dir>/schema.log. Ports not given are picked free.
#
# scripts/postgres.mjs cannot start on an existing data directory, so <dir>/pg must not exist yet:
# pass a new <dir>, or --reset to delete the state of an earlier run first, or --resume to start the
# stopped cluster again on its state and ports (<dir>/ports; a restart of the server and its database,
# as the soak does). Stop it with SIGTERM (and
# allow it ~30 s), not SIGKILL: a killed script leaves the server and PostgreSQL running. (Started with
# `&` from a non-interactive shell, it cannot see SIGINT: bash ignores it there, for good.)
#
# Environment: TEMPORAL_CLI (default .tools/venv/bin/temporal), TEMPORAL_LOG_LEVEL (server log level,
# default warn), TEMPORAL_RETENTION (namespace retention, default 72h), TEMPORAL_HOST_CACHE (how many
# workflows' mutable states the history service keeps in memory, default 8192 as the dev server),
# TEMPORAL_PG_SETTINGS (PostgreSQL settings for its database, space-separated name=value, e.g.
# "shared_buffers=16MB"; none by default), TEMPORAL_SQL_MAX_CONNS (each connection pool's size for the
# main store, default 20; the visibility store's pools get half, at least 2),
# TEMPORAL_GOTOOLCHAIN (GOTOOLCHAIN for the build, default auto: the module asks for a newer Go than may
# be installed, and the go command fetches that toolchain through the module proxy).
set -euo pipefail

TEMPORAL_SERVER_VERSION=v1.32.2
NAMESPACE=default
SEARCH_ATTRIBUTES=(SessionId=Keyword UserId=Keyword TenantId=Keyword) # as `temporal server start-dev` in src/cli/processes.ts

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
TOOLS=$ROOT/.tools/temporal-server
SERVER_BIN=$TOOLS/temporal-server
SQL_TOOL=$TOOLS/temporal-sql-tool
SCHEMA_DIR=$TOOLS/schema/postgresql/v12
CLI=${TEMPORAL_CLI:-$ROOT/.tools/venv/bin/temporal}
PG_USER=dmh
PG_PASSWORD=dmh-local

log() { printf 'temporal-cluster: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }
usage() {
  sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//' >&2
  exit 2
}

DIR='' PORT='' PG_PORT='' RESET=0 RESUME=0 BUILD_ONLY=0
while [[ $# -gt 0 ]]; do
  case $1 in
    --dir) DIR=${2:?--dir needs a value}; shift 2 ;;
    --port) PORT=${2:?--port needs a value}; shift 2 ;;
    --pg-port) PG_PORT=${2:?--pg-port needs a value}; shift 2 ;;
    --reset) RESET=1; shift ;;
    --resume) RESUME=1; shift ;;
    --build-only) BUILD_ONLY=1; shift ;;
    -h | --help) usage ;;
    *) log "unknown argument: $1"; usage ;;
  esac
done
[[ -n $DIR || $BUILD_ONLY == 1 ]] || usage
for p in "$PORT" "$PG_PORT"; do [[ -z $p || $p =~ ^[0-9]+$ ]] || die "not a port: $p"; done
[[ ${TEMPORAL_HOST_CACHE:-8192} =~ ^[1-9][0-9]*$ ]] || die "TEMPORAL_HOST_CACHE must be a positive whole number, not '${TEMPORAL_HOST_CACHE}'"
SQL_MAX_CONNS=${TEMPORAL_SQL_MAX_CONNS:-20}
[[ $SQL_MAX_CONNS =~ ^[1-9][0-9]*$ ]] || die "TEMPORAL_SQL_MAX_CONNS must be a positive whole number, not '${SQL_MAX_CONNS}'"
VISIBILITY_MAX_CONNS=$(( SQL_MAX_CONNS / 2 > 2 ? SQL_MAX_CONNS / 2 : 2 ))

# --- processes, and stopping them --------------------------------------------------------------------
BUILD_PID='' PG_PID='' SERVER_PID=''

# Alive and not a zombie (a child that exited stays a zombie until waited for).
running() {
  local stat
  stat=$(ps -o stat= -p "$1" 2>/dev/null) || return 1
  [[ $stat != Z* ]]
}

# stop_child <pid> <name> <grace seconds> [<signal target>]: SIGTERM, SIGKILL after the grace, reap.
# shellcheck disable=SC2329 # called from cleanup, which the EXIT trap runs
stop_child() {
  local pid=$1 name=$2 grace=$3 target=${4:-$1} i
  [[ -n $pid ]] || return 0
  if running "$pid"; then
    log "stopping $name (pid $pid)"
    kill -TERM "$target" 2>/dev/null || true
    for ((i = 0; i < grace * 10; i++)); do running "$pid" || break; sleep 0.1; done
    if running "$pid"; then
      log "$name did not stop in ${grace}s: killing it"
      kill -KILL "$target" 2>/dev/null || true
    fi
  fi
  wait "$pid" 2>/dev/null || true
}

# shellcheck disable=SC2329 # run by the EXIT trap
cleanup() {
  trap - EXIT TERM INT
  [[ -n $BUILD_PID ]] && stop_child "$BUILD_PID" build 10 "-$BUILD_PID"
  stop_child "$SERVER_PID" temporal-server 30
  stop_child "$PG_PID" postgres 30
  # PostgreSQL outlives postgres.mjs only if that was killed: stop the postmaster itself (fast shutdown).
  local pm
  if [[ -n $PG_PID && -f $DIR/pg/postmaster.pid ]]; then
    pm=$(head -n 1 "$DIR/pg/postmaster.pid" 2>/dev/null || true)
    if [[ $pm =~ ^[0-9]+$ ]] && [[ $(ps -o comm= -p "$pm" 2>/dev/null) == postgres ]]; then
      log "stopping the postmaster left behind (pid $pm)"
      kill -INT "$pm" 2>/dev/null || true
      for ((i = 0; i < 200; i++)); do kill -0 "$pm" 2>/dev/null || break; sleep 0.1; done
    fi
  fi
}
trap 'cleanup' EXIT
trap 'log "signal received"; exit 0' TERM INT

# --- build --------------------------------------------------------------------------------------------
built() {
  [[ -x $SERVER_BIN && -x $SQL_TOOL && -d $SCHEMA_DIR/temporal/versioned && -d $SCHEMA_DIR/visibility/versioned ]] &&
    [[ $(cat "$TOOLS/VERSION" 2>/dev/null) == "$TEMPORAL_SERVER_VERSION" ]]
}

build() {
  command -v go >/dev/null || die "go is not installed (needed to build the Temporal server)"
  mkdir -p "$TOOLS"
  exec 9>"$TOOLS/.build.lock"
  flock 9 # one build at a time; a waiting run then finds the binaries
  if built; then exec 9>&-; return; fi
  local gobin start=$SECONDS moddir
  gobin=$(mktemp -d "$TOOLS/.gobin.XXXXXX")
  log "building go.temporal.io/server@$TEMPORAL_SERVER_VERSION (cmd/server, cmd/tools/sql); takes minutes"
  export GOTOOLCHAIN=${TEMPORAL_GOTOOLCHAIN:-auto} CGO_ENABLED=0 GOFLAGS=-buildvcs=false
  # In its own process group, so that a stop can end the compilers too; in the background, so that a
  # signal is handled without waiting for the build.
  GOBIN=$gobin setsid nice -n 19 go install \
    "go.temporal.io/server/cmd/server@$TEMPORAL_SERVER_VERSION" \
    "go.temporal.io/server/cmd/tools/sql@$TEMPORAL_SERVER_VERSION" >&2 &
  BUILD_PID=$!
  wait "$BUILD_PID" || die "go install failed"
  BUILD_PID=''
  moddir=$(go mod download -json "go.temporal.io/server@$TEMPORAL_SERVER_VERSION" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
  [[ -d $moddir/schema/postgresql/v12 ]] || die "schema not found in the module source ($moddir)"
  rm -rf "$TOOLS/schema"
  mkdir -p "$TOOLS/schema/postgresql"
  cp -R "$moddir/schema/postgresql/v12" "$TOOLS/schema/postgresql/"
  chmod -R u+w "$TOOLS/schema"
  rm -f "$SCHEMA_DIR/version.go"
  mv -f "$gobin/server" "$SERVER_BIN"
  mv -f "$gobin/sql" "$SQL_TOOL"
  rmdir "$gobin"
  echo "$TEMPORAL_SERVER_VERSION" >"$TOOLS/VERSION"
  exec 9>&-
  log "built in $((SECONDS - start))s"
}

built || build
if [[ $BUILD_ONLY == 1 ]]; then log "$SERVER_BIN ($TEMPORAL_SERVER_VERSION) is built"; exit 0; fi
[[ -x $CLI ]] || die "Temporal CLI not found at $CLI (set TEMPORAL_CLI)"

# --- directory and ports ------------------------------------------------------------------------------
mkdir -p "$DIR"
DIR=$(cd "$DIR" && pwd)
# As root, postgres.mjs runs PostgreSQL as the user `postgres`, which must reach the data directory.
[[ $(id -u) == 0 ]] && chmod 755 "$DIR"
if [[ $RESUME == 1 ]]; then
  [[ -e $DIR/pg && -f $DIR/ports ]] || die "--resume: no earlier run in $DIR"
elif [[ -e $DIR/pg ]]; then
  [[ $RESET == 1 ]] || die "$DIR/pg exists (postgres.mjs cannot reuse a data directory): use a new --dir, or --reset"
  log "--reset: deleting the state in $DIR"
  rm -rf "$DIR/pg" "$DIR/config"
fi
mkdir -p "$DIR/config"

# Free ports on 127.0.0.1, all distinct and none of those given: frontend gRPC and PostgreSQL (unless
# given), frontend HTTP and the gRPC ports of the other services (nothing outside uses these), then the
# four membership ports, below 32768: the SQL schema stores them as SMALLINT (cluster_membership.rpc_port).
if [[ $RESUME == 1 ]]; then
  read -r -a FREE <"$DIR/ports"
  PORT='' PG_PORT=''
else
  read -r -a FREE < <(node -e '
  const net = require("node:net");
  const [nAny, nLow, ...taken] = process.argv.slice(1).map(Number);
  const held = [];
  const listen = (port) => new Promise((ok) => {
    const s = net.createServer();
    s.once("error", () => ok(undefined)).listen(port, "127.0.0.1", () => { held.push(s); ok(s.address().port); });
  });
  (async () => {
    const ports = [];
    while (ports.length < nAny) { const p = await listen(0); if (p && !taken.includes(p)) ports.push(p); }
    for (let tries = 0; ports.length < nAny + nLow && tries < 10000; tries++) {
      const c = 10000 + Math.floor(Math.random() * 22768);
      if (taken.includes(c) || ports.includes(c)) continue;
      const p = await listen(c);
      if (p) ports.push(p);
    }
    console.log(ports.join(" "));
    held.forEach((s) => s.close());
  })();
' 6 4 "${PORT:-0}" "${PG_PORT:-0}")
fi
((${#FREE[@]} == 10)) || die "could not find free ports"
PORT=${PORT:-${FREE[0]}}
PG_PORT=${PG_PORT:-${FREE[1]}}
echo "$PORT $PG_PORT ${FREE[*]:2:8}" >"$DIR/ports"
read -r HTTP_PORT HISTORY_PORT MATCHING_PORT WORKER_PORT \
  FRONTEND_MEMBERSHIP HISTORY_MEMBERSHIP MATCHING_MEMBERSHIP WORKER_MEMBERSHIP <<<"${FREE[*]:2:8}"
ADDRESS=127.0.0.1:$PORT

# --- PostgreSQL ---------------------------------------------------------------------------------------
log "starting PostgreSQL on 127.0.0.1:$PG_PORT ($DIR/pg)"
: >"$DIR/postgres.out" # before the loop below reads it (the background job's redirection may come later)
PG_SET=()
for setting in ${TEMPORAL_PG_SETTINGS:-}; do PG_SET+=(--set "$setting"); done
node "$ROOT/scripts/postgres.mjs" --dir "$DIR/pg" --port "$PG_PORT" --password "$PG_PASSWORD" "${PG_SET[@]}" \
  >"$DIR/postgres.out" 2>"$DIR/postgres.log" &
PG_PID=$!
for ((i = 0; ; i++)); do
  POSTGRES_URL=$(sed -n 's/^POSTGRES_URL=//p' "$DIR/postgres.out")
  [[ -n $POSTGRES_URL ]] && break
  running "$PG_PID" || die "PostgreSQL did not start: $(tail -n 5 "$DIR/postgres.log" | cut -c1-400)"
  ((i < 1200)) || die "PostgreSQL did not start in 120s"
  sleep 0.1
done

sql() { "$SQL_TOOL" --plugin postgres12 --ep 127.0.0.1 --port "$PG_PORT" --user "$PG_USER" --password "$PG_PASSWORD" "$@" >>"$DIR/schema.log" 2>&1; }
if [[ $RESUME == 0 ]]; then
  log "creating the databases and their schemas"
  for pair in temporal:temporal temporal_visibility:visibility; do
    db=${pair%%:*} schema=${pair#*:}
    { sql --db "$db" create-database && sql --db "$db" setup-schema -v 0.0 &&
      sql --db "$db" update-schema -d "$SCHEMA_DIR/$schema/versioned"; } ||
      die "schema setup of $db failed: see $DIR/schema.log"
  done
fi

# --- server config ------------------------------------------------------------------------------------
# Dynamic config: the values `temporal server start-dev` sets (host cache, visibility RPS), the ID length
# the SQL schema allows, and the queue processor poll rates the project gives its dev server
# (DEV_SERVER_DYNAMIC_CONFIG in src/cli/processes.ts), so that both serve work at the same pace.
cat >"$DIR/config/dynamicconfig.yaml" <<EOF
limit.maxIDLength:
  - value: 255
history.hostLevelCacheMaxSize:
  - value: ${TEMPORAL_HOST_CACHE:-8192}
frontend.namespaceRPS.visibility:
  - value: 100
EOF
for processor in transfer timer visibility; do
  printf 'history.%sProcessorMaxPollRPS:\n  - value: 2000\nhistory.%sProcessorMaxPollHostRPS:\n  - value: 2000\n' \
    "$processor" "$processor" >>"$DIR/config/dynamicconfig.yaml"
done

datastore() { # <name> <database> <max connections>
  cat <<EOF
    $1:
      sql:
        pluginName: postgres12
        databaseName: $2
        connectAddr: "127.0.0.1:$PG_PORT"
        connectProtocol: tcp
        user: $PG_USER
        password: $PG_PASSWORD
        maxConns: $3
        maxIdleConns: $3
        maxConnLifetime: 1h
EOF
}
cat >"$DIR/config/temporal.yaml" <<EOF
log:
  stdout: true
  level: ${TEMPORAL_LOG_LEVEL:-warn}
persistence:
  defaultStore: postgres-default
  visibilityStore: postgres-visibility
  numHistoryShards: 4
  datastores:
$(datastore postgres-default temporal "$SQL_MAX_CONNS")
$(datastore postgres-visibility temporal_visibility "$VISIBILITY_MAX_CONNS")
global:
  membership:
    maxJoinDuration: 30s
    broadcastAddress: 127.0.0.1
services:
  frontend:
    rpc: { grpcPort: $PORT, httpPort: $HTTP_PORT, membershipPort: $FRONTEND_MEMBERSHIP, bindOnIP: 127.0.0.1 }
  history:
    rpc: { grpcPort: $HISTORY_PORT, membershipPort: $HISTORY_MEMBERSHIP, bindOnIP: 127.0.0.1 }
  matching:
    rpc: { grpcPort: $MATCHING_PORT, membershipPort: $MATCHING_MEMBERSHIP, bindOnIP: 127.0.0.1 }
  worker:
    rpc: { grpcPort: $WORKER_PORT, membershipPort: $WORKER_MEMBERSHIP, bindOnIP: 127.0.0.1 }
clusterMetadata:
  enableGlobalNamespace: false
  failoverVersionIncrement: 10
  masterClusterName: active
  currentClusterName: active
  clusterInformation:
    active:
      enabled: true
      initialFailoverVersion: 1
      rpcName: frontend
      rpcAddress: "$ADDRESS"
      httpAddress: "127.0.0.1:$HTTP_PORT"
dcRedirectionPolicy:
  policy: noop
archival:
  history: { state: disabled }
  visibility: { state: disabled }
namespaceDefaults:
  archival:
    history: { state: disabled }
    visibility: { state: disabled }
publicClient:
  hostPort: "$ADDRESS"
dynamicConfigClient:
  filepath: "$DIR/config/dynamicconfig.yaml"
  pollInterval: 10s
EOF

# --- server -------------------------------------------------------------------------------------------
log "starting temporal-server $TEMPORAL_SERVER_VERSION on $ADDRESS"
server_start=$SECONDS
"$SERVER_BIN" --config-file "$DIR/config/temporal.yaml" --allow-no-auth start >>"$DIR/temporal-server.log" 2>&1 &
SERVER_PID=$!
for ((i = 0; ; i++)); do
  "$CLI" operator cluster health --address "$ADDRESS" >/dev/null 2>&1 && break
  running "$SERVER_PID" || die "temporal-server exited: $(tail -n 3 "$DIR/temporal-server.log" | cut -c1-400)"
  ((i < 600)) || die "temporal-server did not serve in 60s: see $DIR/temporal-server.log"
  sleep 0.1
done

if ! "$CLI" operator namespace describe -n "$NAMESPACE" --address "$ADDRESS" >/dev/null 2>&1; then
  "$CLI" operator namespace create -n "$NAMESPACE" --retention "${TEMPORAL_RETENTION:-72h}" --address "$ADDRESS" >&2
fi
# A new namespace reaches the frontend's namespace registry within seconds (refreshed every 2 s).
for ((i = 0; ; i++)); do
  existing=$("$CLI" operator search-attribute list -n "$NAMESPACE" --address "$ADDRESS" -o json 2>/dev/null) && break
  running "$SERVER_PID" || die "temporal-server exited: $(tail -n 3 "$DIR/temporal-server.log" | cut -c1-400)"
  ((i < 300)) || die "namespace $NAMESPACE not visible in 30s"
  sleep 0.1
done
sa_args=() query=()
for sa in "${SEARCH_ATTRIBUTES[@]}"; do
  name=${sa%%=*}
  query+=("$name = \"probe\"")
  [[ $existing == *"\"$name\""* ]] || sa_args+=(--name "$name" --type "${sa#*=}")
done
if ((${#sa_args[@]})); then
  "$CLI" operator search-attribute create -n "$NAMESPACE" --address "$ADDRESS" "${sa_args[@]}" >&2
fi
# Ready when a visibility query on those attributes is accepted in the namespace (the namespace and its
# search attributes reach the frontend through caches refreshed every few seconds).
q=$(printf '%s AND ' "${query[@]}")
for ((i = 0; ; i++)); do
  "$CLI" workflow count -n "$NAMESPACE" --address "$ADDRESS" --query "${q% AND }" >/dev/null 2>&1 && break
  running "$SERVER_PID" || die "temporal-server exited: $(tail -n 3 "$DIR/temporal-server.log" | cut -c1-400)"
  ((i < 300)) || die "namespace $NAMESPACE not usable in 30s"
  sleep 0.1
done
log "ready in $((SECONDS - server_start))s after the server start"

echo "POSTGRES_URL=$POSTGRES_URL"
echo "TEMPORAL_ADDRESS=$ADDRESS"

# --- run until stopped --------------------------------------------------------------------------------
set +e
wait -n "$SERVER_PID" "$PG_PID"
status=$?
if ! running "$SERVER_PID"; then
  log "temporal-server exited on its own (status $status): see $DIR/temporal-server.log"
else
  log "PostgreSQL exited on its own (status $status): see $DIR/postgres.log"
fi
exit 1
