"""affine_grid and grid_sample against PyTorch: every mode, padding mode and align_corners, in 2
and 3 spatial dims; values, VJPs for input and grid, and gradcheck in float64, on every device."""

from __future__ import annotations

import numpy as np
import pytest
from torch_reference import check_like_torch

import autograd_async as aa

RNG = np.random.default_rng(0)
X4 = RNG.standard_normal((1, 2, 3, 4))
G4 = RNG.uniform(-1.3, 1.3, (1, 3, 2, 2))
X5 = RNG.standard_normal((1, 2, 3, 3, 4))
G5 = RNG.uniform(-1.2, 1.2, (1, 2, 2, 3, 3))


@pytest.mark.parametrize("mode", ["bilinear", "nearest", "bicubic"])
@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align_corners", [False, True])
def test_grid_sample_2d_matches_torch(torch, device, mode, padding_mode, align_corners) -> None:
    def fn(lib, T, x, grid):
        return lib.nn.functional.grid_sample(x, grid, mode, padding_mode, align_corners)

    # nearest's gradient with respect to the grid is zero; gradcheck needs continuity
    check_like_torch(torch, device, fn, X4, G4, check_grads=mode != "nearest")


@pytest.mark.parametrize("mode", ["bilinear", "nearest"])
@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
def test_grid_sample_3d_matches_torch(torch, device, mode, padding_mode) -> None:
    def fn(lib, T, x, grid):
        return lib.nn.functional.grid_sample(x, grid, mode, padding_mode, align_corners=False)

    check_like_torch(torch, device, fn, X5, G5, check_grads=mode != "nearest")


def test_nearest_input_gradient_matches_torch(torch) -> None:
    x = aa.tensor(X4, requires_grad=True)
    tx = torch.tensor(X4, requires_grad=True)
    aa.nn.functional.grid_sample(x, aa.tensor(G4), "nearest", align_corners=True).sum().backward()
    torch.nn.functional.grid_sample(
        tx, torch.tensor(G4), "nearest", align_corners=True
    ).sum().backward()
    np.testing.assert_allclose(np.asarray(x.grad), tx.grad.numpy())


@pytest.mark.parametrize("align_corners", [False, True])
def test_affine_grid_matches_torch(torch, device, align_corners) -> None:
    def two(lib, T, theta):
        return lib.nn.functional.affine_grid(theta, [2, 3, 4, 5], align_corners)

    def three(lib, T, theta):
        return lib.nn.functional.affine_grid(theta, [2, 3, 4, 2, 5], align_corners)

    check_like_torch(torch, device, two, RNG.standard_normal((2, 2, 3)))
    check_like_torch(torch, device, three, RNG.standard_normal((2, 3, 4)))


def test_identity_transform_samples_the_input_back(device) -> None:
    theta = aa.tensor([[[1.0, 0, 0], [0, 1.0, 0]]], device=device, dtype=aa.float64)
    grid = aa.nn.functional.affine_grid(theta, [1, 2, 3, 4], align_corners=False)
    x = aa.tensor(X4, device=device)
    out = aa.nn.functional.grid_sample(x, grid, align_corners=False)
    np.testing.assert_allclose(np.asarray(out.cpu()), X4, atol=1e-12)


@pytest.mark.filterwarnings("ignore:Default grid_sample")
@pytest.mark.parametrize(
    "call",
    [
        lambda lib: lib.nn.functional.grid_sample(lib.ones(2, 3, 4, 5), lib.ones(3, 3, 2)),
        lambda lib: lib.nn.functional.grid_sample(lib.ones(2, 3, 4, 5), lib.ones(1, 3, 3, 2)),
        lambda lib: lib.nn.functional.grid_sample(lib.ones(2, 3, 4, 5), lib.ones(2, 3, 3, 3)),
        lambda lib: lib.nn.functional.grid_sample(
            lib.ones(2, 3, 1, 4, 5), lib.ones(2, 3, 3, 3, 3), mode="bicubic"
        ),
        lambda lib: lib.nn.functional.grid_sample(
            lib.ones(1, 1, 2, 2), lib.ones(1, 1, 1, 2), mode="area"
        ),
        lambda lib: lib.nn.functional.grid_sample(
            lib.ones(1, 1, 2, 2), lib.ones(1, 1, 1, 2), padding_mode="wrap"
        ),
        lambda lib: lib.nn.functional.affine_grid(lib.ones(2, 3, 3), [2, 3, 4, 5], False),
        lambda lib: lib.nn.functional.affine_grid(lib.ones(2, 3, 4), [2, 3, 4, 5, 2, 2], False),
        lambda lib: lib.nn.functional.affine_grid(
            lib.ones(2, 2, 3, dtype=lib.int64), [2, 3, 4, 5], False
        ),
        lambda lib: lib.nn.functional.affine_grid(lib.ones(2, 2, 3), [2, 3, 0, 5], False),
    ],
)
def test_errors_match_torch(torch, call) -> None:
    with pytest.raises(Exception) as theirs:
        call(torch)
    with pytest.raises(type(theirs.value)) as ours:
        call(aa)
    assert str(ours.value) == str(theirs.value)


def test_missing_align_corners_warns_as_torch_does() -> None:
    with pytest.warns(UserWarning, match="Default grid_sample and affine_grid behavior"):
        aa.nn.functional.grid_sample(aa.ones(1, 1, 2, 2), aa.zeros(1, 1, 1, 2))
