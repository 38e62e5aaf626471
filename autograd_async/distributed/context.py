"""Distributed autograd contexts: an id under which every worker records the forward calls it
serves, the gradients of its parameters, and what it must release when the context ends.

    async with distributed.context(client) as ctx:
        y = await remote_module(x)
        loss = (y * y).sum()
        await distributed.backward(ctx, [loss])
        grads = await ctx.get_gradients(remote_module)

The context is ambient (a ContextVar) inside the `async with`, so calls made there record under
it; a worker that calls its peers while serving a call passes the same id on.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..autograd.api import backward_async
from ..core.tensor import Tensor
from ..creation import as_tensor, zeros
from ..devices import Device
from . import methods
from .errors import DistributedError

if TYPE_CHECKING:
    from .client import Client
    from .remote_module import ParameterRef, RemoteModule

__all__ = ["ContextBase", "DistributedContext", "backward", "context", "current_context"]

logger = logging.getLogger("autograd_async.distributed")

# Context ids: a random 16-bit origin (one per client) above a 47-bit counter, so ids made by
# different clients differ without any coordination, and every id fits a signed int64.
COUNTER_BITS = 47

current_context: contextvars.ContextVar[ContextBase | None] = contextvars.ContextVar(
    "autograd_async_distributed_context", default=None
)
"""The distributed autograd context entered by this task (`async with distributed.context(...)`),
or None outside one."""


class ContextReleasedError(DistributedError, RuntimeError):
    """A distributed context was used after it was released."""


class ContextBase:
    """What forward calls and receive nodes need of a context: its id, the workers it touched,
    the retain-graph flag of the backward in progress, and anchors for receive nodes."""

    def __init__(self, context_id: int) -> None:
        self.id = context_id
        self.retain_graph = False
        self.released = False
        # worker name -> the client that reached it (several clients may share a context)
        self._touched: dict[str, Client] = {}
        self._anchors: dict[Device, Tensor] = {}

    def touch(self, worker: str, client: Client) -> None:
        """Note that a call under this context reached `worker` through `client`."""
        self._touched.setdefault(worker, client)

    @property
    def workers(self) -> list[str]:
        """Names of the workers that calls under this context reached directly."""
        return list(self._touched)

    def anchor(self, device: Device) -> Tensor:
        """A leaf that requires grad, linking a receive node into the graph when no input did."""
        found = self._anchors.get(device)
        if found is None:
            found = self._anchors[device] = zeros((), device=device, requires_grad=True)
        return found

    def anchors(self) -> list[Tensor]:
        """The anchors made so far (a worker's backward differentiates with respect to them)."""
        return list(self._anchors.values())

    def check_open(self) -> None:
        """Raise ContextReleasedError once the context has been released."""
        if self.released:
            raise ContextReleasedError(f"distributed context {self.id} has been released")

    async def release_touched(self, timeout: float) -> None:
        """Ask every worker this context reached to release it; failures are logged only."""
        touched, self._touched = self._touched, {}
        self._anchors.clear()

        async def release_one(worker: str, client: Client) -> None:
            try:
                await client.request(
                    worker, methods.CONTEXT_RELEASE, {"context_id": self.id}, timeout=timeout
                )
            except Exception as exc:  # noqa: BLE001 - a dead worker's contexts died with it
                logger.info("releasing context %d on worker %r failed: %s", self.id, worker, exc)

        # A worker known lost is not called again (reconnecting would cost a second timeout):
        # its contexts died with it, or expire there after their time to live.
        reachable = {}
        for worker, client in touched.items():
            if client.is_lost(worker):
                logger.info("not releasing context %d on worker %r: it was lost", self.id, worker)
            else:
                reachable[worker] = client
        if reachable:
            await asyncio.gather(*(release_one(w, c) for w, c in reachable.items()))


class DistributedContext(ContextBase):
    """A client's distributed autograd context; use it as `async with context(client)`."""

    def __init__(self, client: Client) -> None:
        super().__init__(client.new_context_id())
        self.client = client
        self._tokens: list[contextvars.Token] = []

    async def __aenter__(self) -> DistributedContext:
        self.check_open()
        self._tokens.append(current_context.set(self))
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        current_context.reset(self._tokens.pop())
        await self.release()

    async def release(self) -> None:
        """Release the context on every worker it touched (also after an error); idempotent."""
        if self.released:
            return
        self.released = True
        await self.release_touched(min(self.client.timeout, 10.0))

    async def get_gradients(
        self, target: RemoteModule | str
    ) -> dict[str, Tensor] | dict[ParameterRef, Tensor]:
        """Gradients accumulated in this context: a remote module's by parameter name, or all of
        a worker's (given its name) by ParameterRef."""
        from .remote_module import ParameterRef, RemoteModule  # noqa: PLC0415 - above us

        self.check_open()
        if isinstance(target, RemoteModule):
            client, worker = target.client, target.worker
            kwargs = {"context_id": self.id, "module_id": target.module_id}
        elif isinstance(target, str):
            client, worker = self._touched.get(target, self.client), target
            kwargs = {"context_id": self.id}
        else:
            raise TypeError(
                f"get_gradients takes a RemoteModule or a worker name, got {type(target).__name__}"
            )
        result, arrays = await client.request(
            worker, methods.CONTEXT_GRADIENTS, kwargs, context_id=self.id
        )
        tensors = [as_tensor(a) for a in arrays]
        pairs = zip(result["modules"], result["names"], tensors, strict=True)
        if isinstance(target, RemoteModule):
            return {name: t for _, name, t in pairs}
        return {ParameterRef(worker, module_id, name, client): t for module_id, name, t in pairs}

    def __repr__(self) -> str:
        state = "released" if self.released else "open"
        return f"<DistributedContext {self.id} {state}, workers {self.workers}>"


def context(client: Client) -> DistributedContext:
    """A new distributed autograd context for calls made through `client` (`async with`)."""
    return DistributedContext(client)


async def backward(
    ctx: ContextBase,
    roots: Sequence[Tensor] | Tensor,
    grad_tensors: Sequence[Tensor | None] | None = None,
    retain_graph: bool = False,
) -> None:
    """Run backward from `roots` across every worker the graph reaches; return when all are done.

    Local leaves accumulate into `.grad`; parameters of remote modules accumulate in the context
    on their workers (read them with `ctx.get_gradients`).
    """
    if not isinstance(ctx, ContextBase):
        raise TypeError(f"backward expects a distributed context, got {type(ctx).__name__}")
    ctx.check_open()
    ctx.retain_graph = bool(retain_graph)
    await backward_async(roots, grad_tensors, retain_graph=bool(retain_graph))
