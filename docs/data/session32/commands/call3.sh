#!/usr/bin/env bash
# Session 32, call 3 (452 s, H100, tree 4c00c3b; the warm-up and KFORGE_NO_LIBRARY_WARMUP were
# reverted after it by 4c5436c): the library warm-up on a GPU (docs/benchmarks.md, "Session
# 32"). The engine's GoogleTest binaries and the GPU cases through the served path, then session
# 30's 32 corpus candidates through kforge-eval alone (KB skipped), two lanes, GPU turns, in four
# runs alternating the default (warm-up) with KFORGE_NO_LIBRARY_WARMUP=1. Carry
# .gpu-carry/kernelbench, corpora, kb_harness and googletest.
#
# The script as it ran (its own loop and paired sums, run names warm1, cold1, ...):
# `git show 4c00c3b:docs/data/session32/commands/call3.sh`. The same runs with today's driver
# (run names off1, on1, ...; "on" is KFORGE_NO_LIBRARY_WARMUP=1), at a tree that has the switch:
AB_CHECKS=unit,cases AB_ENV=KFORGE_NO_LIBRARY_WARMUP=1 AB_FIRST=off AB_TOTAL_S=560 \
  bash scripts/gpu_ab.sh
