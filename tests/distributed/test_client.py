"""The client against real workers: lazy connections, multiplexing, names, errors."""

from __future__ import annotations

import asyncio
import threading

import numpy as np
import pytest

import autograd_async as ag
from autograd_async import distributed as dist
from autograd_async.distributed import (
    AuthenticationError,
    Client,
    ConnectionClosedError,
    DistributedError,
    RemoteError,
    UnknownWorkerError,
    WorkerLostError,
)

pytestmark = pytest.mark.timeout(60)


async def test_connections_open_lazily_one_per_worker(cluster):
    addresses = {**cluster.addresses, "ghost": "127.0.0.1:1"}  # nobody listens there
    async with Client(addresses, token=cluster.token, timeout=10.0) as client:
        assert client.connected == []
        before = (await client.stats("w3"))["connections"]
        assert client.connected == ["w3"]
        x = ag.arange(4.0)
        results = await asyncio.gather(*(client.call("w3", "mul", x, float(i)) for i in range(50)))
        for i, y in enumerate(results):
            np.testing.assert_array_equal(y.numpy(), np.arange(4.0) * i)
        assert (await client.stats("w3"))["connections"] == before  # all on one connection
        assert client.connected == ["w3"]
        with pytest.raises(WorkerLostError, match="ghost.*cannot connect to 127.0.0.1:1"):
            await client.connect()  # eager: every worker, now
        assert sorted(client.connected) == ["w1", "w2", "w3"]
    assert client.connected == []


async def test_unknown_worker_names_the_known_ones(client):
    with pytest.raises(
        UnknownWorkerError, match="unknown worker 'w9'; known workers: 'w1', 'w2', 'w3'"
    ) as info:
        await client.call("w9", "tanh", ag.ones(2))
    assert isinstance(info.value, LookupError) and info.value.worker == "w9"


async def test_unknown_worker_of_a_worker(client):
    with pytest.raises(RemoteError, match="unknown worker 'w7'; known workers: 'w2', 'w3'"):
        await client.call("w1", "tanh_then_peer", ag.ones(2), peer="w7")


async def test_unknown_function_is_a_remote_error_naming_it(client):
    with pytest.raises(RemoteError, match="worker 'w1' has no function 'nope'") as info:
        await client.call("w1", "nope", ag.ones(2))
    assert info.value.remote_type == "UnknownNameError" and info.value.worker == "w1"
    # the connection is still good
    np.testing.assert_allclose((await client.call("w1", "tanh", ag.zeros(2))).numpy(), 0.0)


async def test_forward_error_names_worker_and_context(client):
    async with dist.context(client) as ctx:
        with pytest.raises(RemoteError, match="cannot be multiplied") as info:
            await client.call("w2", "matmul", ag.ones(2, 3), ag.ones(2, 3))
    assert info.value.worker == "w2" and info.value.context_id == ctx.id


@pytest.mark.parametrize("through", ["client", "w1"])
async def test_error_in_a_remote_backward_names_node_and_worker(client, through):
    x = ag.ones(3, requires_grad=True)
    async with dist.context(client) as ctx:
        if through == "client":
            y = await client.call("w2", "explode", x)
        else:  # relayed by w1, which called w2
            y = await client.call("w1", "tanh_then_peer", x, peer="w2", function="explode")
        with pytest.raises(RemoteError) as info:
            await dist.backward(ctx, [y.sum()])
    err = info.value
    assert err.remote_type == "ValueError"
    assert "boom in backward" in err.message
    assert err.node == "ExplodeBackward"
    assert err.worker == "w2"
    assert err.context_id == ctx.id
    assert "node 'ExplodeBackward'" in str(err) and "worker 'w2'" in str(err)


async def test_outputs_follow_the_first_tensor_device(client):
    x = ag.arange(3.0, device="sim:1")
    y = await client.call("w1", "mul", x, 2.0)
    assert y.device == ag.device("sim:1")
    total = await client.call("w1", "sum", np.arange(4.0))  # a plain ndarray travels too
    assert total.item() == 6.0


async def test_arguments_that_cannot_travel(client):
    with pytest.raises(TypeError, match="keyword arguments.fn is a builtin_function_or_method"):
        await client.call("w1", "tanh", ag.ones(2), fn=print)
    with pytest.raises(TypeError, match="argument 1 is a set"):
        await client.call("w1", "tanh", ag.ones(2), {1})


async def test_name_check_wrong_token_and_closed_client(cluster):
    async with Client({"w1": cluster.w2.address}, token=cluster.token) as client:
        with pytest.raises(DistributedError, match="is named 'w2', expected 'w1'"):
            await client.stats("w1")
    async with Client(cluster.addresses, token=b"not-the-token-0123") as client:
        with pytest.raises(AuthenticationError):
            await client.stats("w1")
    client = Client(cluster.addresses, token=cluster.token)
    with pytest.raises(ConnectionClosedError, match="unopened"):
        await client.stats("w1")
    await client.start()
    assert await client.ping("w1") > 0
    await client.aclose()
    with pytest.raises(ConnectionClosedError, match="closed"):
        await client.stats("w1")


async def test_a_blocked_client_loop_is_reported_not_waited_on_forever(cluster):
    async with Client(cluster.addresses, token=cluster.token, timeout=1.0) as client:
        x = ag.ones(3, requires_grad=True)
        async with dist.context(client) as ctx:
            y = await client.call("w1", "tanh", x)
            failures: list[BaseException] = []

            def backward_on_another_thread() -> None:
                try:
                    y.sum().backward()
                except RuntimeError as exc:
                    failures.append(exc)

            elsewhere = threading.Thread(target=backward_on_another_thread)
            elsewhere.start()
            elsewhere.join(60)  # blocks the client's loop until that backward gives up
            assert len(failures) == 1
            assert "did not run a request within 1.0 s" in str(failures[0])
            await dist.backward(ctx, [y.sum()])  # the graph is intact: nothing was sent
        np.testing.assert_allclose(x.grad.numpy(), 1 - np.tanh(1.0) ** 2, rtol=1e-6)


async def test_a_blocking_backward_on_the_clients_own_loop_fails_at_once(cluster):
    # A timeout far beyond the test's own: only a refusal up front lets the test finish.
    async with Client(cluster.addresses, token=cluster.token, timeout=3600.0) as client:
        x = ag.ones(3, requires_grad=True)
        async with dist.context(client) as ctx:
            h = ag.tanh(x) * 2.0
            y = await client.call("w1", "tanh", h)
            refusal = r"blocking backward\(\) was called on the thread of a running event loop"
            with pytest.raises(RuntimeError, match=refusal) as info:
                (y.sum() * 3.0).backward()
            assert "distributed client 'client'" in str(info.value)
            assert "await distributed.backward(ctx, ...)" in str(info.value)
            with pytest.raises(RuntimeError, match=r"blocking grad\(\)"):
                ag.autograd.grad(y.sum(), [x])
            assert x.grad is None
            await dist.backward(ctx, [y.sum()])  # the graph is intact: nothing ran
        expected = 2.0 * (1 - np.tanh(1.0) ** 2) * (1 - np.tanh(2 * np.tanh(1.0)) ** 2)
        np.testing.assert_allclose(x.grad.numpy(), np.full(3, expected), rtol=1e-5)
