#!/usr/bin/env python3
"""Benchmarks of kforge-eval (standard library only), for docs/benchmarks.md.

  engine_bench.py --eval BIN --device cuda --out DIR [--kernelbench DIR] [--sections ...]

Sections:
  build     build latency per dialect: N distinct nvrtc candidates (cold cache), N distinct
            load_inline candidates (fresh extensions) and N distinct cpp candidates (after one
            build that makes the precompiled header), median of the engine's build stage
  stages    wall time per evaluation split into startup, load, build, correctness, timing,
            for the level-1/level-2 example candidates, cold and with the build cached;
            evaluations per GPU-hour from the cached total
  served    the stages section through one fork server (kforge-eval --serve): per task one
            cold and --cached evaluations with the build cached; evaluations per GPU-hour
  repeat    each of REPEAT_CASES evaluated R times: spread of the speedup (--serve: in one server)
  baseline  eager reference time of every task under --kernelbench (kforge-eval --baseline)
--kernelbench is KernelBench's folder (../shared/kernelbench; not copied into the project).
Writes DIR/bench.json and prints a markdown summary.
"""
import argparse
import concurrent.futures
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
EX = os.path.join(ROOT, "examples")
sys.path.insert(0, os.path.join(ROOT, "tests", "engine"))
import serve_client  # noqa: E402

STAGE_KEYS = ("startup_s", "device_s", "load_task_s", "build_s", "correctness_s", "timing_s",
              "total_s")
# Parts of build_s (cpp dialect) and of correctness_s (summed over the trials).
BUILD_PART_KEYS = ("build_host_compile_s", "build_kernel_compile_s", "build_load_s")
CORRECTNESS_PART_KEYS = ("correctness_inputs_s", "correctness_reference_s",
                         "correctness_poison_s", "correctness_candidate_s",
                         "correctness_outputs_s", "correctness_inputs_unchanged_s",
                         "correctness_compare_s")


def parse_timing(text):
    """A timing variant of the served and repeat sections: a clock, "default" (the engine's
    own choice), "activity" or "events", optionally with "+preroll:X" (an X ms pre-roll);
    "preroll:X" alone keeps the default clock."""
    clock, preroll = "default", 0.0
    for part in text.split("+"):
        if part.startswith("preroll:"):
            preroll = float(part.split(":", 1)[1])
        elif part in ("default", "activity", "events"):
            clock = part
        else:
            raise argparse.ArgumentTypeError(f"unknown timing variant {text!r}")
    return dict(name=text, clock="" if clock == "default" else clock, preroll=preroll)


DEFAULT_TIMING = parse_timing("default")


def evaluate(args, task, candidate_src, cache_dir, extra=(), server=None, keep_samples=False,
             timing=DEFAULT_TIMING):
    if server is not None:
        t0 = time.time()
        r = server.evaluate(task_source=open(task).read(), candidate_source=candidate_src,
                            device=args.device, task_name=task, keep_samples=keep_samples,
                            preroll_ms=timing["preroll"], timing_clock=timing["clock"])
        r["wall_s"] = time.time() - t0
        return r
    with tempfile.TemporaryDirectory() as tmp:
        cand = os.path.join(tmp, "candidate.py")
        open(cand, "w").write(candidate_src)
        out = os.path.join(tmp, "r.json")
        t0 = time.time()
        keep = ["--keep-samples"] if keep_samples else []
        clock = ["--timing-clock", timing["clock"]] if timing["clock"] else []
        subprocess.run([args.eval, "--task", task, "--candidate", cand, "--device", args.device,
                        "--cache-dir", cache_dir, "--json", out,
                        "--preroll-ms", str(timing["preroll"]), *clock, *keep, *extra],
                       capture_output=True, text=True, timeout=900)
        wall = time.time() - t0
        r = json.load(open(out)) if os.path.exists(out) else {"verdict": "<none>"}
        r["wall_s"] = wall
        return r


def variant(src, i):
    """The same candidate with a unique comment inside its kernel source: a cache miss."""
    marker = "extern \"C\""
    if marker in src:
        return src.replace(marker, f"// variant {i} {time.time_ns()}\n{marker}", 1)
    return src.replace("__global__", f"/* variant {i} {time.time_ns()} */ __global__", 1)


