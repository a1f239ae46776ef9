#!/usr/bin/env bash
# Planned in session 30; run in session 31 (call 1). About 590 s. Carry
# .gpu-carry/kernelbench, corpora, kb_harness and googletest.
# 1. (not with SKIP_PROBE=1, since session 31) ipc_namespace_probe.py: CUDA, CUDA IPC, MPS,
#    and now cuDNN, cuBLAS and a CUPTI trace with System V IPC refused as the candidate
#    process's filter refuses it (docs/security.md).
# 2. The GPU cases through the served path (the filter inside the engine: every case's candidate
#    process runs under it), then session 26's call 2 with --repeats 4: three runs after the first
#    pass beside KB's turns share one regime, and the repeats section prints their own spread
#    and the first pass's offset (docs/benchmarks.md, "Session 30"); the independent check.
t0=$(date +%s)
S=/tmp/suite-out; mkdir -p $S
[[ -n ${SKIP_PROBE:-} ]] || timeout 100 python3 gpu_worker/eval/bench/ipc_namespace_probe.py > $OUT/ipc_namespace.jsonl 2>&1
echo "probe rc=$? at $(( $(date +%s) - t0 )) s"
ONLY=1_1,1_8,1_12,1_16,1_17,1_18,1_34,1_39,1_40,1_42,1_44,1_45,1_46,1_61,1_69,1_71,1_86,1_92,1_100,2_1,2_7,2_12,2_14,2_22,2_25,2_30,2_36,2_39,2_56,2_82,2_83,2_86
left=$(( 585 - ($(date +%s) - t0) ))
OUT=$S CASES_ARGS="--serve --only sleepy,correct,busy_beside" \
  COMPAT_ARGS="--policy runtime --builds no --only $ONLY --kforge-builders 4 --kb-builders 4 --min-turn-s 2 --work-dir /tmp/kf-py --repeats 4 --kforge-lanes 2 --gpu-turns --keep-samples" \
  COMPAT_BUDGET_S=$(( left - 120 )) CHECK_BUDGET_S=$(( left - 15 )) timeout $(( left - 5 )) \
  bash scripts/gpu_suite.sh cases,compat,check > $S/suite.out 2>&1
echo "suite rc=$? at $(( $(date +%s) - t0 )) s" | tee -a $S/suite.out
cp $S/suite.out $S/compat_run.json $S/compat_table.txt $OUT/ 2>/dev/null
gzip -c $S/compat.jsonl > $OUT/compat.jsonl.gz 2>/dev/null
tar czf $OUT/logs.tgz -C $S . 2>/dev/null
tail -3 $OUT/ipc_namespace.jsonl | cut -c1-600
grep -E "PASS|FAIL" $S/cases.log
grep -A14 "== repeats" $S/compat_table.txt | head -16
cat $S/check/independent_check_table.txt 2>/dev/null | tail -3
