"""Batch normalisation with batch statistics as one node (PyTorch's NativeBatchNormBackward0).

Composed from mean, subtraction, power and products, a training-mode batch norm records about
ten nodes and walks the activation a dozen times each way; as one node its forward is two passes
and its backward three reductions and one pass. With `create_graph=True` the backward is built
from differentiable ops on the saved input instead, so higher derivatives still work.
"""

from __future__ import annotations

import math
from typing import Any

from ..tensor import Tensor
from .base import Op
from .dual import as_array, sum_dims, xp_of


def batch_statistics(x: Any, dims: tuple[int, ...]) -> tuple[Any, Any]:
    """The per-channel mean and biased variance of an array over `dims`, kept as (1, C, 1...)."""
    mean = x.mean(axis=dims, keepdims=True)
    centred = x - mean
    var = xp_of(x).mean(centred * centred, axis=dims, keepdims=True)
    return mean, var


class NativeBatchNormBackward0(Op):
    """(x - mean) / sqrt(var + eps) * weight + bias, with the batch's mean and variance."""

    __slots__ = ("_dims", "_count", "_eps", "_xhat", "_invstd")
    op_name = "batch_norm"
    saved_inputs = (0, 1)
    saved_slots = ("_xhat", "_invstd")

    def forward(
        self, x: Any, w: Any = None, b: Any = None, *, mean: Any, var: Any, eps: float
    ) -> Any:
        self._dims = (0,) + tuple(range(2, x.ndim))
        self._count = math.prod(x.shape[d] for d in self._dims)
        self._eps = eps
        invstd = 1.0 / xp_of(x).sqrt(var + eps)
        xhat = (x - mean) * invstd
        self._xhat, self._invstd = xhat, invstd
        if w is None:
            return as_array(xhat.copy()) if b is None else as_array(xhat + self._channel(b, x))
        out = xhat * self._channel(w, x)
        if b is not None:
            out += self._channel(b, x)
        return as_array(out)

    @staticmethod
    def _channel(v: Any, like: Any) -> Any:
        """A (C,) vector as (1, C, 1, ...), to broadcast over (N, C, *)."""
        return v.reshape((1, -1) + (1,) * (like.ndim - 2))

    def backward(self, g: Any) -> tuple:
        x, w = self.saved(g)
        need = self.needs_input_grad
        dims, count = self._dims, self._count
        if isinstance(g, Tensor):  # create_graph: the statistics are functions of x too
            mean = sum_dims(x, dims, True) * (1.0 / count)
            centred = x - mean
            invstd = (sum_dims(centred * centred, dims, True) * (1.0 / count) + self._eps) ** -0.5
            xhat = centred * invstd
        else:
            self.check_released()
            xhat, invstd = self._xhat, self._invstd
        grads: list[Any] = [None, None, None]
        if need[2]:
            grads[2] = sum_dims(g, dims).reshape((-1,))
        if need[1]:
            grads[1] = sum_dims(g * xhat, dims).reshape((-1,))
        if need[0]:
            gxhat = g if w is None else g * self._channel(w, g)
            mean_g = sum_dims(gxhat, dims, True) * (1.0 / count)
            mean_gx = sum_dims(gxhat * xhat, dims, True) * (1.0 / count)
            grads[0] = (gxhat - mean_g - xhat * mean_gx) * invstd
        return tuple(grads)


def fused_batch_norm(
    input: Tensor, weight: Tensor | None, bias: Tensor | None, eps: float
) -> tuple[Tensor, Any, Any]:
    """Training-mode batch norm as one node; also the batch mean and biased variance arrays."""
    dims = (0,) + tuple(range(2, input.ndim))
    mean, var = batch_statistics(input._data, dims)
    # A missing weight or bias goes in as None: an input without an edge or a gradient.
    out = NativeBatchNormBackward0.apply(input, weight, bias, mean=mean, var=var, eps=eps)
    return out, mean, var
