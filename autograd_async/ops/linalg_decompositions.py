"""Matrix decompositions and inverses as nodes: inv, det, slogdet, cholesky, qr, eigh, eig, svd,
matrix_exp, lu.

Each node computes on the input's own array module (NumPy or CuPy, with SciPy or CuPy's SciPy
through the backend for expm and lu) over any batch dims, and its backward is PyTorch's formula
on arrays. A differentiable backward (create_graph=True) through a decomposition is not
implemented: it raises rather than give a wrong second derivative.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..core.op import Op, torch_type_name
from ..core.tensor import Tensor
from ..creation import eye
from ..devices import backend_of
from . import linalg_solvers  # the solvers build on this module: used at call time
from .assembling import cat
from .complex_parts import conj_of
from .dual import as_array, quiet, xp_of


class LinAlgError(RuntimeError):
    """A matrix that a linear algebra routine cannot handle (singular, not positive-definite)."""


# ------------------------------------------------------------------ helpers
def mh(a: Any) -> Any:
    """The conjugate transpose of the last two dims of an array."""
    t = a.swapaxes(-1, -2)
    return t.conj() if a.dtype.kind == "c" else t


def check_matrices(name: str, A: Any, square: bool = True, argument: str = "A") -> None:
    """PyTorch's errors for an argument that is not a (batch of square) float matrices."""
    if not isinstance(A, Tensor):
        raise TypeError(
            f"{name}(): argument '{argument}' (position 1) must be Tensor, not {type(A).__name__}"
        )
    if A.ndim < 2:
        raise RuntimeError(f"{name}: The input tensor {argument} must have at least 2 dimensions.")
    if square and A.shape[-1] != A.shape[-2]:
        raise RuntimeError(
            f"{name}: {argument} must be batches of square matrices, but they are "
            f"{A.shape[-2]} by {A.shape[-1]} matrices"
        )
    if A.dtype.kind not in "fc":
        raise RuntimeError(
            f"{name}: Expected a floating point or complex tensor as input. Got "
            f"{torch_type_name(A.dtype)}"
        )


def _batch_prefix(shape: tuple, flat_index: int) -> str:
    return f"(Batch element {flat_index}): " if len(shape) > 2 else ""


def zero_pivot(a: Any) -> tuple[int, int] | None:
    """(batch element, 1-based position) of the first zero pivot of LU with partial pivoting of
    a batch of square matrices, or None when every matrix is invertible."""
    lu = backend_of(a).scipy_linalg("lu")
    matrices = a.reshape((-1,) + a.shape[-2:])
    for b in range(matrices.shape[0]):
        _, _, u = lu(matrices[b])
        zeros = xp_of(a).nonzero(xp_of(a).diagonal(u) == 0)[0]
        if zeros.size:
            return b, int(zeros[0]) + 1
    return None


def singular_error(name: str, a: Any) -> LinAlgError:
    """PyTorch's error for a singular matrix in an inverse."""
    found = zero_pivot(a) or (0, a.shape[-1])
    return LinAlgError(
        f"{name}: {_batch_prefix(a.shape, found[0])}The diagonal element {found[1]} is zero, the "
        "inversion could not be completed because the input matrix is singular."
    )


def _no_double_backward(name: str, g: Any) -> None:
    if isinstance(g, Tensor):
        raise NotImplementedError(
            f"{name}: a differentiable backward (create_graph=True) is not supported"
        )


# ---------------------------------------------------------------- inverses
class LinalgInvExBackward0(Op):
    """The inverse of each matrix; backward -A^-H g A^-H."""

    __slots__ = ()
    complex_conjugate_rule = True  # written with conjugate transposes
    op_name = "linalg_inv"
    saves_output = True

    def forward(self, a: Any) -> Any:
        xp = xp_of(a)
        try:
            return as_array(xp.linalg.inv(a))
        except np.linalg.LinAlgError:
            raise singular_error("linalg.inv", a) from None

    def backward(self, g: Any) -> Any:
        (inverse,) = self.saved(g)  # a Tensor on the graph when g is one (create_graph)
        h = tensor_mh(inverse) if isinstance(g, Tensor) else mh(inverse)
        return -(h @ g @ h)


