#!/usr/bin/env bash
# Session 31, call 2 (307 s, H200, tree 9d7fe89; the overlap and KFORGE_SEQUENTIAL_TRIALS were
# reverted after it by 88cb5d0): what overlapping the correctness trials' two calls saves on a
# GPU, measured on one card in one call. Session 30's 32 corpus candidates through kforge-eval
# alone (KB skipped), one lane, GPU turns, four runs alternating the engine's default
# (overlapped) with KFORGE_SEQUENTIAL_TRIALS=1. Carry .gpu-carry/kernelbench, corpora,
# kb_harness and googletest.
#
# The script as it ran (its own loop and paired sums, run names overlap1, sequential1, ...):
# `git show 489d94d:docs/data/session31/commands/call2.sh`. The same runs with today's driver
# (run names off1, on1, ...; "on" is KFORGE_SEQUENTIAL_TRIALS=1), at a tree that has the switch:
AB_ENV=KFORGE_SEQUENTIAL_TRIALS=1 AB_FIRST=off AB_LANES=1 AB_TOTAL_S=510 bash scripts/gpu_ab.sh
