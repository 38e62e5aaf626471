"""The named results of ops that return several tensors, named as PyTorch's
`torch.return_types` name them (`type(x.max(0)).__name__ == "max"`).

They live in a module of their own because their names are those of the functions that return
them: here they shadow nothing that is used, and each class is found by its own name (so results
pickle).
"""

from __future__ import annotations

from typing import NamedTuple

from ..core.tensor import Tensor


class max(NamedTuple):  # noqa: A001
    values: Tensor
    indices: Tensor


class min(NamedTuple):  # noqa: A001
    values: Tensor
    indices: Tensor


class sort(NamedTuple):
    values: Tensor
    indices: Tensor


class topk(NamedTuple):
    values: Tensor
    indices: Tensor


class kthvalue(NamedTuple):
    values: Tensor
    indices: Tensor


class frexp(NamedTuple):
    mantissa: Tensor
    exponent: Tensor


class histogram(NamedTuple):
    hist: Tensor
    bin_edges: Tensor


class histogramdd(NamedTuple):
    hist: Tensor
    bin_edges: tuple[Tensor, ...]


class triangular_solve(NamedTuple):
    solution: Tensor
    cloned_coefficient: Tensor


class lu_unpack(NamedTuple):
    P: Tensor
    L: Tensor
    U: Tensor