def section_build(args, summary):
    task = os.path.join(EX, "tasks/tiny/tiny_relu.py")
    rows = {}
    for dialect, path, jobs in [
        ("nvrtc", "candidates/tiny_relu/nvrtc_relu.py", 1),
        ("kernelbench (load_inline)", "candidates/tiny_relu/kernelbench_load_inline.py", args.jobs),
        ("cpp (g++ with the precompiled header)", "candidates/tiny_relu/cpp_relu.cpp", 1),
    ]:
        if dialect.split()[0] not in args.build_dialects.split(","):
            continue
        src = open(os.path.join(EX, path)).read()
        cache = tempfile.mkdtemp(prefix="kforge-build-")
        first = None
        if dialect.startswith("cpp"):
            # The first cpp build in a cache directory also builds the precompiled header;
            # it is reported apart, the N measured builds reuse the header.
            warm = evaluate(args, task, variant(src, -1), cache, ("--build-timeout", "600"))
            first = warm.get("stages", {}).get("build_s")
        with concurrent.futures.ThreadPoolExecutor(jobs) as pool:
            results = list(pool.map(
                lambda i: evaluate(args, task, variant(src, i), cache,
                                   ("--build-timeout", "600")), range(args.n)))
        # A build counts once it succeeded: in CPU mode the cpp candidate's kernels then stop
        # it in the correctness stage (no_gpu), after the build.
        built = [r for r in results if r.get("verdict") == "ok" or
                 r.get("stage") in ("correctness", "timing")]
        builds = [r["stages"]["build_s"] for r in built]
        rows[dialect] = dict(n_ok=len(builds), n=args.n, jobs=jobs,
                             median_s=statistics.median(builds) if builds else None,
                             min_s=min(builds) if builds else None,
                             max_s=max(builds) if builds else None,
                             verdicts=sorted({r.get("verdict") for r in results}),
                             first_build_with_header_s=first,
                             **{k + "_median": statistics.median(
                                 r["stages"].get(k, 0) for r in built) if built else None
                                for k in BUILD_PART_KEYS})
        print(f"build {dialect}: {rows[dialect]}", flush=True)
    summary["build"] = rows


STAGE_CASES = [  # (KernelBench task, example candidate)
    ("level1/19_ReLU", "candidates/19_ReLU/nvrtc_vec4.py"),
    ("level1/23_Softmax", "candidates/23_Softmax/nvrtc_online.py"),
    ("level1/40_LayerNorm", "candidates/40_LayerNorm/nvrtc_split_welford.py"),
    ("level2/76_Gemm_Add_ReLU", "candidates/76_Gemm_Add_ReLU/nvrtc_gemm_epilogue.py"),
    ("level2/1_Conv2D_ReLU_BiasAdd", "candidates/1_Conv2D_ReLU_BiasAdd/nvrtc_conv_epilogue.py"),
]


def section_stages(args, summary):
    cache = tempfile.mkdtemp(prefix="kforge-stages-")
    rows = []
    for name, cand in STAGE_CASES:
        src = open(os.path.join(EX, cand)).read()
        for phase in ("cold", "cached"):
            r = evaluate(args, os.path.join(args.kernelbench, name + ".py"), src, cache)
            rows.append(stage_row(name, phase, r))
            print(f"stages {rows[-1]}", flush=True)
    cached = [r["wall_s"] for r in rows if r["phase"] == "cached"]
    summary["stages"] = rows
    summary["evals_per_gpu_hour_cached"] = 3600 / statistics.mean(cached) if cached else None


def stage_row(name, phase, r):
    st = r.get("stages", {})
    return dict(task=name, phase=phase, verdict=r.get("verdict"), rule=r.get("rule"),
                speedup=r.get("speedup"), ref_ms=r.get("reference", {}).get("median_ms"),
                cand_ms=r.get("candidate", {}).get("median_ms"),
                ref_n=r.get("reference", {}).get("n"), samples=r.get("candidate", {}).get("n"),
                wall_s=r["wall_s"], clock=r.get("timing_clock"),
                event_fallbacks=[r.get(p, {}).get("event_fallbacks", 0)
                                 for p in ("reference", "candidate")],
                **{k: st.get(k) for k in STAGE_KEYS + BUILD_PART_KEYS + CORRECTNESS_PART_KEYS},
                reason=(r.get("reason") or "")[:300])


def section_served(args, summary):
    """Each stage task through one fork server: a cold evaluation, then `--cached` cached ones
    per timing variant, the variants taking turns so that drift hits them alike."""
    cache = tempfile.mkdtemp(prefix="kforge-served-")
    t0 = time.time()
    server = serve_client.Server(args.eval, cache)
    rows = summary["served"] = []
    for name, cand in STAGE_CASES:
        src = open(os.path.join(EX, cand)).read()
        runs = [(0, args.timings[0])] + [(i, t) for i in range(1, 1 + args.cached)
                                         for t in args.timings]
        for i, timing in runs:
            r = evaluate(args, os.path.join(args.kernelbench, name + ".py"), src, cache,
                         server=server, timing=timing)
            rows.append(dict(stage_row(name, "cold" if i == 0 else "cached", r),
                             timing=timing["name"]))
            if "served_first_answer_s" not in summary:  # also waited for the server's start
                summary["served_first_answer_s"] = time.time() - t0
            print(f"served {rows[-1]}", flush=True)
    server.close()
    per_hour = summary["evals_per_gpu_hour_served"] = {}
    for timing in args.timings:
        cached = [r["wall_s"] for r in rows if r["phase"] == "cached" and
                  r["timing"] == timing["name"]]
        per_hour[timing["name"]] = 3600 / statistics.mean(cached) if cached else None


REPEAT_CASES = [  # (KernelBench task, example candidate): kernels of 50 us or more
    ("level1/19_ReLU", "candidates/19_ReLU/nvrtc_vec4.py"),
    ("level1/40_LayerNorm", "candidates/40_LayerNorm/nvrtc_split_welford.py"),
]


