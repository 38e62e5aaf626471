"""The server side of the transport: `serve` starts a `Server` that authenticates each
connection, runs an async handler for each request as its own task, applies backpressure, and
closes (or drains, then closes) with its connections.
"""

from __future__ import annotations

import asyncio
import inspect
import itertools
import ssl as ssl_module
from typing import Any

from .auth import ServerHandshake, check_token
from .connection import (
    _CLOSE_GRACE,
    _PREAUTH_LIMITS,
    DEFAULT_FRAME_IDLE_TIMEOUT,
    DEFAULT_HANDSHAKE_TIMEOUT,
    DEFAULT_MAX_HANDSHAKES,
    DEFAULT_MAX_PENDING,
    ConnectionInfo,
    ConnectionState,
    Handler,
    logger,
)
from .errors import AuthenticationError, ConnectionClosedError, ProtocolError, error_fields
from .quota import ByteBudget, format_bytes
from .ratelimit import LogLimiter
from .schema import MessageRegistry
from .tls import is_loopback
from .wire import (
    DEFAULT_MAX_FRAME_BYTES,
    DEFAULT_MAX_HEADER_BYTES,
    BadFrame,
    Frame,
    FrameProtocol,
)

__all__ = ["Server", "serve"]


class _ServerProtocol(FrameProtocol):
    def __init__(self, server: Server, connection_id: int) -> None:
        super().__init__(
            registry=server.registry,
            max_frame_bytes=server.max_frame_bytes,
            max_header_bytes=server.max_header_bytes,
            **_PREAUTH_LIMITS,
        )
        self.server = server
        self.connection_id = connection_id
        self.handshake = ServerHandshake(server.token, server.name)
        self.info: ConnectionInfo | None = None
        self.tasks: dict[int, asyncio.Task[None]] = {}
        self.inflight_bytes = 0
        self._read_paused = False
        self._timer: asyncio.TimerHandle | None = None
        self._idle_timer: asyncio.TimerHandle | None = None
        self._last_data = 0.0  # loop time of the last bytes received
        self._peer: Any = None
        self._handshaking = False  # counted in server.handshaking

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        self._peer = transport.get_extra_info("peername")
        server = self.server
        if server.handshaking >= server.max_handshakes:
            # Strangers cannot make us hold more than max_handshakes half-open connections.
            server.handshake_log.warning(
                "server %r: refusing connection from %s: %d handshakes already pending "
                "(max_handshakes)",
                server.name,
                self._peer,
                server.handshaking,
            )
            self.abort("too many pending handshakes")
            return
        server.handshaking += 1
        self._handshaking = True
        server._connections.add(self)
        self._timer = self.loop.call_later(server.handshake_timeout, self._handshake_expired)
        self.send("challenge", self.handshake.challenge())

    def _end_handshake(self) -> None:
        if self._handshaking:
            self._handshaking = False
            self.server.handshaking -= 1
        if self._timer is not None:
            self._timer.cancel()

    def _handshake_expired(self) -> None:
        if not self.handshake.done:
            self.server.handshake_log.warning(
                "server %r: handshake with %s timed out", self.server.name, self._peer
            )
            self.abort("handshake timed out")

    def connection_lost(self, exc: Exception | None) -> None:
        super().connection_lost(exc)
        self._end_handshake()
        if self._idle_timer is not None:
            self._idle_timer.cancel()
        self._uncharge(self.reader.charged)  # a frame cut short holds nothing any more
        self.reader.charged = 0
        self.server._connections.discard(self)
        # Nobody is left to read the answers.
        for task in self.tasks.values():
            task.cancel()

    # -- quotas and idle partial frames ----------------------------------------------------
    @property
    def peer_name(self) -> str:
        """The authenticated peer's name (what quotas are counted by)."""
        return self.handshake.peer_name or "?"

    def _admit(self, nbytes: int) -> None:
        budget = self.server.budget
        if budget is not None:
            budget.reserve(self.peer_name, nbytes, f"a frame of {format_bytes(nbytes)}")

    def _uncharge(self, nbytes: int) -> None:
        if nbytes and self.server.budget is not None:
            self.server.budget.release(self.peer_name, nbytes)

    def on_discard(self, event: Frame | BadFrame) -> None:
        self._uncharge(event.charged)

    def buffer_updated(self, nbytes: int) -> None:
        self._last_data = self.loop.time()
        super().buffer_updated(nbytes)
        if (
            self._idle_timer is None
            and self.handshake.done
            and self.reader.mid_frame
            and not self.is_closing
        ):
            self._idle_timer = self.loop.call_at(
                self._last_data + self.server.frame_idle_timeout, self._check_idle
            )

    def _check_idle(self) -> None:
        # A peer that stops in the middle of a frame must not hold its buffers forever.
        self._idle_timer = None
        if not self.reader.mid_frame or self.is_closing:
            return
        now, limit = self.loop.time(), self.server.frame_idle_timeout
        if self._read_paused:
            self._last_data = now  # we stopped reading (backpressure): not the peer's fault
        elif now - self._last_data >= limit:
            logger.warning(
                "server %r: %r sent part of a frame of %s and nothing for %s s; "
                "closing the connection",
                self.server.name,
                self.peer_name,
                format_bytes(self.reader.frame_size),
                limit,
            )
            self.abort(f"partial frame idle for {limit} s")
            return
        self._idle_timer = self.loop.call_at(self._last_data + limit, self._check_idle)

    def on_event(self, event: Frame | BadFrame) -> None:
        if event.charged and not (isinstance(event, Frame) and event.msg == "request"):
            self._uncharge(event.charged)  # only requests keep their arrays (see _run)
            event.charged = 0
        if not self.handshake.done:
            self._on_handshake(event)
        elif isinstance(event, BadFrame):
            logger.info(
                "server %r: refused a frame from %r: %s",
                self.server.name,
                self.handshake.peer_name,
                event.error,
            )
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
            self.server.handshake_log.warning(
                "server %r: authentication failed for %r from %s: %s",
                self.server.name,
                peer,
                self._peer,
                exc,
            )
            self._send_error(AuthenticationError("authentication failed: wrong token"), None)
            assert self.transport is not None
            self.transport.close()  # after the error frame is written
            return
        except ProtocolError as exc:
            # Nothing from an unauthenticated peer is processed, not even for an error reply.
            self.server.handshake_log.warning(
                "server %r: closing unauthenticated connection from %s: %s",
                self.server.name,
                self._peer,
                exc,
            )
            self.abort(str(exc))
            return
        if reply is not None:
            self.send(*reply)
        if self.handshake.done:
            self._end_handshake()
            self.open_limits()
            self.reader.admit = self._admit
            self.info = ConnectionInfo(
                self.handshake.peer_name or "?", self._peer, self.server.name, self.connection_id
            )
            logger.debug("server %r: %r authenticated", self.server.name, self.info.peer_name)

    def _send_error(self, exc: BaseException, request_id: int | None) -> None:
        try:
            self.send("error", error_fields(exc, request_id))
        except (ProtocolError, ConnectionClosedError) as send_exc:
            logger.debug("server %r: could not send error frame: %s", self.server.name, send_exc)

    def _start_request(self, frame: Frame) -> None:
        request_id = frame.fields["id"]
        refusal: Exception | None = None
        if self.server.draining:
            refusal = ConnectionClosedError(f"server {self.server.name!r} is shutting down")
        elif request_id in self.tasks:
            refusal = ProtocolError(f"request id {request_id} is already in flight")
        if refusal is not None:
            self._uncharge(frame.charged)
            self._send_error(refusal, request_id)
            return
        nbytes = sum(a.nbytes for a in frame.arrays)
        self.inflight_bytes += nbytes
        task = self.loop.create_task(self._run(request_id, frame, nbytes, frame.charged))
        self.tasks[request_id] = task
        self.update_reading()

    async def _run(self, request_id: int, frame: Frame, nbytes: int, charged: int) -> None:
        assert self.info is not None
        reply_charge = 0
        try:
            result = self.server.handler(
                self.info, frame.fields["method"], frame.fields["kwargs"], frame.arrays
            )
            del frame  # let the request's arrays go as soon as the handler drops them
            if inspect.isawaitable(result):
                result = await result
            if not (isinstance(result, tuple) and len(result) == 2 and isinstance(result[0], dict)):
                raise TypeError(
                    f"handler must return (result_map, arrays), got {type(result).__name__}"
                )
            arrays = list(result[1])
            reply_bytes = sum(getattr(a, "nbytes", 0) for a in arrays)
            if self.server.budget is not None:
                # Held until written out; a reply over the quota is refused, not sent.
                self.server.budget.reserve(
                    self.peer_name, reply_bytes, f"a reply of {format_bytes(reply_bytes)}"
                )
                reply_charge = reply_bytes
            self.send("response", {"id": request_id, "result": result[0]}, arrays)
            del arrays, result
            await self.drain()
        except asyncio.CancelledError:
            raise  # cancelled by the client (cancel frame) or by shutdown: nobody to answer
        except Exception as exc:
            if not self.is_closing:  # else the client went away: nobody to tell
                self._send_error(exc, request_id)
        finally:
            self.tasks.pop(request_id, None)
            self.inflight_bytes -= nbytes
            self._uncharge(charged + reply_charge)
            self.update_reading()

    def update_reading(self) -> None:
        # Backpressure bounds what one client can make us hold: requests in flight, their
        # bytes, and answers it does not read.
        if self.transport is None or self.transport.is_closing():
            return
        full = (
            self._write_paused
            or len(self.tasks) >= self.server.max_pending
            or self.inflight_bytes >= self.server.max_frame_bytes
        )
        if full and not self._read_paused:
            self._read_paused = True
            self.transport.pause_reading()
        elif not full and self._read_paused:
            self._read_paused = False
            self._last_data = self.loop.time()  # the idle clock restarts with reading
            self.transport.resume_reading()


