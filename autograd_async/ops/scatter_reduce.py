"""`scatter_reduce` (sum, prod, mean, amax, amin; include_self) and `scatter(reduce=)`.

One node: forward reduces `src` into a copy of `input` at `index` along `dim` with the ufunc's
unbuffered `at`; backward is PyTorch's rule for each reduction (ties of amax/amin share the
gradient evenly; prod divides by the factor, so a zero factor gets no gradient).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..core.op import Op, require_tensor
from ..core.tensor import Tensor
from .dual import as_array, quiet, xp_of
from .gather import grid_key, scatter
from .reduction import normalize_dim

_UFUNCS = {"sum": "add", "prod": "multiply", "mean": "add", "amax": "maximum", "amin": "minimum"}


class ScatterReduceBackward0(Op):
    __slots__ = ("_key", "_reduce", "_include", "_counts", "_input", "_src", "_out", "_src_shape")
    op_name = "scatter_reduce"
    saved_slots = ("_counts", "_input", "_src", "_out")

    def forward(
        self, a: Any, src: Any, key: tuple, shape: tuple, reduce: str, include_self: bool
    ) -> Any:
        xp = xp_of(a)
        self._key, self._reduce, self._include = key, reduce, include_self
        self._src_shape = src.shape
        out = a.copy()
        src = src[tuple(slice(0, n) for n in shape)]  # the index's shape out of src
        touched = xp.zeros(a.shape, bool)
        touched[key] = True
        if not include_self:  # the reduction's identity where src lands
            identity: float | None = {"sum": 0, "mean": 0, "prod": 1}.get(reduce)
            if identity is None:
                identity = (
                    (-np.inf if reduce == "amax" else np.inf)
                    if a.dtype.kind == "f"
                    else (np.iinfo(a.dtype).min if reduce == "amax" else np.iinfo(a.dtype).max)
                )
            out[touched] = identity
        getattr(np, _UFUNCS[reduce]).at(out, key, src)
        counts = xp.full(a.shape, 1 if include_self else 0, np.int64)
        np.add.at(counts, key, 1)
        if reduce == "mean":
            safe = xp.maximum(counts, 1)
            out = out / safe if a.dtype.kind in "fc" else out // safe
            out = out.astype(a.dtype, copy=False)
        self._counts, self._input, self._src, self._out = counts, a, src, out
        return as_array(out)

    def backward(self, g: Any) -> tuple:
        if isinstance(g, Tensor):
            raise NotImplementedError(
                "scatter_reduce: a differentiable backward (create_graph=True) is not supported"
            )
        self.check_released()
        key, reduce = self._key, self._reduce
        a, src, out, counts = self._input, self._src, self._out, self._counts
        xp = xp_of(g)
        touched = xp.zeros(a.shape, bool)
        touched[key] = True
        keep_self = self._include | ~touched
        with quiet():
            if reduce == "sum":
                g_input, g_src = g * keep_self, g[key]
            elif reduce == "mean":
                scaled = g / xp.maximum(counts, 1)
                g_input, g_src = scaled * keep_self, scaled[key]
            elif reduce == "prod":
                total = g * out
                g_input = xp.where(keep_self, xp.where(a != 0, total / a, 0), 0)
                g_src = xp.where(src != 0, total[key] / src, 0)
            else:  # amax, amin: the gradient shared evenly among the elements that tie
                hits = xp.zeros(a.shape, np.int64)
                winners_src = src == out[key]
                np.add.at(hits, key, winners_src.astype(np.int64))
                self_wins = keep_self & (a == out)
                hits = hits + self_wins
                share = g / xp.maximum(hits, 1)
                g_input, g_src = share * self_wins, share[key] * winners_src
        full_src = xp.zeros(self._src_shape, g.dtype)
        full_src[tuple(slice(0, n) for n in g_src.shape)] = g_src
        return g_input.astype(g.dtype, copy=False), full_src


def scatter_reduce(
    input: Tensor, dim: int, index: Tensor, src: Tensor, reduce: str, *, include_self: bool = True
) -> Tensor:
    """`input` with `src` reduced in at `index` along `dim` by sum, prod, mean, amax or amin."""
    require_tensor("scatter_reduce", input)
    require_tensor("scatter_reduce", src, "src", 4)
    if reduce not in _UFUNCS:
        raise RuntimeError(
            "reduce argument must be either sum, prod, mean, amax or amin, got " + str(reduce)
        )
    if index.dtype != np.int64:
        raise RuntimeError("scatter_reduce(): Expected dtype int64 for index")
    if src.dtype != input.dtype:
        raise RuntimeError(
            f"scatter_reduce(): Expected self.dtype to be equal to src.dtype (got {input.dtype} "
            f"and {src.dtype})"
        )
    axis = normalize_dim(dim, max(input.ndim, 1))
    key = grid_key(index._data, axis)
    return ScatterReduceBackward0.apply(
        input, src, key=key, shape=tuple(index.shape), reduce=reduce, include_self=include_self
    )


def scatter_with_reduce(
    input: Tensor,
    dim: int,
    index: Tensor,
    src: Any = None,
    *,
    value: Any = None,
    reduce: str | None = None,
) -> Tensor:
    """torch.scatter, with the older `reduce='add'|'multiply'` as scatter_reduce's sum, prod."""
    if reduce is None:
        return scatter(input, dim, index, src, value=value)
    if reduce not in ("add", "multiply"):
        raise RuntimeError(f"reduce argument must be either add or multiply. Got {reduce}")
    if not isinstance(src, Tensor):
        fill = value if src is None else src
        src = Tensor._wrap(
            xp_of(input._data).full(index.shape, fill, dtype=input.dtype), input.device
        )
    return scatter_reduce(input, dim, index, src, "sum" if reduce == "add" else "prod")


FUNCTIONS: dict[str, Any] = {"scatter_reduce": scatter_reduce, "scatter": scatter_with_reduce}
