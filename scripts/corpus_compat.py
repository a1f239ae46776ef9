#!/usr/bin/env python3
"""kforge-eval against KernelBench's own harness on a real corpus (issue 13 point 6, issue 14).

Every candidate of a corpus (default: CUDA-L1's cudal1_a100.jsonl, 112 candidates) is evaluated
against its own `ref_code` as the task, twice:

* by kforge-eval through its fork server (`--serve stdio --answer json`): candidates that build
  a C++ extension (`torch.utils.cpp_extension`) are first built ahead by several servers on the
  CPUs (`build_only` requests, device `cpu`, no GPU visible, as the worker's builders do), then
  one server evaluates every candidate on the GPU with the builds cached (a `compile_error` or
  a static `rejected` from the build ahead is final there, as in the worker);
* by KernelBench's harness, `kernelbench.eval.eval_kernel_against_ref(ref, cand, seed_num=42,
  num_correct_trials=5, num_perf_trials=100, measure_performance=True, build_dir=...)`, one
  subprocess per candidate with a timeout (an illegal memory access poisons its process).
  Its `load_inline` builds are made ahead on the CPUs by KB's own `build_compile_cache` into the
  same per-candidate build_dir (TORCH_EXTENSIONS_DIR), under the TORCH_CUDA_ARCH_LIST that KB
  would derive from the GPU itself (`<cc>+PTX`), so its timed run finds them cached.

What overlaps what: every piece of GPU work (each kforge timed request, each KB evaluation from
`import kernelbench.eval`, which creates its CUDA context, to its exit) runs in one GPU thread,
one at a time, so kforge's and KB's timing never overlap on the GPU. CPU work overlaps it: the
builds ahead (as in the worker) and the KB children importing torch before their turn; each row
records how many builds were running when its GPU turn began (`*_builds_running`).

A time budget (--budget-s) bounds the whole run: no GPU turn starts within --min-turn-s of its
end, a turn still running at the end is killed, and what did not fit is reported as skipped.

Writes OUT/compat.jsonl (one row per candidate: kforge verdict, rule, reason, speedup, clocks,
stages, wall time; KB compiled, correctness, runtime, ref runtime, speedup), OUT/compat_run.json
and OUT/compat_table.txt (kforge verdict x KB outcome, and the disagreements), printed last;
OUT/compat_kb_logs/NAME.log holds the first 16 KiB each KB evaluation printed.
`corpus_compat.py --summary-of OUT` prints the repeats section again from a finished run's
compat.jsonl and compat_run.json.

--repeats N (issue 14 points 2-4; default 1, which changes nothing above): every candidate
kforge judged `ok` in the first pass is evaluated N-1 more times through the same fork server,
each request a fresh evaluation process that the server forks (serve.h: own CUDA context, own
candidate process, nothing kept between requests). The repeats are queued as rounds 1..N-1
behind every first-pass turn (a repeat runs only when no first-pass kforge or KB turn is
ready), in corpus order within a round, and the GPU thread takes another candidate's turn
when the next one would follow the same candidate's kforge turn; how often it could not is
counted. They share the budget. Each row gets `kforge_repeats` (the same kforge fields per
repeat, unprefixed, with `round`), compat_run.json `repeats` (below) and `gpu_turns` (every
GPU turn: kind, round, candidate, start, seconds), and compat_table.txt a `repeats` section:
- spread: over the candidates whose N evaluations were all `ok`, per candidate max/min - 1 of
  `speedup`, `speedup_device` and `speedup_call` over its N runs; median, p90 (nearest rank),
  max, count, and how many stayed within 1%; where the budget cut repeats, this, the
  outside-the-CI count and kforge / KB again over every candidate with 2 to N evaluations, all
  `ok`, on lines of their own (`two_or_more`; never in place of the N-run figures); with 3
  or more runs, for the device and call clocks, the same spread over the repeats alone
  (`spread_repeats_only`) and the first pass's speedup over the repeats' mean, signed median
  and p90 of its size (`first_pass_over_repeats`): the first pass runs beside KB's turns, the
  repeats after them;
- outside the first run's CI: the fraction of repeats whose speedup on a clock falls outside
  the first run's 95% interval for that clock: its `speedup_<clock>_ci_low/high` (results
  since session 12: widened by the clock's between-process spread), else `speedup_ci_low/high`
  where the first run's `speedup_clock` is that clock, else the reference median's interval
  over the candidate's (`median_ci_low_ms/high_ms` of the clock's pair:
  [ref_low/cand_high, ref_high/cand_low]);
- capped: the fraction of `ok` evaluations (first passes and repeats) whose TimingStats said
  `capped` on either program (any of the four clock pairs), and how many said `settled` (the
  device clock stopped early on a host-bound program: not capped);
- ok wall: median and p90 of the client's wall time of a request that ended `ok`;
- evaluations per GPU-hour, all verdicts: kforge GPU turns over the seconds of those turns
  (the first turn includes the fork server's start); the same with the evaluations decided by
  the build ahead on the CPUs (no GPU turn) added; and all of them over the whole run's wall
  time (which also holds KB's turns). With --gpu-turns a turn's seconds are the time its
  evaluation held the GPU's lock (StageDurations.gpu_turn_s: from its calibration until every
  process of it was gone), its start-up and CUDA contexts made beside another lane's turn;
- GPU busy: the sum over `ok` evaluations of (reference_device + candidate_device median x n)
  over the kforge GPU-turn seconds. A lower bound: it counts only the timed samples' device
  spans (median x n, not their sum), not warm-ups, correctness trials, the L2 flushes or the
  pre-roll, and nothing of evaluations that did not end `ok`;
- GPU utilisation by NVML during kforge's GPU turns: on a GPU, `nvidia-smi` samples the
  device's utilisation (the fraction of time any kernel ran, NVML's own window) every 100 ms
  for the whole run; the mean of the readings taken inside kforge's turns. An upper bound
  beside the lower one: it counts the pre-rolls, flushes, warm-ups and correctness trials, and
  the window of a reading can reach past a turn's ends;
- kforge / KB: for the same candidates with KB correct, per clock the median of kforge's N
  speedups over KB's speedup; median and range.
The result fields (EvalResult 22-33, TimingStats 16-18) are read under their proto names, as
kforge-eval's JSON answer writes them, or their lowerCamelCase JSON names.

  corpus_compat.py --eval build-gpu/gpu_worker/eval/kforge-eval --out DIR      # GPU machine
  corpus_compat.py --eval build/gpu_worker/eval/kforge-eval --out DIR --device cpu --limit 3
--device cpu (a smoke test without a GPU) runs the kforge half only. Standard library only;
KB's harness is imported in its own subprocesses, with stub modules for the LLM clients (and
pydantic, requests, tqdm) where they are not installed: its evaluation path uses none of them.
"""
import argparse
import collections
import contextlib
import copy
import datetime
import fcntl
import hashlib
import importlib.util
import io
import json
import math
import os
import queue
import select
import shutil
import signal
import statistics
import subprocess
import sys
import threading
import time
import types

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "engine"))
import serve_client  # noqa: E402

KFORGE_STAGE_KEYS = ("startup_s", "device_s", "load_task_s", "build_s", "correctness_s",
                     "timing_s", "total_s")
KB_OUTCOMES = ("correct", "incorrect", "runtime_error", "not_compiled", "harness_error",
               "timeout", "skipped")


def first_existing(*paths):
    for p in paths:
        if p and os.path.exists(p):
            return os.path.abspath(p)
    return paths[-1]


# ---------------------------------------------------------------- corpus


def load_corpus(path, only, limit, builds="any", skip=()):
    """The corpus rows as candidates: name `<level>_<task>`, task and candidate sources; with
    `builds` yes/no only those that do / do not build an extension, none named in `skip`."""
    cands = []
    for line in open(path):
        r = json.loads(line)
        name = f"{r['level_id']}_{r['task_id']}"
        extension = "cpp_extension" in r["custom_code"]
        if (only and name not in only) or name in skip or \
                (builds != "any" and extension != (builds == "yes")):
            continue
        cands.append(dict(name=name, level=r["level_id"], task=r["task_id"],
                          ref=r["ref_code"], src=r["custom_code"],
                          cudal1_score=r.get("score_default_a100"), builds=extension,
                          sha=hashlib.sha256(r["custom_code"].encode()).hexdigest()[:12]))
    return cands[:limit] if limit else cands


# ---------------------------------------------------------------- the run's shared state


