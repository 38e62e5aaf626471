"""Remote modules: building from the allow-list, forward, state dicts, gradients, optimizers."""

from __future__ import annotations

import numpy as np
import pytest

import autograd_async as ag
from autograd_async import distributed as dist
from autograd_async import nn, optim
from autograd_async.distributed import (
    DistributedOptimizer,
    ParameterRef,
    RemoteError,
    RemoteModule,
)

from .conftest import train_like_local

pytestmark = pytest.mark.timeout(60)


def batch(shape, seed, dtype=np.float32):
    return ag.tensor(np.random.default_rng(seed).standard_normal(shape).astype(dtype))


async def remote_copy(client, worker, local, class_name, **kwargs):
    rm = await RemoteModule.create(client, worker, class_name, **kwargs)
    await rm.load_state_dict(local.state_dict())
    return rm


async def test_linear_on_a_sim_device(client):
    ag.manual_seed(1)
    local = nn.Linear(8, 4)
    rm = await remote_copy(
        client, "w1", local, "Linear", in_features=8, out_features=4, device="sim:0"
    )
    info = {p["name"]: p for p in rm.parameter_info()}
    assert info["weight"]["shape"] == [4, 8] and info["weight"]["device"] == "sim:0"
    assert [r.name for r in rm.parameter_refs()] == ["weight", "bias"]
    assert all(r.worker == "w1" and r.module_id == rm.module_id for r in rm.parameter_refs())
    x = batch((3, 8), 0)
    y = await rm(x)
    assert y.device == ag.device("cpu") and not y.requires_grad  # no context: nothing recorded
    np.testing.assert_allclose(y.numpy(), local(x).detach().numpy(), rtol=1e-6)
    state = await rm.state_dict()
    for name, value in local.state_dict().items():
        np.testing.assert_array_equal(state[name].numpy(), value.numpy())
    assert "Linear(in_features=8, out_features=4" in repr(rm)
    await rm.aclose()
    with pytest.raises(RuntimeError, match="was closed"):
        await rm(x)


async def test_gradients_live_in_the_context(client):
    ag.manual_seed(2)
    local = nn.Sequential(nn.Linear(6, 5), nn.Tanh(), nn.Linear(5, 2))
    rm = await RemoteModule.create(
        client,
        "w2",
        "Sequential",
        layers=[
            ["Linear", {"in_features": 6, "out_features": 5}],
            ["Tanh", {}],
            ["Linear", {"in_features": 5, "out_features": 2}],
        ],
    )
    await rm.load_state_dict(local.state_dict())
    x = batch((4, 6), 3)
    async with dist.context(client) as ctx:
        y = await rm(x)  # the input needs no grad: the parameters do
        assert y.requires_grad and y.grad_fn.name() == "RecvBackward"
        await dist.backward(ctx, [(y**2).sum()])
        by_name = await ctx.get_gradients(rm)
        by_ref = await ctx.get_gradients("w2")
    (local(x) ** 2).sum().backward()
    assert sorted(by_name) == sorted(n for n, _ in local.named_parameters())
    for name, p in local.named_parameters():
        np.testing.assert_allclose(by_name[name].numpy(), p.grad.numpy(), rtol=1e-5, atol=1e-6)
    assert set(by_ref) == set(rm.parameter_refs())
    ref = ParameterRef("w2", rm.module_id, "0.weight")
    np.testing.assert_array_equal(by_ref[ref].numpy(), by_name["0.weight"].numpy())
    await rm.aclose()


@pytest.mark.parametrize(
    "opt_class,kwargs", [(optim.SGD, {"lr": 0.1, "momentum": 0.9}), (optim.Adam, {"lr": 0.01})]
)
async def test_distributed_optimizer_matches_a_local_one(client, opt_class, kwargs):
    ag.manual_seed(3)
    first, second = nn.Linear(5, 4), nn.Linear(4, 3)
    r1 = await remote_copy(client, "w1", first, "Linear", in_features=5, out_features=4)
    r2 = await remote_copy(
        client, "w3", second, "Linear", in_features=4, out_features=3, device="sim:0"
    )
    opt = DistributedOptimizer(opt_class, r1.parameter_refs() + r2.parameter_refs(), **kwargs)
    local_opt = opt_class([*first.parameters(), *second.parameters()], **kwargs)
    assert sorted(opt.workers) == ["w1", "w3"]
    inputs = [batch((6, 5), 10 + step) for step in range(3)]
    await train_like_local(client, ((r1, first), (r2, second)), opt, local_opt, inputs)
    await opt.aclose()
    stats = await client.stats("w1")
    assert stats["optimizers"] == 0
    await r1.aclose()
    await r2.aclose()


async def test_embedding_and_a_loaded_module_class(client):
    emb = await RemoteModule.create(client, "w1", "Embedding", num_embeddings=10, embedding_dim=3)
    scale = await RemoteModule.create(client, "w1", "Scale", features=3)  # from --load
    idx = ag.tensor([[1, 2], [2, 9]])
    async with dist.context(client) as ctx:
        y = await scale(await emb(idx))
        await dist.backward(ctx, [y.sum()])
        grads = await ctx.get_gradients(emb)
    expected = np.zeros((10, 3), np.float32)
    for i in (1, 2, 2, 9):
        expected[i] += 1.0
    np.testing.assert_array_equal(grads["weight"].numpy(), expected)
    await emb.aclose()
    await scale.aclose()


async def test_dropout_train_and_eval(client):
    drop = await RemoteModule.create(client, "w1", "Dropout", p=0.5)
    x = ag.ones(1000)
    assert (await drop(x)).numpy().min() == 0.0
    await drop.eval()
    np.testing.assert_array_equal((await drop(x)).numpy(), np.ones(1000, np.float32))
    await drop.aclose()


async def test_refusals_name_what_was_refused(client):
    with pytest.raises(RemoteError, match="no module class 'Conv9d'.*Linear") as info:
        await RemoteModule.create(client, "w1", "Conv9d")
    assert info.value.worker == "w1"
    with pytest.raises(RemoteError, match="does not serve device sim:1"):
        await RemoteModule.create(
            client, "w1", "Linear", in_features=2, out_features=2, device="sim:1"
        )
    with pytest.raises(TypeError, match="cannot be sent"):
        await RemoteModule.create(client, "w1", "Linear", in_features=object())
    with pytest.raises(RemoteError, match="no optimizer class 'LBFGS'"):
        rm = await RemoteModule.create(client, "w1", "Linear", in_features=2, out_features=2)
        async with dist.context(client) as ctx:
            await DistributedOptimizer("LBFGS", rm.parameter_refs(), lr=1).step(ctx)
    await rm.aclose()
    with pytest.raises(TypeError, match="ParameterRefs"):
        DistributedOptimizer(optim.SGD, [ag.zeros(2, requires_grad=True)], lr=0.1)
