#!/usr/bin/env bash
# Session 33, call 3 (tree 9693eaf; the switch was reverted after it): the engine's GPU unit tests (preturn_handles_gpu_test.py among them, its
# first run), then the A/B of KFORGE_PRETURN_HANDLES=1 (torch's cuBLAS handle and workspace
# made before the GPU turn in the judge and the candidate process) through scripts/gpu_ab.sh.
# Carry .gpu-carry/kernelbench, corpora, kb_harness and googletest. About 420 s.
AB_CHECKS=unit AB_ENV=KFORGE_PRETURN_HANDLES=1 AB_TOTAL_S=${AB_TOTAL_S:-420} bash scripts/gpu_ab.sh
grep -h "preturn\|reserved at import" "$OUT"/suite.out 2>/dev/null | head -5
