"""nn.utils.parametrize, parametrizations.weight_norm/spectral_norm and the older hook-based
weight_norm/spectral_norm: values, gradients and state-dict keys against PyTorch, behaviour of
the swapped class, caching, removal and errors."""

from __future__ import annotations

import copy
import warnings

import numpy as np
import pytest

import autograd_async as aa
from autograd_async import nn
from autograd_async.nn.utils import parametrize
from autograd_async.nn.utils.parametrizations import spectral_norm, weight_norm


class Symmetric(nn.Module):
    def forward(self, x):
        return x.triu() + x.triu(1).transpose(-1, -2)

    def right_inverse(self, a):
        return a.triu()


def _linear_pair(torch, cls_args=(4, 3)):
    ours, theirs = nn.Linear(*cls_args), torch.nn.Linear(*cls_args).double()
    ours.double()
    with aa.no_grad():
        ours.weight.copy_(aa.tensor(theirs.weight.detach().numpy()))
        ours.bias.copy_(aa.tensor(theirs.bias.detach().numpy()))
    return ours, theirs


def test_register_swaps_the_class_of_that_instance_only_and_remove_restores_it():
    m, other = nn.Linear(3, 3), nn.Linear(3, 3)
    weight = m.weight
    parametrize.register_parametrization(m, "weight", Symmetric())
    assert type(m).__name__ == "ParametrizedLinear" and isinstance(m, nn.Linear)
    assert type(other) is nn.Linear and parametrize.type_before_parametrizations(m) is nn.Linear
    assert parametrize.is_parametrized(m) and parametrize.is_parametrized(m, "weight")
    assert not parametrize.is_parametrized(m, "bias") and not parametrize.is_parametrized(other)
    assert m.parametrizations.weight.original is weight  # optimizers keep holding it
    assert np.allclose(m.weight.detach().numpy(), m.weight.detach().numpy().T)
    parametrize.remove_parametrizations(m, "weight")
    assert type(m) is nn.Linear and isinstance(m.weight, nn.Parameter)
    assert np.allclose(m.weight.detach().numpy(), m.weight.detach().numpy().T)


def test_assignment_goes_through_right_inverse_and_chained_parametrizations():
    m = nn.Linear(3, 3)
    parametrize.register_parametrization(m, "weight", Symmetric())
    m.weight = aa.eye(3) * 2 + aa.triu(aa.ones(3, 3), 1)
    assert np.allclose(m.weight.detach().numpy(), [[2, 1, 1], [1, 2, 1], [1, 1, 2]])

    class Double(nn.Module):
        def forward(self, x):
            return 2 * x

    parametrize.register_parametrization(m, "weight", Double())
    assert (
        np.allclose(m.weight.detach().numpy()[0], [4, 2, 2]) and len(m.parametrizations.weight) == 2
    )
    with pytest.raises(RuntimeError, match="Double does not implement right_inverse"):
        m.weight = aa.eye(3)


def test_gradients_reach_the_original_and_cached_computes_once():
    calls = []

    class Scale(nn.Module):
        def forward(self, x):
            calls.append(1)
            return 3 * x

    m = nn.Linear(2, 2)
    parametrize.register_parametrization(m, "weight", Scale())
    m(aa.ones(1, 2)).sum().backward()
    assert np.allclose(m.parametrizations.weight.original.grad.numpy(), 3.0)
    calls.clear()
    with parametrize.cached():
        m.weight, m.weight, m(aa.ones(1, 2))
    assert len(calls) == 1


def test_errors():
    m = nn.Linear(2, 2)
    with pytest.raises(ValueError, match="does not have a parameter, a buffer"):
        parametrize.register_parametrization(m, "nothing", Symmetric())

    class Grow(nn.Module):
        def forward(self, x):
            return aa.cat([x, x])

    with pytest.raises(ValueError, match="may not change the shape"):
        parametrize.register_parametrization(m, "weight", Grow())
    with pytest.raises(ValueError, match="does not have a parametrization on weight"):
        parametrize.remove_parametrizations(m, "weight")
    wn = weight_norm(nn.Linear(2, 2))
    with pytest.raises(ValueError, match="sequence of tensors"):
        parametrize.remove_parametrizations(wn, "weight", leave_parametrized=False)


