"""Authenticated, multiplexed connections over asyncio (or uvloop) stream transports.

`connect` opens a client `Connection`; `serve` (in `server.py`, re-exported here) starts a
`Server` that runs an async handler for each request as its own task. Frames move through
`wire.FrameProtocol`, an `asyncio.BufferedProtocol` that lands array bytes directly in their
final numpy arrays; this module adds the handshake, request multiplexing and lifecycles of the
client side, plus what both sides share. The transports are those of the running loop:
uvloop's when uvloop runs the loop.
"""

from __future__ import annotations

import asyncio
import enum
import itertools
import logging
import ssl as ssl_module
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .auth import ClientHandshake, check_token
from .errors import (
    AuthenticationError,
    ConnectionClosedError,
    ProtocolError,
    RemoteError,
    WorkerLostError,
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
    "DEFAULT_FRAME_IDLE_TIMEOUT",
    "DEFAULT_HANDSHAKE_TIMEOUT",
    "DEFAULT_MAX_HANDSHAKES",
    "DEFAULT_REQUEST_TIMEOUT",
    "Connection",
    "ConnectionInfo",
    "ConnectionState",
    "Handler",
    "connect",
]

logger = logging.getLogger("autograd_async.distributed")

DEFAULT_REQUEST_TIMEOUT = 30.0
DEFAULT_HANDSHAKE_TIMEOUT = 10.0
DEFAULT_MAX_PENDING = 256
# Connections still in their handshake, per server: past this, new ones are dropped at once.
DEFAULT_MAX_HANDSHAKES = 64
# An authenticated peer that sends part of a frame and then nothing for this long is dropped.
DEFAULT_FRAME_IDLE_TIMEOUT = 60.0
# Until a peer has authenticated it may only send small handshake frames: a stranger must
# not be able to make us allocate a large buffer.
_PREAUTH_LIMITS = {"first_frame_bytes": 64 * 1024, "first_header_bytes": 16 * 1024}
_CLOSE_GRACE = 5.0

Arrays = list[np.ndarray]
# (result map, arrays), returned or awaited: the server takes a plain function or a coroutine one.
Reply = tuple[dict, Any]
Handler = Callable[["ConnectionInfo", str, dict[str, Any], Arrays], Awaitable[Reply] | Reply]


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
    def __init__(
        self,
        token: bytes,
        name: str,
        registry: MessageRegistry | None,
        max_frame_bytes: int,
        max_header_bytes: int,
    ) -> None:
        super().__init__(
            registry=registry,
            max_frame_bytes=max_frame_bytes,
            max_header_bytes=max_header_bytes,
            **_PREAUTH_LIMITS,
        )
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
            logger.warning(
                "ignoring unexpected %r message from server %r", event.msg, self.peer_name
            )

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
        """The server's name, as announced once it had proven the token."""
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

    async def request(
        self, method: str, arrays: Sequence[Any] = (), /, **kwargs: Any
    ) -> tuple[dict[str, Any], Arrays]:
        """Call `method` on the server with kwargs and arrays; return (result, arrays)."""
        return await self.call(method, kwargs, arrays)

    async def call(
        self,
        method: str,
        kwargs: Mapping[str, Any] | None = None,
        arrays: Sequence[Any] = (),
        *,
        timeout: float | None = None,
    ) -> tuple[dict[str, Any], Arrays]:
        """Like `request`, with kwargs as a map and a per-call timeout in seconds."""
        fields = {"method": method, "kwargs": dict(kwargs or {})}
        return await self._roundtrip("request", fields, arrays, timeout, what=repr(method))

    async def ping(self, timeout: float | None = None) -> float:
        """Round-trip a ping; return the elapsed seconds."""
        start = self._protocol.loop.time()
        end = await self._roundtrip("ping", {}, (), timeout, what="ping")
        return end - start

    async def _roundtrip(
        self,
        msg: str,
        fields: dict[str, Any],
        arrays: Sequence[Any],
        timeout: float | None,
        what: str,
    ) -> Any:
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
                factory,
                host,
                port,
                ssl=ssl,
                server_hostname=server_hostname if ssl is not None else None,
            )
            await protocol.handshake_done
    except BaseException as exc:
        if protocol is not None and protocol.transport is not None:
            protocol.transport.abort()  # never leak a half-open socket
        if isinstance(exc, TimeoutError):
            raise TimeoutError(f"connecting to {host}:{port} timed out after {timeout} s") from None
        if isinstance(exc, WorkerLostError):
            # Closed during the handshake: most often the server refused us.
            raise AuthenticationError(
                f"handshake with {host}:{port} failed: connection closed ({exc.reason})"
            ) from exc
        raise
    return Connection(protocol, request_timeout)


def __getattr__(name: str) -> Any:
    # `Server` and `serve` moved to server.py; keep `connection.serve` working.
    if name in ("Server", "serve"):
        from . import server  # noqa: PLC0415 - server.py imports this module

        return getattr(server, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
