"""A worker's memory stays bounded whatever a peer asks it to compute (workers/memory.py).

Calls whose outputs dwarf their inputs (a broadcast add, `zeros` of a huge shape, an outer
product, a module whose forward allocates too much, many mid-sized calls at once) are refused
with ResourceExhausted; the worker keeps serving, other peers' calls and contexts go on, and its
resident memory comes back near where it was.
"""

from __future__ import annotations

import asyncio
import contextvars
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import autograd_async as ag
from autograd_async import distributed as dist
from autograd_async.distributed import Client, RemoteModule, ResourceExhausted
from autograd_async.workers import allocator
from autograd_async.workers.__main__ import build_parser
from autograd_async.workers.memory import DEFAULT_MAX_MEMORY, MemoryBudget, machine_memory
from autograd_async.workers.sizing import broadcast_nbytes, matmul_nbytes, matmul_shape

from .conftest import TOKEN, rss_kib

pytestmark = pytest.mark.timeout(120)

MIB = 1 << 20
# Small limits, so that the calls that fit stay light on a busy machine.
LIMITS = ("--max-memory", "256M", "--max-peer-memory", "128M", "--max-call-memory", "64M")
# Resident memory may stay this far above its level before the attack (allocator caches,
# interpreter state touched by the first calls) on a busy machine; the attacks ask for GiBs.
RSS_SLACK_MIB = 48


@pytest.fixture(scope="module")
def worker(tmp_path_factory):
    """One worker with a 256 MiB budget (128 MiB per peer, 64 MiB per call) for the module."""
    from .conftest import WorkerFactory

    factory = WorkerFactory(tmp_path_factory.mktemp("memory"))
    yield factory("w1", devices="cpu", extra=LIMITS)
    factory.close()


def rss_mib(worker) -> float:
    return rss_kib(worker.pid) / 1024


async def baseline(client: Client, worker) -> float:
    """The worker's resident memory once it has served a few small calls."""
    for _ in range(3):
        await client.call("w1", "add", ag.ones(4), ag.ones(4))
    return rss_mib(worker)


async def assert_serving_and_back(client: Client, worker, before: float) -> None:
    """The worker still answers, counts nothing for the peer, and its memory comes back."""
    y = await client.call("w1", "add", ag.ones(3), ag.full((3,), 2.0))
    np.testing.assert_array_equal(y.numpy(), np.full(3, 3.0, np.float32))
    deadline = time.monotonic() + 10.0
    while rss_mib(worker) > before + RSS_SLACK_MIB and time.monotonic() < deadline:
        await asyncio.sleep(0.2)
    assert rss_mib(worker) <= before + RSS_SLACK_MIB, (rss_mib(worker), before)
    stats = await client.stats("w1")
    assert stats["peer_memory_bytes"] == 0


# --- refused before or while they allocate --------------------------------------------------


async def test_a_broadcast_add_is_refused_before_it_builds_its_result(worker):
    async with Client({"w1": worker.address}, token=TOKEN, name="bcast") as client:
        before = await baseline(client, worker)
        row, column = ag.ones(1, 16000), ag.ones(16000, 1)  # 125 KiB sent, 977 MiB asked
        with pytest.raises(
            ResourceExhausted,
            match=r"call 'add' from peer 'bcast': it needs "
            r"976\.6 MiB, over the memory share of 64 MiB per call "
            r"\(--max-call-memory\)",
        ) as info:
            await client.call("w1", "add", row, column)
        assert info.value.worker == "w1"
        assert rss_mib(worker) < before + RSS_SLACK_MIB  # nothing was built
        await assert_serving_and_back(client, worker, before)


async def test_huge_zeros_is_refused_as_it_allocates(worker):
    async with Client({"w1": worker.address}, token=TOKEN, name="zeros") as client:
        before = await baseline(client, worker)
        with pytest.raises(
            ResourceExhausted, match=r"call 'make_zeros' .*it needs 4 GiB, over .*64 MiB per call"
        ):
            await client.call("w1", "make_zeros", shape=[1 << 15, 1 << 15])
        y = await client.call("w1", "make_zeros", shape=[2, 3])  # a small one is served
        assert tuple(y.shape) == (2, 3)
        await assert_serving_and_back(client, worker, before)


@pytest.mark.parametrize("function", ["outer", "matmul"])
async def test_an_outer_product_is_refused(worker, function):
    async with Client({"w1": worker.address}, token=TOKEN, name="outer") as client:
        before = await baseline(client, worker)
        if function == "outer":  # sized only as it allocates
            args = (ag.ones(16000), ag.ones(16000))
        else:  # (n, 1) @ (1, n): sized from the shapes before it runs
            args = (ag.ones(16000, 1), ag.ones(1, 16000))
        with pytest.raises(ResourceExhausted, match=rf"call '{function}' .*976\.6 MiB"):
            await client.call("w1", function, *args)
        await assert_serving_and_back(client, worker, before)


