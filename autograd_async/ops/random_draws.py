"""Random draws shaped by tensors: `bernoulli`, `normal`, `multinomial`, `poisson`.

Drawn on the tensors' device by its backend, from the `generator` given or the default one
(`aa.manual_seed`). As in PyTorch, a result is recorded against the tensors of parameters that
require grad (`BernoulliBackward0`, `NormalBackward1..3`, `PoissonBackward0`) but their gradient
is zero: a sample is not differentiated through its distribution's parameters. `multinomial`
returns indices, outside the graph.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..core.op import Op, broadcast_error
from ..core.tensor import Tensor, as_dtype, made
from ..creation import Generator, _device, _shape
from ..devices import enters_device, launching
from ..dtypes import default_float
from .dual import xp_of, zeros_like
from .inplace import _operand
from .random_fills import (
    bernoulli_values,
    check_probabilities,
    device_state,
    require_floating,
    torch_type_name,
    zeros_shaped,
)

BERNOULLI_P_GRAD_MESSAGE = "derivative for aten::bernoulli is not implemented"


class BernoulliBackward0(Op):
    """`bernoulli(input)`: 1 with probability `input`; zero gradient for `input`."""

    __slots__ = ()
    op_name = "bernoulli"

    def forward(self, p: Any, generator: Generator | None) -> Any:
        return bernoulli_values(generator, self.device, p.shape, p.dtype, p)

    def backward(self, g: Any) -> Any:
        return zeros_like(g)


class BernoulliWithP(Op):
    """`bernoulli(input, p)`: only `input`'s shape and dtype matter, and PyTorch records a node
    whose backward refuses (its `NotImplemented`), which this one follows."""

    __slots__ = ()
    op_name = "bernoulli"

    def name(self) -> str:
        """PyTorch's name for this node."""
        return "NotImplemented"

    def forward(self, a: Any, p: float, generator: Generator | None) -> Any:
        return bernoulli_values(generator, self.device, a.shape, a.dtype, p)

    def backward(self, g: Any) -> Any:
        raise RuntimeError(BERNOULLI_P_GRAD_MESSAGE)


def bernoulli(
    input: Tensor, p: float | None = None, *, generator: Generator | None = None
) -> Tensor:
    """1 with probability `input` (each element in [0, 1]), else 0, in `input`'s dtype; with a
    float `p`, 1 with probability `p` in a tensor shaped like `input`."""
    if p is not None:
        if isinstance(p, Tensor):
            raise TypeError(
                "bernoulli(input, p) takes a float p; for a tensor of probabilities use "
                "bernoulli(p) or input.bernoulli_(p)"
            )
        p = float(p)
        if not 0 <= p <= 1:
            raise RuntimeError(f"bernoulli_ expects p to be in [0, 1], but got p={p:g}")
        return BernoulliWithP.apply(input, p=p, generator=generator)
    require_floating(input, "bernoulli_tensor_cpu_p_")
    with launching(input.device, "bernoulli"):
        check_probabilities(input)
    return BernoulliBackward0.apply(input, generator=generator)


# ------------------------------------------------------------------- normal
class _Normal(Op):
    """mean + std * N(0, 1), for the tensors among mean and std; zero gradients for them."""

    __slots__ = ("_metas",)

    def forward(self, *arrays: Any, scalars: tuple, generator: Generator | None) -> Any:
        values = iter(arrays)
        mean, std = (next(values) if s is None else s for s in scalars)
        self._metas = tuple((a.shape, a.dtype) for a in arrays)
        shape = np.broadcast_shapes(*(a.shape for a in arrays))
        dtype = arrays[0].dtype
        backend, state = device_state(generator, self.device)
        return (backend.random_normal(state, shape, dtype) * std + mean).astype(dtype, copy=False)

    def backward(self, g: Any) -> tuple:
        return tuple(
            zeros_shaped(g, shape, dtype) if need else None
            for need, (shape, dtype) in zip(self.needs_input_grad, self._metas)
        )


class NormalBackward1(_Normal):
    """`normal(mean: Tensor, std: float)`."""

    __slots__ = ()
    op_name = "normal"


class NormalBackward2(_Normal):
    """`normal(mean: float, std: Tensor)`."""

    __slots__ = ()
    op_name = "normal"


class NormalBackward3(_Normal):
    """`normal(mean: Tensor, std: Tensor)`."""

    __slots__ = ()
    op_name = "normal"


