"""scripts/ab_summary.py: the paired A/B of gpu_ab.sh's runs, on made-up rows."""
import importlib.util
import json
import os

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def load_module():
    spec = importlib.util.spec_from_file_location(
        "ab_summary", os.path.join(ROOT, "scripts", "ab_summary.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def write_run(tmp_path, name, rows):
    d = tmp_path / name
    d.mkdir()
    (d / "compat.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(d)


def row(name, turn, verdict="ok", speedup=None):
    r = dict(name=name, kforge_verdict=verdict, kforge_stages=dict(gpu_turn_s=turn))
    if speedup is not None:
        r["kforge_speedup_device"] = speedup
    return r


def test_pairs_candidates_ok_in_every_run_and_averages_each_arm(tmp_path):
    mod = load_module()
    runs = [write_run(tmp_path, "on1", [row("a", 1.0), row("b", 2.0), row("c", 9.0)]),
            write_run(tmp_path, "off1", [row("a", 1.5), row("b", 2.5), row("c", 9.0, "incorrect")]),
            write_run(tmp_path, "on2", [row("a", 1.2), row("b", 2.2)]),
            write_run(tmp_path, "off2", [row("a", 1.3), row("b", 2.7)])]
    lines = mod.summary(runs, ("gpu_turn_s",))
    assert lines[0].startswith("on1: 3 ok")
    assert lines[1].startswith("off1: 2 ok")  # c was not ok there
    assert "paired over 2 candidates" in lines[4]
    # on: a 1.1, b 2.1 -> 3.2; off: a 1.4, b 2.6 -> 4.0; saved 0.8 (20% of off).
    turn = lines[5].split()
    assert turn[0] == "gpu_turn_s" and turn[2] == "3.20" and turn[5] == "4.00"
    assert turn[8] == "0.80" and lines[5].endswith("(+20.0%)")


def test_each_arms_device_speedup_spread_between_its_runs(tmp_path):
    mod = load_module()
    runs = [write_run(tmp_path, "on1", [row("a", 1, speedup=1.00), row("b", 1, speedup=2.0)]),
            write_run(tmp_path, "off1", [row("a", 1, speedup=1.00), row("b", 1, speedup=2.0)]),
            write_run(tmp_path, "on2", [row("a", 1, speedup=1.02), row("b", 1, speedup=2.0)]),
            write_run(tmp_path, "off2", [row("a", 1, speedup=1.10), row("b", 1, speedup=2.2)])]
    last = mod.summary(runs, ("gpu_turn_s",))[-1]
    # max / min - 1: on a 1.02 / 1.00 = 2%, b 0; off a 1.10 / 1.00 = 10%, b 2.2 / 2.0 = 10%.
    assert last.startswith("  speedup_device spread between an arm's runs")
    assert "on 1.00% / 2.00% over 2" in last and "off 10.00% / 10.00% over 2" in last
    # One run of an arm: no spread line.
    assert "spread" not in mod.summary(runs[:3], ("gpu_turn_s",))[-1]


def test_each_arms_median_preroll(tmp_path):
    mod = load_module()

    def with_preroll(name, ms):
        r = row(name, 1)
        r["kforge_timing_preroll_ms"] = ms
        return r
    runs = [write_run(tmp_path, "on1", [with_preroll("a", 0.5), with_preroll("b", 0.7)]),
            write_run(tmp_path, "off1", [with_preroll("a", 1.4), with_preroll("b", 5.0)]),
            write_run(tmp_path, "on2", [with_preroll("a", 0.7), with_preroll("b", 0.9)]),
            write_run(tmp_path, "off2", [with_preroll("a", 1.6), with_preroll("b", 5.0)])]
    lines = mod.summary(runs, ("gpu_turn_s",))
    # on: a 0.6, b 0.8 -> 0.7; off: a 1.5, b 5.0 -> 3.25.
    assert "  timing_preroll_ms, median: on 0.700 ms, off 3.250 ms" in lines
    # No pre-roll recorded (CPU mode, the call clock): no line.
    plain = [write_run(tmp_path, n + "x", [row("a", 1)]) for n in ("on", "off")]
    assert not any("timing_preroll_ms" in line for line in mod.summary(plain, ("gpu_turn_s",)))


def test_a_missing_run_is_said_and_one_arm_alone_is_not_compared(tmp_path):
    mod = load_module()
    runs = [write_run(tmp_path, "on1", [row("a", 1.0)]), str(tmp_path / "off1")]
    lines = mod.summary(runs, ("gpu_turn_s",))
    assert lines[1] == "off1: no rows (not run)"
    assert lines[-1] == "paired: needs a run of each arm"


def test_a_run_must_name_its_arm(tmp_path):
    mod = load_module()
    with pytest.raises(ValueError):
        mod.arm(str(tmp_path / "warm1"))