async def test_a_materialised_expand_is_refused(worker):
    async with Client({"w1": worker.address}, token=TOKEN, name="expand") as client:
        before = await baseline(client, worker)
        with pytest.raises(ResourceExhausted, match=r"call 'expand_rows'"):
            await client.call("w1", "expand_rows", ag.ones(1, 16000), rows=16000)
        y = await client.call("w1", "expand_rows", ag.ones(1, 3), rows=2)
        np.testing.assert_array_equal(y.numpy(), np.ones((2, 3), np.float32))
        await assert_serving_and_back(client, worker, before)


async def test_a_module_whose_forward_allocates_too_much_is_refused(worker):
    async with Client({"w1": worker.address}, token=TOKEN, name="module") as client:
        before = await baseline(client, worker)
        hog = await RemoteModule.create(client, "w1", "Grower", mib=16, steps=10)
        with pytest.raises(
            ResourceExhausted,
            match=r"forward of module \d+ \(Grower\) .*16 MiB "
            r"more while holding 48(\.0)? MiB, over .*64 MiB per call",
        ):
            await hog(ag.ones(3))
        small = await RemoteModule.create(client, "w1", "Grower", mib=1, steps=2)
        y = await small(ag.ones(3))  # a forward within its share runs
        np.testing.assert_array_equal(y.numpy(), np.full(3, 4.0, np.float32))
        await hog.aclose()
        await small.aclose()
        await assert_serving_and_back(client, worker, before)


async def test_a_module_too_large_to_build_is_refused(worker):
    async with Client({"w1": worker.address}, token=TOKEN, name="builder") as client:
        before = await baseline(client, worker)
        with pytest.raises(ResourceExhausted, match=r"module Linear .*over .*64 MiB per call"):
            await RemoteModule.create(client, "w1", "Linear", in_features=8000, out_features=8000)
        assert (await client.stats("w1"))["modules"] == 0
        await assert_serving_and_back(client, worker, before)


async def test_a_backward_that_allocates_too_much_is_refused(worker):
    address = {"w1": worker.address}
    async with Client(address, token=TOKEN, name="inflate") as client:
        before = await baseline(client, worker)
        x = ag.ones(3, requires_grad=True)
        async with dist.context(client) as ctx:
            y = await client.call("w1", "inflating_backward", x, mib=200)
            with pytest.raises(Exception, match=r"backward of call \d+.*64 MiB per call") as info:
                await dist.backward(ctx, [y.sum()])
        assert "ResourceExhausted" in f"{type(info.value).__name__} {info.value!r}"
        x = ag.ones(3, requires_grad=True)
        async with dist.context(client) as ctx:  # a backward within its share runs
            y = await client.call("w1", "inflating_backward", x, mib=8)
            await dist.backward(ctx, [y.sum()])
        np.testing.assert_array_equal(x.grad.numpy(), np.ones(3, np.float32))
        await assert_serving_and_back(client, worker, before)


# --- many calls at once; other peers and their contexts --------------------------------------


async def test_concurrent_calls_over_the_budget_are_refused_and_other_peers_go_on(worker):
    address = {"w1": worker.address}
    async with (
        Client(address, token=TOKEN, name="flood") as flood,
        Client(address, token=TOKEN, name="legit") as legit,
    ):
        before = await baseline(legit, worker)
        x = ag.ones(3, requires_grad=True)
        async with dist.context(legit) as ctx:
            kept = await legit.call("w1", "tanh", x)  # recorded on w1 for backward
            # 8 x 40 MiB held at once by one peer: its 128 MiB share takes three of them.
            floods = [flood.call("w1", "hold", ag.ones(3), mib=40, seconds=1.0) for _ in range(8)]
            # The other peer's calls of the same size fit in what is left of the budget.
            legits = [legit.call("w1", "hold", ag.ones(3), mib=40, seconds=1.0) for _ in range(2)]
            results = await asyncio.gather(*floods, *legits, return_exceptions=True)
            flood_results, legit_results = results[:8], results[8:]
            refused = [r for r in flood_results if isinstance(r, ResourceExhausted)]
            served = [r for r in flood_results if not isinstance(r, BaseException)]
            assert len(refused) + len(served) == 8, flood_results
            assert len(served) <= 3 and refused, flood_results
            assert any("per peer (--max-peer-memory)" in str(r) for r in refused)
            for r in legit_results:
                assert not isinstance(r, BaseException), r
                np.testing.assert_array_equal(r.numpy(), np.full(3, 2.0, np.float32))
            await dist.backward(ctx, [kept.sum()])  # the context on w1 is intact
            np.testing.assert_allclose(x.grad.numpy(), 1 - np.tanh(1.0) ** 2, rtol=1e-6)
        await assert_serving_and_back(flood, worker, before)
        assert (await legit.stats("w1"))["memory_bytes"] == 0


# --- the bookkeeping itself, in this process ------------------------------------------------


