#!/usr/bin/env bash
# Planned in session 32 for the next GPU call (not run yet). About 570 s. Carry
# .gpu-carry/kernelbench, corpora, kb_harness and googletest (bash scripts/gpu_carry.sh).
# 1. The engine's GoogleTest binaries (TimingGpuTest.DeviceClockCountsItsTraceFlushes and
#    MathPreloadTest have not run on a GPU yet) and the GPU cases through the served path.
# 2. The math preload's A/B (KFORGE_PRELOAD_MATH_LIBS=1); its stage tables also give
#    timing_trace_s, the judge's CUPTI flushes, under timing_reference_s.
AB_CHECKS=unit,cases AB_ENV=KFORGE_PRELOAD_MATH_LIBS=1 AB_TOTAL_S=570 bash scripts/gpu_ab.sh
grep -h -A1 "timing_reference_s" "$OUT"/*_table.txt 2>/dev/null | head -8
