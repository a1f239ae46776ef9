#!/usr/bin/env bash
# session 21, device call 3 (call 2 ran past its limit and returned nothing; this one writes
# into $OUT as it goes). (1) The engine build. (2) Under an MPS daemon, side by side (verdicts
# only): issue 13's 2_75 and 2_35 through kforge (runtime policy) and KernelBench's harness, and
# the GPU cases of session 20's call 3 plus the wrong-output hacks on 19_ReLU (compared on the
# device through the fork server's prepared kernels, now compiled by a child of the server).
# (3) Quiet GPU, issue 14: the 12 candidates with the widest call-clock spreads, 3 evaluations
# each, as they run (A) and with the fork server and everything it forks pinned to CPUs 4-5 (B),
# with vmstat's steal time logged beside each.
t0=$(date +%s); el() { echo $(( $(date +%s) - t0 )); }
S=$OUT; echo "start $(date -u)" > $S/summary.txt
OUT=/tmp/kfb timeout 160 bash scripts/gpu_suite.sh build > $S/build.out 2>&1
echo "build rc=$? at $(el) s" >> $S/summary.txt
EVAL=$PWD/build-gpu/gpu_worker/eval/kforge-eval
export CUDA_MPS_PIPE_DIRECTORY=/tmp/kf-mps/pipe CUDA_MPS_LOG_DIRECTORY=/tmp/kf-mps/log
mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY
nvidia-cuda-mps-control -d; echo "mps rc=$? at $(el) s" >> $S/summary.txt
export TORCH_CUDA_ARCH_LIST=$(python3 -c 'import torch; print("%d.%d" % torch.cuda.get_device_capability())')
ONLY=crashes,hangs,hung_kernel,illegal_address,gpu_oom,output_flood,fork_bomb,escapes_sandbox
ONLY+=,exploits/reads_device_memory,exploits/reaches_judge,exploits/leaves_process_group
ONLY+=,exploits/early_done,exploits/blocks_channel,exploits/floods_channel,exploits/forged_result
ONLY+=,exploits/patches_own_timers,exploits/honest_python,tiny_relu/correct,tiny_relu/nvrtc_relu
ONLY+=,tiny_relu/cpp_relu,19_ReLU/nvrtc_vec4,tiny_linear/correct,hacks/constant_output
ONLY+=,hacks/stale_memory,hacks/low_precision,hacks/shape_mismatch
( KFORGE_CACHE_DIR=/tmp/kforge-cache timeout 235 python3 tests/engine/run_cases.py --eval $EVAL \
    --device cuda --serve --cache-dir /tmp/kforge-cache --only $ONLY > $S/cases.log 2>&1
  echo "cases rc=$? at $(el) s" >> $S/summary.txt ) &
timeout 250 python3 scripts/corpus_compat.py --eval $EVAL --device cuda --out /tmp/kf-c13 \
  --corpus .gpu-carry/corpora/cudal1_a100.jsonl --kb-harness .gpu-carry/kb_harness/src \
  --policy runtime --only 2_75,2_35 --kforge-builders 2 --kb-builders 2 --kb-timeout 200 \
  --min-turn-s 2 --work-dir /tmp/kf-all --budget-s 230 > $S/compat13.log 2>&1
echo "compat13 rc=$? at $(el) s" >> $S/summary.txt
cp /tmp/kf-c13/compat.jsonl $S/compat13.jsonl; cp /tmp/kf-c13/compat_table.txt $S/compat13_table.txt
wait
W=1_17,2_12,1_92,2_25,2_39,2_86,1_42,1_100,2_14,2_36,1_1,1_16
printf '#!/bin/sh\nexec taskset -c 4,5 %s "$@"\n' "$EVAL" > /tmp/pinned-eval; chmod +x /tmp/pinned-eval
for v in A B; do
  left=$(( 585 - $(el) )); (( left < 75 )) && { echo "$v skipped at $(el) s" >> $S/summary.txt; continue; }
  e=$EVAL; [[ $v == B ]] && e=/tmp/pinned-eval
  vmstat 1 > $S/vmstat_$v.txt & vm=$!
  timeout $(( left - 5 )) python3 scripts/corpus_compat.py --eval $e --device cuda --out /tmp/kf-$v \
    --corpus .gpu-carry/corpora/cudal1_a100.jsonl --kb-harness .gpu-carry/kb_harness/src --policy runtime --skip-kb --only $W \
    --kforge-builders 2 --min-turn-s 2 --work-dir /tmp/kf-py --repeats 3 \
    --budget-s $(( left < 85 ? left - 12 : 78 )) > $S/spread_$v.log 2>&1
  echo "spread $v rc=$? at $(el) s" >> $S/summary.txt; kill $vm
  cp /tmp/kf-$v/compat.jsonl $S/spread_$v.jsonl; cp /tmp/kf-$v/compat_table.txt $S/spread_${v}_table.txt
done
echo quit | nvidia-cuda-mps-control
grep -E "^(FAIL|    reason)|passed" $S/cases.log | tail -20; cat $S/compat13_table.txt
grep -E "spread|outside|wall" $S/spread_*_table.txt; cat $S/summary.txt
