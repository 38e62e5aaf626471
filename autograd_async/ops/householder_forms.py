"""geqrf, orgqr and ormqr: QR in LAPACK's Householder form and products with its Q.

geqrf returns what LAPACK's geqrf does: R on and above the diagonal, the Householder vectors
below it, and their scalars tau (PyTorch defines no derivative for it). orgqr is
`linalg.householder_product`; ormqr multiplies by the full Q that the reflectors make, both
built from differentiable ops.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..core.op import Op, require_tensor
from ..core.tensor import Tensor
from ..creation import eye
from .arithmetic import matmul
from .assembling import cat
from .dual import xp_of
from .symmetric_factorizations import _host


class GeqrfBackward0(Op):
    """LAPACK's geqrf on each matrix; backward refuses, as PyTorch's."""

    __slots__ = ()
    op_name = "geqrf"
    non_differentiable_outputs = (1,)
    complex_conjugate_rule = True

    def forward(self, a: Any) -> tuple:
        import scipy.linalg.lapack as lapack  # noqa: PLC0415 - only geqrf needs it

        xp = xp_of(a)
        m, n = a.shape[-2:]
        matrices = _host(a).reshape((-1, m, n))
        factors = np.empty_like(matrices)
        taus = np.empty((matrices.shape[0], min(m, n)), matrices.dtype)
        (geqrf,) = lapack.get_lapack_funcs(("geqrf",), (matrices,))
        for b in range(matrices.shape[0]):
            qr, tau, _, _ = geqrf(matrices[b])
            factors[b], taus[b] = qr, tau
        return (
            xp.asarray(factors.reshape(a.shape)),
            xp.asarray(taus.reshape(a.shape[:-2] + (min(m, n),))),
        )

    def backward(self, *grads: Any) -> tuple:
        raise RuntimeError("the derivative for 'geqrf' is not implemented.")


def geqrf(input: Tensor) -> tuple[Tensor, Tensor]:
    """(a, tau): R above the diagonal and Householder vectors below it, LAPACK's form."""
    require_tensor("geqrf", input)
    if input.ndim < 2:
        raise RuntimeError("torch.geqrf: input must have at least 2 dimensions.")
    if input.dtype.kind not in "fc":
        raise RuntimeError(
            f"torch.geqrf: Expected a floating point or complex tensor as input. Got {input.dtype}"
        )
    a, tau = GeqrfBackward0.apply(input)
    return a, tau


def orgqr(input: Tensor, tau: Tensor) -> Tensor:
    """The first n columns of Q from geqrf's reflectors (`linalg.householder_product`)."""

    require_tensor("orgqr", input)
    if input.shape[-1] < tau.shape[-1]:
        raise RuntimeError(
            "torch.linalg.householder_product: input.shape[-1] must be greater "
            "than or equal to tau.shape[-1]"
        )
    return householder_product(input, tau)


def ormqr(
    input: Tensor, tau: Tensor, other: Tensor, left: bool = True, transpose: bool = False
) -> Tensor:
    """`other` multiplied by the Q of geqrf's reflectors: Q @ other (left), other @ Q, with
    Q^H instead when transpose."""

    require_tensor("ormqr", input)
    m = input.shape[-2]
    if left and other.shape[-2] != m:
        raise RuntimeError("torch.ormqr: other.shape[-2] must be equal to input.shape[-2]")
    if not left and other.shape[-1] != m:
        raise RuntimeError("torch.ormqr: other.shape[-1] must be equal to input.shape[-2]")
    k = tau.shape[-1]
    vectors = input[..., :, :k]
    if k < m:  # reflectors with tau 0 are the identity: Q becomes square
        zeros = vectors.new_zeros(vectors.shape[:-1] + (m - k,))
        vectors = cat([vectors, zeros], -1)
        tau = cat([tau, tau.new_zeros(tau.shape[:-1] + (m - k,))], -1)
    q = householder_product(vectors, tau)
    if transpose:
        q = q.transpose(-2, -1)
        q = q.conj() if q.is_complex() else q
    return q @ other if left else other @ q


FUNCTIONS = {"geqrf": geqrf, "orgqr": orgqr, "ormqr": ormqr}


def householder_product(A: Tensor, tau: Tensor) -> Tensor:
    """The first n columns of the product of Householder reflectors I - tau_i v_i v_i^H."""
    m, n = A.shape[-2:]

    identity = eye(m, dtype=A.dtype, device=A.device)
    Q = identity.expand(*A.shape[:-2], m, m)
    rows = eye(m, dtype=A.dtype, device=A.device)
    for i in range(tau.shape[-1]):
        below = A[..., :, i] * (rows.diagonal().cumsum(0) > i + 1)  # entries below the diagonal
        v = below + rows[i]
        outer = v.unsqueeze(-1) * (v.conj() if v.is_complex() else v).unsqueeze(-2)
        Q = matmul(Q, identity - tau[..., i, None, None] * outer)
    return Q[..., :, :n]