class Server:
    """A listening server; create it with `serve`. Closing it drops every connection."""

    def __init__(
        self,
        handler: Handler,
        *,
        token: bytes,
        name: str,
        ssl: ssl_module.SSLContext | None,
        max_frame_bytes: int,
        max_header_bytes: int,
        max_pending: int,
        handshake_timeout: float,
        registry: MessageRegistry | None,
        max_handshakes: int = DEFAULT_MAX_HANDSHAKES,
        insecure: bool = False,
        budget: ByteBudget | None = None,
        frame_idle_timeout: float = DEFAULT_FRAME_IDLE_TIMEOUT,
    ) -> None:
        self.handler = handler
        self.token = check_token(token)
        self.name = name
        self.ssl = ssl
        self.insecure = insecure
        self.budget = budget  # bytes of frames and replies held per peer; None: no quota
        if frame_idle_timeout <= 0:
            raise ValueError(f"frame_idle_timeout must be positive, got {frame_idle_timeout}")
        self.frame_idle_timeout = frame_idle_timeout
        self.max_frame_bytes = max_frame_bytes
        self.max_header_bytes = max_header_bytes
        self.max_pending = max_pending
        self.handshake_timeout = handshake_timeout
        if max_handshakes < 1:
            raise ValueError(f"max_handshakes must be at least 1, got {max_handshakes}")
        self.max_handshakes = max_handshakes
        self.handshaking = 0  # connections not yet authenticated
        # Strangers decide how often handshakes fail: their log lines are rate-limited.
        self.handshake_log = LogLimiter(logger)
        self.registry = registry
        self._state = ConnectionState.UNOPENED
        self._server: asyncio.Server | None = None
        self._connections: set[_ServerProtocol] = set()
        self._ids = itertools.count(1)
        self.draining = False

    @property
    def state(self) -> ConnectionState:
        """UNOPENED, OPEN or CLOSED."""
        return self._state

    @property
    def address(self) -> tuple[str, int]:
        """(host, port) the server listens on."""
        if self._state is not ConnectionState.OPEN:
            raise ConnectionClosedError(f"server {self.name!r} is {self._state.value}")
        if self._server is None:
            raise ConnectionClosedError(
                f"server {self.name!r} does not listen (open(): in-memory connections only)"
            )
        return self._server.sockets[0].getsockname()[:2]

    @property
    def connection_count(self) -> int:
        """Number of live client connections (authenticated or not)."""
        return len(self._connections)

    def accept(self) -> _ServerProtocol:
        """The protocol for one new connection from any transport: the TCP listener's, or an
        in-memory pipe's (memory.py). It authenticates the peer before serving it."""
        if self._state is not ConnectionState.OPEN or self.draining:
            raise ConnectionRefusedError(
                f"server {self.name!r} is not accepting connections "
                f"({'draining' if self.draining else self._state.value})"
            )
        return _ServerProtocol(self, next(self._ids))

    async def open(self) -> None:
        """Start serving without listening: connections come only through `accept`."""
        if self._state is not ConnectionState.UNOPENED:
            raise ConnectionClosedError(f"server {self.name!r} is {self._state.value}")
        self._state = ConnectionState.OPEN

    async def start(self, host: str = "127.0.0.1", port: int = 0) -> None:
        """Bind and start accepting connections."""
        if self._state is not ConnectionState.UNOPENED:
            raise ConnectionClosedError(f"server {self.name!r} is {self._state.value}")
        loop = asyncio.get_running_loop()
        if self.ssl is None and not self.insecure:
            # Without TLS frames carry no MAC after the handshake (docs/wire-protocol.md, 4).
            if not await asyncio.to_thread(is_loopback, host):
                raise ValueError(
                    f"server {self.name!r}: refusing to listen on {host or 'all interfaces'!r} "
                    "without TLS; give a certificate (ssl=, --tls-cert/--tls-key) or accept "
                    "plaintext beyond loopback explicitly (insecure=True, --insecure)"
                )
        self._state = ConnectionState.OPEN
        try:
            self._server = await loop.create_server(self.accept, host, port, ssl=self.ssl)
        except BaseException:
            self._state = ConnectionState.UNOPENED
            raise

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

    @property
    def running_handlers(self) -> int:
        """Number of handler tasks running, over all connections."""
        return sum(len(c.tasks) for c in self._connections)

    async def shutdown(self, grace: float = _CLOSE_GRACE) -> None:
        """Stop listening and refuse new requests, let running handlers finish and send their
        answers (for up to `grace` seconds), then close."""
        if self._state is ConnectionState.OPEN:
            self.draining = True
            if self._server is not None:
                self._server.close()
            tasks = [t for c in list(self._connections) for t in c.tasks.values()]
            if tasks:
                _, late = await asyncio.wait(tasks, timeout=grace)
                if late:
                    logger.warning(
                        "server %r: %d handlers still running after %s s; cancelling them",
                        self.name,
                        len(late),
                        grace,
                    )
            await asyncio.sleep(0)  # let the last answers reach the transports
        await self.aclose()

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
                logger.warning(
                    "server %r: %d connections or handlers did not finish in time",
                    self.name,
                    len(late),
                )
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
    max_handshakes: int = DEFAULT_MAX_HANDSHAKES,
    insecure: bool = False,
    budget: ByteBudget | None = None,
    frame_idle_timeout: float = DEFAULT_FRAME_IDLE_TIMEOUT,
    listen: bool = True,
) -> Server:
    """Start a server that runs `handler` for each authenticated request; return it open.
    Without `ssl` it listens only on loopback addresses, unless `insecure` is true. With a
    `budget`, request frames and replies count against its byte quotas. With `listen=False` it
    binds no socket and serves only connections handed to it by `accept` (in memory)."""
    server = Server(
        handler,
        token=token,
        name=name,
        ssl=ssl,
        max_frame_bytes=max_frame_bytes,
        max_header_bytes=max_header_bytes,
        max_pending=max_pending,
        handshake_timeout=handshake_timeout,
        registry=registry,
        max_handshakes=max_handshakes,
        insecure=insecure,
        budget=budget,
        frame_idle_timeout=frame_idle_timeout,
    )
    if listen:
        await server.start(host, port)
    else:
        await server.open()
    return server
