"""`Client`: one multiplexed channel per worker, remote calls, and their receive nodes.

    async with Client({"w1": "127.0.0.1:7001"}, token=token) as client:
        y = await client.call("w1", "tanh", x)

Channels come from the client's `transport` (channel.py): TCP, with TLS when configured, unless
another one is given, e.g. `MemoryTransport` (memory.py) for workers in the same process.
Workers can be added, moved or removed at any time (`set_address`, `remove_address`).

Connections are opened lazily, on a worker's first use (`await client.connect()` opens them all
up front), and reopened on the next use after one was lost, so a restarted worker is picked up
without a new client. Any number of calls may be in flight on one connection.

A worker that does not answer a request within `timeout` seconds is taken as lost: the request
raises `WorkerLostError`, the connection is dropped (its other requests fail the same way) and
the next call reconnects.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import itertools
import logging
import os
import secrets
import ssl as ssl_module
from collections.abc import Coroutine, Mapping, Sequence
from typing import Any, TypeVar

import numpy as np

from ..core.tensor import Tensor
from ..devices import DeviceError
from ..grad_mode import is_grad_enabled
from . import methods
from .auth import check_token
from .channel import Channel, TcpTransport, Transport, parse_tcp_address
from .codec import check_simple, output_device, pack_args, to_device
from .connection import ConnectionState
from .context import COUNTER_BITS, ContextBase, current_context
from .errors import (
    AuthenticationError,
    ConnectionClosedError,
    DistributedError,
    RemoteError,
    ResourceExhausted,
    UnknownWorkerError,
    WorkerLostError,
)
from .recv import Recv, RemoteCall
from .tls import client_context
from .wire import DEFAULT_MAX_FRAME_BYTES

__all__ = ["DEFAULT_TIMEOUT", "Client", "parse_address"]

logger = logging.getLogger("autograd_async.distributed")

DEFAULT_TIMEOUT = 30.0
T = TypeVar("T")


def parse_address(address: str | tuple[str, int]) -> tuple[str, int]:
    """`"host:port"` or `(host, port)` as a (host, port) pair (a TCP address)."""
    return parse_tcp_address(address)


def _address_text(address: Any) -> str:
    """A (host, port) pair as the `host:port` text that travels in `peers.update`."""
    if isinstance(address, tuple) and len(address) == 2:
        return f"{address[0]}:{address[1]}"
    return str(address)


class Client:
    """Connections to named workers, and remote calls whose outputs join the local graph."""

    def __init__(
        self,
        workers: Mapping[str, Any] | None = None,
        *,
        token: bytes | str,
        timeout: float = DEFAULT_TIMEOUT,
        connect_timeout: float | None = None,
        name: str = "client",
        ssl: ssl_module.SSLContext | None = None,
        server_hostname: str | None = None,
        max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES,
        tls_ca: str | os.PathLike[str] | None = None,
        tls_cert: str | os.PathLike[str] | None = None,
        tls_key: str | os.PathLike[str] | None = None,
        transport: Transport | None = None,
    ) -> None:
        self._token = check_token(token.encode() if isinstance(token, str) else bytes(token))
        self.timeout = float(timeout)
        self.connect_timeout = float(
            min(timeout, 10.0) if connect_timeout is None else connect_timeout
        )
        self.name = name
        if tls_ca is not None or tls_cert is not None or tls_key is not None:
            if ssl is not None:
                raise ValueError("give either ssl= or the tls_* files, not both")
            # Servers are verified against tls_ca; tls_cert/tls_key answer mutual TLS.
            ssl = client_context(tls_ca, tls_cert, tls_key)
        if transport is None:
            transport = TcpTransport(
                ssl=ssl, server_hostname=server_hostname, max_frame_bytes=max_frame_bytes
            )
        elif ssl is not None or server_hostname is not None:
            raise ValueError(
                "TLS settings belong to the transport: give either transport= or "
                "ssl=/server_hostname=/tls_*, not both"
            )
        self.transport = transport
        self._addresses: dict[str, Any] = {}
        for worker, address in (workers or {}).items():
            self._addresses[str(worker)] = transport.parse_address(address)
        self._conns: dict[str, Channel] = {}
        self._connecting: dict[str, asyncio.Task[Channel]] = {}
        self._state = ConnectionState.UNOPENED
        self._loop: asyncio.AbstractEventLoop | None = None
        # High bits of this client's context ids: see context.py.
        self.origin = secrets.randbits(16)
        self._context_counter = itertools.count(1)
        # Workers whose last contact failed (timed out, connection lost or refused), until a
        # connection to them opens again: leaving a context does not wait on them.
        self._lost: set[str] = set()

    # ------------------------------------------------------------------ lifecycle
    @property
    def state(self) -> ConnectionState:
        """UNOPENED until started, OPEN, CLOSED after close."""
        return self._state

    @property
    def workers(self) -> list[str]:
        """The names of the workers this client knows."""
        return list(self._addresses)

    @property
    def connected(self) -> list[str]:
        """The workers with an open connection now (connections open on first use)."""
        return [w for w, c in self._conns.items() if c.state is ConnectionState.OPEN]

    @property
    def loop(self) -> asyncio.AbstractEventLoop | None:
        """The event loop the client was started on (its connections live there)."""
        return self._loop

    async def start(self) -> Client:
        """Bind the client to the running loop; connections open lazily on first use."""
        if self._state is ConnectionState.CLOSED:
            raise ConnectionClosedError(f"client {self.name!r} is closed")
        if self._state is ConnectionState.UNOPENED:
            self._loop = asyncio.get_running_loop()
            self._state = ConnectionState.OPEN
        return self

    async def connect(self, *workers: str) -> None:
        """Open the connections to `workers` (all known ones by default) now, not on first use."""
        names = workers or tuple(self._addresses)
        results = await asyncio.gather(
            *(self._connection(w) for w in names), return_exceptions=True
        )
        for result in results:  # every attempt has finished; report the first failure
            if isinstance(result, BaseException):
                raise result

    def close(self) -> None:
        """Start closing every connection; pending requests fail."""
        if self._state is ConnectionState.CLOSED:
            return
        self._state = ConnectionState.CLOSED
        for task in self._connecting.values():
            task.cancel()
        for conn in self._conns.values():
            conn.close()

    async def aclose(self) -> None:
        """Close every connection and wait until they are closed."""
        self.close()
        conns, self._conns = list(self._conns.values()), {}
        await asyncio.gather(*(c.wait_closed() for c in conns), return_exceptions=True)

    async def __aenter__(self) -> Client:
        return await self.start()

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    def __repr__(self) -> str:
        return f"<Client {self.name!r} {self._state.value}, workers {self.workers}>"

    # -------------------------------------------------------------- addresses
    def address(self, worker: str) -> Any:
        """The address of `worker` (for TCP a (host, port) pair); UnknownWorkerError names the
        known ones otherwise."""
        found = self._addresses.get(worker)
        if found is None:
            raise UnknownWorkerError(worker, list(self._addresses))
        return found

    def set_address(self, worker: str, address: Any) -> None:
        """Add a worker, or point a known one at a new address (its channel is dropped, so
        the next call connects there); the same address again changes nothing."""
        if not isinstance(worker, str) or not worker:
            raise ValueError(f"a worker name must be a non-empty str, got {worker!r}")
        parsed = self.transport.parse_address(address)
        if self._addresses.get(worker) == parsed:
            return
        self._addresses[worker] = parsed
        self._forget_channel(worker)
        logger.debug("client %r: worker %r is at %s", self.name, worker, parsed)

    def remove_address(self, worker: str) -> bool:
        """Forget `worker` and close its channel; False when it was not known."""
        if self._addresses.pop(worker, None) is None:
            return False
        self._forget_channel(worker)
        self._lost.discard(worker)
        return True

    def _forget_channel(self, worker: str) -> None:
        # An attempt still reaching the old address finds it changed and gives up (_open);
        # callers from now on start a new one.
        self._connecting.pop(worker, None)
        conn = self._conns.pop(worker, None)
        if conn is not None:
            conn.close()

    def is_lost(self, worker: str) -> bool:
        """True when the last contact with `worker` failed and no connection has opened since."""
        return worker in self._lost

    def new_context_id(self) -> int:
        """A context id no other client makes: this client's origin above a counter."""
        return (self.origin << COUNTER_BITS) | next(self._context_counter)

    # ------------------------------------------------------------- connections
    def _check_usable(self) -> asyncio.AbstractEventLoop:
        if self._state is not ConnectionState.OPEN:
            raise ConnectionClosedError(
                f"client {self.name!r} is {self._state.value}; use `async with Client(...)` "
                "or `await client.start()`"
            )
        loop = asyncio.get_running_loop()
        if loop is not self._loop:
            raise RuntimeError(
                f"client {self.name!r} was started on another event loop; its connections "
                "can only be used there"
            )
        return loop

    async def _connection(self, worker: str) -> Channel:
        loop = self._check_usable()
        address = self.address(worker)
        conn = self._conns.get(worker)
        if conn is not None and conn.state is ConnectionState.OPEN:
            return conn
        task = self._connecting.get(worker)
        if task is None:  # one attempt at a time per worker, shared by concurrent callers
            task = loop.create_task(self._open(worker, address))
            self._connecting[worker] = task

            def forget(t: asyncio.Task[Channel]) -> None:
                if self._connecting.get(worker) is t:  # not a newer attempt's task
                    self._connecting.pop(worker, None)

            task.add_done_callback(forget)
        return await asyncio.shield(task)

    async def _open(self, worker: str, address: Any) -> Channel:
        try:
            conn = await self.transport.open(
                address,
                token=self._token,
                name=self.name,
                timeout=self.connect_timeout,
                request_timeout=self.timeout,
            )
        except AuthenticationError:
            raise
        except (OSError, TimeoutError, WorkerLostError) as exc:
            self._lost.add(worker)
            raise WorkerLostError(worker, reason=f"cannot connect to {address}: {exc}") from exc
        if conn.peer_name != worker:
            conn.close()
            raise DistributedError(
                f"the worker at {address} is named {conn.peer_name!r}, expected {worker!r}"
            )
        old = self._conns.get(worker)
        if old is not None:
            old.close()
        if self._state is not ConnectionState.OPEN:  # closed while we were connecting
            conn.close()
            raise ConnectionClosedError(f"client {self.name!r} is closed")
        if self._addresses.get(worker) != address:  # moved or removed while we connected
            conn.close()
            raise WorkerLostError(
                worker, reason=f"its address changed while connecting to {address}"
            )
        self._conns[worker] = conn
        self._lost.discard(worker)
        logger.debug("client %r connected to %r at %s", self.name, worker, address)
        return conn

    def _drop(self, worker: str, conn: Channel) -> None:
        """Forget a connection whose worker stopped answering or went away."""
        if self._conns.get(worker) is conn:
            del self._conns[worker]
            self._lost.add(worker)
        conn.close()

    # ---------------------------------------------------------------- requests
    async def request(
        self,
        worker: str,
        method: str,
        kwargs: Mapping[str, Any] | None = None,
        arrays: Sequence[Any] = (),
        *,
        timeout: float | None = None,
        context_id: int | None = None,
    ) -> tuple[dict[str, Any], list[np.ndarray]]:
        """Send one request to `worker`; a lost or silent worker raises WorkerLostError."""
        try:
            conn = await self._connection(worker)
        except WorkerLostError as exc:
            if context_id is None:
                raise
            raise WorkerLostError(worker, context_id, reason=exc.reason) from exc
        limit = self.timeout if timeout is None else timeout
        try:
            return await conn.call(method, kwargs, arrays, timeout=limit)
        except TimeoutError:
            self._drop(worker, conn)  # it stopped answering: the next call reconnects
            raise WorkerLostError(
                worker, context_id, reason=f"no answer to {method!r} within {limit} s"
            ) from None
        except WorkerLostError as exc:
            self._drop(worker, conn)
            raise WorkerLostError(worker, context_id, reason=exc.reason) from exc
        except ConnectionClosedError as exc:
            if self._state is ConnectionState.CLOSED:
                raise
            # Closed under us because another request on it timed out.
            raise WorkerLostError(worker, context_id, reason=str(exc)) from exc
        except RemoteError as exc:
            if exc.remote_type == "ResourceExhausted":  # a quota of the worker (or its peer)
                cid = exc.context_id if exc.context_id is not None else context_id
                raise ResourceExhausted(
                    exc.message, worker=exc.worker or worker, context_id=cid
                ) from exc
            if exc.remote_type == "WorkerLostError":  # a peer of the worker was lost
                lost = exc.worker or worker
                cid = exc.context_id if exc.context_id is not None else context_id
                raise WorkerLostError(
                    lost, cid, reason=f"reported by {worker!r}: {exc.message}"
                ) from exc
            raise

    async def run_in_loop(self, coro: Coroutine[Any, Any, T]) -> T:
        """Await `coro` on the client's loop from any thread's loop (receive nodes run on their
        device's loop; connections live on the client's)."""
        loop = self._loop
        if loop is None or loop.is_closed():
            coro.close()
            raise ConnectionClosedError(f"client {self.name!r} has no running loop")
        if asyncio.get_running_loop() is loop:
            return await coro
        # Marks the request as begun on the client's loop; once cancelled it never begins.
        begun: concurrent.futures.Future[None] = concurrent.futures.Future()

        async def run() -> T:
            if not begun.set_running_or_notify_cancel():
                coro.close()
                raise asyncio.CancelledError("abandoned before it began")
            return await coro

        future = asyncio.run_coroutine_threadsafe(run(), loop)
        waiter = asyncio.wrap_future(future)
        try:
            done, _ = await asyncio.wait([waiter], timeout=self.timeout)
            if not done and begun.cancel():  # not begun, and now it never will
                raise RuntimeError(
                    f"the event loop of client {self.name!r} did not run a request within "
                    f"{self.timeout} s: is it blocked, e.g. by a synchronous backward() called "
                    "on its thread? Use `await distributed.backward(...)` there instead"
                )
            return await waiter
        except BaseException:
            begun.cancel()
            future.cancel()
            raise

    async def ping(self, worker: str) -> float:
        """Round-trip a ping to `worker`; return the seconds it took."""
        conn = await self._connection(worker)
        try:
            return await conn.ping(self.timeout)
        except (TimeoutError, WorkerLostError) as exc:
            self._drop(worker, conn)
            raise WorkerLostError(worker, reason=f"ping failed: {exc}") from exc

    async def stats(self, worker: str) -> dict[str, Any]:
        """The worker's counters: contexts, modules, optimizers, requests, registered names."""
        result, _ = await self.request(worker, methods.STATS)
        return result

    async def update_peers(
        self, worker: str, addresses: Mapping[str, Any] | None = None, remove: Sequence[str] = ()
    ) -> list[str]:
        """Tell `worker` where its peers are now: add or move `addresses` (name -> address,
        as its transport reads them), forget `remove`; return the peers it knows after."""
        fields: dict[str, Any] = {
            "addresses": {str(k): _address_text(v) for k, v in (addresses or {}).items()}
        }
        if remove:
            fields["remove"] = [str(w) for w in remove]
        result, _ = await self.request(worker, methods.PEERS_UPDATE, fields)
        return list(result["peers"])

    # ------------------------------------------------------------------- calls
    async def call(self, worker: str, function: str, /, *args: Any, **kwargs: Any) -> Any:
        """Call a function registered on `worker` with tensors (positional) and simple values;
        return its outputs as local tensors (a receive node links them to the graph)."""
        return await self.forward(worker, methods.CALL, {"function": function}, args, kwargs)

    async def forward(
        self,
        worker: str,
        method: str,
        target: Mapping[str, Any],
        args: Sequence[Any],
        kwargs: Mapping[str, Any],
    ) -> Any:
        """Run a forward method ('call' or 'module.forward') on `worker` under the current
        distributed context; what `call` and remote modules are made of."""
        self.address(worker)  # an unknown worker fails before anything is packed
        check_simple(dict(kwargs), "keyword arguments")
        specs, arrays, flags, tensors = pack_args(args)
        ctx = current_context.get()
        record = ctx is not None and is_grad_enabled()
        if record:
            grad_devices = {t.device for t, f in zip(tensors, flags, strict=True) if f}
            if len(grad_devices) > 1:
                names = ", ".join(sorted(str(d) for d in grad_devices))
                raise DeviceError(
                    f"tensors sent to worker {worker!r} that require grad must be on one "
                    f"device, found {names}"
                )
        fields: dict[str, Any] = {
            **target,
            "args": specs,
            "kwargs": dict(kwargs),
            "requires_grad": flags,
        }
        context_id = None
        if ctx is not None:
            ctx.check_open()
            ctx.touch(worker, self)
            context_id = fields["context_id"] = ctx.id
            fields["record"] = record
        result, received = await self.request(worker, method, fields, arrays, context_id=context_id)
        return self._outputs(worker, ctx if record else None, result, received, tensors, flags)

    def _outputs(
        self,
        worker: str,
        ctx: ContextBase | None,
        result: dict[str, Any],
        received: list[np.ndarray],
        tensors: list,
        flags: list[bool],
    ) -> Any:
        device = output_device(tensors)
        values: list[Any] = []
        made: list[tuple[int, Tensor]] = []
        differentiable: list[bool] = []
        for spec in result.get("outputs", []):
            if "tensor" in spec:
                t = to_device(received[spec["tensor"]], device)
                made.append((len(values), t))
                differentiable.append(bool(spec.get("requires_grad")))
                values.append(t)
            else:
                values.append(spec.get("value"))
        call_id = result.get("call_id")
        if ctx is not None and call_id is not None and any(differentiable):
            grad_inputs = [t for t, f in zip(tensors, flags, strict=True) if f]
            if not grad_inputs:  # only the worker's parameters require grad
                grad_inputs = [ctx.anchor(device)]
            call = RemoteCall(
                self,
                worker,
                ctx,
                call_id,
                [t for _, t in made],
                differentiable,
                [(t.device, t.dtype) for t in grad_inputs],
            )
            linked = Recv.apply(call, *grad_inputs)
            for (position, _), t in zip(made, linked, strict=True):
                values[position] = t
        return values[0] if result.get("single", True) and len(values) == 1 else tuple(values)
