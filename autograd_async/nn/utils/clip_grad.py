"""Gradient clipping (PyTorch's `torch.nn.utils.clip_grad_norm_` and `clip_grad_value_`).

Both work on the gradients' arrays in place, outside the graph, on each gradient's own device,
and bump the gradients' versions, as an optimizer step does.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import numpy as np

from ...backends.sanitizer import sanitizer
from ...backends.sim_mode import sim_mode_state
from ...core.stream_checks import check_op_streams
from ...core.tensor import Tensor
from ...devices import CPU, array_module, each_on_its_device, launching, move_array


def _grads(parameters: Tensor | Iterable[Tensor]) -> list[Tensor]:
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    return [p.grad for p in parameters if p.grad is not None]


def _norm(array: Any, xp: Any, norm_type: float) -> Any:
    """The `norm_type` vector norm of an array, as a 0-d array of its dtype."""
    magnitude = xp.abs(array)
    if norm_type == math.inf:
        return magnitude.max() if magnitude.size else xp.zeros((), array.dtype)
    if norm_type == -math.inf:
        return magnitude.min() if magnitude.size else xp.full((), math.inf, array.dtype)
    if norm_type == 0:
        return xp.asarray((array != 0).sum(), dtype=array.dtype)
    if norm_type == 1:
        return magnitude.sum()
    if norm_type == 2:
        return xp.sqrt(xp.vdot(array.ravel(), array.ravel()).real.astype(array.dtype))
    return (magnitude**norm_type).sum() ** (1.0 / norm_type)


def clip_grad_norm_(
    parameters: Tensor | Iterable[Tensor],
    max_norm: float,
    norm_type: float = 2.0,
    error_if_nonfinite: bool = False,
    foreach: bool | None = None,
) -> Tensor:
    """Scale the gradients so that their joint norm is at most `max_norm`; returns that norm.

    The joint norm is the norm of the per-gradient norms (computed on each gradient's device,
    gathered on the first one's). `foreach` is accepted for PyTorch's signature.
    """
    del foreach  # each gradient is one array operation already
    grads = _grads(parameters)
    norm_type = float(norm_type)
    if not grads:
        return Tensor._wrap(np.zeros((), np.float32), CPU)
    first = grads[0].device
    norms = []
    checks_streams = sim_mode_state.mode == "cuda"
    for grad in each_on_its_device(grads, "clip_grad_norm_"):
        xp = array_module(grad.device)
        value = xp.asarray(_norm(grad._data, xp, norm_type))  # an array, never a NumPy scalar
        if checks_streams:  # the sanitizer sees the norm's kernels as an op's
            check_op_streams("clip_grad_norm_", (grad,), Tensor._wrap(value, grad.device), False)
        norms.append(move_array(value, grad.device, first) if grad.device != first else value)
    xp = array_module(first)
    dtype = np.result_type(*(n.dtype for n in norms))
    with launching(first, "clip_grad_norm_"):
        total = _norm(xp.stack([n.astype(dtype) for n in norms]), xp, norm_type)
    if checks_streams:
        check_op_streams(
            "clip_grad_norm_",
            tuple(Tensor._wrap(n, first) for n in norms),
            Tensor._wrap(total, first),
            False,
        )
        sanitizer.host_read(total, first, "clip_grad_norm_")
    total_value = float(total)
    if error_if_nonfinite and not math.isfinite(total_value):
        raise RuntimeError(
            f"The total norm of order {norm_type} for gradients from `parameters` is "
            "non-finite, so it cannot be clipped. To disable this error and scale the gradients "
            "by the non-finite norm anyway, set `error_if_nonfinite=False`"
        )
    coefficient = min(max_norm / (total_value + 1e-6), 1.0)
    # A non-finite norm scales by 0 or nan, as PyTorch's does, without NumPy's warning.
    with np.errstate(invalid="ignore"):
        for grad in each_on_its_device(grads, "clip_grad_norm_"):
            grad._data *= grad._data.dtype.type(coefficient)
            grad._bump_version()
    return Tensor._wrap(total, first)


def clip_grad_value_(
    parameters: Tensor | Iterable[Tensor], clip_value: float, foreach: bool | None = None
) -> None:
    """Clamp every gradient element into [-clip_value, clip_value] in place."""
    del foreach
    clip_value = float(clip_value)
    for grad in each_on_its_device(_grads(parameters), "clip_grad_value_"):
        xp = array_module(grad.device)
        xp.clip(grad._data, -clip_value, clip_value, out=grad._data)
        grad._bump_version()


__all__ = ["clip_grad_norm_", "clip_grad_value_"]