def normal(
    mean: Tensor | float,
    std: Tensor | float = 1.0,
    size: Any = None,
    *,
    generator: Generator | None = None,
    dtype: Any = None,
    device: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    """Samples of N(mean, std**2): `mean` and `std` tensors (broadcast) or floats; with two
    floats, `size` gives the shape (and `dtype`, `device`, `requires_grad` apply)."""
    mean_t, std_t = isinstance(mean, Tensor), isinstance(std, Tensor)
    if not (mean_t or std_t):
        return _normal_of_floats(
            float(mean), float(std), size, generator, dtype, device, requires_grad
        )
    if size is not None:
        raise TypeError("normal(mean, std, size): size is only taken with a float mean and std")
    if isinstance(mean, Tensor) and isinstance(std, Tensor):
        same_device: Tensor = _operand(mean, std)  # refuses a std on another device
        std = same_device
        try:
            np.broadcast_shapes(mean.shape, std.shape)
        except ValueError:
            raise broadcast_error("normal", (mean._data, std._data)) from None
    for t in (mean, std):
        if isinstance(t, Tensor):
            require_floating(t, "normal_kernel_cpu")
    if isinstance(std, Tensor):
        with launching(std.device, "normal"):
            data = std._data
            if data.size and not bool((data >= 0).all()):
                raise RuntimeError("normal expects all elements of std >= 0.0")
    elif not float(std) >= 0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {float(std):g}")
    node = NormalBackward3 if mean_t and std_t else NormalBackward1 if mean_t else NormalBackward2
    tensors = tuple(t for t in (mean, std) if isinstance(t, Tensor))
    scalars = tuple(None if isinstance(t, Tensor) else float(t) for t in (mean, std))
    return node.apply(*tensors, scalars=scalars, generator=generator)


def _normal_of_floats(
    mean: float,
    std: float,
    size: Any,
    generator: Generator | None,
    dtype: Any,
    device: Any,
    requires_grad: bool,
) -> Tensor:
    if size is None:
        raise TypeError("normal(mean, std) with a float mean and std needs a size")
    if not std >= 0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {std:g}")
    dtype = as_dtype(dtype) or default_float()
    shape = _shape((size,) if isinstance(size, int) else tuple(size))
    dev = _device(device)
    backend, state = device_state(generator, dev)
    with launching(dev, "normal"):
        values = backend.random_normal(state, shape, dtype)
        if (mean, std) != (0.0, 1.0):
            values = (values * std + mean).astype(dtype, copy=False)
    t = made(Tensor._wrap(backend.asarray(values, dev) if backend.host_memory else values, dev))
    if requires_grad:
        t.requires_grad_(True)
    return t


# -------------------------------------------------------------- multinomial
@enters_device
def multinomial(
    input: Tensor,
    num_samples: int,
    replacement: bool = False,
    *,
    generator: Generator | None = None,
) -> Tensor:
    """Indices of categories drawn with probabilities proportional to each row of `input` (1-D
    or 2-D), `num_samples` per row, with or without replacement (int64, no gradient)."""
    if input.dtype.kind != "f":
        raise RuntimeError(
            "multinomial only supports floating-point dtypes for input, got: "
            f"{torch_type_name(input.dtype)}"
        )
    if input.ndim not in (1, 2):
        raise RuntimeError("prob_dist must be 1 or 2 dim")
    num_samples = int(num_samples)
    if num_samples <= 0:
        raise RuntimeError("cannot sample n_sample <= 0 samples")
    categories = input.shape[-1]
    if not replacement and num_samples > categories:
        raise RuntimeError(
            "cannot sample n_sample > prob_dist.size(-1) samples without replacement"
        )
    probs = input._data.reshape(-1, categories).astype(np.float64)
    xp = xp_of(probs)
    if probs.size and not bool((xp.isfinite(probs) & (probs >= 0)).all()):
        raise RuntimeError("probability tensor contains either `inf`, `nan` or element < 0")
    if probs.shape[0] and not bool((probs.sum(axis=1) > 0).all()):
        raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
    backend, state = device_state(generator, input.device)
    if replacement:
        picked = _with_replacement(backend, state, probs, num_samples)
    else:
        # PyTorch's way: the `num_samples` largest of p / Exp(1) are a draw without replacement.
        keys = probs / backend.random_exponential(state, probs.shape, np.float64)
        picked = xp.argsort(-keys, axis=1)[:, :num_samples]
    out = picked.astype(np.int64, copy=False).reshape(input.shape[:-1] + (num_samples,))
    return made(Tensor._wrap(out, input.device))


def _with_replacement(backend: Any, state: Any, probs: Any, num_samples: int) -> Any:
    """Each row's draws: where uniform numbers fall in the row's cumulative distribution.

    The rows are searched at once: row i's distribution is shifted to [i, i + 1], and indices
    past a row's last category of nonzero probability (rounding at its top) are pulled back.
    """
    xp = xp_of(probs)
    rows, categories = probs.shape
    cdf = xp.cumsum(probs, axis=1)
    cdf /= cdf[:, -1:]
    offsets = xp.arange(rows, dtype=np.float64)[:, None]
    draws = backend.random_uniform(state, (rows, num_samples), np.float64) + offsets
    flat = xp.searchsorted((cdf + offsets).reshape(-1), draws.reshape(-1), side="right")
    picked = flat.reshape(rows, num_samples) - offsets.astype(np.int64) * categories
    last = categories - 1 - xp.argmax((probs > 0)[:, ::-1], axis=1)
    return xp.minimum(xp.maximum(picked, 0), last[:, None])


# ------------------------------------------------------------------ poisson
class PoissonBackward0(Op):
    """Poisson samples of the rates in `input`; zero gradient for the rates."""

    __slots__ = ()
    op_name = "poisson"

    def forward(self, rates: Any, generator: Generator | None) -> Any:
        backend, state = device_state(generator, self.device)
        return backend.random_poisson(state, rates, rates.dtype)

    def backward(self, g: Any) -> Any:
        return zeros_like(g)


def poisson(input: Tensor, generator: Generator | None = None) -> Tensor:
    """A sample of the Poisson distribution of each rate in `input` (floating, non-negative)."""
    require_floating(input, "poisson_cpu")
    with launching(input.device, "poisson"):
        data = input._data
        if data.size and not bool((data >= 0).all()):
            raise RuntimeError("invalid Poisson rate, expected rate to be non-negative")
        if data.size and not bool(xp_of(data).isfinite(data).all()):
            raise RuntimeError("invalid Poisson rate, expected a finite rate")
    return PoissonBackward0.apply(input, generator=generator)


FUNCTIONS = {
    "bernoulli": bernoulli,
    "normal": normal,
    "multinomial": multinomial,
    "poisson": poisson,
}
