#!/usr/bin/env bash
# session 21, device call 1. (1) The engine build and its GPU unit tests under MPS (gpu_suite.sh
# MPS=1 unit: also records whether the MPS daemon takes a control command from user nobody).
# (2) Under a fresh MPS daemon, side by side (verdicts only: the two share the GPU, so no
# number of this part is a timing result): the whole GPU case suite through one fork server
# (session 20's prepared comparison kernels, call clock first, the judge's traced trials), and
# issue 13's two evaluations cut by session 20's budget end: 2_75 and 2_35 through kforge
# (runtime policy) and KernelBench's harness, one GPU turn of the two at a time.
# Written under /tmp, packed into $OUT/all.tgz.
S=/tmp/kf1; rm -rf $S; mkdir -p $S
t0=$(date +%s)
el() { echo $(( $(date +%s) - t0 )); }
(lscpu; nvidia-smi topo -m) > $S/cpu.txt 2>&1
MPS=1 OUT=$S/unit timeout 220 bash scripts/gpu_suite.sh unit > $S/unit.out 2>&1
echo "unit rc=$? at $(el) s" | tee -a $S/summary.txt
tail -8 $S/unit.out
EVAL=build-gpu/gpu_worker/eval/kforge-eval
export CUDA_MPS_PIPE_DIRECTORY=/tmp/kf-mps/pipe CUDA_MPS_LOG_DIRECTORY=/tmp/kf-mps/log
mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY
nvidia-cuda-mps-control -d; echo "mps rc=$? at $(el) s" | tee -a $S/summary.txt
export TORCH_CUDA_ARCH_LIST=$(python3 -c 'import torch; print("%d.%d" % torch.cuda.get_device_capability())')
left=$(( ${LIMIT:-585} - $(el) ))
( KFORGE_CACHE_DIR=/tmp/kforge-cache timeout $(( left - 25 )) python3 tests/engine/run_cases.py \
    --eval $EVAL --device cuda --serve --jobs 2 --cache-dir /tmp/kforge-cache --out $S/cases.jsonl \
    > $S/cases.log 2>&1; echo "cases rc=$? at $(el) s" >> $S/summary.txt ) &
python3 scripts/corpus_compat.py --eval $EVAL --device cuda --out $S/compat \
  --corpus .gpu-carry/corpora/cudal1_a100.jsonl --kb-harness .gpu-carry/kb_harness/src \
  --policy runtime --only 2_75,2_35 --kforge-builders 2 --kb-builders 2 --kb-timeout 280 \
  --min-turn-s 2 --work-dir /tmp/kf-all --budget-s $(( left - 30 )) > $S/compat.log 2>&1
echo "compat rc=$? at $(el) s" | tee -a $S/summary.txt
wait
echo quit | nvidia-cuda-mps-control; sleep 1; cp -r $CUDA_MPS_LOG_DIRECTORY $S/mps-log 2>/dev/null
grep -E "^(FAIL|    reason)|passed" $S/cases.log | tail -30
grep -c "^PASS" $S/cases.log
cat $S/unit/mps_control_as_nobody.txt
cat $S/compat/compat_table.txt
cat $S/summary.txt
tar czf $OUT/all.tgz -C $S . ; cp $S/summary.txt $S/cases.log $S/compat/compat.jsonl $OUT/ 2>/dev/null
