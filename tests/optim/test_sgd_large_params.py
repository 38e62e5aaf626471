"""SGD on large parameters (BLAS axpy, or the scratch-array fallback) equals the formula."""

from __future__ import annotations

import numpy as np
import pytest

import autograd_async as aa
from autograd_async.optim import _blas


def _step(rng: np.random.Generator, dtype: str, momentum: float) -> tuple[np.ndarray, np.ndarray]:
    start = rng.standard_normal((100, 100)).astype(dtype)
    grads = [rng.standard_normal((100, 100)).astype(dtype) for _ in range(3)]
    p = aa.nn.Parameter(aa.tensor(start.copy()))
    opt = aa.optim.SGD([p], lr=0.1, momentum=momentum)
    expected = start.astype(np.float64)
    buf = None
    for g in grads:
        p.grad = aa.tensor(g)
        version = p._version
        opt.step()
        assert p._version == version + 1
        d = g.astype(np.float64)
        if momentum:
            buf = d.copy() if buf is None else momentum * buf + d
            d = buf
        expected = expected - 0.1 * d
    return p.detach().numpy(), expected


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("momentum", [0.0, 0.9])
@pytest.mark.parametrize("blas", [True, False], ids=["axpy", "scratch"])
def test_large_parameter_update(dtype, momentum, blas, monkeypatch):
    if blas:
        pytest.importorskip("scipy")
    else:
        monkeypatch.setattr(_blas, "_axpy_for", lambda dtype: None)
    got, expected = _step(np.random.default_rng(0), dtype, momentum)
    tol = 1e-5 if dtype == "float32" else 1e-12
    np.testing.assert_allclose(got, expected, rtol=tol, atol=tol)


def test_axpy_refuses_what_it_cannot_do_in_place():
    y = np.ones((64, 64), np.float32)
    assert not _blas.axpy_(y, np.ones((64, 64), np.float64), 1.0)  # dtype mismatch
    assert not _blas.axpy_(y.T[::2], np.ones((32, 64), np.float32), 1.0)  # not contiguous
    assert (y == 1).all()
