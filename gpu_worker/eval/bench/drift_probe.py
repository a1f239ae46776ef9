#!/usr/bin/env python3
"""Does the call clock drift with the fork server's age? (Session 16 saw 1_92's candidate
call-clock minimum go 0.045 -> 0.127 -> 0.222 ms at 55, 217 and 345 s into one run.)

Evaluates one task and candidate again and again through one `kforge-eval --serve` for
`--seconds`, optionally with a fresh server every `--restart-every` requests, and prints one
JSON line per evaluation: the server's age, the call clock's hop (call_overhead_ms and its
median), the reference's and the candidate's call-clock minimum and median, and the speedup.
A drift that follows the server's age and resets with a fresh server is the server's; one that
does not is the machine's (or the GPU's).

  drift_probe.py --eval build/gpu_worker/eval/kforge-eval --task T.py --candidate C.py \\
      [--device cuda] [--seconds 300] [--restart-every 0] [--pause-s 0]
"""
import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..",
                                "tests", "engine"))
import serve_client  # noqa: E402


def pick(result, side, key):
    return (result.get(side) or {}).get(key)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--eval", required=True)
    p.add_argument("--task", required=True)
    p.add_argument("--candidate", required=True)
    p.add_argument("--device", default="cuda")
    p.add_argument("--seconds", type=float, default=300)
    p.add_argument("--restart-every", type=int, default=0,
                   help="a fresh fork server every N evaluations (0: one server throughout)")
    p.add_argument("--pause-s", type=float, default=0, help="idle time between evaluations")
    args = p.parse_args()
    task, cand = open(args.task).read(), open(args.candidate).read()
    start = time.time()
    server, served, born = None, 0, 0.0
    n = 0
    while time.time() - start < args.seconds:
        if server is None or (args.restart_every and served >= args.restart_every):
            if server is not None:
                server.close()
            server, served, born = serve_client.Server(args.eval), 0, time.time()
        t0 = time.time()
        r = server.evaluate(task_source=task, candidate_source=cand, device=args.device)
        served += 1
        n += 1
        print(json.dumps(dict(
            n=n, at_s=round(t0 - start, 2), server_age_s=round(t0 - born, 2), served=served,
            verdict=r.get("verdict"), wall_s=round(time.time() - t0, 3),
            hop_ms=r.get("call_overhead_ms"), hop_median_ms=r.get("call_overhead_median_ms"),
            ref_min_ms=pick(r, "reference", "min_ms"),
            ref_median_ms=pick(r, "reference", "median_ms"),
            cand_min_ms=pick(r, "candidate", "min_ms"),
            cand_median_ms=pick(r, "candidate", "median_ms"),
            speedup=r.get("speedup"), speedup_device=r.get("speedup_device"))), flush=True)
        if args.pause_s:
            time.sleep(args.pause_s)
    if server is not None:
        server.close()


if __name__ == "__main__":
    main()
