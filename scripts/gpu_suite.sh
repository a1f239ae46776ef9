#!/usr/bin/env bash
# Builds the GPU side (kforge-eval) on a GPU machine and runs, in one go, the engine's GPU case
# suite and the benchmarks. Logs and results go to $OUT (default /tmp/kforge-gpu); a short
# table is printed last.
#
#   bash scripts/gpu_suite.sh [sections]     sections: unit,cases,bench (the default), probe,
#                                            tracecost, compat, check, drift, hop
#
# unit: the engine's GoogleTest binaries (engine_unit_test, cpp_dialect_test, fs_lock_test),
# whose GPU tests are skipped on machines without one; cases: tests/engine/run_cases.py on the
# GPU; bench: gpu_worker/eval/bench/engine_bench.py; probe: gpu_worker/eval/bench/span_probe.py
# (torch only, where a drained sample's time varies); tracecost: gpu_worker/eval/bench/
# trace_cost.sh (eager references under the events and the activity clock); compat:
# scripts/corpus_compat.py (CUDA-L1's corpus through kforge-eval and through KernelBench's own
# harness, within COMPAT_BUDGET_S seconds counted from the suite's start, default 450;
# COMPAT_ARGS="--repeats 3" evaluates each candidate kforge judged ok 3 times in all, in
# separate evaluation processes, and adds the repeatability, cap, wall, throughput and GPU-busy
# summary to compat_table.txt and compat_run.json); check: scripts/independent_check.py
# (after compat: re-measures a sample of its `ok` rows, CHECK_INPUT, default
# $OUT/compat.jsonl, with a bare method, CUDA graph replay or events behind a pre-roll, no
# kforge code, into $OUT/check; it ends by CHECK_BUDGET_S seconds from the suite's start,
# default 560, and reuses KB's builds from compat's default work dir /tmp/kforge-compat).
# drift: gpu_worker/eval/bench/drift_probe.py (one task and candidate again and again through
# one fork server: does the call clock drift with the server's age? DRIFT_ARGS, default 19_ReLU
# with examples/candidates/19_ReLU/nvrtc_vec4.py for 60 s; add
# "--restart-every 10" for a fresh server every 10 evaluations), into $OUT/drift.jsonl with a
# first-quarter / last-quarter summary.
# hop: gpu_worker/eval/bench/hop_probe.py (round trips between two processes with a CUDA
# context each, torch alone: what the GPU's switch between contexts costs) and one evaluation
# of tiny_relu with KFORGE_CALL_PROFILE=1 (gpu_worker/eval/call_profile.h: where kforge's
# calls spend their time), into $OUT/hop_probe.jsonl and $OUT/call_profile.txt.
# Environment: CASES_ARGS, BENCH_ARGS, PROBE_ARGS, COMPAT_ARGS, CHECK_ARGS, DRIFT_ARGS (passed
# on), OUT,
# PYTHON, KERNELBENCH, GTEST_SOURCE, COMPAT_BUDGET_S, CHECK_BUDGET_S, CHECK_INPUT.
# MPS=1: every section runs under an MPS daemon (nvidia-cuda-mps-control -d) that the suite
# starts first, with its pipe and log directories under /tmp/kforge-mps, and stops at its end
# (docs/operations.md, "MPS"); the results then say system.mps. It also records whether the
# daemon answers a control command (get_server_list) from user nobody, in
# $OUT/mps_control_as_nobody.txt. Without the binary the suite stops with an error.
#
# Expects: CUDA toolkit, python3 with torch 2.11 (its headers, libpython), protobuf 3.21 and
# protoc, cmake, ninja. What ../shared and Debian would give is carried in .gpu-carry (filled by
# scripts/gpu_carry.sh): KernelBench's tasks ($KERNELBENCH, default .gpu-carry/kernelbench)
# and GoogleTest's sources ($GTEST_SOURCE, default .gpu-carry/googletest; without them the
# unit section is not run); for compat, the corpus (.gpu-carry/corpora) and KernelBench's
# harness (.gpu-carry/kb_harness).
set -uo pipefail
suite_start=$(date +%s)
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/kforge-gpu}
mkdir -p "$OUT"
SECTIONS=${1:-unit,cases,bench}
PY=${PYTHON:-$(command -v python3)}
KERNELBENCH=${KERNELBENCH:-.gpu-carry/kernelbench}
GTEST_SOURCE=${GTEST_SOURCE:-$PWD/.gpu-carry/googletest}
EVAL=build-gpu/gpu_worker/eval/kforge-eval
UNIT_TESTS=(engine_unit_test cpp_dialect_test fs_lock_test)
unit=0
[[ $SECTIONS == *unit* && -f $GTEST_SOURCE/CMakeLists.txt ]] && unit=1