def test_memory_budget_shares_and_messages():
    budget = MemoryBudget(1000, per_peer=600, per_call=400, owner="worker 'w'")
    a1, a2, b = (
        budget.account("a", "call 'f'"),
        budget.account("a", "call 'g'"),
        budget.account("b", "call 'h'"),
    )
    assert a1.admit(300) and not a1.admit(101)
    assert (
        "call 'f' from peer 'a': it needs 101 bytes more while holding 300 bytes, over the "
        "memory share of 400 bytes per call (--max-call-memory)" in a1.refusal
    )
    assert a2.admit(300) and not a2.admit(1)
    assert "per peer (--max-peer-memory)" in a2.refusal
    assert b.admit(400) and not budget.account("c", "call 'k'").admit(1)
    assert budget.held("a") == 600 and budget.held() == 1000
    a1.release(300)
    assert budget.held("a") == 300 and budget.held() == 700
    with pytest.raises(ResourceExhausted, match="worker's memory budget of 1000 bytes"):
        budget.check("c", "call 'k'", 301)
    budget.check("c", "call 'k'", 300)
    assert str(a2.exhausted()) == a2.refusal


def test_default_budget_follows_the_machine():
    assert DEFAULT_MAX_MEMORY == machine_memory() // 2 > 0
    budget = MemoryBudget()
    assert (budget.per_peer, budget.per_call) == (budget.total // 2, budget.total // 4)
    args = build_parser().parse_args(["--name", "w", "--token-file", "t"])
    assert args.max_memory == DEFAULT_MAX_MEMORY and args.max_call_memory is None
    args = build_parser().parse_args(
        ["--name", "w", "--token-file", "t", "--max-memory", "2G", "--max-call-memory", "300M"]
    )
    assert (args.max_memory, args.max_call_memory) == (2 << 30, 300 * MIB)


def test_counting_allocator_counts_refuses_and_gives_back():
    budget = MemoryBudget(64 * MIB, per_peer=64 * MIB, per_call=32 * MIB)
    account = budget.account("me", "call 't'")
    kept = []
    with allocator.counting(account):
        kept.append(np.ones(MIB // 8))  # 1 MiB
        assert account.used >= MIB
        with pytest.raises(MemoryError):
            np.ones((1, 8192), np.float32) + np.ones((8192, 1), np.float32)  # 256 MiB
        assert "it needs 256 MiB" in account.refusal
        account.refusal = None
        for _ in range(100):  # 800 MiB made and dropped, 8 MiB at a time: within 32 MiB
            np.ones(MIB)
        assert account.refusal is None

        def raises():
            np.ones(MIB)
            raise ValueError("the error is kept while its frame's arrays are freed")

        with pytest.raises(ValueError, match="kept while"):
            raises()
    outside = np.ones(4 * MIB)  # made after the block: not counted
    allocator.sweep()
    assert budget.held("me") == account.used >= MIB
    del kept[:]
    allocator.sweep()
    assert budget.held() == account.used == 0
    del outside


def test_counting_charges_each_thread_to_its_own_call():
    budget = MemoryBudget(1 << 30)
    accounts = [budget.account(peer, "call 'f'") for peer in ("a", "b")]
    kept: dict[str, list[np.ndarray]] = {"a": [], "b": []}

    def run(account, n):
        with allocator.counting(account):
            for _ in range(n):
                kept[account.peer].append(np.ones(MIB // 8))  # 1 MiB each
                np.ones(MIB // 8)  # and a temporary

    with ThreadPoolExecutor(2) as pool:
        list(pool.map(run, accounts, (20, 30)))
    with allocator.counting(accounts[0]):  # what a copied context makes counts there too
        kept["a"].append(contextvars.copy_context().run(np.ones, MIB // 8))
    assert (budget.held("a"), budget.held("b")) == (21 * MIB, 30 * MIB)
    kept.clear()
    assert budget.held() == 0


def test_output_sizes_of_the_default_functions():
    f32 = np.float32
    for a, b in [
        ((3,), (3,)),
        ((2, 3), (3,)),
        ((3,), (3, 4)),
        ((5, 2, 3), (3, 4)),
        ((1, 2, 3), (4, 3, 2)),
        ((7, 1), (1, 7)),
    ]:
        expected = np.matmul(np.ones(a, f32), np.ones(b, f32)).shape
        assert matmul_shape(a, b) == expected
        assert matmul_nbytes([np.ones(a, f32), np.ones(b, f32)], {}) == 4 * int(np.prod(expected))
    assert matmul_shape((2, 3), (4, 5)) is None
    row, column = np.ones((1, 16000), f32), np.ones((16000, 1), f32)
    assert broadcast_nbytes([row, column], {}) == 16000 * 16000 * 4
    assert broadcast_nbytes([row, 2.0], {}) == 16000 * 4
    assert broadcast_nbytes([np.ones(3), np.ones(4)], {}) == 0  # add raises its own error
