"""Stream defects a GPU would show and the faithful sim mode catches: each test fails without
its fix (issue 28, defects 3-11), through a stream race, poisoned host memory or a wrong value."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

import autograd_async as aa
from autograd_async.backends.sanitizer import sanitizer
from autograd_async.backends.sim_streams import sim_world


def _side(device: str = "sim:0") -> aa.Stream:
    """A side stream that has waited for the default stream (so it may read its tensors)."""
    s = aa.Stream(device)
    s.wait_stream(aa.current_stream(device))
    return s


def test_3_a_side_stream_node_sums_its_gradients_on_its_stream():
    x = aa.ones(64, device="sim:0", requires_grad=True)
    s = _side()
    with aa.stream(s):
        h = x * 3
        loss = (h * 2 + h * 5).sum()  # h's node, on s, receives two gradients
    aa.current_stream("sim:0").wait_stream(s)
    loss.backward()
    np.testing.assert_allclose(x.grad.cpu().numpy(), 21.0)


def test_3_gradients_handed_over_from_another_device_are_summed_on_the_consumer_stream():
    x = aa.ones(64, device="sim:0", requires_grad=True)
    s = _side()
    with aa.stream(s):
        h = x * 3
    aa.current_stream("sim:0").wait_stream(s)
    a, b = h.to("sim:1"), h.to("sim:1")
    aa.current_stream("sim:1").wait_stream(aa.current_stream("sim:0"))
    (a * 2 + b * 5).sum().backward()
    np.testing.assert_allclose(x.grad.cpu().numpy(), 21.0)


def test_4_a_gradient_copied_back_to_the_host_with_a_dtype_is_read_after_its_copy():
    x = aa.tensor(np.arange(8.0), requires_grad=True)
    y = x.to("sim:0", aa.float32)
    (y * 2).sum().backward()
    assert x.grad.dtype == aa.float64
    np.testing.assert_array_equal(x.grad.numpy(), 2.0)


@pytest.mark.filterwarnings("ignore:Anomaly Detection has been enabled")
def test_4_post_hooks_and_anomaly_checks_read_the_copied_gradient_after_its_copy():
    x = aa.tensor(np.arange(8.0, dtype=np.float32), requires_grad=True)
    y = x.to("sim:0")
    seen = []
    y.grad_fn.register_hook(
        lambda grad_inputs, grad_outputs: seen.append(grad_inputs[0].numpy().copy())
    )
    with aa.autograd.detect_anomaly():
        (y * 2).sum().backward()
    np.testing.assert_array_equal(seen[0], 2.0)
    np.testing.assert_array_equal(x.grad.numpy(), 2.0)


def test_5_a_non_contiguous_copy_between_devices_is_ordered_after_its_temporary():
    x = aa.arange(64.0, device="sim:0").reshape(8, 8)
    y = x[:, :3].to("sim:1")
    np.testing.assert_array_equal(y.cpu().numpy(), np.arange(64.0).reshape(8, 8)[:, :3])


def test_6_clip_grad_norm_over_two_devices_reads_finished_norms():
    a = aa.ones(16, device="sim:0", requires_grad=True)
    b = aa.ones(9, device="sim:1", requires_grad=True)
    (a * 3).sum().backward()
    (b * 4).sum().backward()
    total = aa.nn.utils.clip_grad_norm_([a, b], max_norm=1.0)
    expected = np.sqrt(16 * 9 + 9 * 16)
    np.testing.assert_allclose(float(total.item()), expected, rtol=1e-6)
    np.testing.assert_allclose(a.grad.cpu().numpy(), 3 / (expected + 1e-6), rtol=1e-5)
    np.testing.assert_allclose(b.grad.cpu().numpy(), 4 / (expected + 1e-6), rtol=1e-5)


def test_6_module_to_another_device_is_ordered_after_its_parameters():
    model = aa.nn.Linear(4, 3).to("sim:0")
    with aa.no_grad():
        model.weight.mul_(2)  # written on sim:0's stream just before the move
    moved = model.to("sim:1")
    assert moved.weight.device == aa.device("sim:1")
    assert np.isfinite(moved.weight.detach().cpu().numpy()).all()


def test_7_a_gradient_made_on_one_stream_and_read_on_another_is_not_reused_under_it():
    n = 4096
    x = aa.ones(n, device="sim:0", requires_grad=True)
    h = x * 3  # its node runs on the default stream
    s = _side()
    with aa.stream(s):
        loss = (h * 2).sum()  # h's gradient is made on s, then read on the default stream
    aa.current_stream("sim:0").wait_stream(s)
    loss.backward()
    with aa.stream(s):  # the allocator of s may reuse the block of that gradient now
        fresh = [aa.full((n,), 7.0, device="sim:0") for _ in range(4)]
    aa.current_stream("sim:0").wait_stream(s)
    np.testing.assert_allclose(x.grad.cpu().numpy(), 6.0)
    assert all(float(f.sum().item()) == 7.0 * n for f in fresh)


def test_7_record_stream_keeps_a_block_from_reuse_until_the_stream_is_done():
    n = 1024
    x = aa.ones(n, device="sim:0")
    s = _side()
    with aa.stream(s):
        y = x * 2
    x.record_stream(s)
    del x
    z = aa.zeros(n, device="sim:0")  # may take x's block: only after s's read of it
    aa.current_stream("sim:0").wait_stream(s)
    assert float((y + z).sum().item()) == 2.0 * n


def test_7_without_record_stream_the_reused_block_is_a_race():
    n = 1024
    x = aa.ones(n, device="sim:0")
    s = _side()
    with aa.stream(s):
        y = x * 2
    del x
    with pytest.raises(aa.StreamRaceError):
        aa.zeros(n, device="sim:0")
    del y


def test_8_per_thread_default_streams_are_refused_with_a_clear_error():
    x = aa.ones(8, device="sim:0", requires_grad=True)
    sim_world.per_thread_default = True
    try:
        y = (x * 2).sum()
        with pytest.raises(RuntimeError, match="per-thread default stream"):
            y.backward()
    finally:
        sim_world.per_thread_default = False
        sanitizer.empty_cache()


def test_9_a_task_awaiting_inside_a_stream_block_does_not_split_its_thread():
    x = aa.ones(32, device="sim:0", requires_grad=True)
    s = _side()

    async def main() -> np.ndarray:
        inside, release = asyncio.Event(), asyncio.Event()

        async def holder() -> None:
            with aa.stream(s):
                inside.set()
                await release.wait()

        async def worker() -> np.ndarray:
            await inside.wait()
            loss = (x * 3).sum()  # launched on s, as CuPy's current stream is per thread
            await loss.backward_async()
            grad = (x.grad * 1).cpu().numpy()
            release.set()
            return grad

        _, grad = await asyncio.gather(holder(), worker())
        return grad

    np.testing.assert_allclose(asyncio.run(main()), 3.0)


class _NestedBackward(aa.autograd.Function):
    """Its backward runs a blocking backward of a graph on another side stream, then computes."""

    @staticmethod
    def forward(ctx, x):
        return x * 1

    @staticmethod
    def backward(ctx, g):
        inner = aa.ones(4, device="sim:0", requires_grad=True)
        s2 = _side()
        with aa.enable_grad(), aa.stream(s2):
            w = (inner * 2).sum()
        aa.current_stream("sim:0").wait_stream(s2)
        w.backward()
        return g * 2


def test_10_a_nested_side_stream_node_restores_the_previous_stream():
    x = aa.ones(16, device="sim:0", requires_grad=True)
    s1 = _side()
    with aa.stream(s1):
        h = x * 3
        loss = _NestedBackward.apply(h).sum()
    aa.current_stream("sim:0").wait_stream(s1)
    loss.backward()
    np.testing.assert_allclose(x.grad.cpu().numpy(), 6.0)


def test_11_an_event_recorded_on_another_devices_stream_raises_pytorchs_error():
    e = aa.Event()
    e.record(aa.current_stream("sim:0"))
    with pytest.raises(
        RuntimeError,
        match=r"Event device index 0 does not match recording stream's device index 1\.",
    ):
        e.record(aa.current_stream("sim:1"))
