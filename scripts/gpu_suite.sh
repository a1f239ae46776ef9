#!/usr/bin/env bash
# Builds the GPU side (kforge-eval) on a GPU machine and runs, in one go, the engine's GPU case
# suite and the benchmarks. Logs and results go to $OUT (default /tmp/kforge-gpu); a short
# table is printed last.
#
#   bash scripts/gpu_suite.sh [sections]     sections: cases,bench (default both)
#
# Expects: CUDA toolkit, python3 with torch 2.11 (its headers, libpython), protobuf 3.21 and
# protoc, cmake, ninja. KernelBench's tasks for the baseline table at $KERNELBENCH
# (default .gpu-carry/kernelbench, copied there by the caller since ../shared does not travel).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/kforge-gpu}
mkdir -p "$OUT"
SECTIONS=${1:-cases,bench}
PY=${PYTHON:-$(command -v python3)}
KERNELBENCH=${KERNELBENCH:-.gpu-carry/kernelbench}
EVAL=build-gpu/gpu_worker/eval/kforge-eval

{
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu --format=csv
  "$PY" -c 'import torch; print("torch", torch.__version__, torch.cuda.get_device_name(0))'
  nproc; date -u
} > "$OUT/machine.txt" 2>&1

start=$(date +%s)
if ! { cmake -S . -B build-gpu -G Ninja -DKFORGE_GPU_SIDE_ONLY=ON -DKFORGE_BUILD_TESTS=OFF \
         -DCMAKE_BUILD_TYPE=Release -DPython3_EXECUTABLE="$PY" &&
       ninja -C build-gpu kforge-eval; } > "$OUT/build.log" 2>&1; then
  tail -40 "$OUT/build.log"
  echo "BUILD FAILED (log: $OUT/build.log)"
  exit 1
fi
build_s=$(( $(date +%s) - start ))

cases_line="not run"
if [[ $SECTIONS == *cases* ]]; then
  KFORGE_CACHE_DIR=/tmp/kforge-cache "$PY" tests/engine/run_cases.py --eval "$EVAL" \
    --device cuda --out "$OUT/cases.jsonl" --cache-dir /tmp/kforge-cache ${CASES_ARGS:-} \
    > "$OUT/cases.log" 2>&1
  cases_line=$(tail -1 "$OUT/cases.log")
  grep -E "^(FAIL|    reason)" "$OUT/cases.log" | head -40
fi

if [[ $SECTIONS == *bench* ]]; then
  kb_args=()
  [[ -d $KERNELBENCH ]] && kb_args=(--kernelbench "$KERNELBENCH")
  "$PY" gpu_worker/eval/bench/engine_bench.py --eval "$EVAL" --device cuda --out "$OUT" \
    "${kb_args[@]}" ${BENCH_ARGS:-} > "$OUT/bench.log" 2>&1
fi

echo "== kforge GPU suite =="
cat "$OUT/machine.txt"
echo "engine build: ${build_s} s"
echo "cases: $cases_line"
[[ -f $OUT/bench.json ]] && "$PY" - "$OUT/bench.json" <<'PYEOF'
import json, sys
b = json.load(open(sys.argv[1]))
for k, v in b.get("build", {}).items():
    print(f"build {k}: median {v['median_s']} s over {v['n_ok']}/{v['n']}")
def f(x):
    return "-" if x is None else f"{x:.3f}"
for sec in ("stages", "served"):
    for r in b.get(sec, []):
        pre = f" preroll={r['preroll_ms']}" if "preroll_ms" in r else ""
        print(f"{sec:6s} {r['task']:28s} {r['phase']:6s}{pre} {r['verdict']:10s} "
              f"x{f(r['speedup'])} "
              f"wall={f(r['wall_s'])} start={f(r['startup_s'])} dev={f(r.get('device_s'))} "
              f"load={f(r['load_task_s'])} build={f(r['build_s'])} corr={f(r['correctness_s'])} "
              f"time={f(r['timing_s'])} n={r['samples']}")
print("evals/GPU-hour (cached, process each):", b.get("evals_per_gpu_hour_cached"))
print("evals/GPU-hour (cached, fork server):", b.get("evals_per_gpu_hour_served"),
      "first answer incl. server start:", b.get("served_first_answer_s"))
for r in b.get("repeat", []):
    print(f"repeat {r['task']} preroll={r.get('preroll_ms', 0)}: median speedup "
          f"{r['median_speedup']} spread {r['spread_pct']} % "
          f"over {r['ok']}/{r['runs']}, wall {min(r['wall_s'], default=0):.2f}-"
          f"{max(r['wall_s'], default=0):.2f} s, samples {r['samples']}")
bl = b.get("baseline")
if bl: print(f"baseline: {bl['ok']}/{bl['tasks']} tasks in {bl['wall_s']:.0f} s; failed: {bl['failed'][:5]}")
for k, v in b.items():
    if k.endswith("_error"): print(k, v)
PYEOF
# Exit status: 0 when the build passed and no case failed (benchmarks report, they do not fail).
[[ $cases_line == "not run" || $cases_line == *" 0 failed"* ]]
