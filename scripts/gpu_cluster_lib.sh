# The setup shared by the scripts that run the bundled cluster of scripts/gpu_cluster_bundle.sh
# on the GPU machine (scripts/gpu_cluster_two_slots.sh, scripts/gpu_cluster_demo.sh). Source it
# from the repository root after setting TAG (the prefix of messages) and OUT (the results
# folder); it sets the defaults of the other variables:
#   WORK (/tmp/kforge-cluster), BUNDLE (.gpu-carry/cluster/kforge-cluster.tar.xz), PY (PYTHON
#   or python3), PGPORT (55999), DEVICE (cuda when nvidia-smi lists a GPU, else cpu), EVAL
#   (empty: built by gc_build_eval).
# Then, in order:
#   gc_begin          $OUT/run.log gets all output, $OUT/logs (packed into logs.tar.gz at exit)
#                     the services' logs; the EXIT trap stops everything (gc_cleanup)
#   gc_unpack         unpacks the bundle into $WORK; B: its bin/, PGB: PostgreSQL's bin/
#   gc_build_eval     builds kforge-eval (scripts/gpu_suite.sh's build step) unless EVAL names one
#   gc_start_pg       starts PostgreSQL with an empty database kforge; DB_URL, PSQL
#   start NAME BIN FLAGS...  a service with a ready file; status 1 when it does not come up
#   port_of NAME KEY  a port from NAME's ready file (KEY grpc_port or metrics_port)
#   gc_start_coordinator FLAGS...  the coordinator on that database; COORD its address
#   gc_setup          gc_begin, gc_unpack, gc_build_eval, gc_start_pg in one
#   gc_scrape_metrics URL FILE STOP  in the background: the worker's slot and GPU series from
#                     its /metrics URL, appended to FILE every 0.5 s until the file STOP
#                     exists; SCRAPER its pid
#   gc_start_worker FLAGS...  the worker (one slot per GPU; DEVICE=cpu: two CPU slots) with
#                     FLAGS; falls back to --sandbox_user= when nobody cannot run kforge-eval
# As root, PostgreSQL and the sandbox's children run as nobody (as_user).

# The GPU machine is a closed single-user box and every service runs on its loopback: plaintext
# gRPC (every kforge binary reads KFORGE_INSECURE as --insecure, and warns), and no tokens (the
# coordinator and the gateway read KFORGE_ALLOW_UNAUTHENTICATED, and warn).
export KFORGE_INSECURE=true KFORGE_ALLOW_UNAUTHENTICATED=true

WORK=${WORK:-/tmp/kforge-cluster}
BUNDLE=${BUNDLE:-$PWD/.gpu-carry/cluster/kforge-cluster.tar.xz}
PY=${PYTHON:-$(command -v python3)}
PGPORT=${PGPORT:-55999}
EVAL=${EVAL:-}
if [[ -z ${DEVICE:-} ]]; then
  DEVICE=cpu
  nvidia-smi -L >/dev/null 2>&1 && DEVICE=cuda
fi
L=$OUT/logs
PIDS=()
SANDBOX_USER=nobody

say() { echo "$TAG: $*"; }
die() { say "FAILED: $*"; exit 1; }
as_user() {  # PostgreSQL refuses to run as root; the sandbox's children run as nobody
  if [[ $(id -u) == 0 ]]; then runuser -u nobody -- "$@"; else "$@"; fi
}

gc_begin() {
  rm -rf "$L"
  mkdir -p "$L"
  exec > >(tee "$OUT/run.log") 2>&1
  trap gc_cleanup EXIT
  t_start=$(date +%s)
}

