"""Python exceptions for the gRPC errors a kforge server answers with.

Every RPC the client makes raises a subclass of KforgeError instead of grpc.RpcError; the
subclass follows the gRPC status code, and `code` and `details` keep the server's answer. A
caller that only cares about "the server said no" catches KforgeError.
"""

from __future__ import annotations

import contextlib
from typing import Iterator, Optional

import grpc


class KforgeError(Exception):
    """An RPC failed. `code` is the grpc.StatusCode, `details` the server's message."""

    def __init__(self, details: str, code: Optional[grpc.StatusCode] = None):
        super().__init__(details)
        self.details = details
        self.code = code

    def __str__(self) -> str:
        name = self.code.name if self.code is not None else "ERROR"
        return f"{name}: {self.details}"


class InvalidArgumentError(KforgeError, ValueError):
    """The request was malformed (INVALID_ARGUMENT), e.g. a task without `class Model`."""


class NotFoundError(KforgeError, LookupError):
    """The task, job or batch does not exist (NOT_FOUND)."""


class AlreadyExistsError(KforgeError):
    """ALREADY_EXISTS."""


class FailedPreconditionError(KforgeError):
    """The request cannot run in the current state (FAILED_PRECONDITION)."""


class ResourceExhaustedError(KforgeError):
    """The queue or a budget is full (RESOURCE_EXHAUSTED); retry later or send less."""


class UnavailableError(KforgeError, ConnectionError):
    """The server cannot be reached or went away (UNAVAILABLE)."""


class DeadlineExceededError(KforgeError, TimeoutError):
    """The call took longer than its deadline (DEADLINE_EXCEEDED)."""


class UnimplementedError(KforgeError, NotImplementedError):
    """The server does not implement this RPC (UNIMPLEMENTED), e.g. an older coordinator."""


class UnauthenticatedError(KforgeError, PermissionError):
    """No valid credentials (UNAUTHENTICATED): no token, or an unknown, revoked or expired one;
    `details` says which."""


class PermissionDeniedError(KforgeError, PermissionError):
    """A valid token without the role the call needs (PERMISSION_DENIED); `details` names the
    principal, its roles and the role needed."""


class CancelledError(KforgeError):
    """The call was cancelled (CANCELLED)."""


class InternalError(KforgeError):
    """The server failed (INTERNAL, UNKNOWN, DATA_LOSS)."""


_BY_CODE = {
    grpc.StatusCode.INVALID_ARGUMENT: InvalidArgumentError,
    grpc.StatusCode.OUT_OF_RANGE: InvalidArgumentError,
    grpc.StatusCode.NOT_FOUND: NotFoundError,
    grpc.StatusCode.ALREADY_EXISTS: AlreadyExistsError,
    grpc.StatusCode.FAILED_PRECONDITION: FailedPreconditionError,
    grpc.StatusCode.RESOURCE_EXHAUSTED: ResourceExhaustedError,
    grpc.StatusCode.UNAVAILABLE: UnavailableError,
    grpc.StatusCode.DEADLINE_EXCEEDED: DeadlineExceededError,
    grpc.StatusCode.UNIMPLEMENTED: UnimplementedError,
    grpc.StatusCode.CANCELLED: CancelledError,
    grpc.StatusCode.UNAUTHENTICATED: UnauthenticatedError,
    grpc.StatusCode.PERMISSION_DENIED: PermissionDeniedError,
    grpc.StatusCode.INTERNAL: InternalError,
    grpc.StatusCode.UNKNOWN: InternalError,
    grpc.StatusCode.DATA_LOSS: InternalError,
}


def from_rpc_error(error: grpc.RpcError) -> KforgeError:
    """The KforgeError subclass for a failed call (a grpc.Call carries code and details)."""
    code = error.code() if hasattr(error, "code") else None
    details = error.details() if hasattr(error, "details") else None
    cls = _BY_CODE.get(code, KforgeError)
    return cls(details or "the server gave no details", code)


@contextlib.contextmanager
def translated() -> Iterator[None]:
    """Turns a grpc.RpcError raised inside the block into the matching KforgeError."""
    try:
        yield
    except grpc.RpcError as e:
        raise from_rpc_error(e) from e
