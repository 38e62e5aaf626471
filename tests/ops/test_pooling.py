"""Max, average and adaptive pooling against PyTorch (indices included), on every device."""

from __future__ import annotations

import numpy as np
import pytest
from gradients import to_numpy

import autograd_async as aa
from autograd_async.autograd import gradcheck, gradgradcheck
from autograd_async.nn import functional as F  # noqa: N812

from .torch_reference import against_torch

RNG = np.random.default_rng(0)


def _r(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape)


MAX_CASES = [
    {"kernel_size": 2},
    {"kernel_size": 3, "stride": 2, "padding": 1, "ceil_mode": True},
    {"kernel_size": 3, "stride": 2, "ceil_mode": True, "return_indices": True},
    {"kernel_size": 2, "stride": 1, "dilation": 2, "padding": 1, "return_indices": True},
]


@pytest.mark.parametrize("kwargs", MAX_CASES)
def test_max_pool_matches_torch(torch, device, kwargs) -> None:
    tf = torch.nn.functional
    against_torch(
        torch,
        lambda t: F.max_pool2d(t, **kwargs),
        lambda t: tf.max_pool2d(t, **kwargs),
        _r(2, 3, 7, 8),
        device=device,
    )
    against_torch(
        torch,
        lambda t: F.max_pool2d(t, **kwargs),
        lambda t: tf.max_pool2d(t, **kwargs),
        _r(3, 6, 5),
        device=device,
    )
    against_torch(
        torch,
        lambda t: F.max_pool1d(t, **kwargs),
        lambda t: tf.max_pool1d(t, **kwargs),
        _r(2, 3, 9),
        device=device,
    )


def test_max_pool_rectangular_and_ties_match_torch(torch, device) -> None:
    tf = torch.nn.functional
    kwargs = {
        "kernel_size": (2, 3),
        "stride": (1, 2),
        "padding": (1, 1),
        "dilation": (2, 1),
        "return_indices": True,
    }
    against_torch(
        torch,
        lambda t: F.max_pool2d(t, **kwargs),
        lambda t: tf.max_pool2d(t, **kwargs),
        _r(2, 2, 7, 8),
        device=device,
    )
    ties = np.round(_r(1, 2, 6, 6))  # many equal values: the first in the window wins
    against_torch(
        torch,
        lambda t: F.max_pool2d(t, 3, 1, 1, return_indices=True),
        lambda t: tf.max_pool2d(t, 3, 1, 1, return_indices=True),
        ties,
        device=device,
    )


AVG_CASES = [
    {"kernel_size": 2},
    {"kernel_size": 3, "stride": 2, "padding": 1, "ceil_mode": True},
    {"kernel_size": 3, "stride": 2, "padding": 1, "ceil_mode": True, "count_include_pad": False},
    {"kernel_size": (2, 3), "stride": (1, 2), "padding": (1, 1), "divisor_override": 5},
]


@pytest.mark.parametrize("kwargs", AVG_CASES)
def test_avg_pool_matches_torch(torch, device, kwargs) -> None:
    tf = torch.nn.functional
    against_torch(
        torch,
        lambda t: F.avg_pool2d(t, **kwargs),
        lambda t: tf.avg_pool2d(t, **kwargs),
        _r(2, 3, 7, 8),
        device=device,
    )
    if "divisor_override" not in kwargs and isinstance(kwargs["kernel_size"], int):
        against_torch(
            torch,
            lambda t: F.avg_pool1d(t, **kwargs),
            lambda t: tf.avg_pool1d(t, **kwargs),
            _r(3, 9),
            device=device,
        )


@pytest.mark.parametrize("size", [(3, 5), 2, (None, 3), (7, 8), (4, 1)])
def test_adaptive_pools_match_torch(torch, device, size) -> None:
    tf = torch.nn.functional
    against_torch(
        torch,
        lambda t: F.adaptive_avg_pool2d(t, size),
        lambda t: tf.adaptive_avg_pool2d(t, size),
        _r(2, 3, 7, 8),
        device=device,
    )
    against_torch(
        torch,
        lambda t: F.adaptive_max_pool2d(t, size, return_indices=True),
        lambda t: tf.adaptive_max_pool2d(t, size, return_indices=True),
        _r(2, 3, 7, 8),
        device=device,
    )
    against_torch(
        torch,
        lambda t: F.adaptive_max_pool2d(t, size),
        lambda t: tf.adaptive_max_pool2d(t, size),
        _r(3, 7, 8),
        device=device,
    )
    one = size if isinstance(size, int) else size[1]
    against_torch(
        torch,
        lambda t: F.adaptive_avg_pool1d(t, one),
        lambda t: tf.adaptive_avg_pool1d(t, one),
        _r(2, 3, 8),
        device=device,
    )


