#!/usr/bin/env bash
# The dispatch benchmark (docs/benchmarks.md): kforge-dispatch-bench's evaluations per second
# and lease latency with simulated no-op workers, beside pgbench's transactions per second on
# the same PostgreSQL server, on the same machine, in the same run. Loopback only.
#
#   scripts/dispatch_bench.sh [BUILD_DIR] [-- BENCH_FLAGS...]
#
# BUILD_DIR (default build/) is configured by scripts/build.sh when it has no build.ninja yet;
# then only kforge-coordinator and kforge-dispatch-bench are built in it. BENCH_FLAGS go to
# kforge-dispatch-bench after --max_seconds=600 (e.g. --workers=50 --evaluations=5000
# --concurrent_batches=2 --eval_ms=2000).
#
# Environment knobs:
#   COORDINATOR_FLAGS    extra coordinator flags (e.g. "--log_level=warning")
#   PGBENCH_SCALE=10  PGBENCH_CLIENTS=16  PGBENCH_THREADS=2  PGBENCH_SECONDS=30
#   PG_STAT_STATEMENTS=1 load pg_stat_statements (for both measurements) and print the
#                        coordinator's most expensive statements; 0: PostgreSQL defaults only
#   KEEP=1               keep the temporary directory (database, logs) afterwards
#
# The server runs PostgreSQL 15's defaults (fsync, synchronous_commit and full_page_writes
# on) except the listen address, the port, the socket directory and, with
# PG_STAT_STATEMENTS=1, shared_preload_libraries. Both measurements use that same server.
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD=$REPO/build
if [[ $# -gt 0 && $1 != -- ]]; then BUILD=$(realpath "$1"); shift; fi
[[ ${1:-} == -- ]] && shift
BENCH_FLAGS=("$@")

PGBIN=/usr/lib/postgresql/15/bin
PGBENCH_SCALE=${PGBENCH_SCALE:-10}
PGBENCH_CLIENTS=${PGBENCH_CLIENTS:-16}
PGBENCH_THREADS=${PGBENCH_THREADS:-2}
PGBENCH_SECONDS=${PGBENCH_SECONDS:-30}
PG_STAT_STATEMENTS=${PG_STAT_STATEMENTS:-1}

log() { echo "dispatch_bench: $*" >&2; }
TIMEFORMAT='%U %S'  # what `time` prints: user and system CPU seconds of the command

# --- build -----------------------------------------------------------------------------------
# shellcheck source=scripts/env.sh
source "$REPO/scripts/env.sh"
# Everything runs on loopback and the simulated workers speak plaintext without tokens.
export KFORGE_INSECURE=true
if [[ ! -f $BUILD/build.ninja ]]; then
  if [[ $BUILD != "$REPO/build" ]]; then
    log "$BUILD has no build.ninja; configure it or leave BUILD_DIR out"
    exit 2
  fi
  bash "$REPO/scripts/build.sh"
fi
log "building kforge-coordinator and kforge-dispatch-bench in $BUILD"
ninja -C "$BUILD" --quiet kforge-coordinator kforge-dispatch-bench
COORDINATOR_BIN=$BUILD/coordinator/kforge-coordinator
BENCH_BIN=$BUILD/coordinator/bench/kforge-dispatch-bench

# --- a private PostgreSQL --------------------------------------------------------------------
WORK=$(mktemp -d /tmp/kforge-dispatch-bench.XXXXXX)
PGDATA=$WORK/pg
COORD_PID=
SAMPLER_PID=
as_pg() {  # PostgreSQL refuses to run as root
  if [[ $(id -u) == 0 ]]; then runuser -u postgres -- "$@"; else "$@"; fi
}
teardown() {
  set +e
  [[ -n $SAMPLER_PID ]] && kill "$SAMPLER_PID" 2>/dev/null
  if [[ -n $COORD_PID ]] && kill -0 "$COORD_PID" 2>/dev/null; then
    kill -TERM "$COORD_PID"
    wait "$COORD_PID" 2>/dev/null
  fi
  if [[ -f $PGDATA/postmaster.pid ]]; then as_pg "$PGBIN/pg_ctl" -D "$PGDATA" -m fast -w stop >/dev/null; fi
  if [[ ${KEEP:-0} == 1 ]]; then log "kept $WORK"; else rm -rf "$WORK"; fi
}
trap teardown EXIT
[[ $(id -u) == 0 ]] && chown postgres "$WORK"

PGPORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
as_pg "$PGBIN/initdb" -D "$PGDATA" -A trust -U postgres -E UTF8 --locale=C --no-instructions >/dev/null
PG_OPTS="-h 127.0.0.1 -p $PGPORT -k $WORK"
[[ $PG_STAT_STATEMENTS == 1 ]] && PG_OPTS+=" -c shared_preload_libraries=pg_stat_statements"
as_pg "$PGBIN/pg_ctl" -D "$PGDATA" -l "$WORK/postgres.log" -w -o "$PG_OPTS" start >/dev/null
PSQL=(psql -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$PGPORT" -U postgres)
"${PSQL[@]}" -d postgres -c "CREATE DATABASE kforge" -c "CREATE DATABASE pgbench"
if [[ $PG_STAT_STATEMENTS == 1 ]]; then
  "${PSQL[@]}" -d kforge -c "CREATE EXTENSION pg_stat_statements"
fi
POSTMASTER_PID=$(head -1 "$PGDATA/postmaster.pid")
log "PostgreSQL $("${PSQL[@]}" -d postgres -tAc 'SHOW server_version') on 127.0.0.1:$PGPORT" \
    "(fsync=$("${PSQL[@]}" -d postgres -tAc 'SHOW fsync')," \
    "synchronous_commit=$("${PSQL[@]}" -d postgres -tAc 'SHOW synchronous_commit')," \
    "shared_buffers=$("${PSQL[@]}" -d postgres -tAc 'SHOW shared_buffers'))"

HZ=$(getconf CLK_TCK)
# CPU seconds used so far by live processes (utime + stime).
cpu_seconds() {
  local ticks=0 pid
  for pid in "$@"; do
    [[ -r /proc/$pid/stat ]] || continue
    ticks=$((ticks + $(sed 's/^.*) //' "/proc/$pid/stat" | awk '{print $12 + $13}')))
  done
  awk -v t="$ticks" -v hz="$HZ" 'BEGIN { printf "%.2f", t / hz }'
}
# CPU seconds of the whole server so far: the postmaster, its live children, and (cutime,
# cstime) the children it has reaped, such as pgbench's backends.
postgres_cpu() {
  local reaped
  reaped=$(sed 's/^.*) //' "/proc/$POSTMASTER_PID/stat" | awk '{print $14 + $15}')
  awk -v live="$(cpu_seconds "$POSTMASTER_PID" $(pgrep -P "$POSTMASTER_PID"))" -v r="$reaped" \
    -v hz="$HZ" 'BEGIN { printf "%.2f", live + r / hz }'
}
# Busy CPU seconds of the whole machine so far, all cores together.
machine_busy() {
  awk -v hz="$HZ" '/^cpu / { printf "%.2f", ($2 + $3 + $4 + $7 + $8 + $9) / hz }' /proc/stat
}
minus() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a - b }'; }
# Every second until the process ends: time, threads, context switches of its live threads.
sample_threads() {
  local pid=$1
  while kill -0 "$pid" 2>/dev/null; do
    echo "$(date +%s.%N) $(cat "/proc/$pid/task/"*/status 2>/dev/null |
      awk '/^Name:/ { n++ } /ctxt_switches/ { s += $2 } END { print n, s }')"
    sleep 1
  done
}

# --- the coordinator and the dispatch benchmark ----------------------------------------------
read -r -a EXTRA_COORD <<<"${COORDINATOR_FLAGS:-}"
"$COORDINATOR_BIN" --database_url="postgresql://postgres@127.0.0.1:$PGPORT/kforge" \
  --grpc_address=127.0.0.1:0 --metrics_address=127.0.0.1:0 --ready_file="$WORK/coordinator.ready" \
  --max_queue_depth=10000000 --allow_unauthenticated "${EXTRA_COORD[@]}" >"$WORK/coordinator.log" 2>&1 &
COORD_PID=$!
for _ in $(seq 300); do
  [[ -f $WORK/coordinator.ready ]] && break
  kill -0 "$COORD_PID" 2>/dev/null || { tail -20 "$WORK/coordinator.log"; log "coordinator failed"; exit 1; }
  sleep 0.1
done
[[ -f $WORK/coordinator.ready ]] || { log "coordinator did not start"; exit 1; }
COORD=127.0.0.1:$(sed -E 's/.*"grpc_port":([0-9]+).*/\1/' "$WORK/coordinator.ready")

[[ $PG_STAT_STATEMENTS == 1 ]] && "${PSQL[@]}" -d kforge -tAc "SELECT pg_stat_statements_reset()" >/dev/null
sample_threads "$COORD_PID" >"$WORK/coordinator-threads.log" &
SAMPLER_PID=$!
log "kforge-dispatch-bench against the coordinator at $COORD ${BENCH_FLAGS[*]}"
coord_cpu0=$(cpu_seconds "$COORD_PID") pg_cpu0=$(postgres_cpu) busy0=$(machine_busy)
bench_start=$(date +%s.%N)
set +e
{ time "$BENCH_BIN" --coordinator="$COORD" --max_seconds=600 "${BENCH_FLAGS[@]}" >"$WORK/dispatch.out" 2>&3; } \
  3>&2 2>"$WORK/dispatch.time"
bench_rc=$?
set -e
bench_wall=$(minus "$(date +%s.%N)" "$bench_start")
coord_cpu=$(minus "$(cpu_seconds "$COORD_PID")" "$coord_cpu0")
pg_cpu=$(minus "$(postgres_cpu)" "$pg_cpu0")
busy=$(minus "$(machine_busy)" "$busy0")
bench_cpu=$(awk '{ printf "%.2f", $1 + $2 }' "$WORK/dispatch.time")
cat "$WORK/dispatch.out"
kill "$SAMPLER_PID" 2>/dev/null || true
wait "$SAMPLER_PID" 2>/dev/null || true
SAMPLER_PID=
# Context switches per second while the most threads were alive (threads that ended are not
# counted, so this is a lower bound).
read -r max_threads switch_rate < <(awk '
  { t[NR] = $1; n[NR] = $2; s[NR] = $3; if ($2 > max) max = $2 }
  END { for (i = 1; i <= NR; i++) if (n[i] >= max * 0.9) { if (!a) a = i; b = i }
        printf "%d %.0f\n", max, (b > a) ? (s[b] - s[a]) / (t[b] - t[a]) : 0 }' \
  "$WORK/coordinator-threads.log")
DISPATCH_JSON=$(grep '^{"bench":"dispatch"' "$WORK/dispatch.out" || true)
if [[ -z $DISPATCH_JSON ]]; then
  log "kforge-dispatch-bench printed no result (exit $bench_rc); coordinator log tail:"
  tail -20 "$WORK/coordinator.log" >&2
  exit 1
fi

if [[ $PG_STAT_STATEMENTS == 1 ]]; then
  echo
  echo "coordinator SQL during the dispatch run (pg_stat_statements, top 8 by total time):"
  "${PSQL[@]}" -d kforge -P pager=off -c "
    SELECT calls, round(total_exec_time::numeric, 0) AS total_ms,
           round(mean_exec_time::numeric, 3) AS mean_ms, rows,
           left(regexp_replace(query, '\s+', ' ', 'g'), 90) AS query
    FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = 'kforge')
    ORDER BY total_exec_time DESC LIMIT 8"
  SQL_TOTALS=$("${PSQL[@]}" -d kforge -tAc "
    SELECT sum(calls) || ' ' || round(sum(total_exec_time)::numeric / 1000, 2)
    FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = 'kforge')")
else
  SQL_TOTALS="0 0"
fi
kill -TERM "$COORD_PID"
wait "$COORD_PID" 2>/dev/null || true
COORD_PID=

# --- pgbench on the same server --------------------------------------------------------------
log "pgbench -i -s $PGBENCH_SCALE"
pgbench -h 127.0.0.1 -p "$PGPORT" -U postgres -i -s "$PGBENCH_SCALE" -q pgbench 2>"$WORK/pgbench-init.log"
"${PSQL[@]}" -d pgbench -c "CHECKPOINT"
# run_pgbench [FLAGS]: prints "tps cpu_s_of_pgbench_and_postgres busy_cpu_s wall_s".
run_pgbench() {
  local out=$WORK/pgbench$*.out pg0 busy0 t0
  pg0=$(postgres_cpu) busy0=$(machine_busy) t0=$(date +%s.%N)
  { time pgbench -h 127.0.0.1 -p "$PGPORT" -U postgres -c "$PGBENCH_CLIENTS" \
      -j "$PGBENCH_THREADS" -T "$PGBENCH_SECONDS" "$@" pgbench >"$out" 2>&1; } 2>"$out.time"
  echo "$(sed -nE 's/^tps = ([0-9.]+) \(without initial connection time\)/\1/p' "$out")" \
    "$(awk -v pg="$(minus "$(postgres_cpu)" "$pg0")" '{ printf "%.2f", pg + $1 + $2 }' "$out.time")" \
    "$(minus "$(machine_busy)" "$busy0")" "$(minus "$(date +%s.%N)" "$t0")"
}
log "pgbench -c $PGBENCH_CLIENTS -j $PGBENCH_THREADS -T $PGBENCH_SECONDS (TPC-B-like)"
read -r TPS_TPCB TPCB_OURS TPCB_BUSY TPCB_WALL < <(run_pgbench)
log "pgbench -c $PGBENCH_CLIENTS -j $PGBENCH_THREADS -T $PGBENCH_SECONDS -S (select only)"
read -r TPS_SELECT _ _ _ < <(run_pgbench -S)

# --- side by side ----------------------------------------------------------------------------
echo
R_JSON=$DISPATCH_JSON R_CORES=$(nproc) R_TPCB=${TPS_TPCB:-0} R_SELECT=${TPS_SELECT:-0} \
R_COORD=$coord_cpu R_PG=$pg_cpu R_BENCH=$bench_cpu R_BUSY=$busy R_WALL=$bench_wall \
R_TPCB_OURS=${TPCB_OURS:-0} R_TPCB_BUSY=${TPCB_BUSY:-0} R_TPCB_WALL=${TPCB_WALL:-0} \
R_THREADS=$max_threads R_SWITCHES=$switch_rate R_SQL="$SQL_TOTALS" \
R_OS="$(. /etc/os-release && echo "$PRETTY_NAME")" \
R_PGBENCH="-s $PGBENCH_SCALE -c $PGBENCH_CLIENTS -j $PGBENCH_THREADS -T $PGBENCH_SECONDS" \
python3 - <<'EOF'
import json, os
e = os.environ
num = lambda k: float(e.get(k) or 0)
d = json.loads(e["R_JSON"])
cores = int(e["R_CORES"])
tpcb, sel = num("R_TPCB"), num("R_SELECT")
coord_cpu, pg_cpu, bench_cpu = num("R_COORD"), num("R_PG"), num("R_BENCH")
busy, wall = num("R_BUSY"), num("R_WALL")
sql_calls, sql_s = (float(x) for x in e["R_SQL"].split())

evals = d["evals_per_s"]
lt = d["lease_turnaround_ms"]
ratio = evals / tpcb if tpcb else 0
done = max(d["records"], 1)
def others(busy, ours, wall):  # share of the machine used by processes outside the benchmark
    return max(busy - ours, 0) / (wall * cores) if wall else 0
others_dispatch = others(busy, coord_cpu + pg_cpu + bench_cpu, wall)
others_pgbench = others(num("R_TPCB_BUSY"), num("R_TPCB_OURS"), num("R_TPCB_WALL"))
print(f"machine: {cores} cores, {e['R_OS']}; loopback only, one PostgreSQL 15 server for both")
rows = [
    (f"dispatch: evaluations/s end to end ({d['workers']} workers x "
     f"{d['slots_per_worker']} slot, eval {d['eval_ms']:g} ms)", f"{evals:.1f}"),
    ("dispatch: evaluations/s steady (middle 80% of results)", f"{d['steady_evals_per_s']:.1f}"),
    ("dispatch: lease turnaround p50 / p99 (ms)", f"{lt['p50']:.1f} / {lt['p99']:.1f}"),
    ("dispatch: lease turnaround p90 / max (ms)", f"{lt['p90']:.1f} / {lt['max']:.1f}"),
    ("dispatch: idle turnaround (no committed work) n / p50 / p99 (ms)",
     f"{d['idle_turnaround_ms']['n']} / {d['idle_turnaround_ms']['p50']:.0f} / "
     f"{d['idle_turnaround_ms']['p99']:.0f}"),
    (f"pgbench TPC-B-like tps ({e['R_PGBENCH']})", f"{tpcb:.1f}"),
    ("pgbench select-only tps (-S, same flags)", f"{sel:.1f}"),
    ("ratio: dispatch evaluations/s / pgbench TPC-B tps", f"{ratio:.3f}"),
    (f"CPU s in the dispatch run ({wall:.0f} s): coordinator/postgres/bench",
     f"{coord_cpu:.1f} / {pg_cpu:.1f} / {bench_cpu:.1f}"),
    ("CPU ms per evaluation: coordinator / postgres",
     f"{1000 * coord_cpu / done:.2f} / {1000 * pg_cpu / done:.2f}"),
    ("coordinator threads / context switches per evaluation",
     f"{num('R_THREADS'):.0f} / {num('R_SWITCHES') / max(d['steady_evals_per_s'], 1e-9):.0f}"),
    ("machine share used by other processes: dispatch / pgbench",
     f"{100 * others_dispatch:.0f}% / {100 * others_pgbench:.0f}%"),
]
if sql_calls:
    rows.append(("SQL statements / SQL exec ms per evaluation",
                 f"{sql_calls / done:.1f} / {1000 * sql_s / done:.2f}"))
for name, value in rows:
    print(f"{name:<68} {value:>14}")
if max(others_dispatch, others_pgbench) > 0.1:
    print("warning: other processes used more than 10% of the machine; numbers are unreliable")
ok_rate = ratio >= 0.5
ok_p99 = lt["p99"] < 50 and lt["n"] > 0
print(f"target: evaluations/s >= 0.5 x pgbench tps: {'met' if ok_rate else 'NOT met'}; "
      f"p99 lease turnaround < 50 ms: {'met' if ok_p99 else 'NOT met'}")
print(json.dumps({"bench": "dispatch_vs_pgbench", "dispatch": d, "pgbench_tpcb_tps": tpcb,
                  "pgbench_select_tps": sel, "ratio": round(ratio, 4),
                  "coordinator_cpu_s": coord_cpu, "postgres_cpu_s": pg_cpu,
                  "bench_cpu_s": bench_cpu, "coordinator_threads": num("R_THREADS"),
                  "coordinator_switches_per_s": num("R_SWITCHES"), "sql_calls": sql_calls,
                  "sql_exec_s": sql_s, "cores": cores,
                  "others_share_dispatch": round(others_dispatch, 3),
                  "others_share_pgbench": round(others_pgbench, 3),
                  "target_rate_met": ok_rate, "target_p99_met": ok_p99}))
EOF
exit "$bench_rc"
