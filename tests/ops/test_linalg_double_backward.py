"""Second derivatives (create_graph=True) through inv, det, solve, eigh, svd, svdvals, pinv and
matrix_exp: gradgradcheck by
finite differences in float64 on each device, and the Hessian-vector products of PyTorch."""

from __future__ import annotations

import numpy as np
import pytest

import autograd_async as aa
from autograd_async.autograd import gradgradcheck

_RNG = np.random.default_rng(0)
A = _RNG.normal(size=(3, 3)) + 3 * np.eye(3)

CASES = {
    "inv": lambda m, x: m.linalg.inv(x),
    "det": lambda m, x: m.linalg.det(x),
    "solve": lambda m, x: m.linalg.solve(x, x.sum(0, keepdim=True).T),
    "eigvalsh": lambda m, x: m.linalg.eigvalsh(x + x.T),
    "eigh_values": lambda m, x: m.linalg.eigh(x + x.T)[0],
    "eigh_vectors": lambda m, x: m.linalg.eigh(x + x.T)[1].abs(),
    "eigh_both": lambda m, x: (lambda w, v: (v * w) @ v.T)(*m.linalg.eigh(x @ x.T)),
    "batched_inv": lambda m, x: m.linalg.inv(m.stack([x, x.T + 1.0])),
    "svdvals": lambda m, x: m.linalg.svdvals(x),
    "svd_rebuilt": lambda m, x: (lambda u, s, vh: (u * s) @ vh)(
        *m.linalg.svd(x, full_matrices=False)
    ),
    "svd_vectors": lambda m, x: m.linalg.svd(x[:2])[2][:2].abs(),
    "pinv_wide": lambda m, x: m.linalg.pinv(x[:2]),
    "matrix_exp": lambda m, x: m.linalg.matrix_exp(x * 0.3),
    "qr_q": lambda m, x: m.linalg.qr(x)[0],
    "qr_r": lambda m, x: m.linalg.qr(x)[1],
    "qr_tall": lambda m, x: (lambda q, r: q.sum() * r)(*m.linalg.qr(m.cat([x, x * 0.5]))),
    "qr_wide": lambda m, x: m.linalg.qr(x[:2])[1],
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_gradgradcheck(device, name):
    x = aa.tensor(A, device=device, requires_grad=True)
    assert gradgradcheck(lambda v: CASES[name](aa, v), (x,))


@pytest.mark.parametrize("name", sorted(CASES))
def test_second_derivative_matches_torch(torch, name):
    w = _RNG.normal(size=CASES[name](torch, torch.tensor(A)).shape)

    def hessian_vector(lib):
        x = lib.tensor(A, requires_grad=True)
        out = CASES[name](lib, x)
        (g,) = lib.autograd.grad((out * lib.tensor(w)).sum(), x, create_graph=True)
        (h,) = lib.autograd.grad((g * g).sum(), x)
        return h.detach().numpy()

    np.testing.assert_allclose(hessian_vector(aa), hessian_vector(torch), rtol=1e-8, atol=1e-10)
