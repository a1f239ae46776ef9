#!/usr/bin/env python3
"""Re-measures a sample of stored `ok` results with a bare method and no kforge code (issue 14
point 5): does kforge's device-clock speedup agree with a plain script's?

Input (--input, JSONL, one evaluated candidate a line), either of:
* corpus_compat.py's compat.jsonl rows: `name` (`<level>_<task>`), `kforge_verdict`,
  `kforge_speedup`, `kforge_speedup_device`, `kforge_speedup_call`, `kforge_speedup_clock`;
  the sources are looked up by name in --corpus (a JSONL of `level_id`, `task_id`, `ref_code`,
  `custom_code`, as ../shared/corpora/cudal1_a100.jsonl);
* stored results: `task_source` (or `ref_code`), `candidate_source` (or `custom_code`),
  `verdict`, `speedup`, `speedup_device`, `speedup_call`, `speedup_clock` and optionally
  `name`, at the top level or inside `result` (an EvalResult as kforge-eval's JSON answer
  writes it: proto field names, or their lowerCamelCase JSON names).
Rows whose verdict is `ok` and whose sources are known are the population; --sample K of them
(default 12) are drawn with random.Random(--seed) (all of them when there are fewer).

Each sampled row is measured in its own fresh subprocess (`--child SPEC`), which runs the
candidate's code: it gets a timeout (--timeout, and never past --budget-s), its process group
is killed at the end, and a failure (exception, crash, timeout) is reported for that row. The
child does what KernelBench's harness does to build and feed the two programs: the task and
the candidate are exec'd into fresh namespaces; seed 42 (torch.manual_seed and
torch.cuda.manual_seed) before get_init_inputs(), again before Model(*init) and again before
ModelNew(*init), both built on the CPU (init tensors moved to the device first, as KB does),
then moved to the device; seed 42 again before get_inputs(), whose tensors are moved to the
device (dtypes kept). Outputs of both are compared once (allclose 1e-2, reported only). As
kforge runs them: the reference with the request's numerics (--numerics, fp32: cuDNN's TF32
off), whatever the candidate sets; the candidate with the torch switches it set (cudnn.benchmark,
TF32, precision), reported as `candidate_switches`: each call is made under its own program's
(in kforge the reference runs in the judge's process). Still one process: cuDNN's caches are
shared.

The device time of one call, reference and candidate interleaved (the order alternates each
round), median over the rounds:
* `graph` (where both forwards can be captured): a torch.cuda.CUDAGraph of R back-to-back
  calls per program (--graph-calls, default 10; fewer where R calls would take longer than
  --graph-target-ms, 2 ms, by the call clock), each call preceded in the graph by an L2 flush
  (zero_ of a buffer of 2x the device's L2 size), and a third graph of the R flushes alone;
  each replay is timed with CUDA events behind a pre-roll (torch.cuda._sleep, so the replay
  is queued before the start event is reached), and per call = (median replay of the
  program's graph - median replay of the flush graph) / R. Every call thus starts with a
  flushed L2, as kforge's samples do, and host launch overhead is hidden. The graph is
  checked first: with its output poisoned, one replay must compute the eager output again
  (a kernel launched on the legacy default stream runs during the capture, outside the
  graph). With --flush replay the flush runs once before each replay, outside the timed
  region, and is not subtracted (calls 2..R then find a warm L2). A capture that fails (or
  fails that check) ends the child; the row is measured again in a fresh child with `events`.
  Graph replay also drops the GPU's gaps between a forward's kernels that queued eager
  launches still have (kforge's device clock spanned them until session 23; since then it
  leaves out those of at most 4 us, 20 us in all, where a call was queued whole behind its
  pre-roll).
* `events`: per sample an L2 flush, a pre-roll spin (torch.cuda._sleep) of at least
  --preroll-ms (default 1 ms) and twice the call's host dispatch time, so the forward's
  launches queue while it runs, then CUDA events on the current stream around one call.
  Work the candidate puts on other streams without joining the current one is not seen.
  An empty interval timed the same way is reported (`empty_events_ms`), not subtracted.
* `host` (--device cpu, for CI): time.perf_counter around one call; no flush, no graph.
Besides, on a GPU the call time as a caller sees it (flush, synchronise, perf_counter, call,
synchronise) gives a bare call-clock speedup beside kforge's speedup_call.

Per row: bare speedup (reference per-call time / candidate's), kforge's speedup_device (the
comparison on a GPU; `speedup` where the result has no speedup_device) and speedup_call (the
comparison in CPU mode), rel_diff = kforge / bare - 1, the method. Summary: how many agree
within 2% on the device clock, the median |rel_diff|. Writes OUT/independent_check.jsonl (one
row per sampled candidate) and OUT/independent_check.json (settings and summary), prints a
table last.

  independent_check.py --input OUT/compat/compat.jsonl --out OUT/check      # GPU machine
  independent_check.py --input rows.jsonl --out DIR --device cpu            # CI smoke test
"""
import argparse
import hashlib
import json
import math
import os
import random
import signal
import statistics
import subprocess
import sys
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
SEED = 42
AGREE = 0.02


