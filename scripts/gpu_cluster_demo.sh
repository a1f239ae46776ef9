#!/usr/bin/env bash
# The README's demo on the GPU machine (no gRPC, no PostgreSQL, no network), from the bundle of
# scripts/gpu_cluster_bundle.sh (.gpu-carry/cluster/kforge-cluster.tar.xz). What
# scripts/demo.sh does after its build step:
#   1. unpacks the bundle into $WORK and builds kforge-eval (scripts/gpu_cluster_lib.sh; EVAL
#      names a built one instead);
#   2. starts PostgreSQL, the coordinator (--gateway_address: the gateway's port is picked
#      first), the gateway (offline proposer) and one worker (one slot per GPU; DEVICE=cpu:
#      --device cpu --slots 2);
#   3. evaluates example candidates of tiny_relu (correct, wrong, raises, syntax_error,
#      crashes), then runs an optimization job per example task (GPU: the nvrtc seeds, and
#      19_ReLU, 23_Softmax, 40_LayerNorm, 76_Gemm_Add_ReLU from $KERNELBENCH; CPU: the torch
#      seeds), all submitted at once and then watched one by one (scripts/demo_jobs.sh);
#   4. prints the results table from PostgreSQL last.
# The output goes to $OUT/run.log, the services' logs to $OUT/logs.tar.gz (default OUT
# /tmp/kforge-gpu-demo). Exit status 0 when every job succeeded.
#
#   bash scripts/gpu_cluster_demo.sh
#   DEVICE=cpu EVAL=build-w/gpu_worker/eval/kforge-eval bash scripts/gpu_cluster_demo.sh
#
# Environment: those of scripts/gpu_cluster_lib.sh (WORK, BUNDLE, PYTHON, PGPORT, DEVICE, EVAL),
# OUT, KERNELBENCH (default .gpu-carry/kernelbench), JOB_PARAMS (the jobs' strategy parameters,
# default candidates_per_prompt=1: at most two new candidates a round), DEADLINE_S (default
# 480: the jobs get --max_wall_s up to 60 s before it, and any job still running at it is
# cancelled, so the table always comes), KFORGE_DEMO_LLM (as for scripts/demo.sh; no provider
# is reachable there).
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
TAG=gpu-demo
OUT=${OUT:-/tmp/kforge-gpu-demo}
KERNELBENCH=${KERNELBENCH:-.gpu-carry/kernelbench}
JOB_PARAMS=${JOB_PARAMS:-candidates_per_prompt=1}
DEADLINE_S=${DEADLINE_S:-480}
mkdir -p "$OUT"
# shellcheck source=scripts/gpu_cluster_lib.sh
source scripts/gpu_cluster_lib.sh
# shellcheck source=scripts/demo_jobs.sh
source scripts/demo_jobs.sh
gc_setup

# The gateway's port is chosen first: the coordinator (which applies the migrations the
# gateway waits for) must know where to find it.
GW_PORT=$("$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
gc_start_coordinator --gateway_address="127.0.0.1:$GW_PORT"
start gateway "$B/kforge-gateway" --database_url="$DB_URL" \
  --grpc_address="127.0.0.1:$GW_PORT" --metrics_address=127.0.0.1:0 ||
  { tail -20 "$L/gateway.log"; die "gateway"; }
gc_start_worker --coordinator="$COORD"
if [[ $DEVICE == cuda ]]; then
  say "GPUs: $(nvidia-smi -L | wc -l); one worker slot per GPU"
else
  say "DEVICE=cpu: a CPU worker with two slots (candidates that need a GPU get rule no_gpu)"
fi

KF=("$B/kforge" --coordinator="$COORD")
for svc in coordinator gateway worker; do
  say "$svc health: $("$B/kforge" health "127.0.0.1:$(port_of $svc grpc_port)")"
done
"${KF[@]}" workers

demo_eval_examples "$PWD"

# The jobs stop starting rounds 60 s before the deadline; whatever still runs at it is
# cancelled (its running evaluations finish and are stored), so the table always comes.
wall_s=$(( DEADLINE_S - 60 - ($(date +%s) - t_start) ))
(( wall_s >= 30 )) || wall_s=30
left_s=$(( DEADLINE_S - ($(date +%s) - t_start) ))
( sleep $(( left_s > 1 ? left_s : 1 )) >/dev/null 2>&1 &&
  "${KF[@]}" job list 2>/dev/null | awk '$2 == "queued" || $2 == "running" {print $1}' |
    while read -r job; do
      echo "$TAG: deadline ${DEADLINE_S} s reached: cancelling job $job"
      "${KF[@]}" job cancel "$job"
    done ) &
WATCHDOG=$!
say "jobs: strategy parameters $JOB_PARAMS, at most ${wall_s} s each"
demo_jobs_select "$PWD" "$DEVICE" "$KERNELBENCH"
demo_jobs_run "$PWD" --params="$JOB_PARAMS" --max_wall_s="$wall_s"
kill "$WATCHDOG" 2>/dev/null
wait "$WATCHDOG" 2>/dev/null

echo
say "total wall $(( $(date +%s) - t_start )) s; logs: $OUT/run.log, $OUT/logs.tar.gz"
IFS='|' read -r jobs_failed jobs_all < <("${PSQL[@]}" -d kforge -tA -c \
  "SELECT count(*) FILTER (WHERE state <> 'succeeded'), count(*) FROM jobs")
demo_results "${PSQL[@]}" -d kforge
# How the sandboxed worker's evaluations were timed: the activity clock (CUPTI inside the
# sandbox), or the events with the note saying why not.
echo
say "timing clocks of the stored ok evaluations:"
"${PSQL[@]}" -d kforge -c "SELECT result->>'timing_clock' AS clock,
    coalesce(result->>'timing_preroll_ms', '0') AS preroll_ms,
    left(coalesce(result->>'timing_clock_note', ''), 120) AS note, count(*)
  FROM evaluations WHERE verdict = 'ok' GROUP BY 1, 2, 3 ORDER BY 4 DESC"
[[ ${jobs_all:-0} -gt 0 && ${jobs_failed:-1} == 0 ]]
