"""torch.linalg's functions over the decomposition nodes: inverses, determinants, solvers,
factorizations, and PyTorch's older top-level names (det, svd with V, cholesky_solve, ...).

Solvers and the functions built on a factorization (pinv, lstsq, cond, matrix_rank, lu_solve,
householder_product, ...) are compositions of differentiable ops, so their gradients follow.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import numpy as np

from ..core.op import require_tensor
from ..core.tensor import Tensor
from ..devices import backend_of
from .arithmetic import matmul
from .cholesky import solve_triangular as triangular_solve
from .dual import xp_of
from .linalg import matrix_norm, svdvals
from .linalg_decompositions import (
    LinalgCholeskyExBackward0,
    LinalgDetBackward0,
    LinalgEigBackward0,
    LinalgEighBackward0,
    LinAlgError,
    LinalgInvExBackward0,
    LinalgLuBackward0,
    LinalgMatrixExpBackward0,
    LinalgQrBackward0,
    LinalgSlogdetBackward0,
    LinalgSvdBackward0,
    check_matrices,
    not_positive_definite,
    zero_pivot,
)
from .sampling import pad
from .shape import stack


class SlogdetResult(NamedTuple):
    sign: Tensor
    logabsdet: Tensor


class InvExResult(NamedTuple):
    inverse: Tensor
    info: Tensor


class CholeskyExResult(NamedTuple):
    L: Tensor  # noqa: N815 - PyTorch's field name
    info: Tensor


class QrResult(NamedTuple):
    Q: Tensor  # noqa: N815
    R: Tensor  # noqa: N815


class EighResult(NamedTuple):
    eigenvalues: Tensor
    eigenvectors: Tensor


class SvdResult(NamedTuple):
    U: Tensor  # noqa: N815
    S: Tensor  # noqa: N815
    Vh: Tensor  # noqa: N815


class OldSvdResult(NamedTuple):
    U: Tensor  # noqa: N815
    S: Tensor  # noqa: N815
    V: Tensor  # noqa: N815


class LstsqResult(NamedTuple):
    solution: Tensor
    residuals: Tensor
    rank: Tensor
    singular_values: Tensor


class LuFactorResult(NamedTuple):
    LU: Tensor  # noqa: N815
    pivots: Tensor


class LuResult(NamedTuple):
    P: Tensor  # noqa: N815
    L: Tensor  # noqa: N815
    U: Tensor  # noqa: N815


def _info(A: Tensor, failed: Any) -> Tensor:
    """An int32 info tensor per matrix: 0, or PyTorch's failure position."""
    xp = xp_of(A._data)
    return Tensor._wrap(xp.asarray(failed, dtype=np.int32).reshape(A.shape[:-2]), A.device)


def _mh(A: Tensor) -> Tensor:
    t = A.transpose(-2, -1)
    return t.conj() if A.is_complex() else t


# ------------------------------------------------------------------ inverses
def inv(A: Tensor) -> Tensor:
    """The inverse of each square matrix; LinAlgError for a singular one."""
    check_matrices("linalg.inv", A)
    return LinalgInvExBackward0.apply(A)


def inv_ex(A: Tensor, *, check_errors: bool = False) -> InvExResult:
    """(inverse, info): info is the 1-based zero pivot of a singular matrix, else 0."""
    check_matrices("linalg.inv_ex", A)
    matrices = A._data.reshape((-1,) + A.shape[-2:])
    failed = [0] * matrices.shape[0]
    for b in range(matrices.shape[0]):
        found = zero_pivot(matrices[b])
        failed[b] = 0 if found is None else found[1]
    if any(failed):
        if check_errors:
            inv(A)
        with np.errstate(all="ignore"):
            xp = xp_of(A._data)
            lu = _lu_arrays(A._data)
            inverse = Tensor._wrap(xp.asarray(_inverse_from_lu(*lu)), A.device)
        return InvExResult(inverse, _info(A, failed))
    return InvExResult(inv(A), _info(A, failed))


def _lu_arrays(a: Any) -> tuple:
    return backend_of(a).scipy_linalg("lu")(a)


def _inverse_from_lu(p: Any, lower: Any, upper: Any) -> Any:
    """U^-1 L^-1 P^T by substitution, inf and nan where a pivot is zero (as LAPACK gives)."""
    xp = xp_of(lower)
    n = lower.shape[-1]
    eye = xp.broadcast_to(xp.eye(n, dtype=lower.dtype), lower.shape)
    y = xp.linalg.solve(lower, eye)
    x = xp.empty_like(y)
    for i in range(n - 1, -1, -1):
        rest = (upper[..., i, i + 1 :, None] * x[..., i + 1 :, :]).sum(-2)
        x[..., i, :] = (y[..., i, :] - rest) / upper[..., i, i, None]
    return x @ p.swapaxes(-1, -2)


