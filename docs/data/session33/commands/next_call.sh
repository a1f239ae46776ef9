#!/usr/bin/env bash
# Planned in session 33 for the next GPU call (not run yet). About 570 s. Carry
# .gpu-carry/kernelbench, corpora, kb_harness and googletest (bash scripts/gpu_carry.sh).
# 1. unit: the engine's GoogleTest binaries (TimingGpuTest.DeviceClockStampsEachStepOfASample
#    and the pre-roll's shrinking have not run on a GPU).
# 2. The A/B of KFORGE_PREROLL_SHRINK=1 (device_preroll.h): session 33's profiles (call 4) put
#    most of a microsecond program's device-clock sample in a pre-roll that only grows. Its
#    summary gives the stages' sums, each arm's median pre-roll and each arm's device-speedup
#    spread between its two runs.
AB_CHECKS=unit AB_ENV=KFORGE_PREROLL_SHRINK=1 AB_TOTAL_S=${AB_TOTAL_S:-570} bash scripts/gpu_ab.sh
