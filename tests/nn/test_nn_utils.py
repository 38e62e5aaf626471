"""nn.utils against PyTorch: clipping by norm (every norm type, several devices) and by value,
and parameters to a vector and back."""

from __future__ import annotations

import math

import numpy as np
import pytest

import autograd_async as aa
from autograd_async import nn
from autograd_async.nn.utils import (
    clip_grad_norm_,
    clip_grad_value_,
    parameters_to_vector,
    vector_to_parameters,
)

SHAPES = [(3, 4), (5,), ()]


def _pairs(torch, dtype="float32", devices=("cpu", "cpu", "cpu"), scale=1.0):
    rng = np.random.default_rng(0)
    ours, theirs = [], []
    for shape, device in zip(SHAPES, devices, strict=True):
        value = rng.standard_normal(shape).astype(dtype)
        grad = (rng.standard_normal(shape) * scale).astype(dtype)
        p = nn.Parameter(aa.tensor(value, device=device))
        p.grad = aa.tensor(grad, device=device)
        q = torch.nn.Parameter(torch.tensor(value))
        q.grad = torch.tensor(grad)
        ours.append(p)
        theirs.append(q)
    return ours, theirs


@pytest.mark.parametrize("norm_type", [2.0, 1, 3.5, math.inf, "inf"])
@pytest.mark.parametrize("max_norm", [0.5, 1e3])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_clip_grad_norm_matches_torch(torch, norm_type, max_norm, dtype):
    ours, theirs = _pairs(torch, dtype)
    norm_type = float(norm_type)
    total = clip_grad_norm_(ours, max_norm, norm_type)
    expected = torch.nn.utils.clip_grad_norm_(theirs, max_norm, norm_type, foreach=False)
    rtol = 1e-5 if dtype == "float32" else 1e-12
    assert total.dtype == np.dtype(dtype) and total.ndim == 0
    np.testing.assert_allclose(float(total), float(expected), rtol=rtol)
    for p, q in zip(ours, theirs, strict=True):
        np.testing.assert_allclose(np.asarray(p.grad), q.grad.numpy(), rtol=rtol, atol=1e-7)


def test_clip_grad_norm_across_devices_matches_one_device(torch):
    spread_out, theirs = _pairs(torch, devices=("sim:0", "cpu", "sim:1"))
    total = clip_grad_norm_(spread_out, 0.5)
    expected = torch.nn.utils.clip_grad_norm_(theirs, 0.5)
    assert str(total.device) == "sim:0"
    np.testing.assert_allclose(float(total), float(expected), rtol=1e-5)
    for p, q in zip(spread_out, theirs, strict=True):
        assert p.grad.device == p.device
        np.testing.assert_allclose(np.asarray(p.grad), q.grad.numpy(), rtol=1e-5, atol=1e-7)


def test_clip_bumps_gradient_versions_and_skips_parameters_without_grad():
    p, q = nn.Parameter(aa.ones(3)), nn.Parameter(aa.ones(2))
    p.grad = aa.full((3,), 10.0)
    before = p.grad._version
    total = clip_grad_norm_([p, q], 1.0)
    assert q.grad is None and p.grad._version > before
    assert float(total) == pytest.approx(math.sqrt(300), rel=1e-6)
    np.testing.assert_allclose(np.linalg.norm(np.asarray(p.grad)), 1.0, rtol=1e-5)
    assert float(clip_grad_norm_([q], 1.0)) == 0.0


def test_clip_grad_norm_nonfinite(torch):
    p = nn.Parameter(aa.zeros(2))
    p.grad = aa.tensor([1.0, math.inf])
    with pytest.raises(RuntimeError, match="non-finite, so it cannot be clipped"):
        clip_grad_norm_([p], 1.0, error_if_nonfinite=True)
    assert math.isinf(float(clip_grad_norm_(p, 1.0, foreach=True)))


def test_clip_grad_value_matches_torch(torch):
    ours, theirs = _pairs(torch, scale=3.0)
    clip_grad_value_(ours, 1.5)
    torch.nn.utils.clip_grad_value_(theirs, 1.5)
    for p, q in zip(ours, theirs, strict=True):
        np.testing.assert_array_equal(np.asarray(p.grad), q.grad.numpy())


def test_parameters_to_vector_and_back(torch):
    ours, theirs = _pairs(torch, "float64")
    vec = parameters_to_vector(ours)
    for p in ours:
        p.grad = None
    np.testing.assert_array_equal(
        np.asarray(vec.detach()), torch.nn.utils.parameters_to_vector(theirs).detach().numpy()
    )
    (vec * vec).sum().backward()  # differentiable, as in PyTorch
    np.testing.assert_allclose(np.asarray(ours[0].grad), 2 * np.asarray(ours[0].detach()))
    fresh = aa.arange(vec.shape[0], dtype="float64")
    vector_to_parameters(fresh, ours)
    assert tuple(ours[0].shape) == (3, 4) and float(ours[2]) == 17.0
    np.testing.assert_array_equal(np.asarray(ours[1].detach()), np.arange(12, 17))
    assert ours[0].requires_grad and ours[0].is_leaf


def test_vector_errors():
    params = [nn.Parameter(aa.zeros(2)), nn.Parameter(aa.zeros(2, device="sim:0"))]
    with pytest.raises(TypeError, match="different devices"):
        parameters_to_vector(params)
    with pytest.raises(TypeError, match="expected Tensor, but got: list"):
        vector_to_parameters([1.0, 2.0], params[:1])
    with pytest.raises(ValueError, match="expected a vector of 2 elements"):
        vector_to_parameters(aa.zeros(3), params[:1])
