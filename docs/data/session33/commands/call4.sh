#!/usr/bin/env bash
# Session 33, call 4 (the last ~300 s of device time): next_call.sh cut down to its second part.
# Builds kforge-eval only (gpu_suite.sh with no section), then KFORGE_CALL_PROFILE=1 on eight
# corpus candidates, one-shot; the reference_device line is the judge's steps of a device-clock
# sample. Carry .gpu-carry/corpora and kernelbench.
t0=$(date +%s)
OUT=$OUT/suite bash scripts/gpu_suite.sh none > "$OUT/suite.out" 2>&1
echo "build: rc=$? at $(( $(date +%s) - t0 )) s"
sed -n '/^mkdir -p "$OUT\/profiles"/,$p' docs/data/session33/commands/next_call.sh > /tmp/part2.sh
t0=$t0 bash /tmp/part2.sh
