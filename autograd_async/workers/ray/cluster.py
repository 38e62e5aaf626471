"""`RayWorkers`: worker servers started, placed and supervised as Ray actors.

    async with await RayWorkers.start(n=2, devices="cpu,sim:0", load=("my_module",)) as cluster:
        client = await cluster.client(timeout=30.0)
        ...

Ray only places and watches the workers: each actor runs a `WorkerServer` on its own thread
and loop, and clients and peers talk to it over TCP (TLS across nodes), never through Ray.
The workers are told each other's addresses with the `peers.update` method, so worker-to-worker
calls of distributed backward work; a worker restarted with `restart(name)` serves at a new
address that the other workers and the clients made by `client()` are told about.
"""

from __future__ import annotations

import asyncio
import logging
import math
import secrets
import ssl as ssl_module
import weakref
from collections.abc import Mapping, Sequence
from types import ModuleType
from typing import Any

from autograd_async.devices import Device
from autograd_async.distributed import Client
from autograd_async.distributed.auth import check_token
from autograd_async.distributed.errors import DistributedError, UnknownWorkerError

from .actor import WorkerActor
from .session import connect_ray, import_ray, is_single_node
from .spec import LOOPBACK, NODE_ADDRESS, TlsFiles, WorkerSpec, as_tls_files

__all__ = ["STRATEGIES", "RayWorkerError", "RayWorkers"]

logger = logging.getLogger("workers.ray")

STRATEGIES = ("PACK", "SPREAD", "STRICT_PACK", "STRICT_SPREAD")
# Methods of the actor that may run at once: a pending wait_stopped plus start/stop/info.
_ACTOR_CONCURRENCY = 4
_STOP_GRACE = 5.0
# WorkerServer arguments that start fills in itself; worker_options may set the others.
_SET_BY_START = {
    "name",
    "token",
    "devices",
    "ssl",
    "peer_ssl",
    "insecure",
    "peer_transport",
    "registry",
}


class RayWorkerError(DistributedError):
    """A Ray worker could not be started, placed or reached through Ray; names the worker."""

    def __init__(self, worker: str, message: str) -> None:
        self.worker = worker
        super().__init__(f"Ray worker {worker!r}: {message}")


def _cause(exc: BaseException) -> str:
    """The original error inside a Ray task error, as `Type: message`."""
    inner = getattr(exc, "cause", None) or exc
    return f"{type(inner).__name__}: {inner}"


async def _ray_result(ref: Any, timeout: float) -> Any:
    """Await a Ray ObjectRef on this loop, at most `timeout` seconds."""
    return await asyncio.wait_for(asyncio.wrap_future(ref.future()), timeout)


def _check_names(n: int, names: Sequence[str] | None) -> list[str]:
    if names is None:
        if not isinstance(n, int) or n < 1:
            raise ValueError(f"n must be a positive int, got {n!r}")
        return [f"w{i}" for i in range(n)]
    names = [str(x) for x in names]
    if len(names) != n:
        raise ValueError(f"names has {len(names)} entries for n={n} workers")
    if len(set(names)) != len(names) or any(not x.strip() or x != x.strip() for x in names):
        raise ValueError(f"worker names must be distinct, non-empty, unpadded; got {names}")
    return names


def _check_devices(devices: str | Sequence[str], num_gpus: float) -> tuple[str, ...]:
    parts = devices.split(",") if isinstance(devices, str) else list(devices)
    parsed = [Device(str(p).strip()) for p in parts if str(p).strip()]
    if not parsed:
        raise ValueError("a worker needs at least one device")
    visible = math.ceil(num_gpus)  # a fraction of a GPU is still one device
    for dev in parsed:
        if dev.type == "cuda" and dev.index is not None and dev.index >= visible:
            raise ValueError(
                f"workers serve {dev} but each gets num_gpus={num_gpus} from Ray, so it sees "
                f"{visible} GPU(s), the first as cuda:0: ask for num_gpus > {dev.index}"
            )
    return tuple(str(d) for d in parsed)


