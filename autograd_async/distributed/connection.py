"""Authenticated, multiplexed connections over asyncio (or uvloop) stream transports.

`connect` opens a client `Connection`; `serve` starts a `Server` that runs an async handler
for each request as its own task. Frames move through `wire.FrameProtocol`, an
`asyncio.BufferedProtocol` that lands array bytes directly in their final numpy arrays; this
module adds the handshake, request multiplexing, handler tasks, backpressure and lifecycles.
The transports are those of the running loop: uvloop's when uvloop runs the loop.
"""

from __future__ import annotations

import asyncio
import enum
import inspect
import itertools
import logging
import ssl as ssl_module
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .auth import ClientHandshake, ServerHandshake, check_token
from .errors import (
    AuthenticationError,
    ConnectionClosedError,
    ProtocolError,
    RemoteError,
    WorkerLostError,
    error_fields,
)
from .schema import MessageRegistry
from .wire import (
    DEFAULT_MAX_FRAME_BYTES,
    DEFAULT_MAX_HEADER_BYTES,
    BadFrame,
    Frame,
    FrameProtocol,
)

__all__ = [
    "DEFAULT_HANDSHAKE_TIMEOUT",
    "DEFAULT_REQUEST_TIMEOUT",
    "Connection",
    "ConnectionInfo",
    "ConnectionState",
    "Handler",
    "Server",
    "connect",
    "serve",
]

logger = logging.getLogger("autograd_async.distributed")

DEFAULT_REQUEST_TIMEOUT = 30.0
DEFAULT_HANDSHAKE_TIMEOUT = 10.0
DEFAULT_MAX_PENDING = 256
# Until a peer has authenticated it may only send small handshake frames: a stranger must
# not be able to make us allocate a large buffer.
_PREAUTH_LIMITS = {"first_frame_bytes": 64 * 1024, "first_header_bytes": 16 * 1024}
_CLOSE_GRACE = 5.0

Arrays = list[np.ndarray]
Handler = Callable[["ConnectionInfo", str, dict[str, Any], Arrays], Awaitable[tuple[dict, Any]]]


class ConnectionState(enum.Enum):
    """Lifecycle of connections and servers."""

    UNOPENED = "unopened"
    OPEN = "open"
    CLOSED = "closed"


@dataclass(frozen=True)
class ConnectionInfo:
    """What a request handler learns about the connection a request came from."""

    peer_name: str
    peer_address: Any
    server_name: str
    connection_id: int


# ---------------------------------------------------------------------------------------
# client side


class _ClientProtocol(FrameProtocol):
    def __init__(self, token: bytes, name: str, registry: MessageRegistry | None,
                 max_frame_bytes: int, max_header_bytes: int) -> None:
        super().__init__(registry=registry, max_frame_bytes=max_frame_bytes,
                         max_header_bytes=max_header_bytes, **_PREAUTH_LIMITS)
        self.handshake = ClientHandshake(token, name)
        self.handshake_done: asyncio.Future[None] = self.loop.create_future()
        self.pending: dict[int, asyncio.Future[Any]] = {}

    @property
    def peer_name(self) -> str:
        return self.handshake.peer_name or "?"

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        self.send("hello", self.handshake.hello())

    def on_event(self, event: Frame | BadFrame) -> None:
        if not self.handshake.done:
            self._on_handshake(event)
        elif isinstance(event, BadFrame):
            self._fail(event.request_id, event.error, f"server sent a bad frame: {event.error}")
        elif event.msg == "response":
            self._resolve(event.id, (event.fields["result"], event.arrays))
        elif event.msg == "pong":
            self._resolve(event.id, self.loop.time())
        elif event.msg == "error":
            error = RemoteError.from_fields(event.fields, self.peer_name)
            self._fail(event.id, error, f"server {self.peer_name!r} reported {error}")
        else:
            logger.warning("ignoring unexpected %r message from server %r", event.msg,
                           self.peer_name)

    def _on_handshake(self, event: Frame | BadFrame) -> None:
        try:
            if isinstance(event, BadFrame):
                raise event.error
            reply = self.handshake.receive(event.msg, event.fields)
            if reply is not None:
                self.send(*reply)
        except (ProtocolError, AuthenticationError) as exc:
            if not self.handshake_done.done():
                self.handshake_done.set_exception(exc)
            self.abort(str(exc))
            return
        if self.handshake.done:
            self.open_limits()
            self.handshake_done.set_result(None)

    def _resolve(self, request_id: int | None, value: Any) -> None:
        fut = self.pending.get(request_id) if request_id is not None else None
        if fut is None:
            # A late answer to a request that timed out or was cancelled: nobody waits.
            logger.debug("dropping answer to unknown request %r", request_id)
        elif not fut.done():
            fut.set_result(value)

    def _fail(self, request_id: int | None, exc: Exception, log_text: str) -> None:
        fut = self.pending.get(request_id) if request_id is not None else None
        if fut is None:
            logger.warning("%s", log_text)
        elif not fut.done():
            fut.set_exception(exc)

    def lost_error(self) -> Exception:
        return WorkerLostError(self.peer_name, reason=self.close_reason)

    def connection_lost(self, exc: Exception | None) -> None:
        super().connection_lost(exc)
        error = self.lost_error()
        if not self.handshake_done.done():
            self.handshake_done.set_exception(error)
        # Every pending request fails at once: none of them can be answered any more.
        for fut in self.pending.values():
            if not fut.done():
                fut.set_exception(error)


