"""Comparisons, logical tests and argmax/argmin: bool or integer tensors with no history."""

from __future__ import annotations

import numpy as np
import pytest
from gradients import to_numpy

import autograd_async as aa


def test_comparisons_give_bool_tensors_without_grad() -> None:
    x = aa.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = aa.tensor([3.0, 2.0, 1.0])
    cases = {
        x == y: [False, True, False],
        x != y: [True, False, True],
        x < y: [True, False, False],
        x <= y: [True, True, False],
        x > 2: [False, False, True],
        x >= 2: [False, True, True],
        aa.eq(x, 2.0): [False, True, False],
        aa.ne(x, 2.0): [True, False, True],
        aa.lt(x, 2): [True, False, False],
        aa.le(x, 2): [True, True, False],
        aa.gt(x, y): [False, False, True],
        aa.ge(x, y): [False, True, True],
    }
    for out, expected in cases.items():
        assert out.dtype == aa.bool_ and out.grad_fn is None and not out.requires_grad
        assert out.tolist() == expected


def test_logical_and_float_tests() -> None:
    x = aa.tensor([0.0, float("nan"), float("inf"), 1.0])
    assert aa.isnan(x).tolist() == [False, True, False, False]
    assert aa.isinf(x).tolist() == [False, False, True, False]
    assert aa.isfinite(x).tolist() == [True, False, False, True]
    m = x > 0.5
    assert aa.logical_not(m).tolist() == [True, True, False, False]
    assert (~m).tolist() == [True, True, False, False]
    assert (m & aa.isfinite(x)).tolist() == [False, False, False, True]
    assert (m | aa.isnan(x)).tolist() == [False, True, True, True]


def test_argmax_argmin_have_no_grad() -> None:
    x = aa.tensor([[1.0, 5.0, 2.0], [7.0, 0.0, 7.0]], requires_grad=True)
    assert x.argmax().item() == 3
    assert x.argmax(1).tolist() == [1, 0]
    assert x.argmin(dim=0, keepdim=True).tolist() == [[0, 1, 0]]
    assert x.argmax(1).dtype == aa.int64 and x.argmax(1).grad_fn is None


def test_comparison_device_mixing_names_both(device: str) -> None:
    if device == "cpu":
        pytest.skip("needs two devices")
    with pytest.raises(aa.DeviceError, match=f"cpu and {device}|{device} and cpu"):
        _ = aa.ones(2) < aa.ones(2, device=device)


def test_bitwise_rejects_floats() -> None:
    with pytest.raises(RuntimeError, match="not implemented for 'float32'"):
        ~aa.ones(2)
    assert to_numpy(aa.tensor([5, 3]) // 2).tolist() == [2, 1]
    assert np.allclose(to_numpy(aa.tensor([5.0, -3.0]) % 2), [1.0, 1.0])
