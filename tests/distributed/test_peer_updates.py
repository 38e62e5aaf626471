"""Peers learnt while workers run: `Client.set_address`/`remove_address`, and `peers.update`
sent to a worker process that started without knowing its peer."""

from __future__ import annotations

import numpy as np
import pytest

import autograd_async as ag
from autograd_async import distributed as dist
from autograd_async.distributed import Client, RemoteError, UnknownWorkerError

from .conftest import TOKEN

pytestmark = pytest.mark.timeout(90)


def chain_backward_matches(x, y):
    xl = x.detach().clone().requires_grad_()
    ((xl.tanh() * 3.0) ** 2).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), xl.grad.numpy(), rtol=1e-12, atol=1e-12)


async def chain(client):
    """client -> w1 (tanh) -> w2 (mul by 3) -> client, and its distributed backward."""
    x = ag.tensor(np.random.default_rng(0).standard_normal((3, 4)), requires_grad=True)
    async with dist.context(client) as ctx:
        y = await client.call("w1", "tanh_then_peer", x, peer="w2", function="mul", args=[3.0])
        await dist.backward(ctx, [(y * y).sum()])
    chain_backward_matches(x, y)


async def test_workers_learn_their_peer_after_start(spawn_worker, raw):
    w2 = spawn_worker("w2")
    w1 = spawn_worker("w1")  # started without --peer: it knows nobody
    async with Client({"w1": w1.address, "w2": w2.address}, token=TOKEN, timeout=20.0) as c:
        assert (await c.stats("w1"))["peers"] == []
        with pytest.raises(RemoteError, match="w2") as info:
            await chain(c)
        assert info.value.remote_type == "UnknownWorkerError"

        # A stranger without the token cannot tell w1 anything: it is dropped unheard.
        stranger = await raw.open(w1.host, w1.port, token=None)
        stranger.send(
            "request",
            {"id": 1, "method": "peers.update", "kwargs": {"addresses": {"w2": "127.0.0.1:1"}}},
        )
        assert await stranger.closed_by_peer()
        await stranger.close()
        assert (await c.stats("w1"))["peers"] == []

        assert await c.update_peers("w1", {"w2": w2.address}) == ["w2"]
        await chain(c)  # worker-to-worker forward and backward, w1 -> w2
        for worker in ("w1", "w2"):
            assert (await c.stats(worker))["contexts"] == 0

        # A peer that moves: w2 restarts on another port and w1 is told so.
        w2.kill()
        w2b = spawn_worker("w2")
        c.set_address("w2", w2b.address)
        assert await c.update_peers("w1", {"w2": (w2b.host, w2b.port)}) == ["w2"]
        await chain(c)

        # Bad updates are refused whole, naming what is wrong; nothing changes.
        with pytest.raises(RemoteError, match="host:port"):
            await c.update_peers("w1", {"w3": "nowhere"}, remove=["w2"])
        with pytest.raises(RemoteError, match="field 'remove' must be list of str"):
            await c.request("w1", "peers.update", {"remove": "w2"})
        assert (await c.stats("w1"))["peers"] == ["w2"]

        assert await c.update_peers("w1", remove=["w2"]) == []
        with pytest.raises(RemoteError, match="w2"):
            await chain(c)


async def test_client_addresses_can_change_while_it_runs(spawn_worker):
    w1 = spawn_worker("w1")
    async with Client({}, token=TOKEN, timeout=20.0) as c:
        with pytest.raises(UnknownWorkerError):
            await c.stats("w1")
        c.set_address("w1", w1.address)
        assert (await c.stats("w1"))["name"] == "w1"
        c.set_address("w1", w1.address)  # the same address: the channel stays
        assert c.connected == ["w1"]
        assert c.remove_address("w1") and c.workers == [] and c.connected == []
        assert not c.remove_address("w1")
        with pytest.raises(UnknownWorkerError):
            await c.stats("w1")
        with pytest.raises(ValueError, match="host:port"):
            c.set_address("w1", "no-port")