def det(A: Tensor) -> Tensor:
    """The determinant of each square matrix (0 for singular ones, with a gradient)."""
    check_matrices("linalg.det", A)
    return LinalgDetBackward0.apply(A)


def slogdet(A: Tensor) -> SlogdetResult:
    """(sign, log|det|) of each square matrix."""
    check_matrices("linalg.slogdet", A)
    return SlogdetResult(*LinalgSlogdetBackward0.apply(A))


def logdet(input: Tensor) -> Tensor:
    """log(det): nan for a negative determinant, -inf for a singular matrix."""
    check_matrices("logdet", input)
    sign, logabs = slogdet(input)
    if input.is_complex():
        return logabs + sign.log()
    nan = Tensor._wrap(xp_of(sign._data).asarray(math.nan, dtype=logabs.dtype), input.device)
    return logabs.where(sign >= 0, nan)


def matrix_exp(A: Tensor) -> Tensor:
    """exp(A) of each square matrix."""
    check_matrices("linalg.matrix_exp", A)
    return LinalgMatrixExpBackward0.apply(A)


def matrix_power(A: Tensor, n: int) -> Tensor:
    """A to the integer power n (the inverse's for n < 0), by repeated squaring."""
    require_tensor("linalg.matrix_power", A)
    if not isinstance(n, int) or isinstance(n, bool):
        raise TypeError(f"linalg.matrix_power(): argument 'n' must be int, not {type(n).__name__}")
    if n < 0:
        A, n = inv(A), -n
    xp = xp_of(A._data)
    result = None
    square = A
    while n:
        if n & 1:
            result = square if result is None else matmul(result, square)
        n >>= 1
        if n:
            square = matmul(square, square)
    if result is None:
        eye = xp.broadcast_to(xp.eye(A.shape[-1], dtype=A.dtype), A.shape).copy()
        return Tensor._wrap(eye, A.device) + A * 0
    return result


# ------------------------------------------------------------------- solvers
def _is_vector_rhs(A: Tensor, B: Tensor) -> bool:
    return B.ndim == 1 or (B.ndim == A.ndim - 1 and tuple(B.shape) == tuple(A.shape[:-1]))


def solve(A: Tensor, B: Tensor, *, left: bool = True) -> Tensor:
    """X with A X = B (X A = B when left=False); LinAlgError for a singular A."""
    check_matrices("linalg.solve", A)
    require_tensor("linalg.solve", B, "B", 2)
    vector = _is_vector_rhs(A, B)
    if not left:
        return _mh(solve(_mh(A), _mh(B)))
    try:
        inverse = LinalgInvExBackward0.apply(A)
    except LinAlgError:
        raise LinAlgError(
            "torch.linalg.solve: The solver failed because the input matrix is singular."
        ) from None
    if vector:
        return matmul(inverse, B.unsqueeze(-1)).squeeze(-1)
    return matmul(inverse, B)


def solve_ex(
    A: Tensor, B: Tensor, *, left: bool = True, check_errors: bool = False
) -> tuple[Tensor, Tensor]:
    """(solve(A, B), info)."""
    inverse, info = inv_ex(A, check_errors=check_errors)
    x = matmul(inverse, B.unsqueeze(-1)).squeeze(-1) if _is_vector_rhs(A, B) else matmul(inverse, B)
    return x, info


def _triangle(A: Tensor, upper: bool, unitriangular: bool) -> Tensor:
    part = A.triu() if upper else A.tril()
    if unitriangular:
        xp = xp_of(A._data)
        eye = Tensor._wrap(xp.eye(A.shape[-1], dtype=bool), A.device)
        part = part.where(~eye, 1.0)
    return part


def solve_triangular(
    A: Tensor, B: Tensor, *, upper: bool, left: bool = True, unitriangular: bool = False
) -> Tensor:
    """X with A X = B (X A = B when left=False) for triangular A (only that triangle is read)."""
    check_matrices("linalg.solve_triangular", A)
    require_tensor("linalg.solve_triangular", B, "B", 2)
    if B.ndim < 2:
        raise RuntimeError(
            "linalg.solve_triangular: The input tensor B must have at least 2 dimensions."
        )
    # A triangular solve (only that triangle is read), not a product with the inverse.
    return triangular_solve(A, B, upper=upper, left=left, unitriangular=unitriangular)


