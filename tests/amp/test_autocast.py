"""autocast against torch.autocast: the dtype each op runs in, values, gradients, nesting,
per-task scope, the decorator form and the state functions."""

from __future__ import annotations

import asyncio
import threading

import numpy as np
import pytest

import autograd_async as aa
from tests.gradients import to_numpy

RNG = np.random.default_rng(0)
A = RNG.standard_normal((4, 6)).astype(np.float32)
B = RNG.standard_normal((6, 5)).astype(np.float32)
BATCH = RNG.standard_normal((2, 4, 6)).astype(np.float32)
IMAGE = RNG.standard_normal((2, 3, 6, 6)).astype(np.float32)
KERNEL = RNG.standard_normal((4, 3, 3, 3)).astype(np.float32)
TARGET = np.array([1, 0, 3, 2])


def _cases(m, F, half):  # noqa: N803 - torch.nn.functional's usual name
    """(name, thunk) pairs of the same expressions in either library (`m` is aa or torch)."""
    t = m.tensor
    a, b, batch = t(A), t(B), t(BATCH)
    return [
        ("mm", lambda: m.mm(a, b)),
        ("matmul", lambda: m.matmul(a, b)),
        ("matmul_batched", lambda: m.matmul(batch, b)),
        ("bmm", lambda: m.bmm(batch, batch.transpose(1, 2))),
        ("addmm", lambda: m.addmm(t(A[:, :5]), a, b)),
        ("baddbmm", lambda: m.baddbmm(t(BATCH[:, :, :4]), batch, batch.transpose(1, 2))),
        ("linear", lambda: F.linear(a, t(B.T), t(B[0]))),
        ("conv2d", lambda: F.conv2d(t(IMAGE), t(KERNEL), t(KERNEL[:, 0, 0, 0]))),
        ("conv1d", lambda: F.conv1d(t(IMAGE[:, :, 0]), t(KERNEL[:, :, 0]))),
        ("conv_transpose2d", lambda: F.conv_transpose2d(t(IMAGE), t(KERNEL.transpose(1, 0, 2, 3)))),
        ("sdpa", lambda: F.scaled_dot_product_attention(batch, batch, batch)),
        ("einsum", lambda: m.einsum("ij,jk->ik", a, b)),
        ("relu_of_mm", lambda: m.relu(m.mm(a, b))),
        ("softmax", lambda: m.softmax(m.mm(a, b), 1)),
        ("log_softmax", lambda: m.log_softmax(m.mm(a, b), 1)),
        ("sum", lambda: m.mm(a, b).sum()),
        ("exp", lambda: m.exp(m.mm(a, b))),
        ("add_mixed", lambda: m.mm(a, b) + t(B[0])),
        ("cat_mixed", lambda: m.cat([m.mm(a, b), t(A[:, :5])])),
        ("stack_mixed", lambda: m.stack([m.mm(a, b), t(A[:, :5])])),
        ("mse_loss", lambda: F.mse_loss(m.mm(a, b), t(A[:, :5]))),
        ("l1_loss", lambda: F.l1_loss(m.mm(a, b), t(A[:, :5]))),
        ("smooth_l1_loss", lambda: F.smooth_l1_loss(m.mm(a, b), t(A[:, :5]))),
        ("cross_entropy", lambda: F.cross_entropy(m.mm(a, b), t(TARGET))),
        ("nll_loss", lambda: F.nll_loss(m.log_softmax(m.mm(a, b), 1), t(TARGET))),
        (
            "bce",
            lambda: F.binary_cross_entropy(
                m.sigmoid(m.mm(a, b)), t((A[:, :5] > 0).astype(np.float32))
            ),
        ),
        (
            "bce_logits",
            lambda: F.binary_cross_entropy_with_logits(
                m.mm(a, b), t((A[:, :5] > 0).astype(np.float32))
            ),
        ),
        ("prod", lambda: m.prod(m.mm(a, b))),
        ("layer_norm", lambda: F.layer_norm(m.mm(a, b), (5,))),
        ("max_pool", lambda: F.max_pool2d(F.conv2d(t(IMAGE), t(KERNEL)), 2)),
        ("float64_mm", lambda: m.mm(t(A.astype(np.float64)), t(B.astype(np.float64)))),
        ("int_add", lambda: t(TARGET) + 1),
        ("dropout_eval", lambda: F.dropout(m.mm(a, b), 0.5, training=False)),
        ("half_input_mm", lambda: m.mm(a.to(half), b)),
    ]


