#!/usr/bin/env bash
# session 21, device call 4, without MPS (call 3's MPS daemon let a fault reach every client:
# after it, each new CUDA context got cudaErrorMpsServerNotReady). Side by side, verdicts only:
# KernelBench's harness on 2_35 alone (in call 3 it ended with an illegal memory access while
# the case suite's faults ran under the same MPS server), and, after the engine build, the 8
# GPU cases that call 3 lost that way.
t0=$(date +%s); el() { echo $(( $(date +%s) - t0 )); }
S=$OUT; echo "start $(date -u)" > $S/summary.txt
( timeout 300 python3 scripts/corpus_compat.py --eval /bin/false --device cuda --out /tmp/kf-kb \
    --corpus .gpu-carry/corpora/cudal1_a100.jsonl --kb-harness .gpu-carry/kb_harness/src \
    --policy runtime --only 2_35 --kforge-skip 2_35 --kb-builders 1 --kb-timeout 200 \
    --min-turn-s 2 --work-dir /tmp/kf-all --budget-s 280 > $S/kb_2_35.log 2>&1
  echo "kb 2_35 rc=$? at $(el) s" >> $S/summary.txt
  cp /tmp/kf-kb/compat.jsonl $S/kb_2_35.jsonl ) &
OUT=/tmp/kfb timeout 160 bash scripts/gpu_suite.sh build > $S/build.out 2>&1
echo "build rc=$? at $(el) s" >> $S/summary.txt
export TORCH_CUDA_ARCH_LIST=$(python3 -c 'import torch; print("%d.%d" % torch.cuda.get_device_capability())')
ONLY=hacks/constant_output,hacks/gpu_oom,hacks/hung_kernel,hacks/illegal_address
ONLY+=,hacks/low_precision,hacks/output_flood,hacks/shape_mismatch,hacks/stale_memory,tiny_relu/correct
KFORGE_CACHE_DIR=/tmp/kforge-cache timeout 150 python3 tests/engine/run_cases.py \
  --eval build-gpu/gpu_worker/eval/kforge-eval --device cuda --serve --cache-dir /tmp/kforge-cache \
  --only $ONLY > $S/cases.log 2>&1
echo "cases rc=$? at $(el) s" >> $S/summary.txt
wait
grep -E "^(PASS|FAIL|    reason)|passed" $S/cases.log
python3 -c "
import json
for l in open('$S/kb_2_35.jsonl'):
  r=json.loads(l); print(r['name'], r.get('kb_status'), r.get('kb_correctness'), r.get('kb_speedup'), (r.get('kb_error') or '')[:300])"
cat $S/summary.txt
