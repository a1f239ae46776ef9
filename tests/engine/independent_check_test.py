"""scripts/independent_check.py in CPU mode (host timer): two tiny KernelBench-format tasks with
correct candidates, hand-made input rows in both input formats, a candidate that raises, one
that kills its process and one that hangs: the report's structure, finite positive bare
speedups, a failure per bad row instead of a crash.

  python -m pytest -q tests/engine/independent_check_test.py
"""
import importlib.util
import json
import math
import os
import subprocess
import sys

import pytest

SCRIPT = os.path.join(os.path.dirname(__file__), "..", "..", "scripts", "independent_check.py")

# The project's own tiny ReLU task (examples/tasks/tiny), not a copy of it.
RELU_TASK = open(os.path.join(os.path.dirname(__file__), "..", "..", "examples", "tasks", "tiny",
                              "tiny_relu.py")).read()

RELU_CAND = '''import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return x.clamp_min(0)
'''

LINEAR_TASK = '''import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.lin = nn.Linear(n, n)

    def forward(self, x):
        return torch.sigmoid(self.lin(x)) * 2.0


def get_inputs():
    return [torch.randn(32, 128)]


def get_init_inputs():
    return [128]
'''

LINEAR_CAND = '''import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.lin = nn.Linear(n, n)  # the same seed: the same weights as Model's

    def forward(self, x):
        return torch.addmm(self.lin.bias, x, self.lin.weight.t()).sigmoid_().mul_(2.0)
'''

HANGS = RELU_CAND.replace("return x.clamp_min(0)", "import time\n        time.sleep(600)")


