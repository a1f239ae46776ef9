#!/usr/bin/env python3
"""Where a program's first call goes in a fresh process (session 32: the correctness trials'
time is the first trial's, 0.003-0.56 s a program, and the later trials cost almost nothing).

A parent imports torch without touching CUDA, as the fork server's template does, and forks one
child per (variant, task, repeat). Each child makes its CUDA context, builds the task's Model
with KernelBench's inputs on the GPU (fp32: TF32 off, as the judge runs references), then times
its first, second and third forward (each synchronised). Variants:
  base      nothing before the first call;
  preload   the parent dlopens, before forking, the math libraries a conv and a matmul load
            (found by a first child from /proc/self/maps): host work only, inherited by fork;
  handles   preload, and the child makes its cuBLAS handle (torch.cuda.current_blas_handle)
            before the first call;
  kernels   preload, and the child runs a tiny conv2d, conv_transpose3d and matmul first: the
            most a warm-up of the libraries (not of the task's own kernels) can take away.
Prints one JSON line per child and a table of medians last.

  python3 first_call_probe.py --tasks DIR/level1/1_Square_matrix_multiplication_.py,... \
      [--repeats 2] [--variants base,preload] [--preload-set cudnn]
"""
import argparse
import ctypes
import json
import os
import statistics
import sys
import time

import torch

VARIANTS = ("base", "preload", "handles", "kernels")
LIB_KEYS = ("cudnn", "cublas", "nvrtc", "nvJitLink", "cufft", "curand", "cusparse", "cusolver")


def sync():
    torch.cuda.synchronize()


def tiny_warmups():
    import torch.nn.functional as F
    x = torch.randn(1, 3, 8, 8, device="cuda")
    F.conv2d(x, torch.randn(4, 3, 3, 3, device="cuda"))
    v = torch.randn(1, 2, 4, 4, 4, device="cuda")
    F.conv_transpose3d(v, torch.randn(2, 2, 3, 3, 3, device="cuda"))
    a = torch.randn(64, 64, device="cuda")
    a @ a
    sync()


def loaded_libs():
    out = []
    with open("/proc/self/maps") as f:
        for line in f:
            p = line.split()[-1] if len(line.split()) >= 6 else ""
            if p.endswith(".so") or ".so." in p:
                if any(k in os.path.basename(p) for k in LIB_KEYS) and p not in out:
                    out.append(p)
    return out


def load_task(path):
    ns = {"__name__": "kb_task"}
    with open(path) as f:
        exec(compile(f.read(), path, "exec"), ns)
    return ns


def child(variant, task_path, w):
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    r = {"variant": variant, "task": os.path.basename(task_path)}
    t = time.perf_counter()
    torch.empty(1, device="cuda")
    sync()
    r["context_s"] = time.perf_counter() - t
    t = time.perf_counter()
    if variant == "handles":
        torch.cuda.current_blas_handle()
    elif variant == "kernels":
        tiny_warmups()
    r["warmup_s"] = time.perf_counter() - t
    ns = load_task(task_path)
    torch.manual_seed(42)
    init = ns["get_init_inputs"]()
    model = ns["Model"](*init).cuda()
    torch.manual_seed(42)
    inputs = [x.cuda() if isinstance(x, torch.Tensor) else x for x in ns["get_inputs"]()]
    sync()
    with torch.no_grad():
        for k in ("first_s", "second_s", "third_s"):
            t = time.perf_counter()
            model(*inputs)
            sync()
            r[k] = time.perf_counter() - t
    os.write(w, (json.dumps(r) + "\n").encode())


def discover(w):
    torch.empty(1, device="cuda")
    tiny_warmups()
    os.write(w, (json.dumps({"libs": loaded_libs()}) + "\n").encode())


