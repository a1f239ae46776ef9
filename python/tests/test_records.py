"""Records, error mapping and the progress bar, without a server."""

from __future__ import annotations

import io
import math

import grpc
import pytest

import kforge
from kforge.progress import Progress, render_line
from kforge.records import enum_name, enum_value
from kforge.v1 import eval_pb2, jobs_pb2


def ok_record() -> jobs_pb2.EvaluationRecord:
    rec = jobs_pb2.EvaluationRecord(evaluation_id="7", candidate_id="c" * 64, task_id="t" * 64,
                                    gpu_type="H100", worker_id="w1", client_ref="0",
                                    batch_id="b", attempts=1, finished_at="2026-11-30T00:00:00Z")
    rec.result.verdict = eval_pb2.VERDICT_OK
    rec.result.speedup = 2.5
    rec.result.reference.median_ms = 5.0
    rec.result.reference.n = 20
    rec.result.candidate.median_ms = 2.0
    rec.result.candidate.n = 30
    rec.result.candidate.event_fallbacks = 2
    rec.result.timing_clock = "activity"
    rec.result.timing_preroll_ms = 0.2
    rec.result.correctness.trials = 5
    rec.result.correctness.trials_passed = 5
    rec.result.system.gpu_name = "NVIDIA H100"
    rec.result.dialect = eval_pb2.DIALECT_NVRTC
    return rec


def two_clock_record() -> jobs_pb2.EvaluationRecord:
    """An ok result of a task timed by the call clock whose candidate reached native code: no
    device-clock speedup for it."""
    rec = ok_record()
    r = rec.result
    r.speedup = 1.6
    r.speedup_clock = "call"
    r.speedup_call = 1.6
    r.reference_call.median_ms, r.reference_call.n = 2.4, 20
    r.reference_call.median_ci_low_ms, r.reference_call.median_ci_high_ms = 2.3, 2.5
    r.candidate_call.median_ms, r.candidate_call.n, r.candidate_call.capped = 1.5, 20, True
    r.reference_device.median_ms, r.reference_device.n = 2.0, 20
    r.reference.CopyFrom(r.reference_call)
    r.candidate.CopyFrom(r.candidate_call)
    r.device_clock_note = "the candidate process reached native code"
    r.native_code = True
    r.native_code_detail = "ctypes.CDLL"
    r.speedup_ci_low, r.speedup_ci_high = 1.5, 1.7
    r.speedup_call_ci_low, r.speedup_call_ci_high = 1.5, 1.7
    r.speedup_call_between_sd = 0.05
    return rec


def failed_record() -> jobs_pb2.EvaluationRecord:
    rec = jobs_pb2.EvaluationRecord(evaluation_id="8", gpu_type="H100", client_ref="1")
    rec.result.verdict = eval_pb2.VERDICT_COMPILE_ERROR
    rec.result.reason = "SyntaxError: expected ':'"
    rec.result.stage = "build"
    return rec


def test_enum_names_are_lower_case_without_the_prefix():
    assert enum_name(eval_pb2.Verdict, eval_pb2.VERDICT_COMPILE_ERROR) == "compile_error"
    assert enum_name(jobs_pb2.JobState, jobs_pb2.JOB_STATE_CANCELLED) == "cancelled"
    assert enum_name(eval_pb2.Dialect, eval_pb2.DIALECT_CPP) == "cpp"
    assert enum_value(eval_pb2.Verdict, "rejected") == eval_pb2.VERDICT_REJECTED
    with pytest.raises(ValueError, match="unknown Verdict 'great'.*'ok'"):
        enum_value(eval_pb2.Verdict, "great")


def test_an_ok_evaluation_keeps_speedup_timings_and_system():
    e = kforge.Evaluation.from_proto(ok_record())
    assert e.ok and e.verdict == "ok"
    assert e.speedup == 2.5
    assert e.reference == kforge.Timing(median_ms=5.0, mean_ms=0, min_ms=0, max_ms=0, std_ms=0,
                                        n=20)
    assert e.candidate.median_ms == 2.0
    assert (e.timing_clock, e.timing_preroll_ms, e.candidate.event_fallbacks) == ("activity", 0.2, 2)
    assert e.correctness.trials_passed == 5
    assert e.system.gpu_name == "NVIDIA H100"
    assert (e.dialect, e.client_ref, e.attempts) == ("nvrtc", "0", 1)


