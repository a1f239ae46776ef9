"""scripts/between_processes.py on hand-made compat rows: which repeats fall outside the first
run's interval, the stored interval (results since session 12) against the one recomputed with
the between-process rule (older results), the max_sd cap, exclusions, and the refit of `a`.

  python3 tests/engine/between_processes_test.py      (or python -m pytest -q on this file)
"""
import contextlib
import io
import json
import math
import os
import pathlib
import subprocess
import sys
import tempfile

from check_util import ROOT, load_script

SCRIPT = os.path.join(ROOT, "scripts", "between_processes.py")


def load_module():
    return load_script("between_processes")


CALL, DEVICE = load_module().RULES["call"], load_module().RULES["device"]  # the engine's (r, a us)


def rule_interval(ref, cand, rule, max_sd=0.5):
    """what the rule gives a run: the order-statistic bounds widened in log space, in
    quadrature, by 1.96 sqrt(2) tau, tau = min(max_sd, sqrt(r^2 + a^2 (1/t_ref^2 + 1/t_cand^2)))"""
    r, a_us = rule
    s = ref[0] / cand[0]
    below = math.log(s / min(s, ref[1] / cand[2]))
    above = math.log(max(s, ref[2] / cand[1]) / s)
    t_ref, t_cand = ref[0] * 1000, cand[0] * 1000
    tau = min(max_sd, math.sqrt(r * r + a_us * a_us * (1 / t_ref ** 2 + 1 / t_cand ** 2)))
    w = 1.959964 * math.sqrt(2) * tau
    return s * math.exp(-math.sqrt(below ** 2 + w ** 2)), s * math.exp(math.sqrt(above ** 2 + w ** 2))


def stats(median, rel):
    return dict(median_ms=median, median_ci_low_ms=median * (1 - rel),
                median_ci_high_ms=median * (1 + rel), n=20)


def evaluation(call=None, device=None, verdict="ok", stored=None):
    """call/device: (reference ms, speedup, ci rel); stored: {clock: (low, high)}"""
    ev = dict(verdict=verdict)
    for clock, spec in (("call", call), ("device", device)):
        if spec:
            ref, s, rel = spec
            ev.update({f"reference_{clock}": stats(ref, rel),
                       f"candidate_{clock}": stats(ref / s, rel), f"speedup_{clock}": s})
    for clock, (lo, hi) in (stored or {}).items():
        ev.update({f"speedup_{clock}_ci_low": lo, f"speedup_{clock}_ci_high": hi,
                   f"speedup_{clock}_between_sd": 0.01})
    return ev


def row(name, first, repeats):
    out = dict(name=name, **{"kforge_" + k: v for k, v in first.items()})
    out["kforge_repeats"] = [dict(r, round=i + 1) for i, r in enumerate(repeats)]
    return out


def bounds(ref_ms, s, rel, rule):
    r = (ref_ms, ref_ms * (1 - rel), ref_ms * (1 + rel))
    c = (ref_ms / s, ref_ms / s * (1 - rel), ref_ms / s * (1 + rel))
    return rule_interval(r, c, rule)


def write_rows(path):
    # 1_1, an older result (no stored per-clock interval), 0.4 ms: one repeat just inside the
    # rule's interval and one just outside, on each clock (tau below max_sd).
    clo, chi = bounds(0.4, 2.0, 0.01, CALL)
    dlo, dhi = bounds(0.4, 2.0, 0.0005, DEVICE)
    a = row("1_1", evaluation((0.4, 2.0, 0.01), (0.4, 2.0, 0.0005)),
            [evaluation((0.4, clo * 1.01, 0.01), (0.4, dlo * 1.001, 0.0005)),
             evaluation((0.4, chi * 1.01, 0.01), (0.4, dhi * 1.001, 0.0005))])
    # 1_2, a result with its own intervals, 2 ms: they, not the rule's, judge the repeats.
    rlo, rhi = bounds(2.0, 1.0, 0.005, CALL)
    assert rhi < 1.25 < 1.3  # 1.25: inside the stored interval, outside the rule's
    b = row("1_2", evaluation((2.0, 1.0, 0.005), (2.0, 1.0, 0.0005),
                              stored=dict(call=(0.7, 1.3), device=(0.99, 1.01))),
            [evaluation((2.0, 1.25, 0.005), (2.0, 1.005, 0.0005)),
             evaluation((2.0, 1.4, 0.005), (2.0, 0.98, 0.0005)),
             evaluation((2.0, 0.65, 0.005))])
    # 1_3, 10 us, call clock only: tau at max_sd (a factor e^(1.96 sqrt2 0.5) = 4.0); a repeat
    # a little beyond that, and one that failed (not counted).
    _, hi3 = bounds(0.01, 2.0, 0.01, CALL)
    assert abs(math.log(hi3 / 2.0) - 1.959964 * math.sqrt(2) * 0.5) < 0.01
    c = row("1_3", evaluation((0.01, 2.0, 0.01)),
            [evaluation((0.01, 9.0, 0.01), verdict="incorrect"), evaluation((0.01, hi3 * 1.02, 0.01))])
    with open(path, "w") as f:
        for r in (a, b, c):
            f.write(json.dumps(r) + "\n")


