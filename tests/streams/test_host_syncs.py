"""The class-index losses read the targets back from the device once per step (defect 7)."""

from __future__ import annotations

import numpy as np
import pytest

import autograd_async as aa
from autograd_async.ops.losses import check_target_bounds, target_summary


def test_target_summary_without_ignored_targets():
    assert target_summary(np.array([3, 0, 7]), -100) == (0, 7, 3)


def test_target_summary_leaves_ignored_targets_out():
    data = np.array([2, -100, 5, -100])
    assert target_summary(data, -100) == (2, 5, 2)
    assert target_summary(np.array([4, 4]), 4)[2] == 0
    assert target_summary(np.array([], dtype=np.int64), -100) == (0, -1, 0)


def test_bounds_are_checked_only_on_targets_that_count():
    assert check_target_bounds(np.array([1, 9, -1]), 10, -1) == 2
    with pytest.raises(IndexError, match="Target 10 is out of bounds"):
        check_target_bounds(np.array([1, 10, -1]), 10, -1)
    with pytest.raises(IndexError, match="Target -2 is out of bounds"):
        check_target_bounds(np.array([1, -2]), 10, -100)


@pytest.mark.parametrize("device", ["cpu", "sim:0"])
def test_cross_entropy_with_ignored_targets_matches_torch(device, torch):
    logits = np.random.default_rng(0).standard_normal((6, 4)).astype(np.float32)
    target = np.array([0, 3, -100, 2, -100, 1])
    x = aa.tensor(logits, device=device, requires_grad=True)
    loss = aa.nn.functional.cross_entropy(x, aa.tensor(target, device=device))
    loss.backward()
    tx = torch.tensor(logits, requires_grad=True)
    expected = torch.nn.functional.cross_entropy(tx, torch.tensor(target))
    expected.backward()
    np.testing.assert_allclose(float(loss.item()), expected.item(), rtol=1e-5)
    np.testing.assert_allclose(x.grad.cpu().numpy(), tx.grad.numpy(), rtol=1e-5, atol=1e-7)
