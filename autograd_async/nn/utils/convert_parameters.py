"""Parameters to one flat vector and back (PyTorch's `parameters_to_vector` and
`vector_to_parameters`)."""

from __future__ import annotations

from collections.abc import Iterable

from ...core.tensor import Tensor
from ...grad_mode import no_grad
from ...ops import cat


def _same_device(params: list[Tensor]) -> None:
    for p in params[1:]:
        if p.device != params[0].device:
            raise TypeError(
                f"Found two parameters on different devices, this is currently not supported: "
                f"{params[0].device} and {p.device}"
            )


def parameters_to_vector(parameters: Iterable[Tensor]) -> Tensor:
    """All parameters flattened and joined into one vector (differentiable, as in PyTorch)."""
    params = list(parameters)
    _same_device(params)
    return cat([p.reshape(-1) for p in params])


def vector_to_parameters(vec: Tensor, parameters: Iterable[Tensor]) -> None:
    """Copy consecutive slices of `vec` into the parameters' data, each in its shape."""
    if not isinstance(vec, Tensor):
        raise TypeError(f"expected Tensor, but got: {type(vec).__name__}")
    params = list(parameters)
    _same_device(params)
    needed = sum(p.numel() for p in params)
    if vec.ndim != 1 or vec.shape[0] != needed:
        raise ValueError(
            f"vector_to_parameters: expected a vector of {needed} elements for the "
            f"parameters, got shape {tuple(vec.shape)}"
        )
    start = 0
    with no_grad():
        for p in params:
            count = p.numel()
            p.data = vec[start : start + count].reshape(tuple(p.shape)).data
            start += count


__all__ = ["parameters_to_vector", "vector_to_parameters"]
