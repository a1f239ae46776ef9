"""kforge.Client: the friendly face of kforge.v1.JobService.

    client = kforge.Client("localhost:50051")
    task_id = client.submit_task("level1/19_ReLU.py")
    for result in client.evaluate_batch(task_id, [source_a, source_b], ["H100"]):
        print(result.client_ref, result.verdict, result.speedup)
    job_id = client.submit_job(task_id, ["H100"], budget=kforge.Budget(max_rounds=3))
    job = client.watch_job(job_id)              # progress bar until the job ends
    best = client.get_best_candidates(task_id)  # with sources
    client.query_results(task_id=task_id).to_pandas()

Every RPC raises a kforge.errors.KforgeError subclass on failure. Unary calls have a
deadline (`timeout`, seconds); streams (evaluate_batch, job_events, watch_job) have none.

Thread-safety: a Client may be shared by threads (gRPC channels and stubs are thread-safe);
each BatchStream or event iterator is consumed by one thread. close() ends the channel.
"""

from __future__ import annotations

import os
from dataclasses import asdict, replace
from pathlib import Path
from typing import (Callable, Dict, Iterable, Iterator, List, Mapping, Optional, Sequence,
                    TextIO, Union)

import grpc

from kforge.batch import BatchStream
from kforge.errors import translated, UnavailableError
from kforge.progress import Progress
from kforge.records import (Budget, Candidate, BestCandidate, Evaluation, Job, JobEvent,
                            LlmSettings, Records, Rollout, SubmittedTask, TrajectoryPoint, Worker,
                            enum_name,
                            enum_value)
from kforge.v1 import eval_pb2, gateway_pb2, jobs_pb2, jobs_pb2_grpc

# What a candidate may be given as: its source, a file holding it, or a Candidate.
CandidateLike = Union[str, "os.PathLike[str]", Candidate]
GpuTypes = Union[str, Sequence[str]]

DEFAULT_MAX_ROUNDS = 5  # JobBudget.max_rounds = 0 means this