class LinalgDetBackward0(Op):
    """det of each matrix; backward g * adj(A)^H, the adjugate from the SVD (singular A too)."""

    __slots__ = ()
    complex_conjugate_rule = True  # written with conjugate transposes
    op_name = "linalg_det"
    saved_inputs = (0,)

    def forward(self, a: Any) -> Any:
        return as_array(xp_of(a).asarray(xp_of(a).linalg.det(a)))

    def backward(self, g: Any) -> Any:
        (a,) = self.saved(g)
        if isinstance(g, Tensor):  # differentiable: det(A) A^-H, through recorded ops
            cofactors = linalg_solvers.det(a)[..., None, None] * linalg_solvers.inv(a)
            return g[..., None, None] * tensor_mh(cofactors)
        xp = xp_of(a)
        u, s, vh = xp.linalg.svd(a)
        n = s.shape[-1]
        # prod_{j != i} s_j, without dividing by a zero s_i
        others = xp.stack([xp.prod(xp.delete(s, i, axis=-1), axis=-1) for i in range(n)], -1)
        phase = xp.linalg.det(u) * xp.linalg.det(vh)
        adjugate = (mh(vh) * others[..., None, :]) @ mh(u) * phase[..., None, None]
        return (g[..., None, None] * mh(adjugate)).astype(a.dtype, copy=False)


class LinalgSlogdetBackward0(Op):
    """(sign, log|det|) of each matrix; log|det| has the gradient g * A^-H (real inputs)."""

    __slots__ = ()
    complex_conjugate_rule = True  # written with conjugate transposes
    op_name = "linalg_slogdet"
    saved_inputs = (0,)
    non_differentiable_outputs = (0,)

    def forward(self, a: Any) -> Any:
        sign, logabs = xp_of(a).linalg.slogdet(a)
        xp = xp_of(a)
        return as_array(xp.asarray(sign)), as_array(xp.asarray(logabs))

    def backward(self, g_sign: Any, g: Any) -> Any:
        (a,) = self.saved(g)
        if isinstance(g, Tensor):  # differentiable: A^-H through the recorded inverse
            return g[..., None, None] * conj_of(linalg_solvers.inv(a).transpose(-2, -1))
        xp = xp_of(a)
        with quiet():
            return (g[..., None, None] * mh(xp.linalg.pinv(a))).astype(a.dtype, copy=False)


# ----------------------------------------------------------------- cholesky
class LinalgCholeskyExBackward0(Op):
    """The lower (or upper) Cholesky factor of each Hermitian positive-definite matrix."""

    __slots__ = ("_upper",)
    complex_conjugate_rule = True  # written with conjugate transposes
    op_name = "linalg_cholesky"
    saves_output = True

    def forward(self, a: Any, upper: bool, check: bool) -> Any:
        self._upper = upper
        xp = xp_of(a)
        try:
            lower = xp.linalg.cholesky(a)
        except np.linalg.LinAlgError:
            if check:
                raise not_positive_definite(a) from None
            lower = xp.full(a.shape, xp.nan, a.dtype)
        return as_array(mh(lower) if upper else lower)

    def backward(self, g: Any) -> Any:
        _no_double_backward("linalg_cholesky", g)
        (factor,) = self.saved(g)
        xp = xp_of(factor)
        lower, g_lower = (mh(factor), mh(g)) if self._upper else (factor, g)
        phi = xp.tril(mh(lower) @ g_lower)
        diagonal = xp.einsum("...ii->...i", phi)
        diagonal *= 0.5
        p = xp.linalg.solve(mh(lower), phi)
        x = mh(xp.linalg.solve(mh(lower), mh(p)))
        return (x + mh(x)) * 0.5


