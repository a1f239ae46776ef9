#!/usr/bin/env bash
# Building ahead, measured: the same batch through one worker twice, first with --prefetch=0
# (each slot builds its own candidate, the GPU waits), then with --prefetch=$PREFETCH (builder
# threads build the next candidates on the CPUs while the slot times the current one). Each run
# starts with a cold build cache and its own copies of the candidates (distinct content hashes),
# so both build everything once. On a machine with the bundle of scripts/gpu_cluster_bundle.sh it:
#   1. unpacks the bundle, builds kforge-eval unless $EVAL names one, starts PostgreSQL and the
#      coordinator (scripts/gpu_cluster_lib.sh);
#   2. for each run: starts the worker, evaluates the batch with `kforge eval`, stops the worker;
#   3. prints per run: wall time of the batch, evaluations per hour, how many evaluations
#      reached a slot, the median build stage of the timed runs, and (prefetch run) the builds
#      ahead that finished while the slot was running another lease (from the worker's log).
# The batch (tiny tasks, so the time is in the builds): cpp_relu and cpp_linear in $VARIANTS
# variants each, $LOAD_INLINE variants of the load_inline ReLU, two variants of a cpp compile
# error, and the nvrtc ReLU in $VARIANTS variants.
#
#   bash scripts/gpu_cluster_build_ahead.sh
#   DEVICE=cpu EVAL=build-w/gpu_worker/eval/kforge-eval bash scripts/gpu_cluster_build_ahead.sh
#
# Environment: OUT (default /tmp/kforge-build-ahead), WORK, DEVICE, EVAL, PYTHON, PGPORT,
# BUNDLE as in scripts/gpu_cluster_lib.sh; VARIANTS (default 4), LOAD_INLINE (default 2),
# PREFETCH (default 2). Exit status 0 when both runs evaluated the whole batch with the same
# verdicts and the prefetch run built ahead while the slot ran.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
TAG=build-ahead
OUT=${OUT:-/tmp/kforge-build-ahead}
VARIANTS=${VARIANTS:-4}
LOAD_INLINE=${LOAD_INLINE:-2}
PREFETCH=${PREFETCH:-2}
# shellcheck source=scripts/gpu_cluster_lib.sh
source scripts/gpu_cluster_lib.sh
gc_setup
gc_start_coordinator
KF=("$B/kforge" --coordinator="$COORD" --timeout_s=1200)

# Writes run $1's candidates for task $2 into $WORK/cands/$1/$2 and prints their paths.
variants() {
  local run=$1 task=$2 dir=$WORK/cands/$1/$2 c v f
  shift 2
  mkdir -p "$dir"
  for c in "$@"; do
    local n=${c#*:} file=${c%%:*}
    for v in $(seq "$n"); do
      f=$dir/${file%.*}_v$v.${file##*.}
      # The variant changes the content hash; in the load_inline file it also changes the
      # extension's name and sources, so that every variant is a build of its own.
      sed -e "s/name=\"kforge_example_tiny_relu\"/name=\"kforge_example_tiny_relu_${run}_v$v\"/" \
          -e "s|^relu_source = r\"\"\"|relu_source = r\"\"\"// $run variant $v|" \
          "examples/candidates/$task/$file" > "$f"
      case $f in
        *.cpp) printf '\n// build-ahead %s variant %s\n' "$run" "$v" >> "$f" ;;
        *) printf '\n# build-ahead %s variant %s\n' "$run" "$v" >> "$f" ;;
      esac
      echo "$f"
    done
  done
}

