"""Layer normalisation as one node (PyTorch's NativeLayerNormBackward0).

Composed from mean, subtraction, power and products, a layer norm records nine nodes and walks
the activation about a dozen times each way. As one node the input is seen as rows (R, D), D the
size of the normalised trailing dims; the per-row sums are matrix-vector products (BLAS sums a
short row far faster than a reduction ufunc does), and backward is one pass plus three of them.
With `create_graph=True` the backward is built from differentiable ops on the saved input, so
higher derivatives still work.
"""

from __future__ import annotations

import math
from typing import Any

from ..core.op import Op
from ..core.tensor import Tensor
from .dual import as_array, sum_dims, xp_of


def _row_means(a: Any, inverse_count: Any) -> Any:
    """The mean of each row of a 2-D array, as a column (R, 1): a product with a (D, 1) column."""
    return a @ inverse_count


class NativeLayerNormBackward0(Op):
    """(x - mean) / sqrt(var + eps) * weight + bias, statistics over the trailing dims."""

    __slots__ = ("_shape", "_width", "_eps", "_xhat", "_invstd", "_means")
    op_name = "layer_norm"
    saved_inputs = (0, 1)  # x serves a differentiable backward only; the array one reads x-hat
    saved_for = {1: (0,)}  # the weight only for x's gradient
    saved_slots = ("_xhat", "_invstd", "_means")

    def forward(
        self, x: Any, w: Any = None, b: Any = None, *, shape: tuple[int, ...], eps: float
    ) -> Any:
        xp = xp_of(x)
        width = math.prod(shape)
        self._shape, self._width, self._eps = shape, width, eps
        rows = x.reshape((-1, width))
        # A (D, 1) column of 1 / D: row means as one matrix-vector product each.
        means = xp.full((width, 1), 1.0 / width, dtype=x.dtype)
        centred = rows - _row_means(rows, means)
        var = _row_means(centred * centred, means)
        var += eps
        invstd = xp.sqrt(var)
        xp.divide(1.0, invstd, out=invstd)
        centred *= invstd  # now x-hat
        self._xhat, self._invstd, self._means = centred, invstd, means
        if w is None:
            out = centred.copy() if b is None else centred + b.reshape(-1)
        else:
            out = centred * w.reshape(-1)
            if b is not None:
                out += b.reshape(-1)
        return as_array(out.reshape(x.shape))

    def backward(self, g: Any) -> tuple:
        x, w = self.saved(g)
        need = self.needs_input_grad
        width = self._width
        shape = g.shape
        g2 = g.reshape((-1, width))
        if isinstance(g, Tensor):  # create_graph: the statistics are functions of x too
            rows = x.reshape((-1, width))
            centred = rows - sum_dims(rows, 1, True) * (1.0 / width)
            invstd = (sum_dims(centred * centred, 1, True) * (1.0 / width) + self._eps) ** -0.5
            xhat = centred * invstd

            def row_means(a: Any) -> Any:
                return sum_dims(a, 1, True) * (1.0 / width)

            def column_sums(a: Any) -> Any:
                return sum_dims(a, 0)
        else:
            self.check_released()
            xhat, invstd, means = self._xhat, self._invstd, self._means

            def row_means(a: Any) -> Any:
                return _row_means(a, means)

            def column_sums(a: Any) -> Any:
                # BLAS sums the (R, D) rows as a (1, R) @ (R, D) product
                return (xp_of(a).ones((1, a.shape[0]), a.dtype) @ a).reshape(-1)

        grads: list[Any] = [None, None, None]
        if len(need) > 2 and need[2]:
            grads[2] = column_sums(g2).reshape(self._shape)
        if need[1]:
            grads[1] = column_sums(g2 * xhat).reshape(self._shape)
        if need[0]:
            gxhat = g2 if w is None else g2 * w.reshape(-1)
            projection = row_means(gxhat * xhat)
            if isinstance(g, Tensor):
                gx = (gxhat - row_means(gxhat) - xhat * projection) * invstd
            else:
                gx = gxhat - row_means(gxhat)  # a fresh array: the rest works in place
                gx -= xhat * projection
                gx *= invstd
            grads[0] = gx.reshape(shape)
        return tuple(grads)


def fused_layer_norm(
    input: Tensor, weight: Tensor | None, bias: Tensor | None, shape: tuple[int, ...], eps: float
) -> Tensor:
    """Layer norm over the trailing dims of sizes `shape`, as one node."""
    # A missing weight or bias goes in as None: an input without an edge or a gradient.
    return NativeLayerNormBackward0.apply(input, weight, bias, shape=shape, eps=eps)