@pytest.mark.parametrize("low", ["bfloat16", "float16"])
def test_each_op_runs_in_the_dtype_torchs_cpu_autocast_chooses(torch, low):
    ours_cases = _cases(aa, aa.nn.functional, getattr(aa, low))
    theirs_cases = _cases(torch, torch.nn.functional, getattr(torch, low))
    for (name, ours_fn), (_, theirs_fn) in zip(ours_cases, theirs_cases, strict=True):
        with aa.autocast("cpu", dtype=getattr(aa, low)):
            ours = ours_fn()
        with torch.autocast("cpu", dtype=getattr(torch, low)):
            theirs = theirs_fn()
        assert str(ours.dtype) == str(theirs.dtype).removeprefix("torch."), name
        tol = 0.05 if low == "bfloat16" else 0.01
        np.testing.assert_allclose(
            to_numpy(ours).astype(np.float64),
            theirs.double().numpy(),
            rtol=tol,
            atol=tol,
            err_msg=name,
        )


SIM_DTYPES = {  # PyTorch's CUDA lists, which sim devices follow
    "mm": "float16",
    "linear": "float16",
    "conv2d": "float16",
    "bmm": "float16",
    "addmm": "float16",
    "relu_of_mm": "float16",
    "softmax": "float32",
    "log_softmax": "float32",
    "sum": "float32",
    "exp": "float32",
    "add_mixed": "float32",
    "cat_mixed": "float32",
    "mse_loss": "float32",
    "l1_loss": "float32",
    "cross_entropy": "float32",
    "layer_norm": "float32",
    "prod": "float32",
    "float64_mm": "float64",
    "int_add": "int64",
    "half_input_mm": "float16",
}


def test_sim_devices_follow_torchs_cuda_lists():
    for device in ("sim:0", "sim:1"):
        cases = dict(_cases(_OnDevice(device), aa.nn.functional, aa.float16))
        with aa.autocast("sim"):
            assert aa.is_autocast_enabled("sim") and not aa.is_autocast_enabled("cpu")
            for name, expected in SIM_DTYPES.items():
                out = cases[name]()
                assert str(out.dtype) == expected, name
                assert out.device == aa.device(device)


class _OnDevice:
    """`aa` with `tensor` making tensors on one device."""

    def __init__(self, device: str) -> None:
        self.device = device

    def tensor(self, data):
        return aa.tensor(data, device=self.device)

    def __getattr__(self, name):
        return getattr(aa, name)


def test_autocast_on_one_device_type_leaves_the_others_alone():
    a = aa.tensor(A, device="sim:0")
    with aa.autocast("cpu"):
        assert aa.mm(a, aa.tensor(B, device="sim:0")).dtype == aa.float32
        assert aa.mm(aa.tensor(A), aa.tensor(B)).dtype == aa.bfloat16


def test_gradients_flow_back_in_the_leaves_dtypes_and_match_torch(torch):
    for low in ("bfloat16", "float16"):
        ours_w = aa.tensor(B, requires_grad=True)
        ours_x = aa.tensor(A, requires_grad=True)
        theirs_w = torch.tensor(B, requires_grad=True)
        theirs_x = torch.tensor(A, requires_grad=True)
        with aa.autocast("cpu", dtype=getattr(aa, low)):
            loss = aa.nn.functional.cross_entropy(aa.relu(aa.mm(ours_x, ours_w)), aa.tensor(TARGET))
        with torch.autocast("cpu", dtype=getattr(torch, low)):
            their_loss = torch.nn.functional.cross_entropy(
                torch.relu(torch.mm(theirs_x, theirs_w)), torch.tensor(TARGET)
            )
        loss.backward()
        their_loss.backward()
        assert ours_w.grad.dtype == aa.float32 and ours_x.grad.dtype == aa.float32
        np.testing.assert_allclose(to_numpy(ours_w.grad), theirs_w.grad.numpy(), atol=0.03)
        np.testing.assert_allclose(to_numpy(ours_x.grad), theirs_x.grad.numpy(), atol=0.03)


def test_backward_runs_each_op_in_the_dtype_forward_chose():
    x = aa.tensor(A, requires_grad=True)
    with aa.autocast("cpu", dtype=aa.float16):
        hidden = aa.mm(x, aa.tensor(B))
        out = hidden.sum()
    seen = {}

    def keep(g):
        seen["hidden"] = g.dtype

    hidden.register_hook(keep)
    out.backward()
    assert seen["hidden"] == aa.float16  # the gradient of a float16 output is float16
    assert x.grad.dtype == aa.float32


def test_nesting_disabling_and_state_functions():
    assert not aa.is_autocast_enabled("cpu")
    assert aa.get_autocast_dtype("cpu") == aa.bfloat16
    assert aa.get_autocast_dtype("cuda") == aa.float16
    a, b = aa.tensor(A), aa.tensor(B)
    with aa.autocast("cpu"):
        assert aa.is_autocast_enabled("cpu")
        with aa.autocast("cpu", enabled=False):
            assert not aa.is_autocast_enabled("cpu")
            assert aa.mm(a, b).dtype == aa.float32
        with aa.autocast("cpu", dtype=aa.float16):
            assert aa.get_autocast_dtype("cpu") == aa.float16
            assert aa.mm(a, b).dtype == aa.float16
        assert aa.mm(a, b).dtype == aa.bfloat16
        assert aa.get_autocast_dtype("cpu") == aa.bfloat16
    assert not aa.is_autocast_enabled("cpu")
    assert aa.amp.autocast is aa.autocast