def not_positive_definite(a: Any) -> LinAlgError:
    """PyTorch's error for a matrix without a Cholesky factor, naming its first bad minor."""
    xp = xp_of(a)
    matrices = a.reshape((-1,) + a.shape[-2:])
    for b in range(matrices.shape[0]):
        for order in range(1, a.shape[-1] + 1):
            try:
                xp.linalg.cholesky(matrices[b, :order, :order])
            except np.linalg.LinAlgError:
                return LinAlgError(
                    f"linalg.cholesky: {_batch_prefix(a.shape, b)}The factorization could not be "
                    "completed because the input is not positive-definite (the leading minor of "
                    f"order {order} is not positive-definite)."
                )
    return LinAlgError("linalg.cholesky: The input is not positive-definite.")


# ----------------------------------------------------------------------- qr
def qr_backward(q: Any, r: Any, gq: Any, gr: Any) -> Any:
    """The gradient of A = QR from those of reduced Q (m, k) and R (k, n), PyTorch's rule."""
    xp = xp_of(q)
    m, n = q.shape[-2], r.shape[-1]
    if m >= n:
        product = r @ mh(gr) - mh(gq) @ q
        copied = xp.tril(product) + mh(xp.tril(product, -1))
        if xp.iscomplexobj(copied):
            # R's diagonal is real, so only the real part of this diagonal moves it: the
            # imaginary part is the phase freedom of Q's columns, which the loss cannot see.
            imaginary = xp.imag(xp.diagonal(copied, axis1=-2, axis2=-1))
            copied = copied - 1j * imaginary[..., None, :] * xp.eye(n, dtype=copied.dtype)
        b = gq + q @ copied
        return mh(xp.linalg.solve(r, mh(b)))  # B R^-H
    # A = [X | Y] with X = Q U square and Y = Q V: V's gradient reaches Q through Y
    u, v = r[..., :, :m], r[..., :, m:]
    gu, gv = gr[..., :, :m], gr[..., :, m:]
    y = q @ v
    left = qr_backward(q, u, gq + y @ mh(gv), gu)
    return xp.concatenate([left, q @ gv], axis=-1)


def qr_backward_recorded(q: Tensor, r: Tensor, gq: Tensor, gr: Tensor) -> Tensor:
    """`qr_backward` for real matrices in recorded ops (create_graph=True), from Q and R
    computed again on the graph."""

    m, n = q.shape[-2], r.shape[-1]
    if m >= n:
        product = r @ tensor_mh(gr) - tensor_mh(gq) @ q
        copied = product.tril() + tensor_mh(product.tril(-1))
        b = gq + q @ copied
        return tensor_mh(linalg_solvers.solve_triangular(r, tensor_mh(b), upper=True))
    u, v = r[..., :, :m], r[..., :, m:]
    gu, gv = gr[..., :, :m], gr[..., :, m:]
    left = qr_backward_recorded(q, u, gq + (q @ v) @ tensor_mh(gv), gu)
    return cat([left, q @ gv], -1)


class LinalgQrBackward0(Op):
    """Q, R of each matrix, mode 'reduced' or 'complete' (complete only where Q is square)."""

    __slots__ = ("_q", "_r", "_mode")
    complex_conjugate_rule = True  # written with conjugate transposes
    op_name = "linalg_qr"
    saved_slots = ("_q", "_r")
    saved_inputs = (0,)  # for a differentiable backward, which factors A again on the graph

    def forward(self, a: Any, mode: str) -> Any:
        self._mode = mode
        xp = xp_of(a)
        q, r = xp.linalg.qr(a, mode="reduced" if mode == "r" else mode)
        self._q, self._r = q, r
        if mode == "r":  # Q is not returned (an empty tensor), as in PyTorch
            q = xp.empty((0,), a.dtype)
        return as_array(q), as_array(r)

    def backward(self, gq: Any, gr: Any) -> Any:
        if self._mode == "r":
            raise RuntimeError(
                "The derivative of linalg.qr depends on Q, which is not computed when mode='r'. "
                "Please use linalg.qr(A, mode='reduced') if you are going to differentiate "
                "through linalg.qr."
            )
        self.check_released()
        q, r = self._q, self._r
        m, n = q.shape[-2], r.shape[-1]
        if q.shape[-1] > min(m, n):
            raise RuntimeError(
                "The QR decomposition is not differentiable when mode='complete' and nrows > ncols."
            )
        recorded = next((g for g in (gq, gr) if isinstance(g, Tensor)), None)
        if recorded is not None:
            (a,) = self.saved(recorded)
            if a.is_complex():
                _no_double_backward("linalg_qr", recorded)

            q_t, r_t = linalg_solvers.qr(a, mode=self._mode)
            gq = q_t.new_zeros(tuple(q_t.shape)) if gq is None else gq
            gr = r_t.new_zeros(tuple(r_t.shape)) if gr is None else gr
            return qr_backward_recorded(q_t, r_t, gq, gr)
        return qr_backward(q, r, gq, gr)