{
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu --format=csv
  "$PY" -c 'import torch; print("torch", torch.__version__, torch.cuda.get_device_name(0))'
  nproc; date -u
} > "$OUT/machine.txt" 2>&1

if [[ ${MPS:-0} == 1 ]]; then
  command -v nvidia-cuda-mps-control > /dev/null ||
    { echo "MPS=1: no nvidia-cuda-mps-control on this machine"; exit 1; }
  export CUDA_MPS_PIPE_DIRECTORY=/tmp/kforge-mps/pipe CUDA_MPS_LOG_DIRECTORY=/tmp/kforge-mps/log
  mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
  nvidia-cuda-mps-control -d || { echo "MPS=1: the MPS control daemon did not start"; exit 1; }
  stop_mps() {
    echo quit | nvidia-cuda-mps-control
    sleep 1
    mkdir -p "$OUT/mps-log" && cp "$CUDA_MPS_LOG_DIRECTORY"/* "$OUT/mps-log/" 2> /dev/null
  }
  trap stop_mps EXIT
  echo "MPS: control daemon started (pipe $CUDA_MPS_PIPE_DIRECTORY)" >> "$OUT/machine.txt"
  # Does the daemon take control commands from another user than its own (a candidate runs as
  # nobody under the worker)? A read-only one: the server list (docs/operations.md, "MPS").
  "$PY" - > "$OUT/mps_control_as_nobody.txt" 2>&1 <<'PY'
import os, pwd, subprocess
nobody = pwd.getpwnam("nobody")
def drop():
    os.setgroups([])
    os.setgid(nobody.pw_gid)
    os.setuid(nobody.pw_uid)
try:
    r = subprocess.run(["nvidia-cuda-mps-control"], input="get_server_list\n", text=True,
                       capture_output=True, timeout=20, preexec_fn=drop,
                       env={"CUDA_MPS_PIPE_DIRECTORY": os.environ["CUDA_MPS_PIPE_DIRECTORY"],
                            "PATH": os.environ.get("PATH", "")})
    print("as nobody: get_server_list exit", r.returncode, "stdout", repr(r.stdout[:200]),
          "stderr", repr(r.stderr[:200]))
except Exception as e:
    print("as nobody: get_server_list failed to run:", repr(e))
PY
  cat "$OUT/mps_control_as_nobody.txt" >> "$OUT/machine.txt"
fi

# As the worker does (gpu_worker/main.cc): the GPU's capability, so that load_inline builds
# for it and the fork servers prepare their comparison kernels for it (compare.h).
if [[ -z ${TORCH_CUDA_ARCH_LIST:-} ]]; then
  cap=$("$PY" -c 'import torch; print("%d.%d" % torch.cuda.get_device_capability())' 2> /dev/null)
  [[ -n $cap ]] && export TORCH_CUDA_ARCH_LIST=$cap
fi

start=$(date +%s)
if (( unit )); then
  config=(-DKFORGE_BUILD_TESTS=ON -DKFORGE_GTEST_SOURCE="$GTEST_SOURCE")
  targets=(kforge-eval "${UNIT_TESTS[@]}")
else
  config=(-DKFORGE_BUILD_TESTS=OFF)
  targets=(kforge-eval)
fi
# Warnings are not fatal there (another g++ than the development machines'); they are counted.
if ! { cmake -S . -B build-gpu -G Ninja -DKFORGE_GPU_SIDE_ONLY=ON -DKFORGE_WERROR=OFF \
         "${config[@]}" -DCMAKE_BUILD_TYPE=Release -DPython3_EXECUTABLE="$PY" &&
       ninja -C build-gpu "${targets[@]}"; } > "$OUT/build.log" 2>&1; then
  tail -40 "$OUT/build.log"
  echo "BUILD FAILED (log: $OUT/build.log)"
  exit 1
fi
build_s=$(( $(date +%s) - start ))
build_warnings=$(grep -c "warning:" "$OUT/build.log" || true)

unit_line="not run"
if (( unit )); then
  unit_passed=0 unit_failed=()
  rm -f "$OUT"/unit_*.log
  for t in "${UNIT_TESTS[@]}"; do
    if KFORGE_SOURCE_DIR=$PWD KFORGE_BINARY_DIR=$PWD/build-gpu \
         timeout 300 "build-gpu/gpu_worker/eval/$t" > "$OUT/unit_$t.log" 2>&1; then
      unit_passed=$((unit_passed + 1))
    else
      unit_failed+=("$t")
      grep -E "^\[  FAILED|Failure" "$OUT/unit_$t.log" | head -20
    fi
  done
  # Each skipped test's own line (the summary at the end lists it again, without a time).
  skipped=$(cat "$OUT"/unit_*.log | grep -c '^\[  SKIPPED \] .* ([0-9]* ms)$' || true)
  unit_line="$unit_passed of ${#UNIT_TESTS[@]} binaries passed (${skipped} tests skipped)"
  (( ${#unit_failed[@]} )) && unit_line+="; failed: ${unit_failed[*]}"
elif [[ $SECTIONS == *unit* ]]; then
  unit_line="not run: no GoogleTest sources at $GTEST_SOURCE (scripts/gpu_carry.sh)"
fi

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

if [[ $SECTIONS == *tracecost* ]]; then
  OUT=$OUT KERNELBENCH=$KERNELBENCH bash gpu_worker/eval/bench/trace_cost.sh 2 \
    > "$OUT/trace_cost_table.txt" 2>&1
fi

if [[ $SECTIONS == *probe* ]]; then
  "$PY" gpu_worker/eval/bench/span_probe.py --json "$OUT/span_probe.json" \
    ${PROBE_ARGS:---seconds 40} > "$OUT/span_probe.log" 2>&1
fi

if [[ $SECTIONS == *compat* ]]; then
  # The budget counts from the suite's start, so the engine build is inside it.
  compat_budget=$(( ${COMPAT_BUDGET_S:-450} - ($(date +%s) - suite_start) ))
  "$PY" scripts/corpus_compat.py --eval "$EVAL" --device cuda --out "$OUT" \
    --corpus .gpu-carry/corpora/cudal1_a100.jsonl --kb-harness .gpu-carry/kb_harness/src \
    --budget-s "$compat_budget" ${COMPAT_ARGS:-} > "$OUT/compat.log" 2>&1 ||
    { echo "compat failed:"; tail -20 "$OUT/compat.log"; }
fi

if [[ $SECTIONS == *drift* ]]; then
  drift_default=(--task "$KERNELBENCH/level1/19_ReLU.py"
                 --candidate examples/candidates/19_ReLU/nvrtc_vec4.py --seconds 60)
  # shellcheck disable=SC2086
  "$PY" gpu_worker/eval/bench/drift_probe.py --eval "$EVAL" --device cuda \
    ${DRIFT_ARGS:-${drift_default[*]}} > "$OUT/drift.jsonl" 2> "$OUT/drift.log"
  "$PY" - "$OUT/drift.jsonl" > "$OUT/drift_table.txt" <<'PYEOF'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
q = max(1, len(rows) // 4)
def med(part, key):
    v = [r[key] for r in part if r.get(key) is not None]
    return f"{statistics.median(v):.4f}" if v else "-"
print(f"drift: {len(rows)} evaluations over {rows[-1]['at_s'] if rows else 0} s")
for key in ("hop_ms", "ref_min_ms", "ref_median_ms", "cand_min_ms", "cand_median_ms", "wall_s"):
    print(f"  {key:15s} first quarter {med(rows[:q], key)}  last quarter {med(rows[-q:], key)}")
PYEOF
fi

if [[ $SECTIONS == *hop* ]]; then
  "$PY" gpu_worker/eval/bench/hop_probe.py --iters 2000 > "$OUT/hop_probe.jsonl" \
    2> "$OUT/hop_probe.log" || echo "hop probe failed (log: $OUT/hop_probe.log)"
  rm -f "$OUT/call_profile.json"  # never a previous run's
  KFORGE_CALL_PROFILE=1 "$EVAL" --task examples/tasks/tiny/tiny_relu.py \
    --candidate examples/candidates/tiny_relu/correct.py --device cuda \
    --json "$OUT/call_profile.json" > /dev/null 2> "$OUT/call_profile.log" ||
    echo "call profile: kforge-eval exited with $? (log: $OUT/call_profile.log)"
  [[ -f $OUT/call_profile.json ]] && "$PY" -c 'import json, sys
r = json.load(open(sys.argv[1]))
print("call profile (tiny_relu):", r["verdict"], "hop", r.get("call_overhead_ms"), "ms")
for l in (r.get("output_log") or "").splitlines():
    if l.startswith("kforge-call-profile"): print(" ", l)' "$OUT/call_profile.json" \
    > "$OUT/call_profile.txt" 2>&1
fi

check_line="not run"
if [[ $SECTIONS == *check* ]]; then
  check_input=${CHECK_INPUT:-$OUT/compat.jsonl}
  check_budget=$(( ${CHECK_BUDGET_S:-560} - ($(date +%s) - suite_start) ))
  if [[ ! -f $check_input ]]; then
    check_line="not run: no $check_input (run the compat section first)"
  elif "$PY" scripts/independent_check.py --input "$check_input" --out "$OUT/check" \
         --device cuda --corpus .gpu-carry/corpora/cudal1_a100.jsonl \
         --budget-s "$check_budget" ${CHECK_ARGS:-} > "$OUT/check.log" 2>&1; then
    check_line=$(tail -1 "$OUT/check.log")
  else
    check_line="failed (check.log)"
    tail -20 "$OUT/check.log"
  fi
fi

echo "== kforge GPU suite =="
cat "$OUT/machine.txt"
echo "engine build: ${build_s} s, ${build_warnings} compiler warnings (build.log)"
echo "unit: $unit_line"
echo "cases: $cases_line"
echo "check: $check_line"
[[ -f $OUT/bench.json ]] && "$PY" - "$OUT/bench.json" <<'PYEOF'
import json, sys
b = json.load(open(sys.argv[1]))
for k, v in b.get("build", {}).items():
    print(f"build {k}: median {v['median_s']} s over {v['n_ok']}/{v['n']}")
def f(x):
    return "-" if x is None else f"{x:.3f}"
for sec in ("stages", "served"):
    for r in b.get(sec, []):
        tv = f" {r['timing']}/{r.get('clock')}" if "timing" in r else ""
        fb = r.get("event_fallbacks") or [0, 0]
        fb = f" fallbacks={fb[0]}/{fb[1]}" if any(fb) else ""
        print(f"{sec:6s} {r['task']:28s} {r['phase']:6s}{tv} {r['verdict']:10s} "
              f"x{f(r['speedup'])} "
              f"wall={f(r['wall_s'])} start={f(r['startup_s'])} dev={f(r.get('device_s'))} "
              f"load={f(r['load_task_s'])} build={f(r['build_s'])} corr={f(r['correctness_s'])} "
              f"time={f(r['timing_s'])} n={r['samples']}{fb}")
print("evals/GPU-hour (cached, process each):", b.get("evals_per_gpu_hour_cached"))
print("evals/GPU-hour (cached, fork server):", b.get("evals_per_gpu_hour_served"),
      "first answer incl. server start:", b.get("served_first_answer_s"))
for r in b.get("repeat", []):
    print(f"repeat {r['task']} timing={r.get('timing')}: median speedup "
          f"{r['median_speedup']} spread {r['spread_pct']} % "
          f"over {r['ok']}/{r['runs']}, wall {min(r['wall_s'], default=0):.2f}-"
          f"{max(r['wall_s'], default=0):.2f} s, samples {r['samples']}")
bl = b.get("baseline")
if bl: print(f"baseline: {bl['ok']}/{bl['tasks']} tasks in {bl['wall_s']:.0f} s; failed: {bl['failed'][:5]}")
for k, v in b.items():
    if k.endswith("_error"): print(k, v)
PYEOF
[[ -f $OUT/span_probe.log ]] && sed -n '/^== spread/,$p' "$OUT/span_probe.log"
[[ -f $OUT/trace_cost_table.txt ]] && cat "$OUT/trace_cost_table.txt"
[[ $SECTIONS == *drift* && -f $OUT/drift_table.txt ]] && cat "$OUT/drift_table.txt"
[[ $SECTIONS == *hop* && -f $OUT/hop_probe.jsonl ]] && cat "$OUT/hop_probe.jsonl"
[[ $SECTIONS == *hop* && -f $OUT/call_profile.txt ]] && cat "$OUT/call_profile.txt"
[[ $SECTIONS == *compat* && -f $OUT/compat_table.txt ]] && cat "$OUT/compat_table.txt"
[[ $SECTIONS == *check* && -f $OUT/check/independent_check_table.txt ]] &&
  cat "$OUT/check/independent_check_table.txt"
# Exit status: 0 when the build passed, no unit test binary and no case failed (benchmarks
# report, they do not fail).
[[ $unit_line != *failed:* ]] &&
  [[ $cases_line == "not run" || $cases_line == *" 0 failed"* ]]
