"""Plain records (dataclasses) for what the kforge API returns, converted from the protobuf
messages of proto/kforge/v1, and a loader into pandas.

Enum values become lower-case names: Verdict.VERDICT_OK -> "ok", JobState.JOB_STATE_RUNNING
-> "running", Dialect.DIALECT_NVRTC -> "nvrtc". Records hold no reference to protobuf or gRPC
objects, so they pickle, compare and print like any dataclass.
"""

from __future__ import annotations

import dataclasses
import typing
from dataclasses import dataclass
from typing import Any, Dict, Iterable, List, Optional

TERMINAL_JOB_STATES = ("succeeded", "failed", "cancelled")


def enum_name(enum_type, value: int) -> str:
    """`VERDICT_COMPILE_ERROR` -> "compile_error" (prefix of the enum dropped)."""
    name = enum_type.Name(value)
    prefix = enum_type.DESCRIPTOR.values[0].name.rsplit("UNSPECIFIED", 1)[0]
    return name[len(prefix):].lower() if name.startswith(prefix) else name.lower()


def enum_value(enum_type, name: str) -> int:
    """The inverse of enum_name: "compile_error" -> VERDICT_COMPILE_ERROR."""
    prefix = enum_type.DESCRIPTOR.values[0].name.rsplit("UNSPECIFIED", 1)[0]
    try:
        return enum_type.Value(prefix + name.upper())
    except ValueError:
        known = [enum_name(enum_type, v.number) for v in enum_type.DESCRIPTOR.values[1:]]
        raise ValueError(f"unknown {enum_type.DESCRIPTOR.name} '{name}'; one of {known}") from None


def _copy_fields(cls, message, **overrides):
    """cls(...) from the message's fields of the same names, plus `overrides`."""
    values = {f.name: getattr(message, f.name) for f in dataclasses.fields(cls)
              if f.name not in overrides}
    return cls(**values, **overrides)


def _clocks(message):
    """The clock fields of BestCandidate, Rollout and TrajectoryPoint: which clock made
    `speedup` ("device", "call", or "" before the two clocks), and each clock's speedup (None
    where not measured or, for the device clock, not trusted)."""
    def optional(name):
        return getattr(message, name) if message.HasField(name) else None

    return dict(speedup_clock=message.speedup_clock, speedup_device=optional("speedup_device"),
                speedup_call=optional("speedup_call"))


def _copy_scored(cls, message):
    """_copy_fields for a message with a Verdict `verdict`, an optional `speedup` and its
    clocks."""
    from kforge.v1 import eval_pb2

    return _copy_fields(cls, message, verdict=enum_name(eval_pb2.Verdict, message.verdict),
                        speedup=message.speedup if message.HasField("speedup") else None,
                        **_clocks(message))


@dataclass(frozen=True)
class Timing:
    """Statistics over the timed samples of one program, in milliseconds."""
    median_ms: float
    mean_ms: float
    min_ms: float
    max_ms: float
    std_ms: float
    n: int
    event_fallbacks: int = 0  # activity clock: samples timed by their CUDA events instead
    # The 95% confidence interval of the median (order statistics); 0, 0 when not given.
    median_ci_low_ms: float = 0.0
    median_ci_high_ms: float = 0.0
    capped: bool = False  # sampling ended at the sample or time cap, not by the stop rule


@dataclass(frozen=True)
class Correctness:
    """What the correctness stage checked and how close the candidate came."""
    trials: int
    trials_passed: int
    max_abs_error: float
    max_rel_error: float
    whole_rel_error: float
    atol: float
    rtol: float


@dataclass(frozen=True)
class SystemInfo:
    """The machine an evaluation ran on."""
    gpu_name: str
    compute_capability: str
    sm_clock_mhz: int
    max_sm_clock_mhz: int
    temperature_c: int
    driver_version: str
    cuda_version: str
    torch_version: str
    l2_cache_bytes: int
    hostname: str
    engine_version: str
    # Builds came only from this candidate's own cache namespace, under the engine's write lock.
    cache_isolated: bool = False
    # The GPU's memory in use at the evaluation's peak (its judge and candidate process); 0 on
    # the CPU.
    device_memory_used_bytes: int = 0
    # The judge and its candidate process shared one MPS server's hardware context (no GPU
    # context switch inside the call clock's window).
    mps: bool = False


