#!/usr/bin/env bash
# session 20, device call 1. (1) The engine build. (2) The call clock's hop with and without
# MPS (NVIDIA's Multi-Process Service: one hardware context for several processes): the hop
# section (torch-only probe + one kforge evaluation with KFORGE_CALL_PROFILE=1) without MPS,
# then, where nvidia-cuda-mps-control exists, the same with an MPS daemon started for it and
# stopped after. (3) Issue 13 point 6: the whole corpus (112) through kforge (runtime policy)
# and KernelBench's harness in this one call, 2 kforge lanes and 3 KB lanes overlapped on the
# GPU (verdicts only: no timing result comes from this part). (4) 1_72's race confirmation
# (docs/data/session13/confirm_1_72.py). All under /tmp, packed into $OUT/all.tgz.
S=/tmp/kf1; rm -rf $S; mkdir -p $S
t0=$(date +%s)
el() { echo $(( $(date +%s) - t0 )); }
OUT=$S/build timeout 200 bash scripts/gpu_suite.sh build > $S/build.out 2>&1
echo "build rc=$? at $(el) s" | tee -a $S/summary.txt
tail -3 $S/build.out
EVAL=build-gpu/gpu_worker/eval/kforge-eval
OUT=$S/hop timeout 60 bash scripts/gpu_suite.sh hop > $S/hop.out 2>&1
echo "hop rc=$? at $(el) s" | tee -a $S/summary.txt
if command -v nvidia-cuda-mps-control > /dev/null; then
  export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/mps-log
  mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY
  nvidia-cuda-mps-control -d > $S/mps_start.out 2>&1
  echo "mps start rc=$? at $(el) s" | tee -a $S/summary.txt
  sleep 1
  OUT=$S/hop_mps timeout 60 bash scripts/gpu_suite.sh hop > $S/hop_mps.out 2>&1
  echo "hop mps rc=$? at $(el) s" | tee -a $S/summary.txt
  echo quit | nvidia-cuda-mps-control > $S/mps_stop.out 2>&1
  sleep 2
  cp -r $CUDA_MPS_LOG_DIRECTORY $S/mps-log 2>/dev/null
  unset CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY
  pgrep -a nvidia-cuda-mps >> $S/summary.txt && echo "mps still running" >> $S/summary.txt
else
  echo "no nvidia-cuda-mps-control on this machine" | tee -a $S/summary.txt
fi
left=$(( ${LIMIT:-585} - $(el) ))
python3 scripts/corpus_compat.py --eval $EVAL --device cuda --out $S/compat \
  --corpus .gpu-carry/corpora/cudal1_a100.jsonl --kb-harness .gpu-carry/kb_harness/src \
  --policy runtime --kforge-builders 8 --kb-builders 4 --kforge-lanes 2 --kb-lanes 3 \
  --min-turn-s 2 --work-dir /tmp/kf-all --budget-s $(( left - 45 )) > $S/compat.log 2>&1
echo "compat rc=$? at $(el) s" | tee -a $S/summary.txt
timeout 35 python3 docs/data/session13/confirm_1_72.py .gpu-carry/corpora/cudal1_a100.jsonl \
  > $S/confirm_1_72.out 2>&1
echo "confirm_1_72 rc=$? at $(el) s" | tee -a $S/summary.txt
tail -15 $S/confirm_1_72.out
cat $S/hop/hop_probe.jsonl $S/hop/call_profile.txt 2>/dev/null
echo "== with MPS"; cat $S/hop_mps/hop_probe.jsonl $S/hop_mps/call_profile.txt $S/hop_mps/call_profile.log 2>/dev/null | head -40
cat $S/compat/compat_table.txt
cat $S/summary.txt
tar czf $OUT/all.tgz -C $S . ; cp $S/summary.txt $S/compat/compat.jsonl $S/compat/compat_table.txt $OUT/ 2>/dev/null
