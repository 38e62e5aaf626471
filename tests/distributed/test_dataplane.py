"""The data plane as a user meets it: what comes back from a worker is the user's own array.

Large received arrays land in pooled buffers that are lent again once nothing refers to them
(pool.py). These tests check, through a real worker over loopback TCP, that a tensor or a
gradient a user holds is never overwritten by a later receive, that it is writable, and that
odd layouts and dtypes survive the trip; that the sender converts an array in one copy; and
that the worker process reuses freed large blocks instead of faulting in fresh ones.
"""

from __future__ import annotations

import ctypes
import os
import tracemalloc

import numpy as np
import pytest

import autograd_async as ag
from autograd_async import distributed as dist
from autograd_async.distributed import Client, connect, serve
from autograd_async.distributed.pool import MIN_POOLED_BYTES
from autograd_async.distributed.schema import ALLOWED_DTYPES
from autograd_async.distributed.wire import encode_frame
from autograd_async.workers import WorkerServer

from .conftest import TOKEN

pytestmark = pytest.mark.timeout(60)

# Large enough to travel through the receive pool (and straight into the array's memory).
POOLED_FLOATS = 2 * MIN_POOLED_BYTES // 4


@pytest.fixture
async def client():
    """A client of one worker in this process, reached over loopback TCP."""
    worker = WorkerServer("w", token=TOKEN, devices=["cpu"])
    await worker.start()
    host, port = worker.address
    async with Client({"w": f"{host}:{port}"}, token=TOKEN, timeout=20.0) as c:
        yield c
    await worker.stop(grace=2.0)


def receive_pool(client: Client):
    """The receive pool of the client's connection to worker "w"."""
    return client._conns["w"]._protocol.reader.pool


def payload(seed: int, n: int = POOLED_FLOATS) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(n).astype(np.float32)


async def test_call_outputs_stay_the_users_own_across_later_receives(client):
    sent = [payload(i) for i in range(4)]
    y0 = await client.call("w", "clone", ag.from_numpy(sent[0]))
    y1 = await client.call("w", "clone", ag.from_numpy(sent[1]))
    assert not np.shares_memory(y0.numpy(), y1.numpy())
    assert y0.numpy().flags.writeable and y1.numpy().flags.writeable
    y0.add_(1.0)  # the user's array: changing it changes nothing else
    np.testing.assert_array_equal(y1.numpy(), sent[1])
    view = y1.numpy()[::3]  # a view is enough to keep y1's memory from being lent again
    del y1
    reused = receive_pool(client).reused
    y2 = await client.call("w", "clone", ag.from_numpy(sent[2]))
    np.testing.assert_array_equal(view, sent[1][::3])
    np.testing.assert_array_equal(y0.numpy(), sent[0] + 1.0)
    del view
    y3 = await client.call("w", "clone", ag.from_numpy(sent[3]))  # y1's buffer is free now
    assert receive_pool(client).reused > reused
    np.testing.assert_array_equal(y2.numpy(), sent[2])
    np.testing.assert_array_equal(y3.numpy(), sent[3])
    np.testing.assert_array_equal(y0.numpy(), sent[0] + 1.0)


async def test_received_gradients_stay_the_users_own_across_later_backwards(client):
    x = ag.from_numpy(payload(0)).requires_grad_()
    grads = [ag.from_numpy(payload(i)) for i in (1, 2, 3)]
    async with dist.context(client) as ctx:
        y = await client.call("w", "clone", x)
        held = []
        for g in grads:
            x.grad = None
            await dist.backward(ctx, [y], [g], retain_graph=True)
            assert x.grad.numpy().flags.writeable
            held.append(x.grad)
        for g, got in zip(grads, held, strict=True):
            np.testing.assert_array_equal(got.numpy(), g.numpy())
        held[0].numpy()[:] = 0.0  # the user's gradient: the others do not see it
        np.testing.assert_array_equal(held[1].numpy(), grads[1].numpy())
        # Without zeroing in between, backward adds into the gradient it already holds.
        await dist.backward(ctx, [y], [grads[0]], retain_graph=True)
        np.testing.assert_allclose(x.grad.numpy(), grads[2].numpy() + grads[0].numpy())
        np.testing.assert_array_equal(held[1].numpy(), grads[1].numpy())


