"""PyTorch's top-level in-place functions (`torch.sigmoid_(x)`, `torch.dropout_(x, p, train)`)
and the threshold activations and dropouts they come with, against PyTorch on every device."""

from __future__ import annotations

import numpy as np
import pytest
from torch_reference import check_like_torch

import autograd_async as aa
from autograd_async.ops.torch_in_place import FUNCTION_FORMS, TENSOR_FORMS

RNG = np.random.default_rng(3)
A = RNG.standard_normal((3, 4))
POSITIVE = RNG.uniform(0.2, 0.8, (3, 4))
ABOVE_ONE = RNG.uniform(1.1, 3.0, (3, 4))

# In place on a non-leaf (x * 1), so that the gradient flows back through the new history.
IN_PLACE = {
    "sigmoid_": (lambda L, T, x: L.sigmoid_(x * 1), A),
    "exp_": (lambda L, T, x: L.exp_(x * 1), A),
    "deg2rad_": (lambda L, T, x: L.deg2rad_(x * 1), A),
    "ldexp_": (lambda L, T, x: L.ldexp_(x * 1, T([1.0, 2.0, 0.0, 3.0]).double()), A),
    "logit_": (lambda L, T, x: L.logit_(x * 1), POSITIVE),
    "clamp_": (lambda L, T, x: L.clamp_(x * 1, min=-0.5, max=0.5), A),
    "clamp_min_": (lambda L, T, x: L.clamp_min_(x * 1, 0.1), A),
    "addmv_": (lambda L, T, x, y: L.addmv_(x[:, 0] * 1, y, x[0], alpha=2), A, A),
    "xlogy_": (lambda L, T, x, y: L.xlogy_(x * 1, y), A, POSITIVE),
    "nan_to_num_": (lambda L, T, x: L.nan_to_num_(x * 1), A),
    "fill_": (lambda L, T, x: L.fill_(x * 1, 2.5) + x, A),
    "zero_": (lambda L, T, x: L.zero_(x * 1) + x, A),
    "selu_": (lambda L, T, x: L.selu_(x * 1), A),
    "threshold_": (lambda L, T, x: L.threshold_(x * 1, 0.2, -3.0), A),
    "rrelu_": (lambda L, T, x: L.rrelu_(x * 1, 0.1, 0.3), A),
    "index_put_": (lambda L, T, x, y: L.index_put_(x * 1, (T([0, 2]),), y[0]), A, A),
    "index_put_accumulate": (
        lambda L, T, x, y: (x * 1).index_put_((T([0, 0]), T([1, 1])), y[0, :2], accumulate=True),
        A,
        A,
    ),
    "dropout_not_training": (lambda L, T, x: L.dropout_(x * 1, 0.5, False), A),
}

OUT_OF_PLACE = {
    "threshold": (lambda L, T, x: L.threshold(x, 0.1, 20.0), A),
    "hardshrink": (lambda L, T, x: L.hardshrink(x, 0.6), A),
    "hardshrink_method": (lambda L, T, x: x.hardshrink(), A),
    "rrelu_eval": (lambda L, T, x: L.rrelu(x), A),
    "rrelu_bounds": (lambda L, T, x: L.rrelu(x, 0.2, 0.4, False), A),
    "dropout_eval": (lambda L, T, x: L.dropout(x, 0.3, False), A),
    "alpha_dropout_eval": (lambda L, T, x: L.alpha_dropout(x, 0.3, False), A),
    "feature_dropout_p0": (lambda L, T, x: L.feature_dropout(x, 0.0, True), A),
    "dropout_p1": (lambda L, T, x: L.dropout(x, 1.0, True), A),
}


@pytest.mark.parametrize("name", sorted(IN_PLACE))
def test_in_place_like_torch(torch, device, name):
    fn, *arrays = IN_PLACE[name]
    check_like_torch(torch, device, fn, *arrays)


# PyTorch has no derivative for acosh_ and atanh_, and computes celu_'s from its result (to
# about 1e-8): the values are compared with PyTorch's, the gradients by finite differences.
VALUES_THEN_GRADCHECK = {
    "acosh_": (lambda L, T, x: L.acosh_(x * 1), ABOVE_ONE),
    "atanh_method": (lambda L, T, x: (x * 1).atanh_(), POSITIVE),
    "arctanh_": (lambda L, T, x: L.arctanh_(x * 1), POSITIVE),
    "celu_": (lambda L, T, x: L.celu_(x * 1, 0.7), A),
}