# ------------------------------------------------------------ eigenvectors
def eig_backward(values: Any, vectors: Any, g_values: Any, g_vectors: Any, hermitian: bool) -> Any:
    """The gradient of an eigendecomposition A = V diag(L) V^-1, PyTorch's rule."""
    xp = xp_of(vectors)
    vhgv = mh(vectors) @ g_vectors
    if hermitian:
        vhgv = 0.5 * (vhgv - mh(vhgv))
    else:
        diag = xp.einsum("...ii->...i", vhgv).real
        vhgv = vhgv - mh(vectors) @ (vectors * diag[..., None, :])
    gaps = values[..., None, :] - values[..., :, None]
    n = values.shape[-1]
    gaps[..., range(n), range(n)] = 1
    with quiet():
        inner = vhgv / gaps.conj()
    inner[..., range(n), range(n)] = g_values
    if hermitian:
        return vectors @ inner @ mh(vectors)
    return xp.linalg.solve(mh(vectors), inner @ mh(vectors))


def tensor_mh(t: Tensor) -> Tensor:
    """The conjugate transpose of the last two dims of a Tensor, recorded."""
    t = t.transpose(-2, -1)
    return t.conj() if t.is_complex() else t


def eigh_backward_recorded(a: Tensor, uplo: str, g_values: Any, g_vectors: Any) -> Tensor:
    """`eig_backward` for Hermitian A in recorded ops (create_graph=True): A is decomposed
    again on the graph, so the gradient's own derivative follows."""

    values, vectors = linalg_solvers.eigh(a, UPLO=uplo)
    n = values.shape[-1]
    identity = eye(n, dtype=values.dtype, device=a.device)
    if g_vectors is None:
        inner = values.new_zeros(tuple(values.shape) + (n,)).to(dtype=vectors.dtype)
    else:
        vhgv = tensor_mh(vectors) @ g_vectors
        vhgv = 0.5 * (vhgv - tensor_mh(vhgv))
        gaps = values[..., None, :] - values[..., :, None] + identity
        inner = vhgv / gaps * (1 - identity)
    if g_values is not None:
        inner = inner + g_values[..., None, :].to(dtype=inner.dtype) * identity
    return vectors @ inner @ tensor_mh(vectors)


class LinalgEighBackward0(Op):
    """Eigenvalues (ascending) and orthonormal eigenvectors of Hermitian matrices."""

    __slots__ = ("_values", "_vectors", "_uplo")
    complex_conjugate_rule = True  # written with conjugate transposes
    op_name = "linalg_eigh"
    saved_slots = ("_values", "_vectors")
    saved_inputs = (0,)  # for a differentiable backward, which decomposes A again on the graph

    def forward(self, a: Any, uplo: str) -> Any:
        values, vectors = xp_of(a).linalg.eigh(a, UPLO=uplo)
        self._values, self._vectors, self._uplo = values, vectors, uplo
        return as_array(values), as_array(vectors)

    def backward(self, g_values: Any, g_vectors: Any) -> Any:
        if isinstance(g_values, Tensor) or isinstance(g_vectors, Tensor):
            (a,) = self.saved(g_values if isinstance(g_values, Tensor) else g_vectors)
            return eigh_backward_recorded(a, self._uplo, g_values, g_vectors)
        self.check_released()
        return eig_backward(self._values, self._vectors, g_values, g_vectors, True)