class Run:
    """Deadline, the counter of running builds, the rows and the GPU queue."""

    def __init__(self, args, cands):
        self.args = args
        self.t0 = time.time()
        self.deadline = self.t0 + args.budget_s
        self.cands = {c["name"]: c for c in cands}
        self.order = {c["name"]: i for i, c in enumerate(cands)}
        self.rows = {c["name"]: dict(name=c["name"], level=c["level"], task=c["task"],
                                     builds_extension=c["builds"],
                                     cudal1_score_a100=c["cudal1_score"], **lanes_field(args))
                     for c in cands}
        self.lock = threading.Lock()
        self.builds_running = 0
        # (round, corpus index, kind, seq, name, job): runnable now; round 0 is the first pass,
        # rounds 1..N-1 the --repeats, so a repeat runs only when no first-pass turn is ready.
        self.gpu = queue.PriorityQueue()
        # With --kb-lanes, KB's turns have a queue (and GPU threads) of their own.
        self.gpu_kb = queue.PriorityQueue() if args.kb_lanes else self.gpu
        self.seq = 0
        self.turns_left = (sum(kforge_runs(args, c) for c in cands)  # GPU turns still to come
                           + sum(kb_runs(args, c) for c in cands))
        self.stopping = threading.Event()
        self.procs = set()  # every child process alive, killed at the end
        self.turn_log = []  # per GPU turn: kind, round, name, at_s, turn_s (for --repeats)
        self.back_to_back = 0  # repeats that followed the same candidate's kforge turn

    def left(self):
        return self.deadline - time.time()

    def update(self, name, **fields):
        with self.lock:
            self.rows[name].update(fields)

    def build_started(self, delta):
        with self.lock:
            self.builds_running += delta

    def enqueue(self, name, kind, job, round_=0):
        # A ready KB child (kind 1) holds one of the --kb-prefetch slots: its turn sorts before
        # the kforge turns of first passes, or children of candidates late in corpus order that
        # were ready first could hold every slot while kforge's turns take the budget (and
        # next_turn alternates the two while both are ready).
        order = -1 if kind == 1 else self.order[name]
        with self.lock:
            self.seq += 1
            (self.gpu_kb if kind == 1 else self.gpu).put((round_, order, kind, self.seq, name, job))

    def more_turns(self, n):
        """n more GPU turns to come (the repeats of a candidate judged ok)."""
        with self.lock:
            self.turns_left += n

    def turn_done(self):
        """A GPU turn ran, or will never be needed (decided without the GPU)."""
        with self.lock:
            self.turns_left -= 1

    def spawn(self, *a, **kw):
        p = subprocess.Popen(*a, start_new_session=True, **kw)
        with self.lock:
            self.procs.add(p)
        return p

    def reap(self, p):
        kill_group(p)
        with self.lock:
            self.procs.discard(p)

    def kill_all(self):
        with self.lock:
            procs = list(self.procs)
        for p in procs:
            kill_group(p)


def descendants(pid):
    """The pids below pid (Linux /proc), children first seen first."""
    out = []
    for tid in os.listdir(f"/proc/{pid}/task") if os.path.isdir(f"/proc/{pid}/task") else ():
        try:
            kids = open(f"/proc/{pid}/task/{tid}/children").read().split()
        except OSError:
            continue
        for k in map(int, kids):
            out += [k] + descendants(k)
    return out


def kill_group(p):
    """SIGKILL to the process and everything below it: its group where it leads one (our
    children), and the groups of its descendants (a fork server's evaluation processes)."""
    if p.poll() is None:
        below = descendants(p.pid)
        for pid in [p.pid] + below:
            for kill in (os.killpg, os.kill):
                try:
                    kill(pid, signal.SIGKILL)
                    break
                except (ProcessLookupError, PermissionError):
                    continue
    try:
        p.wait(timeout=10)
    except subprocess.TimeoutExpired:
        pass


def bounded(text, n=300):
    return None if text is None else str(text)[:n]


# ---------------------------------------------------------------- kforge


def kforge_env(args, build_ahead):
    env = dict(os.environ)
    if args.torch_arch_list:  # the worker's choice: the builds ahead build what the slot loads
        env.setdefault("TORCH_CUDA_ARCH_LIST", args.torch_arch_list)
    if build_ahead:
        env["CUDA_VISIBLE_DEVICES"] = ""
    # The fork server's shared reference (gpu_worker/eval/reference_share.h): off unless asked,
    # so that each --repeats evaluation times its reference itself, as the spread asks.
    env["KFORGE_SHARE_REFERENCE"] = args.share_reference
    return env


def gpu_lock_path(args):
    """The GPU's lock file of --gpu-turns ("" without): WORK_DIR/gpu.lock, opened once here and
    named by this process's descriptor of it, so that each server and KB turn opens the same
    file (an open file description of its own) even if something removed or replaced the
    name. Not a boundary: candidates here run as this user, unsandboxed."""
    if not args.gpu_turns:
        return ""
    if getattr(args, "gpu_lock_fd", None) is None:
        os.makedirs(args.work_dir, exist_ok=True)
        args.gpu_lock_fd = os.open(os.path.join(args.work_dir, "gpu.lock"),
                                   os.O_RDONLY | os.O_CREAT, 0o644)
    return f"/proc/self/fd/{args.gpu_lock_fd}"


def start_server(run, build_ahead):
    server = serve_client.Server(run.args.eval, run.args.cache_dir,
                                 env=kforge_env(run.args, build_ahead),
                                 gpu_lock="" if build_ahead else gpu_lock_path(run.args))
    with run.lock:
        run.procs.add(server.proc)
    return server


BUDGET_CUT = "cut by the run's budget end: "  # a kforge reason's start: no verdict was reached


def kforge_request(run, server, c, **extra):
    """One request; a watchdog kills the server at the deadline. Returns (result, wall_s)."""
    cut = threading.Event()

    def watchdog():
        cut.set()
        kill_group(server.proc)

    timer = threading.Timer(max(run.left(), 1), watchdog)
    timer.start()
    t0 = time.time()
    try:
        r = server.evaluate(task_source=c["ref"], candidate_source=c["src"],
                            task_name=c["name"], policy=run.args.policy,
                            numerics=run.args.numerics, atol=run.args.atol,
                            rtol=run.args.rtol, **extra)
    except (EOFError, OSError, ValueError) as e:
        why = BUDGET_CUT if cut.is_set() else ""
        r = {"verdict": "<no answer>", "reason": f"{why}fork server gave no answer: {e!r}"}
    finally:
        timer.cancel()
    if r.get("rule") == "outlived_kill":  # the server stops after this answer (supervisor.h)
        try:
            server.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            kill_group(server.proc)
    return r, time.time() - t0


def kforge_fields(r, wall_s):
    """The row's kforge_* fields; tolerant of fields that come and go (policy, timing.*)."""
    def side(p):
        s = r.get(p) or {}
        return {k: s.get(k) for k in ("median_ms", "mean_ms", "min_ms", "std_ms", "n",
                                      "event_fallbacks") if k in s}
    system = r.get("system") or {}
    out = dict(verdict=r.get("verdict"), rule=r.get("rule") or None,
               reason=bounded(r.get("reason")), speedup=r.get("speedup"),
               stage=r.get("stage"), policy=r.get("policy"), dialect=r.get("dialect"),
               timing_clock=r.get("timing_clock"), timing_clock_note=r.get("timing_clock_note"),
               timing_preroll_ms=r.get("timing_preroll_ms"), reference=side("reference"),
               candidate=side("candidate"), candidate_claim=side("candidate_claim"),
               wall_s=round(wall_s, 3),
               stages={k: v for k, v in (r.get("stages") or {}).items()},
               sm_clock_mhz=system.get("sm_clock_mhz"),
               temperature_c=system.get("temperature_c"), gpu=system.get("gpu_name"),
               device_memory_used_bytes=int(system.get("device_memory_used_bytes") or 0),
               mps=bool(system.get("mps")), correctness=r.get("correctness") or None)
    if isinstance(r.get("timing"), dict):  # the two clocks (call, device), where reported
        out["timing"] = r["timing"]
    out.update(two_clocks(r))
    return {"kforge_" + k: v for k, v in out.items()}


def lanes_overlap(args):
    """Whether GPU turns overlap (--kforge-lanes above 1, --kb-lanes, without --gpu-turns):
    verdicts only."""
    return ((args.kforge_lanes > 1 or args.kb_lanes > 0)
            and not getattr(args, "gpu_turns", False))


def lanes_field(args):
    """Rows of a run whose GPU turns overlapped say so: their speedups are not timing results."""
    if not lanes_overlap(args):
        return {}
    return {"gpu_lanes": {"kforge": args.kforge_lanes, "kb": args.kb_lanes}}


def camel(key):
    """The proto JSON mapping's lowerCamelCase name of a snake_case field."""
    head, *rest = key.split("_")
    return head + "".join(w[:1].upper() + w[1:] for w in rest)


def pick(d, key):
    """d[key] under the proto field name (what kforge-eval --answer json writes today:
    preserve_proto_field_names) or its lowerCamelCase JSON name; None when absent."""
    if not isinstance(d, dict):
        return None
    return d[key] if key in d else d.get(camel(key))


TWO_CLOCK_SCALARS = ("speedup_device", "speedup_call", "speedup_clock", "speedup_ci_low",
                     "speedup_ci_high", "device_clock_note", "native_code", "native_code_detail",
                     "speedup_device_busy", "reference_device_busy_ms",
                     "candidate_device_busy_ms", "speedup_device_span", "reference_device_span_ms",
                     "candidate_device_span_ms", "speedup_call_ci_low", "speedup_call_ci_high",
                     "speedup_device_ci_low", "speedup_device_ci_high", "speedup_call_between_sd",
                     "speedup_device_between_sd", "strict_rule", "strict_reason",
                     "call_overhead_ms", "call_overhead_median_ms", "reference_alone_call_ms",
                     "reference_alone_device_ms")
