"""Ops on every device kind (cpu, sim:N, cuda when present) and errors when devices are mixed."""

from __future__ import annotations

import numpy as np
import pytest
from gradients import check_op, to_numpy

import autograd_async as aa
from autograd_async.nn import functional as F  # noqa: N812

A = np.random.default_rng(0).standard_normal((3, 4))
B = np.random.default_rng(1).standard_normal((4,))

SUBSET = {
    "mul_add": (lambda x, y: x * y + y, lambda a, b: a * b + b),
    "matmul": (lambda x, y: x @ y, lambda a, b: a @ b),
    "sum_dim": (lambda x, y: x.sum(0) * y, lambda a, b: a.sum(0) * b),
    "max_dim": (lambda x, y: x.max(1).values + y[:3], lambda a, b: a.max(1) + b[:3]),
    "index": (lambda x, y: x[[0, 0, 2], 1:] * y[1:], lambda a, b: a[[0, 0, 2], 1:] * b[1:]),
    "cat_view": (
        lambda x, y: aa.cat([x.T, y[:, None]], 1),
        lambda a, b: np.concatenate([a.T, b[:, None]], 1),
    ),
    "softmax": (lambda x, y: F.softmax(x * y, 1), None),
}


def _softmax(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    z = a * b
    e = np.exp(z - z.max(1, keepdims=True))
    return e / e.sum(1, keepdims=True)


@pytest.mark.parametrize("name", sorted(SUBSET))
def test_ops_on_device(device: str, name: str) -> None:
    ours, ref = SUBSET[name]
    check_op(ours, ref or _softmax, A, B, device=device)


def test_results_stay_on_the_device(device: str) -> None:
    x = aa.tensor(A, device=device, requires_grad=True)
    out = (x.relu() @ x.T).logsumexp(1)
    assert out.device == aa.device(device)
    out.sum().backward()
    assert x.grad.device == aa.device(device)
    assert (x > 0).device == aa.device(device)


@pytest.mark.parametrize(
    "combine",
    [
        lambda a, b: a + b,
        lambda a, b: a @ b,
        lambda a, b: aa.cat([a, b]),
        lambda a, b: aa.where(a > 0, a, b),
        lambda a, b: a.add_(b),
    ],
    ids=["add", "matmul", "cat", "where", "add_"],
)
def test_mixing_devices_names_both(combine) -> None:
    a, b = aa.ones(2, 2), aa.ones(2, 2, device="sim:1")
    with pytest.raises(aa.DeviceError, match="cpu and sim:1|sim:1 and cpu"):
        combine(a, b)


def test_copy_between_devices_is_differentiable() -> None:
    src = aa.tensor(B, device="sim:1", requires_grad=True)
    dst = aa.zeros(4, dtype=aa.float64)
    dst.copy_(src * 2)
    dst.sum().backward()
    assert src.grad.device == aa.device("sim:1")
    assert to_numpy(src.grad).tolist() == [2.0] * 4
