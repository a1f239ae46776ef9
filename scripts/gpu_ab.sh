#!/usr/bin/env bash
# An A/B of one engine setting on a GPU, in one device call: session 30's 32 corpus candidates
# through kforge-eval alone (KernelBench skipped), fork servers with GPU turns, in four runs
# alternating the setting on and off, so that a drift over the call falls on both; then
# scripts/ab_summary.py's paired sums, last.
#
#   AB_ENV="KFORGE_CHANNEL_SPIN_US=0" OUT=DIR bash scripts/gpu_ab.sh
#
# AB_ENV: NAME=VALUE, exported for the "on" runs and unset for the "off" ones (the fork servers
# inherit it). AB_FIRST (on or off, default on): the arm that runs first (on1, off1, on2, off2,
# or off1, on1, off2, on2). AB_LANES (default 2): fork servers sharing the GPU. AB_CHECKS:
# gpu_suite.sh sections run first (e.g. "unit,cases": the engine's GoogleTest binaries and the
# GPU cases sleepy, correct and busy_beside through the served path). AB_TOTAL_S (default 480):
# the whole call's budget, the checks included. AB_ONLY: the candidates (default the 32).
# Writes OUT/<run>_table.txt, OUT/<run>_compat.jsonl.gz, OUT/ab_logs.tgz, OUT/ab_summary.txt
# (and OUT/suite.out with AB_CHECKS). Needs what scripts/gpu_suite.sh's sections need (.gpu-carry's
# kernelbench and corpora; googletest for unit).
set -uo pipefail
cd "$(dirname "$0")/.."
: "${AB_ENV:?name the setting: AB_ENV=NAME=VALUE}"
: "${OUT:?OUT: where the files go}"
name=${AB_ENV%%=*}
value=${AB_ENV#*=}
t0=$(date +%s)
S=$(mktemp -d /tmp/kforge-ab.XXXXXX)
if [[ -n ${AB_CHECKS:-} ]]; then
  OUT=$S/suite CASES_ARGS="--serve --only sleepy,correct,busy_beside" timeout 200 \
    bash scripts/gpu_suite.sh "$AB_CHECKS" > "$S/suite.out" 2>&1
  echo "$AB_CHECKS: rc=$? at $(( $(date +%s) - t0 )) s"; tail -6 "$S/suite.out"
  cp "$S/suite.out" "$OUT/suite.out"
fi
ONLY=${AB_ONLY:-1_1,1_8,1_12,1_16,1_17,1_18,1_34,1_39,1_40,1_42,1_44,1_45,1_46,1_61,1_69,1_71,1_86,1_92,1_100,2_1,2_7,2_12,2_14,2_22,2_25,2_30,2_36,2_39,2_56,2_82,2_83,2_86}
ARGS="--skip-kb --policy runtime --builds no --only $ONLY --kforge-builders 4 --min-turn-s 2 --work-dir /tmp/kf-py --kforge-lanes ${AB_LANES:-2} --gpu-turns"
if [[ ${AB_FIRST:-on} == off ]]; then runs=(off1 on1 off2 on2); else runs=(on1 off1 on2 off2); fi
for i in 0 1 2 3; do
  run=${runs[$i]}
  left=$(( ${AB_TOTAL_S:-480} - ($(date +%s) - t0) ))
  (( left < 60 )) && { echo "$run: not run ($left s left)"; continue; }
  # The four runs' shares of what is left: about a quarter each.
  case $i in 0) budget=$(( left / 4 + 20 ));; 1) budget=$(( left / 3 ));;
    2) budget=$(( left / 2 ));; 3) budget=$(( left - 10 ));; esac
  if [[ $run == on* ]]; then export "$name=$value"; else unset "$name"; fi
  OUT=$S/$run COMPAT_ARGS="$ARGS" COMPAT_BUDGET_S=$(( budget - 5 )) timeout $budget \
    bash scripts/gpu_suite.sh compat > "$S/$run.out" 2>&1
  echo "$run ($AB_ENV: ${!name:-unset}): rc=$? at $(( $(date +%s) - t0 )) s (budget $budget s)"
  cp "$S/$run/compat_table.txt" "$OUT/${run}_table.txt" 2>/dev/null
  gzip -c "$S/$run/compat.jsonl" > "$OUT/${run}_compat.jsonl.gz" 2>/dev/null
done
unset "$name"
tar czf "$OUT/ab_logs.tgz" -C "$S" . 2>/dev/null
python3 scripts/ab_summary.py "${runs[@]/#/$S/}" | tee "$OUT/ab_summary.txt"
