#!/usr/bin/env python3
"""Runs kforge-eval on the example corpus and checks every verdict.

The expectations come from the corpus itself: a candidate's file name says what it is
(correct, wrong, raises, syntax_error, hangs, crashes, sleepy, nvrtc_*, kernelbench_*), and each
reward hack in examples/hacks/ states "Expected verdict: VERDICT[, rule RULE]" in its docstring.

  run_cases.py --eval build/gpu_worker/eval/kforge-eval --device cpu   # CI (no GPU)
  run_cases.py --eval ... --device cuda --out results.jsonl            # the GPU machine

CPU mode runs the tiny tasks; the hacks written for 19_ReLU run against tiny_relu and must never
come out `ok` (most cannot run their kernels without a GPU: rule no_gpu). On a GPU every
expectation must hold exactly. Prints one line per case and a closing
"N passed, M failed" line; exits 1 when any case failed. Standard library only.
"""
import argparse
import concurrent.futures
import json
import os
import re
import subprocess
import sys
import tempfile
import threading

import serve_client

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
EX = os.path.join(ROOT, "examples")
TESTS = os.path.join(ROOT, "tests", "engine", "candidates")

# file stem -> (verdict, rule or None) for the hand-written candidates
BY_NAME = {
    "correct": ("ok", None),
    "sleepy": ("ok", None),
    "wrong": ("incorrect", None),
    "raises": ("runtime_error", None),
    "syntax_error": ("compile_error", None),
    "hangs": ("timeout", None),
    "crashes": ("rejected", "forbidden_import"),
    "nvrtc_compile_error": ("compile_error", None),
    "cpp_compile_error": ("compile_error", None),
    "segfault_unchecked": ("runtime_error", None),
    "timed_wrong": ("incorrect", "timed_outputs"),
    "timed_in_place": ("rejected", "input_mutation"),
    "repeat_detector": ("ok", None),
    "fp32_switch_defaults": ("ok", None),
}

def kernelbench_dir():
    """KernelBench's tasks are not copied into the project; they are found here."""
    for d in (os.environ.get("KFORGE_KERNELBENCH", ""),
              os.path.join(ROOT, "..", "shared", "kernelbench"),
              os.path.join(ROOT, ".gpu-carry", "kernelbench")):
        if d and os.path.isdir(os.path.join(d, "level1")):
            return os.path.abspath(d)
    return None


KB = kernelbench_dir()

TASK_DIRS = {
    "tiny_relu": os.path.join(EX, "tasks/tiny/tiny_relu.py"),
    "tiny_add_scale": os.path.join(EX, "tasks/tiny/tiny_add_scale.py"),
    "tiny_linear": os.path.join(EX, "tasks/tiny/tiny_linear.py"),
}
if KB:
    for rel in ("level1/19_ReLU.py", "level1/23_Softmax.py", "level1/40_LayerNorm.py",
                "level2/1_Conv2D_ReLU_BiasAdd.py", "level2/76_Gemm_Add_ReLU.py"):
        TASK_DIRS[os.path.basename(rel)[:-3]] = os.path.join(KB, rel)


def hack_expectation(path):
    text = open(path).read()
    m = re.search(r"Expected verdict:\s*(\w+)(?:,\s*rule\s+(\w+))?", text)
    if not m:
        return None
    return m.group(1), m.group(2)


def hack_min_candidate_ms(path):
    """'Expected candidate median: at least X ms[ (without a pre-roll)]': an `ok` result must
    have timed it that slow on each clock it has (if so marked, not when the case ran on the events clock with a
    pre-roll, the known limit of that combination).
    Returns (X, without_preroll_only) or (None, False)."""
    m = re.search(r"Expected candidate median:\s*at least\s*([0-9.]+)\s*ms"
                  r"(\s*\(without a pre-roll\))?", open(path).read())
    return (float(m.group(1)), bool(m.group(2))) if m else (None, False)


def hack_task(path):
    """The task a hack targets: 'Task: kernelbench/levelN/X.py', 'Task: tasks/tiny/X.py' (under
    examples/) or 'Task: tests/engine/.../X.py' (under the repository's root)."""
    m = re.search(r"Task:\s*(kernelbench/\S+?\.py|tasks/\S+?\.py|tests/\S+?\.py)",
                  open(path).read())
    rel = m.group(1) if m else "kernelbench/level1/19_ReLU.py"
    if rel.startswith("kernelbench/"):
        return os.path.join(KB, rel[len("kernelbench/"):]) if KB else None
    if rel.startswith("tests/"):
        return os.path.join(ROOT, rel)
    return os.path.join(EX, rel)


