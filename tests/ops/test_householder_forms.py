"""geqrf, orgqr and ormqr against PyTorch: LAPACK's compact QR, Q from its reflectors, products
with Q on either side (and Q^H), their gradients, and geqrf's refusal to differentiate."""

from __future__ import annotations

import numpy as np
import pytest

import autograd_async as aa
from autograd_async.autograd import gradcheck

_RNG = np.random.default_rng(0)


@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (2, 4, 4)])
@pytest.mark.parametrize("kind", ["float64", "complex128"])
def test_geqrf_orgqr_ormqr_match_torch(torch, device, shape, kind):
    a = _RNG.normal(size=shape)
    if kind == "complex128":
        a = a + 1j * _RNG.normal(size=shape)
    m = shape[-2]
    ours, theirs = aa.geqrf(aa.tensor(a, device=device)), torch.geqrf(torch.tensor(a))
    for mine, ref in zip(ours, theirs, strict=True):
        assert mine.device == aa.device(device) and str(mine.dtype) == kind
        np.testing.assert_allclose(mine.cpu().numpy(), ref.numpy(), atol=1e-12)
    other = _RNG.normal(size=shape[:-2] + (m, 2)).astype(kind)
    for left, transpose in [(True, False), (True, True), (False, False), (False, True)]:
        b = other if left else other.swapaxes(-1, -2)

        def run(lib, on, left=left, transpose=transpose, b=b):
            x = lib.tensor(a, requires_grad=True, **on)
            h, tau = lib.geqrf(x.detach())
            h.requires_grad_(True)
            out = lib.ormqr(h, tau, lib.tensor(b, **on), left, transpose)
            (out.real.sum() if out.is_complex() else out.sum()).backward()
            return out, h.grad

        (out, grad), (ref, ref_grad) = run(aa, {"device": device}), run(torch, {})
        np.testing.assert_allclose(out.detach().cpu().numpy(), ref.detach().numpy(), atol=1e-12)
        np.testing.assert_allclose(grad.cpu().numpy(), ref_grad.numpy(), atol=1e-10)
    if shape[-2] >= shape[-1]:
        q = aa.orgqr(*ours)
        np.testing.assert_allclose(q.cpu().numpy(), torch.orgqr(*theirs).numpy(), atol=1e-12)
        assert q.grad_fn is None and aa.Tensor.orgqr is not None


def test_orgqr_gradient_by_finite_differences(device):
    h, tau = aa.geqrf(aa.tensor(_RNG.normal(size=(4, 3)), device=device))
    h.requires_grad_(True)
    assert gradcheck(lambda v: aa.orgqr(v, tau), (h,))
    assert gradcheck(lambda v: v.ormqr(tau, aa.ones(4, 2, dtype=aa.float64, device=device)), (h,))


def test_geqrf_has_no_derivative_and_errors_match_torch(torch):
    for lib in (aa, torch):
        a, _ = lib.geqrf(lib.ones(3, 2, dtype=lib.float64, requires_grad=True))
        with pytest.raises(RuntimeError, match="the derivative for 'geqrf' is not implemented"):
            a.sum().backward()
        with pytest.raises(RuntimeError, match="input must have at least 2 dimensions"):
            lib.geqrf(lib.ones(3))
        with pytest.raises(RuntimeError, match="other.shape\\[-2\\] must be equal"):
            lib.ormqr(lib.ones(3, 3), lib.ones(3), lib.ones(2, 2))