def first_existing(*paths):
    for p in paths:
        if p and os.path.exists(p):
            return os.path.abspath(p)
    return paths[-1]


def camel(key):
    head, *rest = key.split("_")
    return head + "".join(w[:1].upper() + w[1:] for w in rest)


def pick(d, *keys):
    """The first of keys present in d, under its proto name or its lowerCamelCase name."""
    for k in keys:
        for name in (k, camel(k)):
            if isinstance(d, dict) and d.get(name) is not None:
                return d[name]
    return None


# ---------------------------------------------------------------- input rows


def load_corpus(path):
    if not path or not os.path.exists(path):
        return {}
    out = {}
    for line in open(path):
        r = json.loads(line)
        out[f"{r['level_id']}_{r['task_id']}"] = (r["ref_code"], r["custom_code"])
    return out


def normalise(row, corpus, index):
    """One input row as dict(name, task_source, candidate_source, verdict, kforge speedups);
    None for a line that is neither format."""
    if "kforge_verdict" in row or any(k.startswith("kforge_") for k in row):
        name = row.get("name") or f"row{index}"
        task, cand = row.get("task_source"), row.get("candidate_source")
        if (task is None or cand is None) and name in corpus:
            task, cand = corpus[name]
        def kf(k):
            return row.get("kforge_" + k)
        return dict(name=name, task_source=task, candidate_source=cand,
                    verdict=kf("verdict"), speedup=kf("speedup"),
                    speedup_device=kf("speedup_device"), speedup_call=kf("speedup_call"),
                    speedup_clock=kf("speedup_clock"), timing_clock=kf("timing_clock"),
                    speedup_device_busy=kf("speedup_device_busy"),
                    reference_device_busy_ms=kf("reference_device_busy_ms"),
                    candidate_device_busy_ms=kf("candidate_device_busy_ms"))
    res = row.get("result") if isinstance(row.get("result"), dict) else {}
    def get(k, *alts):
        v = pick(row, k, *alts)
        return v if v is not None else pick(res, k, *alts)
    task, cand = get("task_source", "ref_code"), get("candidate_source", "custom_code")
    verdict = get("verdict")
    if task is None and cand is None and verdict is None:
        return None
    return dict(name=row.get("name") or res.get("task_name") or f"row{index}",
                task_source=task, candidate_source=cand, verdict=verdict,
                speedup=get("speedup"), speedup_device=get("speedup_device"),
                speedup_call=get("speedup_call"), speedup_clock=get("speedup_clock"),
                timing_clock=get("timing_clock"), speedup_device_busy=get("speedup_device_busy"),
                reference_device_busy_ms=get("reference_device_busy_ms"),
                candidate_device_busy_ms=get("candidate_device_busy_ms"))


def load_rows(path, corpus):
    rows = []
    for i, line in enumerate(open(path)):
        if line.strip():
            r = normalise(json.loads(line), corpus, i)
            if r is not None:
                rows.append(r)
    return rows


def sample(rows, k, seed):
    """The `ok` rows with both sources; k of them drawn with random.Random(seed), kept in
    input order."""
    pool = [i for i, r in enumerate(rows) if r["verdict"] == "ok" and r["task_source"]
            and r["candidate_source"]]
    if k and len(pool) > k:
        pool = sorted(random.Random(seed).sample(pool, k))
    return [rows[i] for i in pool]


# ---------------------------------------------------------------- the child (runs candidate code)


def set_seed(torch, seed):
    torch.manual_seed(seed)
    if torch.cuda.is_available():
        torch.cuda.manual_seed(seed)


def to_device(xs, device):
    import torch
    return [x.to(device) if isinstance(x, torch.Tensor) else x for x in xs]