class RayWorkers:
    """Worker actors on a Ray cluster, their addresses, and clients connected to them."""

    def __init__(
        self,
        ray: ModuleType,
        specs: dict[str, WorkerSpec],
        *,
        actor_options: dict[str, Any],
        placement_group: Any,
        timeout: float,
        start_timeout: float,
        owns_ray: bool,
    ) -> None:
        self._ray = ray
        self._specs = specs
        self._actor_options = actor_options
        self._placement_group = placement_group
        self.timeout = timeout
        self.start_timeout = start_timeout
        self._owns_ray = owns_ray
        self._actors: dict[str, Any] = {}
        self._addresses: dict[str, str] = {}
        self._watchers: dict[str, asyncio.Task[None]] = {}
        self._lost: dict[str, str] = {}
        self._clients: weakref.WeakSet[Client] = weakref.WeakSet()
        self._admin: Client | None = None  # tells the workers where their peers are
        self._restarting = asyncio.Lock()
        self._closed = False

    # ------------------------------------------------------------------ start
    @classmethod
    async def start(
        cls,
        n: int = 2,
        devices: str | Sequence[str] = "cpu",
        token: bytes | str | None = None,
        load: Sequence[str] = (),
        num_cpus: float = 1,
        num_gpus: float = 0,
        strategy: str | None = "SPREAD",
        names: Sequence[str] | None = None,
        *,
        tls: TlsFiles | Mapping[str, str] | tuple[str, ...] | None = None,
        insecure: bool = False,
        timeout: float = 30.0,
        start_timeout: float = 120.0,
        worker_options: Mapping[str, Any] | None = None,
        runtime_env: Mapping[str, Any] | None = None,
    ) -> RayWorkers:
        """Start `n` worker actors (named w0, w1, ... unless `names`), each serving `devices`
        with the functions registered by importing `load`; return once all serve and know
        each other. A `token` is generated when none is given (`cluster.token`). Across
        nodes workers listen on their node's address, which needs `tls` (certificate paths
        read on each node) or an explicit `insecure=True`; on one node, loopback."""
        names = _check_names(n, names)
        device_names = _check_devices(devices, num_gpus)
        if strategy is not None and strategy not in STRATEGIES:
            raise ValueError(f"strategy must be one of {STRATEGIES} or None, got {strategy!r}")
        if isinstance(load, str):
            load = (load,)
        tls_files = as_tls_files(tls)
        if token is None:  # nobody else knows it: only holders of the cluster object connect
            token = secrets.token_hex(32).encode()
        token = check_token(token.encode() if isinstance(token, str) else bytes(token))
        reserved = set(worker_options or {}) & _SET_BY_START
        if reserved:
            raise ValueError(
                f"worker_options cannot set {sorted(reserved)}: start sets them "
                "(name, token=, devices=, tls=, insecure=)"
            )
        bundle = {k: v for k, v in (("CPU", num_cpus), ("GPU", num_gpus)) if v}
        if strategy is not None and not bundle:
            raise ValueError(
                "placement groups need num_cpus or num_gpus > 0; "
                "give strategy=None to place the workers without one"
            )

        ray = import_ray()
        owns_ray = await connect_ray(ray, start_timeout)
        try:
            host = LOOPBACK if is_single_node(ray) else NODE_ADDRESS
            if host != LOOPBACK and tls_files is None and not insecure:
                raise ValueError(
                    "the Ray cluster spans several nodes, so workers listen on their node's "
                    "address: give tls= (certificate paths present on every node) or "
                    "insecure=True to accept plaintext frames on the network"
                )
            pg = None
            if strategy is not None:
                pg = await cls._place(ray, bundle, len(names), strategy, start_timeout)
            options: dict[str, Any] = {
                "num_cpus": num_cpus,
                "num_gpus": num_gpus,
                "max_concurrency": _ACTOR_CONCURRENCY,
                "max_restarts": 0,
            }
            if runtime_env is not None:
                options["runtime_env"] = dict(runtime_env)
            specs = {
                name: WorkerSpec(
                    name,
                    token,
                    device_names,
                    tuple(load),
                    host,
                    tls_files,
                    bool(insecure),
                    num_gpus,
                    dict(worker_options or {}),
                )
                for name in names
            }
        except BaseException:
            if owns_ray:
                await asyncio.to_thread(ray.shutdown)
            raise
        cluster = cls(
            ray,
            specs,
            actor_options=options,
            placement_group=pg,
            timeout=timeout,
            start_timeout=start_timeout,
            owns_ray=owns_ray,
        )
        try:
            await cluster._start_all()
        except BaseException:
            await cluster.close()
            raise
        return cluster

    @staticmethod
    async def _place(
        ray: ModuleType, bundle: dict[str, float], count: int, strategy: str, timeout: float
    ) -> Any:
        from ray.util.placement_group import placement_group, remove_placement_group  # noqa: PLC0415

        pg = placement_group([dict(bundle)] * count, strategy=strategy)
        try:
            await _ray_result(pg.ready(), timeout)
        except TimeoutError:
            remove_placement_group(pg)
            raise TimeoutError(
                f"Ray could not place {count} workers of {bundle} with strategy {strategy} "
                f"within {timeout} s; resources free now: {ray.available_resources()}"
            ) from None
        except BaseException:
            remove_placement_group(pg)
            raise
        return pg

    def _new_actor(self, name: str) -> Any:
        options = dict(self._actor_options)
        if self._placement_group is not None:
            from ray.util.scheduling_strategies import (  # noqa: PLC0415
                PlacementGroupSchedulingStrategy,
            )

            options["scheduling_strategy"] = PlacementGroupSchedulingStrategy(
                self._placement_group, placement_group_bundle_index=list(self._specs).index(name)
            )
        remote = self._ray.remote(WorkerActor)
        return remote.options(**options).remote(self._specs[name])

    async def _start_actor(self, name: str, actor: Any) -> str:
        """Wait until `actor` serves; its address as host:port. Errors name the worker."""
        try:
            host, port = await _ray_result(
                actor.start.remote(self.start_timeout), self.start_timeout + 5.0
            )
        except TimeoutError:
            raise RayWorkerError(
                name, f"not serving within {self.start_timeout} s (unplaceable, or stuck starting)"
            ) from None
        except self._ray.exceptions.RayError as exc:
            raise RayWorkerError(name, f"failed to start: {_cause(exc)}") from exc
        return f"{host}:{port}"

    async def _start_all(self) -> None:
        for name in self._specs:
            self._actors[name] = self._new_actor(name)
        started = await asyncio.gather(
            *(self._start_actor(name, actor) for name, actor in self._actors.items()),
            return_exceptions=True,
        )
        addresses: list[str] = []
        for result in started:
            if isinstance(result, BaseException):
                raise result
            addresses.append(result)
        self._addresses = dict(zip(self._actors, addresses, strict=True))
        self._admin = Client(
            self._addresses,
            token=self._token,
            timeout=self.timeout,
            name="ray-cluster",
            **self._client_tls(),
        )
        await self._admin.start()
        await asyncio.gather(*(self._tell_peers(name) for name in self._addresses))
        for name in self._actors:
            self._watch(name)
        logger.info("Ray workers serving: %s", self._addresses)

    async def _tell_peers(self, name: str) -> None:
        """Tell `name` where every other worker is."""
        assert self._admin is not None
        others = {w: a for w, a in self._addresses.items() if w != name}
        if others:
            await self._admin.update_peers(name, others)

    # ------------------------------------------------------------- properties
    @property
    def _token(self) -> bytes:
        return next(iter(self._specs.values())).token

    @property
    def token(self) -> bytes:
        """The shared token (generated by `start` when none was given)."""
        return self._token

    @property
    def names(self) -> list[str]:
        """The workers' names."""
        return list(self._specs)

    @property
    def addresses(self) -> dict[str, str]:
        """Each worker's name and the host:port it serves at now."""
        return dict(self._addresses)

    @property
    def lost(self) -> dict[str, str]:
        """Workers whose actor Ray reported dead (and not restarted since), with the reason."""
        return dict(self._lost)

    @property
    def placement_group(self) -> Any:
        """The Ray placement group the workers are placed in (None with strategy=None)."""
        return self._placement_group

    def actor(self, name: str) -> Any:
        """The Ray actor handle of worker `name`."""
        self._spec(name)
        return self._actors[name]

    def _spec(self, name: str) -> WorkerSpec:
        spec = self._specs.get(name)
        if spec is None:
            raise UnknownWorkerError(name, list(self._specs))
        return spec

    async def info(self, name: str) -> dict[str, Any]:
        """Where worker `name` runs: address, pid, Ray node, GPU ids, CUDA_VISIBLE_DEVICES."""
        self._check_open()
        try:
            return await _ray_result(self.actor(name).info.remote(), self.timeout)
        except self._ray.exceptions.RayError as exc:
            raise RayWorkerError(name, f"its actor does not answer: {_cause(exc)}") from exc

    def __repr__(self) -> str:
        state = "closed" if self._closed else "open"
        return f"<RayWorkers {state}, workers {self._addresses}>"

    # ---------------------------------------------------------------- clients
    def _client_tls(self, ssl: ssl_module.SSLContext | None = None) -> dict[str, Any]:
        if ssl is not None:
            return {"ssl": ssl}
        tls = next(iter(self._specs.values())).tls
        if tls is None:
            return {}
        return {"tls_ca": tls.ca, "tls_cert": tls.cert, "tls_key": tls.key}

    async def client(
        self,
        timeout: float = 30.0,
        *,
        name: str = "client",
        ssl: ssl_module.SSLContext | None = None,
    ) -> Client:
        """A Client of every worker, connected, on this loop; it is told of restarts (and is
        the caller's to close). With `tls`, it verifies the workers against the CA file and
        presents the certificate (paths read here); `ssl` replaces that context."""
        self._check_open()
        client = Client(
            self._addresses, token=self._token, timeout=timeout, name=name, **self._client_tls(ssl)
        )
        await client.start()
        try:
            await client.connect()
        except BaseException:
            await client.aclose()
            raise
        self._clients.add(client)
        return client

    def _point_clients(self, name: str, address: str, *, reconnect: bool = False) -> None:
        """Point the cluster's own client and every client made by `client()` at `address`
        for `name`; with `reconnect`, drop their channel to it first (its requests in flight
        fail as WorkerLostError)."""
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        for client in [self._admin, *self._clients]:
            if client is None:
                continue

            def update(client: Client = client) -> None:
                if not reconnect or client.remove_address(name):
                    client.set_address(name, address)

            loop = client.loop
            if loop is None or loop is running or loop.is_closed():
                update()
            else:  # a client on another thread's loop: its channels live there
                loop.call_soon_threadsafe(update)

    # ------------------------------------------------------------ supervision
    def _watch(self, name: str) -> None:
        """Keep one `wait_stopped` call pending on the actor: Ray fails it when the actor
        dies (crash, ray.kill, node loss), and then every channel to it is dropped."""
        actor = self._actors[name]
        ref = actor.wait_stopped.remote()
        task = asyncio.get_running_loop().create_task(
            self._watcher(name, actor, ref), name=f"ray-watch-{name}"
        )
        self._watchers[name] = task

    async def _watcher(self, name: str, actor: Any, ref: Any) -> None:
        try:
            await asyncio.wrap_future(ref.future())
            return  # stopped on request
        except self._ray.exceptions.RayError as exc:
            reason = _cause(exc)
        if self._closed or self._actors.get(name) is not actor:
            return
        self._lost[name] = reason
        logger.warning("Ray worker %r died: %s", name, reason)
        # A process killed closes its sockets, but a lost node may leave them open until a
        # timeout: drop the channels now, so requests waiting on it fail as WorkerLostError.
        address = self._addresses[name]
        self._point_clients(name, address, reconnect=True)
        if self._admin is not None:
            others = [w for w in self._addresses if w != name and w not in self._lost]
            results = await asyncio.gather(
                *(self._admin.update_peers(w, {name: address}, remove=[name]) for w in others),
                return_exceptions=True,
            )
            for worker, result in zip(others, results, strict=True):
                if isinstance(result, BaseException):
                    logger.warning(
                        "could not tell worker %r that %r died: %s", worker, name, result
                    )

    async def restart(self, name: str) -> str:
        """Replace worker `name` (ending its actor if it still runs) by a new actor in the
        same placement bundle; tell the other workers and the clients made by `client()`
        its new address, and return it."""
        self._check_open()
        self._spec(name)
        async with self._restarting:
            watcher = self._watchers.pop(name, None)
            if watcher is not None:
                watcher.cancel()
            await self._end_actor(name, self._actors[name], grace=_STOP_GRACE)
            actor = self._new_actor(name)
            self._actors[name] = actor
            try:
                address = await self._start_actor(name, actor)
            except BaseException:
                self._ray.kill(actor)
                self._lost[name] = "its restart failed"
                raise
            self._addresses[name] = address
            self._lost.pop(name, None)
            self._point_clients(name, address)
            others = [w for w in self._addresses if w != name and w not in self._lost]
            admin = self._admin
            assert admin is not None  # made by start, which made the worker restarted here
            await asyncio.gather(
                self._tell_peers(name),
                *(admin.update_peers(w, {name: address}) for w in others),
            )
            self._watch(name)
            logger.info("Ray worker %r restarted at %s", name, address)
            return address

    async def _end_actor(self, name: str, actor: Any, grace: float) -> None:
        """Stop the actor's server (up to `grace` s, when it still answers), then kill it."""
        try:
            await _ray_result(actor.stop.remote(grace), grace + 5.0)
        except (TimeoutError, self._ray.exceptions.RayError) as exc:
            logger.debug("Ray worker %r did not stop cleanly: %s", name, _cause(exc))
        try:
            self._ray.kill(actor, no_restart=True)
        except ValueError:  # not an actor handle any more
            pass

    # -------------------------------------------------------------- lifecycle
    def _check_open(self) -> None:
        if self._closed:
            raise DistributedError("this RayWorkers cluster is closed")

    async def close(self, grace: float = _STOP_GRACE) -> None:
        """Stop every worker (in-flight requests get `grace` s), kill their actors, remove the
        placement group; disconnect from Ray when `start` connected."""
        if self._closed:
            return
        self._closed = True
        for task in self._watchers.values():
            task.cancel()
        await asyncio.gather(*self._watchers.values(), return_exceptions=True)
        self._watchers.clear()
        if self._admin is not None:
            await self._admin.aclose()
        await asyncio.gather(*(self._end_actor(n, a, grace) for n, a in self._actors.items()))
        if self._placement_group is not None:
            from ray.util.placement_group import remove_placement_group  # noqa: PLC0415

            remove_placement_group(self._placement_group)
        if self._owns_ray:
            try:
                await asyncio.wait_for(asyncio.to_thread(self._ray.shutdown), 60.0)
            except TimeoutError:
                logger.warning("Ray did not shut down within 60 s")

    async def __aenter__(self) -> RayWorkers:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()
