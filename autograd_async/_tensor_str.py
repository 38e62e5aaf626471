"""How a tensor prints: PyTorch's layout (`tensor([0.0000, 0.2500], dtype=aa.float64)`).

Floats print with 4 decimals, or as `1.` when every value is whole, or in scientific notation when
the values span more than 1000x or leave [1e-4, 1e8); all elements share one width, so columns
line up. Tensors of more than 1000 elements show their first and last 3 along each dimension.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .dtypes import default_float

# Dtypes PyTorch leaves out of a tensor's repr; a float one only while it is the default float.
_DEFAULT_DTYPES = ("float32", "float64", "int64", "bool")
_PREFIX = "tensor("


def _float_formatter(values: np.ndarray) -> Any:
    """A function formatting one float the way PyTorch formats every element of `values`."""
    finite = values[np.isfinite(values)]
    magnitudes = np.abs(finite[finite != 0])
    whole = bool(np.all(finite == np.round(finite)))
    sci = False
    if magnitudes.size:
        low, high = float(magnitudes.min()), float(magnitudes.max())
        sci = high / low > 1000.0 or high > 1.0e8 or (not whole and low < 1.0e-4)
    if sci:
        spec = "{:.4e}"
    elif whole:
        spec = "{:.0f}."
    else:
        spec = "{:.4f}"

    def one(v: float) -> str:
        return spec.format(v) if np.isfinite(v) else str(v)

    # As PyTorch: the width comes from the non-zero finite values (nan and inf may stick out).
    width = max((len(one(float(v))) for v in finite[finite != 0].flat), default=0)
    return lambda v: one(float(v)).rjust(width)


def _body(data: np.ndarray) -> str:
    if data.size == 0:
        return "[]"
    formatter = None
    if data.dtype.kind == "V":  # ml_dtypes' bfloat16: printed through float32, as floats
        data = data.astype(np.float32)
    if data.dtype.kind == "f":
        shown = data if data.size <= 1000 else _edges(data)
        formatter = {"float_kind": _float_formatter(shown.astype(np.float64))}
    return np.array2string(
        data, separator=", ", prefix=_PREFIX, formatter=formatter, threshold=1000,
        edgeitems=3, max_line_width=80,
    )


def _edges(data: np.ndarray) -> np.ndarray:
    """The elements a summarised print shows (the first and last 3 along each dimension)."""
    for axis, n in enumerate(data.shape):
        if n > 6:
            data = np.concatenate([data.take(range(3), axis), data.take(range(n - 3, n), axis)],
                                  axis)
    return data


def format_tensor(data: np.ndarray, device: str, requires_grad: bool, grad_fn: Any) -> str:
    """`tensor(...)` with PyTorch's suffixes: device, dtype, grad_fn or requires_grad."""
    body = _body(data)
    extras = []
    if data.size == 0 and data.shape != (0,):
        extras.append(f"size={tuple(data.shape)}")
    if device != "cpu":
        extras.append(f"device='{device}'")
    if data.dtype.name not in _DEFAULT_DTYPES or (
        data.dtype.kind == "f" and data.dtype != default_float()
    ):
        extras.append(f"dtype=aa.{data.dtype.name}")
    if grad_fn is not None:
        extras.append(f"grad_fn=<{grad_fn.name()}>")
    elif requires_grad:
        extras.append("requires_grad=True")
    return _PREFIX + body + "".join(", " + e for e in extras) + ")"
