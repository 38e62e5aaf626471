"""The `_foreach_*` functions against PyTorch's, out of place and in place."""

from __future__ import annotations

import numpy as np
import pytest

import autograd_async as aa

UNARY = ["abs", "exp", "neg", "sqrt", "sigmoid", "tanh", "sign", "floor", "reciprocal", "log1p"]
BINARY = ["add", "sub", "mul", "div", "pow", "maximum", "minimum", "clamp_max", "clamp_min"]


def _lists(lib, seed=0):
    rng = np.random.default_rng(seed)
    arrays = [rng.uniform(0.5, 2.0, size) for size in ((3,), (2, 4), ())]
    return [lib.tensor(a) for a in arrays], [lib.tensor(np.flip(a).copy() + 0.25) for a in arrays]


def _same(ours, theirs):
    assert len(ours) == len(theirs)
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("op", UNARY)
def test_unary(op):
    torch = pytest.importorskip("torch")
    (ours, _), (theirs, _) = _lists(aa), _lists(torch)
    _same(getattr(aa, f"_foreach_{op}")(ours), getattr(torch, f"_foreach_{op}")(theirs))
    assert getattr(aa, f"_foreach_{op}_")(ours) is ours
    getattr(torch, f"_foreach_{op}_")(theirs)
    _same(ours, theirs)


@pytest.mark.parametrize("op", BINARY)
@pytest.mark.parametrize("other", ["scalar", "scalars", "tensors"])
def test_binary(op, other):
    torch = pytest.importorskip("torch")
    (ours, ours2), (theirs, theirs2) = _lists(aa), _lists(torch)
    pick = {
        "scalar": (1.25, 1.25),
        "scalars": ([0.5, 1.5, 2.0], [0.5, 1.5, 2.0]),
        "tensors": (ours2, theirs2),
    }[other]
    _same(
        getattr(aa, f"_foreach_{op}")(ours, pick[0]),
        getattr(torch, f"_foreach_{op}")(theirs, pick[1]),
    )
    getattr(aa, f"_foreach_{op}_")(ours, pick[0])
    getattr(torch, f"_foreach_{op}_")(theirs, pick[1])
    _same(ours, theirs)


def test_alpha_pointwise_lerp_norm_and_others():
    torch = pytest.importorskip("torch")
    (a, b), (ta, tb) = _lists(aa), _lists(torch)
    _same(aa._foreach_add(a, b, alpha=-2.0), torch._foreach_add(ta, tb, alpha=-2.0))
    _same(aa._foreach_pow(2.0, a), torch._foreach_pow(2.0, ta))
    _same(aa._foreach_addcmul(a, a, b, value=0.5), torch._foreach_addcmul(ta, ta, tb, value=0.5))
    _same(
        aa._foreach_addcdiv(a, a, b, [1.0, 2.0, 3.0]),
        torch._foreach_addcdiv(ta, ta, tb, [1.0, 2.0, 3.0]),
    )
    _same(aa._foreach_lerp(a, b, 0.25), torch._foreach_lerp(ta, tb, 0.25))
    _same(aa._foreach_norm(a), torch._foreach_norm(ta))
    _same(aa._foreach_norm(a, float("inf")), torch._foreach_norm(ta, float("inf")))
    _same(aa._foreach_max(a), torch._foreach_max(ta))
    aa._foreach_lerp_(a, b, 0.1)
    torch._foreach_lerp_(ta, tb, 0.1)
    _same(a, ta)
    aa._foreach_addcmul_(a, b, b, value=2.0)
    torch._foreach_addcmul_(ta, tb, tb, value=2.0)
    _same(a, ta)
    aa._foreach_copy_(a, b)
    _same(a, b)
    aa._foreach_zero_(a)
    assert all(float(t.abs().sum()) == 0 for t in a)
    _same(aa._foreach_clone(b), b)


def test_errors_name_the_function():
    with pytest.raises(TypeError, match="_foreach_add"):
        aa._foreach_add(aa.ones(2), 1.0)
    with pytest.raises(RuntimeError, match="_foreach_mul_.*same number of tensors"):
        aa._foreach_mul_([aa.ones(2)], [1.0, 2.0])


def test_ema_update_records_no_graph_under_no_grad_and_differentiates_otherwise():
    params = [aa.ones(2, requires_grad=True), aa.ones(3, requires_grad=True)]
    ema = [p.detach().clone() for p in params]
    with aa.no_grad():
        aa._foreach_mul_(ema, 0.9)
        aa._foreach_add_(ema, params, alpha=0.1)
    assert all(not e.requires_grad for e in ema)
    out = aa._foreach_mul(params, 3.0)
    sum(o.sum() for o in out).backward()
    assert all(np.allclose(p.grad.numpy(), 3.0) for p in params)
