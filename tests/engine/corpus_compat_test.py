"""scripts/corpus_compat.py's parts that need no GPU: choosing candidates from a corpus, the
order of GPU turns (a ready KernelBench turn before kforge's first passes, so KB children cannot
hold every --kb-prefetch slot while kforge's turns take the budget: session 11, call 2), and
the table of where the timing stage went."""
import datetime
import json
import time

from check_util import load_script


def load_module():
    return load_script("corpus_compat")


def write_corpus(path):
    rows = [(1, 1, "import torch\n"), (1, 2, "from torch.utils.cpp_extension import load_inline\n"),
            (2, 3, "import torch\n"), (3, 4, "import torch.utils.cpp_extension\n")]
    with open(path, "w") as f:
        for level, task, code in rows:
            f.write(json.dumps(dict(level_id=level, task_id=task, ref_code="# ref\n",
                                    custom_code=code)) + "\n")


def test_candidates_are_chosen_by_name_by_what_they_build_and_skipped_by_name(tmp_path):
    mod = load_module()
    corpus = str(tmp_path / "c.jsonl")
    write_corpus(corpus)
    names = lambda cs: [c["name"] for c in cs]  # noqa: E731
    assert names(mod.load_corpus(corpus, set(), 0)) == ["1_1", "1_2", "2_3", "3_4"]
    assert names(mod.load_corpus(corpus, set(), 0, "yes")) == ["1_2", "3_4"]
    assert names(mod.load_corpus(corpus, set(), 0, "no")) == ["1_1", "2_3"]
    assert names(mod.load_corpus(corpus, {"1_2", "2_3"}, 0, "any", {"2_3"})) == ["1_2"]
    assert names(mod.load_corpus(corpus, set(), 1, "yes")) == ["1_2"]
    args = mod.parse_args(["--out", str(tmp_path / "o"), "--device", "cpu", "--corpus", corpus,
                           "--builds", "no", "--skip", "1_1,9_9"])
    assert args.builds == "no" and args.skip == {"1_1", "9_9"}


def test_either_harness_can_be_left_out_per_candidate(tmp_path):
    # Session 13 completed a comparison over three calls: each ran only the side still missing.
    mod = load_module()
    corpus = str(tmp_path / "c.jsonl")
    write_corpus(corpus)
    args = mod.parse_args(["--out", str(tmp_path / "o"), "--device", "cpu", "--corpus", corpus,
                           "--kb-skip", "1_1,2_3", "--kforge-skip", "1_2"])
    assert args.kb_skip == {"1_1", "2_3"} and args.kforge_skip == {"1_2"}
    cands = mod.load_corpus(corpus, set(), 0)
    assert mod.Run(args, cands).turns_left == 3  # CPU mode: KB is skipped for all
    args.skip_kb = False
    assert [mod.kforge_runs(args, c) for c in cands] == [True, False, True, True]
    assert [mod.kb_runs(args, c) for c in cands] == [False, True, False, True]
    assert mod.Run(args, cands).turns_left == 5


def test_a_ready_kb_turn_goes_before_kforges_first_passes(tmp_path):
    mod = load_module()
    corpus = str(tmp_path / "c.jsonl")
    write_corpus(corpus)
    args = mod.parse_args(["--out", str(tmp_path / "o"), "--device", "cpu", "--corpus", corpus])
    cands = mod.load_corpus(corpus, set(), 0)
    run = mod.Run(args, cands)
    run.enqueue("1_1", 0, "kforge 1_1")
    run.enqueue("1_2", 0, "kforge 1_2")
    run.enqueue("3_4", 1, "kb 3_4")  # the last candidate's KB child, ready
    run.enqueue("1_1", 0, "kforge repeat 1_1", round_=1)
    order = [run.gpu.get()[5] for _ in range(4)]
    assert order == ["kb 3_4", "kforge 1_1", "kforge 1_2", "kforge repeat 1_1"]


