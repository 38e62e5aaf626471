"""threshold, hardshrink, softshrink, rrelu, local response normalisation, gumbel_softmax and the
in-place and deprecated aliases of nn.functional against PyTorch and gradcheck, on every device."""

from __future__ import annotations

import numpy as np
import pytest
from torch_reference import check_like_torch

import autograd_async as aa

RNG = np.random.default_rng(0)
X = RNG.standard_normal((3, 4, 5))
KINKS = np.array([0.5, -0.5, 1.0, -1.0, 0.1, 0.0, 1.2, -1.2])  # the cut points of the cases
X4 = RNG.standard_normal((2, 7, 3, 4))
X5 = RNG.standard_normal((2, 6, 2, 3, 2))

CASES = [
    (lambda lib, T, x: lib.nn.functional.threshold(x, 0.5, -2.0), X),
    (lambda lib, T, x: lib.nn.functional.hardshrink(x), X),
    (lambda lib, T, x: lib.nn.functional.hardshrink(x, 1.0), X),
    (lambda lib, T, x: lib.nn.functional.softshrink(x), X),
    (lambda lib, T, x: lib.nn.functional.softshrink(x, 1.2), X),
    (lambda lib, T, x: lib.nn.functional.rrelu(x, 0.1, 0.3), X),
    (lambda lib, T, x: lib.nn.functional.local_response_norm(x, 3, 0.1, 0.75, 2.0), X),
    (lambda lib, T, x: lib.nn.functional.local_response_norm(x, 2, 0.1), X4),
    (lambda lib, T, x: lib.nn.functional.local_response_norm(x, 4, 0.3, 0.5), X5),
    (lambda lib, T, x: lib.nn.functional.elu_(x * 1), X),
    (lambda lib, T, x: lib.nn.functional.leaky_relu_(x * 1, 0.2), X),
    (lambda lib, T, x: lib.nn.functional.hardtanh_(x * 1, -0.5, 0.7), X),
    (lambda lib, T, x: lib.nn.functional.threshold_(x * 1, 0.1, 3.0), X),
    (lambda lib, T, x: lib.nn.functional.relu_(x * 1), X),
    (lambda lib, T, x: lib.nn.functional.celu_(x * 1, 0.5), X),
    (lambda lib, T, x: lib.nn.functional.selu_(x * 1), X),
]


@pytest.mark.parametrize("case", range(len(CASES)))
def test_matches_torch(torch, device, case) -> None:
    fn, x = CASES[case]
    check_like_torch(torch, device, fn, x)


@pytest.mark.parametrize("case", range(6))
def test_gradients_at_the_cut_points_match_torch(torch, device, case) -> None:
    fn, _ = CASES[case]
    check_like_torch(torch, device, fn, KINKS, check_grads=False)
    ours = aa.tensor(KINKS, device=device, requires_grad=True)
    theirs = torch.tensor(KINKS, requires_grad=True)
    fn(aa, None, ours).sum().backward()
    fn(torch, None, theirs).sum().backward()
    np.testing.assert_allclose(np.asarray(ours.grad), theirs.grad.numpy(), rtol=1e-12)


@pytest.mark.filterwarnings("ignore:`nn.functional.upsample")
@pytest.mark.parametrize(
    "fn",
    [
        lambda lib, T, x: lib.nn.functional.upsample(x, scale_factor=2, mode="bilinear"),
        lambda lib, T, x: lib.nn.functional.upsample_nearest(x, size=(5, 7)),
        lambda lib, T, x: lib.nn.functional.upsample_bilinear(x, scale_factor=2),
    ],
)
def test_deprecated_upsample_functions(torch, device, fn) -> None:
    check_like_torch(torch, device, fn, X4)


def test_upsample_warns_as_torch_does() -> None:
    with pytest.warns(UserWarning, match="`nn.functional.upsample_nearest` is deprecated"):
        aa.nn.functional.upsample_nearest(aa.ones(1, 1, 2, 2), scale_factor=2)


def test_threshold_keeps_integer_dtypes(torch) -> None:
    ours = aa.nn.functional.threshold(aa.tensor([1, 2, 3]), 1, 0)
    theirs = torch.nn.functional.threshold(torch.tensor([1, 2, 3]), 1, 0)
    assert str(ours.dtype) == "int64"
    np.testing.assert_array_equal(np.asarray(ours), theirs.numpy())


def test_rrelu_training_draws_slopes_within_bounds(device) -> None:
    aa.manual_seed(0)
    x = aa.tensor(-np.ones(1000), device=device, requires_grad=True)
    out = aa.nn.functional.rrelu(x, 0.1, 0.3, training=True)
    slopes = -np.asarray(out.detach())
    assert slopes.min() >= 0.1 and slopes.max() <= 0.3 and slopes.std() > 0.03
    out.sum().backward()
    np.testing.assert_allclose(np.asarray(x.grad), slopes)
    y = aa.tensor([2.0, -1.0], device=device)
    assert float(aa.nn.functional.rrelu(y, training=True)[0]) == 2.0


@pytest.mark.parametrize(
    "call",
    [
        lambda lib: lib.nn.functional.softshrink(lib.tensor([1.0]), -1.0),
        lambda lib: lib.nn.functional.softshrink(lib.tensor([1, 2])),
        lambda lib: lib.nn.functional.hardshrink(lib.tensor([1, 2])),
        lambda lib: lib.nn.functional.rrelu(lib.tensor([1.0]), 0.5, 0.1, training=True),
        lambda lib: lib.nn.functional.local_response_norm(lib.ones(2, 3), 2),
        lambda lib: lib.nn.functional.assert_int_or_pair((1, 2, 3), "kernel", "{} bad"),
    ],
)
def test_errors_match_torch(torch, call) -> None:
    with pytest.raises(Exception) as theirs:
        call(torch)
    with pytest.raises(type(theirs.value)) as ours:
        call(aa)
    assert str(ours.value) == str(theirs.value)


def test_gumbel_softmax_samples_and_straight_through(device) -> None:
    aa.manual_seed(0)
    logits = aa.tensor(np.log([[0.7, 0.2, 0.1]] * 4000), device=device, requires_grad=True)
    soft = aa.nn.functional.gumbel_softmax(logits, tau=0.5)
    np.testing.assert_allclose(np.asarray(soft.detach()).sum(-1), 1.0)
    hard = aa.nn.functional.gumbel_softmax(logits, hard=True)
    picked = np.asarray(hard.detach())
    assert set(np.unique(picked)) == {0.0, 1.0}
    np.testing.assert_allclose(picked.mean(0), [0.7, 0.2, 0.1], atol=0.03)
    (hard * aa.tensor([1.0, 2.0, 3.0], device=device, dtype=aa.float64)).sum().backward()
    assert logits.grad is not None and np.abs(np.asarray(logits.grad)).sum() > 0


def test_has_torch_function_sees_only_overriding_objects(torch) -> None:
    f = aa.nn.functional

    class Overrides:
        @classmethod
        def __torch_function__(cls, *args, **kwargs):
            return NotImplemented

    assert not f.has_torch_function((aa.ones(2), 1.0))
    assert f.has_torch_function_unary(Overrides())
    assert f.has_torch_function_variadic(aa.ones(1), Overrides())
