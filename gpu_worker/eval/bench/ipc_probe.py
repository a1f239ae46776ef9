#!/usr/bin/env python3
"""Is a program slower on inputs it reads through CUDA IPC than on its own copies?

Session 25's independent check: for single-kernel memory-bound candidates (1_12, 1_40) kforge's
device-clock busy time was 3.5% above a bare CUDA-graph replay of the same forward, while
their references (timed in the judge's process on its own tensors) agreed within 0.2%; 2_25's
candidate was 8% above. kforge's candidate process reads its inputs from slots the judge
allocated and shares over CUDA IPC. If mapping through an IPC handle costs memory-bound
kernels bandwidth, the same forward should be slower on the IPC inputs than on local clones in
the same process.

Per task, --procs times: an owner process allocates the inputs (as the judge allocates its
slots) and hands them to a fresh spawned process over torch.multiprocessing (CUDA IPC). That
process builds the program (seed 42), clones the inputs into its own memory and, for --samples
rounds, times both sets in a shuffled order: L2 flushed (a memset of 2x its size), the device
drained, a ~1 ms torch.cuda._sleep pre-roll, one forward; its GPU busy time from
torch.profiler's trace (placement_probe.py's method). Prints per process the two medians and
their ratio, then per task the ratios' range.

  ipc_probe.py --corpus cudal1_a100.jsonl --tasks 1_12,1_40,2_25 [--program cand|ref]
      [--procs 3] [--samples 40]
"""
import argparse
import json
import os
import statistics
import sys


def consumer(corpus, name, program, samples, queue, done):
    import torch
    from call_spread_probe import load_program
    from placement_probe import busy_samples
    shared = queue.get()  # CUDA tensors mapped through their IPC handles
    model, _ = load_program(corpus, name, program)
    local = [x.clone() if torch.is_tensor(x) else x for x in shared]
    sets = {"ipc": shared, "local": local}
    flush = torch.empty(2 * torch.cuda.get_device_properties(0).L2_cache_size // 4,
                        device="cuda")
    busy = busy_samples(model, sets, samples, flush, seed=11)
    med = {k: statistics.median(v) for k, v in busy.items() if v}
    ratio = med["ipc"] / med["local"] if len(med) == 2 else 0.0
    print(json.dumps(dict(task=name, program=program, ipc_ms=round(med.get("ipc", 0), 6),
                          local_ms=round(med.get("local", 0), 6), ipc_over_local=round(ratio, 4),
                          n=[len(busy[k]) for k in sets])), flush=True)
    done.set()


def owner(corpus, name, program, samples):
    """One process that allocates the inputs and keeps them alive while the consumer runs."""
    import torch
    import torch.multiprocessing as mp
    from call_spread_probe import load_program
    _, inputs = load_program(corpus, name, "ref")
    ctx = mp.get_context("spawn")
    queue, done = ctx.Queue(), ctx.Event()
    p = ctx.Process(target=consumer, args=(corpus, name, program, samples, queue, done))
    p.start()
    queue.put(inputs)
    done.wait(timeout=300)
    p.join(timeout=30)
    torch.cuda.synchronize()
    return 0 if p.exitcode == 0 else 1


def main():
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from call_spread_probe import run_children
    p = argparse.ArgumentParser()
    p.add_argument("--corpus", required=True)
    p.add_argument("--tasks", required=True)
    p.add_argument("--program", default="cand", choices=("ref", "cand"))
    p.add_argument("--procs", type=int, default=3)
    p.add_argument("--samples", type=int, default=40)
    p.add_argument("--child", default="")
    a = p.parse_args()
    if a.child:
        return owner(a.corpus, a.child, a.program, a.samples)
    for name in a.tasks.split(","):
        cmd = [sys.executable, __file__, "--corpus", a.corpus, "--tasks", name,
               "--program", a.program, "--samples", str(a.samples), "--child", name]
        run_children(name, cmd, a.procs, 300, ("ipc_over_local",), program=a.program,
                     summary=True)


if __name__ == "__main__":
    sys.exit(main())
