#!/usr/bin/env python3
"""GPU turns (gpu_worker/eval/supervisor.h, docs/evaluation.md "GPU turns"), in CPU mode, where
the turn is taken at the same point as on a GPU (after the device set-up, before the call
clock's calibration and before any task or candidate code):
  1. two fork servers given the same lock file evaluate tests/engine/turn_candidate.py at once:
     both `ok`, and the two candidates' code ran one after the other (each prints the
     system-wide monotonic time when it starts and 2 s later when it ends) although each tried
     to release every lock it could reach, and found the lock still held by its turn; the
     later one's result says it waited (gpu_wait_s) and both how long they held the turn
     (gpu_turn_s); the task's code, which runs in the judge too, found no descriptor of the
     lock file in its process;
  2. the control: the same two evaluations on two servers without the lock overlap, and the
     lock file is free while they run;
  3. a turn held elsewhere (by this test) holds the evaluation (on a server that has already
     served one) before its candidate's code runs, and it goes on once the turn is free: `ok`,
     gpu_wait_s at least the time held, and not counted in device_s;
  4. a turn held past the server's --gpu-wait-s ends the evaluation as runtime_error, rule
     gpu_turn_timeout, stage gpu_wait, and nothing of the candidate ran;
  5. a server given a --gpu-lock-fd that is not an open file does not start, and says why;
     a server with turns refuses a build-only request (a build runs candidate code before a
     turn could be taken).
Exits 1 on the first failed check.

  gpu_turn_test.py --eval build/gpu_worker/eval/kforge-eval
"""
import argparse
import fcntl
import os
import re
import subprocess
import tempfile
import threading
import time

import serve_client
from check_util import ROOT, TINY_RELU_TASK as TASK, check

CANDIDATE = os.path.join(ROOT, "tests", "engine", "turn_candidate.py")


# Appended to the task: its code runs in the judge (and the candidate process) and lists every
# descriptor of the process that refers to the lock file.
TASK_PROBE = """
import os as _os
_fds = _os.listdir("/proc/self/fd")
print(f"FDSCAN {len(_fds)}", flush=True)
for _fd in _fds:
    try:
        if _os.readlink(f"/proc/self/fd/{_fd}") == "@LOCK@":
            print(f"LOCKFD {_os.getpid()} {_fd}", flush=True)
    except OSError:
        pass
"""
SOURCES = {}


def evaluate(server, results, key, **extra):
    results[key] = server.evaluate(task_source=SOURCES["task"],
                                   candidate_source=SOURCES["candidate"], device="cpu", **extra)


def window(result):
    """(start, end) of the candidate's code by the system-wide monotonic clock, or None."""
    log = result.get("output_log", "")
    start = re.search(r"TURN start ([0-9.]+)", log)
    end = re.search(r"TURN end ([0-9.]+)", log)
    return (float(start.group(1)), float(end.group(1))) if start and end else None


def gpu_wait(result):
    return result.get("stages", {}).get("gpu_wait_s", 0)