TWO_CLOCK_PAIRS = ("reference_device", "candidate_device", "reference_call", "candidate_call")
PAIR_KEYS = ("median_ms", "mean_ms", "min_ms", "std_ms", "n", "median_ci_low_ms",
             "median_ci_high_ms", "capped", "settled", "event_fallbacks")
# With --keep-samples: each clock's samples (TimingStats fields 7-14), for analyses of the
# statistic offline (the device clock's ticks, placements; docs/decisions.md, "Session 28").
SAMPLE_KEYS = ("samples_ms", "tail_samples_ms", "input_sets", "event_samples_ms",
               "pre_samples_ms", "lat_samples_ms", "span_samples_ms", "host_samples_ms")


def two_clocks(r):
    """EvalResult fields 22-33 and 36-38 (both clocks, speedup per clock, its CI, the
    native-code taint, the device busy times) and TimingStats' CI and `capped`, under their
    proto names; only those the engine reported, so rows of an engine without them are as
    before."""
    out = {k: pick(r, k) for k in TWO_CLOCK_SCALARS if pick(r, k) is not None}
    for pair in TWO_CLOCK_PAIRS:
        s = pick(r, pair)
        if isinstance(s, dict):
            out[pair] = {k: pick(s, k) for k in PAIR_KEYS + SAMPLE_KEYS
                         if pick(s, k) is not None}
    return out


def kforge_builder(run, todo):
    """One build-ahead server: `build_only` requests on the CPUs, no GPU visible."""
    server = start_server(run, build_ahead=True)
    while not run.stopping.is_set() and run.left() > 0:
        try:
            c = todo.get_nowait()
        except queue.Empty:
            break
        run.build_started(+1)
        r, wall = kforge_request(run, server, c, device="cpu", arch=run.args.arch,
                                 build_only=True)
        run.build_started(-1)
        ba = dict(verdict=r.get("verdict"), rule=r.get("rule") or None,
                  stage=r.get("stage"), build_s=(r.get("stages") or {}).get("build_s"),
                  wall_s=round(wall, 3), reason=bounded(r.get("reason"), 200))
        run.update(c["name"], kforge_build_ahead=ba)
        if r.get("verdict") in ("compile_error", "rejected"):
            # Final, as in the worker: no GPU time for a candidate that cannot build.
            run.update(c["name"], kforge_from_build_ahead=True, **kforge_fields(r, wall))
            run.turn_done()
        else:
            run.enqueue(c["name"], 0, lambda s, c=c: kforge_job(run, s, c))
        if server.proc.poll() is not None:
            server = start_server(run, build_ahead=True)
    server.proc.stdin.close()


def kforge_timed(run, state, c):
    """The timed kforge evaluation, through the GPU thread's one server: every request is a
    fresh evaluation process forked by the server (serve.h), with its own CUDA context and
    candidate process; the server keeps no timing or outputs between requests."""
    if state.get("server") is None or state["server"].proc.poll() is not None:
        state["server"] = start_server(run, build_ahead=False)
    r, wall = kforge_request(run, state["server"], c, device=run.args.device,
                             keep_samples=run.args.keep_samples)
    if run.args.gpu_turns:  # 0 where the turn was never given
        state["gpu_turn_s"] = (r.get("stages") or {}).get("gpu_turn_s", 0)
    return r, wall


def kforge_job(run, state, c):
    """A GPU turn: the first pass's timed evaluation; with --repeats N a candidate judged ok
    gets N-1 more turns, queued behind every first-pass turn (rounds 1..N-1)."""
    r, wall = kforge_timed(run, state, c)
    run.update(c["name"], **kforge_fields(r, wall))
    if run.args.repeats > 1 and r.get("verdict") == "ok":
        run.more_turns(run.args.repeats - 1)
        for k in range(1, run.args.repeats):
            run.enqueue(c["name"], 0, lambda s, c=c, k=k: kforge_repeat_job(run, s, c, k), k)


TIMING_PARTS = ("timing_device_s", "timing_call_s", "timing_inputs_s", "timing_reference_s",
                "timing_candidate_s", "timing_checks_s")


def timing_parts_lines(rows):
    """Issue 14's throughput: where the timing stage of the first passes judged ok went
    (StageDurations.timing_*), medians and means over them; the rest is the loop's own."""
    stages = [r["kforge_stages"] for r in rows
              if r.get("kforge_verdict") == "ok" and (r.get("kforge_stages") or {}).get("timing_s")]
    if not stages or not any(s.get("timing_call_s") for s in stages):
        return []
    out = [f"timing stage of {len(stages)} ok first passes (median / mean s): "
           f"timing_s {quantile(sorted(s['timing_s'] for s in stages), 0.5):.3f} / "
           f"{sum(s['timing_s'] for s in stages) / len(stages):.3f}"]
    rest = [s["timing_s"] - sum(s.get(k, 0) for k in TIMING_PARTS[2:]) for s in stages]
    parts = [(k, [s.get(k, 0) for s in stages]) for k in TIMING_PARTS]
    if any("timing_trace_s" in s for s in stages):  # since session 32: a part of the line above
        at = TIMING_PARTS.index("timing_reference_s") + 1
        parts.insert(at, ("  timing_trace_s", [s.get("timing_trace_s", 0) for s in stages]))
    for name, vals in parts + \
            [("rest (flushes, pre-rolls, draining, traces, post-timing trial)", rest)]:
        out.append(f"  {name:28s} {quantile(sorted(vals), 0.5):.3f} / {sum(vals) / len(vals):.3f}")
    return out


WALL_PARTS = ("startup_s", "device_s", "device_context_s", "calibration_wait_s",
              "calibration_calls_s", "load_task_s", "build_s", "correctness_s",
              "correctness_reference_s", "correctness_first_reference_s",
              "correctness_candidate_s", "correctness_first_candidate_s", "correctness_compare_s",
              "timing_s", "gpu_turn_s", "gpu_release_s")


def wall_parts_lines(rows):
    """Issue 14's throughput: where an ok first pass's evaluation went, stage by stage
    (StageDurations; indented names are parts of the line above them), medians and means."""
    stages = [r["kforge_stages"] for r in rows
              if r.get("kforge_verdict") == "ok" and (r.get("kforge_stages") or {}).get("total_s")]
    if not stages:
        return []
    def line(name, vals):
        return f"{name:30s} {quantile(sorted(vals), 0.5):.3f} / {sum(vals) / len(vals):.3f}"
    out = [f"evaluation of {len(stages)} ok first passes by stage (median / mean s): " +
           line("total_s", [s["total_s"] for s in stages]).split(None, 1)[1]]
    for k in WALL_PARTS:
        if not any(k in s for s in stages):
            continue  # an engine without the part
        part = k != "correctness_s" and k.startswith(("device_context", "calibration_",
                                                      "correctness_", "gpu_release"))
        first = k.startswith("correctness_first_")  # a part of the line above it
        out.append(("      " if first else "    " if part else "  ") +
                   line(k, [s.get(k, 0) for s in stages]))
    return out


def kforge_repeat_job(run, state, c, k):
    """A GPU turn: repeat k of a candidate judged ok, kept in the row's kforge_repeats."""
    r, wall = kforge_timed(run, state, c)
    rec = {key[len("kforge_"):]: v for key, v in kforge_fields(r, wall).items()}
    rec.update(round=k, gpu_turn_at_s=state.get("turn_at_s"),
               builds_running=state.get("builds_running"))
    with run.lock:
        reps = run.rows[c["name"]].setdefault("kforge_repeats", [])
        reps.append(rec)
        reps.sort(key=lambda x: x["round"])


# ---------------------------------------------------------------- KernelBench


def kforge_runs(args, c):
    return c["name"] not in args.kforge_skip


def kb_runs(args, c):
    return not args.skip_kb and c["name"] not in args.kb_skip


def kb_env(args):
    """KB's children, builds too, see the GPU: candidates build only when
    torch.cuda.is_available()."""
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    env["TORCH_CUDA_ARCH_LIST"] = args.kb_arch_list
    return env


def kb_spec(run, c, mode):
    """The files of one KB child: sources, spec, result and log in the candidate's work dir."""
    d = os.path.join(run.args.work_dir, "kb", f"{c['name']}-{c['sha']}")
    os.makedirs(os.path.join(d, "build"), exist_ok=True)
    spec = dict(mode=mode, harness=run.args.kb_harness, build_dir=os.path.join(d, "build"),
                ref_path=os.path.join(d, "ref.py"), cand_path=os.path.join(d, "cand.py"),
                result_path=os.path.join(d, f"{mode}_result.json"))
    open(spec["ref_path"], "w").write(c["ref"])
    open(spec["cand_path"], "w").write(c["src"])
    if os.path.exists(spec["result_path"]):
        os.remove(spec["result_path"])
    return d, spec


def kb_start_child(run, c, mode, extra_spec=None, pass_fds=()):
    d, spec = kb_spec(run, c, mode)
    spec.update(extra_spec or {})
    path = os.path.join(d, f"{mode}_spec.json")
    json.dump(spec, open(path, "w"))
    log = open(os.path.join(d, f"{mode}.log"), "wb")
    p = run.spawn([sys.executable, os.path.abspath(__file__), "--kb-child", path],
                  stdin=subprocess.PIPE, stdout=log, stderr=subprocess.STDOUT, cwd=d,
                  env=kb_env(run.args), pass_fds=pass_fds)
    log.close()
    return p, spec, os.path.join(d, f"{mode}.log")


