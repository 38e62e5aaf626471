"""functional_call and stack_module_state against torch.func, and vjp under vmap."""

from __future__ import annotations

import numpy as np
import pytest

import autograd_async as aa
from autograd_async import func, nn


def _np(t):
    return t.detach().cpu().numpy() if isinstance(t, aa.Tensor) else t.detach().numpy()


def _close(ours, theirs, atol=1e-5):
    np.testing.assert_allclose(_np(ours), _np(theirs), rtol=1e-4, atol=atol)


def _data(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


class Scaled(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 2)
        self.register_buffer("scale", aa.ones(2))

    def forward(self, x):
        return self.lin(x) * self.scale


def test_functional_call_with_parameters_and_buffers(device):
    m = Scaled().to(device)
    x = aa.tensor(_data(4, 3), device=device)
    w = aa.tensor(_data(2, 3, seed=1), device=device)
    scale = aa.tensor([2.0, -1.0], device=device)
    got = func.functional_call(m, ({"lin.weight": w}, {"scale": scale}), (x,))
    expected = (x @ w.t() + m.lin.bias) * scale
    _close(got, expected)
    assert m.lin.weight is not w and float(m.scale.sum().item()) == 2.0  # restored afterwards
    with pytest.raises(ValueError, match="appeared in multiple dictionaries"):
        func.functional_call(m, ({"scale": scale}, {"scale": scale}), (x,))
    with pytest.raises(RuntimeError, match=r"(?s)Unexpected key\(s\): 'foo'.*Missing key\(s\)"):
        func.functional_call(m, {"foo": scale}, (x,), strict=True)


def test_functional_call_follows_tied_weights():
    class Tied(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = nn.Linear(2, 2, bias=False)
            self.b = nn.Linear(2, 2, bias=False)
            self.b.weight = self.a.weight

        def forward(self, x):
            return self.b(self.a(x))

    m = Tied()
    w = aa.eye(2) * 3
    x = aa.ones(1, 2)
    assert func.functional_call(m, {"a.weight": w}, (x,)).numpy().tolist() == [[9.0, 9.0]]
    untied = func.functional_call(m, {"a.weight": w}, (x,), tie_weights=False)
    expected = (x @ w.t()) @ m.b.weight.t()
    _close(untied, expected)


def test_ensemble_by_stack_module_state_and_vmap_matches_torch(torch, device):
    models = [nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2)) for _ in range(3)]
    params, buffers = func.stack_module_state(models)
    assert tuple(params["0.weight"].shape) == (3, 4, 3) and params["0.weight"].requires_grad
    params = {k: v.to(device) for k, v in params.items()}
    base = models[0].to(device)
    x = aa.tensor(_data(5, 3), device=device)

    def run(p, b, v):
        return func.functional_call(base, (p, b), (v,))

    got = func.vmap(run, in_dims=(0, 0, None))(params, buffers, x)
    tmodels = [
        torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 2))
        for _ in range(3)
    ]
    for m, t in zip(models, tmodels):
        for (_, p), (_, tp) in zip(m.named_parameters(), t.named_parameters()):
            tp.data = torch.from_numpy(_np(p).copy())
    tparams, tbuffers = torch.func.stack_module_state(tmodels)

    def trun(p, b, v):
        return torch.func.functional_call(tmodels[0], (p, b), (v,))

    expected = torch.func.vmap(trun, in_dims=(0, 0, None))(
        tparams, tbuffers, torch.from_numpy(_data(5, 3))
    )
    _close(got, expected)
    with pytest.raises(RuntimeError, match="Expected at least one model, got 0"):
        func.stack_module_state([])


def test_vjp_function_under_vmap_gives_the_jacobian(torch):
    a = _data(3)
    out, fn = func.vjp(lambda v: v.sin() * v.sum(), aa.tensor(a))
    jac = func.vmap(fn)(aa.eye(3))[0]
    _close(jac, torch.func.jacrev(lambda v: v.sin() * v.sum())(torch.from_numpy(a)))
