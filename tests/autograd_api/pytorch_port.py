"""Shared pieces of the port of PyTorch's own autograd tests (test/test_autograd.py, class
TestAutograd and the device-type tests that run on the CPU).

Each ported test takes the `ag` fixture: the library under test, `autograd_async`. Setting
AUTOGRAD_PORT_REFERENCE=torch runs the same tests against PyTorch instead, which checks that the
port asserts what PyTorch does and not what this library happens to do. As in PyTorch's file,
the default dtype is float64 while a test runs.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

import autograd_async as aa


def _library():
    if os.environ.get("AUTOGRAD_PORT_REFERENCE") == "torch":
        return pytest.importorskip("torch")
    return aa


@pytest.fixture
def ag():
    """The library whose autograd the ported tests exercise, with float64 as default dtype."""
    lib = _library()
    previous = lib.get_default_dtype()
    lib.set_default_dtype(lib.float64)
    try:
        yield lib
    finally:
        lib.set_default_dtype(previous)


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


def function_class(ag):
    return ag.autograd.Function


def once_differentiable(ag):
    return ag.autograd.function.once_differentiable


def graph_desc(fn):
    """The nested description of a backward graph that PyTorch's tests compare: Name(next, ...)."""
    if fn is None:
        return "None"
    parts = [graph_desc(next_fn) for next_fn, _ in fn.next_functions]
    return type(fn).__name__ + "(" + ", ".join(parts) + ")"