def get_switches(torch):
    """torch's process-wide numerics and algorithm switches that a candidate may set."""
    b = torch.backends
    return dict(precision=torch.get_float32_matmul_precision(),
                matmul_tf32=b.cuda.matmul.allow_tf32,
                matmul_fp16=b.cuda.matmul.allow_fp16_reduced_precision_reduction,
                matmul_bf16=b.cuda.matmul.allow_bf16_reduced_precision_reduction,
                cudnn_tf32=b.cudnn.allow_tf32, benchmark=b.cudnn.benchmark,
                deterministic=b.cudnn.deterministic, cudnn=b.cudnn.enabled)


def set_switches(torch, s):
    b = torch.backends
    # allow_tf32 sets the precision ("high" or "highest"): it first, the precision after it
    # (a candidate's "medium" is kept).
    b.cuda.matmul.allow_tf32 = s["matmul_tf32"]
    torch.set_float32_matmul_precision(s["precision"])
    b.cuda.matmul.allow_fp16_reduced_precision_reduction = s["matmul_fp16"]
    b.cuda.matmul.allow_bf16_reduced_precision_reduction = s["matmul_bf16"]
    b.cudnn.allow_tf32, b.cudnn.benchmark = s["cudnn_tf32"], s["benchmark"]
    b.cudnn.deterministic, b.cudnn.enabled = s["deterministic"], s["cudnn"]


def load_programs(spec):
    """KernelBench's semantics: both models from the same seed, built on the CPU (init tensors
    on the device), moved to the device; inputs from get_inputs() after the seed. kforge's
    numerics and process layout: the reference runs with the request's numerics (`fp32`:
    cuDNN's TF32 off; `torch`: torch's defaults) whatever the candidate sets, and the candidate
    with the switches it set (a cudnn.benchmark or TF32 switch speeds up its own process only,
    as in kforge, where the reference runs in the judge's process). Returns the two programs'
    switches with them: each call is made under its program's."""
    import torch
    device = spec["device"]
    torch.backends.cudnn.allow_tf32 = spec.get("numerics", "fp32") == "torch"
    judge = get_switches(torch)
    task_ns, cand_ns = {"__name__": "kb_task"}, {"__name__": "kb_candidate"}
    exec(compile(open(spec["task_path"]).read(), spec["task_path"], "exec"), task_ns)
    with torch.no_grad():
        set_seed(torch, SEED)
        init = to_device(task_ns["get_init_inputs"](), device)
        set_seed(torch, SEED)
        ref = task_ns["Model"](*init).to(device)
        exec(compile(open(spec["cand_path"]).read(), spec["cand_path"], "exec"), cand_ns)
        set_seed(torch, SEED)
        cand = cand_ns["ModelNew"](*init).to(device)
        own = get_switches(torch)
        set_switches(torch, judge)
        set_seed(torch, SEED)
        inputs = to_device(task_ns["get_inputs"](), device)
    return ref, cand, inputs, judge, own


def under(torch, switches, fn, keep=False):
    """fn, called with the process's switches set to `switches` first; `keep`: what the call
    left is kept in `switches` for the next (a candidate that sets a switch in its forward)."""
    def call():
        set_switches(torch, switches)
        out = fn()
        if keep:
            switches.update(get_switches(torch))
        return out
    return call


def outputs_close(a, b):
    import torch
    if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
        return bool(a.shape == b.shape and torch.allclose(a.float(), b.float(), atol=1e-2,
                                                           rtol=1e-2))
    if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)) and len(a) == len(b):
        return all(outputs_close(x, y) for x, y in zip(a, b))
    return a == b


class Gpu:
    """The bare tools: an L2 flush buffer, a calibrated spin, events."""

    def __init__(self, torch):
        self.torch = torch
        props = torch.cuda.get_device_properties(torch.cuda.current_device())
        self.name = props.name
        self.l2 = int(getattr(props, "L2_cache_size", 0) or 64 << 20)
        self.flush_buf = torch.empty(2 * self.l2, dtype=torch.uint8, device="cuda")
        n = 1_000_000  # cycles; calibrate the spin once: cycles per ms
        self.spin(n)
        torch.cuda.synchronize()
        a, b = self.event(), self.event()
        a.record()
        self.spin(n)
        b.record()
        torch.cuda.synchronize()
        self.cycles_per_ms = n / max(a.elapsed_time(b), 1e-3)

    def event(self):
        return self.torch.cuda.Event(enable_timing=True)

    def spin(self, cycles):
        self.torch.cuda._sleep(int(cycles))

    def flush(self):
        self.flush_buf.zero_()

    def timed(self, fn, preroll_ms, flush=True):
        """One sample: [flush], pre-roll, start event, fn(), end event; elapsed ms."""
        if flush:
            self.flush()
        a, b = self.event(), self.event()
        self.spin(preroll_ms * self.cycles_per_ms)
        a.record()
        fn()
        b.record()
        self.torch.cuda.synchronize()
        return a.elapsed_time(b)

    def call_ms(self, fn):
        """The call as a caller sees it: flushed, synchronised, host timer to the end of a
        device synchronisation."""
        self.flush()
        self.torch.cuda.synchronize()
        t0 = time.perf_counter()
        fn()
        self.torch.cuda.synchronize()
        return (time.perf_counter() - t0) * 1e3


