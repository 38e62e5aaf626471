"""3-d and adaptive N-d pooling, the *_with_indices forms, max_unpool, lp_pool and fractional max
pooling against PyTorch (values, indices, VJPs) and gradcheck in float64, on every device."""

from __future__ import annotations

import numpy as np
import pytest
from torch_reference import check_like_torch

import autograd_async as aa

RNG = np.random.default_rng(0)
X5 = RNG.standard_normal((2, 3, 5, 6, 7))
X4 = RNG.standard_normal((2, 3, 9, 8))
X3 = RNG.standard_normal((2, 3, 11))

POOLS = [
    (lambda lib, T, x: lib.nn.functional.max_pool3d(x, 2, 1, 1), X5),
    (
        lambda lib, T, x: lib.nn.functional.max_pool3d(
            x, (2, 3, 2), 2, ceil_mode=True, return_indices=True
        ),
        X5,
    ),
    (lambda lib, T, x: lib.nn.functional.max_pool3d_with_indices(x, 3, 2, 1, dilation=1), X5[0]),
    (lambda lib, T, x: lib.nn.functional.max_pool2d_with_indices(x, 3, 2, 1), X4),
    (lambda lib, T, x: lib.nn.functional.max_pool1d_with_indices(x, 3, 2), X3),
    (lambda lib, T, x: lib.nn.functional.avg_pool3d(x, 3, 2, 1, count_include_pad=False), X5),
    (
        lambda lib, T, x: lib.nn.functional.avg_pool3d(
            x, 2, 1, 1, ceil_mode=True, divisor_override=3
        ),
        X5[0],
    ),
    (lambda lib, T, x: lib.nn.functional.adaptive_avg_pool3d(x, (2, 4, None)), X5),
    (lambda lib, T, x: lib.nn.functional.adaptive_avg_pool3d(x, 3), X5[0]),
    (lambda lib, T, x: lib.nn.functional.adaptive_max_pool3d(x, (2, 4, 3), True), X5),
    (lambda lib, T, x: lib.nn.functional.adaptive_max_pool3d_with_indices(x, 4), X5[1]),
    (lambda lib, T, x: lib.nn.functional.adaptive_max_pool1d(x, 4, True), X3),
    (lambda lib, T, x: lib.nn.functional.adaptive_max_pool1d_with_indices(x, 5), X3[0]),
    (lambda lib, T, x: lib.nn.functional.adaptive_max_pool2d_with_indices(x, (3, None)), X4),
    (lambda lib, T, x: lib.nn.functional.lp_pool1d(x, 2, 3), X3),
    (lambda lib, T, x: lib.nn.functional.lp_pool2d(x, 1.5, (3, 2), 2, True), np.abs(X4) + 0.1),
    (lambda lib, T, x: lib.nn.functional.lp_pool2d(x, float("inf"), 2), X4),
    (lambda lib, T, x: lib.nn.functional.lp_pool2d(x, -float("inf"), 2), X4),
    (lambda lib, T, x: lib.nn.functional.lp_pool3d(x, 3, 2, 1), np.abs(X5) + 0.1),
]


@pytest.mark.parametrize("case", range(len(POOLS)))
def test_pooling_matches_torch(torch, device, case) -> None:
    fn, x = POOLS[case]
    check_like_torch(torch, device, fn, x)


def test_adaptive_max_pool_picks_the_last_nan_and_first_of_ties(torch) -> None:
    x = np.zeros((1, 1, 4, 2, 3))
    x[0, 0, 1, 1, 2] = np.nan
    x[0, 0, 0, 1, 1] = np.nan
    ours = aa.nn.functional.adaptive_max_pool3d(aa.tensor(x), (2, 1, 1), True)
    theirs = torch.nn.functional.adaptive_max_pool3d(torch.tensor(x), (2, 1, 1), True)
    np.testing.assert_array_equal(np.asarray(ours[1]), theirs[1].numpy())


@pytest.mark.parametrize("dims", [1, 2, 3])
def test_max_unpool_inverts_max_pool_like_torch(torch, device, dims) -> None:
    shape = {1: (2, 3, 8), 2: (2, 3, 6, 8), 3: (3, 4, 6, 4)}[dims]
    x = RNG.standard_normal(shape)
    pool = getattr(torch.nn.functional, f"max_pool{dims}d")
    pooled, indices = pool(torch.tensor(x), 2, return_indices=True)
    index = indices.numpy()
    size = [s + 1 for s in shape[-dims:]]

    def fn(lib, T, t):
        unpool = getattr(lib.nn.functional, f"max_unpool{dims}d")
        return unpool(t, T(index), 2, output_size=size)

    check_like_torch(torch, device, fn, pooled.numpy())