class Connection:
    """A client connection to one server; many requests may be in flight at once."""

    def __init__(self, protocol: _ClientProtocol, request_timeout: float) -> None:
        self._protocol = protocol
        self.request_timeout = request_timeout
        self._ids = itertools.count(1)
        self._state = ConnectionState.OPEN

    @property
    def state(self) -> ConnectionState:
        """UNOPENED, OPEN or CLOSED; a lost connection reads as CLOSED."""
        if self._state is ConnectionState.OPEN and self._protocol.closed.done():
            return ConnectionState.CLOSED
        return self._state

    @property
    def name(self) -> str:
        """This side's name, as announced to the server."""
        return self._protocol.handshake.name

    @property
    def peer_name(self) -> str:
        """The server's name, as announced in its challenge."""
        return self._protocol.peer_name

    @property
    def pending_count(self) -> int:
        """Number of requests awaiting an answer."""
        return len(self._protocol.pending)

    def _check_open(self) -> None:
        if self._state is ConnectionState.CLOSED:
            raise ConnectionClosedError(f"connection to {self.peer_name!r} is closed")
        if self._protocol.closed.done():
            raise self._protocol.lost_error()

    async def request(self, method: str, arrays: Sequence[Any] = (), /,
                      **kwargs: Any) -> tuple[dict[str, Any], Arrays]:
        """Call `method` on the server with kwargs and arrays; return (result, arrays)."""
        return await self.call(method, kwargs, arrays)

    async def call(self, method: str, kwargs: Mapping[str, Any] | None = None,
                   arrays: Sequence[Any] = (), *,
                   timeout: float | None = None) -> tuple[dict[str, Any], Arrays]:
        """Like `request`, with kwargs as a map and a per-call timeout in seconds."""
        fields = {"method": method, "kwargs": dict(kwargs or {})}
        return await self._roundtrip("request", fields, arrays, timeout, what=repr(method))

    async def ping(self, timeout: float | None = None) -> float:
        """Round-trip a ping; return the elapsed seconds."""
        start = self._protocol.loop.time()
        end = await self._roundtrip("ping", {}, (), timeout, what="ping")
        return end - start

    async def _roundtrip(self, msg: str, fields: dict[str, Any], arrays: Sequence[Any],
                         timeout: float | None, what: str) -> Any:
        self._check_open()
        protocol = self._protocol
        request_id = next(self._ids)
        timeout = self.request_timeout if timeout is None else timeout
        fut = protocol.loop.create_future()
        protocol.pending[request_id] = fut
        sent = False
        try:
            async with asyncio.timeout(timeout):
                protocol.send(msg, {"id": request_id, **fields}, arrays)
                sent = True
                await protocol.drain()
                return await fut
        except TimeoutError:
            raise TimeoutError(
                f"{what} to {self.peer_name!r} got no answer within {timeout} s"
            ) from None
        finally:
            protocol.pending.pop(request_id, None)
            if fut.done() and not fut.cancelled():
                fut.exception()  # failed while we were still sending: already raised above
            # Awaiting `fut` cancels it on timeout/cancellation; an answered one is done.
            unanswered = fut.cancelled() or not fut.done()
            if sent and unanswered and not protocol.is_closing:
                # Timed out or cancelled: tell the server to stop working on it.
                try:
                    protocol.send("cancel", {"id": request_id})
                except Exception:  # the connection may be going away; nothing to undo
                    pass

    def close(self) -> None:
        """Start closing: pending requests fail, the socket closes once written out."""
        if self._state is ConnectionState.CLOSED:
            return
        self._state = ConnectionState.CLOSED
        protocol = self._protocol
        error = ConnectionClosedError(f"connection to {self.peer_name!r} was closed locally")
        for fut in protocol.pending.values():
            if not fut.done():
                fut.set_exception(error)
        if protocol.transport is not None:
            protocol.transport.close()

    async def wait_closed(self) -> None:
        """Wait until the socket is closed (aborting it after a grace period)."""
        try:
            async with asyncio.timeout(_CLOSE_GRACE):
                await asyncio.shield(self._protocol.closed)
        except TimeoutError:
            if self._protocol.transport is not None:
                self._protocol.transport.abort()

    async def aclose(self) -> None:
        """Close and wait until closed."""
        self.close()
        await self.wait_closed()

    async def __aenter__(self) -> Connection:
        self._check_open()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    def __repr__(self) -> str:
        return f"<Connection {self.name!r} -> {self.peer_name!r} {self.state.value}>"


