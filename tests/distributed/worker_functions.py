"""Functions the test workers serve, loaded with `--load tests.distributed.worker_functions`."""

from __future__ import annotations

import asyncio
import time

import numpy as np

import autograd_async as ag
from autograd_async import nn
from autograd_async.autograd import Function
from autograd_async.workers.registry import current_worker, register_function, register_module_class


class Explode(Function):
    """Identity forward; backward raises, so tests see a remote node's failure."""

    @staticmethod
    def forward(ctx, x):
        return x.clone()

    @staticmethod
    def backward(ctx, grad):
        raise ValueError("boom in backward")


class SlowIdentity(Function):
    """Identity whose async backward sleeps first (a worker busy in backward)."""

    @staticmethod
    def forward(ctx, x, seconds):
        ctx.seconds = seconds
        return x.clone()

    @staticmethod
    async def backward(ctx, grad):
        await asyncio.sleep(ctx.seconds)
        return grad, None


@register_function
def explode(x):
    """x, whose backward raises ValueError."""
    return Explode.apply(x)


@register_function
def slow_backward(x, *, seconds=1.0):
    """x, whose backward takes `seconds`."""
    return SlowIdentity.apply(x, seconds)


@register_function
def mul_add(x, y, *, alpha=1.0):
    """(x * y, x + alpha * y, 'tag'): several outputs, one of them not a tensor."""
    return x * y, x + y * alpha, "tag"


@register_function
def affine(x, w, b):
    """x @ w + b."""
    return x.matmul(w) + b


@register_function
def argmax_and_square(x):
    """(argmax over the last dim: an integer output without gradient, x ** 2)."""
    return x.argmax(-1), x * x


@register_function
async def tanh_then_peer(x, *, peer, function="mul", args=(), kwargs=None):
    """tanh(x) here, then `function` on `peer` (worker to worker), under the same context."""
    y = x.tanh()
    return await current_worker().peers.call(peer, function, y, *args, **(kwargs or {}))


@register_function
def scale_by_parameter(x):
    """x times a tensor made here that requires grad (not a received one): a local leaf."""
    w = ag.full(tuple(x.shape), 2.0, dtype=x.dtype, requires_grad=True)
    return x * w


class Scale(nn.Module):
    """y = x * weight (an extra module class registered by --load)."""

    def __init__(self, features: int, device=None, dtype=None):
        super().__init__()
        self.weight = nn.Parameter(ag.ones(features, device=device, dtype=dtype))

    def forward(self, x):
        return x * self.weight


register_module_class(Scale)


@register_function
async def sleepy(x, *, seconds=1.0):
    """x + 1, after `seconds` (a request still in flight when the worker is told to stop)."""
    await asyncio.sleep(seconds)
    return x + 1


@register_function
def blocking_sleep(x, *, seconds=1.0):
    """x + 1 after blocking its thread for `seconds`: a long synchronous computation."""
    time.sleep(seconds)
    return x + 1


# --- memory hogs: what a hostile peer may ask of a worker (tests/distributed/test_memory_budget.py)


@register_function
def make_zeros(*, shape):
    """zeros of any shape the caller names."""
    return ag.zeros(*shape)


@register_function
def outer(x, y):
    """The outer product of two vectors (no output_nbytes: only counted while it runs)."""
    return ag.outer(x, y)


@register_function
def expand_rows(x, *, rows):
    """`rows` copies of the row x, materialised (expand, then contiguous)."""
    return x.expand(rows, x.shape[-1]).contiguous()


@register_function
async def hold(x, *, mib, seconds=0.5):
    """x + 1 after holding `mib` MiB for `seconds`, awaiting on the loop meanwhile."""
    block = ag.ones(mib << 18)
    await asyncio.sleep(seconds)
    return x + block[: x.shape[0]]


class Grower(nn.Module):
    """A module whose forward allocates `steps` blocks of `mib` MiB before answering."""

    def __init__(self, mib: int = 1, steps: int = 1):
        super().__init__()
        self.mib, self.steps = mib, steps

    def forward(self, x):
        kept = [ag.ones(self.mib << 18) + i for i in range(self.steps)]
        return x * 2 + kept[-1][0]


register_module_class(Grower)


class InflatingBackward(Function):
    """Identity forward; backward builds a `mib`-MiB temporary before its small gradient, as a
    backward that materialises big gradients does."""

    @staticmethod
    def forward(ctx, x, mib):
        ctx.mib = mib
        return x.clone()

    @staticmethod
    def backward(ctx, grad):
        scratch = np.ones(ctx.mib << 18, dtype=np.float32)  # mib MiB of float32
        return grad * float(scratch[:1].sum()), None


@register_function
def inflating_backward(x, *, mib=1):
    """x, whose backward allocates `mib` MiB on the worker's device thread."""
    return InflatingBackward.apply(x, mib)
