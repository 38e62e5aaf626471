"""PyTorch's top-level linear algebra functions from before torch.linalg: triangular_solve,
lu, lu_solve, lu_unpack and vander, each written with the torch.linalg op it was replaced by
(arguments in the old order, results in the old form)."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from ..core.op import require_tensor
from ..core.tensor import Tensor
from .linalg_solvers import _permutation, lu_factor, solve_triangular
from .linalg_solvers import lu_solve as _linalg_lu_solve
from .return_types import lu_unpack as lu_unpack_result
from .return_types import triangular_solve as triangular_solve_result
from .shape import cat
from .triangular import tril, triu


def triangular_solve(
    input: Tensor,
    A: Tensor,
    upper: bool = True,
    transpose: bool = False,  # noqa: N803
    unitriangular: bool = False,
) -> tuple[Tensor, Tensor]:
    """(X, A's copy) with A X = input (A^T X = input with transpose), A triangular."""
    warnings.warn(
        "torch.triangular_solve is deprecated in favor of torch.linalg.solve_triangularand will "
        "be removed in a future PyTorch release.",
        UserWarning,
        stacklevel=2,
    )
    require_tensor("triangular_solve", input)
    require_tensor("triangular_solve", A, "A", 2)
    matrix = A.transpose(-2, -1) if transpose else A
    solution = solve_triangular(
        matrix, input, upper=upper != transpose, unitriangular=unitriangular
    )
    return triangular_solve_result(solution, A.clone())


def lu(A: Tensor, pivot: bool = True, get_infos: bool = False) -> tuple:  # noqa: N803
    """(LU, pivots) of A, as linalg.lu_factor; with get_infos, also zero infos (int32)."""
    warnings.warn(
        "torch.lu is deprecated in favor of torch.linalg.lu_factor / torch.linalg.lu_factor_ex "
        "and will be removed in a future PyTorch release.",
        UserWarning,
        stacklevel=2,
    )
    require_tensor("lu", A)
    factors, pivots = lu_factor(A, pivot=pivot)
    if not get_infos:
        return factors, pivots
    infos = Tensor._wrap(np.zeros(tuple(A.shape[:-2]), np.int32), A.device)
    return factors, pivots, infos.to(device=A.device)


def lu_solve(b: Tensor, LU_data: Tensor, LU_pivots: Tensor) -> Tensor:  # noqa: N803
    """X with A X = b, from A's (LU, pivots) (linalg.lu_solve with its arguments reversed)."""
    warnings.warn(
        "torch.lu_solve is deprecated in favor of torch.linalg.lu_solveand will be removed in "
        "a future PyTorch release.",
        UserWarning,
        stacklevel=2,
    )
    require_tensor("lu_solve", b)
    return _linalg_lu_solve(LU_data, LU_pivots, b)


def lu_unpack(
    LU_data: Tensor,
    LU_pivots: Tensor,
    unpack_data: bool = True,  # noqa: N803
    unpack_pivots: bool = True,
) -> tuple[Tensor, Tensor, Tensor]:
    """(P, L, U) from lu_factor's (LU, pivots): A = P L U, L unit lower, U upper."""
    require_tensor("lu_unpack", LU_data)
    require_tensor("lu_unpack", LU_pivots, "LU_pivots", 2)
    if LU_pivots.dtype != np.int32:
        raise RuntimeError(
            "torch.lu_unpack: LU_pivots is expected to be a contiguous tensor of torch.int32 "
            "dtype. Note: this function is intended to be used with the output produced by "
            "torch.linalg.lu_factor"
        )
    m, n = LU_data.shape[-2], LU_data.shape[-1]
    k = min(m, n)
    empty = LU_data.new_zeros((0,))
    lower = upper = empty
    if unpack_data:
        eye = LU_data.new_zeros((m, k))
        eye._data[np.arange(k), np.arange(k)] = 1
        lower = tril(LU_data[..., :, :k], -1) + eye
        upper = triu(LU_data[..., :k, :])
    permutation = empty
    if unpack_pivots:
        array = _permutation(LU_pivots, m).astype(LU_data.dtype)
        permutation = Tensor._wrap(array, LU_pivots.device).to(device=LU_data.device)
    return lu_unpack_result(permutation, lower, upper)


def vander(x: Tensor, N: int | None = None, increasing: bool = False) -> Tensor:  # noqa: N803
    """The Vandermonde matrix of 1-D x: columns x ** (N - 1), ..., x ** 0 (reversed when
    increasing)."""
    require_tensor("vander", x)
    if x.ndim != 1:
        raise RuntimeError("x must be a one-dimensional tensor.")
    count = x.shape[0] if N is None else N
    if count < 0:
        raise RuntimeError("N must be non-negative.")
    if x.dtype.kind == "b":
        x = x.to(dtype=np.int64)
    columns = [x.new_ones(tuple(x.shape))[:, None]] if count else []
    for _ in range(count - 1):
        columns.append(columns[-1] * x[:, None])
    if not columns:
        return x.new_zeros((x.shape[0], 0))
    matrix = cat(columns, 1)
    return matrix if increasing else matrix.flip(1)


FUNCTIONS: dict[str, Any] = {
    "triangular_solve": triangular_solve,
    "lu": lu,
    "lu_solve": lu_solve,
    "lu_unpack": lu_unpack,
    "vander": vander,
}
NOT_METHODS = ("lu_unpack", "vander")