def test_the_two_harnesses_alternate_while_both_have_turns_ready(tmp_path):
    mod = load_module()
    corpus = str(tmp_path / "c.jsonl")
    write_corpus(corpus)
    args = mod.parse_args(["--out", str(tmp_path / "o"), "--device", "cpu", "--corpus", corpus])
    run = mod.Run(args, mod.load_corpus(corpus, set(), 0))
    for name, kind, round_ in (("1_1", 0, 0), ("1_2", 0, 0), ("2_3", 1, 0), ("3_4", 1, 0),
                               ("1_1", 0, 1)):
        run.enqueue(name, kind, f"{('kforge', 'kb')[kind]} {name} r{round_}", round_=round_)
    ready = []
    while not run.gpu.empty():
        ready.append(run.gpu.get_nowait())
    order, last_kind, last_kforge = [], None, None
    while ready:
        item = mod.next_turn(ready, last_kind, last_kforge)
        ready.remove(item)
        order.append(item[5])
        last_kind = item[2]
        last_kforge = item[4] if item[2] == 0 else last_kforge
    # KB first, then kforge after each KB turn, the repeat last (not after its own candidate's
    # turn while something else was ready).
    assert order == ["kb 2_3 r0", "kforge 1_1 r0", "kb 3_4 r0", "kforge 1_2 r0", "kforge 1_1 r1"]