def read_result(spec, log_path):
    try:
        return json.load(open(spec["result_path"]))
    except (OSError, ValueError):
        tail = open(log_path, errors="replace").read()[-300:] if os.path.exists(log_path) else ""
        return dict(status="harness_error", error=f"no result; log ends: {tail}")


def remove_build_locks(root):
    """Removes torch's extension build locks (`<build dir>/lock`) beneath `root`: torch's lock
    is the file's existence, so a build killed at its limit leaves it and every later build of
    that extension waits for it forever (KB's children use torch's lock; kforge's candidate
    processes hold it with flock, gpu_worker/eval/build_failures.h). Call only while no build
    beneath `root` runs. Returns how many were removed."""
    removed = 0
    for d, _, names in os.walk(root):
        if "lock" in names:
            try:
                os.remove(os.path.join(d, "lock"))
                removed += 1
            except OSError:
                pass
    return removed


def kb_prebuilder(run, todo, ready):
    """KB's own build_compile_cache in a subprocess per candidate, then ModelNew constructed
    once (construct_for_build); the GPU is visible there, since candidates build only when
    torch.cuda.is_available() (a CUDA context per build, no timed work)."""
    while not run.stopping.is_set() and run.left() > 0:
        try:
            c = todo.get_nowait()
        except queue.Empty:
            break
        run.build_started(+1)
        t0 = time.time()
        p, spec, log = kb_start_child(run, c, "build")
        try:
            p.wait(timeout=max(1, min(run.args.kb_timeout, run.left())))
        except subprocess.TimeoutExpired:
            pass
        timed_out = p.poll() is None
        run.reap(p)
        if timed_out:  # torch's lock of a killed build would make the GPU turn wait on it
            remove_build_locks(spec["build_dir"])
        run.build_started(-1)
        res = (dict(ok=False, error="timeout") if timed_out else read_result(spec, log))
        run.update(c["name"], kb_prebuild=dict(ok=res.get("ok"), error=bounded(res.get("error")),
                                               constructed=res.get("constructed", "not tried"),
                                               wall_s=round(time.time() - t0, 3)))
        ready.put(c)


def kb_feeder(run, ready, n):
    """Keeps up to --kb-prefetch KB eval children alive ahead of the GPU thread: each imports
    torch and the harness's CUDA-free modules, then says it is ready on a pipe; its GPU turn is
    queued then."""
    slots = threading.Semaphore(run.args.kb_prefetch)
    pending = {}  # read end of a child's ready pipe -> (candidate, process, spec, log, since)
    started = 0
    while (started < n or pending) and not run.stopping.is_set():
        while started < n and slots.acquire(blocking=False):
            try:
                c = ready.get_nowait()
            except queue.Empty:
                slots.release()
                break
            started += 1
            r_fd, w_fd = os.pipe()
            p, spec, log = kb_start_child(run, c, "eval", dict(ready_fd=w_fd), pass_fds=(w_fd,))
            os.close(w_fd)
            pending[r_fd] = (c, p, spec, log, time.time())
        if pending:
            got = set(select.select(list(pending), [], [], 0.5)[0])
        else:
            got = set()
            time.sleep(0.5)
        for r_fd in list(pending):
            c, p, spec, log, since = pending[r_fd]
            if r_fd in got:
                is_ready = os.read(r_fd, 1) == b"r"
            elif time.time() - since > 120:
                is_ready = False
            else:
                continue
            os.close(r_fd)
            del pending[r_fd]
            if is_ready:
                run.enqueue(c["name"], 1, lambda s, c=c, p=p, spec=spec, log=log:
                            kb_job(run, c, p, spec, log, slots))
            else:
                run.reap(p)
                res = read_result(spec, log)
                run.update(c["name"], **kb_fields(res, 0, p.returncode,
                                                  "child not ready: " + str(res.get("error"))))
                slots.release()
                run.turn_done()


def kb_job(run, c, p, spec, log, slots):
    """A GPU turn: tells the ready child to evaluate, waits for it with a timeout."""
    t0 = time.time()
    limit = max(1, min(run.args.kb_timeout, run.left()))
    try:
        p.stdin.write(b"go\n")
        p.stdin.close()
        p.wait(timeout=limit)
    except (subprocess.TimeoutExpired, BrokenPipeError):
        pass
    timed_out = p.poll() is None
    code = p.returncode
    run.reap(p)
    slots.release()
    gpu_s = time.time() - t0
    if timed_out:
        why = "--kb-timeout" if limit == run.args.kb_timeout else "the budget's end"
        res = dict(status="timeout", error=f"killed after {gpu_s:.0f} s ({why})")
    else:
        res = read_result(spec, log)
        if res.get("status") == "harness_error" and code:
            res["error"] = f"exit status {code}; " + str(res.get("error"))
    run.update(c["name"], **kb_fields(res, gpu_s, code))
    logs = os.path.join(run.args.out, "compat_kb_logs")  # what KB and the candidate printed
    os.makedirs(logs, exist_ok=True)
    with open(log, "rb") as src, open(os.path.join(logs, c["name"] + ".log"), "wb") as dst:
        dst.write(src.read(16384))


def kb_fields(res, gpu_s, code, error=None):
    out = dict(status=res.get("status", "harness_error"), compiled=res.get("compiled"),
               correctness=res.get("correctness"), runtime_us=res.get("runtime"),
               ref_runtime_us=res.get("ref_runtime"), speedup=res.get("speedup"),
               excessive_speedup=res.get("excessive_speedup"),
               error=bounded(error or res.get("error")), metadata=res.get("metadata"),
               gpu_s=round(gpu_s, 3), wall_in_harness_s=res.get("wall_s"), exit_status=code)
    return {"kb_" + k: v for k, v in out.items()}


def kb_outcome(row):
    if "kb_status" not in row:
        return "skipped"
    if row["kb_status"] != "ok":
        return row["kb_status"] if row["kb_status"] in KB_OUTCOMES else "harness_error"
    if not row.get("kb_compiled"):
        return "not_compiled"
    if row.get("kb_correctness"):
        return "correct"
    return "runtime_error" if "runtime_error" in (row.get("kb_metadata") or {}) else "incorrect"


# ---------------------------------------------------------------- the KB child process


def stub_missing_modules():
    """KB's utils imports LLM clients the evaluation never uses; the GPU machine lacks some."""
    stubs = {"openai": {"OpenAI": type("OpenAI", (), {})},
             "litellm": {"completion": lambda *a, **k: None},
             "dotenv": {"load_dotenv": lambda *a, **k: False},
             "tqdm": {"tqdm": lambda it=None, *a, **k: it},
             "requests": {}}
    for name, attrs in stubs.items():
        if importlib.util.find_spec(name) is None:
            sys.modules[name] = types.ModuleType(name)
            sys.modules[name].__dict__.update(attrs)
    if importlib.util.find_spec("pydantic") is None:
        class BaseModel:
            """pydantic.BaseModel as KB's result uses it: annotated fields, copied defaults."""

            def __init__(self, **values):
                for cls in reversed(type(self).__mro__):
                    for field in vars(cls).get("__annotations__", {}):
                        setattr(self, field, copy.deepcopy(getattr(cls, field, None)))
                for k, v in values.items():
                    setattr(self, k, v)
        sys.modules["pydantic"] = types.ModuleType("pydantic")
        sys.modules["pydantic"].BaseModel = BaseModel


def jsonable_metadata(md):
    return {str(k): (v if isinstance(v, (bool, int, float)) or v is None else bounded(v))
            for k, v in (md or {}).items()}


def construct_for_build(kb_eval, ref, cand, build_dir):
    """Builds what a candidate builds in ModelNew.__init__ (load_inline into KB's build dir) by
    constructing it once with the task's init inputs, as KB's own evaluation will. Returns
    "yes" when it was constructed, else the error; KB's verdict comes from its evaluation
    alone."""
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            ref_ctx = {}
            exec(compile(ref, "ref.py", "exec"), ref_ctx)  # noqa: S102 (the corpus's task)
            ctx = {}
            model_new = kb_eval.load_custom_model(cand, ctx, build_dir)
            model_new(*ref_ctx["get_init_inputs"]())
        return "yes"
    except BaseException as e:  # noqa: BLE001  (the candidate's own fault: KB will say)
        return bounded(repr(e))


