"""Workers as Ray actors (`workers.ray.RayWorkers`) on one local Ray instance shared by the
module: distributed backward through two actors, remote modules trained by a distributed
optimizer, a worker killed during backward, its restart, and the error without Ray."""

from __future__ import annotations

import asyncio
import builtins
import os

import numpy as np
import pytest
import pytest_asyncio

import autograd_async as ag
from autograd_async import distributed as dist
from autograd_async import nn, optim
from autograd_async.distributed import DistributedOptimizer, RemoteModule, WorkerLostError
from autograd_async.workers.ray import RAY_MISSING, RayWorkerError, RayWorkers, TlsFiles

from .conftest import TOKEN, WORKER_LOAD, train_like_local

ray = pytest.importorskip("ray")

# Hang guards, not speed bounds: starting Ray took 25 s on the 2-core machine under load.
pytestmark = [pytest.mark.timeout(240), pytest.mark.asyncio(loop_scope="module")]

CLIENT_TIMEOUT = 10.0


@pytest.fixture(scope="module")
def local_ray():
    """One local Ray instance for the module (the user's `ray.init`, which RayWorkers uses)."""
    if ray.is_initialized():  # someone else's: leave it as it is
        yield
        return
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def cluster(local_ray):
    """Two worker actors, w0 and w1, serving the test functions on cpu and sim:0."""
    workers = await RayWorkers.start(
        n=2, devices="cpu,sim:0", token=TOKEN, load=(WORKER_LOAD,), num_cpus=0.5, strategy="PACK"
    )
    yield workers
    await workers.close()


@pytest_asyncio.fixture(loop_scope="module")
async def client(cluster):
    c = await cluster.client(timeout=CLIENT_TIMEOUT)
    yield c
    await c.aclose()


def data(shape, seed):
    return np.random.default_rng(seed).standard_normal(shape)


async def chain(client, x, peer_function="mul", **kwargs):
    """x -> w0 (tanh) -> w1 (peer_function) -> loss here, under a distributed context."""
    async with dist.context(client) as ctx:
        y = await client.call(
            "w0", "tanh_then_peer", x, peer="w1", function=peer_function, **kwargs
        )
        loss = (y * y).sum()
        await dist.backward(ctx, [loss])
    return loss