def test_kb_lanes_run_kbs_turns_beside_kforges(tmp_path):
    # --kb-lanes 1: KB's turns have their own queue and GPU thread, so a KB turn runs while a
    # kforge turn is still running (a verdicts-only run; the table says so).
    import threading
    mod = load_module()
    corpus = str(tmp_path / "c.jsonl")
    write_corpus(corpus)
    args = mod.parse_args(["--out", str(tmp_path / "o"), "--device", "cpu", "--corpus", corpus,
                           "--kb-lanes", "1"])
    args.skip_kb = False
    run = mod.Run(args, mod.load_corpus(corpus, {"1_1", "2_3"}, 0))
    assert run.turns_left == 4 and run.gpu_kb is not run.gpu
    kb_ran = threading.Event()
    log = []

    def kforge(state, name):
        log.append("kforge " + name + " start")
        assert kb_ran.wait(timeout=10), "KB's turn did not run beside kforge's"
        log.append("kforge " + name + " end")

    def kb(state, name):
        log.append("kb " + name)
        kb_ran.set()

    for name in ("1_1", "2_3"):
        run.enqueue(name, 0, lambda s, n=name: kforge(s, n))
        run.enqueue(name, 1, lambda s, n=name: kb(s, n))
    threads = [threading.Thread(target=mod.gpu_thread, args=(run, q), daemon=True)
               for q in (run.gpu, run.gpu_kb)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert run.turns_left == 0
    assert log.index("kb 1_1") < log.index("kforge 1_1 end")
    assert sorted(log) == ["kb 1_1", "kb 2_3", "kforge 1_1 end", "kforge 1_1 start",
                           "kforge 2_3 end", "kforge 2_3 start"]
    assert "verdicts stand" in mod.shared_gpu_lines(args)[0]
    assert all(r["gpu_lanes"] == {"kforge": 1, "kb": 1} for r in run.rows.values())
    assert mod.shared_gpu_lines(mod.parse_args(["--out", str(tmp_path / "o"), "--device", "cpu",
                                                "--corpus", corpus])) == []


def test_stale_build_locks_are_removed(tmp_path):
    mod = load_module()
    for rel in ("kb/1_1-abc/build/ext/lock", "kforge-cache/c/k/torch_extensions/ext/lock"):
        (tmp_path / rel).parent.mkdir(parents=True)
        (tmp_path / rel).write_text("")
    (tmp_path / "kb/1_1-abc/build/ext/ext.so").write_text("")
    assert mod.remove_build_locks(str(tmp_path)) == 2
    assert not list(tmp_path.rglob("lock")) and (tmp_path / "kb/1_1-abc/build/ext/ext.so").exists()


def test_the_timing_table_gives_each_part_and_the_rest():
    mod = load_module()
    stages = dict(timing_s=2.0, timing_device_s=0.5, timing_call_s=1.4, timing_inputs_s=0.3,
                  timing_reference_s=0.4, timing_candidate_s=0.6, timing_checks_s=0.2)
    rows = [dict(kforge_verdict="ok", kforge_stages=stages),
            dict(kforge_verdict="incorrect", kforge_stages=dict(stages, timing_s=9.0))]
    lines = mod.timing_parts_lines(rows)
    assert lines[0].startswith("timing stage of 1 ok first passes")
    # "  <part> <median> / <mean>"; the last part's name has spaces.
    parts = {line.split()[0]: line.split(" / ")[0].split()[-1] for line in lines[1:]}
    assert parts["timing_call_s"] == "1.400" and parts["timing_checks_s"] == "0.200"
    assert parts["rest"] == "0.500"  # 2.0 - (0.3 + 0.4 + 0.6 + 0.2)
    assert "timing_trace_s" not in parts  # an engine before session 32: no line
    # The reference's CUPTI flushes: indented under timing_reference_s, of which they are a
    # part, and not taken from the rest a second time.
    traced = [dict(r, kforge_stages=dict(r["kforge_stages"], timing_trace_s=0.1)) for r in rows]
    lines = mod.timing_parts_lines(traced)
    names = [line.split()[0] for line in lines[1:]]
    assert names.index("timing_trace_s") == names.index("timing_reference_s") + 1
    line = lines[1 + names.index("timing_trace_s")]
    assert line.startswith("    timing_trace_s") and line.split(" / ")[0].endswith("0.100")
    assert lines[-1].split(" / ")[0].endswith("0.500")  # the rest, unchanged
    # An engine without the parts: no table.
    assert mod.timing_parts_lines([dict(kforge_verdict="ok",
                                        kforge_stages=dict(timing_s=1.0))]) == []


def test_the_wall_table_gives_each_stage_and_its_parts():
    mod = load_module()
    stages = dict(total_s=1.3, startup_s=0.01, device_s=0.35, device_context_s=0.2,
                  calibration_wait_s=0.1, calibration_calls_s=0.05, load_task_s=0.02,
                  build_s=0.0, correctness_s=0.34, correctness_reference_s=0.15,
                  correctness_first_reference_s=0.1, timing_s=0.3)
    rows = [dict(kforge_verdict="ok", kforge_stages=stages),
            dict(kforge_verdict="ok", kforge_stages=dict(stages, total_s=2.3, device_s=0.55)),
            dict(kforge_verdict="incorrect", kforge_stages=dict(stages, total_s=9.0))]
    lines = mod.wall_parts_lines(rows)
    assert lines[0].startswith("evaluation of 2 ok first passes by stage")
    assert lines[0].endswith("1.800 / 1.800")  # total_s: median and mean of 1.3 and 2.3
    parts = {line.split()[0]: (line[:6].count(" "), line.split(" / ")[0].split()[-1])
             for line in lines[1:]}
    assert parts["device_s"] == (2, "0.450")
    assert parts["device_context_s"] == (4, "0.200")  # indented: a part of device_s
    assert parts["correctness_s"] == (2, "0.340")
    assert parts["correctness_reference_s"] == (4, "0.150")
    assert parts["correctness_first_reference_s"] == (6, "0.100")  # a part of the line above
    # Parts the engine did not report are left out, not shown as zeros.
    assert "correctness_compare_s" not in parts
    assert mod.wall_parts_lines([dict(kforge_verdict="incorrect", kforge_stages=stages)]) == []


def test_the_hop_line_gives_the_median_and_the_mps_count():
    mod = load_module()
    rows = [dict(kforge_call_overhead_ms=0.33, kforge_mps=False),
            dict(kforge_call_overhead_ms=0.05, kforge_mps=True),
            dict(kforge_call_overhead_ms=0.06, kforge_mps=True), dict(name="kb only")]
    assert mod.hop_lines(rows + [dict(kforge_mps=False, name="built ahead, no hop")]) == [
        "call clock hop: median 0.060 ms, p90 0.330 ms over 3, of which under MPS: 2"]
    assert mod.hop_lines([dict(name="no hop")]) == []


def test_the_verdict_table_takes_no_answer_for_no_verdict(tmp_path):
    # Session 20: 2_75's kforge evaluation was cut by the run's budget end ("<no answer>"); it
    # is no verdict, and a later file's cut-off row does not replace an earlier verdict.
    table = load_script("verdict_table")
    first, later = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    compat = load_module()
    cut = dict(kforge_verdict="<no answer>", kforge_reason=compat.BUDGET_CUT + "EOFError()")
    died = dict(kforge_verdict="<no answer>", kforge_reason="fork server gave no answer: EOF")
    first.write_text(json.dumps(dict(name="1_1", kforge_verdict="ok")) + "\n" +
                     json.dumps(dict(name="1_2", **cut)) + "\n" +
                     json.dumps(dict(name="1_4", kforge_verdict="ok")) + "\n" +
                     json.dumps(dict(name="1_5", kforge_verdict="ok")) + "\n")
    later.write_text(json.dumps(dict(name="1_1", **cut)) + "\n" +
                     json.dumps(dict(name="1_3", kforge_verdict="incorrect")) + "\n" +
                     json.dumps(dict(name="1_4", **died)) + "\n" +
                     json.dumps(dict(name="1_5", **died)) + "\n")
    got = table.rows([str(first), str(later)], "kforge_verdict", {"1_5"})
    # A server that died under a candidate is an answer of its own (1_4); a row named as cut
    # is not (1_5, runs from before the reason said so).
    assert {n: r["kforge_verdict"] for n, r in got.items()} == {
        "1_1": "ok", "1_3": "incorrect", "1_4": "<no answer>", "1_5": "ok"}


def test_nvml_utilization_is_read_from_nvidia_smi_and_kept_to_kforges_turns(tmp_path):
    mod = load_module()
    at = datetime.datetime(2026, 12, 4, 9, 8, 13, 500000).timestamp()
    assert mod.parse_utilization("2026/12/04 09:08:13.500, 37\n") == (at, 37.0)
    assert mod.parse_utilization("37\n") == (None, 37.0)
    assert [mod.parse_utilization(x) for x in ("x, [N/A]", "", "x, 150", "-3")] == [None] * 4
    turns = [dict(kind="kforge", at_s=1.0, turn_s=1.0), dict(kind="kb", at_s=3.0, turn_s=1.0)]
    readings = [(0.5, 90.0), (1.5, 40.0), (1.8, 60.0), (3.5, 99.0)]
    assert mod.utilization_in_turns(turns, readings) == (50.0, 2)
    assert mod.utilization_in_turns(turns, []) == (None, 0)
    # A stand-in for nvidia-smi: the sampler reads its lines, skipping what is not a percent.
    fake = tmp_path / "nvidia-smi"
    fake.write_text("#!/bin/sh\nprintf '2026/12/04 09:08:13.500, 10\\n"
                    "2026/12/04 09:08:13.600, [N/A]\\n2026/12/04 09:08:13.700, 30\\n'\n"
                    "exec sleep 30\n")
    fake.chmod(0o755)
    sampler = mod.UtilizationSampler(time.time(), 0, binary=str(fake))
    for _ in range(100):
        if len(sampler.readings) == 2:
            break
        time.sleep(0.05)
    got = sampler.stop()
    assert [u for _, u in got] == [10.0, 30.0]
    assert abs(got[1][0] - got[0][0] - 0.2) < 1e-6, "stamped by nvidia-smi's clock"
    assert mod.UtilizationSampler(time.time(), 0, binary=str(tmp_path / "none")).stop() == []


def test_repeats_cut_by_the_budget_still_give_spreads_apart_from_the_n_run_figure(tmp_path,
                                                                                 capsys):
    """Session 22, call 3: KB's turns beside kforge's left every candidate 2 of its 3 runs, and
    the table said "-" for every spread. The N-run figures stay over the complete candidates
    only; the 2-or-more lines give what was measured; --summary-of prints them again from the
    saved files."""
    mod = load_module()

    def ev(call, device, ci=(0.0, 0.0)):
        return dict(verdict="ok", speedup=call, speedup_call=call, speedup_device=device,
                    speedup_call_ci_low=ci[0], speedup_call_ci_high=ci[1], wall_s=1.0)

    def row(name, runs, kb=None):
        first = {"kforge_" + k: v for k, v in runs[0].items()}
        kb_fields = (dict(kb_status="ok", kb_compiled=True, kb_correctness=True, kb_speedup=kb)
                     if kb else {})
        return dict(name=name, **first, **kb_fields,
                    kforge_repeats=[dict(r, round=i + 1) for i, r in enumerate(runs[1:])])
    rows = [row("1_1", [ev(2.0, 1.00, (1.0, 3.0)), ev(4.0, 1.01)], kb=1.0),  # two of three
            row("1_2", [ev(1.0, 3.00, (0.5, 2.0)), ev(1.0, 3.03), ev(1.5, 3.00)], kb=2.0),
            row("1_3", [ev(1.0, 1.0)]),                                      # one: no spread
            row("1_4", [ev(1.0, 1.0), dict(verdict="incorrect")])]          # not all ok
    args = type("A", (), dict(repeats=3, kforge_lanes=1, kb_lanes=0))()
    s = mod.repeats_summary(args, rows, [], 10.0, 0)
    assert s["candidates_all_ok"] == 1 and s["candidates_two_or_more_ok"] == 2
    assert s["candidates"] == ["1_2"]
    # The N-run figures: 1_2 alone.
    assert s["spread"]["speedup_call"]["count"] == 1
    assert abs(s["spread"]["speedup_call"]["max"] - 0.5) < 1e-9
    assert s["outside_first_ci"]["call"] == dict(outside=0, repeats=2, fraction=0.0)
    assert s["kforge_over_kb"]["speedup_call"]["count"] == 1
    assert abs(s["kforge_over_kb"]["speedup_call"]["median"] - 0.5) < 1e-9
    # With 2 or more: 1_1 too (its repeat, 4.0, falls outside its first run's 1.0-3.0).
    two = s["two_or_more"]
    assert two["spread"]["speedup_call"]["count"] == 2
    assert abs(two["spread"]["speedup_device"]["max"] - 0.01) < 1e-9
    assert two["outside_first_ci"]["call"] == dict(outside=1, repeats=3, fraction=1 / 3)
    assert two["kforge_over_kb"]["speedup_call"]["count"] == 2
    # 1_2's repeats alone (3.03, 3.00) and its first pass (3.00) over their mean.
    assert s["spread_repeats_only"]["speedup_device"]["count"] == 1
    assert abs(s["spread_repeats_only"]["speedup_device"]["max"] - 0.01) < 1e-9
    assert abs(s["spread_repeats_only"]["speedup_call"]["max"] - 0.5) < 1e-9
    assert abs(s["first_pass_over_repeats"]["speedup_device"]["median"] - (3.0 / 3.015 - 1)) < 1e-9
    assert abs(s["first_pass_over_repeats"]["speedup_call"]["median"] - (1.0 / 1.25 - 1)) < 1e-9
    assert s["two_or_more"]["spread_repeats_only"]["speedup_device"]["count"] == 1  # not 1_1
    text = mod.repeats_table(s)
    assert "  of the repeats alone, speedup_device median 1.0% p90 1.0% max 1.0% over 1" in text
    assert ("  first pass (beside KB's turns) over the repeats' mean, speedup_call: median "
            "-20.00%, p90 of |.| 20.0% over 1") in text
    assert "with 2 to 3 evaluations, all ok (the budget cut the rest): 2 candidates" in text
    assert "  repeats outside the first run's 95% CI, call clock: 1/3" in text
    with open(tmp_path / "compat.jsonl", "w") as f:
        f.writelines(json.dumps(r) + "\n" for r in rows)
    settings = dict(repeats=3, kforge_lanes=1, kb_lanes=0)
    json.dump(dict(settings=settings, wall_s=10.0, repeats=dict(s, repeats_back_to_back=0),
                   gpu_turns=[]), open(tmp_path / "compat_run.json", "w"))
    capsys.readouterr()
    assert mod.main(["--summary-of", str(tmp_path)]) == 0
    assert capsys.readouterr().out == text
    assert mod.main(["--summary-of"]) == 2


def test_gpu_turns_make_lanes_timing_results_and_count_the_locks_seconds(tmp_path):
    """--gpu-turns: the lanes' evaluations hold the GPU's lock from their calibration on, and a
    KB turn holds it too, so the lanes' timings are results; a turn's GPU seconds are the
    lock's (gpu_turn_s), at the end of the turn."""
    import threading
    mod = load_module()
    corpus = str(tmp_path / "c.jsonl")
    write_corpus(corpus)
    base = ["--out", str(tmp_path / "o"), "--device", "cpu", "--corpus", corpus,
            "--work-dir", str(tmp_path / "w"), "--kforge-lanes", "2"]
    assert mod.shared_gpu_lines(mod.parse_args(base)) != []
    args = mod.parse_args(base + ["--gpu-turns"])
    assert not mod.lanes_overlap(args) and mod.lanes_field(args) == {}
    assert mod.shared_gpu_lines(args) == []
    lock = mod.gpu_lock_path(args)
    os_ = __import__("os")
    assert lock.startswith("/proc/self/fd/") and mod.gpu_lock_path(args) == lock
    assert os_.path.realpath(lock) == str(tmp_path / "w" / "gpu.lock")
    # One holder at a time.
    inside = threading.Event()
    with mod.GpuTurn(lock) as first:
        t = threading.Thread(target=lambda: (mod.GpuTurn(lock).__enter__(), inside.set()),
                             daemon=True)
        t.start()
        time.sleep(0.3)
        assert not inside.is_set(), "a second turn while the first is held"
    assert first.seconds >= 0.3
    assert inside.wait(timeout=10)
    # The lock's seconds, at the end of each kforge turn, count for the GPU-hour and NVML.
    # A turn never given (gpu_turn_timeout) held the GPU for 0 s, whatever its wall.
    turns = [dict(kind="kforge", at_s=1.0, turn_s=2.0, gpu_turn_s=0.5),
             dict(kind="kforge", at_s=4.0, turn_s=1.0, gpu_turn_s=1.0),
             dict(kind="kforge", at_s=6.0, turn_s=900.0, gpu_turn_s=0)]
    readings = [(2.2, 90.0), (2.7, 40.0), (4.5, 60.0), (7.0, 99.0)]
    assert mod.utilization_in_turns(turns, readings) == (50.0, 2)
    run_args = type("A", (), dict(repeats=1, kforge_lanes=2, kb_lanes=0, gpu_turns=True))()
    rows = [dict(name="1_1", kforge_verdict="ok", kforge_wall_s=3.0,
                 kforge_stages=dict(gpu_wait_s=1.0))]
    s = mod.repeats_summary(run_args, rows, turns, 10.0, 0)
    assert s["evaluations"]["gpu_turn_s"] == 1.5
    assert abs(s["evals_per_gpu_hour_turns"] - 3 * 3600 / 1.5) < 1e-6
    assert s["ok_wall_s"]["median"] == 2.0, "the wait for the turn is not the evaluation's"
