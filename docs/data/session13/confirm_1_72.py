#!/usr/bin/env python3
"""Confirms (on a GPU; not run here) the diagnosis of corpus candidate 1_72: a race between its
streams, not kforge's harness.

  python3 confirm_1_72.py [/work/shared/corpora/cudal1_a100.jsonl]

Three runs of ModelNew against the task's Model on fresh inputs each call, in one process,
no kforge involved:
  A  plain calls, device idle at each call (as in the trials / KernelBench / the call clock):
     expected to pass (the host's launch gaps let the conversion finish first);
  B  each call made while earlier work still occupies the stream that is current at entry
     (torch.cuda._sleep on it: what the device clock's pre-roll does in the candidate process,
     timing.cc Sampler::Run launches it on c10's current stream): expected to FAIL: the
     channels_last conversion queued on that stream runs after the four slice copies that read
     it on fresh streams;
  C  as B, with the candidate's streams made to wait for the entry stream (the one-line fix
     `streams[g].wait_stream(entry)`): expected to pass.
"""
import json
import sys

import torch
import torch.nn.functional as F

path = sys.argv[1] if len(sys.argv) > 1 else "/work/shared/corpora/cudal1_a100.jsonl"
row = next(d for d in map(json.loads, open(path)) if (d["level_id"], d["task_id"]) == (1, 72))
task, cand = {}, {}
exec(compile(row["ref_code"], "task.py", "exec"), task)
fixed_src = row["custom_code"].replace(
    "            if streams:\n                torch.cuda.set_stream(streams[g])",
    "            if streams:\n                streams[g].wait_stream(entry)\n"
    "                torch.cuda.set_stream(streams[g])")
fixed_src = fixed_src.replace(
    "        streams = []\n        if torch.cuda.is_available():",
    "        streams = []\n        entry = torch.cuda.current_stream()\n"
    "        if torch.cuda.is_available():")
assert fixed_src != row["custom_code"]
exec(compile(row["custom_code"], "cand.py", "exec"), cand)
fixed = {}
exec(compile(fixed_src, "cand_fixed.py", "exec"), fixed)


def build(ns, name):
    torch.manual_seed(1000)
    init = task["get_init_inputs"]()
    torch.manual_seed(1000)
    ref = task["Model"](*init)
    torch.manual_seed(1000)
    m = ns[name](*init)
    m.load_state_dict(ref.state_dict(), strict=False)
    return ref.cuda(), m.cuda()


def run(label, ns, busy_entry, calls=6):
    ref, m = build(ns, "ModelNew")
    bad = 0
    with torch.no_grad():
        for k in range(calls):
            torch.manual_seed(2000 + k)
            with torch.device("cuda"):
                x = task["get_inputs"]()[0]
            want = ref(x)
            torch.cuda.synchronize()
            if busy_entry:
                torch.cuda._sleep(20_000_000)  # ~10 ms of one block on the entry stream
            got = m(x)
            torch.cuda.synchronize()
            ok = torch.allclose(got, want, atol=1e-4, rtol=1e-4)
            bad += not ok
            print(f"{label} call {k}: {'ok' if ok else 'WRONG'} "
                  f"(current stream after the call: {torch.cuda.current_stream()})")
    return bad


a = run("A plain", cand, False)
b = run("B entry stream busy", cand, True)
c = run("C entry stream busy, streams wait", fixed, True)
print(f"wrong calls: A {a}, B {b}, C {c} (diagnosis holds if A == 0, B > 0, C == 0)")