def kb_child(spec_path):
    """`--kb-child SPEC`: one KB build (mode build) or one KB evaluation (mode eval, after the
    parent's go on stdin). Writes the JSON result to spec['result_path']."""
    spec = json.load(open(spec_path))
    sys.path.insert(0, spec["harness"])
    stub_missing_modules()
    import torch  # noqa: F401  (before the go: no CUDA context yet)
    import kernelbench.timing  # noqa: F401
    import kernelbench.dataset  # noqa: F401
    ref, cand = open(spec["ref_path"]).read(), open(spec["cand_path"]).read()
    out = dict(status="ok")
    if spec["mode"] == "build":
        from kernelbench import eval as kb_eval
        ok, _, err = kb_eval.build_compile_cache(cand, build_dir=spec["build_dir"])
        out.update(ok=ok, error=err)
        if ok:  # many candidates build in ModelNew.__init__: construct it once to build there
            out.update(constructed=construct_for_build(kb_eval, ref, cand, spec["build_dir"]))
    else:
        os.write(spec["ready_fd"], b"r")
        os.close(spec["ready_fd"])
        sys.stdin.readline()  # the GPU is ours from here on
        t0 = time.time()
        try:
            from kernelbench import eval as kb_eval  # creates the CUDA context
            r = kb_eval.eval_kernel_against_ref(
                ref, cand, seed_num=42, num_correct_trials=5, num_perf_trials=100,
                measure_performance=True, build_dir=spec["build_dir"])
            if r is None:
                out.update(status="harness_error", error="eval_kernel_against_ref gave None "
                           "(a lock file or missing file during compilation)")
            else:
                md = r.metadata or {}
                out.update(compiled=r.compiled, correctness=r.correctness, runtime=r.runtime,
                           ref_runtime=r.ref_runtime, runtime_stats=r.runtime_stats,
                           excessive_speedup=bool(md.get("excessive_speedup")),
                           metadata=jsonable_metadata(md),
                           speedup=(r.ref_runtime / r.runtime
                                    if r.runtime > 0 and r.ref_runtime > 0 else None))
        except BaseException as e:  # noqa: BLE001  (a poisoned CUDA context raises here)
            out.update(status="harness_error", error=repr(e))
        out["wall_s"] = round(time.time() - t0, 3)
    with open(spec["result_path"], "w") as f:
        json.dump(out, f, default=str)
    sys.stdout.flush()
    os._exit(0)  # skip teardown: a broken CUDA context may hang in it


# ---------------------------------------------------------------- the GPU thread


def next_turn(ready, last_kind, last_kforge):
    """The turn to run of the `ready` queue items (round, order, kind, seq, name, job): the
    first in queue order (first passes before repeats, ready KB turns first, then corpus
    order), except that after a KB turn a ready kforge first pass goes first (the harnesses
    alternate while both have turns ready: neither starves the other), and a repeat never
    follows its own candidate's turn while another turn is ready."""
    ready = sorted(ready, key=lambda it: it[:4])
    fits = [it for it in ready if not (it[0] > 0 and it[4] == last_kforge)] or ready
    if last_kind == 1:
        for it in fits:
            if it[0] == 0 and it[2] == 0:
                return it
    return fits[0]


class GpuTurn:
    """The GPU's lock of --gpu-turns, held around a KB turn as kforge's supervisor holds it
    around an evaluation; `seconds` it was held."""

    def __init__(self, path):
        self.path, self.seconds = path, None

    def __enter__(self):
        self.fd = os.open(self.path, os.O_RDONLY | os.O_CREAT, 0o644)
        fcntl.flock(self.fd, fcntl.LOCK_EX)
        self.t0 = time.time()
        return self

    def __exit__(self, *exc):
        self.seconds = time.time() - self.t0
        os.close(self.fd)  # releases the flock


def gpu_thread(run, lane):
    """Runs the GPU turns of the `lane` queue one at a time (next_turn), until none is left to
    come or the budget ends. Several lanes (--kforge-lanes, --kb-lanes) share the GPU: their
    verdicts stand, their timings are not results."""
    state = {}
    last_kforge = None  # the candidate of the last kforge turn
    last_kind = None
    while run.turns_left > 0 and run.left() >= run.args.min_turn_s:
        try:
            ready = [lane.get(timeout=0.5)]
        except queue.Empty:
            continue
        while True:
            try:
                ready.append(lane.get_nowait())
            except queue.Empty:
                break
        item = next_turn(ready, last_kind, last_kforge)
        for other in ready:
            if other is not item:
                lane.put(other)
        round_, _, kind, _, name, job = item
        if kind == 0 and round_ > 0 and name == last_kforge:
            run.back_to_back += 1
        prefix = ("kforge_", "kb_")[kind]
        with run.lock:
            running = run.builds_running
        at_s = round(time.time() - run.t0, 1)
        if round_ == 0:
            run.update(name, **{prefix + "builds_running": running,
                                prefix + "gpu_turn_at_s": at_s})
        state.update(turn_at_s=at_s, builds_running=running)
        t0 = time.time()
        state.pop("gpu_turn_s", None)
        if kind == 1 and run.args.gpu_turns:
            with GpuTurn(gpu_lock_path(run.args)) as held:
                job(state)
            state["gpu_turn_s"] = held.seconds
        else:
            job(state)
        log = dict(kind=("kforge", "kb")[kind], round=round_, name=name, at_s=at_s,
                   turn_s=round(time.time() - t0, 3))
        if state.get("gpu_turn_s") is not None:
            log["gpu_turn_s"] = round(state["gpu_turn_s"], 3)  # the lock held, at the turn's end
        run.turn_log.append(log)
        if kind == 0:
            last_kforge = name
        last_kind = kind
        run.turn_done()
    if state.get("server") is not None:
        state["server"].proc.stdin.close()


# ---------------------------------------------------------------- the table


def kforge_outcome(row):
    if "kforge_verdict" not in row:
        return "skipped"
    v = row["kforge_verdict"]
    return f"{v}/{row['kforge_rule']}" if v == "rejected" and row.get("kforge_rule") else v


def disagreement(row):
    """Where the two harnesses judge a candidate differently (both must have judged it)."""
    kf, kb = row.get("kforge_verdict"), kb_outcome(row)
    if kf is None or kf == "<no answer>" or kb in ("skipped", "harness_error", "timeout"):
        return None
    if kf == "ok" and kb != "correct":
        return "kforge ok, KB " + kb
    if kf != "ok" and kb == "correct":
        return "KB correct, kforge " + kforge_outcome(row)
    return None


def shared_gpu_lines(args):
    if not lanes_overlap(args):
        return []
    return [f"lanes: kforge {args.kforge_lanes}, KB {args.kb_lanes or 'in kforge lanes'}: GPU "
            "turns overlapped, so the verdicts stand and no speedup or wall time is a timing "
            "result"]


def hop_lines(rows):
    """The call clock's hop (the null call's calibrated time, subtracted from the candidate's
    call-clock samples) over the first passes that have it, and how many ran under MPS."""
    with_hop = [r for r in rows if r.get("kforge_call_overhead_ms")]
    if not with_hop:
        return []
    hops = sorted(r["kforge_call_overhead_ms"] for r in with_hop)
    mps = sum(1 for r in with_hop if r.get("kforge_mps"))
    return [f"call clock hop: median {quantile(hops, 0.5):.3f} ms, p90 {quantile(hops, 0.9):.3f} "
            f"ms over {len(hops)}, of which under MPS: {mps}"]


