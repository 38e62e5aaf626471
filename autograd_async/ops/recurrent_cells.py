"""ATen's single-step recurrent cells (`torch.rnn_tanh_cell`, `rnn_relu_cell`, `lstm_cell`,
`gru_cell`) and `torch.gradient`, written with the differentiable ops they are made of."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..core.op import require_tensor
from ..core.tensor import Tensor
from .dual import xp_of
from .shape import cat


def _affine(x: Tensor, weight: Tensor, bias: Tensor | None) -> Tensor:
    out = x @ weight.transpose(0, 1)
    return out if bias is None else out + bias


def _gates(
    name: str,
    input: Tensor,
    hx: Tensor,
    w_ih: Tensor,
    w_hh: Tensor,
    b_ih: Tensor | None,
    b_hh: Tensor | None,
) -> tuple[Tensor, Tensor]:
    require_tensor(name, input)
    require_tensor(name, hx, "hx", 2)
    return _affine(input, w_ih, b_ih), _affine(hx, w_hh, b_hh)


def rnn_tanh_cell(
    input: Tensor,
    hx: Tensor,
    w_ih: Tensor,
    w_hh: Tensor,
    b_ih: Tensor | None = None,
    b_hh: Tensor | None = None,
) -> Tensor:
    """tanh(input W_ih^T + b_ih + hx W_hh^T + b_hh)."""
    x, h = _gates("rnn_tanh_cell", input, hx, w_ih, w_hh, b_ih, b_hh)
    return (x + h).tanh()


def rnn_relu_cell(
    input: Tensor,
    hx: Tensor,
    w_ih: Tensor,
    w_hh: Tensor,
    b_ih: Tensor | None = None,
    b_hh: Tensor | None = None,
) -> Tensor:
    """relu(input W_ih^T + b_ih + hx W_hh^T + b_hh)."""
    x, h = _gates("rnn_relu_cell", input, hx, w_ih, w_hh, b_ih, b_hh)
    return (x + h).relu()


def lstm_cell(
    input: Tensor,
    hx: Any,
    w_ih: Tensor,
    w_hh: Tensor,
    b_ih: Tensor | None = None,
    b_hh: Tensor | None = None,
) -> tuple[Tensor, Tensor]:
    """One LSTM step: (h', c') from hx = (h, c), gates in PyTorch's order i, f, g, o."""
    if not isinstance(hx, list | tuple) or len(hx) != 2:
        raise RuntimeError("lstm_cell: Expected hx to be a list of two tensors (h, c)")
    h, c = hx
    x, recurrent = _gates("lstm_cell", input, h, w_ih, w_hh, b_ih, b_hh)
    i, f, g, o = (x + recurrent).chunk(4, -1)
    c_next = f.sigmoid() * c + i.sigmoid() * g.tanh()
    return o.sigmoid() * c_next.tanh(), c_next


def gru_cell(
    input: Tensor,
    hx: Tensor,
    w_ih: Tensor,
    w_hh: Tensor,
    b_ih: Tensor | None = None,
    b_hh: Tensor | None = None,
) -> Tensor:
    """One GRU step, gates in PyTorch's order r, z, n (the reset gate scales W_hn h + b_hn)."""
    x, h = _gates("gru_cell", input, hx, w_ih, w_hh, b_ih, b_hh)
    x_r, x_z, x_n = x.chunk(3, -1)
    h_r, h_z, h_n = h.chunk(3, -1)
    r = (x_r + h_r).sigmoid()
    z = (x_z + h_z).sigmoid()
    n = (x_n + r * h_n).tanh()
    return (1 - z) * n + z * hx


# ------------------------------------------------------------------ gradient
def _coordinates(spacing: Any, size: int) -> np.ndarray:
    """The sample coordinates along one dim: from a step or from a 1-D coordinate tensor."""
    if isinstance(spacing, Tensor):
        return np.asarray(spacing.detach().cpu().numpy(), dtype=np.float64).reshape(-1)
    return np.arange(size, dtype=np.float64) * float(spacing)


