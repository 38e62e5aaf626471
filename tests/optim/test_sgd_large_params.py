"""SGD on large parameters (updated a block at a time through a scratch array) is exact."""

from __future__ import annotations

import numpy as np
import pytest

import autograd_async as aa


def _step(rng: np.random.Generator, dtype: str, momentum: float) -> tuple[np.ndarray, np.ndarray]:
    start = rng.standard_normal((300, 301)).astype(dtype)  # over one block, not a multiple
    grads = [rng.standard_normal((300, 301)).astype(dtype) for _ in range(3)]
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
def test_large_parameter_update(dtype, momentum):
    got, expected = _step(np.random.default_rng(0), dtype, momentum)
    tol = 1e-5 if dtype == "float32" else 1e-12
    np.testing.assert_allclose(got, expected, rtol=tol, atol=tol)