@pytest.mark.parametrize("name", sorted(VALUES_THEN_GRADCHECK))
def test_in_place_values_like_torch_and_gradients(torch, device, name):
    fn, array = VALUES_THEN_GRADCHECK[name]
    check_like_torch(torch, device, fn, array, check_grads=False)
    x = aa.tensor(array, device=device, requires_grad=True)
    assert aa.autograd.gradcheck(lambda t: fn(aa, None, t), (x,))


@pytest.mark.parametrize("name", sorted(OUT_OF_PLACE))
def test_out_of_place_like_torch(torch, device, name):
    fn, *arrays = OUT_OF_PLACE[name]
    check_like_torch(torch, device, fn, *arrays)


def test_every_form_is_where_pytorch_has_it(torch):
    for base in TENSOR_FORMS:
        name = base + "_"
        assert hasattr(torch, name) and hasattr(torch.Tensor, name), name
        assert callable(getattr(aa, name)) and hasattr(aa.Tensor, name), name
    for base in FUNCTION_FORMS:
        name = base + "_"
        assert hasattr(torch, name) and not hasattr(torch.Tensor, name), name
        assert callable(getattr(aa, name)) and not hasattr(aa.Tensor, name), name


def test_the_function_returns_its_input_changed(device):
    x = aa.tensor([0.0, 1.0], device=device)
    version = x._version
    assert aa.sigmoid_(x) is x and x._version > version
    np.testing.assert_allclose(x.cpu().numpy(), [0.5, 1 / (1 + np.exp(-1))])


def test_a_leaf_that_requires_grad_is_refused():
    x = aa.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
        aa.exp_(x)
    with pytest.raises(
        TypeError, match="exp_\\(\\): argument 'input' \\(position 1\\) must be Tensor, not list"
    ):
        aa.exp_([1.0])


@pytest.mark.parametrize("feature", [False, True])
@pytest.mark.parametrize("alpha", [False, True])
def test_dropout_training_statistics(device, feature, alpha):
    fn = {
        (False, False): aa.dropout,
        (True, False): aa.feature_dropout,
        (False, True): aa.alpha_dropout,
        (True, True): aa.feature_alpha_dropout,
    }[(feature, alpha)]
    aa.manual_seed(0)
    x = aa.ones(40, 50, 4, dtype=aa.float64, device=device, requires_grad=True)
    out = fn(x, 0.25, True)
    values = out.detach().cpu().numpy()
    kept = values == values.max()
    if feature:  # one decision per channel (n, c), taken for all its elements
        assert (kept.all(axis=2) | ~kept.any(axis=2)).all()
    assert abs(kept.mean() - 0.75) < 0.05
    if alpha:  # kept and dropped elements each take one value
        assert len(np.unique(np.round(values, 12))) == 2
    else:
        np.testing.assert_allclose(values[kept], 1 / 0.75)
        assert not values[~kept].any()
    out.sum().backward()
    grad = x.grad.cpu().numpy()
    np.testing.assert_allclose(grad[kept], values[kept] if not alpha else grad[kept][0])
    assert np.unique(np.round(grad, 12)).size == 2


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (
            lambda L: L.dropout(L.ones(3), 1.5, True),
            "dropout probability has to be between 0 and 1, but got 1.5",
        ),
        (
            lambda L: L.feature_dropout(L.ones(3), 0.5, True),
            "Feature dropout requires at least 2 dimensions in the input",
        ),
    ],
)
def test_dropout_errors_like_torch(torch, call, message):
    for lib in (aa, torch):
        with pytest.raises(RuntimeError, match=message):
            call(lib)


def test_dtype_errors_like_torch(torch):
    for lib in (aa, torch):
        with pytest.raises(
            NotImplementedError, match="\"hardshrink_cpu\" not implemented for 'Long'"
        ):
            lib.hardshrink(lib.tensor([1, 2]))
        with pytest.raises(NotImplementedError, match='"leaky_relu_cpu" not implemented'):
            lib.rrelu(lib.tensor([1, 2]))
        assert lib.threshold(lib.tensor([1, 2]), 1, 0).tolist() == [0, 2]


def test_rrelu_training_draws_slopes_within_bounds(device):
    x = aa.tensor(-np.ones(1000), device=device, requires_grad=True)
    out = aa.rrelu(x, 0.1, 0.3, training=True)
    slopes = -out.detach().cpu().numpy()
    assert slopes.min() >= 0.1 and slopes.max() <= 0.3 and slopes.std() > 0.03
    out.sum().backward()
    np.testing.assert_allclose(x.grad.cpu().numpy(), slopes)
