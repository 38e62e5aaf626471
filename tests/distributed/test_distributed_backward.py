"""Distributed backward across worker processes equals local autograd on the same computation."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

import autograd_async as ag
from autograd_async import distributed as dist
from autograd_async.distributed import Client, RemoteError, RemoteModule

pytestmark = pytest.mark.timeout(60)

DTYPES = [ag.float32, ag.float64]


def tol(dtype):
    return {"rtol": 1e-5, "atol": 1e-6} if dtype == ag.float32 else {"rtol": 1e-12, "atol": 1e-12}


@pytest.fixture
async def client(cluster):
    async with Client(cluster.addresses, token=cluster.token, timeout=10.0) as c:
        yield c
        for worker in ("w1", "w2", "w3"):  # every test leaves nothing behind
            stats = await c.stats(worker)
            assert stats["contexts"] == 0, (worker, stats["context_ids"])


def leaf(shape, dtype, seed):
    data = np.random.default_rng(seed).standard_normal(shape).astype(dtype)
    return ag.tensor(data, requires_grad=True)


def twin(t):
    return t.detach().clone().requires_grad_()


@pytest.mark.parametrize("dtype", DTYPES)
async def test_two_workers_through_the_client(client, dtype):
    x, w = leaf((4, 5), dtype, 0), leaf((5, 3), dtype, 1)
    async with dist.context(client) as ctx:
        h = await client.call("w1", "tanh", x)
        assert h.grad_fn.name() == "RecvBackward"
        y = await client.call("w2", "matmul", h, w)
        loss = (y * y).sum()
        await dist.backward(ctx, [loss])
        assert sorted(ctx.workers) == ["w1", "w2"]
    xl, wl = twin(x), twin(w)
    ((xl.tanh().matmul(wl)) ** 2).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), xl.grad.numpy(), **tol(dtype))
    np.testing.assert_allclose(w.grad.numpy(), wl.grad.numpy(), **tol(dtype))
    assert x.grad.dtype == dtype


@pytest.mark.parametrize("dtype", DTYPES)
async def test_worker_to_worker_chain_of_two(client, dtype):
    """client -> w1 (tanh) -> w2 (mul by 3) -> client."""
    x = leaf((3, 4), dtype, 2)
    async with dist.context(client) as ctx:
        y = await client.call("w1", "tanh_then_peer", x, peer="w2", function="mul", args=[3.0])
        loss = (y * y).sum()
        await dist.backward(ctx, [loss])
    xl = twin(x)
    ((xl.tanh() * 3.0) ** 2).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), xl.grad.numpy(), **tol(dtype))


@pytest.mark.parametrize("dtype", DTYPES)
async def test_worker_to_worker_chain_of_three(client, dtype):
    """client -> w1 (tanh) -> w2 (tanh) -> w3 (square) -> client."""
    x = leaf((6,), dtype, 3)
    async with dist.context(client) as ctx:
        y = await client.call(
            "w1",
            "tanh_then_peer",
            x,
            peer="w2",
            function="tanh_then_peer",
            kwargs={"peer": "w3", "function": "square"},
        )
        await dist.backward(ctx, [y.sum()])
    xl = twin(x)
    xl.tanh().tanh().square().sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), xl.grad.numpy(), **tol(dtype))


@pytest.mark.parametrize("dtype", DTYPES)
async def test_round_trips_several_outputs_and_roots(client, dtype):
    """Back and forth between the client and two workers; one tensor sent to both; two roots."""
    x, w = leaf((2, 3), dtype, 4), leaf((2, 3), dtype, 5)
    async with dist.context(client) as ctx:
        prod, total, tag = await client.call("w1", "mul_add", x, w, alpha=0.5)
        assert tag == "tag"
        a = await client.call("w2", "tanh", prod)
        b = await client.call("w1", "mul", a, x)  # x goes to w1 a second time
        c = await client.call("w2", "sigmoid", total)
        loss1 = (b * c).sum()
        loss2 = (a + x).square().mean()
        await dist.backward(ctx, [loss1, loss2])
    xl, wl = twin(x), twin(w)
    al = (xl * wl).tanh()
    ((al * xl) * (xl + wl * 0.5).sigmoid()).sum().backward(retain_graph=True)
    (al + xl).square().mean().backward()
    np.testing.assert_allclose(x.grad.numpy(), xl.grad.numpy(), **tol(dtype))
    np.testing.assert_allclose(w.grad.numpy(), wl.grad.numpy(), **tol(dtype))


async def test_retain_graph_twice_accumulates(client):
    ag.manual_seed(0)
    local = ag.nn.Linear(4, 3)
    rm = await RemoteModule.create(
        client, "w1", "Linear", in_features=4, out_features=3, device="sim:0"
    )
    await rm.load_state_dict(local.state_dict())
    x = leaf((5, 4), np.float32, 6)
    async with dist.context(client) as ctx:
        y = await rm(x)
        loss = (y.tanh() ** 2).sum()
        await dist.backward(ctx, [loss], retain_graph=True)
        await dist.backward(ctx, [loss], retain_graph=True)
        grads = await ctx.get_gradients(rm)
        await dist.backward(ctx, [loss])  # a third time frees the graph, here and on w1
        with pytest.raises(RuntimeError, match="backward through the graph a second time"):
            await dist.backward(ctx, [loss])
    xl = twin(x)
    lossl = (local(xl).tanh() ** 2).sum()
    lossl.backward(retain_graph=True)
    lossl.backward()
    np.testing.assert_allclose(x.grad.numpy(), 1.5 * xl.grad.numpy(), rtol=1e-5, atol=1e-6)
    for name, p in local.named_parameters():
        np.testing.assert_allclose(grads[name].numpy(), p.grad.numpy(), rtol=1e-5, atol=1e-6)
    await rm.aclose()


async def test_worker_refuses_a_second_backward_through_a_freed_call(client):
    """Even when the client side kept its graph, the worker freed its part."""
    x = leaf((3,), np.float32, 7)
    async with dist.context(client) as ctx:
        y = await client.call("w1", "tanh", x)
        loss = y.sum()
        await ag.autograd.backward_async([loss], retain_graph=True)  # ctx.retain_graph is False
        with pytest.raises(RemoteError, match="holds no call") as info:
            await dist.backward(ctx, [loss], retain_graph=True)
        assert info.value.worker == "w1"
        assert info.value.context_id == ctx.id


async def test_integer_and_value_outputs(client):
    x = leaf((3, 4), np.float32, 8)
    async with dist.context(client) as ctx:
        idx, sq = await client.call("w1", "argmax_and_square", x)
        assert idx.dtype == ag.int64 and not idx.requires_grad
        assert sq.requires_grad
        np.testing.assert_array_equal(idx.numpy(), x.detach().numpy().argmax(-1))
        await dist.backward(ctx, [sq.sum()])
    np.testing.assert_allclose(x.grad.numpy(), 2 * x.detach().numpy(), rtol=1e-6)


async def test_leaf_made_on_the_worker(client):
    x = leaf((4,), np.float64, 9)
    async with dist.context(client) as ctx:
        y = await client.call("w1", "scale_by_parameter", x)
        await dist.backward(ctx, [y.sum()])
    np.testing.assert_allclose(x.grad.numpy(), np.full(4, 2.0))


async def test_outputs_need_no_grad_outside_a_context_or_under_no_grad(client):
    x = leaf((3,), np.float32, 10)
    y = await client.call("w1", "tanh", x)  # PyTorch's rule: nothing recorded outside a context
    assert not y.requires_grad and y.grad_fn is None
    async with dist.context(client):
        with ag.no_grad():
            z = await client.call("w1", "tanh", x)
        assert not z.requires_grad
        assert (await client.stats("w1"))["contexts"] == 1  # seen, but nothing recorded
    np.testing.assert_allclose(y.numpy(), np.tanh(x.detach().numpy()), rtol=1e-6)


async def test_concurrent_contexts_stay_apart(client):
    async def one(seed: int) -> None:
        x = leaf((8,), np.float32, 100 + seed)
        async with dist.context(client) as ctx:
            y = await client.call(
                "w1", "tanh_then_peer", x, peer="w2", function="mul", args=[float(seed)]
            )
            await dist.backward(ctx, [(y * y).sum()])
        xl = twin(x)
        ((xl.tanh() * float(seed)) ** 2).sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), xl.grad.numpy(), rtol=1e-5, atol=1e-6)

    await asyncio.gather(*(one(i) for i in range(1, 9)))


async def test_context_ids_carry_the_client_origin(client, cluster):
    async with Client(cluster.addresses, token=cluster.token) as other:
        ids = {dist.context(c).id for c in (client, other) for _ in range(3)}
    assert len(ids) == 6
    assert all(0 < i < 2**63 for i in ids)
    assert {i >> 47 for i in ids} == {client.origin, other.origin} or client.origin == other.origin
