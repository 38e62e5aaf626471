"""The receive node: where a remote call's outputs enter the local graph.

`Recv` is an async custom Function. Its forward only hands over the tensors that came back from
the worker; its backward sends the gradients of those outputs to the worker, which runs its
part of the graph, and returns the gradients of the tensors that were sent. It runs on its
device's loop like any async node and hops to the client's loop for the network round trip.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ..autograd.function import Function
from ..core.tensor import Tensor
from ..devices import Device
from . import methods
from .codec import host_array, to_device

if TYPE_CHECKING:
    from .client import Client
    from .context import ContextBase

__all__ = ["Recv", "RemoteCall"]


class RemoteCall:
    """One forward call recorded on a worker: what its receive node needs for backward."""

    __slots__ = (
        "client",
        "worker",
        "context",
        "call_id",
        "outputs",
        "differentiable",
        "input_meta",
    )

    def __init__(
        self,
        client: Client,
        worker: str,
        context: ContextBase,
        call_id: int,
        outputs: list[Tensor],
        differentiable: list[bool],
        input_meta: list[tuple[Device, np.dtype]],
    ) -> None:
        self.client = client
        self.worker = worker
        self.context = context
        self.call_id = call_id
        self.outputs: list[Tensor] | None = outputs
        self.differentiable = differentiable
        self.input_meta = input_meta

    async def backward(self, grads: Sequence[Tensor | None]) -> list[Tensor | None]:
        """Send output gradients to the worker; return the gradients of the inputs it got."""
        ctx = self.context
        ctx.check_open()
        n_inputs = len(self.input_meta)
        given = [(i, g) for i, g in enumerate(grads) if g is not None]
        slots = [i for i, _ in given]
        if not slots:
            return [None] * n_inputs
        kwargs = {
            "context_id": ctx.id,
            "call_id": self.call_id,
            "outputs": slots,
            "retain_graph": ctx.retain_graph,
        }
        arrays = [host_array(g) for _, g in given]
        result, received = await self.client.request(
            self.worker, methods.BACKWARD, kwargs, arrays, context_id=ctx.id
        )
        out: list[Tensor | None] = [None] * n_inputs
        for slot, array in zip(result["inputs"], received, strict=True):
            if not 0 <= slot < n_inputs:
                raise RuntimeError(
                    f"worker {self.worker!r} returned a gradient for input {slot} of call "
                    f"{self.call_id}, which has {n_inputs} inputs that require grad"
                )
            device, dtype = self.input_meta[slot]
            out[slot] = to_device(array.astype(dtype, copy=False), device)
        return out

    def __repr__(self) -> str:
        return f"<RemoteCall {self.call_id} on {self.worker!r}, context {self.context.id}>"


class Recv(Function):
    """Outputs of a remote call; backward sends their gradients to the worker (`RecvBackward`)."""

    @staticmethod
    def forward(ctx: Any, call: RemoteCall, *inputs: Tensor) -> tuple[Tensor, ...]:
        """Hand over the received outputs; non-differentiable ones get no gradient."""
        ctx.set_materialize_grads(False)
        ctx.remote_call = call
        # Its backward runs requests on the client's loop: the engine refuses a blocking
        # backward on that loop's own thread up front instead of waiting for a timeout.
        ctx.needs_event_loop = call.client.loop
        ctx.needs_event_loop_for = f"the requests of distributed client {call.client.name!r}"
        outputs, call.outputs = call.outputs or [], None
        for out, differentiable in zip(outputs, call.differentiable, strict=True):
            if not differentiable:
                ctx.mark_non_differentiable(out)
        return tuple(outputs)

    @staticmethod
    async def backward(ctx: Any, *grads: Tensor | None) -> tuple[Tensor | None, ...]:
        """Await the worker's part of backward; gradients for the inputs that were sent."""
        call: RemoteCall = ctx.remote_call
        grads_in = await call.client.run_in_loop(call.backward(grads))
        return (None, *grads_in)