def fork_run(fn, *args):
    rfd, wfd = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(rfd)
        code = 0
        try:
            fn(*args, wfd)
        except BaseException as e:  # reported, not raised: the parent goes on
            os.write(wfd, (json.dumps({"error": repr(e)[:300]}) + "\n").encode())
            code = 1
        os._exit(code)
    os.close(wfd)
    data = b""
    while True:
        chunk = os.read(rfd, 65536)
        if not chunk:
            break
        data += chunk
    os.close(rfd)
    os.waitpid(pid, 0)
    lines = [json.loads(x) for x in data.decode().splitlines() if x.strip()]
    return lines[-1] if lines else {"error": "no output"}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--tasks", required=True, help="comma-separated KernelBench task files")
    p.add_argument("--repeats", type=int, default=2)
    p.add_argument("--variants", default=",".join(VARIANTS),
                   help="a subset, run in this order (preload, handles and kernels preload)")
    p.add_argument("--preload-set", choices=("found", "cudnn"), default="found",
                   help="found: every math library a conv and a matmul loaded (a first child's "
                        "maps); cudnn: cuDNN's four parts beside torch's libcudnn, as session "
                        "32's math preload in the fork server did (removed in session 33)")
    a = p.parse_args()
    tasks = a.tasks.split(",")
    variants = [v for v in a.variants.split(",") if v]
    assert all(v in VARIANTS for v in variants), variants
    assert not torch.cuda.is_initialized()
    if a.preload_set == "cudnn":
        here = [x for x in loaded_libs() if os.path.basename(x).startswith("libcudnn.so.")]
        d = os.path.dirname(here[0]) if here else ""
        libs = {"libs": sorted(os.path.join(d, n) for n in (os.listdir(d) if d else [])
                               if n.startswith(("libcudnn_graph.so.",
                                                "libcudnn_engines_precompiled.so.",
                                                "libcudnn_engines_runtime_compiled.so.",
                                                "libcudnn_heuristic.so.")))}
    else:
        libs = fork_run(discover)
    print(json.dumps(libs), flush=True)
    rows = []

    def run(variant):
        for _ in range(a.repeats):
            for tk in tasks:
                r = fork_run(child, variant, tk)
                r.setdefault("variant", variant)
                r.setdefault("task", os.path.basename(tk))
                print(json.dumps(r), flush=True)
                rows.append(r)

    if "base" in variants:
        run("base")
    if any(v != "base" for v in variants):
        t = time.perf_counter()
        for lib in libs.get("libs", []):
            try:
                ctypes.CDLL(lib, mode=ctypes.RTLD_GLOBAL)
            except OSError as e:
                print(json.dumps({"preload_error": lib, "error": str(e)[:200]}), flush=True)
        print(json.dumps({"preload_s": time.perf_counter() - t}), flush=True)
        assert not torch.cuda.is_initialized()
    for v in variants:
        if v != "base":
            run(v)
    print(f"{'task':<48} " + " ".join(f"{v:>22}" for v in VARIANTS))
    print(f"{'':<48} " + " ".join(f"{'first/second/warmup ms':>22}" for _ in VARIANTS))
    for tk in tasks:
        name = os.path.basename(tk)
        cells = []
        for v in VARIANTS:
            rs = [r for r in rows if r["task"] == name and r["variant"] == v and "first_s" in r]
            if not rs:
                cells.append(f"{'-':>22}")
                continue
            f = statistics.median(r["first_s"] for r in rs) * 1e3
            s = statistics.median(r["second_s"] for r in rs) * 1e3
            wu = statistics.median(r["warmup_s"] for r in rs) * 1e3
            cells.append(f"{f:8.1f}/{s:6.1f}/{wu:6.1f}")
        print(f"{name[:48]:<48} " + " ".join(cells))
    ctx = {v: statistics.median([r["context_s"] for r in rows if r["variant"] == v
                                 and "context_s" in r] or [0]) for v in VARIANTS}
    print("context_s median: " + ", ".join(f"{v} {s:.3f}" for v, s in ctx.items()))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
