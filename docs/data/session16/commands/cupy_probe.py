#!/usr/bin/env python3
"""Session 16, device call 3: which kernels a corpus candidate's forward launches on this GPU
(CUDA-L1's cupy candidates: do their cupy kernels run, or do they fall back to PyTorch?). No
kforge code: KernelBench's way of building (seed 42, CPU, then the device), one warm-up call,
then torch.profiler (CUPTI sees every launch in the process, cupy's included) around one call.
Prints one JSON line: the kernel names and whether the output is close to the reference's.

  cupy_probe.py CORPUS.jsonl NAME
"""
import json
import sys

import torch
from torch.profiler import ProfilerActivity, profile


def dev(xs):
    return [x.cuda() if isinstance(x, torch.Tensor) else x for x in xs]


def main(corpus, name):
    for line in open(corpus):
        r = json.loads(line)
        if f"{r['level_id']}_{r['task_id']}" != name:
            continue
        t, c = {"__name__": "task"}, {"__name__": "candidate"}
        exec(compile(r["ref_code"], "task", "exec"), t)
        exec(compile(r["custom_code"], "candidate", "exec"), c)
        torch.manual_seed(42)
        init = dev(t["get_init_inputs"]())
        torch.manual_seed(42)
        ref = t["Model"](*init).cuda()
        torch.manual_seed(42)
        cand = c["ModelNew"](*init).cuda()
        torch.manual_seed(42)
        xs = dev(t["get_inputs"]())
        with torch.no_grad():
            cand(*xs)
            torch.cuda.synchronize()
            with profile(activities=[ProfilerActivity.CUDA]) as p:
                y = cand(*xs)
                torch.cuda.synchronize()
            kernels = sorted({e.name for e in p.events() if e.device_type.name == "CUDA"})
            close = bool(torch.allclose(y, ref(*xs), atol=1e-4, rtol=1e-4))
        print(json.dumps(dict(name=name, kernels=kernels, close_1e4=close)), flush=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