def table(run, rows, wall_s):
    def fmt(x):
        return "-" if x is None else f"{x:.2f}"
    kb_cols = [o for o in KB_OUTCOMES if any(kb_outcome(r) == o for r in rows)] or ["skipped"]
    counts = collections.Counter((kforge_outcome(r), kb_outcome(r)) for r in rows)
    kf_rows = sorted({k for k, _ in counts})
    w = max([len(k) for k in kf_rows] + [14])
    lines = [f"== corpus compat: kforge-eval vs KernelBench's harness, {len(rows)} candidates, "
             f"device {run.args.device}, {wall_s:.0f} s (budget {run.args.budget_s:.0f} s) ==",
             *shared_gpu_lines(run.args),
             "kforge \\ KB".ljust(w) + "".join(f"{c:>14s}" for c in kb_cols) + f"{'total':>8s}"]
    for k in kf_rows:
        lines.append(k.ljust(w) + "".join(f"{counts[(k, c)] or '.':>14}" for c in kb_cols) +
                     f"{sum(counts[(k, c)] for c in kb_cols):>8d}")
    both = [r for r in rows if r.get("kforge_speedup") and kb_outcome(r) == "correct"
            and r.get("kb_speedup")]
    if both:
        med = sorted(r["kforge_speedup"] / r["kb_speedup"] for r in both)[len(both) // 2]
        lines.append(f"both ok: {len(both)}; median kforge speedup / KB speedup {med:.2f}")
    dis = [(r, disagreement(r)) for r in rows if disagreement(r)]
    lines.append(f"disagreements: {len(dis)}")
    for r, why in dis:
        lines.append(f"  {r['name']:6s} {why:40s} kforge x{fmt(r.get('kforge_speedup'))} "
                     f"KB x{fmt(r.get('kb_speedup'))} CUDA-L1 x{fmt(r.get('cudal1_score_a100'))}"
                     f"  {(r.get('kforge_reason') or r.get('kb_error') or '')[:90]}")
    mem = sorted(r["kforge_device_memory_used_bytes"] / 2**30 for r in rows
                 if r.get("kforge_device_memory_used_bytes"))
    if mem:  # issue 13: memory per slot (the judge and its candidate process together)
        lines.append(f"device memory in use per evaluation (judge + candidate process): median "
                     f"{quantile(mem, 0.5):.2f} GiB, max {mem[-1]:.2f} GiB over {len(mem)}")
    lines.extend(hop_lines(rows))
    lines.extend(wall_parts_lines(rows))
    lines.extend(timing_parts_lines(rows))
    cands = run.cands
    skipped = [r["name"] for r in rows
               if (kforge_outcome(r) == "skipped" and kforge_runs(run.args, cands[r["name"]])) or
               (kb_outcome(r) == "skipped" and kb_runs(run.args, cands[r["name"]]))]
    if skipped:
        lines.append(f"skipped by the budget: {len(skipped)}: {' '.join(skipped)}")
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------- --repeats: the summary


def quantile(xs, q):
    """The median (q=0.5, the mean of the middle two for an even count) or the nearest-rank
    q-quantile of a non-empty list."""
    if q == 0.5:
        return statistics.median(xs)
    xs = sorted(xs)
    return xs[min(len(xs), max(1, math.ceil(q * len(xs)))) - 1]


def relative_spread(xs):
    """The spread of one candidate's speedups over its evaluations: max / min - 1."""
    return max(xs) / min(xs) - 1


def spread_stats(values):
    """median, p90, max and count of a list of relative spreads; None when empty."""
    if not values:
        return None
    return dict(median=quantile(values, 0.5), p90=quantile(values, 0.9), max=max(values),
                count=len(values), within_1pct=sum(v <= 0.01 for v in values))


def range_stats(values):
    if not values:
        return None
    return dict(median=quantile(values, 0.5), min=min(values), max=max(values),
                count=len(values))


def evaluations(row):
    """The kforge evaluations of a row that took a GPU turn: the first pass, then its repeats
    (each a dict of the unprefixed kforge fields)."""
    if "kforge_verdict" not in row or row.get("kforge_from_build_ahead"):
        return []
    first = {k[len("kforge_"):]: v for k, v in row.items()
             if k.startswith("kforge_") and k != "kforge_repeats"}
    return [first] + list(row.get("kforge_repeats") or [])


def ci_of(ev, clock):
    """The 95% interval of ev's speedup on `clock`: the result's own for that clock
    (speedup_<clock>_ci_low/high, which since session 12 hold the between-process spread; or
    speedup_ci_low/high where its speedup clock is that clock), otherwise the reference
    median's interval over the candidate's (the engine's conservative ratio before session 12),
    from the pair's median_ci_*; None without."""
    if (ev.get(f"speedup_{clock}_ci_low") or 0) > 0:
        return ev[f"speedup_{clock}_ci_low"], ev[f"speedup_{clock}_ci_high"]
    if ev.get("speedup_clock") == clock and (ev.get("speedup_ci_low") or 0) > 0:
        return ev["speedup_ci_low"], ev["speedup_ci_high"]
    ref, cand = ev.get("reference_" + clock) or {}, ev.get("candidate_" + clock) or {}
    lo_r, hi_r = ref.get("median_ci_low_ms"), ref.get("median_ci_high_ms")
    lo_c, hi_c = cand.get("median_ci_low_ms"), cand.get("median_ci_high_ms")
    if all(x and x > 0 for x in (lo_r, hi_r, lo_c, hi_c)):
        return lo_r / hi_c, hi_r / lo_c
    return None


def capped(ev):
    """Whether the timing of either program was capped (None: no TimingStats said)."""
    flags = [(ev.get(p) or {}).get("capped") for p in TWO_CLOCK_PAIRS]
    flags = [f for f in flags if f is not None]
    return any(flags) if flags else None


def settled(ev):
    """Whether the device clock stopped early on a host-bound program (TimingStats.settled)."""
    return any((ev.get(p) or {}).get("settled") for p in TWO_CLOCK_PAIRS)


def device_busy_ms(ev):
    """reference + candidate device-clock median x samples: the timed device work, in ms."""
    total = 0.0
    for p in ("reference_device", "candidate_device"):
        s = ev.get(p) or {}
        if s.get("median_ms") and s.get("n"):
            total += s["median_ms"] * s["n"]
    return total


class UtilizationSampler:
    """`nvidia-smi`'s GPU utilisation every 100 ms while the run lasts, as (seconds since the
    run's start, percent); nothing where there is no nvidia-smi."""

    def __init__(self, t0, device_index=0, binary="nvidia-smi"):
        self.t0, self.readings, self.proc = t0, [], None
        try:
            self.proc = subprocess.Popen(
                [binary, "--query-gpu=timestamp,utilization.gpu", "--format=csv,noheader,nounits",
                 "-lms", "100", "-i", str(device_index)],
                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        except OSError:
            return
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:
            reading = parse_utilization(line)
            if reading is not None:  # stamped when nvidia-smi took it, not when it arrived
                at, value = reading
                self.readings.append(((at or time.time()) - self.t0, value))

    def stop(self):
        if self.proc:
            self.proc.kill()
            self.proc.wait()
        return list(self.readings)


def parse_utilization(line):
    """(epoch seconds or None, percent) from one line of `nvidia-smi --query-gpu=timestamp,
    utilization.gpu --format=csv,noheader,nounits` ("2026/12/04 09:08:13.123, 37"; the
    timestamp in this machine's local time), else None ("[N/A]", a blank line, an error)."""
    stamp, _, percent = line.rpartition(",")
    try:
        value = float(percent.strip())
    except ValueError:
        return None
    try:
        at = datetime.datetime.strptime(stamp.strip(), "%Y/%m/%d %H:%M:%S.%f").timestamp()
    except ValueError:
        at = None
    return (at, value) if 0 <= value <= 100 else None


def held_s(t):
    """A turn's time on the GPU: with --gpu-turns the lock's (its end; 0 where it was never
    given), else the whole turn."""
    return t["gpu_turn_s"] if "gpu_turn_s" in t else t["turn_s"]


def utilization_in_turns(turn_log, readings):
    """The mean of the utilisation readings taken inside kforge's GPU turns, and their count."""
    spans = [(t["at_s"] + t["turn_s"] - held_s(t), t["at_s"] + t["turn_s"])
             for t in turn_log if t["kind"] == "kforge"]
    inside = [u for at, u in readings if any(a <= at <= b for a, b in spans)]
    return (sum(inside) / len(inside) if inside else None), len(inside)


def repeat_figures(candidates):
    """Over (row, its evaluations, all ok) pairs: the spreads, the repeats outside the first
    run's interval and kforge's median speedup over KB's (the module's docstring)."""
    # speedup_device_span (since session 23): the device clock's sample before then, beside it
    spreads = {c: [] for c in ("speedup", "speedup_device", "speedup_call", "speedup_device_span")}
    outside = {c: [0, 0] for c in ("call", "device")}  # [outside, repeats with a CI to test]
    kb_ratio = {c: [] for c in ("speedup_device", "speedup_call")}
    # The first pass runs beside KB's turns, the repeats after them (session 30: on the H100
    # the device clock's spread between the repeats alone was a fraction of the three runs'):
    # the spread of the repeats alone, and the first pass over the repeats' mean (signed).
    clocks = ("speedup_device", "speedup_call")
    repeats_only = {c: [] for c in clocks}
    first_over_repeats = {c: [] for c in clocks}
    for r, evs in candidates:
        for c in spreads:
            xs = [ev.get(c) for ev in evs]
            if all(x and x > 0 for x in xs):
                spreads[c].append(relative_spread(xs))
                if c in clocks and len(xs) >= 3:
                    repeats_only[c].append(relative_spread(xs[1:]))
                    first_over_repeats[c].append(xs[0] * (len(xs) - 1) / sum(xs[1:]) - 1)
        for clock in outside:
            ci = ci_of(evs[0], clock)
            if ci is None:
                continue
            for ev in evs[1:]:
                x = ev.get("speedup_" + clock)
                if x:
                    outside[clock][1] += 1
                    outside[clock][0] += not (ci[0] <= x <= ci[1])
        if kb_outcome(r) == "correct" and r.get("kb_speedup"):
            for c in kb_ratio:
                xs = [ev.get(c) for ev in evs if ev.get(c)]
                if len(xs) == len(evs):
                    kb_ratio[c].append(quantile(xs, 0.5) / r["kb_speedup"])
    return dict(spread={c: spread_stats(v) for c, v in spreads.items()},
                spread_repeats_only={c: spread_stats(v) for c, v in repeats_only.items()},
                first_pass_over_repeats={
                    c: (dict(median=quantile(v, 0.5),
                             p90_abs=quantile([abs(x) for x in v], 0.9), count=len(v))
                        if v else None) for c, v in first_over_repeats.items()},
                outside_first_ci={c: dict(outside=o, repeats=t, fraction=(o / t if t else None))
                                  for c, (o, t) in outside.items()},
                kforge_over_kb={c: range_stats(v) for c, v in kb_ratio.items()})


def repeats_summary(args, rows, turn_log, wall_s, back_to_back, utilization=()):
    """What --repeats N measured (issue 14 points 2-4); see the module's docstring."""
    n = args.repeats
    kf_turns = [t for t in turn_log if t["kind"] == "kforge"]
    turn_s = sum(held_s(t) for t in kf_turns)
    all_evs = [ev for r in rows for ev in evaluations(r)]
    ok_evs = [ev for ev in all_evs if ev.get("verdict") == "ok"]
    from_build_ahead = sum(1 for r in rows if r.get("kforge_from_build_ahead"))
    first_ok = [r for r in rows if r.get("kforge_verdict") == "ok"
                and not r.get("kforge_from_build_ahead")]

    complete, two_or_more = [], []  # (row, its first N evaluations), all ok
    for r in first_ok:
        evs = evaluations(r)[:n]
        if len(evs) < 2 or any(ev.get("verdict") != "ok" for ev in evs):
            continue
        two_or_more.append((r, evs))
        if len(evs) == n:
            complete.append((r, evs))
    figures = repeat_figures(complete)
    # The same over every candidate with 2 or more evaluations, all ok, where the budget cut
    # some repeats: what a shorter run measured, never in place of the N-run figures.
    figures_2 = repeat_figures(two_or_more)
    caps = [capped(ev) for ev in ok_evs]
    caps = [c for c in caps if c is not None]
    # Less the wait for the GPU's turn (--gpu-turns), which is another lane's time on the GPU.
    walls = [ev["wall_s"] - (ev.get("stages") or {}).get("gpu_wait_s", 0)
             for ev in ok_evs if ev.get("wall_s") is not None]
    busy_s = sum(device_busy_ms(ev) for ev in ok_evs) / 1e3
    planned = len(first_ok) * (n - 1)
    ran = sum(len(r.get("kforge_repeats") or []) for r in rows)
    return dict(
        repeats=n, candidates_first_ok=len(first_ok), candidates_all_ok=len(complete),
        repeats_planned=planned, repeats_run=ran, repeats_skipped_by_budget=planned - ran,
        repeats_back_to_back=back_to_back,
        **figures, candidates_two_or_more_ok=len(two_or_more), two_or_more=figures_2,
        capped=dict(capped=sum(caps), evaluations=len(caps),
                    fraction=(sum(caps) / len(caps) if caps else None),
                    settled=sum(settled(ev) for ev in ok_evs)),
        ok_wall_s=(dict(median=quantile(walls, 0.5), p90=quantile(walls, 0.9), count=len(walls))
                   if walls else None),
        evaluations=dict(gpu_turns=len(kf_turns), from_build_ahead=from_build_ahead,
                         gpu_turn_s=round(turn_s, 3), run_wall_s=round(wall_s, 3)),
        evals_per_gpu_hour_turns=(len(kf_turns) * 3600 / turn_s if turn_s else None),
        evals_per_gpu_hour_turns_with_build_ahead=(
            (len(kf_turns) + from_build_ahead) * 3600 / turn_s if turn_s else None),
        evals_per_hour_run_wall=((len(kf_turns) + from_build_ahead) * 3600 / wall_s
                                 if wall_s else None),
        gpu_busy_lower_bound=(busy_s / turn_s if turn_s else None), gpu_busy_timed_s=busy_s,
        gpu_utilization_in_turns=dict(zip(("mean_percent", "readings"),
                                          utilization_in_turns(turn_log, utilization))),
        lanes_overlap=lanes_overlap(args),
        candidates=[r["name"] for r, _ in complete])


def repeats_table(s):
    def pct(x):
        return "-" if x is None else f"{100 * x:.1f}%"

    def num(x, f="{:.2f}"):
        return "-" if x is None else f.format(x)
    lines = [f"== repeats: {s['repeats']} evaluations per candidate judged ok, each a fresh "
             f"process of the fork server ==",
             f"first pass ok: {s['candidates_first_ok']}; all {s['repeats']} ok: "
             f"{s['candidates_all_ok']}; repeats run {s['repeats_run']}/{s['repeats_planned']} "
             f"({s['repeats_skipped_by_budget']} skipped by the budget, "
             f"{s['repeats_back_to_back']} right after the same candidate)"]
    def spreads_and_ci(fig, indent=""):
        out = [f"{indent}spread (max/min-1) of {c:19s} " + (
            f"median {pct(st['median'])} p90 {pct(st['p90'])} max {pct(st['max'])} over "
            f"{st['count']} ({st['within_1pct']} within 1%)" if st else "-")
            for c, st in fig["spread"].items()]
        for c, st in (fig.get("spread_repeats_only") or {}).items():
            if st:
                out.append(f"{indent}  of the repeats alone, {c:14s} median {pct(st['median'])}"
                           f" p90 {pct(st['p90'])} max {pct(st['max'])} over {st['count']} "
                           f"({st['within_1pct']} within 1%)")
        for c, f in (fig.get("first_pass_over_repeats") or {}).items():
            if f:
                out.append(f"{indent}  first pass (beside KB's turns) over the repeats' mean, "
                           f"{c}: median {100 * f['median']:+.2f}%, p90 of |.| "
                           f"{pct(f['p90_abs'])} over {f['count']}")
        return out + [f"{indent}repeats outside the first run's 95% CI, {c} clock: "
                      f"{o['outside']}/{o['repeats']} ({pct(o['fraction'])})"
                      for c, o in fig["outside_first_ci"].items()]

    def over_kb(fig, indent=""):
        return [f"{indent}kforge {c} / KB speedup: " + (
            f"median {st['median']:.2f}, range {st['min']:.2f}-{st['max']:.2f} over "
            f"{st['count']}" if st else "-") for c, st in fig["kforge_over_kb"].items()]
    lines += spreads_and_ci(s)
    two = s.get("two_or_more")
    if two and s.get("candidates_two_or_more_ok", 0) > s["candidates_all_ok"]:
        lines.append(f"with 2 to {s['repeats']} evaluations, all ok (the budget cut the rest): "
                     f"{s['candidates_two_or_more_ok']} candidates")
        lines += spreads_and_ci(two, "  ") + over_kb(two, "  ")
    cp = s["capped"]
    lines.append(f"ok evaluations capped: {cp['capped']}/{cp['evaluations']} "
                 f"({pct(cp['fraction'])}); settled (host-bound, device clock): "
                 f"{cp.get('settled', 0)}")
    w = s["ok_wall_s"] or {}
    e = s["evaluations"]
    lines.append(f"ok evaluation wall: median {num(w.get('median'))} s p90 {num(w.get('p90'))} "
                 f"s over {w.get('count', 0)}")
    per_turns, per_ba, per_wall = (num(s[k], "{:.0f}") for k in (
        "evals_per_gpu_hour_turns", "evals_per_gpu_hour_turns_with_build_ahead",
        "evals_per_hour_run_wall"))
    lines.append(f"evaluations per GPU-hour (all verdicts): {per_turns} ({e['gpu_turns']} GPU "
                 f"turns in {e['gpu_turn_s']:.0f} s); with the {e['from_build_ahead']} decided "
                 f"by the build ahead {per_ba}; per hour of the whole run's wall {per_wall}")
    lines.append(f"GPU busy with timed samples (lower bound): {pct(s['gpu_busy_lower_bound'])}")
    u = s.get("gpu_utilization_in_turns") or {}
    if u.get("readings"):
        also = "; and other lanes' work" if s.get("lanes_overlap") else ""
        lines.append(f"GPU utilisation by NVML during kforge's turns (counts pre-rolls, flushes,"
                     f" trials{also}): {u['mean_percent']:.1f}% over {u['readings']} readings")
    else:
        lines.append("GPU utilisation by NVML during kforge's turns: no readings")
    lines += over_kb(s)
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------- main


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--eval", default=first_existing(
        os.path.join(ROOT, "build-gpu/gpu_worker/eval/kforge-eval"),
        os.path.join(ROOT, "build/gpu_worker/eval/kforge-eval")), help="kforge-eval binary")
    p.add_argument("--out", required=True)
    p.add_argument("--device", default="cuda", help="cuda (the GPU machine) or cpu (KB skipped)")
    p.add_argument("--corpus", default=first_existing(
        os.path.join(ROOT, ".gpu-carry/corpora/cudal1_a100.jsonl"),
        os.path.join(ROOT, "../shared/corpora/cudal1_a100.jsonl")))
    p.add_argument("--kb-harness", default=first_existing(
        os.path.join(ROOT, ".gpu-carry/kb_harness/src"),
        os.path.join(ROOT, "../shared/peers/kernelbench/src")),
        help="the folder holding KernelBench's package kernelbench/")
    p.add_argument("--limit", type=int, default=0, help="only the first N candidates")
    p.add_argument("--only", default="", help="only these candidates: level_task,... (1_19,2_76)")
    p.add_argument("--builds", default="any", choices=("any", "yes", "no"),
                   help="only candidates that build an extension (yes: load_inline) or not (no)")
    p.add_argument("--skip", default="", help="leave out these candidates: level_task,...")
    p.add_argument("--skip-kb", action="store_true", help="kforge only")
    p.add_argument("--kb-skip", default="", help="KB not run for these: level_task,...")
    p.add_argument("--kforge-skip", default="", help="kforge not run for these: level_task,...")
    p.add_argument("--policy", default="", choices=("", "strict", "runtime"),
                   help="kforge's EvalRequest.policy (empty: the engine's default)")
    p.add_argument("--numerics", default="", choices=("", "fp32", "torch"),
                   help="kforge's EvalRequest.numerics (empty: fp32; torch: KernelBench's "
                        "TF32 convolutions)")
    p.add_argument("--atol", type=float, default=0,
                   help="kforge's EvalRequest.atol (0: the default for the output's dtype, "
                        "1e-4 for fp32; KernelBench's harness uses 1e-2)")
    p.add_argument("--rtol", type=float, default=0, help="kforge's EvalRequest.rtol (as --atol)")
    p.add_argument("--budget-s", type=float, default=420, help="the whole run's time budget")
    p.add_argument("--min-turn-s", type=float, default=5,
                   help="no GPU turn starts with less than this left of the budget")
    p.add_argument("--work-dir", default="/tmp/kforge-compat",
                   help="kforge's cache and KB's build dirs (kept: a second run finds its builds)")
    p.add_argument("--fresh", action="store_true", help="empty --work-dir first (cold builds)")
    p.add_argument("--arch", default="", help="kforge's build-ahead arch (default: the GPU's)")
    p.add_argument("--kforge-builders", type=int, default=0,
                   help="build-ahead fork servers (default 4 on a GPU, 1 in CPU mode)")
    p.add_argument("--kb-builders", type=int, default=4, help="KB build subprocesses at once")
    p.add_argument("--kb-prefetch", type=int, default=6,
                   help="KB eval children started ahead of their GPU turn")
    p.add_argument("--kb-timeout", type=float, default=150,
                   help="seconds for one KB build, and for one KB evaluation's GPU turn")
    p.add_argument("--share-reference", choices=("off", "device", "all"), default="off",
                   help="KFORGE_SHARE_REFERENCE for kforge's fork server (default off: repeats "
                        "time their reference themselves; a worker's default is device)")
    p.add_argument("--kforge-lanes", type=int, default=1,
                   help="kforge GPU turns at once, each lane with its own fork server (above 1 "
                        "the lanes share the GPU: verdicts only, no timing results)")
    p.add_argument("--kb-lanes", type=int, default=0,
                   help="KB GPU turns at once, beside kforge's (default 0: KB takes turns in "
                        "kforge's lanes, one GPU turn at a time; above 0: verdicts only)")
    p.add_argument("--gpu-turns", action="store_true",
                   help="GPU turns (docs/evaluation.md): the lanes' fork servers share a lock "
                        "file, each evaluation holding the GPU from its calibration to its end, "
                        "and a KB turn holds it too; lanes then overlap only in start-up and "
                        "CUDA contexts, so their timings are results")
    p.add_argument("--keep-samples", action="store_true",
                   help="ask kforge for every timing sample and keep them in the rows' "
                        "per-clock fields (reference_device, candidate_call, ...)")
    p.add_argument("--repeats", type=int, default=1,
                   help="evaluations of each candidate kforge judged ok in the first pass, "
                        "the first included (the N-1 more are interleaved across candidates)")
    args = p.parse_args(argv)
    for k in ("eval", "out", "corpus", "kb_harness", "work_dir"):  # children run elsewhere
        setattr(args, k, os.path.abspath(getattr(args, k)))
    if args.kforge_lanes < 1 or args.kb_lanes < 0:
        p.error("--kforge-lanes must be at least 1 and --kb-lanes at least 0")
    if args.device == "cpu":
        args.skip_kb = True
    cc = gpu_compute_capability() if args.device != "cpu" else ""
    args.arch = args.arch or ("sm_" + cc.replace(".", "") if cc else "sm_90")
    # load_inline's nvcc flags: the worker sets TORCH_CUDA_ARCH_LIST to the GPU's capability
    # for kforge; KB's default on this GPU is the same list with +PTX.
    cap = cc or f"{args.arch[3:-1]}.{args.arch[-1]}"
    args.torch_arch_list = cap
    args.kb_arch_list = cap + "+PTX"
    args.kforge_builders = args.kforge_builders or (1 if args.device == "cpu" else 4)
    args.cache_dir = os.path.join(args.work_dir, "kforge-cache")
    args.only = set(filter(None, args.only.split(",")))
    args.skip = set(filter(None, args.skip.split(",")))
    args.kb_skip = set(filter(None, args.kb_skip.split(",")))
    args.kforge_skip = set(filter(None, args.kforge_skip.split(",")))
    return args


