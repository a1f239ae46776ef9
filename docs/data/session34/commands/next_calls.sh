#!/usr/bin/env bash
# Planned in session 34 (no device was lent) for the next session that gets one: three calls,
# in this order, each `bash docs/data/session34/commands/next_calls.sh N` with timeout 600.
# Before the first: bash scripts/gpu_carry.sh && bash scripts/gpu_cluster_bundle.sh build, and
# carry .gpu-carry/kernelbench, corpora, kb_harness, googletest and cluster in each call.
#
# 1. (about 570 s) The A/B of KFORGE_PREROLL_SHRINK=1 (device_preroll.h, as session 34 left it:
#    the floor and the reference's last 16 launches) on the 32, four alternating runs, with no
#    check section first (session 33's call 3 had its runs cut by one). ab_summary.py prints
#    the stages' sums, each arm's median pre-roll and each arm's device-speedup spread between
#    its runs. Shrinking becomes the default if it saves turns and the "on" arm's spread is no
#    wider than the "off" arm's: flip engine.cc's EnvSwitchOn("KFORGE_PREROLL_SHRINK") into an
#    opt-out, and docs/evaluation.md, operations.md and device_preroll.h with it.
# 2. (about 590 s) Session 30's next_call1.sh: the GPU cases sleepy, correct and busy_beside
#    through the served path, then the repeatability beside KernelBench's harness (the 32, 4
#    evaluations each) and the independent check: issue 14's points 2 and 5. It runs the
#    engine's default, so a flip decided after call 1 must be committed before it (its tail of
#    ipc_namespace.jsonl fails harmlessly with SKIP_PROBE).
# 3. (at most 570 s) The engine's GoogleTest binaries on the GPU (TimingGpuTest's stamps test
#    has never run there; session 33's unit section took 198 s) and the corpus through the
#    worker in what is left (issue 14's point 4: evaluations per hour of turns, ok wall, NVML
#    busy), on an H200 if the call is given one.
set -uo pipefail
cd "$(dirname "$0")/../../../.."
case ${1:-} in
  1) AB_ENV=KFORGE_PREROLL_SHRINK=1 AB_TOTAL_S=${AB_TOTAL_S:-570} bash scripts/gpu_ab.sh ;;
  2) SKIP_PROBE=1 bash docs/data/session30/commands/next_call1.sh ;;
  3) t0=$(date +%s)
     S=/tmp/s34-unit; mkdir -p $S
     OUT=$S timeout 250 bash scripts/gpu_suite.sh unit > $S/suite.out 2>&1
     echo "unit: rc=$? at $(( $(date +%s) - t0 )) s"; tail -8 $S/suite.out
     cp $S/suite.out "$OUT/unit_suite.out"; cp $S/unit_*.log "$OUT/" 2>/dev/null
     BATCH_S=$(( 570 - ($(date +%s) - t0) - 70 )) bash docs/data/session31/commands/call3.sh ;;
  *) echo "usage: $0 1|2|3" >&2; exit 2 ;;
esac