# One run: a fresh worker with --prefetch=$2 and cache $WORK/cache_$1, the whole batch.
run() {
  local name=$1 prefetch=$2
  rm -rf "$WORK/cache_$name"
  mkdir -p "$WORK/cache_$name"
  chmod 1777 "$WORK/cache_$name"
  gc_start_worker --coordinator="$COORD" --prefetch="$prefetch" --cache_dir="$WORK/cache_$name"
  local worker_pid=${PIDS[-1]}
  mapfile -t relu < <(variants "$name" tiny_relu "cpp_relu.cpp:$VARIANTS" "nvrtc_relu.py:$VARIANTS" \
                        "kernelbench_load_inline.py:$LOAD_INLINE" "cpp_compile_error.cpp:2")
  mapfile -t linear < <(variants "$name" tiny_linear "cpp_linear.cpp:$VARIANTS")
  say "run $name (prefetch $prefetch): $(( ${#relu[@]} + ${#linear[@]} )) evaluations"
  local t0 rc=0
  t0=$(date +%s%N)
  "${KF[@]}" eval --task=examples/tasks/tiny/tiny_relu.py --gpu=any "${relu[@]}" \
    > "$L/client_${name}_relu.log" 2>&1 &
  local c1=$!
  "${KF[@]}" eval --task=examples/tasks/tiny/tiny_linear.py --gpu=any "${linear[@]}" \
    > "$L/client_${name}_linear.log" 2>&1 &
  local c2=$!
  wait "$c1" || rc=1
  wait "$c2" || rc=1
  local wall_ms=$(( ($(date +%s%N) - t0) / 1000000 ))
  kill -TERM "$worker_pid"
  wait "$worker_pid" 2>/dev/null
  unset 'PIDS[-1]'
  mv "$L/worker.log" "$L/worker_$name.log"
  echo "$name $prefetch $wall_ms $rc" >> "$L/runs.txt"
}

: > "$L/runs.txt"
run serial 0
run ahead "$PREFETCH"

# Verdicts and build stages per run (the run is in the candidate's trailing comment).
"${PSQL[@]}" -d kforge -tA -F ' ' -c "
SELECT CASE WHEN c.source LIKE '%build-ahead serial%' THEN 'serial' ELSE 'ahead' END AS run,
       e.verdict, e.result->>'device' AS device, e.result->>'dialect' AS dialect,
       coalesce(e.result->'stages'->>'build_s', '0'), coalesce(e.result->'stages'->>'total_s', '0')
FROM evaluations e JOIN candidates c USING (candidate_id)" > "$L/evaluations.txt" ||
  die "cannot read the evaluations"

"$PY" - "$L" <<'PYEOF' | tee "$L/table.txt"
import collections, json, statistics, sys
out = sys.argv[1]
rows = [l.split() for l in open(f"{out}/evaluations.txt") if l.strip()]
runs = [l.split() for l in open(f"{out}/runs.txt") if l.strip()]
ok = True
verdicts = {}
print(f"{'run':8} {'prefetch':>8} {'evals':>5} {'wall_s':>7} {'evals/h':>8} {'on_slot':>7} "
      f"{'cpp_build_med_s':>15} {'li_build_med_s':>14} {'built_while_busy':>16} {'final_in_build':>14}")
for name, prefetch, wall_ms, rc in runs:
    mine = [r for r in rows if r[0] == name]
    verdicts[name] = collections.Counter(r[1] for r in mine)
    wall = int(wall_ms) / 1000
    cpp = [float(r[4]) for r in mine if r[3] == "cpp" and r[1] == "ok"]
    li = [float(r[4]) for r in mine if r[3] == "kernelbench" and r[1] == "ok"]
    started, running, busy_built, final = 0, set(), 0, 0
    for line in open(f"{out}/worker_{name}.log"):
        try:
            j = json.loads(line)
        except ValueError:
            continue
        m = j.get("msg")
        if m == "evaluation started":
            started += 1
            running.add(j["lease_id"])
        elif m == "evaluation done":
            running.discard(j["lease_id"])
        elif m == "build ahead done":
            busy_built += bool(running - {j["lease_id"]})
            final += j.get("outcome") != "built"
    med = lambda xs: f"{statistics.median(xs):.2f}" if xs else "-"
    print(f"{name:8} {prefetch:>8} {len(mine):>5} {wall:>7.1f} {len(mine) / wall * 3600:>8.0f} "
          f"{started:>7} {med(cpp):>15} {med(li):>14} {busy_built:>16} {final:>14}")
    ok &= rc == "0"
for name, c in verdicts.items():
    print(f"verdicts {name}: " + ", ".join(f"{k} {v}" for k, v in sorted(c.items())))
if len(verdicts) == 2 and verdicts["serial"] != verdicts["ahead"]:
    print("the two runs' verdicts differ")
    ok = False
print("RESULT:", "OK" if ok else "FAILED")
sys.exit(0 if ok else 1)
PYEOF
status=${PIPESTATUS[0]}
(( status == 0 )) && grep -q "RESULT: OK" "$L/table.txt" || exit 1
(( $(awk '$1 == "ahead" {print $9}' "$L/table.txt") > 0 )) || { say "nothing was built ahead while the slot ran"; exit 1; }
exit 0
