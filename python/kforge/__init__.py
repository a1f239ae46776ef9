"""kforge: a Python client for a kforge cluster (submit KernelBench tasks, evaluate
candidate kernels as a reward function, run and watch optimisation jobs, query results).

The gRPC stubs of proto/kforge/v1 are generated into kforge.v1 when the package is built.
"""

try:
    import kforge.v1.jobs_pb2  # noqa: F401  (generated at build time)
except ModuleNotFoundError as e:
    if not (e.name or "").startswith("kforge.v1"):
        raise
    raise ImportError("kforge.v1 (the gRPC stubs) is missing: it is generated when the package is "
                      "built, so install it (pip install ./python) instead of importing the "
                      "source tree") from e

from kforge.batch import BatchStream
from kforge.client import Client, as_candidate, speedup_reward
from kforge.errors import (AlreadyExistsError, CancelledError, DeadlineExceededError,
                           FailedPreconditionError, InternalError, InvalidArgumentError,
                           KforgeError, NotFoundError, PermissionDeniedError,
                           ResourceExhaustedError, UnauthenticatedError, UnavailableError,
                           UnimplementedError)
from kforge.progress import Progress
from kforge.records import (BestCandidate, Budget, Candidate, Correctness, Evaluation, Job,
                            JobEvent, LlmSettings, Records, Rollout, SubmittedTask, SystemInfo,
                            Timing, TrajectoryPoint, Worker, record_to_row,
                            records_to_dataframe)

__version__ = "0.1.0"

__all__ = [
    "AlreadyExistsError", "as_candidate", "BatchStream", "BestCandidate", "Budget",
    "CancelledError", "Candidate", "Client", "Correctness", "DeadlineExceededError",
    "Evaluation", "FailedPreconditionError", "InternalError", "InvalidArgumentError", "Job",
    "JobEvent", "KforgeError", "LlmSettings", "NotFoundError", "PermissionDeniedError",
    "Progress", "record_to_row",
    "Records", "records_to_dataframe", "ResourceExhaustedError", "Rollout", "speedup_reward",
    "SubmittedTask", "SystemInfo", "Timing", "TrajectoryPoint", "UnauthenticatedError",
    "UnavailableError",
    "UnimplementedError", "Worker",
]