def _along(values: np.ndarray, axis: int, ndim: int, like: Tensor) -> Tensor:
    """Per-position coefficients shaped to broadcast along `axis` of an ndim-D tensor."""
    shape = [1] * ndim
    shape[axis] = values.shape[0]
    array = xp_of(like._data).asarray(values.reshape(shape).astype(like.dtype))
    return Tensor._wrap(array, like.device)


def _slice(t: Tensor, axis: int, start: int | None, stop: int | None) -> Tensor:
    return t[(slice(None),) * axis + (slice(start, stop),)]


def _derivative(f: Tensor, x: np.ndarray, axis: int, edge_order: int) -> Tensor:
    """Second-order central differences inside, one-sided ones of `edge_order` at the ends, for
    samples at coordinates x (NumPy's formulas for uneven spacing)."""
    dx = np.diff(x)
    d1, d2 = dx[:-1], dx[1:]
    n = f.ndim
    a = -d2 / (d1 * (d1 + d2))
    b = (d2 - d1) / (d1 * d2)
    c = d1 / (d2 * (d1 + d2))
    inside = (
        _along(a, axis, n, f) * _slice(f, axis, None, -2)
        + _along(b, axis, n, f) * _slice(f, axis, 1, -1)
        + _along(c, axis, n, f) * _slice(f, axis, 2, None)
    )
    if edge_order == 1:
        first = (_slice(f, axis, 1, 2) - _slice(f, axis, 0, 1)) / dx[0]
        last = (_slice(f, axis, -1, None) - _slice(f, axis, -2, -1)) / dx[-1]
    else:
        p, q = dx[0], dx[1]
        first = (
            _slice(f, axis, 0, 1) * (-(2 * p + q) / (p * (p + q)))
            + _slice(f, axis, 1, 2) * ((p + q) / (p * q))
            + _slice(f, axis, 2, 3) * (-p / (q * (p + q)))
        )
        p, q = dx[-2], dx[-1]
        last = (
            _slice(f, axis, -3, -2) * (q / (p * (p + q)))
            + _slice(f, axis, -2, -1) * (-(p + q) / (p * q))
            + _slice(f, axis, -1, None) * ((2 * q + p) / (q * (p + q)))
        )
    return cat([first, inside, last], axis)


def gradient(
    input: Tensor, *, spacing: Any = 1, dim: Any = None, edge_order: int = 1
) -> tuple[Tensor, ...]:
    """The derivative estimate of the sampled function `input` along each dim of `dim` (all by
    default): spacing is a step, one step per dim, or one coordinate tensor per dim."""
    require_tensor("gradient", input)
    if edge_order not in (1, 2):
        raise RuntimeError("torch.gradient only supports edge_order=1 and edge_order=2.")
    dims = (
        list(range(input.ndim)) if dim is None else ([dim] if isinstance(dim, int) else list(dim))
    )
    dims = [d % input.ndim for d in dims]
    steps = list(spacing) if isinstance(spacing, list | tuple) else [spacing] * len(dims)
    if len(steps) != len(dims):
        where = (
            "since dim argument was not given"
            if dim is None
            else f"since dim argument was given as {dim}"
        )
        raise RuntimeError(
            "torch.gradient expected spacing to be unspecified, a scalar, or a list of length "
            f"equal to 'self.dim() = {input.ndim}', {where}, but got a list of length "
            f"{len(steps)}"
        )
    for d in dims:
        if input.shape[d] < edge_order + 1:
            raise RuntimeError(
                "torch.gradient expected each dimension size to be at least edge_order+1"
            )
    f = input if input.dtype.kind in "fc" else input.to(dtype=np.float32)
    return tuple(
        _derivative(f, _coordinates(step, f.shape[d]), d, edge_order)
        for d, step in zip(dims, steps, strict=True)
    )


FUNCTIONS: dict[str, Any] = {
    "rnn_tanh_cell": rnn_tanh_cell,
    "rnn_relu_cell": rnn_relu_cell,
    "lstm_cell": lstm_cell,
    "gru_cell": gru_cell,
    "gradient": gradient,
}
NOT_METHODS = tuple(FUNCTIONS)