def process_exists(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def local_chain_grad(x):
    xl = ag.tensor(x.detach().numpy(), requires_grad=True)
    ((xl.tanh() * 3.0) ** 2).sum().backward()
    return xl.grad.numpy()


async def test_workers_serve_on_loopback_and_know_each_other(cluster, client):
    addresses = cluster.addresses
    assert sorted(addresses) == ["w0", "w1"] == cluster.names
    assert all(a.startswith("127.0.0.1:") for a in addresses.values())
    pids = set()
    for name in ("w0", "w1"):
        stats = await client.stats(name)
        assert stats["name"] == name and stats["devices"] == ["cpu", "sim:0"]
        assert stats["peers"] == [other for other in ("w0", "w1") if other != name]
        info = await cluster.info(name)
        assert info["address"] == addresses[name] and info["pid"] == stats["pid"]
        pids.add(stats["pid"])
    assert len(pids) == 2  # two actor processes, neither of them this one
    assert cluster.actor("w0") is not cluster.actor("w1")


async def test_distributed_backward_through_two_actors_matches_local(client):
    x = ag.tensor(data((3, 4), 0), requires_grad=True)
    await chain(client, x, args=[3.0])
    np.testing.assert_allclose(x.grad.numpy(), local_chain_grad(x), rtol=1e-12, atol=1e-12)
    for worker in ("w0", "w1"):
        assert (await client.stats(worker))["contexts"] == 0


async def test_remote_modules_on_ray_workers_train_like_local_ones(client):
    ag.manual_seed(3)
    first, second = nn.Linear(5, 4), nn.Linear(4, 3)
    r1 = await RemoteModule.create(client, "w0", "Linear", in_features=5, out_features=4)
    r2 = await RemoteModule.create(
        client, "w1", "Linear", in_features=4, out_features=3, device="sim:0"
    )
    await r1.load_state_dict(first.state_dict())
    await r2.load_state_dict(second.state_dict())
    opt = DistributedOptimizer(
        optim.SGD, r1.parameter_refs() + r2.parameter_refs(), lr=0.1, momentum=0.9
    )
    local_opt = optim.SGD([*first.parameters(), *second.parameters()], lr=0.1, momentum=0.9)
    inputs = [ag.tensor(data((6, 5), 10 + step).astype(np.float32)) for step in range(3)]
    await train_like_local(client, ((r1, first), (r2, second)), opt, local_opt, inputs)
    await opt.aclose()
    await r1.aclose()
    await r2.aclose()


async def test_a_killed_actor_is_a_lost_worker_and_a_restarted_one_serves(cluster, client):
    before = cluster.addresses["w1"]
    pid = (await cluster.info("w1"))["pid"]
    x = ag.tensor(data((2, 3), 1), requires_grad=True)
    async with dist.context(client) as ctx:
        # w1's part of backward sleeps 60 s: it is killed in the middle of it.
        y = await client.call(
            "w0", "tanh_then_peer", x, peer="w1", function="slow_backward", kwargs={"seconds": 60.0}
        )
        requests = (await client.stats("w1"))["requests"]
        backward = asyncio.ensure_future(dist.backward(ctx, [(y * y).sum()]))
        for polls in range(1, 1000):  # until w1 has one request more than these stats calls
            if (await client.stats("w1"))["requests"] > requests + polls:
                break
            assert not backward.done(), backward
            await asyncio.sleep(0.05)
        ray.kill(cluster.actor("w1"))
        with pytest.raises(WorkerLostError) as info:
            await asyncio.wait_for(backward, CLIENT_TIMEOUT + 30)  # a hang guard
    assert info.value.worker == "w1" and "'w1'" in str(info.value)
    for _ in range(600):  # ray.kill is asynchronous: the process ends a little later
        if not process_exists(pid):
            break
        await asyncio.sleep(0.05)
    with pytest.raises(WorkerLostError, match="'w1'"):
        await client.call("w1", "mul", x, 2.0)
    for _ in range(300):  # Ray reports the death to the cluster's watcher
        if "w1" in cluster.lost:
            break
        await asyncio.sleep(0.1)
    assert "w1" in cluster.lost
    # Nothing is left waiting: only this test and the cluster's watchers remain.
    await asyncio.sleep(0.2)
    others = {t for t in asyncio.all_tasks() if t is not asyncio.current_task()}
    assert all(t.get_name().startswith("ray-watch-") for t in others), others
    assert (await client.stats("w0"))["contexts"] == 0

    after = await cluster.restart("w1")
    assert after != before and cluster.addresses["w1"] == after and "w1" not in cluster.lost
    x.grad = None
    await chain(client, x, args=[3.0])  # the same client, and w0, reach the new w1
    np.testing.assert_allclose(x.grad.numpy(), local_chain_grad(x), rtol=1e-12, atol=1e-12)
    assert (await client.stats("w0"))["peers"] == ["w1"]


async def test_restarting_a_live_worker_replaces_it_everywhere(cluster, client):
    old = await cluster.info("w0")
    address = await cluster.restart("w0")
    new = await cluster.info("w0")
    assert address == new["address"] == cluster.addresses["w0"] != old["address"]
    assert new["pid"] != old["pid"]
    assert (await client.stats("w0"))["pid"] == new["pid"]
    # w1 was told the new address: a chain that starts on w1 reaches the new w0.
    x = ag.tensor(data((2, 5), 5), requires_grad=True)
    async with dist.context(client) as ctx:
        y = await client.call("w1", "tanh_then_peer", x, peer="w0", function="mul", args=[3.0])
        await dist.backward(ctx, [(y * y).sum()])
    np.testing.assert_allclose(x.grad.numpy(), local_chain_grad(x), rtol=1e-12, atol=1e-12)
    with pytest.raises(dist.UnknownWorkerError, match="w7"):
        cluster.actor("w7")
    with pytest.raises(dist.UnknownWorkerError, match="w7"):
        await cluster.restart("w7")


async def test_start_checks_its_arguments_before_touching_ray(monkeypatch):
    def no_ray():
        raise AssertionError("Ray was reached")

    monkeypatch.setattr("autograd_async.workers.ray.cluster.import_ray", no_ray)
    with pytest.raises(ValueError, match="names has 1 entries for n=2"):
        await RayWorkers.start(n=2, names=["a"])
    with pytest.raises(ValueError, match="distinct"):
        await RayWorkers.start(n=2, names=["a", "a"])
    with pytest.raises(ValueError, match="cuda:1 but each gets num_gpus=1 .* sees 1 GPU"):
        await RayWorkers.start(n=1, devices="cuda:1", num_gpus=1)
    with pytest.raises(ValueError, match="cuda:0 .* sees 0 GPU.*num_gpus > 0"):
        await RayWorkers.start(n=1, devices="cpu,cuda:0")
    with pytest.raises(ValueError, match="strategy must be one of"):
        await RayWorkers.start(n=1, strategy="SCATTER")
    with pytest.raises(ValueError, match="at least"):
        await RayWorkers.start(n=1, token=b"short")
    with pytest.raises(ValueError, match=r"worker_options cannot set \['token'\]"):
        await RayWorkers.start(n=1, worker_options={"token": b"x" * 32, "context_ttl": 5.0})
    with pytest.raises(TypeError, match="SSLContext cannot be sent"):
        await RayWorkers.start(n=1, tls=object())


async def test_without_ray_the_error_says_how_to_install_it(monkeypatch):
    real_import = builtins.__import__

    def without_ray(name, *args, **kwargs):
        if name == "ray" or name.startswith("ray."):
            raise ImportError(f"No module named {name!r}")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", without_ray)
    with pytest.raises(ImportError) as info:
        await RayWorkers.start(n=1)
    assert str(info.value) == RAY_MISSING
    assert "pip install 'autograd-async[ray]'" in RAY_MISSING


async def test_across_nodes_workers_need_tls_or_insecure(local_ray, monkeypatch):
    # The decision is the driver's: pretend the cluster spans nodes.
    monkeypatch.setattr("autograd_async.workers.ray.cluster.is_single_node", lambda ray: False)
    with pytest.raises(ValueError, match="tls=.*insecure=True"):
        await RayWorkers.start(n=1, load=(WORKER_LOAD,))
    async with await RayWorkers.start(
        n=1,
        names=["n0"],
        load=(WORKER_LOAD,),
        insecure=True,
        num_cpus=0.5,
        strategy=None,
        worker_options={"context_ttl": 60.0},
    ) as plain:
        host = plain.addresses["n0"].rpartition(":")[0]
        assert host == (await plain.info("n0"))["node_ip"] and host != "127.0.0.1"
        async with await plain.client(timeout=CLIENT_TIMEOUT) as c:
            y = await c.call("n0", "mul", ag.tensor([1.0, 2.0]), 3.0)
            np.testing.assert_allclose(y.numpy(), [3.0, 6.0])
            assert (await c.stats("n0"))["context_ttl"] == 60.0  # worker_options reach it
        assert len(plain.token) >= 32  # generated: none was given


async def test_tls_files_reach_every_worker_and_the_client(local_ray, tls_files):
    tls = TlsFiles(str(tls_files.cert), str(tls_files.key), str(tls_files.ca))
    async with await RayWorkers.start(
        n=2,
        names=["t0", "t1"],
        token=TOKEN,
        load=(WORKER_LOAD,),
        tls=tls,
        num_cpus=0.5,
        strategy=None,
    ) as secure:
        async with await secure.client(timeout=CLIENT_TIMEOUT) as c:
            x = ag.tensor(data((3, 4), 2), requires_grad=True)
            async with dist.context(c) as ctx:  # client -> t0 -> t1, all over mutual TLS
                y = await c.call("t0", "tanh_then_peer", x, peer="t1", function="mul", args=[3.0])
                await dist.backward(ctx, [(y * y).sum()])
            np.testing.assert_allclose(x.grad.numpy(), local_chain_grad(x), rtol=1e-12)
        # Without a client certificate signed by the CA, the workers refuse the connection.
        async with dist.Client(
            secure.addresses, token=TOKEN, timeout=CLIENT_TIMEOUT, tls_ca=tls.ca
        ) as stranger:
            with pytest.raises((WorkerLostError, dist.AuthenticationError)):
                await stranger.stats("t0")


async def test_a_worker_that_cannot_start_is_named(local_ray):
    with pytest.raises(RayWorkerError, match="'bad'.*failed to start.*no_such_module"):
        await RayWorkers.start(
            n=1,
            names=["bad"],
            load=("no_such_module",),
            num_cpus=0.5,
            strategy=None,
            start_timeout=60.0,
        )


async def test_a_gpu_worker_computes_on_the_gpu_ray_assigned(local_ray):
    if ray.cluster_resources().get("GPU", 0) < 1:
        pytest.skip("Ray sees no GPU on this machine")
    pytest.importorskip("cupy")
    async with await RayWorkers.start(
        n=1, names=["g0"], devices="cuda:0", token=TOKEN, num_cpus=0.5, num_gpus=1, strategy=None
    ) as gpu:
        info = await gpu.info("g0")
        assert len(info["gpu_ids"]) == 1
        assert info["cuda_visible_devices"] == info["gpu_ids"][0]  # its cuda:0 is that GPU
        async with await gpu.client(timeout=CLIENT_TIMEOUT) as c:
            assert (await c.stats("g0"))["devices"] == ["cuda:0"]
            x = ag.tensor(data((3, 4), 4), requires_grad=True)
            async with dist.context(c) as ctx:
                y = await c.call("g0", "mul", x, 3.0)
                await dist.backward(ctx, [(y * y).sum()])
            np.testing.assert_allclose(x.grad.numpy(), 18.0 * x.detach().numpy(), rtol=1e-12)