def test_pools_keep_float32(device) -> None:
    x = aa.randn(2, 3, 6, 6, device=device, requires_grad=True)
    out, index = F.max_pool2d(x, 2, return_indices=True)
    assert out.dtype == aa.float32 and index.dtype == aa.int64 and not index.requires_grad
    (out.sum() + F.avg_pool2d(x, 3).sum() + F.adaptive_avg_pool2d(x, 2).sum()).backward()
    assert x.grad.dtype == aa.float32


def test_gradcheck_and_gradgradcheck(device) -> None:
    x = aa.tensor(_r(1, 2, 5, 4), device=device, requires_grad=True)
    for fn in (
        lambda t: F.max_pool2d(t, 2, 1, padding=1, ceil_mode=True),
        lambda t: F.avg_pool2d(t, 3, 2, padding=1, ceil_mode=True, count_include_pad=False),
        lambda t: F.adaptive_avg_pool2d(t, (3, 2)),
        lambda t: F.adaptive_max_pool2d(t, (2, 3)),
        lambda t: F.max_pool1d(t[0], 2),
        lambda t: F.avg_pool1d(t[0], 2, 1, 1),
        lambda t: F.adaptive_avg_pool1d(t[0], 3),
    ):
        assert gradcheck(fn, (x,))
        assert gradgradcheck(fn, (x,))


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (
            lambda: F.max_pool2d(aa.randn(2, 3), 2),
            r"max_pool2d: Expected 3D or 4D \(batch mode\) non-empty tensor for input, but got: \[2, 3\]",
        ),
        (
            lambda: F.max_pool1d(aa.randn(2, 3, 4, 5), 2),
            r"max_pool1d: Expected 2D or 3D \(batch mode\) non-empty tensor for input",
        ),
        (
            lambda: F.max_pool2d(aa.randn(2, 3, 5, 5), 3, padding=2),
            r"pad should be at most half of effective kernel size, but got pad=2, kernel_size=3 and "
            r"dilation=1",
        ),
        (
            lambda: F.avg_pool2d(aa.randn(2, 3, 5, 5), 3, padding=2),
            r"avg_pool2d: pad should be at most half of effective kernel size",
        ),
        (
            lambda: F.max_pool2d(aa.randn(2, 3, 5, 5), 7),
            r"Given input size: \(3x5x5\). Calculated output size: \(3x0x0\). Output size is too small",
        ),
        (lambda: F.max_pool2d(aa.randn(2, 3, 5, 5), 2, stride=0), r"stride should not be zero"),
        (
            lambda: F.avg_pool2d(aa.randn(2, 3, 5, 5), 2, divisor_override=0),
            r"divisor must be not zero",
        ),
        (
            lambda: F.adaptive_avg_pool2d(aa.randn(3), 2),
            r"adaptive_avg_pool2d\(\): Expected 3D or 4D tensor, but got \[3\]",
        ),
        (
            lambda: F.adaptive_max_pool2d(aa.randn(3, 4, 4), (1, 2, 3)),
            r"adaptive_max_pool2d: output_size must be 2 values",
        ),
        (
            lambda: F.adaptive_avg_pool1d(aa.randn(2, 3, 4, 5), 2),
            r"adaptive_avg_pool1d\(\): Expected 2D or 3D tensor",
        ),
    ],
)
def test_bad_arguments_raise_clear_errors(call, message) -> None:
    with pytest.raises(RuntimeError, match=message):
        call()