def hack_max_speedup(path):
    """'Expected speedup: at most X': an `ok` result's speedup must not exceed it."""
    m = re.search(r"Expected speedup:\s*at most\s*([0-9.]+)", open(path).read())
    return float(m.group(1)) if m else None


def cases(device):
    out = []
    for task_stem, task_rel in TASK_DIRS.items():
        tiny = task_stem.startswith("tiny_")
        if device == "cpu" and not tiny:
            continue
        cdir = os.path.join(EX, "candidates", task_stem)
        if not os.path.isdir(cdir):
            continue
        for name in sorted(os.listdir(cdir)):
            stem, ext = os.path.splitext(name)
            if ext not in (".py", ".cpp"):
                continue
            if stem in BY_NAME:
                expect = BY_NAME[stem]
            elif stem.startswith(("nvrtc_", "kernelbench_", "cpp_")):
                expect = ("ok", None)
                if device == "cpu":
                    if stem.startswith("kernelbench_"):
                        continue  # load_inline needs nvcc minutes per build; GPU suite only
                    host_only = stem.startswith("cpp_") and \
                        "KFORGE_KERNELS" not in open(os.path.join(cdir, name)).read()
                    if not host_only:
                        expect = ("runtime_error", "no_gpu")
            else:
                continue
            out.append(dict(name=f"{task_stem}/{stem}", task=task_rel,
                            candidate=os.path.join(cdir, name), expect=expect, strict=True,
                            slow_stop=f"{task_stem}/{stem}" == "tiny_relu/sleepy"))
    for name in sorted(os.listdir(TESTS)):
        stem = name[:-3]
        if stem in BY_NAME:
            out.append(dict(name=f"tests/{stem}", task=TASK_DIRS["tiny_relu"],
                            candidate=os.path.join(TESTS, name), expect=BY_NAME[stem],
                            strict=True))
    # A task whose get_inputs() is too slow for fresh timing inputs: rotating sets (3).
    slow = os.path.join(ROOT, "tests", "engine", "slow_inputs")
    for stem, expect in (("correct", ("ok", None)), ("memo_replay", ("rejected", "output_cache"))):
        out.append(dict(name=f"slow_inputs/{stem}", task=os.path.join(slow, "task.py"),
                        candidate=os.path.join(slow, stem + ".py"), expect=expect, strict=True,
                        input_sets=3))
    # A task whose model keeps state across calls (3_33's shape): the reference and the
    # candidate get the same calls in the same order (tests/engine/stateful_test.py).
    sdir = os.path.join(ROOT, "tests", "engine", "stateful")
    for stem, expect in (("honest", ("ok", None)), ("stateless", ("incorrect", None))):
        out.append(dict(name=f"stateful/{stem}", task=os.path.join(sdir, "task.py"),
                        candidate=os.path.join(sdir, stem + ".py"), expect=expect, strict=True))
    # numerics "torch": torch's defaults reach the candidate's process (cuDNN's TF32 on), so the
    # candidate that checks for fp32 answers wrongly.
    out.append(dict(name="tests/fp32_switch_defaults_under_torch_numerics",
                    task=TASK_DIRS["tiny_relu"],
                    candidate=os.path.join(TESTS, "fp32_switch_defaults.py"),
                    expect=("incorrect", None), strict=True, numerics="torch"))
    # Malformed requests: a clear verdict naming the request, whatever the device.
    correct = os.path.join(EX, "candidates", "tiny_relu", "correct.py")
    for name, override in (("preroll_out_of_range", dict(preroll_ms=9)),
                           ("preroll_negative", dict(preroll_ms=-1)),
                           ("unknown_device", dict(device="tpu")),
                           ("unknown_timing_clock", dict(timing_clock="sundial")),
                           ("unknown_numerics", dict(numerics="fp8"))):
        out.append(dict(name=f"requests/{name}", task=TASK_DIRS["tiny_relu"], candidate=correct,
                        expect=("runtime_error", "bad_request"), strict=True, **override))
    # Attacks on the trust boundary, under the runtime policy (no static rule refuses them).
    xdir = os.path.join(ROOT, "tests", "engine", "exploits")
    for name in sorted(os.listdir(xdir)):
        if not name.endswith((".py", ".cpp")):
            continue
        path = os.path.join(xdir, name)
        text = open(path).read()
        if device == "cpu" and "GPU only." in text:
            continue
        m = re.search(r"Policy:\s*(\w+)", text)
        native = re.search(r"Expected native code:\s*(yes|no)", text)
        strict_rule = re.search(r"Expected strict rule:\s*(\w+)", text)
        min_ms, drained_only = hack_min_candidate_ms(path)
        out.append(dict(name=f"exploits/{os.path.splitext(name)[0]}", task=hack_task(path),
                        candidate=path, expect=hack_expectation(path), strict=True,
                        min_cand_ms=min_ms, min_cand_drained_only=drained_only,
                        policy=m.group(1) if m else "",
                        native=(native.group(1) == "yes") if native else None,
                        strict_rule=strict_rule.group(1) if strict_rule else None,
                        stray="Expected stray killed:" in text,
                        planted="Expected planted nothing:" in text,
                        max_speedup=hack_max_speedup(path)))
    hdir = os.path.join(EX, "hacks")
    for name in sorted(os.listdir(hdir)):
        if not name.endswith((".py", ".cpp")):
            continue
        path = os.path.join(hdir, name)
        expect = hack_expectation(path)
        if expect is None:
            continue
        task = hack_task(path)
        strict = device != "cpu"
        if device == "cpu" and "tiny" not in (task or ""):
            if not (task or "kernelbench/level1/19_ReLU.py").endswith("19_ReLU.py"):
                continue  # no tiny stand-in for this task's signature
            task = TASK_DIRS["tiny_relu"]
        if task is None:
            print(f"SKIP hacks/{name[:-3]}: KernelBench tasks not found (set KFORGE_KERNELBENCH)")
            continue
        min_ms, drained_only = hack_min_candidate_ms(path)
        out.append(dict(name=f"hacks/{os.path.splitext(name)[0]}", task=task, candidate=path,
                        expect=expect, strict=strict, min_cand_ms=min_ms,
                        min_cand_drained_only=drained_only))
    return out


