"""histogram and histogramdd: counts (or weight sums, or densities) of values in bins, with
NumPy's binning rules, which PyTorch's match (an empty range widens to +-0.5). The results carry
no gradient, as in PyTorch."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..core.op import require_tensor, torch_type_name
from ..core.tensor import Tensor
from .dual import data_of, xp_of
from .return_types import histogram as histogram_result
from .return_types import histogramdd as histogramdd_result


def _host(t: Any) -> Any:
    return data_of(t) if isinstance(t, Tensor) else t


def _checked(input: Tensor, weight: Tensor | None) -> None:
    require_tensor("histogram", input)
    if input.dtype.kind != "f":
        raise NotImplementedError(
            f"\"histogramdd\" not implemented for '{torch_type_name(input.dtype)}'"
        )
    if weight is not None and tuple(weight.shape) != tuple(input.shape[: weight.ndim]):
        raise RuntimeError(
            "torch.histogramdd: if weight tensor is provided it should have the same shape as "
            f"the input tensor excluding its innermost dimension, but got input with shape "
            f"{list(input.shape)} and weight with shape {list(weight.shape)}"
        )


def _wrap(array: Any, like: Tensor) -> Tensor:
    return Tensor._wrap(xp_of(like._data).asarray(array).astype(like.dtype), like.device)


def histogram(
    input: Tensor,
    bins: Any,
    *,
    range: Any = None,  # noqa: A002 - PyTorch's name
    weight: Tensor | None = None,
    density: bool = False,
) -> tuple[Tensor, Tensor]:
    """(hist, bin_edges) of the flattened input: `bins` equal bins over `range` (the values'
    min and max by default), or the edges a 1-D tensor gives."""
    _checked(input, weight)
    if isinstance(bins, Tensor) and bins.dtype != input.dtype:
        names = {"float64": "double", "float32": "float", "float16": "c10::Half"}
        raise RuntimeError(
            "torch.histogramdd: input tensor and bins tensors should have the same dtype, but "
            f"got input with dtype {names.get(str(input.dtype), input.dtype)} and bins for "
            f"dimension 0 with dtype {names.get(str(bins.dtype), bins.dtype)}"
        )
    values = _host(input).reshape(-1)
    xp = xp_of(values)
    edges = _host(bins) if isinstance(bins, Tensor) else int(bins)
    hist, edges = xp.histogram(
        values,
        bins=edges,
        range=range,
        density=density,
        weights=None if weight is None else _host(weight).reshape(-1),
    )
    return histogram_result(_wrap(hist, input), _wrap(edges, input))


def histogramdd(
    input: Tensor,
    bins: Any,
    *,
    range: Any = None,  # noqa: A002
    weight: Tensor | None = None,
    density: bool = False,
) -> tuple[Tensor, tuple]:
    """(hist, bin_edges) of the points in input's last dim: one binning per coordinate."""
    _checked(input, weight)
    points = _host(input)
    dims = points.shape[-1]
    points = np.asarray(points.get() if hasattr(points, "get") else points).reshape(-1, dims)
    if isinstance(bins, Tensor):
        bins = bins.tolist()
    elif isinstance(bins, list | tuple):
        bins = [
            np.asarray(_host(b).get() if hasattr(_host(b), "get") else _host(b))
            if isinstance(b, Tensor)
            else b
            for b in bins
        ]
    if range is not None:
        flat = list(range)
        range = [(flat[2 * i], flat[2 * i + 1]) for i in np.arange(dims)]
    weights = None
    if weight is not None:
        weights = _host(weight)
        weights = np.asarray(weights.get() if hasattr(weights, "get") else weights).reshape(-1)
    hist, edges = np.histogramdd(points, bins=bins, range=range, density=density, weights=weights)
    return histogramdd_result(_wrap(hist, input), tuple(_wrap(e, input) for e in edges))


FUNCTIONS: dict[str, Any] = {"histogram": histogram, "histogramdd": histogramdd}
NOT_METHODS = ("histogramdd",)