def load_module():
    spec = importlib.util.spec_from_file_location("independent_check", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def write_jsonl(path, rows):
    with open(path, "w") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")


def run_check(tmp_path, rows, *extra, corpus=None):
    inp, out = tmp_path / "rows.jsonl", tmp_path / "out"
    write_jsonl(inp, rows)
    cmd = [sys.executable, SCRIPT, "--input", str(inp), "--out", str(out), "--device", "cpu",
           "--work-dir", str(tmp_path / "work"), "--extensions-root", "", "--samples", "15",
           "--corpus", str(corpus or tmp_path / "no_corpus.jsonl"), *extra]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stdout + p.stderr
    results = [json.loads(line) for line in open(out / "independent_check.jsonl")]
    report = json.load(open(out / "independent_check.json"))
    return p.stdout, results, report


def test_cpu_mode_report(tmp_path):
    corpus = tmp_path / "corpus.jsonl"
    write_jsonl(corpus, [dict(level_id=1, task_id=7, ref_code=LINEAR_TASK,
                              custom_code=LINEAR_CAND, score_default_a100=1.0)])
    rows = [
        # stored results, flat
        dict(name="relu", task_source=RELU_TASK, candidate_source=RELU_CAND, verdict="ok",
             speedup=1.05, speedup_call=1.05, speedup_clock="call"),
        # a compat.jsonl row: sources from the corpus by name
        dict(name="1_7", level=1, task=7, kforge_verdict="ok", kforge_speedup=0.95,
             kforge_speedup_call=0.95, kforge_speedup_clock="call"),
        # stored results with an EvalResult inside, lowerCamelCase
        dict(name="relu_camel", result=dict(verdict="ok", speedupCall=1.0, speedup=1.0,
                                            speedupClock="call", taskSource=RELU_TASK,
                                            candidateSource=RELU_CAND)),
        dict(name="raises", task_source=RELU_TASK, verdict="ok", speedup=1.0,
             candidate_source="raise RuntimeError('candidate says no')"),
        dict(name="exits", task_source=RELU_TASK, verdict="ok", speedup=1.0,
             candidate_source="import os\nos._exit(3)\n"),
        dict(name="not_ok", task_source=RELU_TASK, candidate_source=RELU_CAND,
             verdict="incorrect"),
    ]
    stdout, results, report = run_check(tmp_path, rows, "--timeout", "240", corpus=corpus)
    by_name = {r["name"]: r for r in results}
    assert set(by_name) == {"relu", "1_7", "relu_camel", "raises", "exits"}  # only ok rows
    for name in ("relu", "1_7", "relu_camel"):
        r = by_name[name]
        assert r["status"] == "ok", r
        assert r["method"] == "host"
        assert math.isfinite(r["bare_speedup"]) and r["bare_speedup"] > 0
        assert r["reference_ms"] > 0 and r["candidate_ms"] > 0
        assert r["compared_to"] == "speedup_call"  # CPU mode: the host timer's clock
        assert r["bare_call_speedup"] == r["bare_speedup"] and r["device_rel_diff"] is None
        assert math.isfinite(r["rel_diff"]) and r["rel_diff"] == r["call_rel_diff"]
        assert r["agree_2pct"] in (True, False)
        assert r["outputs_close"] is True
    assert by_name["1_7"]["kforge_speedup_call"] == 0.95
    assert by_name["relu_camel"]["kforge_speedup_call"] == 1.0
    assert by_name["raises"]["status"] == "failed"
    assert "candidate says no" in by_name["raises"]["error"]
    assert by_name["exits"]["status"] == "failed"
    assert "exit status 3" in by_name["exits"]["error"]
    s = report["summary"]
    assert s["sampled"] == 5 and s["measured"] == 3 and s["failed"] == 2
    assert s["compared"] == 3 and s["methods"] == {"host": 3}
    assert 0 <= s["agree_2pct"] <= 3 and s["median_abs_rel_diff"] >= 0
    assert "== independent check:" in stdout and "measured 3/5" in stdout


def test_timeout_is_a_row(tmp_path):
    rows = [dict(name="hangs", task_source=RELU_TASK, candidate_source=HANGS, verdict="ok",
                 speedup=1.0)]
    _, results, report = run_check(tmp_path, rows, "--timeout", "8")
    assert results[0]["status"] == "timeout" and results[0]["bare_speedup"] is None
    assert report["summary"]["failed"] == 1


def test_sample_is_deterministic():
    mod = load_module()
    rows = [dict(name=f"r{i}", task_source="t", candidate_source="c",
                 verdict="ok" if i % 3 else "incorrect") for i in range(40)]
    a, b = mod.sample(rows, 5, 14), mod.sample(rows, 5, 14)
    assert [r["name"] for r in a] == [r["name"] for r in b] and len(a) == 5
    assert all(r["verdict"] == "ok" for r in a)
    assert len(mod.sample(rows, 0, 14)) == sum(r["verdict"] == "ok" for r in rows)


@pytest.mark.parametrize("row", [
    dict(kforge_verdict="ok", name="1_1", kforge_speedup_device=2.0, kforge_speedup=2.0),
    dict(verdict="ok", speedupDevice=2.0, speedup=2.0, taskSource="t", candidateSource="c"),
    dict(result=dict(verdict="ok", speedup_device=2.0, speedup=2.0), task_source="t",
         candidate_source="c"),
])
def test_input_formats(row):
    r = load_module().normalise(row, {"1_1": ("t", "c")}, 0)
    assert r["verdict"] == "ok" and r["speedup_device"] == 2.0
    assert r["task_source"] == "t" and r["candidate_source"] == "c"


def test_gpu_comparison_logic(monkeypatch):
    """check_row on a GPU without one: the child's answers are made up here; a failed capture
    is measured again with events in a fresh child."""
    mod = load_module()
    answers = [dict(status="ok", capture_failed=True, capture_error="RuntimeError('sync')",
                    wall_s=1.0),
               dict(status="ok", method="events", reference_ms=2.0, candidate_ms=1.0,
                    reference_call_ms=4.0, candidate_call_ms=2.5, wall_s=2.0)]
    methods = []

    def fake_child(args, row, method, deadline):
        methods.append(method)
        return dict(answers.pop(0))
    monkeypatch.setattr(mod, "run_child", fake_child)
    args = mod.parse_args(["--input", "x", "--out", "y"])
    row = dict(name="k", speedup=2.03, speedup_device=2.03, speedup_call=1.5,
               speedup_clock="device", speedup_device_busy=1.9, reference_device_busy_ms=2.02,
               candidate_device_busy_ms=0.995)
    r = mod.check_row(args, row, math.inf)
    assert methods == ["graph", "events"] and r["method"] == "events"
    assert r["capture_error"] == "RuntimeError('sync')" and r["wall_s"] == 3.0
    assert r["bare_speedup"] == 2.0 and r["bare_call_speedup"] == 1.6
    assert r["compared_to"] == "speedup_device" and r["agree_2pct"] is True
    assert abs(r["device_rel_diff"] - 0.015) < 1e-9 and abs(r["call_rel_diff"] + 0.0625) < 1e-9
    assert abs(r["busy_rel_diff"] + 0.05) < 1e-9 and r["kforge_speedup_device_busy"] == 1.9
    # Which side the difference comes from: kforge's busy time of each over its bare time.
    assert abs(r["reference_side_rel_diff"] - 0.01) < 1e-9
    assert abs(r["candidate_side_rel_diff"] + 0.005) < 1e-9
    s = mod.summary([r, dict(name="s", status="skipped")], "cuda")
    assert s["agree_2pct_device_clock"] == 1 and s["compared_device_clock"] == 1
    assert s["call_agree_2pct"] == 0 and s["skipped"] == 1 and s["methods"] == {"events": 1}
    assert s["busy_compared"] == 1 and s["busy_agree_2pct"] == 0
    assert abs(s["median_reference_side_rel_diff"] - 0.01) < 1e-9
