"""Products with a weight that is the same for every example of a batch (stride 0 along it).

Under `grad` inside `vmap` a parameter is broadcast over the batch so that its gradient comes
out per example; these ops multiply by the one weight with a single matrix product instead of
one per example, and give the weight's gradient per example, as the batched op would.
"""

from __future__ import annotations

from typing import Any

from ..core.op import Op
from ..core.tensor import Tensor
from ..ops import dual


def is_shared(value: Any) -> bool:
    """True for a plain tensor whose dim 0 repeats one array (a broadcast along the batch)."""
    return (
        isinstance(value, Tensor)
        and not value._vmap_level
        and value._data.ndim > 0
        and value._data.strides[0] == 0
    )


def _rows(x: Any) -> Any:
    """(B, *, k) as (B, N, k)."""
    return x.reshape((x.shape[0], -1, x.shape[-1]))


class SharedWeightLinear(Op):
    """x @ w.T + b for x (B, *, in), w (B, out, in) and b (B, out) the same for all B."""

    __slots__ = ()
    op_name = "linear"
    saved_inputs = (0, 1)
    saved_for = {0: (1,), 1: (0,)}

    def forward(self, x: Any, w: Any, b: Any = None) -> Any:
        out = x @ w[0].T
        if b is not None:
            out += b[0]
        return dual.as_array(out)

    def backward(self, g: Any) -> tuple:
        x, w = self.saved(g)[:2]
        need = self.needs_input_grad
        gx = gw = gb = None
        if isinstance(g, Tensor):  # differentiable: the same products, batched
            if need[0]:
                gx = g @ w
            if need[1]:
                gw = _rows(g).transpose(1, 2) @ _rows(x)
            if len(need) > 2 and need[2]:
                gb = _rows(g).sum(1)
        else:
            if need[0]:
                gx = g @ w[0]
            if need[1]:
                if x.ndim == 2:  # one row per example: an outer product each
                    gw = g[:, :, None] * x[:, None, :]
                else:
                    gw = _rows(g).transpose(0, 2, 1) @ _rows(x)
            if len(need) > 2 and need[2]:
                gb = g if g.ndim == 2 else _rows(g).sum(1)
        return (gx, gw, gb) if len(need) > 2 else (gx, gw)


class SharedWeightMatmul(Op):
    """x @ w for x (B, *, k) and w (B, k, m) the same for all B."""

    __slots__ = ()
    op_name = "matmul"
    saved_inputs = (0, 1)
    saved_for = {0: (1,), 1: (0,)}

    def forward(self, x: Any, w: Any) -> Any:
        return dual.as_array(x @ w[0])

    def backward(self, g: Any) -> tuple:
        x, w = self.saved(g)
        need = self.needs_input_grad
        gx = gw = None
        if isinstance(g, Tensor):
            if need[0]:
                gx = g @ w.transpose(-1, -2)
            if need[1]:
                gw = _rows(x).transpose(1, 2) @ _rows(g)
        else:
            if need[0]:
                gx = g @ w[0].T
            if need[1]:
                if x.ndim == 2:
                    gw = x[:, :, None] * g[:, None, :]
                else:
                    gw = _rows(x).transpose(0, 2, 1) @ _rows(g)
        return gx, gw
