#!/usr/bin/env bash
# Planned in session 32 for the next GPU call (not run yet). About 570 s. Carry
# .gpu-carry/kernelbench, corpora, kb_harness and googletest (bash scripts/gpu_carry.sh).
# 1. The engine's GoogleTest binaries (TimingGpuTest.DeviceClockCountsItsTraceFlushes and
#    MathPreloadTest have not run on a GPU yet) and the GPU cases through the served path.
# 2. The math preload's A/B (KFORGE_PRELOAD_MATH_LIBS=1, scripts/gpu_ab.sh); its stage tables
#    also give timing_trace_s, the judge's CUPTI flushes, under timing_reference_s.
t0=$(date +%s)
S=/tmp/s33; mkdir -p $S
OUT=$S/suite CASES_ARGS="--serve --only sleepy,correct,busy_beside" timeout 200 \
  bash scripts/gpu_suite.sh unit,cases > $S/suite.out 2>&1
echo "unit,cases: rc=$? at $(( $(date +%s) - t0 )) s"; tail -6 $S/suite.out
cp $S/suite.out $OUT/suite.out 2>/dev/null
AB_ENV=KFORGE_PRELOAD_MATH_LIBS=1 AB_TOTAL_S=$(( 570 - ($(date +%s) - t0) )) bash scripts/gpu_ab.sh
grep -h -A1 "timing_reference_s" $OUT/*_table.txt 2>/dev/null | head -8
