#!/usr/bin/env bash
# session 22, device call 4 (issue 14): are the device clock's widest between-process spreads
# (call 3: 1_100 7.8%, 2_56 6.2%, 2_30 3.6%, 2_14 3.6%, 2_82 2.1%; microsecond programs) kforge's
# or the machine's? The five and a steady control (1_34) through kforge, 3 evaluations each in
# separate processes, KernelBench's harness beside them, then the independent check (bare CUDA
# graph replay, a fresh process per row, no kforge code) three times over the same rows.
t0=$(date +%s); el() { echo $(( $(date +%s) - t0 )); }
S=$OUT; echo "start $(date -u)" > $S/summary.txt
OUT=/tmp/kfb timeout 110 bash scripts/gpu_suite.sh build > $S/build.out 2>&1
echo "build rc=$? at $(el) s" >> $S/summary.txt
EVAL=$PWD/build-gpu/gpu_worker/eval/kforge-eval
export TORCH_CUDA_ARCH_LIST=$(python3 -c 'import torch; print("%d.%d" % torch.cuda.get_device_capability())')
C=.gpu-carry/corpora/cudal1_a100.jsonl
timeout 120 python3 scripts/corpus_compat.py --eval $EVAL --device cuda --out /tmp/kf4 \
  --corpus $C --kb-harness .gpu-carry/kb_harness/src --policy runtime \
  --only 1_100,2_56,2_30,2_14,2_82,1_34 --kforge-builders 2 --kb-builders 2 --min-turn-s 2 \
  --work-dir /tmp/kf-py --repeats 3 --budget-s 105 > $S/compat.log 2>&1
echo "compat rc=$? at $(el) s" >> $S/summary.txt
cp /tmp/kf4/compat.jsonl /tmp/kf4/compat_run.json /tmp/kf4/compat_table.txt $S/
for i in 1 2 3; do
  timeout 45 python3 scripts/independent_check.py --input /tmp/kf4/compat.jsonl --out /tmp/chk$i \
    --device cuda --corpus $C --sample 0 --budget-s 40 > $S/check$i.log 2>&1
  echo "check $i rc=$? at $(el) s" >> $S/summary.txt
  tar czf $S/check$i.tgz -C /tmp/chk$i .
done
cat $S/summary.txt; tail -22 $S/compat_table.txt; for i in 1 2 3; do tail -9 $S/check$i.log; done