@dataclass(frozen=True)
class Evaluation:
    """One stored evaluation: a candidate on one GPU type, with its verdict.

    `speedup` is reference median / candidate median and is set only for verdict "ok";
    `reason` says why in words, `rule` names the anti-reward-hacking rule for "rejected".

    Two clocks (docs/evaluation.md, "Two clocks"): `speedup_clock` names the one `speedup`,
    `reference` and `candidate` are ("device" or "call"); `speedup_device` and `speedup_call`
    are each clock's speedup (None unless ok; `speedup_device` also None where the device clock
    was not trusted, `device_clock_note` says why), with each clock's timings beside them.
    `speedup_ci_low`/`speedup_ci_high` bound `speedup`: the 95% interval a repeat evaluation
    in another process falls in (None when not given); `speedup_call_ci_low` ... and
    `speedup_device_ci_high` are each clock's, None where that clock has none.
    `native_code`: the candidate's process reached native code (`native_code_detail` names
    the first such event), so what it reports about itself is a claim.
    """
    evaluation_id: str
    candidate_id: str
    task_id: str
    gpu_type: str
    verdict: str
    reason: str
    speedup: Optional[float]
    reference: Optional[Timing]
    candidate: Optional[Timing]
    correctness: Optional[Correctness]
    system: Optional[SystemInfo]
    rule: str = ""
    stage: str = ""
    dialect: str = ""
    device: str = ""
    worker_id: str = ""
    client_ref: str = ""
    batch_id: str = ""
    attempts: int = 0
    finished_at: str = ""
    compiler_log: str = ""
    output_log: str = ""
    timing_preroll_ms: float = 0.0  # the pre-roll used (0.2 by default with the activity clock)
    timing_clock: str = ""  # "activity" (GPU span, CUPTI), "events" or "host" (CPU mode)
    speedup_clock: str = ""  # the clock of `speedup`: "device" or "call"
    speedup_device: Optional[float] = None
    speedup_call: Optional[float] = None
    reference_device: Optional[Timing] = None
    candidate_device: Optional[Timing] = None
    reference_call: Optional[Timing] = None
    candidate_call: Optional[Timing] = None
    device_clock_note: str = ""
    speedup_ci_low: Optional[float] = None
    speedup_ci_high: Optional[float] = None
    native_code: bool = False
    native_code_detail: str = ""
    speedup_call_ci_low: Optional[float] = None
    speedup_call_ci_high: Optional[float] = None
    speedup_device_ci_low: Optional[float] = None
    speedup_device_ci_high: Optional[float] = None

    @property
    def ok(self) -> bool:
        return self.verdict == "ok"

    @classmethod
    def from_proto(cls, rec) -> "Evaluation":
        r = rec.result
        from kforge.v1 import eval_pb2

        def optional(field):
            return getattr(r, field) if r.HasField(field) else None

        def nested(record_type, field):
            return _copy_fields(record_type, getattr(r, field)) if r.HasField(field) else None

        interval = r.speedup_ci_low != 0 or r.speedup_ci_high != 0

        def clock_interval(clock):
            low, high = getattr(r, f"speedup_{clock}_ci_low"), getattr(r, f"speedup_{clock}_ci_high")
            given = low != 0 or high != 0
            return {f"speedup_{clock}_ci_low": low if given else None,
                    f"speedup_{clock}_ci_high": high if given else None}

        return cls(
            evaluation_id=rec.evaluation_id, candidate_id=rec.candidate_id,
            task_id=rec.task_id, gpu_type=rec.gpu_type,
            verdict=enum_name(eval_pb2.Verdict, r.verdict), reason=r.reason,
            speedup=optional("speedup"),
            reference=nested(Timing, "reference"), candidate=nested(Timing, "candidate"),
            correctness=nested(Correctness, "correctness"), system=nested(SystemInfo, "system"),
            rule=r.rule, stage=r.stage, dialect=enum_name(eval_pb2.Dialect, r.dialect),
            device=r.device, worker_id=rec.worker_id, client_ref=rec.client_ref,
            batch_id=rec.batch_id, attempts=rec.attempts, finished_at=rec.finished_at,
            compiler_log=r.compiler_log, output_log=r.output_log,
            timing_preroll_ms=r.timing_preroll_ms, timing_clock=r.timing_clock,
            speedup_clock=r.speedup_clock, speedup_device=optional("speedup_device"),
            speedup_call=optional("speedup_call"),
            reference_device=nested(Timing, "reference_device"),
            candidate_device=nested(Timing, "candidate_device"),
            reference_call=nested(Timing, "reference_call"),
            candidate_call=nested(Timing, "candidate_call"),
            device_clock_note=r.device_clock_note,
            speedup_ci_low=r.speedup_ci_low if interval else None,
            speedup_ci_high=r.speedup_ci_high if interval else None,
            native_code=r.native_code, native_code_detail=r.native_code_detail,
            **clock_interval("call"), **clock_interval("device"))


