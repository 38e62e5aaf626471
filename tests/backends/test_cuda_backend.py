"""The cuda backend on a real GPU (skipped without one): the CuPy-only behaviour behind
defects 1-5."""

from __future__ import annotations

import numpy as np
import pytest

import autograd_async as aa

from .helpers import needs_gpu, needs_two_gpus

pytestmark = needs_gpu


def _cuda():
    return aa.backends.backends.for_type("cuda")


def test_out_of_range_indices_raise_instead_of_wrapping():
    x = aa.arange(12.0, device="cuda:0").reshape(3, 4)
    with pytest.raises(IndexError, match="index 3 is out of bounds for dimension 0"):
        x[aa.tensor([0, 3], device="cuda:0")]
    with pytest.raises(IndexError, match="index 4 is out of bounds for dimension 1"):
        x[:, aa.tensor([4], device="cuda:0")] = 1.0
    with pytest.raises(IndexError):
        aa.nn.functional.embedding(aa.tensor([5], device="cuda:0"), x)


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_scatter_add_of_complex_values_accumulates_repeated_indices(dtype):
    cupy = _cuda().xp
    values = (np.arange(5) + 1j * np.arange(5, 10)).astype(dtype)
    index = np.array([0, 2, 2, 1, 0])
    out = cupy.zeros(3, dtype)
    _cuda().scatter_add(out, (cupy.asarray(index),), cupy.asarray(values))
    expected = np.zeros(3, dtype)
    np.add.at(expected, index, values)
    np.testing.assert_allclose(out.get(), expected)


def test_complex_gradient_through_repeated_indices():
    x = aa.tensor(np.ones(3, np.complex64), device="cuda:0", requires_grad=True)
    idx = aa.tensor([0, 2, 2], device="cuda:0")
    x[idx].abs().sum().backward()  # the gradient of x[idx] scatter-adds complex values
    np.testing.assert_allclose(np.asarray(x.grad.cpu()), [1, 0, 2])


def test_random_creation_and_dropout_follow_the_seed():
    draws = []
    for _ in range(2):
        aa.manual_seed(4)
        mask = aa.nn.functional.dropout(aa.ones(64, device="cuda:0"), 0.5)
        draws.append(
            [
                np.asarray(t.cpu())
                for t in (
                    aa.rand(5, device="cuda:0"),
                    aa.randn(5, device="cuda:0"),
                    aa.randint(0, 9, (5,), device="cuda:0"),
                    aa.randperm(6, device="cuda:0"),
                    mask,
                )
            ]
        )
    for first, again in zip(*draws, strict=True):
        np.testing.assert_array_equal(first, again)


def test_non_contiguous_copy_between_cuda_and_cpu_and_back():
    x = aa.arange(16.0, device="cuda:0").reshape(4, 4)
    np.testing.assert_array_equal(np.asarray(x[:, :2].cpu()), np.arange(16.0).reshape(4, 4)[:, :2])


@needs_two_gpus
def test_work_on_the_second_gpu_from_the_main_thread():
    x = aa.arange(16.0, device="cuda:0", requires_grad=True)
    y = x.reshape(4, 4)[:, :2].to("cuda:1")  # non-contiguous, across GPUs
    w = aa.nn.Parameter(aa.ones(2, 3, device="cuda:1"))
    aa.nn.init.normal_(w)
    loss = (y @ w).sum() + (y.permute(1, 0) * 2).sum()
    loss.backward()
    opt = aa.optim.Adam([w], lr=0.1)
    opt.step()
    assert x.grad.device == aa.device("cuda:0") and w.grad.device == aa.device("cuda:1")
    assert _cuda().current_device_index() == 0