async def connect(
    host: str,
    port: int,
    *,
    token: bytes,
    name: str = "client",
    ssl: ssl_module.SSLContext | None = None,
    server_hostname: str | None = None,
    timeout: float = DEFAULT_HANDSHAKE_TIMEOUT,
    request_timeout: float = DEFAULT_REQUEST_TIMEOUT,
    max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES,
    max_header_bytes: int = DEFAULT_MAX_HEADER_BYTES,
    registry: MessageRegistry | None = None,
) -> Connection:
    """Open a connection, authenticate both ways within `timeout`, return it open."""
    token = check_token(token)
    loop = asyncio.get_running_loop()
    factory = lambda: _ClientProtocol(token, name, registry, max_frame_bytes, max_header_bytes)
    protocol: _ClientProtocol | None = None
    try:
        async with asyncio.timeout(timeout):
            _, protocol = await loop.create_connection(
                factory, host, port, ssl=ssl,
                server_hostname=server_hostname if ssl is not None else None,
            )
            await protocol.handshake_done
    except BaseException as exc:
        if protocol is not None and protocol.transport is not None:
            protocol.transport.abort()  # never leak a half-open socket
        if isinstance(exc, TimeoutError):
            raise TimeoutError(
                f"connecting to {host}:{port} timed out after {timeout} s"
            ) from None
        if isinstance(exc, WorkerLostError):
            # Closed during the handshake: most often the server refused us.
            raise AuthenticationError(
                f"handshake with {host}:{port} failed: connection closed ({exc.reason})"
            ) from exc
        raise
    return Connection(protocol, request_timeout)


# ---------------------------------------------------------------------------------------
# server side