def run(tmp_path, *extra):
    data, out = str(tmp_path / "rows.jsonl"), str(tmp_path / "out.json")
    write_rows(data)
    with contextlib.redirect_stdout(io.StringIO()) as text:
        load_module().main([data, "--label", "t", "--json", out, *extra])
    return json.load(open(out))["clocks"], text.getvalue()


def test_repeats_outside_follow_the_rule_or_the_stored_interval(tmp_path):
    res, text = run(tmp_path)
    call, device = res["call"], res["device"]
    assert (call["candidates"], call["repeats"], call["outside"]) == (3, 6, 4)  # 1, 2, 1
    assert (call["first_runs_stored"], call["first_runs_recomputed"]) == (1, 2)
    assert call["stored_off_rule"] == 1 and call["first_runs_tau_at_max_sd"] == 1
    bins = {k: (v["repeats"], v["outside"]) for k, v in call["by_reference_median"].items()}
    assert bins == {"<0.1 ms": (1, 1), "0.1-1 ms": (2, 1), ">1 ms": (3, 2)}
    assert abs(call["by_reference_median"]["<0.1 ms"]["median_half_width_log"] - 1.386) < 0.01
    assert (device["candidates"], device["repeats"], device["outside"]) == (2, 4, 2)
    assert (device["first_runs_stored"], device["first_runs_recomputed"]) == (1, 1)
    # 1_2's spread on the call clock: 1.4 / 0.65 - 1
    assert abs(call["by_reference_median"][">1 ms"]["spread_median"] - (1.4 / 0.65 - 1)) < 1e-9
    assert "1 stored" in text and "2 recomputed" in text


def test_recompute_ignores_stored_intervals_and_exclusions_drop_candidates(tmp_path):
    res, _ = run(tmp_path, "--recompute")
    assert res["call"]["first_runs_stored"] == 0 and res["call"]["outside"] == 5  # 1.25 too
    res, _ = run(tmp_path, "--exclude-in", "t:1_3", "--exclude", "1_1")
    assert (res["call"]["candidates"], res["call"]["repeats"], res["call"]["outside"]) == (1, 3, 2)
    assert res["device"]["repeats"] == 2


def test_the_refit_a_is_where_the_repeats_start_to_fall_inside(tmp_path):
    res, _ = run(tmp_path)
    # 1_3's repeat needs a tau above max_sd: no `a` covers 95% of the call clock's repeats.
    assert res["call"]["refit"]["a_us"] is None
    fit = res["device"]["refit"]
    assert fit["a_us"] > 0 and fit["boot_low"] <= fit["a_us"] <= fit["boot_high"]
    # Four repeats: 95% is all of them, so just above the fit none is outside, just below one.
    for factor, outside in ((1.001, 0), (0.999, 1)):
        res, _ = run(tmp_path, "--recompute", "--device-rule", f"0.005,{fit['a_us'] * factor}")
        assert res["device"]["outside"] == outside, (factor, res["device"])


def test_the_command_line(tmp_path):
    data = str(tmp_path / "rows.jsonl")
    write_rows(data)
    p = subprocess.run([sys.executable, SCRIPT, data, "--reps", "50"], capture_output=True,
                       text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert "outside 4/6" in p.stdout and "outside 2/4" in p.stdout


def main():
    failed = 0
    for name, fn in sorted(globals().items()):
        if name.startswith("test_") and callable(fn):
            with tempfile.TemporaryDirectory() as d:
                try:
                    fn(pathlib.Path(d))
                    print(f"ok   {name}")
                except Exception as e:  # noqa: BLE001 (report every failure)
                    failed += 1
                    print(f"FAIL {name}: {type(e).__name__}: {e}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
