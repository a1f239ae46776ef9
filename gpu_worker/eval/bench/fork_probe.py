#!/usr/bin/env python3
"""Measures what a fork server saves: interpreter + `import torch` once, then per request a
fork and a CUDA context in the child. Prints one `name seconds` line per step.

  python3 fork_probe.py [--device cuda|cpu] [--forks N]
"""
import argparse
import os
import sys
import time

t0 = time.perf_counter()
import torch  # noqa: E402

t_import = time.perf_counter() - t0


def child(device):
    t = time.perf_counter()
    x = torch.empty(1, device=device)
    if device.startswith("cuda"):
        torch.cuda.synchronize()
    t_ctx = time.perf_counter() - t
    t = time.perf_counter()
    y = torch.rand(1 << 20, device=device)
    (y * 2).sum().item()
    t_first = time.perf_counter() - t
    print(f"child_first_tensor_s {t_ctx:.4f}", flush=True)
    print(f"child_first_kernels_s {t_first:.4f}", flush=True)
    del x, y
    os._exit(0)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--device", default="cuda")
    p.add_argument("--forks", type=int, default=3)
    a = p.parse_args()
    print(f"import_torch_s {t_import:.4f}", flush=True)
    print(f"cuda_initialized_in_parent {torch.cuda.is_initialized()}", flush=True)
    for _ in range(a.forks):
        t = time.perf_counter()
        pid = os.fork()
        if pid == 0:
            child(a.device)
        t_fork = time.perf_counter() - t
        _, status = os.waitpid(pid, 0)
        print(f"fork_s {t_fork:.5f} child_wall_s {time.perf_counter() - t:.4f} "
              f"status {status}", flush=True)
    sys.exit(0)


if __name__ == "__main__":
    main()
