"""The in-memory transport: real workers and the real protocol (codec, handshake, quotas,
backpressure) in one process, without sockets."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

import autograd_async as ag
import tests.distributed.worker_functions  # noqa: F401 - registers tanh_then_peer
from autograd_async import distributed as dist
from autograd_async.distributed import (
    AuthenticationError,
    Channel,
    Client,
    ConnectionClosedError,
    ResourceExhausted,
    Transport,
    WorkerLostError,
    serve,
)
from autograd_async.distributed.memory import MemoryTransport
from autograd_async.workers import WorkerServer

from .conftest import TOKEN

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
async def workers():
    """w1 and w2 in this process, reachable only through one MemoryTransport; w1 knows w2."""
    memory = MemoryTransport()
    w2 = WorkerServer("w2", token=TOKEN, devices=["cpu"], peer_transport=memory)
    w1 = WorkerServer("w1", token=TOKEN, devices=["cpu"], peer_transport=memory, peers={"w2": "w2"})
    for worker in (w1, w2):
        await worker.start(listen=False)
        memory.add(worker.name, worker)
    yield memory, w1, w2
    for worker in (w1, w2):
        await worker.stop(grace=2.0)


@pytest.fixture
async def client(workers):
    memory, *_ = workers
    async with Client({"w1": "w1", "w2": "w2"}, token=TOKEN, timeout=10.0, transport=memory) as c:
        yield c
        for worker in ("w1", "w2"):  # every test leaves no context behind
            assert (await c.stats(worker))["contexts"] == 0


def leaf(shape, seed):
    data = np.random.default_rng(seed).standard_normal(shape)
    return ag.tensor(data, requires_grad=True)


def twin(t):
    return t.detach().clone().requires_grad_()


def test_transports_satisfy_the_protocols():
    memory = MemoryTransport()
    assert isinstance(memory, Transport)
    assert isinstance(Client({}, token=TOKEN).transport, Transport)


async def test_distributed_call_and_backward_in_memory(workers, client):
    _, w1, w2 = workers
    x, w = leaf((4, 5), 0), leaf((5, 3), 1)
    async with dist.context(client) as ctx:
        h = await client.call("w1", "tanh", x)
        assert h.grad_fn.name() == "RecvBackward"
        y = await client.call("w2", "matmul", h, w)
        await dist.backward(ctx, [(y * y).sum()])
    xl, wl = twin(x), twin(w)
    (xl.tanh().matmul(wl) ** 2).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), xl.grad.numpy(), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(w.grad.numpy(), wl.grad.numpy(), rtol=1e-12, atol=1e-12)
    # The requests went through the workers' servers, which listen on no socket.
    assert w1.requests >= 2 and w2.requests >= 2
    with pytest.raises(ConnectionClosedError, match="does not listen"):
        _ = w1.address
    assert isinstance(client._conns["w1"], Channel)


async def test_worker_to_worker_backward_in_memory(client):
    """client -> w1 (tanh) -> w2 (mul by 3) -> client, w1 reaching w2 in memory too."""
    x = leaf((3, 4), 2)
    async with dist.context(client) as ctx:
        y = await client.call("w1", "tanh_then_peer", x, peer="w2", function="mul", args=[3.0])
        await dist.backward(ctx, [(y * y).sum()])
    xl = twin(x)
    ((xl.tanh() * 3.0) ** 2).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), xl.grad.numpy(), rtol=1e-12, atol=1e-12)


async def test_handshake_runs_in_memory(workers):
    memory, *_ = workers
    async with Client(
        {"w1": "w1"}, token=b"another-token-0123456789", transport=memory, timeout=5.0
    ) as stranger:
        with pytest.raises(AuthenticationError):
            await stranger.stats("w1")
    async with Client({"w9": "w9"}, token=TOKEN, transport=memory, timeout=5.0) as lost:
        with pytest.raises(WorkerLostError, match="cannot connect to w9"):
            await lost.stats("w9")


async def test_quotas_apply_in_memory():
    """The server's byte quota refuses a frame over it, as it does on a socket."""
    from autograd_async.distributed.quota import ByteBudget

    async def echo(info, method, kwargs, arrays):
        return {"peer": info.peer_name}, arrays

    server = await serve(
        echo,
        token=TOKEN,
        name="echo",
        listen=False,
        budget=ByteBudget(1 << 20, 1 << 22, owner="echo"),
    )
    memory = MemoryTransport()
    memory.add("echo", server)
    try:
        async with Client({"echo": "echo"}, token=TOKEN, transport=memory, timeout=10.0) as c:
            result, arrays = await c.request("echo", "echo", {}, [np.arange(1000.0)])
            assert result == {"peer": "client"}
            np.testing.assert_array_equal(arrays[0], np.arange(1000.0))
            with pytest.raises(ResourceExhausted):
                await c.request("echo", "echo", {}, [np.zeros(1 << 18)])  # 2 MiB > 1 MiB
    finally:
        await server.aclose()


async def test_large_frames_and_many_requests_in_memory():
    """Frames larger than the pipe's high-water mark, many in flight: backpressure holds."""

    async def echo(info, method, kwargs, arrays):
        await asyncio.sleep(0)
        return {"i": kwargs["i"]}, arrays

    server = await serve(echo, token=TOKEN, name="echo", listen=False, max_pending=4)
    memory = MemoryTransport()
    memory.add("echo", server)
    try:
        async with Client({"echo": "echo"}, token=TOKEN, transport=memory, timeout=30.0) as c:
            big = np.random.default_rng(0).standard_normal(3 << 20)  # 24 MiB
            calls = [c.request("echo", "echo", {"i": i}, [big[i:]]) for i in range(6)]
            for i, (result, arrays) in enumerate(await asyncio.gather(*calls)):
                assert result == {"i": i}
                np.testing.assert_array_equal(arrays[0], big[i:])
            assert server.connection_count == 1
        await asyncio.sleep(0.05)  # the pipe ends on the next turns of the loop
        assert server.connection_count == 0  # closing the client closed the server's side
    finally:
        await server.aclose()


async def test_a_closed_server_is_a_lost_worker_in_memory():
    """Requests in flight fail as WorkerLostError, and the next call finds nobody there."""
    started = asyncio.Event()

    async def slow(info, method, kwargs, arrays):
        started.set()
        await asyncio.sleep(30)
        return {}, []

    server = await serve(slow, token=TOKEN, name="slow", listen=False)
    memory = MemoryTransport()
    memory.add("slow", server)
    async with Client({"slow": "slow"}, token=TOKEN, transport=memory, timeout=20.0) as c:
        call = asyncio.create_task(c.request("slow", "sleep"))
        await started.wait()
        await server.aclose()
        with pytest.raises(WorkerLostError, match="slow"):
            await call
        assert c.is_lost("slow")
        with pytest.raises(WorkerLostError, match="cannot connect to slow.*not accepting"):
            await c.request("slow", "sleep")