def section_repeat(args, summary):
    """Each repeat case `--repeat` times per timing variant, the variants taking turns."""
    cache = tempfile.mkdtemp(prefix="kforge-repeat-")
    server = serve_client.Server(args.eval, cache) if args.serve else None
    summary["repeat"] = []
    for name, cand in REPEAT_CASES:
        if args.repeat_only and args.repeat_only not in name:
            continue
        task = os.path.join(args.kernelbench, name + ".py")
        src = open(os.path.join(EX, cand)).read()
        runs = {t["name"]: dict(speedups=[], candidate_ms=[], samples=[], wall_s=[],
                                event_fallbacks=[], raw=[])
                for t in args.timings}
        for _ in range(args.repeat):
            for timing in args.timings:
                got = runs[timing["name"]]
                r = evaluate(args, task, src, cache, server=server, timing=timing,
                             keep_samples=args.keep_samples)
                if r.get("verdict") != "ok":
                    continue
                got["speedups"].append(r["speedup"])
                got["candidate_ms"].append(r["candidate"]["median_ms"])
                got["samples"].append(r["candidate"]["n"])
                got["wall_s"].append(r["wall_s"])
                got["event_fallbacks"].append([r[p].get("event_fallbacks", 0)
                                               for p in ("reference", "candidate")])
                if args.keep_samples:
                    got["raw"].append({p: {k: r[p].get(k) for k in
                                           ("samples_ms", "tail_samples_ms", "input_sets",
                                            "event_samples_ms", "pre_samples_ms",
                                            "lat_samples_ms", "span_samples_ms",
                                            "host_samples_ms")}
                                       for p in ("reference", "candidate")})
        for timing_name, got in runs.items():
            sp = got["speedups"]
            med = statistics.median(sp) if sp else None
            row = dict(task=name, candidate=os.path.basename(cand), served=args.serve,
                       timing=timing_name, runs=args.repeat, ok=len(sp), median_speedup=med,
                       spread_pct=(100 * (max(sp) - min(sp)) / med) if sp else None, **got)
            if not row["raw"]:
                del row["raw"]
            summary["repeat"].append(row)
            print(f"repeat { {k: v for k, v in row.items() if k != 'raw'} }", flush=True)
    if server:
        server.close()


def section_baseline(args, summary):
    out = os.path.join(args.out, "baseline.jsonl")
    t0 = time.time()
    proc = subprocess.run([args.eval, "--baseline", args.kernelbench, "--device", args.device,
                           "--json", out, "--per-task-cap", str(args.baseline_cap)],
                          capture_output=True, text=True, timeout=1800)
    rows = [json.loads(l) for l in open(out)] if os.path.exists(out) else []
    summary["baseline"] = dict(tasks=len(rows), ok=sum(r["ok"] for r in rows),
                               wall_s=time.time() - t0, exit=proc.returncode,
                               failed=[(r["task"], r.get("error", "")[:200])
                                       for r in rows if not r["ok"]])
    print(f"baseline {summary['baseline']['ok']}/{len(rows)} tasks timed "
          f"in {summary['baseline']['wall_s']:.0f} s", flush=True)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--eval", required=True)
    p.add_argument("--device", default="cuda")
    p.add_argument("--out", required=True)
    p.add_argument("--kernelbench", default="")
    p.add_argument("--sections", default="build,stages,repeat,baseline")
    p.add_argument("--n", type=int, default=10)
    p.add_argument("--jobs", type=int, default=8)
    p.add_argument("--build-dialects", default="nvrtc,kernelbench,cpp",
                   help="build: which dialects (nvrtc, kernelbench, cpp)")
    p.add_argument("--repeat", type=int, default=10)
    p.add_argument("--baseline-cap", type=float, default=1.0)
    p.add_argument("--cached", type=int, default=3, help="served: cached evaluations per task")
    p.add_argument("--serve", action="store_true", help="repeat: evaluate in one fork server")
    p.add_argument("--repeat-only", default="", help="repeat: only the cases whose task has this")
    p.add_argument("--keep-samples", action="store_true",
                   help="repeat: keep every timing sample of every run in bench.json")
    p.add_argument("--timings", default="default",
                   help="timing variants for the served and repeat sections, comma-separated: "
                        "default, activity, events, each optionally +preroll:X (an X ms "
                        "pre-roll), or preroll:X alone; several run "
                        "those sections once per variant, taking turns (the other sections "
                        "use the default)")
    args = p.parse_args()
    os.makedirs(args.out, exist_ok=True)
    args.timings = [parse_timing(v) for v in args.timings.split(",")]
    summary = {}
    for s in args.sections.split(","):
        if s in ("baseline", "stages", "served", "repeat") and not args.kernelbench:
            print(f"section {s} skipped: --kernelbench not given", flush=True)
            continue
        try:
            globals()["section_" + s](args, summary)
        except Exception as e:  # a failed section must not lose the others' numbers
            summary[s + "_error"] = repr(e)
            print(f"section {s} failed: {e!r}", flush=True)
        json.dump(summary, open(os.path.join(args.out, "bench.json"), "w"), indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
