"""`Tensor.softmax` and `Tensor.log_softmax` are methods, as in PyTorch, equal to the functions."""

from __future__ import annotations

import numpy as np
import pytest

import autograd_async as aa
import autograd_async.nn.functional as F


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_method_equals_function_and_its_gradient(name, dim):
    data = np.random.default_rng(0).standard_normal((3, 4))
    weights = aa.tensor(np.random.default_rng(1).standard_normal((3, 4)))
    x1 = aa.tensor(data, requires_grad=True)
    x2 = aa.tensor(data, requires_grad=True)
    y1 = getattr(x1, name)(dim)
    y2 = getattr(F, name)(x2, dim)
    assert y1.grad_fn.name() == ("SoftmaxBackward0" if name == "softmax" else "LogSoftmaxBackward0")
    np.testing.assert_allclose(y1.detach().numpy(), y2.detach().numpy(), rtol=1e-12)
    (y1 * weights).sum().backward()
    (y2 * weights).sum().backward()
    np.testing.assert_allclose(x1.grad.numpy(), x2.grad.numpy(), rtol=1e-12)
    shifted = data - data.max(axis=dim, keepdims=True)
    log_probs = shifted - np.log(np.exp(shifted).sum(axis=dim, keepdims=True))
    want = np.exp(log_probs) if name == "softmax" else log_probs
    np.testing.assert_allclose(y1.detach().numpy(), want, rtol=1e-12)
