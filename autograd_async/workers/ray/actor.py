"""`WorkerActor`: the Ray actor that hosts one `WorkerServer`.

The server runs on a thread of its own with its own event loop (uvloop when installed), so the
actor's methods (start, stop, info, wait_stopped) stay callable while it serves, and nothing
of the data path goes through Ray: clients and peers reach the server over its TCP address.
The class imports Ray only inside methods, so it can be imported (and pickled by reference)
where Ray is missing; `RayWorkers` wraps it with `ray.remote`.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import importlib
import logging
import os
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

from autograd_async.devices import (
    Device,
    cuda_device_count,
    set_sim_device_count,
    sim_device_count,
)
from autograd_async.distributed.tls import client_context, server_context
from autograd_async.engine import shutdown as shutdown_engine

from ..server import WorkerServer
from .spec import NODE_ADDRESS, WorkerSpec

__all__ = ["WorkerActor"]

logger = logging.getLogger("workers.ray")
T = TypeVar("T")

# Set by the user to keep Ray from choosing CUDA_VISIBLE_DEVICES; then we leave it alone too.
NOSET_CUDA = "RAY_EXPERIMENTAL_NOSET_CUDA_VISIBLE_DEVICES"


def honour_ray_gpus(num_gpus: float) -> list[str]:
    """Make this process see exactly the GPUs Ray assigned (its cuda:0 is the first); return
    their ids. Must run before CUDA is first used in the process."""
    if num_gpus <= 0:
        return []
    import ray  # noqa: PLC0415 - the actor runs inside Ray

    ids = [str(i) for i in ray.get_gpu_ids()]
    if ids and not os.environ.get(NOSET_CUDA):
        # Ray normally sets this already; a reused worker process or a cleared variable
        # would otherwise leave every GPU of the node visible and cuda:0 the wrong one.
        os.environ["CUDA_VISIBLE_DEVICES"] = ",".join(ids)
    return ids


def _new_loop() -> asyncio.AbstractEventLoop:
    try:
        import uvloop  # noqa: PLC0415 - optional on platforms without it
    except ImportError:
        return asyncio.new_event_loop()
    return uvloop.new_event_loop()


async def serve_worker(spec: WorkerSpec) -> Any:
    """Build and start the WorkerServer that `spec` describes, on the running loop."""
    devices = [Device(d) for d in spec.devices]
    sims = [d.index for d in devices if d.type == "sim" and d.index is not None]
    if sims and max(sims) >= sim_device_count():
        set_sim_device_count(max(sims) + 1)
    server_ssl = peer_ssl = None
    if spec.tls is not None:
        server_ssl = server_context(spec.tls.cert, spec.tls.key, spec.tls.ca)
        peer_ssl = client_context(spec.tls.ca, spec.tls.cert, spec.tls.key)
    server = WorkerServer(
        spec.name,
        token=spec.token,
        devices=devices,
        ssl=server_ssl,
        peer_ssl=peer_ssl,
        insecure=spec.insecure,
        **dict(spec.options),
    )
    host = spec.host
    if host == NODE_ADDRESS:
        import ray  # noqa: PLC0415

        host = ray.util.get_node_ip_address()
    await server.start(host, 0)
    return server


# No method of the actor may be `async def`: Ray would make it an async actor, whose methods
# share one loop, and the pending wait_stopped would block the others.
class WorkerActor:
    """Hosts one worker: `start` serves it and returns its address; `stop` ends it."""

    def __init__(self, spec: WorkerSpec) -> None:
        self.spec = spec
        self.gpu_ids: list[str] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._server: Any = None
        self._stopped = threading.Event()
        self._lock = threading.Lock()

    # ------------------------------------------------------------------ serving
    def start(self, timeout: float) -> tuple[str, int]:
        """Build the WorkerServer, serve it on its own thread and loop; return (host, port)."""
        with self._lock:
            if self._server is not None:
                return self._server.address
            spec = self.spec
            self.gpu_ids = honour_ray_gpus(spec.num_gpus)
            if self.gpu_ids:
                self._check_gpus()
            for module in spec.load:  # the driver's choice, as `python -m workers --load`
                importlib.import_module(module)
            loop = _new_loop()
            thread = threading.Thread(
                target=self._run_loop, args=(loop,), name=f"worker-{spec.name}-loop", daemon=True
            )
            thread.start()
            self._loop, self._thread = loop, thread
            try:
                self._server = self._on_loop(serve_worker(spec), timeout)
            except BaseException:
                self._end_loop()
                raise
            return self._server.address

    def _check_gpus(self) -> None:
        # CuPy reads CUDA_VISIBLE_DEVICES once, when CUDA starts in the process: count now.
        # (0 means no CuPy: a cuda device then fails with the server's own clear error.)
        seen = cuda_device_count()
        if seen and seen != len(self.gpu_ids):
            raise RuntimeError(
                f"worker {self.spec.name!r} sees {seen} GPU(s) but Ray assigned it "
                f"{self.gpu_ids}: CUDA was initialised in this process before "
                f"CUDA_VISIBLE_DEVICES={os.environ.get('CUDA_VISIBLE_DEVICES')!r} was set"
            )

    def _run_loop(self, loop: asyncio.AbstractEventLoop) -> None:
        asyncio.set_event_loop(loop)
        try:
            loop.run_forever()
        finally:
            loop.close()

    def _on_loop(self, coro: Coroutine[Any, Any, T], timeout: float) -> T:
        """Run `coro` on the server's loop and wait for it, at most `timeout` seconds."""
        assert self._loop is not None
        future = asyncio.run_coroutine_threadsafe(coro, self._loop)
        try:
            return future.result(timeout)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise TimeoutError(f"worker {self.spec.name!r}: no result within {timeout} s") from None

    def _end_loop(self) -> None:
        loop, thread = self._loop, self._thread
        if loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(loop.stop)
        if thread is not None:
            thread.join(10.0)
        self._stopped.set()

    def stop(self, grace: float = 10.0) -> bool:
        """Finish in-flight requests (up to `grace` s), release contexts, stop serving; False
        when it was not serving."""
        with self._lock:
            server, self._server = self._server, None
            if server is None:
                self._stopped.set()
                return False
            try:
                self._on_loop(server.stop(grace), grace + 10.0)
            finally:
                self._end_loop()
                shutdown_engine(2.0)
            return True

    # -------------------------------------------------------------- supervision
    def wait_stopped(self) -> bool:
        """Block until `stop`: the driver keeps one call of this pending per actor, so it
        learns from Ray when the actor dies."""
        self._stopped.wait()
        return True

    def info(self) -> dict[str, Any]:
        """Where and what this worker is: name, address, pid, node, GPUs."""
        import ray  # noqa: PLC0415

        server = self._server
        return {
            "name": self.spec.name,
            "address": None if server is None else "{}:{}".format(*server.address),
            "pid": os.getpid(),
            "node_id": ray.get_runtime_context().get_node_id(),
            "node_ip": ray.util.get_node_ip_address(),
            "gpu_ids": list(self.gpu_ids),
            "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"),
        }

    def __repr__(self) -> str:
        return f"WorkerActor({self.spec.name!r})"