def test_weight_norm_against_torch_values_grads_and_keys():
    torch = pytest.importorskip("torch")
    for dim in (0, 1, None):
        ours, theirs = _linear_pair(torch)
        weight_norm(ours, dim=dim)
        torch.nn.utils.parametrizations.weight_norm(theirs, dim=dim)
        assert sorted(ours.state_dict()) == sorted(theirs.state_dict())
        x = np.random.default_rng(0).normal(size=(5, 4))
        ours(aa.tensor(x)).square().sum().backward()
        theirs(torch.tensor(x)).square().sum().backward()
        for i in (0, 1):
            a = getattr(ours.parametrizations.weight, f"original{i}")
            b = getattr(theirs.parametrizations.weight, f"original{i}")
            assert np.allclose(a.detach().numpy(), b.detach().numpy())
            assert np.allclose(a.grad.numpy(), b.grad.numpy())


def test_weight_norm_gradient_by_finite_differences():
    m = weight_norm(nn.Linear(3, 2).double())
    x = aa.randn(4, 3, dtype=aa.float64)
    norm = m.parametrizations.weight[0]
    g, v = (t.detach().clone().requires_grad_() for t in m.parametrizations.weight.originals())
    assert aa.autograd.gradcheck(lambda g, v: (x @ norm(g, v).T).tanh().sum(), (g, v))


def test_spectral_norm_against_torch_with_the_same_vectors():
    torch = pytest.importorskip("torch")
    for make in (lambda lib: lib.nn.Linear(5, 4), lambda lib: lib.nn.ConvTranspose2d(3, 2, 3)):
        theirs = make(torch).double()
        ours = make(aa).double()
        ours.load_state_dict({k: aa.tensor(v.numpy()) for k, v in theirs.state_dict().items()})
        torch.nn.utils.parametrizations.spectral_norm(theirs)
        spectral_norm(ours)
        ours.load_state_dict({k: aa.tensor(v.numpy()) for k, v in theirs.state_dict().items()})
        assert sorted(ours.state_dict()) == sorted(theirs.state_dict())
        for _ in range(3):  # training: a power iteration per access
            assert np.allclose(ours.weight.detach().numpy(), theirs.weight.detach().numpy())
        ours.eval(), theirs.eval()
        assert np.allclose(ours.weight.detach().numpy(), theirs.weight.detach().numpy())


def test_spectral_norm_bounds_the_largest_singular_value_and_survives_deepcopy():
    m = spectral_norm(nn.Linear(6, 5))
    for _ in range(30):
        m(aa.randn(2, 6))
    assert abs(float(aa.linalg.matrix_norm(m.weight, 2)) - 1.0) < 1e-3
    twin = copy.deepcopy(m)
    assert np.allclose(twin.weight.detach().numpy(), m.weight.detach().numpy())
    with pytest.raises(ValueError, match="Expected n_power_iterations to be positive"):
        spectral_norm(nn.Linear(2, 2), n_power_iterations=0)


def test_hook_based_norms_against_torch():
    torch = pytest.importorskip("torch")
    ours, theirs = _linear_pair(torch)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.nn.utils.weight_norm(theirs)
    with pytest.warns(FutureWarning, match="parametrizations.weight_norm"):
        nn.utils.weight_norm(ours)
    assert sorted(ours.state_dict()) == sorted(theirs.state_dict())
    x = np.ones((2, 4))
    assert np.allclose(
        ours(aa.tensor(x)).detach().numpy(), theirs(torch.tensor(x)).detach().numpy()
    )
    with (
        pytest.raises(RuntimeError, match="Cannot register two weight_norm hooks"),
        warnings.catch_warnings(),
    ):
        warnings.simplefilter("ignore")
        nn.utils.weight_norm(ours)
    nn.utils.remove_weight_norm(ours)
    torch.nn.utils.remove_weight_norm(theirs)
    assert sorted(ours.state_dict()) == sorted(theirs.state_dict())
    assert np.allclose(ours.weight.detach().numpy(), theirs.weight.detach().numpy())

    ours, theirs = _linear_pair(torch, (5, 3))
    torch.nn.utils.spectral_norm(theirs)
    nn.utils.spectral_norm(ours)
    ours.load_state_dict({k: aa.tensor(v.numpy()) for k, v in theirs.state_dict().items()})
    assert sorted(ours.state_dict()) == sorted(theirs.state_dict())
    x = np.ones((2, 5))
    for _ in range(3):
        assert np.allclose(
            ours(aa.tensor(x)).detach().numpy(), theirs(torch.tensor(x)).detach().numpy()
        )
    nn.utils.remove_spectral_norm(ours)
    torch.nn.utils.remove_spectral_norm(theirs)
    assert sorted(ours.state_dict()) == sorted(theirs.state_dict())
    assert np.allclose(ours.weight.detach().numpy(), theirs.weight.detach().numpy())
