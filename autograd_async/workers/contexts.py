"""A worker's distributed contexts: what it recorded per context, and when each expires.

Plain bookkeeping with an injectable clock, no I/O: the server drives it. Per context the worker
keeps, for each recorded forward call, the tensors it received that require grad (leaves of its
part of the graph), the outputs it sent back (the roots of that part) and the parameters used;
plus the gradients accumulated for its parameters, and the peers it reached under the context.
"""

from __future__ import annotations

import itertools
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from autograd_async.core.tensor import Tensor
from autograd_async.distributed.context import ContextBase
from autograd_async.distributed.errors import ResourceExhausted

__all__ = [
    "DEFAULT_MAX_CONTEXTS_PER_PEER",
    "CallRecord",
    "ContextStore",
    "ParamKey",
    "WorkerContext",
]

ParamKey = tuple[int, str]  # (module id, parameter name)
DEFAULT_MAX_CONTEXTS_PER_PEER = 1024


@dataclass
class CallRecord:
    """One recorded forward call: leaves received, outputs sent, parameters it used."""

    leaves: list[Tensor]
    outputs: list[Tensor]
    params: list[tuple[ParamKey, Tensor]] = field(default_factory=list)
    what: str = ""

    @property
    def nbytes(self) -> int:
        """Bytes of the tensors it keeps: the leaves received and the outputs sent (what its
        graph saves is not counted: an estimate, not a measurement)."""
        return sum(t._data.nbytes for t in (*self.leaves, *self.outputs))


class WorkerContext(ContextBase):
    """The worker's side of a distributed context."""

    def __init__(self, context_id: int, now: float, owner: str = "?") -> None:
        super().__init__(context_id)
        self.owner = owner  # the peer that made it: its bytes count against that peer's quota
        self.charged = 0  # bytes counted for it in the worker's ByteBudget
        self.records: dict[int, CallRecord] = {}
        self.grads: dict[ParamKey, Any] = {}
        self.last_used = now
        self.busy = 0
        self._call_ids = itertools.count(1)

    def add_call(self, record: CallRecord) -> int:
        """Keep a forward call's record; return the id its receive node will send back."""
        call_id = next(self._call_ids)
        self.records[call_id] = record
        return call_id

    def accumulate(self, key: ParamKey, grad: Any) -> None:
        """Add a parameter's gradient (an array on its device) into the context."""
        held = self.grads.get(key)
        self.grads[key] = grad if held is None else held + grad

    @property
    def nbytes(self) -> int:
        """Bytes it holds: its calls' records and its parameters' gradients."""
        return sum(r.nbytes for r in self.records.values()) + sum(
            g.nbytes for g in self.grads.values()
        )

    def forget_module(self, module_id: int) -> None:
        """Drop the gradients of a deleted module."""
        for key in [k for k in self.grads if k[0] == module_id]:
            del self.grads[key]


class ContextStore:
    """Contexts by id; those idle longer than `ttl` seconds (and not busy) expire. A peer may
    own at most `max_per_peer` of them."""

    def __init__(
        self,
        ttl: float,
        clock: Callable[[], float] = time.monotonic,
        *,
        max_per_peer: int = DEFAULT_MAX_CONTEXTS_PER_PEER,
    ) -> None:
        if ttl <= 0:
            raise ValueError(f"context TTL must be positive, got {ttl}")
        if max_per_peer < 1:
            raise ValueError(f"max contexts per peer must be at least 1, got {max_per_peer}")
        self.ttl = float(ttl)
        self.clock = clock
        self.max_per_peer = max_per_peer
        self._contexts: dict[int, WorkerContext] = {}
        self._owned: Counter[str] = Counter()
        self.expired_total = 0

    def __len__(self) -> int:
        return len(self._contexts)

    def __iter__(self) -> Iterator[WorkerContext]:
        return iter(list(self._contexts.values()))

    def ids(self) -> list[int]:
        """The ids of the live contexts."""
        return list(self._contexts)

    def get(self, context_id: int) -> WorkerContext | None:
        """The context with this id, touched (its TTL restarts), or None."""
        ctx = self._contexts.get(context_id)
        if ctx is not None:
            ctx.last_used = self.clock()
        return ctx

    def get_or_create(self, context_id: int, owner: str = "?") -> WorkerContext:
        """The context with this id, made (for `owner`) on first use; ResourceExhausted when
        `owner` already has `max_per_peer` contexts."""
        ctx = self.get(context_id)
        if ctx is None:
            if self._owned[owner] >= self.max_per_peer:
                raise ResourceExhausted(
                    f"refused to open context {context_id}: peer {owner!r} already holds "
                    f"{self._owned[owner]} contexts, its quota (--max-contexts-per-peer); "
                    "release contexts (leave `async with distributed.context(...)`) or let "
                    "them expire",
                    context_id=context_id,
                )
            ctx = self._contexts[context_id] = WorkerContext(context_id, self.clock(), owner)
            self._owned[owner] += 1
        return ctx

    def owned(self, owner: str) -> int:
        """How many live contexts `owner` made."""
        return self._owned[owner]

    @contextmanager
    def using(self, ctx: WorkerContext) -> Iterator[WorkerContext]:
        """Mark `ctx` busy for the extent of a request: a busy context never expires."""
        ctx.busy += 1
        try:
            yield ctx
        finally:
            ctx.busy -= 1
            ctx.last_used = self.clock()

    def release(self, context_id: int) -> WorkerContext | None:
        """Remove and return a context (None if unknown); the caller releases its peers."""
        ctx = self._contexts.pop(context_id, None)
        if ctx is not None:
            ctx.released = True
            ctx.records.clear()
            self._owned[ctx.owner] -= 1
            if not self._owned[ctx.owner]:
                del self._owned[ctx.owner]
        return ctx

    def expire(self) -> list[WorkerContext]:
        """Remove and return the contexts idle for longer than the TTL."""
        deadline = self.clock() - self.ttl
        stale = [c.id for c in self._contexts.values() if c.busy == 0 and c.last_used < deadline]
        out = [self.release(cid) for cid in stale]
        self.expired_total += len(out)
        return [c for c in out if c is not None]

    def release_all(self) -> list[WorkerContext]:
        """Remove and return every context (shutdown)."""
        return [c for c in (self.release(cid) for cid in self.ids()) if c is not None]