# Reconnect quickly after a coordinator restart (gRPC's default backoff grows to 120 s).
def client_settings() -> Dict[str, str]:
    """The clients' config file, as the CLI reads it: $KFORGE_CONFIG, else
    ~/.config/kforge/config; lines `flag = value` (coordinator, token_file, tls_ca_file,
    insecure, ...), `#` comments. Empty when there is no file."""
    path = os.environ.get("KFORGE_CONFIG") or str(Path.home() / ".config/kforge/config")
    if not os.environ.get("KFORGE_CONFIG") and not Path(path).exists():
        return {}
    settings = {}
    for n, line in enumerate(Path(path).read_text().splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        name, eq, value = line.partition("=")
        if not eq or not name.strip():
            raise ValueError(f"{path}:{n}: want `flag = value`, got {line!r}")
        settings[name.strip()] = value.strip()
    return settings


def _setting(name: str, settings: Dict[str, str]) -> str:
    """KFORGE_<NAME> from the environment, else `name` from the config file, else ""."""
    return os.environ.get("KFORGE_" + name.upper()) or settings.get(name, "")


def _token(settings: Dict[str, str]) -> str:
    """$KFORGE_TOKEN, else the content of the token file ($KFORGE_TOKEN_FILE, else the config
    file's token_file), else ""."""
    if os.environ.get("KFORGE_TOKEN"):
        return os.environ["KFORGE_TOKEN"].strip()
    path = _setting("token_file", settings)
    return Path(path).read_text().strip() if path else ""


class _BearerToken(grpc.UnaryUnaryClientInterceptor, grpc.UnaryStreamClientInterceptor):
    """Adds `authorization: Bearer <token>` to every call."""

    def __init__(self, token: str):
        self._metadata = ("authorization", f"Bearer {token}")

    def _with_token(self, details):
        metadata = list(details.metadata or []) + [self._metadata]
        return details._replace(metadata=metadata)

    def intercept_unary_unary(self, continuation, client_call_details, request):
        return continuation(self._with_token(client_call_details), request)

    def intercept_unary_stream(self, continuation, client_call_details, request):
        return continuation(self._with_token(client_call_details), request)


_DEFAULT_CHANNEL_OPTIONS = (("grpc.initial_reconnect_backoff_ms", 200),
                            ("grpc.min_reconnect_backoff_ms", 200),
                            ("grpc.max_reconnect_backoff_ms", 2000))


def _gpu_list(gpu_types: GpuTypes) -> List[str]:
    return [gpu_types] if isinstance(gpu_types, str) else list(gpu_types)


def _read_text(path: "os.PathLike[str]") -> str:
    return Path(path).read_text(encoding="utf-8")


def as_candidate(candidate: CandidateLike) -> Candidate:
    """A Candidate from a source string, a path (read now) or a Candidate."""
    if isinstance(candidate, Candidate):
        return candidate
    if isinstance(candidate, os.PathLike):
        return Candidate(source=_read_text(candidate))
    if isinstance(candidate, str):
        return Candidate(source=candidate)
    raise TypeError(f"a candidate is a source string, a path or a kforge.Candidate, "
                    f"not {type(candidate).__name__}")


def _best_text(best: Iterable) -> str:
    """', H100 1.31x, A100 1.12x' for (gpu_type, speedup) pairs."""
    return "".join(f", {gpu} {speedup:.2f}x" for gpu, speedup in best)


def speedup_reward(evaluation: Evaluation) -> float:
    """The default reward: the measured speedup when the verdict is ok, else 0."""
    return evaluation.speedup if evaluation.ok and evaluation.speedup is not None else 0.0


class Client:
    def __init__(self, address: Optional[str] = None, *, timeout: float = 10.0,
                 credentials: Optional[grpc.ChannelCredentials] = None,
                 options: Sequence = (), token: Optional[str] = None,
                 tls_ca_file: Optional[str] = None, insecure: Optional[bool] = None):
        """Each setting comes from the argument, else the environment (KFORGE_COORDINATOR,
        KFORGE_TLS_CA_FILE, KFORGE_INSECURE, KFORGE_TOKEN, KFORGE_TOKEN_FILE), else the config
        file (client_settings()), as for the CLI. TLS by default: the server is verified
        against the CA file (else the system's roots); `insecure=True` talks plaintext;
        `credentials` overrides both. The address defaults to localhost:50051."""
        settings = client_settings()
        address = address or _setting("coordinator", settings) or "localhost:50051"
        self.address = address
        self.timeout = timeout
        channel_options = list(_DEFAULT_CHANNEL_OPTIONS) + list(options)
        if insecure is None:
            insecure = _setting("insecure", settings).lower() in ("1", "true", "yes")
        if credentials is None and not insecure:
            ca_file = tls_ca_file or _setting("tls_ca_file", settings)
            roots = Path(ca_file).read_bytes() if ca_file else None
            credentials = grpc.ssl_channel_credentials(root_certificates=roots)
        if credentials is not None:
            self._channel = grpc.secure_channel(address, credentials, channel_options)
        else:
            self._channel = grpc.insecure_channel(address, channel_options)
        token = token if token is not None else _token(settings)
        if token:
            self._channel = grpc.intercept_channel(self._channel, _BearerToken(token))
        self._stub = jobs_pb2_grpc.JobServiceStub(self._channel)
        self._max_rounds: Dict[str, int] = {}  # rounds budget of jobs submitted here

    def close(self) -> None:
        self._channel.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def wait_ready(self, timeout: float = 10.0) -> None:
        """Waits until the channel is connected; UnavailableError after `timeout` seconds."""
        try:
            grpc.channel_ready_future(self._channel).result(timeout=timeout)
        except grpc.FutureTimeoutError:
            raise UnavailableError(f"cannot connect to {self.address} within {timeout:g} s",
                                   grpc.StatusCode.UNAVAILABLE) from None

    def _unary(self, method: str, request, timeout: Optional[float] = None):
        with translated():
            return getattr(self._stub, method)(request, timeout=timeout or self.timeout)

    # Tasks ------------------------------------------------------------------------------

    def submit_task(self, path: Union[str, "os.PathLike[str]"], *, name: Optional[str] = None,
                    precision: str = "", atol: float = 0.0, rtol: float = 0.0,
                    correctness_trials: int = 0) -> str:
        """Stores the KernelBench task in `path` and returns its task_id (the sha256 of the
        source). The name defaults to the file's stem. Submitting the same source again
        returns the same id."""
        return self.submit_task_source(
            _read_text(path), name=name or Path(path).stem, precision=precision, atol=atol,
            rtol=rtol, correctness_trials=correctness_trials).task_id

    def submit_task_source(self, source: str, *, name: str = "", precision: str = "",
                           atol: float = 0.0, rtol: float = 0.0,
                           correctness_trials: int = 0) -> SubmittedTask:
        """Stores a task given as source. InvalidArgumentError when it is not a KernelBench
        task (no class Model, no get_inputs) or the precision is not fp32/fp16/bf16."""
        options = jobs_pb2.TaskOptions(precision=precision, atol=atol, rtol=rtol,
                                       correctness_trials=correctness_trials)
        resp = self._unary("SubmitTask",
                           jobs_pb2.SubmitTaskRequest(name=name, source=source.encode(), options=options))
        return SubmittedTask(task_id=resp.task_id, created=resp.created)

    # Batches ----------------------------------------------------------------------------

    def evaluate_batch(self, task_id: str, candidates: Iterable[CandidateLike],
                       gpu_types: GpuTypes = ("any",), *, priority: int = 0,
                       progress: bool = False, file: Optional[TextIO] = None,
                       reattach_timeout_s: float = 60.0) -> BatchStream:
        """Queues every candidate on every GPU type and returns an iterator of Evaluations
        as they finish. A candidate without a client_ref gets its index in `candidates`
        ("0", "1", ...), so results can be matched to inputs. The iterator re-attaches by
        batch id when the stream drops (see BatchStream); its batch_id attribute names the
        batch for attach_batch()."""
        specs = []
        for i, c in enumerate(as_candidate(c) for c in candidates):
            dialect = enum_value(eval_pb2.Dialect, c.dialect) if c.dialect else 0
            specs.append(jobs_pb2.CandidateSpec(source=c.source.encode(), dialect=dialect,
                                                client_ref=c.client_ref or str(i)))
        gpus = _gpu_list(gpu_types)
        request = jobs_pb2.EvaluateBatchRequest(task_id=task_id, candidates=specs,
                                                gpu_types=gpus, priority=priority)
        expected = len(specs) * len(gpus)
        bar = Progress("batch", total=expected, file=file) if progress else None
        return BatchStream(self._channel, self._stub.EvaluateBatch, request, expected=expected,
                           reattach_timeout_s=reattach_timeout_s, progress=bar)

    def attach_batch(self, batch_id: str, *, reattach_timeout_s: float = 60.0) -> BatchStream:
        """Every result of an existing batch: those finished already, then the rest as they
        finish. NotFoundError (when read) if there is no such batch."""
        request = jobs_pb2.EvaluateBatchRequest(batch_id=batch_id)
        return BatchStream(self._channel, self._stub.EvaluateBatch, request,
                           reattach_timeout_s=reattach_timeout_s)

    def rewards(self, task_id: str, candidates: Iterable[CandidateLike],
                gpu_types: GpuTypes = ("any",), *,
                reward: Callable[[Evaluation], float] = speedup_reward,
                priority: int = 0) -> List[float]:
        """A reward per candidate, in the input order, for RL trainers: evaluates the batch
        and averages `reward(evaluation)` over the candidate's GPU types (default: speedup
        when ok, else 0). Blocks until every evaluation is done."""
        specs = [replace(as_candidate(c), client_ref=str(i)) for i, c in enumerate(candidates)]
        per_candidate: List[List[float]] = [[] for _ in specs]
        for evaluation in self.evaluate_batch(task_id, specs, gpu_types, priority=priority):
            per_candidate[int(evaluation.client_ref)].append(reward(evaluation))
        return [sum(r) / len(r) for r in per_candidate]

    # Jobs -------------------------------------------------------------------------------

    def submit_job(self, task_id: str, gpu_types: GpuTypes = ("any",), *,
                   strategy: str = "contrastive",
                   strategy_params: Optional[Mapping[str, object]] = None,
                   llm: Union[LlmSettings, Mapping, None] = None,
                   budget: Union[Budget, Mapping, None] = None, seed: int = 0,
                   seed_candidates: Iterable[Union[str, "os.PathLike[str]"]] = (),
                   dialect: str = "") -> str:
        """Starts an optimisation job and returns its job_id. `llm` and `budget` take the
        dataclasses or dicts of their fields; `seed_candidates` sources or paths;
        `dialect` of generated candidates ("nvrtc" by default on the server)."""
        llm = LlmSettings(**llm) if isinstance(llm, Mapping) else (llm or LlmSettings())
        budget = Budget(**budget) if isinstance(budget, Mapping) else (budget or Budget())
        request = jobs_pb2.SubmitJobRequest(
            task_id=task_id, gpu_types=_gpu_list(gpu_types), strategy=strategy,
            strategy_params={k: str(v) for k, v in (strategy_params or {}).items()},
            llm=gateway_pb2.LlmSettings(**asdict(llm)), budget=jobs_pb2.JobBudget(**asdict(budget)),
            seed=seed, seed_candidates=[as_candidate(c).source.encode() for c in seed_candidates],
            dialect=enum_value(eval_pb2.Dialect, dialect) if dialect else 0)
        job_id = self._unary("SubmitJob", request).job_id
        self._max_rounds[job_id] = budget.max_rounds or DEFAULT_MAX_ROUNDS
        return job_id

    def get_job(self, job_id: str) -> Job:
        return Job.from_proto(self._unary("GetJob", jobs_pb2.GetJobRequest(job_id=job_id)))

    def list_jobs(self, *, task_id: str = "", limit: int = 0) -> Records:
        """Jobs, newest first (limit 0: the server's default of 50)."""
        resp = self._unary("ListJobs", jobs_pb2.ListJobsRequest(task_id=task_id, limit=limit))
        return Records(Job.from_proto(j) for j in resp.jobs)

    def cancel_job(self, job_id: str) -> str:
        """Cancels the job; returns its state after the request."""
        resp = self._unary("CancelJob", jobs_pb2.CancelJobRequest(job_id=job_id))
        return enum_name(jobs_pb2.JobState, resp.state)

    def job_events(self, job_id: str) -> Iterator[JobEvent]:
        """The WatchJob stream: JobEvents until the job ends."""
        with translated():
            for event in self._stub.WatchJob(jobs_pb2.WatchJobRequest(job_id=job_id)):
                yield JobEvent.from_proto(event)

    def watch_job(self, job_id: str, *, progress: bool = True, file: Optional[TextIO] = None,
                  max_rounds: Optional[int] = None) -> Job:
        """Follows the job until it ends, showing a progress bar over its rounds (on `file`,
        default stderr), and returns the final Job. The bar's total is `max_rounds`, else
        the budget given to submit_job on this client, else the server's default of 5."""
        total = max_rounds or self._max_rounds.get(job_id, DEFAULT_MAX_ROUNDS)
        bar = Progress(f"job {job_id[:8]}", total=total, file=file) if progress else None
        rounds_started, evaluated, best = 0, 0, {}
        try:
            for event in self.job_events(job_id):
                if event.kind == "round_started":
                    rounds_started = event.round
                elif event.kind == "result":
                    evaluated += 1
                elif event.kind == "new_best":
                    best[event.new_best.gpu_type] = event.new_best.speedup
                if bar is not None:
                    bar.update(max(rounds_started - 1, 0),
                               f"round {rounds_started}, {evaluated} evaluated"
                               + _best_text(sorted(best.items())))
            job = self.get_job(job_id)
            if bar is not None:
                bar.update(job.rounds_done, f"{job.state}, {job.candidates_evaluated} evaluated"
                           + _best_text((b.gpu_type, b.speedup) for b in job.best),
                           total=max(total, job.rounds_done))
            return job
        finally:
            if bar is not None:
                bar.close()

    def export_rollouts(self, job_id: str) -> Records:
        """The job's completions with verdicts and rewards, in the order they were generated:
        (prompt, completion, reward) samples for RL training."""
        with translated():
            return Records(Rollout.from_proto(r) for r in self._stub.ExportRollouts(
                jobs_pb2.ExportRolloutsRequest(job_id=job_id), timeout=self.timeout))

    def job_trajectory(self, job_id: str) -> Records:
        """The job's evaluations in finishing order with the best speedup so far per GPU type
        (for progress plots: records.to_pandas().plot(x="finished_at", y="best_so_far"))."""
        resp = self._unary("GetJobTrajectory", jobs_pb2.JobTrajectoryRequest(job_id=job_id))
        return Records(TrajectoryPoint.from_proto(p) for p in resp.points)

    # Results ----------------------------------------------------------------------------

    def get_best_candidates(self, task_id: str, *, job_id: str = "", gpu_type: str = "",
                            limit: int = 0) -> Records:
        """The best correct candidates per GPU type (limit per type, 0: 1), with sources."""
        resp = self._unary("GetBestCandidates", jobs_pb2.BestCandidatesRequest(
            task_id=task_id, job_id=job_id, gpu_type=gpu_type, limit=limit))
        return Records(BestCandidate.from_proto(b, source=resp.sources.get(b.candidate_id))
                       for b in resp.best)

    def query_results(self, *, task_id: str = "", job_id: str = "", candidate_id: str = "",
                      gpu_type: str = "", verdict: str = "", limit: int = 0) -> Records:
        """Stored evaluations matching every given filter, newest first (limit 0: 100)."""
        query = jobs_pb2.ResultsQuery(
            task_id=task_id, job_id=job_id, candidate_id=candidate_id, gpu_type=gpu_type,
            verdict=enum_value(eval_pb2.Verdict, verdict) if verdict else 0, limit=limit)
        resp = self._unary("QueryResults", query)
        return Records(Evaluation.from_proto(e) for e in resp.evaluations)

    def list_workers(self) -> Records:
        resp = self._unary("ListWorkers", jobs_pb2.ListWorkersRequest())
        return Records(Worker.from_proto(w) for w in resp.workers)
