"""`aa.compile` keeps `torch.compile`'s promise (the eager results) by returning the model."""

from __future__ import annotations

import pytest

import autograd_async as aa


def test_returns_the_model_and_works_as_a_decorator():
    m = aa.nn.Linear(3, 2)
    assert aa.compile(m) is m and aa.compile(m, mode="max-autotune", fullgraph=True) is m

    @aa.compile
    def f(x):
        return (x * 2).sum()

    @aa.compile(dynamic=True)
    def g(x):
        return x + 1

    x = aa.ones(3, requires_grad=True)
    f(x).backward()
    assert x.grad.tolist() == [2.0, 2.0, 2.0] and g(x).tolist() == [2.0, 2.0, 2.0]


def test_errors_as_pytorch():
    with pytest.raises(RuntimeError, match="Either mode or options"):
        aa.compile(aa.nn.Linear(1, 1), mode="default", options={})
    with pytest.raises(RuntimeError, match="must be callable"):
        aa.compile(3)
