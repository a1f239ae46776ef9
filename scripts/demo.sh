#!/usr/bin/env bash
# The demo: on a fresh machine, installs and builds what is missing, starts a local
# PostgreSQL cluster, the coordinator, the LLM gateway and a worker (one slot per GPU when
# there are GPUs, two CPU slots otherwise), evaluates a handful of example candidates (good,
# wrong, crashing, broken) through the real distributed path, then runs an optimization job
# on every example task with the offline proposer (no LLM needed), prints a results table
# from PostgreSQL, stops the services cleanly and leaves the database running and queryable.
#
# With an LLM provider: KFORGE_DEMO_LLM="--provider=openai --model=gpt-4o" (the key in
# OPENAI_API_KEY; --base_url for vLLM/SGLang) or "--provider=anthropic --model=..."
# (ANTHROPIC_API_KEY); the gateway reads the keys from its environment.
#
#   scripts/demo.sh          run it
#   scripts/demo.sh stop     stop the demo's PostgreSQL afterwards
#
# State lives in $KFORGE_DEMO_DIR (default /tmp/kforge-demo): logs, the database cluster.
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DEMO=${KFORGE_DEMO_DIR:-/tmp/kforge-demo}
PGBIN=/usr/lib/postgresql/15/bin
PGPORT=${KFORGE_DEMO_PGPORT:-55432}
PGDATA=$DEMO/pg

as_pg() {  # PostgreSQL refuses to run as root
  if [[ $(id -u) == 0 ]]; then runuser -u postgres -- "$@"; else "$@"; fi
}

if [[ ${1:-} == stop ]]; then
  as_pg "$PGBIN/pg_ctl" -D "$PGDATA" -m fast stop || true
  exit 0
fi

bash "$REPO/scripts/build.sh"
# shellcheck source=scripts/env.sh
source "$REPO/scripts/env.sh"
BIN=$REPO/build

mkdir -p "$DEMO"
[[ $(id -u) == 0 ]] && chown postgres "$DEMO"
# Secrets (docs/security.md) are files here, readable by the demo's user only: the database
# password, API tokens, TLS keys. None is passed on a command line or logged.
SECRETS=$DEMO/secrets
mkdir -p "$SECRETS"
chmod 700 "$SECRETS"
random_hex() { head -c "$1" /dev/urandom | od -An -tx1 | tr -d ' \n'; }
if [[ ! -f $PGDATA/PG_VERSION ]]; then
  echo "demo: creating a PostgreSQL cluster in $PGDATA (password authentication, SCRAM)"
  (umask 077; random_hex 24 >"$SECRETS/pg.password")
  PWFILE=$(mktemp "$DEMO/initdb.XXXXXX")  # initdb runs as postgres, which cannot read secrets/
  cp "$SECRETS/pg.password" "$PWFILE"
  [[ $(id -u) == 0 ]] && chown postgres "$PWFILE"
  as_pg "$PGBIN/initdb" -D "$PGDATA" -A scram-sha-256 --pwfile="$PWFILE" -U postgres >/dev/null
  rm -f "$PWFILE"
elif [[ ! -s $SECRETS/pg.password ]]; then
  echo "demo: $PGDATA was made by an older demo with trust authentication; remove it:" >&2
  echo "  scripts/demo.sh stop && rm -rf $DEMO" >&2
  exit 1
fi
PGPW=$(cat "$SECRETS/pg.password")
(umask 077
 echo "postgresql://postgres:$PGPW@127.0.0.1:$PGPORT/kforge" >"$SECRETS/database.url"
 echo "127.0.0.1:$PGPORT:*:postgres:$PGPW" >"$SECRETS/pgpass")
export PGPASSFILE=$SECRETS/pgpass  # psql's
if ! as_pg "$PGBIN/pg_ctl" -D "$PGDATA" status >/dev/null 2>&1; then
  echo "demo: starting PostgreSQL on 127.0.0.1:$PGPORT"
  as_pg "$PGBIN/pg_ctl" -D "$PGDATA" -l "$DEMO/postgres.log" -w \
    -o "-h 127.0.0.1 -p $PGPORT -k $DEMO" start >/dev/null
fi
psql -h 127.0.0.1 -p "$PGPORT" -U postgres -tAc "SELECT 1 FROM pg_database WHERE datname='kforge'" |
  grep -q 1 || psql -h 127.0.0.1 -p "$PGPORT" -U postgres -qc "CREATE DATABASE kforge"

PIDS=()
stop_services() {
  for pid in "${PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
}
trap stop_services EXIT

# start NAME BINARY FLAGS...: runs a service with a ready file, waits until it serves.
start() {
  local name=$1 bin=$2
  shift 2
  rm -f "$DEMO/$name.ready"
  "$bin" "$@" --ready_file="$DEMO/$name.ready" >"$DEMO/$name.log" 2>&1 &
  PIDS+=($!)
  for _ in $(seq 300); do
    [[ -f $DEMO/$name.ready ]] && break
    kill -0 "${PIDS[-1]}" 2>/dev/null || { cat "$DEMO/$name.log"; echo "demo: $name failed"; exit 1; }
    sleep 0.1
  done
  [[ -f $DEMO/$name.ready ]] || { echo "demo: $name did not start"; exit 1; }
}
port_of() { sed -E 's/.*"grpc_port":([0-9]+).*/\1/' "$DEMO/$1.ready"; }