def test_an_evaluation_carries_both_clocks_and_the_native_code_taint():
    e = kforge.Evaluation.from_proto(two_clock_record())
    assert (e.speedup, e.speedup_clock, e.speedup_call, e.speedup_device) == (1.6, "call", 1.6,
                                                                              None)
    assert e.reference_call.median_ms == 2.4 and e.reference == e.reference_call
    assert (e.reference_call.median_ci_low_ms, e.reference_call.median_ci_high_ms) == (2.3, 2.5)
    assert e.candidate_call.capped and not e.reference_call.capped
    assert e.reference_device.median_ms == 2.0 and e.candidate_device is None
    assert e.device_clock_note == "the candidate process reached native code"
    assert (e.native_code, e.native_code_detail) == (True, "ctypes.CDLL")
    assert (e.speedup_ci_low, e.speedup_ci_high) == (1.5, 1.7)
    assert (e.speedup_call_ci_low, e.speedup_call_ci_high) == (1.5, 1.7)
    assert e.speedup_device_ci_low is None and e.speedup_device_ci_high is None
    # Without the two clocks (a result from before them): nothing of them is made up.
    old = kforge.Evaluation.from_proto(ok_record())
    assert (old.speedup_clock, old.speedup_device, old.speedup_call) == ("", None, None)
    assert old.reference_call is None and old.speedup_ci_low is None and not old.native_code
    assert old.speedup_call_ci_low is None


def test_rows_carry_both_clocks_as_columns():
    row = kforge.record_to_row(kforge.Evaluation.from_proto(two_clock_record()))
    assert (row["speedup_clock"], row["speedup_call"], row["speedup_device"]) == ("call", 1.6,
                                                                                  None)
    assert row["reference_call_median_ms"] == 2.4 and row["candidate_call_capped"] is True
    assert row["reference_device_median_ms"] == 2.0 and row["candidate_device_median_ms"] is None
    assert row["native_code"] is True and row["speedup_ci_high"] == 1.7
    failed = kforge.record_to_row(kforge.Evaluation.from_proto(failed_record()))
    assert list(row) == list(failed)
    assert failed["speedup_call"] is None and failed["reference_call_median_ms"] is None


def test_a_failed_evaluation_has_no_speedup_and_no_timings():
    e = kforge.Evaluation.from_proto(failed_record())
    assert not e.ok
    assert (e.verdict, e.stage, e.reason) == ("compile_error", "build", "SyntaxError: expected ':'")
    assert e.speedup is None and e.reference is None and e.candidate is None


def test_rows_flatten_nested_records_with_the_same_columns_for_every_row():
    ok = kforge.record_to_row(kforge.Evaluation.from_proto(ok_record()))
    failed = kforge.record_to_row(kforge.Evaluation.from_proto(failed_record()))
    assert list(ok) == list(failed)
    assert ok["reference_median_ms"] == 5.0 and ok["system_gpu_name"] == "NVIDIA H100"
    assert failed["reference_median_ms"] is None and failed["speedup"] is None


def test_records_load_into_pandas():
    records = kforge.Records([kforge.Evaluation.from_proto(ok_record()),
                              kforge.Evaluation.from_proto(failed_record())])
    df = records.to_pandas()
    assert list(df["verdict"]) == ["ok", "compile_error"]
    assert df["speedup"].iloc[0] == 2.5 and math.isnan(df["speedup"].iloc[1])
    assert df["candidate_median_ms"].iloc[0] == 2.0
    assert kforge.records_to_dataframe([]).empty


def test_job_events_name_the_field_that_is_set():
    round_event = kforge.JobEvent.from_proto(jobs_pb2.JobEvent(job_id="j", round_started=3))
    assert (round_event.kind, round_event.round) == ("round_started", 3)
    best = jobs_pb2.JobEvent(job_id="j", new_best=jobs_pb2.BestCandidate(gpu_type="A100",
                                                                          speedup=1.5))
    assert kforge.JobEvent.from_proto(best).new_best.speedup == 1.5
    done = kforge.JobEvent.from_proto(jobs_pb2.JobEvent(job_id="j",
                                                        finished=jobs_pb2.JOB_STATE_SUCCEEDED))
    assert (done.kind, done.state) == ("finished", "succeeded")
    result = kforge.JobEvent.from_proto(jobs_pb2.JobEvent(job_id="j", result=ok_record()))
    assert result.result.speedup == 2.5


