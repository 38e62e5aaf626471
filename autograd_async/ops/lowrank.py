"""Randomised low-rank factorisations (svd_lowrank, pca_lowrank: Halko et al. 2009, as PyTorch's
torch._lowrank) and lobpcg's basic method for a few extreme eigenpairs of a symmetric matrix.

svd_lowrank and pca_lowrank are differentiable compositions of matmul, QR and SVD; their random
test matrix comes from the default generator, so `manual_seed` makes them repeatable (the
values differ from PyTorch's, whose generator differs).
"""

from __future__ import annotations

from typing import Any

from ..core.op import require_tensor
from ..core.tensor import Tensor
from ..creation import randn
from ..dtypes import float32
from ..grad_mode import no_grad
from .assembling import cat
from .linalg_solvers import cholesky_ex, eigh, qr, solve_triangular, svd


def _mh(A: Tensor) -> Tensor:
    t = A.transpose(-2, -1)
    return t.conj() if t.is_complex() else t


def _floating(A: Tensor) -> Any:
    return A.dtype if A.dtype.kind in "fc" else float32


def get_approximate_basis(
    A: Tensor, q: int, niter: int | None = 2, M: Tensor | None = None
) -> Tensor:
    """An orthonormal (m, q) basis whose span approximates that of A - M (power iterations)."""

    niter = 2 if niter is None else niter
    R = randn(A.shape[-1], q, dtype=_floating(A), device=A.device)
    X = A @ R if M is None else A @ R - M @ R
    Q = qr(X).Q
    for _ in range(niter):
        X = _mh(A) @ Q if M is None else _mh(A) @ Q - _mh(M) @ Q
        Q = qr(X).Q
        X = A @ Q if M is None else A @ Q - M @ Q
        Q = qr(X).Q
    return Q


def svd_lowrank(
    A: Tensor, q: int | None = 6, niter: int | None = 2, M: Tensor | None = None
) -> tuple[Tensor, Tensor, Tensor]:
    """(U, S, V) with A - M ~= U diag(S) V^H, of rank q, by randomised range finding."""

    require_tensor("svd_lowrank", A)
    q = 6 if q is None else q
    m, n = A.shape[-2:]
    if M is not None:
        M = M.broadcast_to(tuple(A.shape))
    if m < n:  # work with the tall form
        A = _mh(A)
        M = _mh(M) if M is not None else None
    Q = get_approximate_basis(A, q, niter=niter, M=M)
    B = _mh(Q) @ A if M is None else _mh(Q) @ A - _mh(Q) @ M
    U, S, Vh = svd(B, full_matrices=False)
    V = _mh(Vh)
    U = Q @ U
    if m < n:
        U, V = V, U
    return U, S, V


def pca_lowrank(
    A: Tensor, q: int | None = None, center: bool = True, niter: int = 2
) -> tuple[Tensor, Tensor, Tensor]:
    """(U, S, V) of the (column-centred unless center=False) data matrix A, of rank q
    (min(6, m, n) by default): V's columns are the principal directions."""
    require_tensor("pca_lowrank", A)
    m, n = A.shape[-2:]
    if q is None:
        q = min(6, m, n)
    elif not 0 <= q <= min(m, n):
        raise ValueError(
            f"q(={q}) must be non-negative integer and not greater than min(m, n)={min(m, n)}"
        )
    if not niter >= 0:
        raise ValueError(f"niter(={niter}) must be non-negative integer")
    if not center:
        return svd_lowrank(A, q, niter=niter, M=None)
    return svd_lowrank(A - A.mean(dim=-2, keepdim=True), q, niter=niter, M=None)


def lobpcg(
    A: Tensor,
    k: int | None = None,
    B: Tensor | None = None,
    X: Tensor | None = None,
    n: int | None = None,
    iK: Tensor | None = None,
    niter: int | None = None,  # noqa: N803
    tol: float | None = None,
    largest: bool | None = None,
    method: str | None = None,
    tracker: Any = None,
    ortho_iparams: Any = None,
    ortho_fparams: Any = None,
    ortho_bparams: Any = None,
) -> tuple[Tensor, Tensor]:
    """(E, X): the k largest (or smallest) eigenvalues of the symmetric A x = E B x and their
    B-orthonormal eigenvectors, by LOBPCG's basic method (Rayleigh-Ritz over the iterate, the
    preconditioned residuals and the previous step). Its result carries no gradient."""

    require_tensor("lobpcg", A)
    if method not in (None, "basic", "ortho"):
        raise ValueError(f"lobpcg: unknown method {method!r}; 'basic' or 'ortho'")
    size = A.shape[-1]
    if A.ndim != 2 or A.shape[-2] != size:
        raise ValueError(f"A must be a square matrix, got shape {tuple(A.shape)}")
    k = (1 if X is None else X.shape[-1]) if k is None else k
    n = (k if X is None else X.shape[-1]) if n is None else n
    if size < 3 * n:
        raise ValueError(
            f"LPBPCG algorithm is not applicable when the number of A rows (={size}) is smaller "
            f"than 3 x the number of requested eigenpairs (={n})"
        )
    largest = True if largest is None else largest
    niter = 1000 if niter is None else niter
    tol = (1e-7 if A.dtype.itemsize >= 8 else 1e-4) if tol is None else tol
    sign = 1.0 if largest else -1.0
    with no_grad():
        A = A.detach()
        Bm = B.detach() if B is not None else None
        X = randn(size, n, dtype=A.dtype, device=A.device) if X is None else X.detach()

        def b_orthonormal(S: Tensor) -> Tensor:
            S = qr(S).Q
            if Bm is None:
                return S
            L = cholesky_ex(_mh(S) @ Bm @ S).L

            return _mh(solve_triangular(L, _mh(S), upper=False))

        def ritz(S: Tensor) -> tuple[Tensor, Tensor]:
            S = b_orthonormal(S)
            values, vectors = eigh(sign * (_mh(S) @ A @ S))
            order = values.argsort(descending=True)[:n]
            return sign * values[order], S @ vectors[:, order]

        E, X = ritz(X)
        P = None
        for _ in range(niter):
            BX = X if Bm is None else Bm @ X
            R = A @ X - BX * E
            norms = R.norm(dim=0) / (A.norm() + 1e-300)
            if bool((norms[:k] < tol).all()):
                break
            W = iK @ R if iK is not None else R

            basis = cat([X, W] if P is None else [X, W, P], 1)
            previous = X
            E, X = ritz(basis)
            P = X - previous @ (_mh(previous) @ (X if Bm is None else Bm @ X))
            if float(P.norm()) < 1e-12:
                P = None
        return E[:k], X[:, :k]


FUNCTIONS = {"svd_lowrank": svd_lowrank, "pca_lowrank": pca_lowrank, "lobpcg": lobpcg}
NOT_METHODS = tuple(FUNCTIONS)