def cholesky(A: Tensor, *, upper: bool = False) -> Tensor:
    """The Cholesky factor of each Hermitian positive-definite matrix (lower unless upper)."""
    check_matrices("linalg.cholesky", A)
    return LinalgCholeskyExBackward0.apply(A, upper=upper, check=True)


def cholesky_ex(A: Tensor, *, upper: bool = False, check_errors: bool = False) -> CholeskyExResult:
    """(L, info): info is the order of the first leading minor that is not positive-definite."""
    check_matrices("linalg.cholesky_ex", A)
    xp = xp_of(A._data)
    matrices = A._data.reshape((-1,) + A.shape[-2:])
    failed = []
    for b in range(matrices.shape[0]):
        order = 0
        try:
            xp.linalg.cholesky(matrices[b])
        except np.linalg.LinAlgError:
            message = str(not_positive_definite(matrices[b]))
            order = int(message.rsplit("order ", 1)[1].split(" ")[0])
        failed.append(order)
    if any(failed) and check_errors:
        cholesky(A, upper=upper)
    factor = LinalgCholeskyExBackward0.apply(A, upper=upper, check=False)
    return CholeskyExResult(factor, _info(A, failed))


def cholesky_solve(B: Tensor, L: Tensor, upper: bool = False) -> Tensor:
    """X with (L L^H) X = B for a Cholesky factor L (U^H U when upper)."""
    factor = _mh(L) if upper else L
    y = solve_triangular(factor, B, upper=False)
    return solve_triangular(_mh(factor), y, upper=True)


def cholesky_inverse(L: Tensor, upper: bool = False) -> Tensor:
    """(L L^H)^-1 from a Cholesky factor L (U^H U when upper)."""
    xp = xp_of(L._data)
    eye = Tensor._wrap(
        xp.broadcast_to(xp.eye(L.shape[-1], dtype=L.dtype), L.shape).copy(), L.device
    )
    return cholesky_solve(eye, L, upper)


# ------------------------------------------------------------ factorizations
def qr(A: Tensor, mode: str = "reduced") -> QrResult:
    """Q, R with A = QR: mode 'reduced', 'complete' or 'r' (R only; Q empty)."""
    check_matrices("linalg.qr", A, square=False)
    if mode not in ("reduced", "complete", "r"):
        raise RuntimeError(
            f"qr received unrecognized mode '{mode}' but expected one of 'reduced' (default), "
            "'r', or 'complete'"
        )
    return QrResult(*LinalgQrBackward0.apply(A, mode=mode))


def eigh(A: Tensor, UPLO: str = "L") -> EighResult:  # noqa: N803 - PyTorch's name
    """Eigenvalues (ascending) and eigenvectors of Hermitian matrices (the UPLO triangle)."""
    check_matrices("linalg.eigh", A)
    if UPLO not in ("L", "U"):
        raise RuntimeError("Expected UPLO argument to be 'L' or 'U', but got " + UPLO)
    return EighResult(*LinalgEighBackward0.apply(A, uplo=UPLO))


def eigvalsh(A: Tensor, UPLO: str = "L") -> Tensor:  # noqa: N803
    """The eigenvalues of Hermitian matrices, ascending."""
    return eigh(A, UPLO).eigenvalues


def eig(A: Tensor) -> EighResult:
    """Complex eigenvalues and eigenvectors of square matrices."""
    check_matrices("linalg.eig", A)
    return EighResult(*LinalgEigBackward0.apply(A))


def eigvals(A: Tensor) -> Tensor:
    """The complex eigenvalues of square matrices."""
    return eig(A).eigenvalues


def svd(A: Tensor, full_matrices: bool = True, *, driver: Any = None) -> SvdResult:
    """U, S, Vh with A = U diag(S) Vh."""
    check_matrices("linalg.svd", A, square=False)
    return SvdResult(*LinalgSvdBackward0.apply(A, full_matrices=full_matrices))


def old_svd(input: Tensor, some: bool = True, compute_uv: bool = True) -> OldSvdResult:
    """torch.svd: U, S, V (not Vh); reduced unless some=False; zeros U, V without compute_uv."""
    u, s, vh = svd(input, full_matrices=not some)
    if not compute_uv:
        xp = xp_of(input._data)
        m, n = input.shape[-2:]
        zeros_u = xp.zeros(input.shape[:-2] + (m, m), input.dtype)
        zeros_v = xp.zeros(input.shape[:-2] + (n, n), input.dtype)
        return OldSvdResult(
            Tensor._wrap(zeros_u, input.device), s, Tensor._wrap(zeros_v, input.device)
        )
    return OldSvdResult(u, s, _mh(vh))


