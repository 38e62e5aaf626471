"""grad, grad_and_value, vjp, jvp, linearize, jacrev, jacfwd and hessian against torch.func."""

from __future__ import annotations

import numpy as np
import pytest

import autograd_async as aa
from autograd_async import func


def _t(torch, a):
    return torch.from_numpy(np.asarray(a))


def _close(ours, theirs, atol=1e-5):
    np.testing.assert_allclose(
        ours.detach().cpu().numpy(), theirs.detach().numpy(), rtol=1e-4, atol=atol
    )


def _data(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def test_grad_argnums_and_aux_match_torch(torch, device):
    a, b = _data(3), _data(3, seed=1)

    def f(lib, x, y):
        return (x.sin() * y).sum() + (x * x).sum(), x.cos()

    ours = func.grad(lambda x, y: f(aa, x, y), argnums=(0, 1), has_aux=True)(
        aa.tensor(a, device=device), aa.tensor(b, device=device)
    )
    theirs = torch.func.grad(lambda x, y: f(torch, x, y), argnums=(0, 1), has_aux=True)(
        _t(torch, a), _t(torch, b)
    )
    for o, t in zip(ours[0], theirs[0]):
        _close(o, t)
    _close(ours[1], theirs[1])
    assert not ours[0][0].requires_grad


def test_grad_and_value_of_a_dict_of_parameters(torch, device):
    w, x = _data(4, 3), _data(3)

    def f(p, v):
        return ((p["w"] @ v).tanh() ** 2).sum()

    params = {"w": aa.tensor(w, device=device)}
    g, value = func.grad_and_value(f)(params, aa.tensor(x, device=device))
    tg, tvalue = torch.func.grad_and_value(f)({"w": _t(torch, w)}, _t(torch, x))
    _close(g["w"], tg["w"])
    _close(value, tvalue)


def test_grad_errors_say_what_torch_says():
    x = aa.ones(3)
    with pytest.raises(RuntimeError, match="to return a scalar Tensor, got tensor with 1 dims"):
        func.grad(lambda a: a * 2)(x)
    with pytest.raises(RuntimeError, match=r"Got argnum=2, but only 1 positional inputs"):
        func.grad(lambda a: a.sum(), argnums=2)(x)
    with pytest.raises(RuntimeError, match="argnums elements must be unique"):
        func.grad(lambda a: a.sum(), argnums=(0, 0))(x)
    with pytest.raises(RuntimeError, match=r"should be a tuple: \(output, aux\)"):
        func.grad(lambda a: a.sum(), has_aux=True)(x)


def test_nested_grad_keeps_perturbations_apart():
    # d/dx [d/dy (x * y)] at y = x is 1, not 2 (the inner input is its own variable)
    x = aa.tensor(3.0)
    assert func.grad(lambda a: func.grad(lambda b: a * b)(a))(x).item() == pytest.approx(1.0)
    third = func.grad(func.grad(func.grad(lambda a: a**4)))(aa.tensor(2.0))
    assert third.item() == pytest.approx(48.0)


def test_vjp_and_jvp_match_torch(torch, device):
    a, ct, tan = _data(2, 3), _data(2, 3, seed=1), _data(2, 3, seed=2)

    def f(x):
        return x.exp() * x.sum(0)

    out, fn = func.vjp(f, aa.tensor(a, device=device))
    tout, tfn = torch.func.vjp(f, _t(torch, a))
    _close(out, tout)
    _close(fn(aa.tensor(ct, device=device))[0], tfn(_t(torch, ct))[0])
    with pytest.raises(RuntimeError, match="Mismatch in shape"):
        fn(aa.ones(3, device=device))
    out, jv = func.jvp(f, (aa.tensor(a, device=device),), (aa.tensor(tan, device=device),))
    tout, tjv = torch.func.jvp(f, (_t(torch, a),), (_t(torch, tan),))
    _close(out, tout)
    _close(jv, tjv)
    value, jvp_fn = func.linearize(f, aa.tensor(a, device=device))
    _close(value, tout)
    _close(jvp_fn(aa.tensor(tan, device=device)), tjv)


@pytest.mark.parametrize("transform", ["jacrev", "jacfwd"])
def test_jacobians_match_torch(torch, device, transform):
    a, b = _data(3), _data(2, 3, seed=1)

    def f(x, m):
        return (m @ x.sin()) * x[:2]

    ours = getattr(func, transform)(f, argnums=(0, 1))(
        aa.tensor(a, device=device), aa.tensor(b, device=device)
    )
    theirs = getattr(torch.func, transform)(f, argnums=(0, 1))(_t(torch, a), _t(torch, b))
    for o, t in zip(ours, theirs):
        assert tuple(o.shape) == tuple(t.shape)
        _close(o, t)


def test_jacrev_of_jacrev_and_hessian_match_torch(torch, device):
    a = _data(3)

    def g(x):
        return (x.sin() * x * x).sum()

    ours = func.hessian(g)(aa.tensor(a, device=device))
    _close(ours, torch.func.hessian(g)(_t(torch, a)), atol=1e-4)
    twice = func.jacrev(func.jacrev(g))(aa.tensor(a, device=device))
    _close(twice, torch.func.hessian(g)(_t(torch, a)), atol=1e-4)


def test_jacrev_has_aux(torch):
    a = _data(2)

    def f(x):
        return x * 3, x.sum()

    jac, aux = func.jacrev(f, has_aux=True)(aa.tensor(a))
    tjac, taux = torch.func.jacrev(f, has_aux=True)(_t(torch, a))
    _close(jac, tjac)
    _close(aux, taux)
