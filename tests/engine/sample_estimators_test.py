"""scripts/sample_estimators.py: the run-to-run speedup spreads it recomputes from kept samples
(session 28), which the next GPU call prints beside compat_table.txt."""
import pytest

from check_util import load_script

mod = load_script("sample_estimators")


def evaluation(ref_ms, cand_ms, clock="device", verdict="ok"):
    return {"verdict": verdict, f"reference_{clock}": {"samples_ms": ref_ms},
            f"candidate_{clock}": {"samples_ms": cand_ms}}


def row(name, *evals):
    first = {"kforge_" + k: v for k, v in evals[0].items()}
    return dict(name=name, **first, kforge_repeats=list(evals[1:]))


def steady(speedup, n=5):
    """An evaluation whose every statistic gives `speedup`: constant samples."""
    return evaluation([speedup * 0.01] * n, [0.01] * n)


def test_each_candidates_spread_is_over_its_ok_evaluations_with_samples():
    rows = [row("a", steady(2.0), steady(2.02), steady(2.04)),
            row("b", steady(1.0), steady(1.0), steady(1.0)),
            row("c", steady(1.0), steady(1.1),
                evaluation([0.5] * 5, [0.01] * 5, verdict="incorrect"),  # not ok: left out
                evaluation([0.5, 0.5], [0.01, 0.01])),  # fewer than 3 samples: left out
            row("d", steady(3.0)),  # one evaluation: no spread
            row("e", steady(3.0), evaluation([0.03] * 5, [0.01] * 5, clock="call"))]
    spreads, per_row, _ = mod.spreads_of(rows, "device")
    got = {name: (s["median"], n) for _, name, s, n in per_row}
    assert set(got) == {"a", "b", "c"}
    assert got["a"][0] == pytest.approx(2.0) and got["a"][1] == 3
    assert got["b"][0] == pytest.approx(0.0)
    assert got["c"][0] == pytest.approx(10.0) and got["c"][1] == 2
    for k in mod.NAMES:  # constant samples: every statistic agrees
        assert sorted(spreads[k]) == pytest.approx([0.0, 2.0, 10.0])
    assert mod.nearest_rank(sorted(spreads["median"]), 0.9) == pytest.approx(10.0)


def test_the_statistics_of_one_programs_samples():
    s = mod.statistics([1.0, 2.0, 3.0, 4.0, 100.0])
    assert s["median"] == 3.0
    assert s["iqm"] == pytest.approx(3.0)  # 2, 3, 4: the outlier and the smallest trimmed
    assert s["mean"] == pytest.approx(22.0)
    assert 2.0 < s["hd"] < 22.0  # every order statistic weighs in, the middle most
    assert sum(mod.betainc_weights(7)) == pytest.approx(1.0)
    symmetric = mod.statistics([1.0, 2.0, 3.0, 4.0, 5.0])
    assert symmetric["hd"] == pytest.approx(3.0)


def test_nearest_rank_matches_compat_tables_p90():
    values = [0.1 * i for i in range(1, 33)]  # 32 candidates
    assert mod.nearest_rank(values, 0.9) == values[28]  # the 29th: ceil(0.9 * 32)
    assert mod.nearest_rank([5.0], 0.9) == 5.0


def test_device_samples_on_cuptis_tick_are_counted():
    tick = 32e-6  # ms
    rows = [row("a", evaluation([72 * tick] * 3, [74 * tick, 76 * tick, 0.0023]),
                evaluation([72 * tick] * 3, [74 * tick] * 3))]
    _, _, ticks = mod.spreads_of(rows, "device")
    assert ticks == [11, 12]
    assert mod.spreads_of(rows, "call")[2] == [0, 0]
