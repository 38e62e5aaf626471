"""Cholesky factors and triangular solves (batched), with their gradients: what multivariate
normal distributions are built on (`linalg.cholesky`, `linalg.solve_triangular`).

A triangular solve reads only its matrix's triangle (as PyTorch's does), and runs as a general
batched solve of that triangle, which NumPy and CuPy both have.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..core.op import Op, require_tensor
from ..core.tensor import Tensor
from ..devices import backend_of
from .dual import as_array, quiet, swap_last, xp_of
from .linalg_decompositions import LinAlgError


def _triangle(a: Any, upper: bool) -> Any:
    if isinstance(a, Tensor):
        return a.triu() if upper else a.tril()
    return xp_of(a).triu(a) if upper else xp_of(a).tril(a)


def _solve(a: Any, b: Any, upper: bool, left: bool) -> Any:
    """A^-1 B (left) or B A^-1 (right) for a triangular A, on arrays or Tensors."""
    if isinstance(a, Tensor) or isinstance(b, Tensor):
        return SolveTriangularBackward0.apply(a, b, upper=upper, left=left)
    return solve_array(a, b, upper, left)


def solve_array(a: Any, b: Any, upper: bool, left: bool) -> Any:
    """The triangular solve on arrays (batch dimensions broadcast)."""
    xp = xp_of(a)
    a = _triangle(a, upper)
    if not left:  # X A = B  <=>  A^T X^T = B^T
        return xp.swapaxes(
            solve_array(xp.swapaxes(a, -1, -2), xp.swapaxes(b, -1, -2), not upper, True), -1, -2
        )
    batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    a = xp.broadcast_to(a, batch + a.shape[-2:])
    b = xp.broadcast_to(b, batch + b.shape[-2:])
    with quiet():
        return as_array(xp.linalg.solve(a, b))


class SolveTriangularBackward0(Op):
    """X = A^-1 B for a triangular A: gB = A^-T gX, gA = -triangle(gB X^T)."""

    __slots__ = ("_upper", "_left")
    saved_inputs = (0,)
    saves_output = True
    op_name = "linalg_solve_triangular"

    def forward(self, a: Any, b: Any, upper: bool, left: bool) -> Any:
        self._upper, self._left = upper, left
        return solve_array(a, b, upper, left)

    def backward(self, g: Any) -> tuple:
        a, x = self.saved(g)
        a_t = swap_last(_triangle(a, self._upper))
        if self._left:
            gb = _solve(a_t, g, not self._upper, True)
            ga = -(gb @ swap_last(x))
        else:
            gb = _solve(a_t, g, not self._upper, False)
            ga = -(swap_last(x) @ gb)
        ga = _triangle(ga, self._upper)
        need_a, need_b = self.needs_input_grad
        return (ga if need_a else None), (gb if need_b else None)


class LinalgCholeskyBackward0(Op):
    """L = cholesky(A): gA = L^-T sym(tril(L^T gL)) L^-1, PyTorch's symmetric gradient."""

    __slots__ = ()
    saved_inputs = ()
    saves_output = True
    op_name = "linalg_cholesky"

    def forward(self, a: Any) -> Any:
        xp = xp_of(a)
        try:
            out = xp.linalg.cholesky(a)
        except np.linalg.LinAlgError:
            raise _not_positive_definite(a) from None
        # CuPy does not raise: a factor with NaNs of a finite input means the same failure.
        if xp is not np and bool(xp.isnan(out).any()) and bool(xp.isfinite(a).all()):
            raise _not_positive_definite(a)
        return as_array(out)

    def backward(self, g: Any) -> Any:
        (lower,) = self.saved(g)
        phi = _triangle(swap_last(lower) @ g, False)
        phi = (phi + swap_last(_triangle_strict(phi))) * 0.5
        ga = _solve(swap_last(lower), phi, True, True)
        return _solve(lower, ga, False, False)


def _triangle_strict(a: Any) -> Any:
    return a.tril(-1) if isinstance(a, Tensor) else xp_of(a).tril(a, -1)


def _not_positive_definite(a: Any) -> LinAlgError:
    """PyTorch's error, naming the first leading minor that is not positive-definite."""
    host = backend_of(a).to_host(a)
    flat = host.reshape((-1,) + host.shape[-2:])
    for batch, matrix in enumerate(flat):
        for order in range(1, matrix.shape[-1] + 1):
            try:
                np.linalg.cholesky(matrix[:order, :order])
            except np.linalg.LinAlgError:
                where = f"(Batch element {batch}): " if a.ndim > 2 else ""
                return LinAlgError(
                    f"linalg.cholesky: {where}The factorization could not be completed because "
                    f"the input is not positive-definite (the leading minor of order {order} "
                    "is not positive-definite)."
                )
    return LinAlgError("linalg.cholesky: The input is not positive-definite.")


def cholesky(A: Tensor, *, upper: bool = False) -> Tensor:
    """The Cholesky factor of symmetric positive-definite matrices (lower, or upper if asked)."""
    require_tensor("linalg_cholesky", A, "A")
    if A.ndim < 2 or A.shape[-1] != A.shape[-2]:
        raise RuntimeError(
            "linalg.cholesky: A must be batches of square matrices, but they are "
            f"{A.shape[-2] if A.ndim > 1 else 1} by {A.shape[-1] if A.ndim else 1} matrices"
        )
    lower = LinalgCholeskyBackward0.apply(A)
    return lower.mT if upper else lower


def solve_triangular(
    A: Tensor, B: Tensor, *, upper: bool, left: bool = True, unitriangular: bool = False
) -> Tensor:
    """The solution X of A X = B (or X A = B with left=False) for triangular A."""
    require_tensor("linalg_solve_triangular", A, "A")
    require_tensor("linalg_solve_triangular", B, "B", 2)
    if unitriangular:
        eye = A.new_ones(A.shape[-1]).diag()
        A = A * (1 - eye) + eye
    return SolveTriangularBackward0.apply(A, B, upper=upper, left=left)
