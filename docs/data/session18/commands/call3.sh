#!/usr/bin/env bash
# session 18, device call 3 (what was left of the budget): the narrowed own-kernels rule
# (0d453bc) on the two candidates it wrongly rejected (1_98, 2_6) and two cupy ones, kforge
# only; then the drift probe (19_ReLU, nvrtc_vec4) three ways: one fork server 60 s, a fresh
# server every 10 evaluations 45 s, and one server with the channel's polling off
# (KFORGE_CHANNEL_SPIN_US=0) 45 s. Each result copied to $OUT as it comes.
S=/tmp/kf3; rm -rf $S; mkdir -p $S/c
t0=$(date +%s)
OUT=$S/c COMPAT_ARGS="--policy runtime --skip-kb --only 1_98,2_6,1_22,2_37 --kforge-builders 4 --min-turn-s 2 --work-dir /tmp/kf-3" \
  COMPAT_BUDGET_S=150 timeout 160 bash scripts/gpu_suite.sh compat > $S/c.out 2>&1
echo "compat rc=$? at $(( $(date +%s)-t0 )) s" | tee -a $S/summary.txt
python3 -c "
import json,sys
for l in open('$S/c/compat.jsonl'):
    r=json.loads(l); print(r['name'], r.get('kforge_verdict'), r.get('kforge_rule'), (r.get('kforge_reason') or '')[:160])
" | tee $S/verdicts.txt; cp $S/summary.txt $S/verdicts.txt $OUT/
E=build-gpu/gpu_worker/eval/kforge-eval; T=.gpu-carry/kernelbench/level1/19_ReLU.py; C=examples/candidates/19_ReLU/nvrtc_vec4.py
run_drift() {  # name seconds [args]
  local n=$1 s=$2; shift 2
  timeout $((s + 30)) python3 gpu_worker/eval/bench/drift_probe.py --eval $E --device cuda --task $T \
    --candidate $C --seconds $s "$@" > $S/drift_$n.jsonl 2> $S/drift_$n.log
  python3 - $S/drift_$n.jsonl $n <<'PY' | tee -a $S/drift_table.txt
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
q = max(1, len(rows) // 4)
def med(part, key):
    v = [r[key] for r in part if r.get(key) is not None]
    return f"{statistics.median(v):.4f}" if v else "-"
print(f"drift {sys.argv[2]}: {len(rows)} evaluations over {rows[-1]['at_s'] if rows else 0} s")
for key in ("hop_ms", "ref_min_ms", "ref_median_ms", "cand_min_ms", "cand_median_ms", "wall_s"):
    print(f"  {key:15s} first quarter {med(rows[:q], key)}  last quarter {med(rows[-q:], key)}  all {med(rows, key)}")
PY
  cp $S/drift_table.txt $OUT/
}
run_drift one_server 60
run_drift restart10 45 --restart-every 10
KFORGE_CHANNEL_SPIN_US=0 run_drift spin0 45
echo "all done at $(( $(date +%s)-t0 )) s" | tee -a $S/summary.txt
cp $S/summary.txt $OUT/; tar czf $OUT/all.tgz -C $S .
