"""How a tensor prints: PyTorch's layout (`tensor([0.0000, 0.2500], dtype=aa.float64)`).

Floats print with `precision` decimals (4), or as `1.` when every value is whole, or in scientific
notation when the values span more than 1000x or leave [1e-4, 1e8) (`sci_mode` forces either);
all elements share one width, so columns line up. Tensors of more than `threshold` elements (1000)
show their first and last `edgeitems` (3) along each dimension; lines wrap at `linewidth` (80).
`set_printoptions` changes these for the process, as PyTorch's does (a program's print options,
like its default dtype, are one setting); `printoptions(...)` changes them for a `with` block.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import sys
from collections.abc import Iterator
from typing import Any

import numpy as np

from .dtypes import default_float


@dataclasses.dataclass(slots=True)
class PrintOptions:
    """What a tensor's repr shows; the defaults are PyTorch's 'default' profile."""

    precision: int = 4
    threshold: float = 1000
    edgeitems: int = 3
    linewidth: int = 80
    sci_mode: bool | None = None


PROFILES: dict[str, dict[str, float]] = {
    "default": {"precision": 4, "threshold": 1000, "edgeitems": 3, "linewidth": 80},
    "short": {"precision": 2, "threshold": 1000, "edgeitems": 2, "linewidth": 80},
    "full": {"precision": 4, "threshold": math.inf, "edgeitems": 3, "linewidth": 80},
}

_options = PrintOptions()


def set_printoptions(
    precision: int | None = None,
    threshold: float | None = None,
    edgeitems: int | None = None,
    linewidth: int | None = None,
    profile: str | None = None,
    sci_mode: bool | None = None,
) -> None:
    """Set how tensors print: a `profile` ('default', 'short', 'full') first, then each option
    given; `sci_mode` is always set (None: chosen from the values), as PyTorch's."""
    if profile is not None:
        if profile not in PROFILES:
            raise ValueError(f"unknown print profile {profile!r}; profiles: {sorted(PROFILES)}")
        for name, value in PROFILES[profile].items():
            setattr(_options, name, value)
    given = {
        "precision": precision,
        "threshold": threshold,
        "edgeitems": edgeitems,
        "linewidth": linewidth,
    }
    for name, option in given.items():
        if option is not None:
            setattr(_options, name, option)
    _options.sci_mode = sci_mode


def get_printoptions() -> dict[str, Any]:
    """The current print options, as keyword arguments `set_printoptions` takes back."""
    return dataclasses.asdict(_options)


@contextlib.contextmanager
def printoptions(**kwargs: Any) -> Iterator[None]:
    """Print options changed for the `with` block, restored after it (also on error)."""
    old = get_printoptions()
    set_printoptions(**kwargs)
    try:
        yield
    finally:
        set_printoptions(**old)


# Dtypes PyTorch leaves out of a tensor's repr; a float one only while it is the default float.
_DEFAULT_DTYPES = ("float32", "float64", "int64", "bool")
_PREFIX = "tensor("


def _float_formatter(values: np.ndarray) -> tuple[Any, int]:
    """A function formatting one float the way PyTorch formats every element of `values`, and
    the width it pads to."""
    finite = values[np.isfinite(values)]
    magnitudes = np.abs(finite[finite != 0])
    whole = bool(np.all(finite == np.round(finite)))
    sci = False
    if magnitudes.size:
        low, high = float(magnitudes.min()), float(magnitudes.max())
        sci = high / low > 1000.0 or high > 1.0e8 or (not whole and low < 1.0e-4)
    if _options.sci_mode is not None:
        sci = _options.sci_mode
    precision = _options.precision
    if sci:
        spec = f"{{:.{precision}e}}"
    elif whole:
        spec = "{:.0f}."
    else:
        spec = f"{{:.{precision}f}}"

    def one(v: float) -> str:
        return spec.format(v) if np.isfinite(v) else str(v)

    # As PyTorch: the width comes from the non-zero finite values (nan and inf may stick out).
    width = max((len(one(float(v))) for v in finite[finite != 0].flat), default=1)
    return (lambda v: one(float(v)).rjust(width)), width


