#!/usr/bin/env bash
# What the activity clock's tracing costs host-bound programs: eager reference times of a few
# KernelBench tasks (kforge-eval --baseline) under the events clock and the activity clock, in
# turns, ROUNDS times.
#   bash gpu_worker/eval/bench/trace_cost.sh [ROUNDS]    (after scripts/gpu_suite.sh built it)
# Environment: OUT (default /tmp/kforge-gpu), KERNELBENCH (default .gpu-carry/kernelbench).
set -uo pipefail
cd "$(dirname "$0")/../../.."
OUT=${OUT:-/tmp/kforge-gpu}
KB=${KERNELBENCH:-.gpu-carry/kernelbench}
EVAL=build-gpu/gpu_worker/eval/kforge-eval
ROUNDS=${1:-2}
tasks=/tmp/kforge-trace-cost
rm -rf "$tasks" && mkdir -p "$tasks"
for t in level3/16_DenseNet201 level3/10_ResNet101 level3/39_GRU level3/34_VanillaRNNHidden \
         level1/19_ReLU level1/40_LayerNorm; do
  cp "$KB/$t.py" "$tasks/"
done
for ((i = 0; i < ROUNDS; i++)); do
  for v in events activity; do
    args=()
    [[ $v == events ]] && args=(--timing-clock events)
    "$EVAL" --baseline "$tasks" --device cuda --per-task-cap 1 "${args[@]}" \
      --json "$OUT/trace_cost_${v}_$i.jsonl" > /dev/null 2>> "$OUT/trace_cost.log"
  done
done
python3 - "$OUT" "$ROUNDS" <<'PYEOF'
import json, sys
out, rounds = sys.argv[1], int(sys.argv[2])
rows = {}
for v in ("events", "activity"):
    for i in range(rounds):
        for line in open(f"{out}/trace_cost_{v}_{i}.jsonl"):
            r = json.loads(line)
            rows.setdefault(r["task"], {}).setdefault(v, []).append(
                (r.get("median_ms"), r.get("clock")))
print("== trace cost: median ms per round (clock) ==")
for task, per in sorted(rows.items()):
    print(f"{task:45s} " + "  ".join(
        f"{v}=" + ",".join(f"{m:.3f}" if m is not None else "-" for m, _ in per.get(v, []))
        for v in ("events", "activity")))
PYEOF