class _ServerProtocol(FrameProtocol):
    def __init__(self, server: Server, connection_id: int) -> None:
        super().__init__(registry=server.registry, max_frame_bytes=server.max_frame_bytes,
                         max_header_bytes=server.max_header_bytes, **_PREAUTH_LIMITS)
        self.server = server
        self.connection_id = connection_id
        self.handshake = ServerHandshake(server.token, server.name)
        self.info: ConnectionInfo | None = None
        self.tasks: dict[int, asyncio.Task[None]] = {}
        self.inflight_bytes = 0
        self._read_paused = False
        self._timer: asyncio.TimerHandle | None = None
        self._peer: Any = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        self._peer = transport.get_extra_info("peername")
        self.server._connections.add(self)
        self._timer = self.loop.call_later(self.server.handshake_timeout, self._handshake_expired)
        self.send("challenge", self.handshake.challenge())

    def _handshake_expired(self) -> None:
        if not self.handshake.done:
            logger.warning("server %r: handshake with %s timed out", self.server.name, self._peer)
            self.abort("handshake timed out")

    def connection_lost(self, exc: Exception | None) -> None:
        super().connection_lost(exc)
        if self._timer is not None:
            self._timer.cancel()
        self.server._connections.discard(self)
        # Nobody is left to read the answers.
        for task in self.tasks.values():
            task.cancel()

    def on_event(self, event: Frame | BadFrame) -> None:
        if not self.handshake.done:
            self._on_handshake(event)
        elif isinstance(event, BadFrame):
            logger.info("server %r: refused a frame from %r: %s", self.server.name,
                        self.handshake.peer_name, event.error)
            self._send_error(event.error, event.request_id)
        elif event.msg == "request":
            self._start_request(event)
        elif event.msg == "cancel":
            task = self.tasks.get(event.fields["id"])
            if task is not None:
                task.cancel()
        elif event.msg == "ping":
            self.send("pong", {"id": event.fields["id"]})
        else:
            error = ProtocolError(f"unexpected message type {event.msg!r} from a client")
            self._send_error(error, event.id)

    def _on_handshake(self, event: Frame | BadFrame) -> None:
        peer = self.handshake.peer_name or self._peer
        try:
            if isinstance(event, BadFrame):
                raise event.error
            reply = self.handshake.receive(event.msg, event.fields)
        except AuthenticationError as exc:
            logger.warning("server %r: authentication failed for %r from %s: %s",
                           self.server.name, peer, self._peer, exc)
            self._send_error(AuthenticationError("authentication failed: wrong token"), None)
            assert self.transport is not None
            self.transport.close()  # after the error frame is written
            return
        except ProtocolError as exc:
            # Nothing from an unauthenticated peer is processed, not even for an error reply.
            logger.warning("server %r: closing unauthenticated connection from %s: %s",
                           self.server.name, self._peer, exc)
            self.abort(str(exc))
            return
        if reply is not None:
            self.send(*reply)
        if self.handshake.done:
            if self._timer is not None:
                self._timer.cancel()
            self.open_limits()
            self.info = ConnectionInfo(self.handshake.peer_name or "?", self._peer,
                                       self.server.name, self.connection_id)
            logger.debug("server %r: %r authenticated", self.server.name, self.info.peer_name)

    def _send_error(self, exc: BaseException, request_id: int | None) -> None:
        try:
            self.send("error", error_fields(exc, request_id))
        except (ProtocolError, ConnectionClosedError) as send_exc:
            logger.debug("server %r: could not send error frame: %s", self.server.name, send_exc)

    def _start_request(self, frame: Frame) -> None:
        request_id = frame.fields["id"]
        if request_id in self.tasks:
            self._send_error(ProtocolError(f"request id {request_id} is already in flight"),
                             request_id)
            return
        nbytes = sum(a.nbytes for a in frame.arrays)
        self.inflight_bytes += nbytes
        task = self.loop.create_task(self._run(request_id, frame, nbytes))
        self.tasks[request_id] = task
        self.update_reading()

    async def _run(self, request_id: int, frame: Frame, nbytes: int) -> None:
        assert self.info is not None
        try:
            result = self.server.handler(self.info, frame.fields["method"],
                                         frame.fields["kwargs"], frame.arrays)
            del frame  # let the request's arrays go as soon as the handler drops them
            if inspect.isawaitable(result):
                result = await result
            if not (isinstance(result, tuple) and len(result) == 2
                    and isinstance(result[0], dict)):
                raise TypeError("handler must return (result_map, arrays), got "
                                f"{type(result).__name__}")
            self.send("response", {"id": request_id, "result": result[0]}, list(result[1]))
            await self.drain()
        except asyncio.CancelledError:
            raise  # cancelled by the client (cancel frame) or by shutdown: nobody to answer
        except Exception as exc:
            if not self.is_closing:  # else the client went away: nobody to tell
                self._send_error(exc, request_id)
        finally:
            self.tasks.pop(request_id, None)
            self.inflight_bytes -= nbytes
            self.update_reading()

    def update_reading(self) -> None:
        # Backpressure bounds what one client can make us hold: requests in flight, their
        # bytes, and answers it does not read.
        if self.transport is None or self.transport.is_closing():
            return
        full = (self._write_paused or len(self.tasks) >= self.server.max_pending
                or self.inflight_bytes >= self.server.max_frame_bytes)
        if full and not self._read_paused:
            self._read_paused = True
            self.transport.pause_reading()
        elif not full and self._read_paused:
            self._read_paused = False
            self.transport.resume_reading()