_local = threading.local()


def run_served(case, args):
    """The same evaluation through a fork server (one per thread, restarted if it died)."""
    server = getattr(_local, "server", None)
    if server is None or server.proc.poll() is not None:
        server = _local.server = serve_client.Server(args.eval, args.cache_dir)
    try:
        return server.evaluate(
            task_source=open(case["task"]).read(),
            candidate_source=open(case["candidate"]).read(),
            device=case["device"], task_name=case["task"],
            build_s=args.build_timeout, correctness_s=args.correctness_timeout,
            timing_s=args.timing_timeout,
            keep_samples=True, preroll_ms=case["preroll_ms"],
            timing_clock=case["timing_clock"], policy=case["policy"],
            numerics=case.get("numerics", ""))
    except (EOFError, BrokenPipeError) as e:
        _local.server = None
        return dict(verdict="<no result>", reason=f"fork server: {e}", rule="")


def run(case, args):
    if args.serve:
        return run_served(case, args)
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "result.json")
        cmd = [args.eval, "--task", case["task"], "--candidate", case["candidate"],
               "--device", case["device"], "--json", out,
               "--build-timeout", str(args.build_timeout),
               "--correctness-timeout", str(args.correctness_timeout),
               "--timing-timeout", str(args.timing_timeout), "--keep-samples",
               "--preroll-ms", str(case["preroll_ms"])]
        if case["timing_clock"]:
            cmd += ["--timing-clock", case["timing_clock"]]
        if case["policy"]:
            cmd += ["--policy", case["policy"]]
        if case.get("numerics"):
            cmd += ["--numerics", case["numerics"]]
        if args.cache_dir:
            cmd += ["--cache-dir", args.cache_dir]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
        if proc.returncode != 0 or not os.path.exists(out):
            return dict(verdict="<no result>", reason=proc.stderr[-2000:], rule="")
        return json.load(open(out))