# The gateway's port is chosen first: the coordinator (which applies the migrations the
# gateway waits for) must know where to find it.
GW_PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
# Tokens (docs/security.md): a bootstrap admin token made here, then with it a token for the
# demo's user (researcher, operator) and one for the worker. Secrets live in files only.
[[ -s $SECRETS/admin.token ]] || (umask 077; echo "kf_$(random_hex 32)" >"$SECRETS/admin.token")
# What the coordinator calls the gateway with; the gateway accepts no other caller.
[[ -s $SECRETS/gateway.token ]] || (umask 077; echo "kf_$(random_hex 32)" >"$SECRETS/gateway.token")
# TLS on every gRPC hop: a CA of the demo's own and a certificate for 127.0.0.1 signed by it,
# made once. Every process the demo starts reads them from KFORGE_TLS_* (flags
# --tls_cert_file, --tls_key_file, --tls_ca_file).
if [[ ! -s $SECRETS/server.pem ]]; then
  (
    umask 077
    cd "$SECRETS"
    EC=(-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes)
    openssl req -x509 "${EC[@]}" -keyout ca.key -out ca.pem -days 365 -subj "/CN=kforge demo CA" \
      -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign \
      2>/dev/null
    openssl req "${EC[@]}" -keyout server.key -out server.csr -subj /CN=localhost 2>/dev/null
    printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n' >server.ext
    openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out server.pem \
      -days 365 -extfile server.ext 2>/dev/null
  )
fi
export KFORGE_TLS_CERT_FILE=$SECRETS/server.pem KFORGE_TLS_KEY_FILE=$SECRETS/server.key
export KFORGE_TLS_CA_FILE=$SECRETS/ca.pem
start coordinator "$BIN/coordinator/kforge-coordinator" --database_url_file="$SECRETS/database.url" \
  --grpc_address=127.0.0.1:0 --metrics_address=127.0.0.1:0 \
  --gateway_address="127.0.0.1:$GW_PORT" --bootstrap_admin_token_file="$SECRETS/admin.token" \
  --gateway_token_file="$SECRETS/gateway.token"
COORD=127.0.0.1:$(port_of coordinator)
new_token() {  # new_token FILE PRINCIPAL ROLES: a token made once, kept in FILE
  [[ -s $1 ]] && return 0
  (umask 077; "$BIN/cli/kforge" --coordinator="$COORD" --token_file="$SECRETS/admin.token" \
    token create --principal="$2" --roles="$3" >"$1")
}
new_token "$SECRETS/demo.token" demo researcher,operator
new_token "$SECRETS/worker.token" demo-worker worker
# A --base_url in KFORGE_DEMO_LLM (a local vLLM or SGLang) is the one endpoint the demo's
# gateway allows besides the providers' own (docs/security.md, "LLM endpoints").
DEMO_BASE_URL=""
for arg in ${KFORGE_DEMO_LLM:-}; do
  case "$arg" in --base_url=*) DEMO_BASE_URL="${arg#--base_url=}" ;; esac
done
start gateway "$BIN/llm_gateway/kforge-gateway" --database_url_file="$SECRETS/database.url" \
  --caller_token_file="$SECRETS/gateway.token" --allowed_base_urls="$DEMO_BASE_URL" \
  --grpc_address="127.0.0.1:$GW_PORT" --metrics_address=127.0.0.1:0
if command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1; then
  WORKER_FLAGS=(--device=cuda)
  echo "demo: GPUs found: $(nvidia-smi -L | wc -l); one worker slot per GPU"
else
  WORKER_FLAGS=(--device=cpu --slots=2)
  echo "demo: no GPU: a CPU worker (candidates that need a GPU get rule no_gpu)"
fi
start worker "$BIN/gpu_worker/kforge-worker" --coordinator="$COORD" --grpc_address=127.0.0.1:0 \
  --metrics_address=127.0.0.1:0 --cache_dir="$DEMO/cache" --token_file="$SECRETS/worker.token" \
  "${WORKER_FLAGS[@]}"

KF=("$BIN/cli/kforge" --coordinator="$COORD" --token_file="$SECRETS/demo.token")
for svc in coordinator gateway worker; do
  echo "demo: $svc health: $("$BIN/cli/kforge" health "127.0.0.1:$(port_of $svc)")"
done
"${KF[@]}" workers

# 1. The evaluator on its own: one batch of hand-written candidates, good and bad.
# 2. Optimization jobs: every example task, seeded with the example candidates that declare
# tuning knobs. 3. The results table. (scripts/demo_jobs.sh, shared with the GPU-machine demo.)
# shellcheck source=scripts/demo_jobs.sh
source "$REPO/scripts/demo_jobs.sh"
demo_eval_examples "$REPO"
DEVICE=cpu
[[ ${WORKER_FLAGS[0]} == --device=cuda ]] && DEVICE=cuda
demo_jobs_select "$REPO" "$DEVICE" "${KFORGE_KERNELBENCH:-$REPO/../shared/kernelbench}"
demo_jobs_run "$REPO"
demo_results psql -h 127.0.0.1 -p "$PGPORT" -U postgres kforge

stop_services
trap - EXIT
echo
echo "demo: services stopped; PostgreSQL keeps running with the results:"
echo "  export PGPASSFILE=$SECRETS/pgpass   # the database password (SCRAM)"
echo "  psql -h 127.0.0.1 -p $PGPORT -U postgres kforge -c 'SELECT * FROM leaderboard'"
echo "  psql -h 127.0.0.1 -p $PGPORT -U postgres kforge -c 'SELECT * FROM job_trajectory'"
echo "  scripts/demo.sh stop    # stops it"