class Server:
    """A listening server; create it with `serve`. Closing it drops every connection."""

    def __init__(self, handler: Handler, *, token: bytes, name: str,
                 ssl: ssl_module.SSLContext | None, max_frame_bytes: int,
                 max_header_bytes: int, max_pending: int, handshake_timeout: float,
                 registry: MessageRegistry | None) -> None:
        self.handler = handler
        self.token = check_token(token)
        self.name = name
        self.ssl = ssl
        self.max_frame_bytes = max_frame_bytes
        self.max_header_bytes = max_header_bytes
        self.max_pending = max_pending
        self.handshake_timeout = handshake_timeout
        self.registry = registry
        self._state = ConnectionState.UNOPENED
        self._server: asyncio.AbstractServer | None = None
        self._connections: set[_ServerProtocol] = set()
        self._ids = itertools.count(1)

    @property
    def state(self) -> ConnectionState:
        """UNOPENED, OPEN or CLOSED."""
        return self._state

    @property
    def address(self) -> tuple[str, int]:
        """(host, port) the server listens on."""
        if self._server is None or self._state is not ConnectionState.OPEN:
            raise ConnectionClosedError(f"server {self.name!r} is {self._state.value}")
        return self._server.sockets[0].getsockname()[:2]

    @property
    def connection_count(self) -> int:
        """Number of live client connections (authenticated or not)."""
        return len(self._connections)

    async def start(self, host: str = "127.0.0.1", port: int = 0) -> None:
        """Bind and start accepting connections."""
        if self._state is not ConnectionState.UNOPENED:
            raise ConnectionClosedError(f"server {self.name!r} is {self._state.value}")
        loop = asyncio.get_running_loop()
        self._server = await loop.create_server(
            lambda: _ServerProtocol(self, next(self._ids)), host, port, ssl=self.ssl,
        )
        self._state = ConnectionState.OPEN

    def close(self) -> None:
        """Stop listening, cancel running handlers and close every connection."""
        if self._state is ConnectionState.CLOSED:
            return
        self._state = ConnectionState.CLOSED
        if self._server is not None:
            self._server.close()
        for conn in list(self._connections):
            for task in conn.tasks.values():
                task.cancel()
            if conn.transport is not None:
                conn.transport.close()

    async def wait_closed(self) -> None:
        """Wait for the connections, the handler tasks and the listener to finish."""
        conns = list(self._connections)
        waits = [asyncio.shield(c.closed) for c in conns]
        waits += [t for c in conns for t in c.tasks.values()]
        if waits:
            _, late = await asyncio.wait(waits, timeout=_CLOSE_GRACE)
            for conn in conns:
                if not conn.closed.done() and conn.transport is not None:
                    conn.transport.abort()
            if late:
                logger.warning("server %r: %d connections or handlers did not finish in time",
                               self.name, len(late))
        if self._server is not None:
            try:
                async with asyncio.timeout(_CLOSE_GRACE):
                    await self._server.wait_closed()
            except TimeoutError:
                logger.warning("server %r: listener did not close in time", self.name)

    async def aclose(self) -> None:
        """Close and wait until closed."""
        self.close()
        await self.wait_closed()

    async def __aenter__(self) -> Server:
        if self._state is ConnectionState.UNOPENED:
            await self.start()
        elif self._state is ConnectionState.CLOSED:
            raise ConnectionClosedError(f"server {self.name!r} is closed")
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    def __repr__(self) -> str:
        return f"<Server {self.name!r} {self._state.value}>"


async def serve(
    handler: Handler,
    host: str = "127.0.0.1",
    port: int = 0,
    *,
    token: bytes,
    name: str = "server",
    ssl: ssl_module.SSLContext | None = None,
    max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES,
    max_header_bytes: int = DEFAULT_MAX_HEADER_BYTES,
    max_pending: int = DEFAULT_MAX_PENDING,
    handshake_timeout: float = DEFAULT_HANDSHAKE_TIMEOUT,
    registry: MessageRegistry | None = None,
) -> Server:
    """Start a server that runs `handler` for each authenticated request; return it open."""
    server = Server(handler, token=token, name=name, ssl=ssl, max_frame_bytes=max_frame_bytes,
                    max_header_bytes=max_header_bytes, max_pending=max_pending,
                    handshake_timeout=handshake_timeout, registry=registry)
    await server.start(host, port)
    return server