def interleaved(samplers, rounds):
    """rounds x each sampler, the order rotating each round; the samples per sampler."""
    out = [[] for _ in samplers]
    for i in range(rounds):
        order = list(range(len(samplers)))
        order = order[i % len(order):] + order[:i % len(order)]
        for j in order:
            out[j].append(samplers[j]())
    return out


def host_dispatch_ms(fn, n=3):
    t = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        t.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(t)


def poison(x):
    """Overwrites a graph's static output(s): NaN for floating tensors, -7 for others."""
    import torch
    if isinstance(x, torch.Tensor):
        x.fill_(float("nan") if x.is_floating_point() or x.is_complex() else -7)
    elif isinstance(x, (tuple, list)):
        for y in x:
            poison(y)


def capture(torch, gpu, fn, r, flush_each, call=True):
    """A graph of r x ([flush] fn) (call=False: r flushes only), captured on a side stream
    after warm-ups there, as torch's documentation does it. Checked: with its static output
    poisoned, one replay must give the eager output again (a kernel launched on another stream,
    the legacy default stream for one, runs during the capture instead of joining the graph)."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            if call:
                fn()
    torch.cuda.current_stream().wait_stream(s)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    out = None
    with torch.cuda.graph(g):
        for _ in range(r):
            if flush_each:
                gpu.flush()
            if call:
                out = fn()
    torch.cuda.synchronize()
    if call:
        expect = fn()
        poison(out)
        g.replay()
        torch.cuda.synchronize()
        if not outputs_close(out, expect):
            raise RuntimeError("a replay of the captured graph did not compute the output "
                               "(work outside the capture)")
    return g


def measure(spec):
    import torch
    out = dict(device=spec["device"])
    ref, cand, inputs, judge, own = load_programs(spec)
    out["_switches"] = (judge, own)  # child() reports the candidate's, as they end
    with torch.no_grad():
        fns = [under(torch, judge, lambda: ref(*inputs)),
               under(torch, own, lambda: cand(*inputs), keep=True)]
        out["outputs_close"] = outputs_close(fns[0](), fns[1]())
        if spec["device"] == "cpu":
            for f in fns:  # warm-up
                f()
            ms = interleaved([lambda f=f: host_dispatch_ms(f, 1) for f in fns], spec["samples"])
            out.update(method="host", reference_ms=statistics.median(ms[0]),
                       candidate_ms=statistics.median(ms[1]), samples=spec["samples"])
            return out
        gpu = Gpu(torch)
        out.update(gpu=gpu.name, l2_bytes=gpu.l2)
        for f in fns:  # warm-up: lazy init, handles, the first launch of each kernel
            for _ in range(3):
                f()
        torch.cuda.synchronize()
        host = max(host_dispatch_ms(f) for f in fns)
        torch.cuda.synchronize()
        preroll = min(max(spec["preroll_ms"], 2 * host), 50.0)
        out.update(host_dispatch_ms=host, preroll_ms=preroll)
        calls = interleaved([lambda f=f: gpu.call_ms(f) for f in fns], spec["call_samples"])
        out.update(reference_call_ms=statistics.median(calls[0]),
                   candidate_call_ms=statistics.median(calls[1]))
        if spec["method"] == "graph":
            # R calls per graph, fewer where a call is long (the replay near graph_target_ms)
            longest = max(out["reference_call_ms"], out["candidate_call_ms"], 1e-3)
            r = max(1, min(spec["graph_calls"], int(spec["graph_target_ms"] / longest)))
            flush_each = spec["flush"] == "each"
            try:
                graphs = [capture(torch, gpu, f, r, flush_each) for f in fns]
                if flush_each:
                    graphs.append(capture(torch, gpu, None, r, True, call=False))
            except Exception as e:  # noqa: BLE001  (the parent measures again with events)
                out.update(capture_failed=True, capture_error=repr(e)[:300])
                return out
            for g in graphs:  # the first launch of a graph uploads it
                g.replay()
            torch.cuda.synchronize()
            ms = interleaved([lambda g=g: gpu.timed(g.replay, preroll, flush=not flush_each)
                              for g in graphs], spec["graph_samples"])
            med = [statistics.median(m) for m in ms]
            flush_ms = med[2] if flush_each else 0.0
            out.update(method="graph", graph_calls=r, flush=spec["flush"],
                       samples=spec["graph_samples"], flush_ms_per_call=flush_ms / r,
                       reference_ms=(med[0] - flush_ms) / r,
                       candidate_ms=(med[1] - flush_ms) / r)
        else:
            # The third sampler times an empty interval the same way: the events' own offset
            # (reported, not subtracted; on the H200 events read ~2-3 us above graph replay).
            ms = interleaved([lambda f=f: gpu.timed(f, preroll) for f in fns] +
                             [lambda: gpu.timed(lambda: None, preroll)], spec["samples"])
            out.update(method="events", samples=spec["samples"],
                       reference_ms=statistics.median(ms[0]),
                       candidate_ms=statistics.median(ms[1]),
                       empty_events_ms=statistics.median(ms[2]))
    return out


def child(spec_path):
    """`--child SPEC`: measures one row; writes its JSON result to spec['result_path']."""
    spec = json.load(open(spec_path))
    t0 = time.time()
    try:
        if spec["device"] != "cpu" and spec.get("kb_arch_list"):
            import torch  # the build dir is KB's: build (or find) what KB built, <cc>+PTX
            cc = torch.cuda.get_device_capability()
            os.environ["TORCH_CUDA_ARCH_LIST"] = f"{cc[0]}.{cc[1]}+PTX"
        out = dict(status="ok", **measure(spec))
        judge, own = out.pop("_switches")
        out["candidate_switches"] = {k: v for k, v in own.items() if v != judge[k]}
    except BaseException as e:  # noqa: BLE001  (candidate code: anything can come out)
        out = dict(status="failed", error=repr(e)[:500])
    out["child_s"] = round(time.time() - t0, 3)
    with open(spec["result_path"], "w") as f:
        json.dump(out, f, default=str)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)  # skip teardown: candidate code or a broken CUDA context may hang in it


# ---------------------------------------------------------------- the parent


def run_child(args, row, method, deadline):
    """One fresh subprocess for one row; its result dict (a failure or timeout included)."""
    sha = hashlib.sha256(row["candidate_source"].encode()).hexdigest()[:12]
    d = os.path.join(args.work_dir, f"{row['name']}-{sha}")
    os.makedirs(d, exist_ok=True)
    spec = dict(device=args.device, method=method, samples=args.samples,
                call_samples=args.call_samples, graph_samples=args.graph_samples,
                graph_calls=args.graph_calls, graph_target_ms=args.graph_target_ms,
                flush=args.flush, preroll_ms=args.preroll_ms, numerics=args.numerics,
                task_path=os.path.join(d, "task.py"), cand_path=os.path.join(d, "cand.py"),
                result_path=os.path.join(d, f"{method}_result.json"))
    open(spec["task_path"], "w").write(row["task_source"])
    open(spec["cand_path"], "w").write(row["candidate_source"])
    if os.path.exists(spec["result_path"]):
        os.remove(spec["result_path"])
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    kb_build = os.path.join(args.extensions_root, f"{row['name']}-{sha}", "build") \
        if args.extensions_root else ""
    if kb_build and os.path.isdir(kb_build):
        env["TORCH_EXTENSIONS_DIR"] = kb_build  # corpus_compat's KB build of this candidate
        spec["kb_arch_list"] = True
    else:
        env["TORCH_EXTENSIONS_DIR"] = os.path.join(d, "ext")
    if args.device == "cpu":
        env["CUDA_VISIBLE_DEVICES"] = ""
    spec_path = os.path.join(d, f"{method}_spec.json")
    json.dump(spec, open(spec_path, "w"))
    log_path = os.path.join(d, f"{method}.log")
    limit = max(1.0, min(args.timeout, deadline - time.time()))
    t0 = time.time()
    with open(log_path, "wb") as log:
        p = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--child", spec_path],
                             stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                             cwd=d, env=env, start_new_session=True)
        try:
            p.wait(timeout=limit)
            timed_out = False
        except subprocess.TimeoutExpired:
            timed_out = True
        try:
            os.killpg(p.pid, signal.SIGKILL)  # the child and whatever it started
        except (ProcessLookupError, PermissionError):
            pass
        p.wait()
    wall = time.time() - t0
    if timed_out:
        res = dict(status="timeout", error=f"killed after {wall:.0f} s")
    else:
        try:
            res = json.load(open(spec["result_path"]))
        except (OSError, ValueError):
            tail = open(log_path, errors="replace").read()[-300:]
            res = dict(status="failed",
                       error=f"no result (exit status {p.returncode}); log ends: {tail}")
    res["wall_s"] = round(wall, 3)
    res["extensions_dir"] = env["TORCH_EXTENSIONS_DIR"]
    return res


def rel(a, b):
    return a / b - 1 if a and b and b > 0 else None


def check_row(args, row, deadline):
    method = "host" if args.device == "cpu" else args.method
    res = run_child(args, row, method, deadline)
    if res.get("capture_failed"):  # measured again, in a fresh process, with events
        failed = res
        res = run_child(args, row, "events", deadline)
        res.update(capture_error=failed.get("capture_error"),
                   wall_s=round(res["wall_s"] + failed["wall_s"], 3))
    out = dict(name=row["name"], status=res.get("status"), method=res.get("method"),
               error=res.get("error"))
    ok = res.get("status") == "ok" and (res.get("reference_ms") or 0) > 0 \
        and (res.get("candidate_ms") or 0) > 0
    if res.get("status") == "ok" and not ok:
        out.update(status="failed", error="a per-call time was not positive: reference "
                   f"{res.get('reference_ms')} ms, candidate {res.get('candidate_ms')} ms")
    bare = res["reference_ms"] / res["candidate_ms"] if ok else None
    if args.device == "cpu":  # the host timer: a call clock, the only one there is
        bare_call, device_diff = bare, None
    else:
        bare_call = (res["reference_call_ms"] / res["candidate_call_ms"]
                     if ok and res.get("candidate_call_ms") else None)
        device_diff = rel(row["speedup_device"], bare)
    # kforge's busy-time ratio beside its device clock (the span less the GPU's idle gaps):
    # the same quantity graph replay measures, where the forward has several kernels.
    busy_diff = rel(row.get("speedup_device_busy"), bare) if args.device != "cpu" else None
    call_diff = rel(row["speedup_call"], bare_call)
    # Which side a disagreement comes from: kforge's busy time of each program against its
    # bare time (a diagnosis: the speedup's difference is the ratio of the two).
    gpu = args.device != "cpu" and ok
    ref_side = rel(row.get("reference_device_busy_ms"), res["reference_ms"]) if gpu else None
    cand_side = rel(row.get("candidate_device_busy_ms"), res["candidate_ms"]) if gpu else None
    # The comparison: the device clock where kforge's result has it; else its call clock; else
    # (an engine without the two clocks) its `speedup` against the bare device time.
    if args.device != "cpu" and row["speedup_device"]:
        key, d = "speedup_device", device_diff
    elif row["speedup_call"]:
        key, d = "speedup_call", call_diff
    else:
        key, d = "speedup", rel(row["speedup"], bare if bare is not None else bare_call)
    out.update(bare_speedup=bare, bare_call_speedup=bare_call, kforge_speedup=row["speedup"],
               kforge_speedup_device=row["speedup_device"],
               kforge_speedup_call=row["speedup_call"],
               kforge_speedup_clock=row["speedup_clock"], compared_to=key, rel_diff=d,
               agree_2pct=(abs(d) <= AGREE if d is not None else None),
               device_rel_diff=device_diff, call_rel_diff=call_diff,
               kforge_speedup_device_busy=row.get("speedup_device_busy"),
               busy_rel_diff=busy_diff, reference_side_rel_diff=ref_side,
               candidate_side_rel_diff=cand_side)
    for k in ("reference_ms", "candidate_ms", "reference_call_ms", "candidate_call_ms",
              "samples", "graph_calls", "flush", "flush_ms_per_call", "preroll_ms",
              "host_dispatch_ms", "empty_events_ms", "outputs_close", "capture_error", "gpu",
              "l2_bytes",
              "wall_s", "child_s", "extensions_dir"):
        if res.get(k) is not None:
            out[k] = res[k]
    return out


def summary(results, device):
    measured = [r for r in results if r["status"] == "ok"]
    diffs = [r for r in measured if r["rel_diff"] is not None]
    device_clock = [r for r in measured if r.get("device_rel_diff") is not None]
    calls = [r for r in measured if r.get("call_rel_diff") is not None]
    busy = [r for r in measured if r.get("busy_rel_diff") is not None]
    methods = {}
    for r in measured:
        methods[r["method"]] = methods.get(r["method"], 0) + 1

    def med_abs(rs, k):
        return statistics.median(abs(r[k]) for r in rs) if rs else None

    def med_signed(rs, k):
        v = [r[k] for r in rs if r.get(k) is not None]
        return statistics.median(v) if v else None
    return dict(
        sampled=len(results), measured=len(measured),
        failed=sum(r["status"] in ("failed", "timeout") for r in results),
        skipped=sum(r["status"] == "skipped" for r in results), methods=methods,
        compared=len(diffs), compared_device_clock=len(device_clock),
        agree_2pct_device_clock=sum(abs(r["device_rel_diff"]) <= AGREE for r in device_clock),
        agree_2pct=sum(r["agree_2pct"] for r in diffs),
        median_abs_rel_diff=med_abs(diffs, "rel_diff"),
        median_abs_rel_diff_device_clock=med_abs(device_clock, "device_rel_diff"),
        call_compared=len(calls), call_agree_2pct=sum(abs(r["call_rel_diff"]) <= AGREE
                                                       for r in calls),
        median_abs_call_rel_diff=med_abs(calls, "call_rel_diff"),
        busy_compared=len(busy), busy_agree_2pct=sum(abs(r["busy_rel_diff"]) <= AGREE
                                                     for r in busy),
        median_abs_busy_rel_diff=med_abs(busy, "busy_rel_diff"),
        median_reference_side_rel_diff=med_signed(measured, "reference_side_rel_diff"),
        median_candidate_side_rel_diff=med_signed(measured, "candidate_side_rel_diff"),
        device=device)


def table(results, s, args):
    def f(x, fmt="{:.3f}"):
        return "-" if x is None else fmt.format(x)

    def pct(x):
        return "-" if x is None else f"{100 * x:+.1f}%"
    lines = [f"== independent check: {s['sampled']} sampled ok results re-measured bare, device "
             f"{args.device} ==",
             f"{'candidate':12s} {'method':7s} {'bare dev':>9s} {'kf dev':>8s} {'diff':>7s} "
             f"{'bare call':>9s} {'kf call':>8s} {'diff':>7s}  {'kf clock':8s} note"]
    for r in results:
        note = r.get("error") or ""
        if r.get("capture_error"):
            note = "capture failed: " + r["capture_error"][:60]
        if r.get("outputs_close") is False:
            note = "outputs differ (1e-2) " + note
        if r.get("compared_to") == "speedup":
            note = f"compared with speedup x{f(r.get('kforge_speedup'))} " + note
        if r.get("reference_side_rel_diff") is not None:
            note = (f"kf/bare ref {pct(r['reference_side_rel_diff'])} cand "
                    f"{pct(r.get('candidate_side_rel_diff'))} " + note)
        lines.append(f"{r['name'][:12]:12s} {(r.get('method') or r['status'])[:7]:7s} "
                     f"{f(r.get('bare_speedup') if args.device != 'cpu' else None):>9s} "
                     f"{f(r.get('kforge_speedup_device')):>8s} "
                     f"{pct(r.get('device_rel_diff')):>7s} {f(r.get('bare_call_speedup')):>9s} "
                     f"{f(r.get('kforge_speedup_call')):>8s} {pct(r.get('call_rel_diff')):>7s}  "
                     f"{(r.get('kforge_speedup_clock') or '-')[:8]:8s} {note[:80]}")
    lines.append(f"measured {s['measured']}/{s['sampled']} ({s['failed']} failed, {s['skipped']} "
                 f"skipped by the budget; methods {s['methods']}); device clock: "
                 f"{s['agree_2pct_device_clock']}/{s['compared_device_clock']} agree within 2%, "
                 f"median |diff| {pct(s['median_abs_rel_diff_device_clock'])}; all compared: "
                 f"{s['agree_2pct']}/{s['compared']}, median |diff| "
                 f"{pct(s['median_abs_rel_diff'])}; call clock: {s['call_agree_2pct']}/"
                 f"{s['call_compared']} within 2%, median |diff| "
                 f"{pct(s['median_abs_call_rel_diff'])}; device busy time: "
                 f"{s['busy_agree_2pct']}/{s['busy_compared']} within 2%, median |diff| "
                 f"{pct(s['median_abs_busy_rel_diff'])}; kforge's busy time over the bare "
                 f"time, median: reference {pct(s['median_reference_side_rel_diff'])}, "
                 f"candidate {pct(s['median_candidate_side_rel_diff'])}")
    return "\n".join(lines) + "\n"


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--input", required=True, help="compat.jsonl or a JSONL of stored results")
    p.add_argument("--out", required=True)
    p.add_argument("--corpus", default=first_existing(
        os.path.join(ROOT, ".gpu-carry/corpora/cudal1_a100.jsonl"),
        os.path.join(ROOT, "../shared/corpora/cudal1_a100.jsonl")),
        help="sources of compat.jsonl rows, by name <level>_<task>")
    p.add_argument("--device", default="cuda", help="cuda or cpu (host timer, for CI)")
    p.add_argument("--sample", type=int, default=12, help="ok results to re-measure (0: all)")
    p.add_argument("--seed", type=int, default=14, help="the sample's random seed")
    p.add_argument("--method", default="graph", choices=("graph", "events"),
                   help="graph: CUDA graph replay, events where capture fails; events: always")
    p.add_argument("--graph-calls", type=int, default=10, help="calls per captured graph (R)")
    p.add_argument("--graph-target-ms", type=float, default=2.0,
                   help="fewer calls per graph where R calls would take longer than this")
    p.add_argument("--graph-samples", type=int, default=30, help="replays per graph")
    p.add_argument("--flush", default="each", choices=("each", "replay"),
                   help="L2 flush before each call in the graph (subtracted), or before "
                        "each replay only")
    p.add_argument("--samples", type=int, default=100, help="samples per program (events, host)")
    p.add_argument("--call-samples", type=int, default=50,
                   help="call-clock samples per program on a GPU")
    p.add_argument("--preroll-ms", type=float, default=1.0, help="the least pre-roll spin")
    p.add_argument("--numerics", default="fp32", choices=("fp32", "torch"),
                   help="the reference's numerics, as the evaluated request's (kforge's "
                        "default fp32: cuDNN's TF32 off)")
    p.add_argument("--timeout", type=float, default=300, help="seconds for one row's child")
    p.add_argument("--budget-s", type=float, default=0, help="the whole run (0: no limit)")
    p.add_argument("--min-row-s", type=float, default=20,
                   help="no row starts with less than this left of the budget")
    p.add_argument("--work-dir", default="/tmp/kforge-check", help="per-row files and builds")
    p.add_argument("--extensions-root", default="/tmp/kforge-compat/kb",
                   help="corpus_compat's KB build dirs (<root>/<name>-<sha12>/build), reused "
                        "as TORCH_EXTENSIONS_DIR where present; empty: private builds")
    args = p.parse_args(argv)
    for k in ("input", "out", "work_dir"):
        setattr(args, k, os.path.abspath(getattr(args, k)))
    return args


def main(argv):
    if argv[:1] == ["--child"]:
        return child(argv[1])
    args = parse_args(argv)
    t0 = time.time()
    deadline = t0 + args.budget_s if args.budget_s > 0 else math.inf
    os.makedirs(args.out, exist_ok=True)
    os.makedirs(args.work_dir, exist_ok=True)
    rows = load_rows(args.input, load_corpus(args.corpus))
    picked = sample(rows, args.sample, args.seed)
    print(f"independent_check: {len(picked)} of {sum(r['verdict'] == 'ok' for r in rows)} ok "
          f"rows ({len(rows)} read), device {args.device}", flush=True)
    results = []
    for row in picked:
        if deadline - time.time() < args.min_row_s:
            results.append(dict(name=row["name"], status="skipped", error="budget"))
            continue
        results.append(check_row(args, row, deadline))
        print(f"  {row['name']}: {results[-1]['status']} {results[-1].get('method') or ''} "
              f"bare x{results[-1].get('bare_speedup')} ({results[-1].get('wall_s')} s)",
              flush=True)
    s = summary(results, args.device)
    with open(os.path.join(args.out, "independent_check.jsonl"), "w") as f:
        for r in results:
            f.write(json.dumps(r, default=str) + "\n")
    settings = {k: v for k, v in vars(args).items()}
    json.dump(dict(settings=settings, summary=s, wall_s=round(time.time() - t0, 3)),
              open(os.path.join(args.out, "independent_check.json"), "w"), indent=1,
              default=str)
    text = table(results, s, args)
    open(os.path.join(args.out, "independent_check_table.txt"), "w").write(text)
    print(text, end="", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
