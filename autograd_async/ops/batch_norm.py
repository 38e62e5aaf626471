"""Batch normalisation with batch statistics as one node (PyTorch's NativeBatchNormBackward0).

Composed from mean, subtraction, power and products, a training-mode batch norm records about
ten nodes and walks the activation a dozen times each way; as one node its forward is a sum, a
subtraction, a sum of squares and the scaling, and its backward two per-channel sums and one
elementwise combination. With `create_graph=True` the backward is built
from differentiable ops on the saved input instead, so higher derivatives still work.
"""

from __future__ import annotations

from typing import Any

from ..core.op import Op
from ..core.tensor import Tensor
from .dual import as_array, sum_dims, xp_of


def _rows(a: Any) -> Any:
    """(N, C, *) as (N, C, L): the per-channel sums below reduce axes 0 and 2."""
    return a.reshape(a.shape[:2] + (-1,))


def _channel_sum(a: Any) -> Any:
    """Per-channel sums over (N, C, L) rows (einsum: a third of `sum(axis=(0, 2))`'s time)."""
    return xp_of(a).einsum("ncl->c", a)


def _channel_dot(a: Any, b: Any) -> Any:
    """Per-channel sums of `a * b` over (N, C, L) rows, without the product array."""
    return xp_of(a).einsum("ncl,ncl->c", a, b)


def batch_statistics(x: Any) -> tuple[Any, Any, Any]:
    """The per-channel mean and biased variance of (N, C, *) (as (C,) arrays), and x - mean.

    Two passes, as PyTorch's kernel: the variance is the mean square of the centred values,
    which keeps its precision when the mean is large against the spread.
    """
    rows = _rows(x)
    count = rows.shape[0] * rows.shape[2]
    mean = _channel_sum(rows) / count
    centred = rows - mean[:, None]
    var = _channel_dot(centred, centred) / count
    return mean.astype(x.dtype, copy=False), var.astype(x.dtype, copy=False), centred


class NativeBatchNormBackward0(Op):
    """(x - mean) / sqrt(var + eps) * weight + bias, with the batch's mean and variance.

    The forward takes the centred input that `batch_statistics` made and scales it in place
    into the normalised input, which backward keeps: the gradients are then two per-channel
    sums and one elementwise combination of the output's gradient and that array.
    """

    __slots__ = ("_dims", "_count", "_eps", "_xhat", "_invstd")
    op_name = "batch_norm"
    saved_inputs = (0, 1)
    saved_slots = ("_xhat", "_invstd")

    def forward(
        self, x: Any, w: Any = None, b: Any = None, *, centred: Any, var: Any, eps: float
    ) -> Any:
        xp = xp_of(x)
        self._dims = (0,) + tuple(range(2, x.ndim))
        self._count = centred.shape[0] * centred.shape[2]
        self._eps = eps
        invstd = 1.0 / xp.sqrt(var + eps)
        xhat = centred
        xhat *= invstd[:, None]
        self._xhat, self._invstd = xhat, invstd
        if w is None:
            out = xhat.copy()
        else:
            out = xhat * w[:, None]
        if b is not None:
            out += b[:, None]
        return as_array(out.reshape(x.shape))

    @staticmethod
    def _channel(v: Any, like: Any) -> Any:
        """A (C,) vector as (1, C, 1, ...), to broadcast over (N, C, *)."""
        return v.reshape((1, -1) + (1,) * (like.ndim - 2))

    def backward(self, g: Any) -> tuple:
        x, w = self.saved(g)
        if isinstance(g, Tensor):
            return self._graph_backward(g, x, w)
        self.check_released()
        need = self.needs_input_grad
        xhat, invstd, count = self._xhat, self._invstd, self._count
        rows = _rows(g)
        sum_g = _channel_sum(rows)
        dot = _channel_dot(rows, xhat)  # the sum of g * xhat per channel
        grads: list[Any] = [None, None, None]
        if need[2]:
            grads[2] = sum_g
        if need[1]:
            grads[1] = dot
        if need[0]:
            # w * invstd * (g - mean(g) - xhat * mean(g * xhat)), one channel vector per term.
            scale = invstd if w is None else invstd * w
            gx = xhat * (-(scale * dot) / count)[:, None]
            gx += rows * scale[:, None]
            gx -= (scale * sum_g / count)[:, None]
            grads[0] = gx.reshape(g.shape)
        return tuple(grads)

    def _graph_backward(self, g: Tensor, x: Tensor, w: Tensor | None) -> tuple:
        """The same rule from differentiable ops: the statistics are functions of x too."""
        need = self.needs_input_grad
        dims, count = self._dims, self._count
        mean = sum_dims(x, dims, True) * (1.0 / count)
        centred = x - mean
        invstd = (sum_dims(centred * centred, dims, True) * (1.0 / count) + self._eps) ** -0.5
        xhat = centred * invstd
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
    mean, var, centred = batch_statistics(input._data)
    # A missing weight or bias goes in as None: an input without an edge or a gradient.
    out = NativeBatchNormBackward0.apply(input, weight, bias, centred=centred, var=var, eps=eps)
    return out, mean, var
