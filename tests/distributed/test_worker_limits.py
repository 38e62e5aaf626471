"""A worker under load and quotas: compute off the serving loop, byte and context quotas,
half-sent frames."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

import autograd_async as ag
from autograd_async import distributed as dist
from autograd_async.distributed import Client, RemoteModule, ResourceExhausted
from autograd_async.distributed.quota import ByteBudget
from autograd_async.distributed.wire import encode_frame
from autograd_async.workers.contexts import ContextStore

from .conftest import TOKEN

pytestmark = pytest.mark.timeout(120)

MIB = 1 << 20
LIMITS = (
    "--max-peer-bytes",
    "64M",
    "--max-total-bytes",
    "90M",
    "--max-contexts-per-peer",
    "2",
    "--frame-idle-timeout",
    "0.5",
)


@pytest.fixture(scope="module")
def limited(tmp_path_factory):
    """One worker with small quotas for the whole module."""
    from .conftest import WorkerFactory

    factory = WorkerFactory(tmp_path_factory.mktemp("limits"))
    yield factory("w1", extra=LIMITS)
    factory.close()


async def held(client: Client) -> int:
    return (await client.stats("w1"))["held_bytes"]


# --- compute off the serving loop ----------------------------------------------------------


async def test_ping_and_stats_answer_while_another_clients_long_call_runs(limited):
    address = {"w1": limited.address}
    async with (
        Client(address, token=TOKEN, name="busy") as busy,
        Client(address, token=TOKEN, name="prober") as prober,
    ):
        await prober.ping("w1")  # connected before the long call starts
        long_call = asyncio.ensure_future(
            busy.call("w1", "blocking_sleep", ag.zeros(2), seconds=4.0)
        )
        await asyncio.sleep(0.5)  # the worker is inside the call now
        await prober.ping("w1")
        stats = await prober.stats("w1")
        assert not long_call.done(), "the ping waited for another client's computation"
        assert stats["name"] == "w1"
        np.testing.assert_array_equal((await long_call).numpy(), np.ones(2))


# --- byte quotas ---------------------------------------------------------------------------


async def test_a_broadcast_that_would_make_a_huge_reply_is_refused(limited):
    async with Client({"w1": limited.address}, token=TOKEN, name="bcast") as client:
        column, row = ag.ones(6000, 1), ag.ones(1, 6000)  # 48 KiB in, 137 MiB out
        with pytest.raises(ResourceExhausted, match=r"reply of .*--max-peer-bytes") as info:
            await client.call("w1", "add", column, row)
        assert info.value.worker == "w1"
        y = await client.call("w1", "add", column[:4], row[:, :4])  # the connection goes on
        assert tuple(y.shape) == (4, 4)
        assert await held(client) == 0


async def linear(client: Client) -> RemoteModule:
    """A 16 MiB layer on w1."""
    return await RemoteModule.create(client, "w1", "Linear", in_features=2048, out_features=2048)


async def test_modules_count_against_the_creators_quota_and_the_total(limited):
    address = {"w1": limited.address}
    async with (
        Client(address, token=TOKEN, name="a") as a,
        Client(address, token=TOKEN, name="b") as b,
    ):
        layers = [await linear(a) for _ in range(3)]
        with pytest.raises(ResourceExhausted, match="peer 'a' already holds 48"):
            await linear(a)  # 4 x 16 MiB > 64 MiB
        await layers.pop().aclose()
        layers.append(await linear(a))
        other = [await linear(b) for _ in range(2)]
        with pytest.raises(ResourceExhausted, match=r"in total \(--max-total-bytes\)"):
            await linear(b)  # 6 x 16 MiB > 90 MiB
        for layer in layers + other:
            await layer.aclose()
        assert await held(a) == 0


async def test_a_frame_over_the_quota_is_refused_and_skipped(limited):
    async with Client({"w1": limited.address}, token=TOKEN, name="big") as client:
        big = np.ones(80 * MIB // 4, dtype=np.float32)
        with pytest.raises(ResourceExhausted, match=r"frame of 80 MiB"):
            await client.call("w1", "clone", big)
        y = await client.call("w1", "clone", ag.ones(3))
        np.testing.assert_array_equal(y.numpy(), np.ones(3))


async def test_contexts_per_peer_are_capped(limited):
    async with Client({"w1": limited.address}, token=TOKEN, name="ctx") as client:
        x = ag.ones(3, requires_grad=True)
        open_contexts = []
        for _ in range(2):
            ctx = dist.context(client)
            await ctx.__aenter__()
            await client.call("w1", "tanh", x)
            open_contexts.append(ctx)
        async with dist.context(client):
            with pytest.raises(ResourceExhausted, match="already holds 2 contexts"):
                await client.call("w1", "tanh", x)
        await open_contexts.pop().__aexit__(None, None, None)
        async with dist.context(client) as ctx:  # a slot is free again
            y = await client.call("w1", "tanh", x)
            await dist.backward(ctx, [y.sum()])
        for ctx in open_contexts:
            await ctx.__aexit__(None, None, None)
        assert (await client.stats("w1"))["contexts"] == 0
        assert await held(client) == 0


# --- half-sent frames ----------------------------------------------------------------------


async def test_a_half_sent_frame_is_dropped_after_the_idle_timeout(limited, raw):
    peer = await raw.open(limited.host, limited.port, token=TOKEN, name="stalled")
    frame = b"".join(
        bytes(c)
        for c in encode_frame(
            "request", {"id": 1, "method": "call", "kwargs": {}}, [np.ones(MIB, np.float32)]
        )
    )
    peer.send_raw(frame[: len(frame) // 2])  # and then nothing
    assert await peer.closed_by_peer(timeout=10)
    await peer.close()
    async with Client({"w1": limited.address}, token=TOKEN, name="check") as client:
        assert await held(client) == 0


# --- the bookkeeping itself ----------------------------------------------------------------


def test_byte_budget():
    budget = ByteBudget(per_peer=100, total=150)
    budget.reserve("a", 60, "x")
    with pytest.raises(ResourceExhausted, match="peer 'a' already holds 60 bytes"):
        budget.reserve("a", 41, "more")
    budget.reserve("b", 80, "y")
    with pytest.raises(ResourceExhausted, match="140 bytes are held for all peers"):
        budget.reserve("c", 11, "z")
    assert (budget.held("a"), budget.held("b"), budget.held()) == (60, 80, 140)
    budget.release("a", 60)
    budget.force("b", 50)  # over b's quota, counted anyway
    assert budget.held() == 130
    with pytest.raises(ResourceExhausted):
        budget.ensure_room("b", "w")


def test_context_store_caps_contexts_per_owner():
    store = ContextStore(10.0, clock=lambda: 0.0, max_per_peer=2)
    store.get_or_create(1, "a")
    store.get_or_create(2, "a")
    store.get_or_create(2, "a")  # an existing one is no new context
    store.get_or_create(3, "b")
    with pytest.raises(ResourceExhausted, match="'a' already holds 2 contexts"):
        store.get_or_create(4, "a")
    store.release(1)
    assert store.get_or_create(4, "a").owner == "a" and store.owned("a") == 2
