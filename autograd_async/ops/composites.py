"""Functions PyTorch defines in terms of other ops, written the same way here: absolute, ravel,
adjoint, sgn, renorm, split_with_sizes and the unsafe_ splits (whose pieces, in PyTorch, skip the
multi-output view checks; here they are the ordinary split's pieces)."""

from __future__ import annotations

from typing import Any

from ..tensor import Tensor
from .base import require_tensor, torch_type_name
from .elementwise import where
from .shape import chunk, flatten, split


def absolute(input: Tensor) -> Tensor:
    """Elementwise |input| (PyTorch's other name for abs)."""
    require_tensor("absolute", input)
    return input.abs()


def ravel(input: Tensor) -> Tensor:
    """The elements as a 1-D tensor (a view when the layout allows)."""
    require_tensor("ravel", input)
    return flatten(input)


def adjoint(input: Tensor) -> Tensor:
    """The conjugate transpose of the last two dims, as a view."""
    require_tensor("adjoint", input)
    if input.ndim < 2:
        raise RuntimeError(
            "tensor.adjoint() is only supported on matrices or batches of matrices. Got "
            f"{input.ndim}-D tensor."
        )
    swapped = input.transpose(-2, -1)
    return swapped.conj() if input.dtype.kind == "c" else swapped


def sgn(input: Tensor) -> Tensor:
    """sign for real tensors; input / |input| (0 at 0) for complex ones."""
    require_tensor("sgn", input)
    if input.dtype.kind != "c":
        return input.sign()
    magnitude = input.abs()
    safe = where(magnitude == 0, 1.0, magnitude)
    return where(magnitude == 0, 0.0, input / safe)


def renorm(input: Tensor, p: float, dim: int, maxnorm: float) -> Tensor:
    """Each slice along `dim` whose p-norm exceeds maxnorm, scaled down to norm maxnorm."""
    require_tensor("renorm", input)
    if input.ndim <= 1:
        raise RuntimeError(
            f"renorm: input needs at least 2 dimensions, got {input.ndim} dimensions"
        )
    if p <= 0:
        raise RuntimeError("renorm: non-positive-norm not supported")
    if maxnorm < 0:
        raise RuntimeError(f"renorm: expected maxnorm to be >= 0 but got {maxnorm}")
    if input.dtype.kind not in "fc":
        raise RuntimeError(
            "linalg.vector_norm: Expected a floating point or complex tensor as input. Got "
            f"{torch_type_name(input.dtype)}"
        )
    axis = dim % input.ndim
    others = tuple(d for d in range(input.ndim) if d != axis)
    norms = input.norm(p, dim=others, keepdim=True)
    factor = where(norms > maxnorm, maxnorm / (norms + 1e-7), 1.0)
    return input * factor


def split_with_sizes(input: Tensor, split_sizes: Any, dim: int = 0) -> tuple:
    """Pieces of the given sizes (which must add up to the dim's size) along `dim`."""
    require_tensor("split_with_sizes", input)
    return split(input, list(split_sizes), dim)


def unsafe_split(input: Tensor, split_size: int, dim: int = 0) -> tuple:
    """split(input, split_size, dim)."""
    require_tensor("unsafe_split", input)
    return split(input, int(split_size), dim)


def unsafe_split_with_sizes(input: Tensor, split_sizes: Any, dim: int = 0) -> tuple:
    """split_with_sizes(input, split_sizes, dim)."""
    require_tensor("unsafe_split_with_sizes", input)
    return split(input, list(split_sizes), dim)


def unsafe_chunk(input: Tensor, chunks: int, dim: int = 0) -> tuple:
    """chunk(input, chunks, dim)."""
    require_tensor("unsafe_chunk", input)
    return chunk(input, chunks, dim)


FUNCTIONS: dict[str, Any] = {
    "absolute": absolute,
    "ravel": ravel,
    "adjoint": adjoint,
    "sgn": sgn,
    "renorm": renorm,
    "split_with_sizes": split_with_sizes,
    "unsafe_split": unsafe_split,
    "unsafe_split_with_sizes": unsafe_split_with_sizes,
    "unsafe_chunk": unsafe_chunk,
}
