"""Functions PyTorch defines in terms of other ops, written the same way here: absolute, ravel,
adjoint, sgn, renorm, unravel_index, pdist, bilinear and the incomplete gamma functions."""

from __future__ import annotations

from typing import Any

from ..core.op import require_tensor, torch_type_name
from ..core.tensor import Tensor
from .assembling import triu_indices
from .elementwise import where
from .linalg import einsum, vector_norm
from .shape import flatten
from .special_functions import gammainc, gammaincc


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


def unravel_index(indices: Tensor, shape: Any) -> tuple[Tensor, ...]:
    """The coordinates in `shape` of flat `indices` (taken modulo the number of elements)."""
    require_tensor("unravel_index", indices, "indices")
    if indices.dtype.kind not in "iu":
        raise TypeError(f"expected 'indices' to be integer dtype, but got torch.{indices.dtype}")
    sizes = (int(shape),) if isinstance(shape, int) else tuple(int(n) for n in shape)
    if any(n < 0 for n in sizes):
        raise ValueError("'shape' cannot have negative values, but got " + str(tuple(sizes)))
    total = 1
    for n in sizes:
        total *= n
    flat = indices.to(dtype="int64") % total if total else indices.to(dtype="int64")
    coordinates = []
    for n in reversed(sizes):
        coordinates.append(flat % n)
        flat = flat // n
    return tuple(reversed(coordinates))


def pdist(input: Tensor, p: float = 2.0) -> Tensor:
    """The p-norm distances between each pair of rows i < j of a 2-D input, row by row."""
    require_tensor("pdist", input)
    if input.ndim != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {input.ndim}D")
    if p < 0:
        raise RuntimeError("pdist only supports non-negative p values")
    rows = input.shape[0]
    first, second = triu_indices(rows, rows, 1, device=input.device)
    return vector_norm(input[first] - input[second], p, dim=1)


def bilinear(input1: Tensor, input2: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """y[..., o] = input1[..., i] weight[o, i, j] input2[..., j] (+ bias[o])."""
    require_tensor("bilinear", input1, "input1")
    require_tensor("bilinear", input2, "input2", 2)
    require_tensor("bilinear", weight, "weight", 3)
    if weight.ndim != 3:
        raise RuntimeError(f"bilinear(): weight must be three-dimensional, but got {weight.ndim}D")
    if input1.shape[-1] != weight.shape[1]:
        raise RuntimeError(
            f"bilinear(): input1 size does not match weight size: got "
            f"{input1.shape[-1]} but expected {weight.shape[1]}"
        )
    if input2.shape[-1] != weight.shape[2]:
        raise RuntimeError(
            f"bilinear(): input2 size does not match weight size: got "
            f"{input2.shape[-1]} but expected {weight.shape[2]}"
        )
    out = einsum("...i,oij,...j->...o", input1, weight, input2)
    return out if bias is None else out + bias


FUNCTIONS: dict[str, Any] = {
    "unravel_index": unravel_index,
    "pdist": pdist,
    "bilinear": bilinear,
    "igamma": gammainc,
    "igammac": gammaincc,
    "absolute": absolute,
    "ravel": ravel,
    "adjoint": adjoint,
    "sgn": sgn,
    "renorm": renorm,
}
NOT_METHODS = ("unravel_index", "pdist", "bilinear")
