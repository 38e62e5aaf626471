"""nn.DataParallel: a batch split over two sim devices gives the one-device gradients."""

from __future__ import annotations

import numpy as np
import pytest

import autograd_async as aa
import autograd_async.nn as nn


def model() -> nn.Module:
    aa.manual_seed(0)
    return nn.Sequential(nn.Linear(5, 16), nn.Tanh(), nn.Linear(16, 3)).to(dtype=aa.float64)


@pytest.mark.parametrize("batch", [6, 7, 1])
def test_two_devices_give_the_full_batch_gradients(batch):
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(batch, 5)), rng.normal(size=(batch, 3))
    reference = model()
    ((reference(aa.tensor(x)) - aa.tensor(y)) ** 2).mean().backward()

    net = model().to("sim:0")
    dp = nn.DataParallel(net, device_ids=["sim:0", "sim:1"])
    out = dp(aa.tensor(x, device="sim:0"))
    assert out.device == aa.device("sim:0") and tuple(out.shape) == (batch, 3)
    ((out - aa.tensor(y, device="sim:0")) ** 2).mean().backward()
    for (name, p), q in zip(net.named_parameters(), reference.parameters()):
        assert p.grad.device == aa.device("sim:0")
        diff = np.abs(p.grad.cpu().numpy() - q.grad.numpy()).max()
        assert diff <= 1e-10, (name, diff)
    assert list(dp.state_dict()) == [f"module.{k}" for k in net.state_dict()]


def test_parameters_must_be_on_the_first_device():
    with pytest.raises(RuntimeError, match=r"device_ids\[0\]"):
        nn.DataParallel(model(), device_ids=["sim:0", "sim:1"])