def test_max_pool_never_picks_padding(torch, device) -> None:
    # Windows whose input elements are all -inf: padding (also -inf) must not win.
    x = np.full((1, 2, 5, 6), -np.inf)
    x[0, 0, 2, 3] = 1.0
    tf = torch.nn.functional
    for kwargs in (
        {"kernel_size": 3, "stride": 2, "padding": 1},
        {"kernel_size": 2, "stride": 1, "padding": 1, "dilation": 2},
        {"kernel_size": 3, "stride": 2, "padding": 1, "ceil_mode": True},
    ):
        ours, index = F.max_pool2d(aa.tensor(x, device=device), return_indices=True, **kwargs)
        theirs, their_index = tf.max_pool2d(torch.tensor(x), return_indices=True, **kwargs)
        np.testing.assert_array_equal(to_numpy(ours), theirs.numpy())
        np.testing.assert_array_equal(to_numpy(index), their_index.numpy())


def test_max_pools_pick_the_last_nan_as_torch_does(torch, device) -> None:
    x = _r(1, 2, 4, 4)
    x[0, 0, 0, 0] = x[0, 0, 1, 1] = x[0, 1, 3, 2] = np.nan
    tf = torch.nn.functional
    against_torch(
        torch,
        lambda t: F.max_pool2d(t, 2, return_indices=True),
        lambda t: tf.max_pool2d(t, 2, return_indices=True),
        x,
        device=device,
        grad=[False],
    )
    against_torch(
        torch,
        lambda t: F.adaptive_max_pool2d(t, (1, 2), return_indices=True),
        lambda t: tf.adaptive_max_pool2d(t, (1, 2), return_indices=True),
        x,
        device=device,
        grad=[False],
    )


TILING_CASES = [  # windows that cover the input exactly once: the backward's one-copy path
    (lambda m: m.max_pool2d, 2, (3, 4, 8, 8)),
    (lambda m: m.max_pool2d, (2, 4), (2, 3, 6, 8)),
    (lambda m: m.max_pool1d, 3, (2, 3, 9)),
]


@pytest.mark.parametrize(("pick", "kernel", "shape"), TILING_CASES)
def test_max_pool_tiling_windows_match_torch_with_ties(torch, device, pick, kernel, shape) -> None:
    tf = torch.nn.functional
    for x in (_r(*shape), np.round(_r(*shape))):  # rounded: ties, where the first offset wins
        against_torch(
            torch,
            lambda t: pick(F)(t, kernel, return_indices=True),
            lambda t: pick(tf)(t, kernel, return_indices=True),
            x,
            device=device,
        )


def test_max_pool_gradient_goes_to_the_last_nan_as_torch_does(torch, device) -> None:
    x = _r(2, 2, 4, 6)
    x[0, 0, 0, 0] = x[0, 0, 1, 1] = x[1, 1, 2, 3] = np.nan
    g = _r(2, 2, 2, 3)
    for kwargs in ({"kernel_size": 2}, {"kernel_size": 3, "stride": 2, "padding": 1}):
        ours = aa.tensor(x, device=device, requires_grad=True)
        F.max_pool2d(ours, **kwargs).backward(aa.tensor(g, device=device))
        theirs = torch.tensor(x, requires_grad=True)
        torch.nn.functional.max_pool2d(theirs, **kwargs).backward(torch.tensor(g))
        # Overlapping windows add in another order than torch's: equal up to rounding.
        np.testing.assert_allclose(to_numpy(ours.grad), theirs.grad.numpy(), rtol=1e-14)


def test_max_pool_integer_input_matches_torch(torch, device) -> None:
    x = RNG.integers(-5, 5, (2, 3, 6, 6))
    for kwargs in ({"kernel_size": 2}, {"kernel_size": 3, "stride": 2, "padding": 1}):
        ours, index = F.max_pool2d(aa.tensor(x, device=device), return_indices=True, **kwargs)
        theirs, their_index = torch.nn.functional.max_pool2d(
            torch.tensor(x), return_indices=True, **kwargs
        )
        np.testing.assert_array_equal(to_numpy(ours), theirs.numpy())
        np.testing.assert_array_equal(to_numpy(index), their_index.numpy())


def test_tiling_max_pool_gradgradcheck(device) -> None:
    x = aa.tensor(_r(1, 2, 4, 6), device=device, requires_grad=True)
    assert gradcheck(lambda t: F.max_pool2d(t, 2), (x,))
    assert gradgradcheck(lambda t: F.max_pool2d(t, 2), (x,))
