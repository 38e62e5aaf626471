"""Our dtype objects as NumPy sees them: converted through its protocol, never by failing lookups.

NumPy 2.4 asks a dtype-like for `__numpy_dtype__` before `dtype`; an object that answers only
through `__getattr__` makes NumPy raise and catch an AttributeError on every conversion and
comparison, which cost more than the op itself. The engine compares every arriving gradient's
dtype with what its node expects, so those must be NumPy dtypes too.
"""

from __future__ import annotations

import numpy as np
import pytest

import autograd_async as aa
from autograd_async.dtypes import dtype as Dtype


@pytest.fixture
def failed_lookups(monkeypatch):
    """The names that reached our dtype's `__getattr__` (the slow fallback) while the test ran."""
    names: list[str] = []
    forward = Dtype.__getattr__

    def recording(self, name):
        names.append(name)
        return forward(self, name)

    monkeypatch.setattr(Dtype, "__getattr__", recording)
    return names


@pytest.mark.parametrize("name", ["float32", "float64", "int64", "bool", "complex64", "bfloat16"])
def test_numpy_converts_our_dtypes_to_its_own(name):
    ours = getattr(aa, name)
    assert np.dtype(ours) == ours.dtype
    assert np.zeros(2, ours).dtype == ours.dtype
    assert np.ones(2).astype(ours).dtype == ours.dtype
    assert np.dtype(ours) == ours
    assert [np.dtype(ours) != ours] == [False]


def test_numpy_never_falls_back_to_attribute_lookups(failed_lookups):
    np.zeros(3, aa.float32)
    np.arange(3).astype(aa.float64)
    assert np.dtype("float32") == aa.float32
    assert np.dtype("float32") != aa.float64
    np.dtype(aa.bfloat16)
    assert failed_lookups == []


def test_backward_into_leaves_compares_numpy_dtypes(failed_lookups):
    x = aa.tensor([1.0, 2.0], requires_grad=True)
    w = aa.tensor([3.0, 4.0], dtype=aa.float32, requires_grad=True)
    h = x
    for _ in range(5):
        h = (h * w.double() + x).tanh()
    h.sum().backward()
    assert x.grad is not None and w.grad is not None and w.grad.dtype == aa.float32
    assert failed_lookups == []
    # What each node expects of its gradients: the array's own NumPy dtype, for leaves too.
    for leaf in (x, w):
        accumulator = (leaf * 1).grad_fn.next_functions[0][0]
        assert all(isinstance(dtype, np.dtype) for _, dtype in accumulator._out_meta)


def test_attributes_numpy_has_still_read_through():
    assert aa.float32.name == "float32"
    assert aa.float64.char == "d"
    with pytest.raises(AttributeError):
        aa.float32.no_such_attribute  # noqa: B018 - the lookup is the test
