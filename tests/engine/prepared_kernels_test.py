#!/usr/bin/env python3
"""The fork server prepares its comparison kernels without running NVRTC itself (CPU mode).

Every evaluation is forked from the server, and on the H200 every evaluation forked from a server
that had run NVRTC found no CUDA device (docs/decisions.md; session 20 brought it back, session
21's first device call caught it). So with TORCH_CUDA_ARCH_LIST set, as the worker sets it:
  1. the server says it prepared the kernels (4 types for 9.0);
  2. NVRTC compiled in a child of the server, not in the server: the CPU time of the server's
     waited-for children holds the compiles (torch's import already maps NVRTC's libraries
     into the server, so its memory map cannot tell);
  3. an evaluation forked from it is still ok.
Exits 1 on the first failed check.

  prepared_kernels_test.py --eval build/gpu_worker/eval/kforge-eval
"""
import argparse
import os
import tempfile
import time

import serve_client
from check_util import ROOT, TINY_RELU_TASK, check

CORRECT = os.path.join(ROOT, "examples", "candidates", "tiny_relu", "correct.py")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--eval", required=True)
    args = p.parse_args()
    with tempfile.TemporaryDirectory(prefix="kforge-prepared-") as cache, \
            open(os.path.join(cache, "stderr"), "w+") as err:
        server = serve_client.Server(args.eval, cache,
                                     env=dict(os.environ, TORCH_CUDA_ARCH_LIST="9.0"),
                                     stderr=err)
        said = ""
        deadline = time.time() + 120  # the line comes before the server reads a request
        while not said and time.time() < deadline and server.proc.poll() is None:
            time.sleep(0.1)
            err.seek(0)
            said = next((line.strip() for line in err if "comparison kernels prepared" in line),
                        "")
        check(said.endswith("4 comparison kernels prepared for 9.0"),
              f"the server prepared 4 kernels for 9.0 ({said!r})")
        # /proc/PID/stat fields 14-17: utime, stime, cutime, cstime (children waited for).
        ticks = open(f"/proc/{server.proc.pid}/stat").read().rsplit(")", 1)[1].split()[11:15]
        children_s = (int(ticks[2]) + int(ticks[3])) / os.sysconf("SC_CLK_TCK")
        check(children_s >= 0.1,
              f"NVRTC compiled in a child of the server, not in it: the server's children took "
              f"{children_s:.2f} s of CPU (about 0.1 s a kernel; none without the list)")
        r = server.evaluate(task_source=open(TINY_RELU_TASK).read(),
                            candidate_source=open(CORRECT).read(), device="cpu")
        check(r["verdict"] == "ok",
              f"an evaluation forked from it is ok ({r['verdict']}: {r.get('reason')})")
        check(server.close() == 0, "the fork server ended cleanly")


if __name__ == "__main__":
    main()
