"""Saved-tensor hooks and save_on_cpu, against PyTorch on the same programs: which tensors the
hooks see, the gradients (first and second order) computed from what they give back, errors, and
that the hooks are scoped to the context (asyncio task, thread) that set them."""

from __future__ import annotations

import asyncio
import threading

import numpy as np
import pytest

import autograd_async as aa

X = np.array([0.5, -1.0, 2.0])


def _record(lib, calls):
    def pack(t):
        calls.append(("pack", tuple(t.shape), t.requires_grad))
        return t.detach() * 1.0  # a copy: nothing of the original is kept

    def unpack(t):
        calls.append(("unpack", tuple(t.shape)))
        return t

    return lib.autograd.graph.saved_tensors_hooks(pack, unpack)


def _square_function(lib):
    class Square(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 2 * g * x

    return Square


def _program(lib, create_graph):
    calls = []
    x = lib.tensor(X, dtype=lib.float64, requires_grad=True)
    w = lib.tensor([2.0, 3.0, -1.0], dtype=lib.float64, requires_grad=True)
    with _record(lib, calls):
        y = (x * x).exp()
        z = (y * w).tanh().sum() + _square_function(lib).apply(x).sum()
    packs = list(calls)
    gx, gw = lib.autograd.grad(z, (x, w), create_graph=create_graph)
    result = [
        packs,
        len(calls) - len(packs),
        np.round(gx.tolist(), 8).tolist(),
        np.round(gw.tolist(), 8).tolist(),
    ]
    if create_graph:
        (ggx,) = lib.autograd.grad(gx.sum(), x)
        result.append(np.round(ggx.tolist(), 6).tolist())
    return result


@pytest.mark.parametrize("create_graph", [False, True])
def test_hooks_see_the_saved_tensors_like_pytorch(torch, create_graph):
    ours = _program(aa, create_graph)
    assert ours == _program(torch, create_graph)
    assert ours[1] > 0  # backward read the saved values through the unpack hook


def _innermost_and_errors(lib):
    seen = []
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    outer = lib.autograd.graph.saved_tensors_hooks(lambda t: seen.append("outer") or t, lambda t: t)
    inner = lib.autograd.graph.saved_tensors_hooks(lambda t: seen.append("inner") or t, lambda t: t)
    with outer:
        with inner:
            (x * x).sum()
        (x * x).sum()
    (x * x).sum()
    with lib.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: 5):
        bad = (x * x).sum()
    try:
        bad.backward()
        error = None
    except TypeError as exc:
        error = str(exc).splitlines()[0]
    return seen, error


def test_innermost_hooks_apply_and_bad_unpack_raises_like_pytorch(torch):
    assert _innermost_and_errors(aa) == _innermost_and_errors(torch)


def test_no_version_check_through_hooks_like_pytorch(torch):
    def program(lib):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        with lib.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
            a = x * 1
            y = a.sin()
        with lib.no_grad():
            a.add_(1.0)
        y.sum().backward()
        return np.round(x.grad.tolist(), 6).tolist()

    assert program(aa) == program(torch)


def _save_on_cpu_program(lib, device):
    x = lib.tensor(X, requires_grad=True)
    h = x.to(device) if device != "cpu" else x
    with lib.autograd.graph.save_on_cpu(pin_memory=False):
        y = (h * h).tanh()
        loss = (y * h).sum()
    loss.backward()
    return np.round(x.grad.tolist(), 6).tolist()


def test_save_on_cpu_gradients_like_pytorch(torch):
    assert _save_on_cpu_program(aa, "cpu") == _save_on_cpu_program(torch, "cpu")


def test_save_on_cpu_keeps_host_copies_and_unpacks_to_the_device():
    seen = []
    x = aa.tensor(X, requires_grad=True, device="sim:0")
    hooks = aa.autograd.graph.save_on_cpu()
    pack, unpack = hooks.pack_hook, hooks.unpack_hook

    def spy_pack(t):
        device, host = pack(t)
        seen.append((str(device), str(host.device), host._data is not t._data))
        return device, host

    def spy_unpack(packed):
        t = unpack(packed)
        seen.append(("unpacked", str(t.device)))
        return t

    with aa.autograd.graph.saved_tensors_hooks(spy_pack, spy_unpack):
        y = (x * x).sum()
    y.backward()
    assert seen[:2] == [("sim:0", "cpu", True)] * 2
    assert seen[2:] == [("unpacked", "sim:0")] * 2
    assert x.grad.device == aa.device("sim:0")
    np.testing.assert_allclose(np.asarray(x.grad), 2 * X.astype(np.float32), rtol=1e-6)
    assert _save_on_cpu_program(aa, "sim:0") == _save_on_cpu_program(aa, "cpu")


async def test_hooks_are_scoped_to_the_task_that_set_them():
    seen = {"a": 0, "b": 0}
    started = asyncio.Event()
    x = aa.tensor([1.0], requires_grad=True)

    async def with_hooks():
        def pack(t):
            seen["a"] += 1
            return t

        with aa.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            started.set()
            await asyncio.sleep(0.01)
            (x * x).sum()

    async def without_hooks():
        await started.wait()
        (x * x).sum()
        seen["b"] += 1

    await asyncio.gather(with_hooks(), without_hooks())
    assert seen == {"a": 2, "b": 1}


def test_hooks_are_scoped_to_the_thread_that_set_them():
    packs = []
    x = aa.tensor([1.0], requires_grad=True)
    inside = threading.Event()
    done = threading.Event()

    def other():
        inside.wait(10)
        (x * x).sum()
        done.set()

    thread = threading.Thread(target=other)
    thread.start()
    with aa.autograd.graph.saved_tensors_hooks(lambda t: packs.append(1) or t, lambda t: t):
        inside.set()
        done.wait(10)
    thread.join(10)
    assert packs == []
