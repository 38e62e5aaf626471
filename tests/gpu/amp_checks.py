"""Mixed-precision checks shared by the GPU test (on cuda) and its sim rehearsal (on sim)."""

from __future__ import annotations

import numpy as np

import autograd_async as aa
from autograd_async import nn


def check_half_matmuls(device: str, device_type: str) -> None:
    """float16 products under autocast: low-precision outputs, float32 gradients, right values."""
    rng = np.random.default_rng(0)
    x_host = rng.normal(size=(64, 256)).astype(np.float32)
    w_host = (rng.normal(size=(128, 256)) / 16).astype(np.float32)
    reference = x_host @ w_host.T

    a = aa.tensor(x_host, device=device).half()
    b = aa.tensor(w_host.T.copy(), device=device).half()
    product = a @ b
    assert product.dtype == aa.float16 and str(product.device) == device
    np.testing.assert_allclose(product.float().cpu().numpy(), reference, rtol=2e-2, atol=2e-2)

    layer = nn.Linear(256, 128).to(device)
    with aa.no_grad():
        layer.weight.copy_(aa.tensor(w_host, device=device))
        layer.bias.zero_()
    x = aa.tensor(x_host, device=device, requires_grad=True)
    with aa.autocast(device_type):
        out = layer(x)
        assert out.dtype == aa.float16  # linear is on the lower-precision list
        loss = out.float().pow(2).mean()  # float32 reduction, as a user would
    loss.backward()
    assert layer.weight.grad.dtype == aa.float32 and x.grad.dtype == aa.float32
    expected_grad_x = (2 * reference / reference.size) @ w_host
    np.testing.assert_allclose(x.grad.cpu().numpy(), expected_grad_x, rtol=5e-2, atol=1e-4)


def check_grad_scaler_skips_inf(device: str, device_type: str) -> None:
    """A step whose scaled gradients overflow float16 is skipped and the scale backs off."""
    layer = nn.Linear(8, 4).to(device)
    opt = aa.optim.SGD(layer.parameters(), lr=0.1)
    scaler = aa.amp.GradScaler(device_type, init_scale=2.0**16)
    before = layer.weight.detach().cpu().numpy().copy()
    x = aa.full((2, 8), 6.0e4, device=device)  # the float16 output overflows to inf
    with aa.autocast(device_type):
        loss = layer(x).float().sum()
    scaler.scale(loss).backward()
    scaler.step(opt)
    scaler.update()
    np.testing.assert_array_equal(layer.weight.detach().cpu().numpy(), before)
    assert scaler.get_scale() == 2.0**15
