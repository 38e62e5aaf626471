"""linalg.ldl_factor, ldl_factor_ex, ldl_solve (LAPACK's Bunch-Kaufman sytrf/hetrf and sytrs/
hetrs, whose compact output and 1-based pivots PyTorch returns as they are) and lu_factor_ex.

PyTorch defines no derivative for the LDL functions: their outputs carry a node whose backward
raises PyTorch's error, so a program learns at backward time, as it would with PyTorch. LAPACK
runs on the host; a CUDA tensor's matrices travel there and back.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from ..core.op import Op
from ..core.tensor import Tensor
from .dual import xp_of
from .linalg_decompositions import check_matrices
from .linalg_solvers import _info, lu_factor


class LinalgLdlFactorExResult(NamedTuple):
    LD: Tensor  # noqa: N815
    pivots: Tensor
    info: Tensor


class LinalgLdlFactorResult(NamedTuple):
    LD: Tensor  # noqa: N815
    pivots: Tensor


class LinalgLuFactorExResult(NamedTuple):
    LU: Tensor  # noqa: N815
    pivots: Tensor
    info: Tensor


class NotImplemented(Op):  # noqa: A001 - PyTorch's name for a node without a derivative
    """A value computed elsewhere, on the graph of its inputs, whose backward refuses."""

    __slots__ = ("_aten",)
    op_name = "not_implemented"
    complex_conjugate_rule = True

    def forward(self, *inputs: Any, value: Any, aten: str) -> Any:
        self._aten = aten
        return value

    def backward(self, *grads: Any) -> Any:
        raise RuntimeError(f"derivative for aten::{self._aten} is not implemented")


def _host(a: Any) -> np.ndarray:
    return a.get() if hasattr(a, "get") else np.asarray(a)


def _lapack(prefix: str, dtype: Any, hermitian: bool) -> Any:
    import scipy.linalg.lapack as lapack  # noqa: PLC0415 - only these functions need it

    letter = {"float32": "s", "float64": "d", "complex64": "c", "complex128": "z"}[str(dtype)]
    kind = "he" if hermitian and letter in "cz" else "sy"
    return getattr(lapack, f"{letter}{kind}{prefix}")


def _on_graph(value: Any, aten: str, *inputs: Tensor) -> Tensor:
    return NotImplemented.apply(*inputs, value=value, aten=aten)


def ldl_factor_ex(
    A: Tensor, *, hermitian: bool = False, check_errors: bool = False
) -> LinalgLdlFactorExResult:
    """(LD, pivots, info): the compact LDL^T (LDL^H when hermitian) factorisation of each
    symmetric matrix, from its lower triangle; info > 0 where D has an exact zero."""
    check_matrices("torch.linalg.ldl_factor_ex", A)
    sytrf = _lapack("trf", A.dtype, hermitian)
    matrices = _host(A._data).reshape((-1,) + A.shape[-2:])
    factors = np.empty_like(matrices)
    pivots = np.empty(matrices.shape[:-1], np.int32)
    failed = []
    for b in range(matrices.shape[0]):
        ldu, ipiv, info = sytrf(matrices[b], lower=1)
        factors[b] = np.tril(ldu)
        pivots[b] = ipiv
        failed.append(int(info))
    if check_errors and any(failed):
        raise RuntimeError(f"torch.linalg.ldl_factor_ex: Unknown error code: {max(failed)}.")
    xp = xp_of(A._data)
    LD = _on_graph(xp.asarray(factors.reshape(A.shape)), "linalg_ldl_factor_ex", A)
    piv = Tensor._wrap(xp.asarray(pivots.reshape(A.shape[:-1])), A.device)
    return LinalgLdlFactorExResult(LD, piv, _info(A, failed))


def ldl_factor(A: Tensor, *, hermitian: bool = False) -> LinalgLdlFactorResult:
    """(LD, pivots) of `ldl_factor_ex`, refusing a matrix whose D has an exact zero."""
    check_matrices("torch.linalg.ldl_factor", A)
    LD, pivots, info = ldl_factor_ex(A, hermitian=hermitian)
    worst = int(info.max().item()) if info.numel() else 0
    if worst:
        raise RuntimeError(f"torch.linalg.ldl_factor: Unknown error code: {worst}.")
    return LinalgLdlFactorResult(LD, pivots)


def ldl_solve(
    LD: Tensor,
    pivots: Tensor,
    B: Tensor,
    *,  # noqa: N803 - PyTorch's names
    hermitian: bool = False,
) -> Tensor:
    """X with A X = B, from A's `ldl_factor`; batch dimensions broadcast."""
    check_matrices("torch.linalg.ldl_solve", LD, argument="LD")
    if B.ndim < 2:
        raise RuntimeError(
            "torch.linalg.ldl_solve: Expected B to have at least 2 dimensions, "
            f"but it has {B.ndim} dimensions instead"
        )
    if LD.shape[-1] != B.shape[-2]:
        raise RuntimeError(
            f"torch.linalg.ldl_solve: Incompatible shapes of A and B for the equation AX = B "
            f"({LD.shape[-2]}x{LD.shape[-1]} and {B.shape[-2]}x{B.shape[-1]})"
        )
    if pivots.dtype != np.int32:
        raise RuntimeError(
            f"torch.linalg.ldl_solve: Expected pivots to be integers. Got {pivots.dtype}"
        )
    if LD.dtype != B.dtype:
        raise RuntimeError(
            f"torch.linalg.ldl_solve: Expected LD and B to have the same dtype, "
            f"but found LD of type {LD.dtype} and B of type {B.dtype} instead"
        )
    sytrs = _lapack("trs", LD.dtype, hermitian)
    batch = np.broadcast_shapes(LD.shape[:-2], B.shape[:-2], pivots.shape[:-1])
    n, k = LD.shape[-1], B.shape[-1]
    factors = np.broadcast_to(_host(LD._data), batch + (n, n)).reshape(-1, n, n)
    pivs = np.broadcast_to(_host(pivots._data), batch + (n,)).reshape(-1, n)
    rhs = np.broadcast_to(_host(B._data), batch + (n, k)).reshape(-1, n, k)
    out = np.empty(rhs.shape, LD.dtype)
    for b in range(rhs.shape[0]):
        x, info = sytrs(factors[b], pivs[b], rhs[b], lower=1)
        out[b] = x
    xp = xp_of(B._data)
    return _on_graph(xp.asarray(out.reshape(batch + (n, k))), "linalg_ldl_solve", LD, B)


def lu_factor_ex(
    A: Tensor, *, pivot: bool = True, check_errors: bool = False
) -> LinalgLuFactorExResult:
    """(LU, pivots, info) of `lu_factor`; info is the 1-based position of U's first zero on the
    diagonal (the matrix is singular), else 0."""
    check_matrices("linalg.lu_factor_ex", A, square=False)
    LU, pivots = lu_factor(A, pivot=pivot)
    diag = _host(LU._data).diagonal(0, -2, -1).reshape(-1, min(A.shape[-2:]))
    failed = [int(np.flatnonzero(d == 0)[0]) + 1 if (d == 0).any() else 0 for d in diag]
    if check_errors and any(failed):
        raise RuntimeError(
            "torch.linalg.lu_factor_ex: U[{0},{0}] is zero and using it on lu_solve would "
            "result in a division by zero. If you still want to perform the factorization, "
            "consider calling linalg.lu(A, pivot) or linalg.lu_factor_ex(A, pivot)".format(
                max(failed)
            )
        )
    return LinalgLuFactorExResult(LU, pivots, _info(A, failed))
