"""Exceptions of the distributed transport layer.

They carry plain strings and ints only, so that the layer above can turn them into messages
for users without knowing how the bytes travelled.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = [
    "AuthenticationError",
    "ConnectionClosedError",
    "DistributedError",
    "ProtocolError",
    "RemoteError",
    "ResourceExhausted",
    "UnknownWorkerError",
    "WorkerLostError",
    "error_fields",
]

# Error messages travel in headers, which have a size limit.
MAX_ERROR_MESSAGE = 16 * 1024


class DistributedError(Exception):
    """Base class of every error raised by `autograd_async.distributed`."""


class ProtocolError(DistributedError):
    """A frame or header broke the wire protocol; the message names the offending part."""


class AuthenticationError(DistributedError):
    """The peer did not prove knowledge of the shared token (or refused ours)."""


class ConnectionClosedError(DistributedError, RuntimeError):
    """An object was used outside its open state (before open or after close)."""


class ResourceExhausted(DistributedError):
    """A server refused work that would take it over a quota: bytes held for one peer or in
    total, or contexts per peer. The message names the quota, the figures and the flag."""

    def __init__(
        self, message: str, *, worker: str | None = None, context_id: int | None = None
    ) -> None:
        self.worker = worker
        self.context_id = context_id
        super().__init__(message)

    def __reduce__(self):
        return (_rebuild_exhausted, (self.args[0], self.worker, self.context_id))


def _rebuild_exhausted(
    message: str, worker: str | None, context_id: int | None
) -> ResourceExhausted:
    return ResourceExhausted(message, worker=worker, context_id=context_id)


class UnknownWorkerError(DistributedError, LookupError):
    """A worker name that the client (or a worker's peer list) does not know."""

    def __init__(self, worker: str, known: list[str]) -> None:
        self.worker = worker
        self.known = sorted(known)
        listed = ", ".join(repr(k) for k in self.known) or "none"
        super().__init__(f"unknown worker {worker!r}; known workers: {listed}")

    def __str__(self) -> str:  # LookupError would quote the message like a KeyError
        return self.args[0]

    def __reduce__(self):
        return (UnknownWorkerError, (self.worker, self.known))


class WorkerLostError(DistributedError):
    """The connection to a worker went away while work was pending on it."""

    def __init__(
        self, worker: str, context_id: int | None = None, *, reason: str | None = None
    ) -> None:
        self.worker = worker
        self.context_id = context_id
        self.reason = reason
        text = f"lost connection to worker {worker!r}"
        if context_id is not None:
            text += f" (context {context_id})"
        if reason:
            text += f": {reason}"
        super().__init__(text)

    def __reduce__(self):  # keep the keyword-only reason through copy/pickle of the exception
        return (_rebuild_worker_lost, (self.worker, self.context_id, self.reason))


def _rebuild_worker_lost(
    worker: str, context_id: int | None, reason: str | None
) -> WorkerLostError:
    return WorkerLostError(worker, context_id, reason=reason)


class RemoteError(DistributedError):
    """An exception raised by a remote handler, carried back by name and message only."""

    def __init__(
        self,
        remote_type: str,
        message: str,
        *,
        node: str | None = None,
        worker: str | None = None,
        context_id: int | None = None,
    ) -> None:
        self.remote_type = remote_type
        self.message = message
        self.node = node
        self.worker = worker
        self.context_id = context_id
        where = []
        if worker is not None:
            where.append(f"worker {worker!r}")
        if node is not None:
            where.append(f"node {node!r}")
        if context_id is not None:
            where.append(f"context {context_id}")
        suffix = f" [{', '.join(where)}]" if where else ""
        super().__init__(f"{remote_type}: {message}{suffix}")

    @classmethod
    def from_fields(cls, fields: Mapping[str, Any], worker: str | None = None) -> RemoteError:
        """Rebuild from the fields of an `error` frame; `worker` fills in a missing one."""
        return cls(
            fields["type"],
            fields["message"],
            node=fields.get("node"),
            worker=fields.get("worker", worker),
            context_id=fields.get("context_id"),
        )

    def __reduce__(self):
        return (
            _rebuild_remote,
            (self.remote_type, self.message, self.node, self.worker, self.context_id),
        )


def _rebuild_remote(
    remote_type: str,
    message: str,
    node: str | None,
    worker: str | None,
    context_id: int | None,
) -> RemoteError:
    return RemoteError(remote_type, message, node=node, worker=worker, context_id=context_id)


def error_fields(exc: BaseException, request_id: int | None) -> dict[str, Any]:
    """Fields of the `error` frame reporting `exc`: type name, message, node/worker/context."""
    message = str(exc)
    remote_type = type(exc).__name__
    if isinstance(exc, RemoteError):  # relayed from a peer: keep the original type and message
        remote_type, message = exc.remote_type, exc.message
    if len(message) > MAX_ERROR_MESSAGE:
        message = message[:MAX_ERROR_MESSAGE] + "... [truncated]"
    fields: dict[str, Any] = {"id": request_id, "type": remote_type, "message": message}
    for attr in ("node", "worker"):
        value = getattr(exc, attr, None)
        if isinstance(value, str):
            fields[attr] = value
    context_id = getattr(exc, "context_id", None)
    if isinstance(context_id, int) and not isinstance(context_id, bool):
        fields["context_id"] = context_id
    return fields