@pytest.mark.parametrize(
    "call",
    [
        lambda lib: lib.nn.functional.max_unpool2d(
            lib.zeros(1, 2, 2, 2), lib.zeros(1, 2, 2, 2, dtype=lib.int64) + 100, 2
        ),
        lambda lib: lib.nn.functional.max_unpool1d(
            lib.zeros(1, 2, 2), lib.zeros(1, 2, 2, dtype=lib.int64) + 100, 2
        ),
        lambda lib: lib.nn.functional.max_unpool3d(
            lib.zeros(2, 2, 2), lib.zeros(2, 2, 2, dtype=lib.int64), 2
        ),
        lambda lib: lib.nn.functional.max_unpool2d(lib.zeros(2, 2, 2), lib.zeros(2, 2, 2), 2),
        lambda lib: lib.nn.functional.max_unpool2d(
            lib.zeros(1, 2, 2, 2), lib.zeros(1, 1, 2, 2, dtype=lib.int64), 2
        ),
        lambda lib: lib.nn.functional.max_unpool2d(
            lib.zeros(1, 2, 2, 2), lib.zeros(1, 2, 2, 2, dtype=lib.int64), 2, output_size=[9, 9]
        ),
    ],
)
def test_max_unpool_errors_match_torch(torch, call) -> None:
    with pytest.raises(Exception) as theirs:
        call(torch)
    with pytest.raises(type(theirs.value), match=None) as ours:
        call(aa)
    assert str(ours.value) == str(theirs.value)


@pytest.mark.parametrize("dims", [2, 3])
def test_fractional_max_pool_matches_torch_for_given_samples(torch, device, dims) -> None:
    x = X4 if dims == 2 else X5
    samples = RNG.random((2, 3, dims))
    kernel, out = ((3, 2), (4, 5)) if dims == 2 else ((2, 3, 2), (3, 3, 5))

    def fn(lib, T, t, s):
        pool = getattr(lib.nn.functional, f"fractional_max_pool{dims}d")
        return pool(t, kernel, output_size=out, return_indices=True, _random_samples=s.detach())

    check_like_torch(torch, device, fn, x, samples)


def test_fractional_max_pool_by_ratio_unbatched(torch, device) -> None:
    samples = RNG.random((1, 3, 2))

    def fn(lib, T, t, s):
        return lib.nn.functional.fractional_max_pool2d_with_indices(
            t, 2, output_ratio=(0.5, 0.7), _random_samples=s.detach()
        )

    check_like_torch(torch, device, fn, X4[0], samples)


def test_fractional_max_pool_draws_windows_that_fit(device) -> None:
    x = aa.tensor(X4, device=device, requires_grad=True)
    out, indices = aa.nn.functional.fractional_max_pool2d(
        x, 3, output_size=(5, 4), return_indices=True
    )
    assert tuple(out.shape) == (2, 3, 5, 4)
    flat = np.asarray(x.detach()).reshape(2, 3, -1)
    picked = np.take_along_axis(flat, np.asarray(indices).reshape(2, 3, -1), -1)
    np.testing.assert_array_equal(picked.reshape(out.shape), np.asarray(out.detach()))


@pytest.mark.parametrize(
    "call",
    [
        lambda lib: lib.nn.functional.fractional_max_pool2d(
            lib.zeros(1, 2, 5, 5), 3, output_size=4
        ),
        lambda lib: lib.nn.functional.fractional_max_pool3d(
            lib.zeros(1, 2, 2, 5, 5), 3, output_size=2
        ),
        lambda lib: lib.nn.functional.fractional_max_pool2d(lib.zeros(1, 2, 5, 5), 2),
        lambda lib: lib.nn.functional.fractional_max_pool2d(
            lib.zeros(1, 2, 5, 5), 2, output_size=2, _random_samples=lib.zeros(1, 3, 2)
        ),
    ],
)
def test_fractional_max_pool_errors_match_torch(torch, call) -> None:
    with pytest.raises(Exception) as theirs:
        call(torch)
    with pytest.raises(type(theirs.value)) as ours:
        call(aa)
    assert str(ours.value) == str(theirs.value)
