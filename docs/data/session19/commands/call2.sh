#!/usr/bin/env bash
# session 19, device call 2: the hop probe (two CUDA contexts taking turns, torch alone) and
# kforge's own call profile (KFORGE_CALL_PROFILE); the 45 cases call 1 did not reach (its case suite ran out of time
# behind the corpus's builds), through one fork server, beside the corpus's 18 level-3
# candidates (16 not run since session 15): kforge (runtime policy, builds ahead) side by side
# with KernelBench's own harness in the same call, one GPU turn at a time (verdicts; the cases
# share the GPU). Written under /tmp, packed into $OUT/all.tgz at the end.
S=/tmp/kf2; rm -rf $S; mkdir -p $S/compat
t0=$(date +%s)
# Where the call clock's hop goes (gpu_worker/eval/bench/hop_probe.py), on an idle machine first.
timeout 120 python3 gpu_worker/eval/bench/hop_probe.py --iters 2000 > $S/hop_probe.jsonl 2> $S/hop_probe.log
echo "hop_probe rc=$? at $(( $(date +%s)-t0 )) s" | tee -a $S/summary.txt; cat $S/hop_probe.jsonl; cp $S/hop_probe.jsonl $OUT/
mkdir -p $S/suite; OUT=$S/suite timeout 200 bash scripts/gpu_suite.sh build > $S/build.out 2>&1
echo "build rc=$? at $(( $(date +%s)-t0 )) s" | tee -a $S/summary.txt; tail -4 $S/build.out
EVAL=build-gpu/gpu_worker/eval/kforge-eval
# The hop inside kforge (gpu_worker/eval/call_profile.h): each call's steps in the candidate
# process and the judge's round trip, medians per kind, one-shot evaluations on an idle GPU.
for tc in "examples/tasks/tiny/tiny_relu.py examples/candidates/tiny_relu/correct.py" \
          ".gpu-carry/kernelbench/level1/19_ReLU.py examples/candidates/19_ReLU/nvrtc_vec4.py" \
          "examples/tasks/tiny/tiny_linear.py examples/candidates/tiny_linear/correct.py"; do
  set -- $tc
  for clock in "" "KFORGE_CHANNEL_SPIN_US=0"; do
    env KFORGE_CALL_PROFILE=1 $clock timeout 60 $EVAL --task $1 --candidate $2 --device cuda --json $S/prof.json > /dev/null 2>> $S/profile.log
    python3 -c "
import json,sys; r=json.load(open('$S/prof.json'))
print('$2', '$clock', r['verdict'], 'hop', r.get('call_overhead_ms'), r.get('call_overhead_median_ms'))
for l in (r.get('output_log') or '').splitlines():
    if l.startswith('kforge-call-profile'): print('  ', l)" | tee -a $S/profile.txt
  done
done
cp $S/profile.txt $OUT/
left=$(( ${LIMIT:-585} - ($(date +%s)-t0) ))
CASES=exploits/probe_escape,exploits/reaches_judge,exploits/reads_device_memory,exploits/replaces_audit_channel,exploits/second_variant_builds,exploits/tampers_with_cache,exploits/unused_kernel_library,exploits/writes_module,hacks/cached_output,hacks/changed_shapes,hacks/constant_output,hacks/cpp_dlopen,hacks/cpp_file_io,hacks/cpp_global_switch,hacks/cpp_graph,hacks/cpp_inline_asm,hacks/cpp_side_stream,hacks/cpp_system,hacks/cpp_thread,hacks/cpp_torch_fallback,hacks/cpp_try_catch,hacks/escapes_sandbox,hacks/fork_bomb,hacks/gpu_oom,hacks/host_compute_between_copies,hacks/host_memory_output,hacks/hung_kernel,hacks/illegal_address,hacks/joined_side_stream,hacks/lazy_tensor,hacks/low_precision,hacks/memo_by_content,hacks/mutates_input,hacks/output_flood,hacks/patched_compare,hacks/patched_timer,hacks/plants_cache,hacks/reads_harness,hacks/returns_input,hacks/shape_mismatch,hacks/side_stream,hacks/silent_fallback,hacks/stale_memory,hacks/tf32_switch,hacks/try_except_fallback
( KFORGE_CACHE_DIR=/tmp/kforge-cache timeout $(( left - 20 )) python3 tests/engine/run_cases.py \
    --eval $EVAL --device cuda --serve --cache-dir /tmp/kforge-cache --out $S/cases.jsonl \
    --only $CASES > $S/cases.log 2>&1; echo "cases rc=$? at $(( $(date +%s)-t0 )) s" >> $S/summary.txt ) &
L3=3_2,3_5,3_7,3_8,3_9,3_13,3_19,3_20,3_28,3_30,3_31,3_32,3_33,3_35,3_39,3_41,3_46,3_49
python3 scripts/corpus_compat.py --eval $EVAL --device cuda --out $S/compat \
  --corpus .gpu-carry/corpora/cudal1_a100.jsonl --kb-harness .gpu-carry/kb_harness/src \
  --policy runtime --only $L3 --kforge-builders 8 --kb-builders 6 --min-turn-s 2 --work-dir /tmp/kf-l3 \
  --budget-s $(( left - 15 )) > $S/compat.log 2>&1
echo "compat rc=$? at $(( $(date +%s)-t0 )) s" | tee -a $S/summary.txt
wait
grep -E "^FAIL|    reason|passed" $S/cases.log | tail -20
python3 - $S/compat/compat.jsonl <<'PY' > $S/verdicts.txt
import json, sys
for l in open(sys.argv[1]):
    r = json.loads(l)
    print(r["name"], "kforge", r.get("kforge_verdict"), r.get("kforge_rule"),
          "%.1fs" % (r.get("kforge_wall_s") or 0), r.get("kforge_speedup"), "| KB",
          r.get("kb_status"), r.get("kb_correctness"), r.get("kb_speedup"),
          "|", (r.get("kforge_reason") or "")[:200])
PY
cat $S/summary.txt; cat $S/verdicts.txt; head -30 $S/compat/compat_table.txt
tar czf $OUT/all.tgz -C $S . ; cp $S/summary.txt $S/verdicts.txt $S/cases.log $S/compat/compat_table.txt $OUT/