gc_cleanup() {
  for ((i = ${#PIDS[@]} - 1; i >= 0; i--)); do kill -TERM "${PIDS[i]}" 2>/dev/null; done
  for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null; done
  [[ -n ${PGB:-} ]] && as_user "$PGB/pg_ctl" -D "$WORK/pgdata" -m fast stop >/dev/null 2>&1
  cp "$WORK/run/postgres.log" "$L/" 2>/dev/null
  tar -C "$OUT" -czf "$OUT/logs.tar.gz" logs && rm -rf "$L"
}

# The bundle, unpacked where the sandbox user can read it.
gc_unpack() {
  rm -rf "$WORK"
  mkdir -p "$WORK"
  chmod 755 "$WORK"
  if command -v xz >/dev/null; then xz -dc "$BUNDLE"; else  # xz may be missing; Python's lzma is not
    "$PY" -c 'import lzma, shutil, sys; shutil.copyfileobj(lzma.open(sys.argv[1]), sys.stdout.buffer)' "$BUNDLE"
  fi | tar -C "$WORK" -xf - || die "cannot unpack $BUNDLE"
  chmod 755 "$WORK"
  B=$WORK/bin
  PGB=$WORK/pg/usr/lib/postgresql/15/bin
  say "bundle of commit $(cat "$WORK/COMMIT"), device $DEVICE, as uid $(id -u)"
  if [[ ! -e /usr/share/zoneinfo/UTC ]]; then  # PostgreSQL reads the system's zoneinfo
    mkdir -p /usr/share/zoneinfo/Etc
    cp "$WORK/zoneinfo/UTC" /usr/share/zoneinfo/
    cp "$WORK/zoneinfo/Etc/UTC" /usr/share/zoneinfo/Etc/
  fi
  export TZ=UTC PGTZ=UTC
}

# The engine: $EVAL, or built into build-gpu/; as root, the path to it opened for nobody.
gc_build_eval() {
  if [[ -z $EVAL ]]; then
    say "building kforge-eval (scripts/gpu_suite.sh's build step)"
    local t0
    t0=$(date +%s)
    # Its exit status says nothing about the build when no section runs: its log does.
    OUT=$L/suite PYTHON=$PY bash scripts/gpu_suite.sh build > "$L/suite.log" 2>&1
    ! grep -q "BUILD FAILED" "$L/suite.log" || { tail -30 "$L/suite/build.log"; die "engine build"; }
    EVAL=$PWD/build-gpu/gpu_worker/eval/kforge-eval
    say "engine built in $(( $(date +%s) - t0 )) s"
  fi
  EVAL=$(readlink -f "$EVAL")
  [[ -x $EVAL ]] || die "no kforge-eval at $EVAL"
  if [[ $(id -u) == 0 ]] && ! as_user "$EVAL" --help >/dev/null 2>&1; then
    # The checkout (e.g. under /root) may not be traversable by nobody: open the path to it.
    local d
    d=$(dirname "$EVAL")
    while [[ $d != / ]]; do chmod o+x "$d"; d=$(dirname "$d"); done
    say "made the directories above $EVAL traversable for nobody"
  fi
}

gc_start_pg() {
  mkdir -p "$WORK/pgdata" "$WORK/run"
  [[ $(id -u) == 0 ]] && chown nobody "$WORK/pgdata" "$WORK/run"
  as_user "$PGB/initdb" -D "$WORK/pgdata" -A trust -U postgres --no-sync > "$L/initdb.log" 2>&1 ||
    { cat "$L/initdb.log"; die "initdb"; }
  as_user "$PGB/pg_ctl" -D "$WORK/pgdata" -l "$WORK/run/postgres.log" -w -o \
    "-h 127.0.0.1 -p $PGPORT -k $WORK/run -c fsync=off -c jit=off" start >/dev/null ||
    { cat "$WORK/run/postgres.log"; die "PostgreSQL did not start"; }
  PSQL=("$PGB/psql" -h 127.0.0.1 -p "$PGPORT" -U postgres -X -q)
  "${PSQL[@]}" -c "CREATE DATABASE kforge" || die "CREATE DATABASE"
  DB_URL="postgresql://postgres@127.0.0.1:$PGPORT/kforge"
  say "PostgreSQL $("$PGB/postgres" -V | awk '{print $3}') on 127.0.0.1:$PGPORT"
}

start() {
  local name=$1 bin=$2
  shift 2
  rm -f "$WORK/run/$name.ready"
  "$bin" "$@" --ready_file="$WORK/run/$name.ready" > "$L/$name.log" 2>&1 &
  PIDS+=($!)
  for _ in $(seq 600); do
    [[ -f $WORK/run/$name.ready ]] && return 0
    kill -0 "${PIDS[-1]}" 2>/dev/null || { unset 'PIDS[-1]'; return 1; }
    sleep 0.1
  done
  return 1
}
port_of() { sed -E "s/.*\"$2\":([0-9]+).*/\1/" "$WORK/run/$1.ready"; }

# gc_begin, gc_unpack, gc_build_eval and gc_start_pg, the start every script shares.
gc_setup() {
  gc_begin
  gc_unpack
  gc_build_eval
  gc_start_pg
}

# The coordinator on the database of gc_start_pg, with FLAGS; sets COORD (its gRPC address).
# The GPU machine is a closed single-user box and everything runs on loopback: no tokens
# (--allow_unauthenticated, which the coordinator warns about).
gc_start_coordinator() {
  start coordinator "$B/kforge-coordinator" --database_url="$DB_URL" \
    --grpc_address=127.0.0.1:0 --metrics_address=127.0.0.1:0 "$@" ||
    { tail -20 "$L/coordinator.log"; die "coordinator"; }
  COORD=127.0.0.1:$(port_of coordinator grpc_port)
}

gc_start_worker() {
  if [[ $DEVICE == cpu ]]; then
    WORKER_FLAGS=(--device=cpu --slots=2)
  else
    WORKER_FLAGS=(--device=cuda)  # one slot per GPU
  fi
  local flags=(--grpc_address=127.0.0.1:0 --metrics_address=127.0.0.1:0 --eval_binary="$EVAL"
               --cache_dir="$WORK/cache" "${WORKER_FLAGS[@]}" "$@")
  start worker "$B/kforge-worker" "${flags[@]}" && { gc_say_sandbox; return 0; }
  grep -q "sandbox check failed" "$L/worker.log" || { tail -20 "$L/worker.log"; die "worker"; }
  say "the sandbox cannot run kforge-eval as nobody:"
  grep "sandbox check failed" "$L/worker.log" | cut -c1-600
  say "running the children as the worker's own user instead (--sandbox_user=)"
  SANDBOX_USER="(worker's own)"
  mv "$L/worker.log" "$L/worker_sandbox_nobody.log"
  start worker "$B/kforge-worker" "${flags[@]}" --sandbox_user= ||
    { tail -20 "$L/worker.log"; die "worker"; }
  gc_say_sandbox
}

# The worker's own account of its sandbox (user, namespaces, file view, program list).
gc_say_sandbox() {
  say "worker sandbox: $(grep -m1 '"msg":"sandbox"' "$L/worker.log" | cut -c1-400)"
}

gc_scrape_metrics() {
  "$PY" - "$1" "$2" "$3" <<'PYEOF' &
import os, sys, time, urllib.request
url, out, stop = sys.argv[1:4]
keep = ("kforge_worker_slot_busy{", "kforge_worker_gpu_utilization_ratio{",
        "kforge_worker_gpu_memory_used_bytes{", "kforge_worker_slot_busy_ratio{",
        "kforge_worker_slot_busy_seconds_total{", "kforge_worker_slot_evaluations_total{")
with open(out, "w") as f:
    while not os.path.exists(stop):
        t = time.time()
        try:
            body = urllib.request.urlopen(url, timeout=2).read().decode()
        except Exception as e:
            body = ""
        for line in body.splitlines():
            if line.startswith(keep):
                f.write(f"{t:.3f}\t{line}\n")
        f.flush()
        time.sleep(max(0.0, 0.5 - (time.time() - t)))
PYEOF
  SCRAPER=$!
}