class LinalgEigBackward0(Op):
    """Complex eigenvalues and eigenvectors (columns of norm 1) of general square matrices."""

    __slots__ = ("_values", "_vectors", "_real")
    complex_conjugate_rule = True  # written with conjugate transposes
    op_name = "linalg_eig"
    saved_slots = ("_values", "_vectors")

    def forward(self, a: Any) -> Any:
        xp = xp_of(a)
        values, vectors = xp.linalg.eig(a)
        complex_type = np.result_type(a.dtype, np.complex64)
        self._real = a.dtype.kind != "c"
        values, vectors = values.astype(complex_type), vectors.astype(complex_type)
        self._values, self._vectors = values, vectors
        return as_array(values), as_array(vectors)

    def backward(self, g_values: Any, g_vectors: Any) -> Any:
        _no_double_backward("linalg_eig", g_values)
        self.check_released()
        grad = eig_backward(self._values, self._vectors, g_values, g_vectors, False)
        return grad.real if self._real else grad


# --------------------------------------------------------------------- svd
class LinalgSvdBackward0(Op):
    """U, S, Vh of each matrix; backward as PyTorch's (distinct singular values)."""

    __slots__ = ("_u", "_s", "_vh", "_k", "_full")
    complex_conjugate_rule = True  # written with conjugate transposes
    op_name = "linalg_svd"
    saved_slots = ("_u", "_s", "_vh")
    saved_inputs = (0,)  # for a differentiable backward, which decomposes A again on the graph

    def forward(self, a: Any, full_matrices: bool) -> Any:
        u, s, vh = xp_of(a).linalg.svd(a, full_matrices=full_matrices)
        s = s.astype(np.empty(0, a.dtype).real.dtype, copy=False)
        self._k = s.shape[-1]
        self._full = full_matrices
        self._u, self._s, self._vh = u, s, vh
        return as_array(u), as_array(s), as_array(vh)

    def backward(self, gu: Any, gs: Any, gvh: Any) -> Any:
        recorded = next((g for g in (gu, gs, gvh) if isinstance(g, Tensor)), None)
        if recorded is not None:
            (a,) = self.saved(recorded)
            return svd_backward_recorded(a, self._k, gu, gs, gvh)
        self.check_released()
        k = self._k
        u, s, vh = self._u[..., :, :k], self._s, self._vh[..., :k, :]
        gu, gvh = gu[..., :, :k], gvh[..., :k, :]
        xp = xp_of(u)
        v, gv = mh(vh), mh(gvh)
        uhgu = mh(u) @ gu
        vhgv = vh @ gv
        uhgu, vhgv = uhgu - mh(uhgu), vhgv - mh(vhgv)
        squares = s * s
        gaps = squares[..., None, :] - squares[..., :, None]
        gaps[..., range(k), range(k)] = 1
        with quiet():
            inner = (uhgu * s[..., None, :] + s[..., :, None] * vhgv) / gaps
        inner[..., range(k), range(k)] = gs
        if u.dtype.kind == "c":  # the phase of each singular pair
            inner[..., range(k), range(k)] += xp.einsum("...ii->...i", mh(u) @ gu).imag * 1j / s
        grad = u @ inner @ vh
        m, n = u.shape[-2], vh.shape[-1]
        with quiet():
            if m > k:
                grad = grad + ((gu - u @ (mh(u) @ gu)) / s[..., None, :]) @ vh
            if n > k:
                grad = grad + u @ mh((gv - v @ (vh @ gv)) / s[..., None, :])
        return grad