@dataclass(frozen=True)
class BestCandidate:
    """The best correct candidate of a GPU type; `source` is filled by get_best_candidates.
    `speedup_clock` names the clock `speedup` is; `speedup_device` and `speedup_call` are each
    clock's speedup (None where not measured or not trusted)."""
    gpu_type: str
    candidate_id: str
    speedup: float
    reference_ms: float
    candidate_ms: float
    source: Optional[str] = None
    speedup_clock: str = ""
    speedup_device: Optional[float] = None
    speedup_call: Optional[float] = None

    @classmethod
    def from_proto(cls, best, source: Optional[str] = None) -> "BestCandidate":
        return _copy_fields(cls, best, source=source, **_clocks(best))


@dataclass(frozen=True)
class Job:
    """An optimisation job and how far it got. `state` is one of queued, running, succeeded,
    failed, cancelled."""
    job_id: str
    task_id: str
    state: str
    gpu_types: List[str]
    strategy: str
    rounds_done: int
    candidates_evaluated: int
    created_at: str
    updated_at: str
    error: str
    best: List[BestCandidate]
    tokens_used: int = 0
    candidates_generated: int = 0
    stop_reason: str = ""

    @property
    def finished(self) -> bool:
        return self.state in TERMINAL_JOB_STATES

    @classmethod
    def from_proto(cls, job) -> "Job":
        from kforge.v1 import jobs_pb2

        return _copy_fields(cls, job, state=enum_name(jobs_pb2.JobState, job.state),
                            gpu_types=list(job.gpu_types),
                            best=[BestCandidate.from_proto(b) for b in job.best])


@dataclass(frozen=True)
class JobEvent:
    """One event of WatchJob. `kind` says which field is set: "round_started" (round),
    "candidates_generated" (candidates_generated), "result" (result), "new_best" (new_best),
    "finished" (state)."""
    job_id: str
    kind: str
    round: Optional[int] = None
    candidates_generated: Optional[int] = None
    result: Optional[Evaluation] = None
    new_best: Optional[BestCandidate] = None
    state: Optional[str] = None

    @classmethod
    def from_proto(cls, event) -> "JobEvent":
        from kforge.v1 import jobs_pb2

        kind = event.WhichOneof("event") or ""
        event_field = {
            "round_started": lambda: {"round": event.round_started},
            "candidates_generated": lambda: {"candidates_generated": event.candidates_generated},
            "result": lambda: {"result": Evaluation.from_proto(event.result)},
            "new_best": lambda: {"new_best": BestCandidate.from_proto(event.new_best)},
            "finished": lambda: {"state": enum_name(jobs_pb2.JobState, event.finished)},
        }
        return cls(job_id=event.job_id, kind=kind, **event_field.get(kind, dict)())


@dataclass(frozen=True)
class Rollout:
    """One completion of a job's LLM calls with the reward its candidate earned on one GPU
    type, for RL training. `reward` is CUDA-L1's normalised and clipped reward, `raw_reward`
    the speedup when ok (else 0); `speedup` is None unless the verdict is ok, `verdict` is
    "unspecified" when the completion had no usable code (see parse_error)."""
    job_id: str
    round: int
    prompt: str
    completion: str
    candidate_id: str
    parse_error: str
    gpu_type: str
    verdict: str
    speedup: Optional[float]
    raw_reward: float
    reward: float
    llm_call_id: str
    speedup_clock: str = ""
    speedup_device: Optional[float] = None
    speedup_call: Optional[float] = None

    @classmethod
    def from_proto(cls, rollout) -> "Rollout":
        return _copy_scored(cls, rollout)


