"""The function the Ray benchmark's workers serve (`--load relay_functions`): a relay to a
peer, so a distributed backward sends the gradient from one worker to the other and back."""

from __future__ import annotations

from autograd_async.workers.registry import current_worker, register_function


@register_function
async def relay(x, *, peer):
    """clone(x) computed on `peer`: the tensor goes worker to worker, its gradient comes back."""
    return await current_worker().peers.call(peer, "clone", x)
