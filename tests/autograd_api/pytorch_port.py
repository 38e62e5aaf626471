"""Helpers of the port of PyTorch's own autograd tests (test/test_autograd.py, class
TestAutograd and the device-type tests that run on the CPU); the `ag` fixture they take is in
this folder's conftest.py."""

from __future__ import annotations

import numpy as np


def numpy_of(value):
    """A tensor's (or a number's, or a list's) values as a NumPy array."""
    if hasattr(value, "detach"):
        value = value.detach()
        if hasattr(value, "resolve_conj"):
            value = value.resolve_conj()
        return np.asarray(value.cpu().numpy() if hasattr(value, "cpu") else value.numpy())
    return np.asarray(value)


def assert_equal(actual, expected, rtol=1e-7, atol=1e-7):
    """Values (and shapes) of tensors, arrays or numbers agree."""
    a, e = numpy_of(actual), numpy_of(expected)
    assert a.shape == e.shape, (a.shape, e.shape)
    np.testing.assert_allclose(a, e, rtol=rtol, atol=atol)
