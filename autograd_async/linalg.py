"""`autograd_async.linalg`: PyTorch's `torch.linalg` names."""

from __future__ import annotations

import math
from typing import Any

from .core.op import require_tensor
from .core.tensor import Tensor
from .ops.arithmetic import matmul
from .ops.cholesky import cholesky  # differentiable twice, as the distributions need
from .ops.householder_forms import householder_product
from .ops.linalg import linalg_norm as norm
from .ops.linalg import matrix_norm, svdvals, vector_norm
from .ops.linalg_decompositions import LinAlgError
from .ops.linalg_solvers import (
    cholesky_ex,
    cond,
    det,
    eig,
    eigh,
    eigvals,
    eigvalsh,
    inv,
    inv_ex,
    lstsq,
    lu,
    lu_factor,
    lu_solve,
    matrix_exp,
    matrix_power,
    matrix_rank,
    pinv,
    qr,
    slogdet,
    solve,
    solve_ex,
    solve_triangular,
    svd,
)
from .ops.linalg_solvers import (
    linalg_cross as cross,
)
from .ops.shape import stack
from .ops.symmetric_factorizations import ldl_factor, ldl_factor_ex, ldl_solve, lu_factor_ex
from .ops.views import diagonal as _diagonal


def diagonal(A: Tensor, *, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Tensor:
    """The diagonals of the matrices in A (a view)."""
    return _diagonal(A, offset, dim1, dim2)


def multi_dot(tensors: Any) -> Tensor:
    """The product of a chain of matrices (the first and last may be vectors)."""
    tensors = list(tensors)
    if len(tensors) < 2:
        raise RuntimeError(f"multi_dot(): expected at least 2 tensors but got {len(tensors)}")
    result = tensors[0]
    for t in tensors[1:]:
        result = matmul(result, t)
    return result


def vecdot(x: Tensor, y: Tensor, *, dim: int = -1) -> Tensor:
    """sum(conj(x) * y) over `dim`, broadcasting."""
    return ((x.conj() if x.is_complex() else x) * y).sum(dim)


def vander(x: Tensor, *, N: int | None = None) -> Tensor:  # noqa: N803 - PyTorch's name
    """Columns x ** 0, x ** 1, ..., x ** (N - 1) (increasing powers)."""
    require_tensor("linalg.vander", x)
    count = x.shape[-1] if N is None else N
    if count <= 0:
        raise RuntimeError("N must be greater than 1.")
    columns = [x * 0 + 1]
    for _ in range(count - 1):
        columns.append(columns[-1] * x)

    return stack(columns, -1)


def tensorinv(A: Tensor, ind: int = 2) -> Tensor:
    """The inverse of A seen as a map from its last dims to its first `ind` dims."""
    if ind <= 0:
        raise RuntimeError(f"Expected a strictly positive integer for 'ind', but got {ind}")
    rows = math.prod(A.shape[:ind])
    result = inv(A.reshape(rows, -1))
    return result.reshape(*A.shape[ind:], *A.shape[:ind])


def tensorsolve(A: Tensor, B: Tensor, dims: Any = None) -> Tensor:
    """X with tensordot(A, X, X.ndim) = B."""
    if dims is not None:
        rest = [d for d in range(A.ndim) if d not in [d % A.ndim for d in dims]]
        A = A.permute(*rest, *[d % A.ndim for d in dims])
    out_shape = A.shape[B.ndim :]
    X = solve(A.reshape(B.numel(), -1), B.reshape(-1))
    return X.reshape(out_shape)


__all__ = [
    "LinAlgError",
    "cholesky",
    "cholesky_ex",
    "cond",
    "cross",
    "det",
    "diagonal",
    "eig",
    "eigh",
    "eigvals",
    "eigvalsh",
    "householder_product",
    "inv",
    "inv_ex",
    "ldl_factor",
    "ldl_factor_ex",
    "ldl_solve",
    "lstsq",
    "lu",
    "lu_factor",
    "lu_factor_ex",
    "lu_solve",
    "matmul",
    "matrix_exp",
    "matrix_norm",
    "matrix_power",
    "matrix_rank",
    "multi_dot",
    "norm",
    "pinv",
    "qr",
    "slogdet",
    "solve",
    "solve_ex",
    "solve_triangular",
    "svd",
    "svdvals",
    "tensorinv",
    "tensorsolve",
    "vander",
    "vecdot",
    "vector_norm",
]