def test_best_candidates_rollouts_and_trajectories_name_their_clock():
    best = kforge.BestCandidate.from_proto(jobs_pb2.BestCandidate(
        gpu_type="H200", speedup=1.2, speedup_clock="device", speedup_device=1.2,
        speedup_call=0.9))
    assert (best.speedup_clock, best.speedup_device, best.speedup_call) == ("device", 1.2, 0.9)
    rollout = kforge.Rollout.from_proto(jobs_pb2.Rollout(
        job_id="j", verdict=eval_pb2.VERDICT_OK, speedup=0.9, speedup_clock="call",
        speedup_call=0.9))
    # The device clock not trusted (native code): None, not 0.
    assert (rollout.speedup_clock, rollout.speedup_device, rollout.speedup_call) == \
        ("call", None, 0.9)
    point = kforge.TrajectoryPoint.from_proto(jobs_pb2.TrajectoryPoint(
        evaluation_id="e", verdict=eval_pb2.VERDICT_INCORRECT))
    assert (point.speedup, point.speedup_clock, point.speedup_device, point.speedup_call) == \
        (None, "", None, None)


class _FailedCall(grpc.RpcError):
    def __init__(self, code, details):
        self._code, self._details = code, details

    def code(self):
        return self._code

    def details(self):
        return self._details


@pytest.mark.parametrize("code,cls,builtin", [
    (grpc.StatusCode.INVALID_ARGUMENT, kforge.InvalidArgumentError, ValueError),
    (grpc.StatusCode.NOT_FOUND, kforge.NotFoundError, LookupError),
    (grpc.StatusCode.RESOURCE_EXHAUSTED, kforge.ResourceExhaustedError, kforge.KforgeError),
    (grpc.StatusCode.UNAVAILABLE, kforge.UnavailableError, ConnectionError),
    (grpc.StatusCode.DEADLINE_EXCEEDED, kforge.DeadlineExceededError, TimeoutError),
    (grpc.StatusCode.UNIMPLEMENTED, kforge.UnimplementedError, NotImplementedError),
    (grpc.StatusCode.PERMISSION_DENIED, kforge.PermissionDeniedError, PermissionError),
    (grpc.StatusCode.UNAUTHENTICATED, kforge.UnauthenticatedError, PermissionError),
])
def test_grpc_codes_map_to_exceptions(code, cls, builtin):
    error = kforge.errors.from_rpc_error(_FailedCall(code, "because"))
    assert type(error) is cls and isinstance(error, builtin)
    assert (error.code, error.details, str(error)) == (code, "because", f"{code.name}: because")


def test_plain_text_progress_prints_changes_as_lines():
    out = io.StringIO()
    bar = Progress("batch", total=4, file=out, min_interval_s=0)
    bar.update(1, "ok 1")
    bar.update(1, "ok 1")  # unchanged: not printed again
    bar.update(4, "ok 3, incorrect 1")
    bar.close()
    assert out.getvalue().splitlines() == [
        "batch [######------------------] 1/4 ok 1",
        "batch [########################] 4/4 ok 3, incorrect 1",
    ]


def test_plain_text_progress_is_throttled_but_prints_the_last_state():
    out = io.StringIO()
    bar = Progress("job", total=None, file=out, min_interval_s=3600)
    for n in range(1, 6):
        bar.update(n, f"round {n}")
    bar.close()
    assert out.getvalue().splitlines() == ["job 1 round 1", "job 5 round 5"]


class _Terminal(io.StringIO):
    def isatty(self):
        return True


def test_terminal_progress_redraws_one_line_in_place():
    out = _Terminal()
    with Progress("job", total=2, file=out, use_tqdm=False) as bar:
        bar.update(1, "a long status text")
        bar.update(2, "short")
    text = out.getvalue()
    assert text.count("\n") == 1 and text.endswith("\n")
    long_line, short_line = render_line("job", 1, 2, "a long status text"), render_line(
        "job", 2, 2, "short")
    # The shorter line is padded so that no rest of the longer one stays on screen.
    assert text.split("\r")[1:3] == [long_line, short_line.ljust(len(long_line))]


def test_the_installed_package_carries_the_generated_stubs():
    """The suite runs against the pip-installed SDK, not the source tree (which has no
    kforge/v1)."""
    from pathlib import Path

    from stack import REPO

    assert not Path(kforge.__file__).resolve().is_relative_to(REPO / "python")
    assert hasattr(jobs_pb2, "EvaluateBatchRequest")


def test_a_job_row_keeps_its_best_candidates_in_one_cell():
    job = jobs_pb2.Job(job_id="j", state=jobs_pb2.JOB_STATE_RUNNING, gpu_types=["A100"],
                       stop_reason="", best=[jobs_pb2.BestCandidate(gpu_type="A100", speedup=2)])
    row = kforge.record_to_row(kforge.Job.from_proto(job))
    assert row["state"] == "running" and row["gpu_types"] == ["A100"]
    assert [b.speedup for b in row["best"]] == [2.0]