def test_decorator_and_unsupported_settings(torch):
    @aa.autocast("cpu")
    def forward(a, b):
        return aa.mm(a, b)

    assert forward(aa.tensor(A), aa.tensor(B)).dtype == aa.bfloat16
    assert aa.mm(aa.tensor(A), aa.tensor(B)).dtype == aa.float32
    with pytest.warns(UserWarning, match="In CPU autocast, but the target dtype is not supported"):
        with aa.autocast("cpu", dtype=aa.float32):
            assert not aa.is_autocast_enabled("cpu")
    with pytest.raises(RuntimeError, match="unsupported autocast device_type"):
        aa.autocast("tpu")


def test_autocast_is_scoped_to_its_thread_and_task():
    seen = {}

    def other_thread():
        seen["thread"] = aa.is_autocast_enabled("cpu")

    async def main():
        async def inside():
            with aa.autocast("cpu"):
                await asyncio.sleep(0.01)
                return aa.mm(aa.tensor(A), aa.tensor(B)).dtype

        async def outside():
            await asyncio.sleep(0.005)
            return aa.is_autocast_enabled("cpu")

        return await asyncio.gather(inside(), outside())

    with aa.autocast("cpu"):
        worker = threading.Thread(target=other_thread)
        worker.start()
        worker.join()
    assert seen["thread"] is False
    assert asyncio.run(main()) == [aa.bfloat16, False]


def test_cached_weight_casts_are_reused_and_refreshed_after_in_place_changes():
    weight = aa.tensor(B.T.copy(), requires_grad=True)
    x = aa.tensor(A)
    with aa.autocast("cpu"):
        first = aa.nn.functional.linear(x, weight)
        second = aa.nn.functional.linear(x, weight)
        np.testing.assert_array_equal(to_numpy(first), to_numpy(second))
        with aa.no_grad():
            weight.mul_(2)
        third = aa.nn.functional.linear(x, weight)
    np.testing.assert_allclose(
        to_numpy(third).astype(np.float32), 2 * to_numpy(first).astype(np.float32), rtol=0.02
    )
    (first.float().sum() + second.float().sum()).backward()
    assert weight.grad is not None and weight.grad.dtype == aa.float32


def test_bfloat16_tensors(torch):
    t = aa.tensor([1.5, -2.25, 3.0]).bfloat16()
    assert t.dtype == aa.bfloat16 and t.is_floating_point()
    assert aa.bfloat16.is_floating_point and aa.bfloat16.itemsize == 2
    assert (t + aa.tensor([1.0, 1.0, 1.0])).dtype == aa.float32
    assert (t * 2).dtype == aa.bfloat16
    np.testing.assert_array_equal(
        to_numpy(t.float()), torch.tensor([1.5, -2.25, 3.0]).bfloat16().float().numpy()
    )


def _digits_cnn(nn):
    return nn.Sequential(
        nn.Conv2d(1, 8, 3, padding=1, bias=False),
        nn.BatchNorm2d(8),
        nn.ReLU(),
        nn.Conv2d(8, 16, 3, padding=1, bias=False),
        nn.BatchNorm2d(16),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Flatten(),
        nn.Linear(16 * 16, 32),
        nn.ReLU(),
        nn.Linear(32, 10),
    )


@pytest.mark.parametrize("low", ["bfloat16", "float16"])
def test_a_cnn_runs_layer_by_layer_in_torchs_dtypes_with_torchs_gradients(torch, low):
    theirs = _digits_cnn(torch.nn)
    ours = _digits_cnn(aa.nn)
    ours.load_state_dict({k: aa.tensor(v.numpy()) for k, v in theirs.state_dict().items()})
    x = np.random.default_rng(3).standard_normal((6, 1, 8, 8)).astype(np.float32)
    y = np.arange(6) % 10
    h, th = aa.tensor(x), torch.tensor(x)
    with aa.autocast("cpu", dtype=getattr(aa, low)):
        for layer in ours:
            h = layer(h)
        loss = aa.nn.functional.cross_entropy(h, aa.tensor(y))
    with torch.autocast("cpu", dtype=getattr(torch, low)):
        dtypes = []
        for layer in theirs:
            th = layer(th)
            dtypes.append(str(th.dtype).removeprefix("torch."))
        their_loss = torch.nn.functional.cross_entropy(th, torch.tensor(y))
    assert str(h.dtype) == dtypes[-1] == low
    assert abs(loss.item() - their_loss.item()) < 0.02
    loss.backward()
    their_loss.backward()
    for (name, p), q in zip(ours.named_parameters(), theirs.parameters(), strict=True):
        assert p.grad.dtype == aa.float32, name
        scale = float(np.abs(q.grad.numpy()).max())
        np.testing.assert_allclose(
            to_numpy(p.grad), q.grad.numpy(), atol=0.03 * scale, err_msg=name
        )
