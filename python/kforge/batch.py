"""The EvaluateBatch stream as a Python iterator that survives a dropped connection.

The coordinator names a new batch in the initial metadata `kforge-batch-id` and streams one
EvaluationRecord per finished evaluation; a call with only `batch_id` set streams every
finished result of that batch again, then the rest as they finish. BatchStream uses that:
when the stream breaks (the coordinator restarted, the network dropped) after the batch id
is known, it waits for the channel and calls again with the batch id, skipping the
evaluations it has already yielded, so each result is yielded exactly once. Before the id is
known nothing is retried: the batch may or may not have been created.

Thread-safety: a BatchStream is consumed by one thread; cancel() may be called from another.
"""

from __future__ import annotations

import threading
import time
from typing import Callable, Iterator, Optional, Set

import grpc

from kforge.errors import from_rpc_error, UnavailableError
from kforge.progress import Progress
from kforge.records import Evaluation

BATCH_ID_METADATA = "kforge-batch-id"

# Codes that mean the stream broke rather than that the server refused the request.
_REATTACH_CODES = frozenset({grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.INTERNAL,
                             grpc.StatusCode.UNKNOWN, grpc.StatusCode.ABORTED,
                             grpc.StatusCode.CANCELLED})


class BatchStream(Iterator[Evaluation]):
    """Iterator of a batch's Evaluations in the order they finish.

    `batch_id` is available before the first result (reading it waits for the server's
    answer). `expected` is the number of evaluations when this client created the batch
    (candidates x GPU types), else None. Give up re-attaching after `reattach_timeout_s`
    without a result or a successful call; then the last error is raised.
    """

    def __init__(self, channel: grpc.Channel, call_factory: Callable, request,
                 expected: Optional[int] = None, reattach_timeout_s: float = 60.0,
                 progress: Optional[Progress] = None):
        self._channel = channel
        self._call_factory = call_factory
        self._request = request
        self.expected = expected
        self._reattach_timeout_s = reattach_timeout_s
        self._progress = progress
        self._batch_id: Optional[str] = request.batch_id or None
        self._seen: Set[str] = set()
        self._verdicts: dict = {}
        self._call = None
        self._cancelled = threading.Event()
        self._results = self._generate()

    @property
    def batch_id(self) -> Optional[str]:
        if self._batch_id is None and self._call is None and not self._cancelled.is_set():
            self._open(self._request)
        return self._batch_id

    def __next__(self) -> Evaluation:
        return next(self._results)

    def cancel(self) -> None:
        """Stops the stream; the batch itself goes on and can be re-attached by its id."""
        self._cancelled.set()
        if self._call is not None:
            self._call.cancel()

    def close(self) -> None:
        self.cancel()
        self._results.close()

    def __enter__(self) -> "BatchStream":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _open(self, request) -> bool:
        """Starts the call; True once the server answered with its headers."""
        self._call = self._call_factory(request)
        # Waits for the server's headers; None when the call failed first (the error then
        # surfaces when the stream is read).
        metadata = self._call.initial_metadata()
        for key, value in metadata or ():
            if key == BATCH_ID_METADATA:
                self._batch_id = value
        return metadata is not None

    def _generate(self) -> Iterator[Evaluation]:
        last_progress = time.monotonic()
        try:
            while True:
                try:
                    if self._call is None and self._open(self._request):
                        last_progress = time.monotonic()
                    for record in self._call:
                        last_progress = time.monotonic()
                        evaluation = Evaluation.from_proto(record)
                        if evaluation.evaluation_id in self._seen:
                            continue
                        self._seen.add(evaluation.evaluation_id)
                        self._show(evaluation)
                        yield evaluation
                    return
                except grpc.RpcError as e:
                    if (self._cancelled.is_set() or self._batch_id is None
                            or e.code() not in _REATTACH_CODES):
                        raise from_rpc_error(e) from e
                    self._wait_for_channel(e, last_progress + self._reattach_timeout_s)
                    self._call = None
                    self._request = type(self._request)(batch_id=self._batch_id)
        finally:
            if self._progress is not None:
                self._progress.close()

    def _wait_for_channel(self, error: grpc.RpcError, deadline: float) -> None:
        """Waits until the channel connects again, or raises the error at the deadline."""
        remaining = deadline - time.monotonic()
        if remaining > 0:
            try:
                grpc.channel_ready_future(self._channel).result(timeout=remaining)
                return
            except grpc.FutureTimeoutError:
                pass
        raise UnavailableError(
            f"lost the stream of batch {self._batch_id} and could not re-attach within "
            f"{self._reattach_timeout_s:g} s: {error.details()}", error.code()) from error

    def _show(self, evaluation: Evaluation) -> None:
        if self._progress is None:
            return
        self._verdicts[evaluation.verdict] = self._verdicts.get(evaluation.verdict, 0) + 1
        status = ", ".join(f"{v} {n}" for v, n in sorted(self._verdicts.items()))
        self._progress.update(len(self._seen), status)