def svd_backward_recorded(a: Tensor, k: int, gu: Any, gs: Any, gvh: Any) -> Tensor:
    """The SVD's gradient (real matrices) in recorded ops, for create_graph=True: A is
    decomposed again on the graph so that the gradient's own derivative follows."""

    if a.is_complex():
        raise NotImplementedError(
            "linalg_svd: a differentiable backward (create_graph=True) of complex matrices is "
            "not supported"
        )
    u, s, vh = linalg_solvers.svd(a, full_matrices=False)
    m, n = a.shape[-2], a.shape[-1]
    gu = u.new_zeros(tuple(u.shape)) if gu is None else gu[..., :, :k]
    gvh = vh.new_zeros(tuple(vh.shape)) if gvh is None else gvh[..., :k, :]
    v, gv = tensor_mh(vh), tensor_mh(gvh)
    uhgu = tensor_mh(u) @ gu
    vhgv = vh @ gv
    uhgu, vhgv = uhgu - tensor_mh(uhgu), vhgv - tensor_mh(vhgv)
    identity = eye(k, dtype=s.dtype, device=a.device)
    squares = s * s
    gaps = squares[..., None, :] - squares[..., :, None] + identity
    inner = (uhgu * s[..., None, :] + s[..., :, None] * vhgv) / gaps * (1 - identity)
    if gs is not None:
        inner = inner + gs[..., None, :] * identity
    grad = u @ inner @ vh
    if m > k:
        grad = grad + ((gu - u @ (tensor_mh(u) @ gu)) / s[..., None, :]) @ vh
    if n > k:
        grad = grad + u @ tensor_mh((gv - v @ (vh @ gv)) / s[..., None, :])
    return grad


# -------------------------------------------------------------- matrix_exp
class LinalgMatrixExpBackward0(Op):
    """exp(A) of each matrix; backward the upper right block of exp([[A^H, g], [0, A^H]])."""

    __slots__ = ()
    complex_conjugate_rule = True  # written with conjugate transposes
    op_name = "linalg_matrix_exp"
    saved_inputs = (0,)

    def forward(self, a: Any) -> Any:
        expm = backend_of(a).scipy_linalg("expm")
        return as_array(expm(a).astype(a.dtype, copy=False))

    def backward(self, g: Any) -> Any:
        (a,) = self.saved(g)
        if isinstance(g, Tensor):  # differentiable: the same block, exponentiated on the graph
            ah = tensor_mh(a)
            block = cat(
                [cat([ah, g.to(dtype=a.dtype)], -1), cat([ah.new_zeros(tuple(ah.shape)), ah], -1)],
                -2,
            )
            n = a.shape[-1]
            return linalg_solvers.matrix_exp(block)[..., :n, n:]
        xp = xp_of(a)
        n = a.shape[-1]
        block = xp.zeros(a.shape[:-2] + (2 * n, 2 * n), dtype=np.result_type(a, g))
        block[..., :n, :n] = mh(a)
        block[..., n:, n:] = mh(a)
        block[..., :n, n:] = g
        expm = backend_of(a).scipy_linalg("expm")
        return expm(block)[..., :n, n:].astype(a.dtype, copy=False)


# ---------------------------------------------------------------------- lu
class LinalgLuBackward0(Op):
    """P, L, U of each matrix (partial pivoting); backward PyTorch's rule for square A."""

    __slots__ = ("_p", "_l", "_u")
    complex_conjugate_rule = True  # written with conjugate transposes
    op_name = "linalg_lu"
    saved_slots = ("_l", "_u", "_p")
    non_differentiable_outputs = (0,)

    def forward(self, a: Any) -> Any:
        p, lower, upper = backend_of(a).scipy_linalg("lu")(a)
        p = p.astype(a.dtype, copy=False)
        self._p, self._l, self._u = p, lower, upper
        return as_array(p), as_array(lower), as_array(upper)

    def backward(self, gp: Any, gl: Any, gu: Any) -> Any:
        _no_double_backward("linalg_lu", gl)
        self.check_released()
        p, lower, upper = self._p, self._l, self._u
        if lower.shape[-1] != upper.shape[-1] or lower.shape[-2] != upper.shape[-1]:
            raise NotImplementedError("linalg_lu: backward is implemented for square inputs only")
        xp = xp_of(lower)
        inner = xp.tril(mh(lower) @ gl, -1) + xp.triu(gu @ mh(upper))
        # P L^-H inner U^-H
        left = xp.linalg.solve(mh(lower), inner)
        return p @ mh(xp.linalg.solve(upper, mh(left)))