def gpu_compute_capability():
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=compute_cap", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=30).stdout.split()
        return out[0] if out else ""
    except (OSError, subprocess.TimeoutExpired):
        return ""


def summary_of(out_dir):
    """The repeats table again from a finished run's compat.jsonl and compat_run.json (NVML's
    readings are not kept: their saved mean is carried over)."""
    with open(os.path.join(out_dir, "compat.jsonl")) as f:
        rows = [json.loads(line) for line in f]
    with open(os.path.join(out_dir, "compat_run.json")) as f:
        saved = json.load(f)
    old = saved.get("repeats")
    if not old:
        print(f"corpus_compat: {out_dir} holds no --repeats run")
        return 1
    settings = argparse.Namespace(**saved["settings"])
    s = repeats_summary(settings, rows, saved.get("gpu_turns", []), saved["wall_s"],
                        old["repeats_back_to_back"])
    s["gpu_utilization_in_turns"] = old.get("gpu_utilization_in_turns") or {}
    print(repeats_table(s), end="")
    return 0


def main(argv):
    if argv[:1] == ["--kb-child"]:  # this script's own KB subprocesses
        return kb_child(argv[1])
    if argv[:1] == ["--summary-of"]:
        if len(argv) != 2:
            print("usage: corpus_compat.py --summary-of OUT")
            return 2
        return summary_of(argv[1])
    args = parse_args(argv)
    if args.fresh:
        shutil.rmtree(args.work_dir, ignore_errors=True)
    elif os.path.isdir(args.work_dir):  # a kept work dir: builds killed at an earlier run's end
        stale = remove_build_locks(args.work_dir)
        if stale:
            print(f"corpus_compat: removed {stale} stale build locks under {args.work_dir}")
    os.makedirs(args.cache_dir, exist_ok=True)
    os.makedirs(args.out, exist_ok=True)
    cands = load_corpus(args.corpus, args.only, args.limit, args.builds, args.skip)
    run = Run(args, cands)
    print(f"corpus_compat: {len(cands)} candidates ({sum(c['builds'] for c in cands)} build "
          f"extensions), device {args.device}, arch {args.arch}, budget {args.budget_s:.0f} s, "
          f"KB {'skipped' if args.skip_kb else args.kb_harness}", flush=True)

    threads = []

    def start(target, *a):
        t = threading.Thread(target=target, args=(run, *a), daemon=True)
        t.start()
        threads.append(t)

    kf_todo, kb_todo, kb_ready = queue.Queue(), queue.Queue(), queue.Queue()
    for c in cands:
        if c["builds"]:
            if kforge_runs(args, c):
                kf_todo.put(c)
            if kb_runs(args, c):
                kb_todo.put(c)
        else:
            if kforge_runs(args, c):
                run.enqueue(c["name"], 0, lambda s, c=c: kforge_job(run, s, c))
            if kb_runs(args, c):
                kb_ready.put(c)
    for _ in range(min(args.kforge_builders, kf_todo.qsize())):
        start(kforge_builder, kf_todo)
    if not args.skip_kb:
        for _ in range(min(args.kb_builders, kb_todo.qsize())):
            start(kb_prebuilder, kb_todo, kb_ready)
        start(kb_feeder, kb_ready, sum(kb_runs(args, c) for c in cands))
    sampler = None
    if args.device.startswith("cuda") and shutil.which("nvidia-smi"):
        # nvidia-smi's index, which is CUDA's where CUDA_VISIBLE_DEVICES is not set
        sampler = UtilizationSampler(run.t0, int(args.device.partition(":")[2] or 0))
    lanes = ([run.gpu] * args.kforge_lanes) + ([run.gpu_kb] * args.kb_lanes)
    gpus = [threading.Thread(target=gpu_thread, args=(run, q), daemon=True) for q in lanes]
    try:
        for t in gpus:
            t.start()
        for t in gpus:
            t.join(timeout=max(1, run.left()) + 30)
    finally:
        utilization = sampler.stop() if sampler else []
    run.stopping.set()
    run.kill_all()
    for t in threads:
        t.join(timeout=15)
    wall_s = time.time() - run.t0

    rows = [run.rows[c["name"]] for c in cands]
    with run.lock, open(os.path.join(args.out, "compat.jsonl"), "w") as f:
        for r in rows:
            f.write(json.dumps(r, default=str) + "\n")
    settings = {k: (sorted(v) if isinstance(v, set) else v) for k, v in vars(args).items()}
    summary = dict(settings=settings, wall_s=wall_s, candidates=len(rows))
    text = table(run, rows, wall_s)
    if args.repeats > 1:
        summary["repeats"] = repeats_summary(args, rows, run.turn_log, wall_s, run.back_to_back,
                                             utilization)
        summary["gpu_turns"] = run.turn_log
        text += repeats_table(summary["repeats"])
    json.dump(summary, open(os.path.join(args.out, "compat_run.json"), "w"), indent=1)
    open(os.path.join(args.out, "compat_table.txt"), "w").write(text)
    print(text, end="", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