def samples_match(result):
    """Every case asks for its timing samples: an `ok` result's samples must be the ones its
    statistics describe."""
    if result.get("verdict") != "ok":
        return True
    programs = ["reference", "candidate", "reference_call", "candidate_call"]
    if "speedup_device" in result:
        programs += ["reference_device", "candidate_device"]
    for program in programs:
        t = result.get(program, {})
        s = sorted(t.get("samples_ms", []))
        if len(s) != t.get("n") or not s or t.get("input_sets", 0) < 1:
            return False
        median = s[len(s) // 2] if len(s) % 2 else (s[len(s) // 2 - 1] + s[len(s) // 2]) / 2
        if abs(median - t["median_ms"]) > 1e-9 * max(1.0, median):
            return False
    return True


def expected_clock(case):
    """The call clock an `ok` result must report: the host's on the CPU, the judge's on a GPU
    (docs/evaluation.md, "The trust boundary")."""
    return "host" if case["device"] == "cpu" else "judge"


def clocks_hold(case, result):
    """An `ok` result carries both clocks as docs/evaluation.md ("Two clocks") says: the call
    clock's speedup always, made the speedup by default; the device clock's on a GPU unless the
    result says why not (CPU mode: never), and never for a process that reached native code."""
    if result.get("timing_clock") != expected_clock(case):
        return False
    if result.get("speedup_clock") != "call" or "speedup_call" not in result:
        return False
    if abs(result["speedup_call"] - result.get("speedup", 0)) > 1e-9 * result["speedup_call"]:
        return False
    if not result.get("speedup_ci_low", 0) <= result["speedup"] <= result.get("speedup_ci_high", 0):
        return False
    has_device = "speedup_device" in result
    if case["device"] == "cpu" or result.get("native_code"):
        return not has_device and bool(result.get("device_clock_note"))
    return has_device or bool(result.get("device_clock_note"))


def stray_killed(result):
    """The pid the candidate printed as KFORGE_STRAY_PID=N names no live process any more."""
    m = re.search(r"KFORGE_STRAY_PID=(\d+)", result.get("output_log", ""))
    if not m:
        return False
    try:
        with open(f"/proc/{m.group(1)}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"  # a zombie: dead, not reaped
    except FileNotFoundError:
        return True


def planted_nothing(result):
    """Every path the candidate printed as KFORGE_PLANTED=PATH (at least one, under a cache
    directory) is absent: its writes outside its own cache namespace failed."""
    paths = re.findall(r"KFORGE_PLANTED=(\S+)", result.get("output_log", ""))
    return bool(paths) and all(p.startswith("/") and not os.path.exists(p) for p in paths)


def judge(case, result):
    if not samples_match(result):
        return False
    if case.get("stray") and not stray_killed(result):
        return False
    if case.get("planted") and not planted_nothing(result):
        return False
    if result.get("verdict") == "ok" and not clocks_hold(case, result):
        return False
    # A candidate that slows the reference from its own processes gains nothing: the judge times
    # the reference alone once they are gone (docs/evaluation.md, "The reference alone").
    if case.get("max_speedup") is not None and result.get("verdict") == "ok" and \
            not result.get("speedup", 0) <= case["max_speedup"]:
        return False
    if case.get("native") is not None and result.get("verdict") not in (None, "<no result>") and \
            bool(result.get("native_code")) != case["native"]:
        return False
    # Under `runtime`, the static rule `strict` would have fired is said, not enforced
    # ("none": the source fires none).
    if case.get("strict_rule") is not None and result.get("verdict") not in (None, "<no result>") \
            and (result.get("strict_rule") or "none") != case["strict_rule"]:
        return False
    # Ten milliseconds of sleep a call against a ReLU of 4096 floats: the call clock's slow stop
    # ends its sampling after 5 pairs, settled, and says so (docs/evaluation.md).
    if case.get("slow_stop") and result.get("verdict") == "ok" and not (
            result.get("candidate_call", {}).get("n") == 5 and
            result.get("candidate_call", {}).get("settled") and
            "slow: " in result.get("timing_clock_note", "")):
        return False
    if result.get("verdict") == "ok" and "input_sets" in case and \
            result.get("candidate", {}).get("input_sets") != case["input_sets"]:
        return False
    want_verdict, want_rule = case["expect"]
    got_verdict, got_rule = result.get("verdict"), result.get("rule") or None
    if case["device"] != "cpu" and got_rule in ("no_gpu", "gpu_unavailable") and \
            want_rule != got_rule:
        return False  # a case expecting a runtime error on a GPU must not pass for want of one
    exact = got_verdict == want_verdict and (want_rule is None or got_rule == want_rule)
    if case["strict"]:
        min_ms = case.get("min_cand_ms")
        if case.get("min_cand_drained_only") and case["preroll_ms"] > 0 and \
                case["timing_clock"] == "events":
            min_ms = None  # a known limit of the pre-roll (docs/decisions.md)
        if exact and got_verdict == "ok" and min_ms is not None:
            # Both clocks (the device clock's work time, since session 23, must not leave out
            # host work between a copy out and a copy back).
            timed = ["candidate"] + (["candidate_device"] if "speedup_device" in result else [])
            return all(result.get(p, {}).get("median_ms", 0) >= min_ms for p in timed)
        return exact
    # CPU mode, hacks written for a GPU task run against tiny_relu: whatever the trick, it must
    # never come out ok (most cannot run their kernels at all without a GPU: rule no_gpu).
    return exact or got_verdict not in ("ok", None, "<no result>")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--eval", required=True)
    p.add_argument("--device", default="cpu")
    p.add_argument("--out", default="")
    p.add_argument("--only", default="", help="comma-separated substrings of case names")
    p.add_argument("--skip", default="", help="comma-separated substrings of case names")
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--cache-dir", default="")
    p.add_argument("--correctness-timeout", type=float, default=20)
    p.add_argument("--build-timeout", type=float, default=300,
                   help="the build stage's limit (load_inline compiles torch's headers: a "
                        "minute on 2 CPUs)")
    p.add_argument("--timing-timeout", type=float, default=30)
    p.add_argument("--preroll-ms", type=float, default=0,
                   help="EvalRequest.timing_preroll_ms for every case (0: none)")
    p.add_argument("--timing-clock", default="", choices=("", "activity", "events"),
                   help="EvalRequest.timing_clock for every case (empty: the engine's default)")
    p.add_argument("--policy", default="strict", choices=("", "strict", "runtime"),
                   help="EvalRequest.policy for the cases that do not name one (the example "
                        "hacks state what the static rules of `strict` answer; the exploits "
                        "name `runtime`)")
    p.add_argument("--serve", action="store_true",
                   help="send every case to one `kforge-eval --serve` instead of a process each")
    args = p.parse_args()
    patterns = args.only.split(",")
    todo = [c for c in cases(args.device)
            if any(p in c["name"] for p in patterns)
            and not (args.skip and any(p in c["name"] for p in args.skip.split(",")))]
    for c in todo:  # what a case does not set itself, the command line does
        c.setdefault("device", args.device)
        c.setdefault("preroll_ms", args.preroll_ms)
        c.setdefault("timing_clock", args.timing_clock)
        c.setdefault("policy", args.policy)
    if args.device != "cpu":
        args.jobs = 1  # one timed evaluation per GPU at a time
    log = open(args.out, "w") if args.out else None
    passed = failed = 0
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        for case, result in zip(todo, pool.map(lambda c: run(c, args), todo)):
            ok = judge(case, result)
            passed += ok
            failed += not ok
            speed = result.get("speedup")
            extra = f" speedup={speed:.3f}" if isinstance(speed, (int, float)) else ""
            if case.get("min_cand_ms") is not None and result.get("verdict") == "ok" and \
                    "candidate" in result:
                extra += (f" candidate={result['candidate']['median_ms']:.3f}ms"
                          f" (at least {case['min_cand_ms']} ms)")
            if result.get("verdict") == "ok" and result.get("candidate_claim"):
                extra += (f" claim={result['candidate_claim'].get('median_ms', 0):.4f}ms"
                          f" judged={result['candidate'].get('median_ms', 0):.4f}ms")
            print(f"{'PASS' if ok else 'FAIL'} {case['name']}: got {result.get('verdict')}"
                  f"/{result.get('rule') or '-'} want {case['expect'][0]}/{case['expect'][1] or '-'}"
                  f"{extra}", flush=True)
            if not ok:
                print("    reason: " + str(result.get("reason", ""))[:600], flush=True)
            if log:
                log.write(json.dumps(dict(case=case["name"], expect=case["expect"],
                                          passed=ok, result=result)) + "\n")
    print(f"{passed} passed, {failed} failed")
    sys.exit(1 if failed or not todo else 0)


if __name__ == "__main__":
    main()