def lu_factor(A: Tensor, *, pivot: bool = True) -> LuFactorResult:
    """(LU, pivots): L below the diagonal (unit diagonal implied), U on and above it; pivots
    1-based, LAPACK's."""
    check_matrices("linalg.lu_factor", A, square=False)
    if not pivot:
        raise RuntimeError("linalg.lu_factor: LU without pivoting is not implemented on the CPU")
    p, lower, upper = lu(A)
    m, n = A.shape[-2:]
    k = min(m, n)
    packed = lower[..., :, :k].tril(-1) if m >= n else lower.tril(-1)
    if m >= n:
        packed = packed + _pad_rows(upper, m)
    else:
        packed = _pad_cols(packed, n) + upper
    xp = xp_of(p._data)
    # the row each step swapped in, from the permutation: LAPACK's ipiv
    perm = xp.argmax(p._data.swapaxes(-1, -2), axis=-1)  # row of A at each row of P^T A
    pivots = xp.zeros(A.shape[:-2] + (k,), np.int32)
    flat_perm = perm.reshape(-1, m)
    flat_piv = pivots.reshape(-1, k)
    for b in range(flat_perm.shape[0]):
        order = list(range(m))
        where = {r: r for r in range(m)}
        for i in range(k):
            target = int(flat_perm[b, i])
            j = where[target]
            flat_piv[b, i] = j + 1
            order[i], order[j] = order[j], order[i]
            where[order[i]], where[order[j]] = i, j
    return LuFactorResult(packed, Tensor._wrap(flat_piv.reshape(pivots.shape), A.device))


def _pad_rows(t: Tensor, rows: int) -> Tensor:
    return pad(t, (0, 0, 0, rows - t.shape[-2])) if rows > t.shape[-2] else t


def _pad_cols(t: Tensor, cols: int) -> Tensor:
    return pad(t, (0, cols - t.shape[-1])) if cols > t.shape[-1] else t


def lu(A: Tensor, *, pivot: bool = True) -> LuResult:
    """P, L, U with A = P L U (partial pivoting)."""
    check_matrices("linalg.lu", A, square=False)
    return LuResult(*LinalgLuBackward0.apply(A))


def _permutation(pivots: Tensor, m: int) -> Any:
    """The permutation matrices P (A = P L U) of LAPACK's 1-based pivots."""
    xp = xp_of(pivots._data)
    flat = pivots._data.reshape(-1, pivots.shape[-1])
    out = xp.zeros((flat.shape[0], m, m))
    for b in range(flat.shape[0]):
        order = list(range(m))
        for i, p in enumerate(flat[b].tolist()):
            order[i], order[p - 1] = order[p - 1], order[i]
        out[b, order, range(m)] = 1
    return out.reshape(pivots.shape[:-1] + (m, m))


def lu_solve(
    LU: Tensor,
    pivots: Tensor,
    B: Tensor,
    *,
    left: bool = True,  # noqa: N803
    adjoint: bool = False,
) -> Tensor:
    """X with A X = B from A's lu_factor (A^H X = B with adjoint; X A = B when left=False)."""
    n = LU.shape[-1]
    p = Tensor._wrap(_permutation(pivots, n).astype(LU.dtype), LU.device)
    lower = _triangle(LU, upper=False, unitriangular=True)
    upper = LU.triu()
    A = matmul(matmul(p, lower), upper)
    if adjoint:
        A = _mh(A)
    return solve(A, B, left=left)


# ------------------------------------------------------ built on the SVD
def pinv(A: Tensor, *, atol: Any = None, rtol: Any = None, hermitian: bool = False) -> Tensor:
    """The pseudo-inverse: singular values below max(atol, rtol * largest) count as zero."""
    check_matrices("linalg.pinv", A, square=False)
    if hermitian:
        values, vectors = eigh(A)
        scale = values.abs()
    else:
        u, scale, vh = svd(A, full_matrices=False)
    largest = scale.amax(-1, keepdim=True) if scale.shape[-1] else scale.sum(-1, keepdim=True)
    if rtol is None:
        rtol = (
            max(A.shape[-2:]) * np.finfo(np.empty(0, A.dtype).real.dtype).eps
            if atol is None or atol == 0
            else 0.0
        )
    cutoff = largest * rtol
    if atol is not None:
        cutoff = cutoff.clamp_min(atol) if not isinstance(atol, Tensor) else cutoff.maximum(atol)
    keep = scale > cutoff
    if hermitian:
        inverse_values = (1 / values.where(keep, 1.0)).where(keep, 0.0)
        return matmul(vectors * inverse_values.unsqueeze(-2), _mh(vectors))
    inverse_s = (1 / scale.where(keep, 1.0)).where(keep, 0.0)
    return matmul(_mh(vh) * inverse_s.unsqueeze(-2).to(dtype=A.dtype), _mh(u))