def at_once(servers):
    """Both servers evaluate the candidate at the same time; their results."""
    results = {}
    threads = [threading.Thread(target=evaluate, args=(s, results, i))
               for i, s in enumerate(servers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return [results[i] for i in range(len(servers))]


def describe(r):
    return f"{r['verdict']} {r.get('rule', '')} {r.get('reason', '')[:200]}"


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--eval", required=True)
    args = p.parse_args()
    with tempfile.TemporaryDirectory(prefix="kforge-turns-") as tmp:
        lock = os.path.join(tmp, "gpu0.lock")
        open(lock, "w").close()
        SOURCES["task"] = open(TASK).read() + TASK_PROBE.replace("@LOCK@", lock)
        SOURCES["candidate"] = open(CANDIDATE).read().replace("@LOCK@", lock)
        cache = os.path.join(tmp, "cache")
        env = dict(os.environ, KFORGE_SHARE_REFERENCE="off")

        servers = [serve_client.Server(args.eval, cache, env=env, gpu_lock=lock)
                   for _ in range(2)]
        a, b = at_once(servers)
        check(a["verdict"] == "ok" and b["verdict"] == "ok",
              f"1. both evaluations with turns ok ({describe(a)}; {describe(b)})")
        wa, wb = window(a), window(b)
        check(wa is not None and wb is not None, f"1. both candidates ran ({wa}, {wb})")
        first, second = sorted([wa, wb])
        check(first[1] <= second[0],
              f"1. one after the other: {first[0]:.3f}-{first[1]:.3f} then "
              f"{second[0]:.3f}-{second[1]:.3f}")
        later = a if wa == second else b
        check(gpu_wait(later) >= 1.0,
              f"1. the later one says it waited for its turn: gpu_wait_s {gpu_wait(later):.2f}")
        for r in (a, b):
            log = r.get("output_log", "")
            held = r.get("stages", {}).get("gpu_turn_s", 0)
            check("TURN lock held" in log and held >= 2.0,
                  f"1. the candidate found the lock held in its turn, held {held:.2f} s")
            scans = [int(n) for n in re.findall(r"FDSCAN (\d+)", log)]
            check(len(scans) >= 1 and min(scans) >= 3 and "LOCKFD" not in log,
                  f"1. no descriptor of the lock file where task code runs (scanned {scans})")
        for s in servers:
            s.close()

        servers = [serve_client.Server(args.eval, cache, env=env) for _ in range(2)]
        c, d = at_once(servers)
        wc, wd = window(c), window(d)
        check(c["verdict"] == "ok" and d["verdict"] == "ok" and wc and wd,
              f"2. control without turns: both ok ({describe(c)}; {describe(d)})")
        first, second = sorted([wc, wd])
        check(second[0] < first[1] and gpu_wait(c) == 0 and gpu_wait(d) == 0,
              f"2. control: without turns they overlap ({first}, {second}) and nobody waited")
        check(all("TURN lock free" in r.get("output_log", "") for r in (c, d)),
              "2. control: the lock file is free while they run")
        for s in servers:
            s.close()

        server = serve_client.Server(args.eval, cache, env=env, gpu_lock=lock)
        warm = {}
        evaluate(server, warm, 0)  # the server's start is not the wait's to cover
        check(warm[0]["verdict"] == "ok", f"3. a first evaluation ({describe(warm[0])})")
        held = os.open(lock, os.O_RDONLY)
        fcntl.flock(held, fcntl.LOCK_EX)
        results = {}
        t = threading.Thread(target=evaluate, args=(server, results, 0))
        t.start()
        time.sleep(4)
        check(t.is_alive(), "3. the evaluation waits while the turn is held elsewhere")
        released_at = time.monotonic()
        fcntl.flock(held, fcntl.LOCK_UN)
        t.join()
        r = results[0]
        w = window(r)
        check(r["verdict"] == "ok" and w is not None and w[0] >= released_at,
              f"3. ok once the turn is free, the candidate's code after it ({describe(r)}; "
              f"window {w}, released {released_at:.3f})")
        stages = r.get("stages", {})
        check(gpu_wait(r) >= 3.0 and stages.get("device_s", 0) < gpu_wait(r),
              f"3. gpu_wait_s {gpu_wait(r):.2f} >= 3, not in device_s "
              f"{stages.get('device_s', 0):.2f}")
        server.close()

        server = serve_client.Server(args.eval, cache, env=env, gpu_lock=lock, gpu_wait_s=2)
        fcntl.flock(held, fcntl.LOCK_EX)
        results = {}
        evaluate(server, results, 0)
        fcntl.flock(held, fcntl.LOCK_UN)
        r = results[0]
        check(r["verdict"] == "runtime_error" and r.get("rule") == "gpu_turn_timeout"
              and r.get("stage") == "gpu_wait" and "TURN start" not in r.get("output_log", ""),
              f"4. a turn never given: gpu_turn_timeout in stage gpu_wait, nothing of the "
              f"candidate ran ({describe(r)}; stage {r.get('stage')})")
        evaluate(server, results, 1)
        r = results[1]
        check(r["verdict"] == "ok", f"4. the same server's next evaluation is ok ({describe(r)})")
        evaluate(server, results, 2, build_only=True)
        r = results[2]
        check(r["verdict"] == "runtime_error" and r.get("rule") == "bad_request"
              and "takes no build-only request" in r.get("reason", ""),
              f"5. a build-only request on a server with turns is refused ({describe(r)})")
        server.close()
        os.close(held)

        proc = subprocess.run([args.eval, "--serve", "stdio", "--gpu-lock-fd", "77"],
                              input=b"", capture_output=True, timeout=120)
        err = proc.stderr.decode(errors="replace")
        check(proc.returncode == 1 and "--gpu-lock-fd 77 is not an open regular file" in err,
              f"5. a bad --gpu-lock-fd: exit 1 and why ({proc.returncode}: {err.strip()[-200:]})")
    print("gpu_turn_test: all checks passed")


if __name__ == "__main__":
    main()