def _plain_formatter(values: np.ndarray) -> tuple[Any, int]:
    """Integers and booleans: `str` of each, padded to the widest shown."""
    width = max((len(str(v)) for v in values.flat), default=1)
    return (lambda v: str(v).rjust(width)), width


def _layout(data: np.ndarray, fmt: Any, width: int, summarize: bool) -> str:
    """PyTorch's nested-list layout: `edgeitems` per end when summarised (" ..." between), as
    many elements a line as `linewidth` holds, blank lines between blocks of 3+ dimensions."""
    edge, linewidth = _options.edgeitems, _options.linewidth

    def vector(row: np.ndarray, indent: int) -> str:
        per_line = max(1, math.floor((linewidth - indent) / (width + 2)))
        n = row.shape[0]
        if summarize and n > 2 * edge:
            items = [fmt(v) for v in row[:edge]] + [" ..."] + [fmt(v) for v in row[n - edge :]]
        else:
            items = [fmt(v) for v in row]
        lines = [", ".join(items[i : i + per_line]) for i in range(0, len(items), per_line)]
        return "[" + (",\n" + " " * (indent + 1)).join(lines) + "]"

    def block(part: np.ndarray, indent: int) -> str:
        if part.ndim == 1:
            return vector(part, indent)
        n = part.shape[0]
        if summarize and n > 2 * edge:
            rows = [block(part[i], indent + 1) for i in range(edge)] + ["..."]
            rows += [block(part[i], indent + 1) for i in range(n - edge, n)]
        else:
            rows = [block(part[i], indent + 1) for i in range(n)]
        return "[" + ("," + "\n" * (part.ndim - 1) + " " * (indent + 1)).join(rows) + "]"

    return block(data, len(_PREFIX))


def _body(data: np.ndarray) -> str:
    if data.size == 0:
        return "[]"
    float_format = None  # NumPy's own formatting, except for floats
    if data.dtype.kind == "V":  # ml_dtypes' bfloat16: printed through float32, as floats
        data = data.astype(np.float32)
    threshold = _options.threshold
    threshold = sys.maxsize if threshold >= sys.maxsize else int(threshold)
    edgeitems = _options.edgeitems
    summarize = data.size > threshold
    if data.ndim and data.dtype.kind in "fiub":
        shown = _edges(data, edgeitems) if summarize else data
        if data.dtype.kind == "f":
            fmt, width = _float_formatter(shown.astype(np.float64))
        else:
            fmt, width = _plain_formatter(shown.tolist() and np.asarray(shown, dtype=object))
        return _layout(data, fmt, width, summarize)
    if data.dtype.kind == "f":
        shown = _edges(data, edgeitems) if summarize else data
        float_format = _float_formatter(shown.astype(np.float64))[0]
    return np.array2string(
        data,
        separator=", ",
        prefix=_PREFIX,
        formatter=None if float_format is None else {"float_kind": float_format},
        threshold=threshold,
        edgeitems=edgeitems,
        max_line_width=_options.linewidth,
        precision=_options.precision,
    )


def _edges(data: np.ndarray, k: int) -> np.ndarray:
    """The elements a summarised print shows (the first and last `k` along each dimension)."""
    for axis, n in enumerate(data.shape):
        if n > 2 * k:
            data = np.concatenate(
                [data.take(range(k), axis), data.take(range(n - k, n), axis)], axis
            )
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
    return _with_suffixes(_PREFIX + body, extras)


def _with_suffixes(text: str, suffixes: list[str]) -> str:
    """`text` and its suffixes, each on a new line where it would pass `linewidth` (PyTorch's
    rule, which counts the last line as if it had two more characters)."""
    parts = [text]
    last_line = len(text) - text.rfind("\n") + 1
    indent = len(_PREFIX)
    for suffix in suffixes:
        if last_line + len(suffix) + 2 > _options.linewidth:
            parts.append(",\n" + " " * indent + suffix)
            last_line = indent + len(suffix)
        else:
            parts.append(", " + suffix)
            last_line += len(suffix) + 2
    return "".join(parts) + ")"