def pinverse(input: Tensor, rcond: float = 1e-15) -> Tensor:
    """torch.pinverse: pinv with a relative cutoff `rcond`."""
    return pinv(input, rtol=rcond)


def lstsq(A: Tensor, B: Tensor, rcond: Any = None, *, driver: Any = None) -> LstsqResult:
    """The least-squares solution of A X = B (the pseudo-inverse's), with its rank."""
    check_matrices("linalg.lstsq", A, square=False)
    require_tensor("linalg.lstsq", B, "B", 2)
    vector = B.ndim == A.ndim - 1
    rhs = B.unsqueeze(-1) if vector else B
    solution = matmul(pinv(A, rtol=rcond), rhs)
    if vector:
        solution = solution.squeeze(-1)
    xp = xp_of(A._data)
    empty = Tensor._wrap(xp.empty((0,), A.dtype), A.device)
    return LstsqResult(solution, empty, matrix_rank(A, rtol=rcond), empty)


def matrix_rank(
    A: Tensor, *, atol: Any = None, rtol: Any = None, hermitian: bool = False
) -> Tensor:
    """How many singular values exceed max(atol, rtol * the largest) (int64)."""
    check_matrices("linalg.matrix_rank", A, square=False)
    values = eigvalsh(A).abs() if hermitian else svdvals(A)
    largest = values.amax(-1, keepdim=True) if values.shape[-1] else values.sum(-1, keepdim=True)
    if rtol is None:
        rtol = (
            max(A.shape[-2:]) * np.finfo(np.empty(0, A.dtype).real.dtype).eps
            if atol is None or atol == 0
            else 0.0
        )
    cutoff = (largest * rtol).detach()
    if atol is not None:
        cutoff = cutoff.clamp_min(atol)
    return (values.detach() > cutoff).sum(-1)


def cond(A: Tensor, p: Any = None) -> Tensor:
    """The condition number in norm p (None and 2: largest over smallest singular value)."""
    check_matrices("linalg.cond", A, square=p not in (None, 2, -2))
    if p in (None, 2, -2):
        values = svdvals(A)
        ratio = values[..., 0] / values[..., -1]
        return ratio if p != -2 else 1 / ratio
    with np.errstate(all="ignore"):
        inverse, info = inv_ex(A)
    return matrix_norm(A, p) * matrix_norm(inverse, p)


def linalg_cross(input: Tensor, other: Tensor, *, dim: int = -1) -> Tensor:
    """The cross product of 3-vectors along `dim`, broadcasting."""
    require_tensor("linalg.cross", input)
    require_tensor("linalg.cross", other, "other", 2)
    if input.shape[dim] != 3 or other.shape[dim] != 3:
        raise RuntimeError(
            f"linalg.cross: inputs dimension {dim} must have length 3. Got "
            f"{input.shape[dim]} and {other.shape[dim]}"
        )
    a = [input.select(dim, i) for i in range(3)]
    b = [other.select(dim, i) for i in range(3)]
    parts = [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]]
    return stack(parts, dim)


def cross(input: Tensor, other: Tensor, dim: int | None = None) -> Tensor:
    """torch.cross: along `dim`, or (deprecated default) the first dim of length 3."""
    if dim is None:
        sizes = np.broadcast_shapes(tuple(input.shape), tuple(other.shape))
        dim = next((d for d, n in enumerate(sizes) if n == 3), -1)
    return linalg_cross(input, other, dim=dim)


def old_cholesky(input: Tensor, upper: bool = False) -> Tensor:
    """torch.cholesky: the lower (or upper) Cholesky factor."""
    return cholesky(input, upper=upper)


def old_qr(input: Tensor, some: bool = True) -> QrResult:
    """torch.qr: reduced unless some=False."""
    return qr(input, "reduced" if some else "complete")


FUNCTIONS: dict[str, Any] = {
    "cross": cross,
    "cholesky": old_cholesky,
    "qr": old_qr,
    "det": det,
    "logdet": logdet,
    "slogdet": slogdet,
    "inverse": inv,
    "matrix_exp": matrix_exp,
    "matrix_power": matrix_power,
    "pinverse": pinverse,
    "cholesky_solve": cholesky_solve,
    "cholesky_inverse": cholesky_inverse,
    "svd": old_svd,
}
