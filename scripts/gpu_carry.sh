#!/usr/bin/env bash
# Fills .gpu-carry/ (git-ignored) with what the GPU machines lack and scripts/gpu_suite.sh
# needs: KernelBench's tasks (from ../shared/kernelbench, which does not travel with the
# working tree), GoogleTest's sources (Debian's /usr/src/googletest, for the engine's unit
# tests), and for the compat section the corpora (../shared/corpora: CUDA-L1's candidates)
# and KernelBench's harness (../shared/peers/kernelbench). Idempotent; name the folders a run
# needs in the device tool's carry list (.gpu-carry/kernelbench and .gpu-carry/googletest for
# unit,cases,bench; .gpu-carry/corpora and .gpu-carry/kb_harness for compat).
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p .gpu-carry
copy() {  # copy SRC DEST: replaces DEST when SRC differs
  if [[ ! -d $1 ]]; then
    echo "gpu_carry: $1 is missing" >&2
    exit 1
  fi
  if ! diff -rq "$1" "$2" >/dev/null 2>&1; then
    rm -rf "$2"
    cp -r "$1" "$2"
  fi
  echo "gpu_carry: $2 ($(du -sh "$2" | cut -f1))"
}
copy "${KFORGE_KERNELBENCH:-../shared/kernelbench}" .gpu-carry/kernelbench
copy /usr/src/googletest .gpu-carry/googletest
copy "${KFORGE_CORPORA:-../shared/corpora}" .gpu-carry/corpora
copy "${KFORGE_PEERS:-../shared/peers}/kernelbench" .gpu-carry/kb_harness