def odd_arrays() -> dict[str, np.ndarray]:
    """Layouts and dtypes that are not a plain C-ordered little-endian float array."""
    rng = np.random.default_rng(5)
    big = rng.standard_normal((512, 1024))  # 4 MiB of float64: pooled
    return {
        "transposed": big.T,
        "strided": big[:, ::2],
        "big-endian": big.astype(">f4"),
        "big-endian-transposed": big.astype(">f8").T,
        "zero-size": np.zeros((0, 7), np.float32),
        "0-d": np.array(3.5),
        "odd-length-float16": rng.standard_normal(MIN_POOLED_BYTES + 3).astype(np.float16),
        "bool": rng.random(MIN_POOLED_BYTES + 1) > 0.5,
        "complex64": (big + 1j * big[::-1]).astype(np.complex64),
        "uint16": rng.integers(0, 1 << 16, MIN_POOLED_BYTES, dtype=np.uint16),
    }


@pytest.mark.parametrize("name", list(odd_arrays()))
async def test_odd_arrays_round_trip_through_a_worker(client, name):
    sent = odd_arrays()[name]
    if sent.dtype.kind in "fc":  # tensors the worker clones
        got = (await client.call("w", "clone", ag.from_numpy(sent))).numpy()
    else:  # dtypes the tensor library has no ops for travel as plain arrays
        async with await serve(
            lambda info, method, kw, arrays: ({}, arrays), token=TOKEN
        ) as server:
            async with await connect(*server.address, token=TOKEN) as conn:
                _, (got,) = await conn.request("echo", [sent])
    assert got.shape == sent.shape and got.dtype == sent.dtype.newbyteorder("<")
    assert got.flags.c_contiguous and got.flags.writeable
    np.testing.assert_array_equal(got, sent)


@pytest.mark.parametrize("dtype", list(ALLOWED_DTYPES))
async def test_every_dtype_round_trips_through_the_receive_pool(dtype):
    rng = np.random.default_rng(7)
    sent = (rng.random(MIN_POOLED_BYTES) * 100).astype(dtype)
    async with await serve(lambda info, method, kw, arrays: ({}, arrays), token=TOKEN) as server:
        async with await connect(*server.address, token=TOKEN) as conn:
            first = (await conn.request("echo", [sent]))[1][0]
            second = (await conn.request("echo", [sent[::-1]]))[1][0]
    np.testing.assert_array_equal(first, sent)  # not overwritten by the second receive
    np.testing.assert_array_equal(second, sent[::-1])


def test_a_big_endian_transposed_array_is_converted_in_one_copy():
    sent = np.arange(1 << 20, dtype=">f8").reshape(1024, 1024).T  # 8 MiB
    tracemalloc.start()
    try:
        chunks = encode_frame("request", {"id": 1, "method": "m", "kwargs": {}}, [sent])
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 1.5 * sent.nbytes  # one converted copy, not a byte-swapped one and then another
    body = np.frombuffer(chunks[-1], dtype="<f8").reshape(1024, 1024)
    np.testing.assert_array_equal(body, sent)


def minor_faults(pid: int) -> int:
    """Minor page faults of a process so far, from /proc (field 10 of its stat line)."""
    with open(f"/proc/{pid}/stat") as fh:
        return int(fh.read().rsplit(")", 1)[1].split()[7])


async def faults_per_clone(address: str, pid: int, x: ag.Tensor, calls: int = 4) -> float:
    async with Client({"w": address}, token=TOKEN, timeout=30.0) as c:
        for _ in range(2):  # warm up: the heap and the receive pool grow to size
            await c.call("w", "clone", x)
        before = minor_faults(pid)
        for _ in range(calls):
            y = await c.call("w", "clone", x)
            np.testing.assert_array_equal(y.numpy()[-4:], x.numpy()[-4:])
            del y
        return (minor_faults(pid) - before) / calls


async def test_worker_process_reuses_freed_large_blocks(spawn_worker):
    """Past glibc's largest mmap threshold (32 MiB) a freed block is unmapped, and the next one
    of its size is faulted in and zeroed again; the worker process keeps such blocks."""
    if not os.path.exists("/proc/self/stat"):  # pragma: no cover - /proc is Linux's
        pytest.skip("counting page faults needs /proc")
    if not hasattr(ctypes.CDLL(None), "gnu_get_libc_version"):  # pragma: no cover
        pytest.skip("the worker tunes glibc's malloc only")
    x = ag.from_numpy(payload(0, 40 << 18))  # 40 MiB
    kept = spawn_worker("w", devices="cpu", load=False)
    released = spawn_worker("w", devices="cpu", load=False, extra=("--release-freed-memory",))
    faults_kept = await faults_per_clone(kept.address, kept.pid, x)
    faults_released = await faults_per_clone(released.address, released.pid, x)
    # Each clone of 40 MiB maps a new block with the C library's default: at least 20 faults
    # even with 2 MiB pages; reused blocks fault no page in.
    assert faults_released >= 20
    assert faults_kept < faults_released / 4
