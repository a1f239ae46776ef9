#!/usr/bin/env python3
"""Where does the call clock's hop go? (0.33 ms a null call on the H200, 0.03-0.07 ms in CPU
mode: sessions 16-18, docs/benchmarks.md.)

kforge's judge and candidate are two processes with a CUDA context each; every call crosses
from one to the other and back, and each side synchronises its own device work. This probe
times that pattern without kforge, in torch alone, as round trips between a parent and a child
(spawned before either touches CUDA) over a pipe (multiprocessing's), median and 10th percentile of `--iters`
round trips, in microseconds:

  pipe            the pipe alone, no CUDA in either process
  pipe_contexts   the pipe alone, both processes holding an idle CUDA context
  one_process     one process: a tiny kernel and a synchronisation, twice (both sides' work in
                  one context)
  child_sync      the child launches a tiny kernel and synchronises, the parent waits
  both_sync       each side launches a tiny kernel and synchronises in its turn (two contexts
                  take turns on the GPU)
  shared_copy     the pattern of a kforge call: the child copies into memory the parent
                  shares with it (CUDA IPC) and synchronises; the parent clones it and
                  synchronises

A gap between `one_process` and `both_sync` is the cost of two contexts taking turns on the
GPU; the gap between `pipe` and `child_sync` is a synchronisation's own cost.

  hop_probe.py [--iters 2000] [--device 0]
"""
import argparse
import json
import multiprocessing as mp
import statistics
import time


def tiny_work(torch, x):
    x.add_(1.0)
    torch.cuda.synchronize()


def child_main(mode, device, rconn, wconn, shared):
    import torch
    x = None
    if mode != "pipe":
        torch.cuda.set_device(device)
        x = torch.zeros(256, device="cuda")
        torch.cuda.synchronize()
    src = torch.ones(256, device="cuda") if mode == "shared_copy" else None
    wconn.send_bytes(b"r")  # ready
    while True:
        b = rconn.recv_bytes()
        if b == b"q":
            return
        if mode in ("child_sync", "both_sync"):
            tiny_work(torch, x)
        elif mode == "shared_copy":
            shared.copy_(src)
            torch.cuda.synchronize()
        wconn.send_bytes(b"d")


def run_mode(mode, iters, device):
    import torch.multiprocessing as tmp  # CUDA tensors cross to the child through CUDA IPC
    ctx = tmp.get_context("spawn")
    p2c_r, p2c_w = ctx.Pipe(duplex=False)
    c2p_r, c2p_w = ctx.Pipe(duplex=False)
    torch = None
    shared = None
    if mode != "pipe":
        import torch as torch_module
        torch = torch_module
    # The child is spawned (a fresh interpreter), so the parent may hold CUDA already; the
    # shared tensor goes through torch's CUDA IPC.
    if mode == "shared_copy":
        torch.cuda.set_device(device)
        shared = torch.zeros(256, device="cuda")
    child = ctx.Process(target=child_main, args=(mode, device, p2c_r, c2p_w, shared),
                        daemon=True)
    child.start()
    c2p_r.recv_bytes()
    x = None
    if mode != "pipe":
        torch.cuda.set_device(device)
        x = torch.zeros(256, device="cuda")
        torch.cuda.synchronize()
    times = []
    for i in range(iters + 50):
        t0 = time.perf_counter_ns()
        if mode == "one_process":
            tiny_work(torch, x)
            tiny_work(torch, x)
        else:
            if mode == "both_sync":
                tiny_work(torch, x)
            p2c_w.send_bytes(b"g")
            c2p_r.recv_bytes()
            if mode == "shared_copy":
                shared.clone()
                torch.cuda.synchronize()
        if i >= 50:  # warm-up left out
            times.append((time.perf_counter_ns() - t0) / 1000.0)
    p2c_w.send_bytes(b"q")
    child.join(timeout=10)
    times.sort()
    return {"mode": mode, "iters": iters, "median_us": round(statistics.median(times), 2),
            "p10_us": round(times[len(times) // 10], 2),
            "p90_us": round(times[(len(times) * 9) // 10], 2)}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--iters", type=int, default=2000)
    p.add_argument("--device", type=int, default=0)
    p.add_argument("--modes", default="pipe,pipe_contexts,one_process,child_sync,both_sync,"
                                      "shared_copy")
    a = p.parse_args()
    for mode in a.modes.split(","):
        # Each mode in a process of its own, so that no CUDA context outlives its mode.
        q = mp.get_context("spawn").Queue()
        w = mp.get_context("spawn").Process(target=measure_in_process,
                                            args=(mode, a.iters, a.device, q))
        w.start()
        w.join()
        print(json.dumps(q.get() if not q.empty() else {"mode": mode, "error": w.exitcode}),
              flush=True)


def measure_in_process(mode, iters, device, q):
    q.put(run_mode(mode, iters, device))


if __name__ == "__main__":
    main()