@dataclass(frozen=True)
class TrajectoryPoint:
    """One finished evaluation of a job with the best speedup its GPU type had reached by
    then (0 before the first correct one); `speedup` is None unless the verdict is ok."""
    evaluation_id: str
    finished_at: str
    round: int
    gpu_type: str
    candidate_id: str
    verdict: str
    speedup: Optional[float]
    best_so_far: float
    speedup_clock: str = ""
    speedup_device: Optional[float] = None
    speedup_call: Optional[float] = None

    @classmethod
    def from_proto(cls, point) -> "TrajectoryPoint":
        return _copy_scored(cls, point)


@dataclass(frozen=True)
class Worker:
    """A registered worker; `alive` when it heartbeated within the last 30 s; `draining` when
    an operator drained it (no new leases; `kforge worker drain`)."""
    worker_id: str
    hostname: str
    gpu_type: str
    slots: int
    last_heartbeat: str
    alive: bool
    leases_held: int
    draining: bool = False
    drained_by: str = ""
    drained_at: str = ""

    @classmethod
    def from_proto(cls, info) -> "Worker":
        return _copy_fields(cls, info)


@dataclass(frozen=True)
class SubmittedTask:
    """SubmitTask's answer: the task's content address and whether it was new."""
    task_id: str
    created: bool


@dataclass(frozen=True)
class LlmSettings:
    """LLM settings of a job; empty or zero fields take the gateway's defaults."""
    provider: str = ""
    model: str = ""
    temperature: float = 0.0
    max_tokens: int = 0
    base_url: str = ""


@dataclass(frozen=True)
class Budget:
    """Budgets and stop rules of a job; zero means unlimited, except max_rounds (0: 5)."""
    max_rounds: int = 0
    max_candidates: int = 0
    max_tokens: int = 0
    max_wall_s: float = 0.0
    target_speedup: float = 0.0


@dataclass(frozen=True)
class Candidate:
    """A candidate for evaluate_batch. `dialect` empty: inferred by the server from the
    source; `client_ref` is echoed back in its results."""
    source: str
    dialect: str = ""
    client_ref: str = ""


def _nested_record_type(hint) -> Optional[type]:
    """SomeRecord for a hint Optional[SomeRecord], else None (lists stay one cell)."""
    if typing.get_origin(hint) is not typing.Union:
        return None
    for arg in typing.get_args(hint):
        if dataclasses.is_dataclass(arg):
            return arg
    return None


def _flatten(prefix: str, record: Any, cls: type, out: Dict[str, Any]) -> None:
    hints = typing.get_type_hints(cls)
    for f in dataclasses.fields(cls):
        name = f"{prefix}_{f.name}" if prefix else f.name
        value = None if record is None else getattr(record, f.name)
        nested = _nested_record_type(hints[f.name])
        if nested is not None:
            _flatten(name, value, nested, out)
        elif dataclasses.is_dataclass(value):
            _flatten(name, value, type(value), out)
        else:
            out[name] = value


def record_to_row(record: Any) -> Dict[str, Any]:
    """A record as one flat dict: nested records become prefixed columns
    (reference.median_ms -> reference_median_ms), all None where the nested record is None,
    so every row of one record type has the same columns."""
    row: Dict[str, Any] = {}
    _flatten("", record, type(record), row)
    return row


def records_to_dataframe(records: Iterable[Any]):
    """A pandas DataFrame with one row per record (see record_to_row). Needs pandas."""
    try:
        import pandas
    except ImportError as e:
        raise ImportError("records_to_dataframe needs pandas: pip install 'kforge[pandas]'") from e
    return pandas.DataFrame([record_to_row(r) for r in records])


class Records(list):
    """A list of records with .to_pandas()."""

    def to_pandas(self):
        return records_to_dataframe(self)

