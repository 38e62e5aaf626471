"""An in-memory transport: channels to servers in the same process and event loop, no sockets.

    memory = MemoryTransport()
    memory.add("w1", server)            # a Server (or WorkerServer): anything with accept()
    async with Client({"w1": "w1"}, token=token, transport=memory) as client:
        y = await client.call("w1", "tanh", x)

Each channel is a `Connection` over a pair of in-memory asyncio transports, so everything but
the socket is the real protocol path: frames are encoded and decoded by the wire codec, both
sides run the handshake, the server applies its limits, quotas and backpressure. Bytes are
copied once into the receiver's buffers (as the kernel would), on a later turn of the loop, so
neither side re-enters the other.
"""

from __future__ import annotations

import asyncio
import itertools
from collections import deque
from typing import Any, Protocol

from .auth import check_token
from .connection import (
    DEFAULT_HANDSHAKE_TIMEOUT,
    DEFAULT_REQUEST_TIMEOUT,
    Connection,
    _ClientProtocol,
)
from .errors import AuthenticationError, WorkerLostError
from .wire import DEFAULT_MAX_FRAME_BYTES, DEFAULT_MAX_HEADER_BYTES

__all__ = ["Acceptor", "MemoryPipe", "MemoryTransport"]

# Above this many unread bytes the writer is asked to pause (asyncio's default high-water
# mark is 64 KiB; larger suits the big array frames moved in one process).
_HIGH_WATER = 4 << 20
_LOW_WATER = 1 << 20


class Acceptor(Protocol):
    """A server that takes connections from any transport (`Server`, `WorkerServer`)."""

    def accept(self) -> asyncio.BufferedProtocol:
        """A protocol for one new connection; raises ConnectionClosedError when not serving."""


class _MemoryEnd(asyncio.Transport):
    """One side of a `MemoryPipe`: what it writes, its peer's protocol reads."""

    def __init__(self, pipe: MemoryPipe, protocol: asyncio.BufferedProtocol, name: str) -> None:
        super().__init__()
        self._pipe = pipe
        self._protocol = protocol
        self._name = name
        self.peer: _MemoryEnd | None = None
        self._outgoing: deque[memoryview] = deque()  # copies, waiting for the peer to read
        self._outgoing_bytes = 0
        self._reading = True
        self._closing = False
        self._lost = False
        self._write_paused = False
        self._flush_scheduled = False

    # -- asyncio.Transport --------------------------------------------------------------
    def get_extra_info(self, name: str, default: Any = None) -> Any:
        if name in ("peername", "sockname"):
            return ("memory", self._name if name == "sockname" else self._pipe.name_of(self))
        return default

    def is_closing(self) -> bool:
        return self._closing or self._lost

    def write(self, data: Any) -> None:
        if self._closing or self._lost:
            return  # as asyncio does: writes after close are dropped
        if not len(data):
            return
        # The caller may reuse its buffer (arrays are handed over without copying): copy now.
        self._outgoing.append(memoryview(bytes(memoryview(data).cast("B"))))
        self._outgoing_bytes += len(self._outgoing[-1])
        self._schedule_flush()
        if not self._write_paused and self._outgoing_bytes > _HIGH_WATER:
            self._write_paused = True
            self._protocol.pause_writing()

    def writelines(self, list_of_data: Any) -> None:
        for data in list_of_data:
            self.write(data)

    def can_write_eof(self) -> bool:
        return False

    def get_write_buffer_size(self) -> int:
        return self._outgoing_bytes

    def get_write_buffer_limits(self) -> tuple[int, int]:
        return _LOW_WATER, _HIGH_WATER

    def pause_reading(self) -> None:
        self._reading = False

    def resume_reading(self) -> None:
        if not self._reading:
            self._reading = True
            if self.peer is not None:
                self.peer._schedule_flush()

    def is_reading(self) -> bool:
        return self._reading and not self._lost

    def close(self) -> None:
        """Deliver what was written, then end the stream (the peer sees end of file)."""
        if self._closing or self._lost:
            return
        self._closing = True
        self._schedule_flush()

    def abort(self) -> None:
        """Drop what was not read and end both sides at once."""
        if self._lost:
            return
        self._closing = True
        self._outgoing.clear()
        self._outgoing_bytes = 0
        loop = self._pipe.loop
        loop.call_soon(self._connection_lost, None)
        if self.peer is not None:
            loop.call_soon(
                self.peer._connection_lost,
                ConnectionResetError("connection reset by peer (in-memory)"),
            )

    # -- delivery ----------------------------------------------------------------------
    def _schedule_flush(self) -> None:
        if not self._flush_scheduled and not self._lost:
            self._flush_scheduled = True
            self._pipe.loop.call_soon(self._flush)

    def _flush(self) -> None:
        self._flush_scheduled = False
        peer = self.peer
        if self._lost or peer is None:
            return
        while self._outgoing and peer._reading and not peer.is_closing():
            chunk = self._outgoing[0]
            # Any writable buffer the protocol lends, seen through a memoryview to size and fill.
            buffer = memoryview(peer._protocol.get_buffer(len(chunk)))
            n = min(len(buffer), len(chunk))
            buffer[:n] = chunk[:n]
            if n == len(chunk):
                self._outgoing.popleft()
            else:
                self._outgoing[0] = chunk[n:]
            self._outgoing_bytes -= n
            peer._protocol.buffer_updated(n)
        if peer.is_closing():  # it reads no more (as a closed socket): what it was sent is lost
            self._outgoing.clear()
            self._outgoing_bytes = 0
        if self._write_paused and self._outgoing_bytes <= _LOW_WATER and not self._lost:
            self._write_paused = False
            self._protocol.resume_writing()
        if self._closing and not self._outgoing and not self._lost:
            self._connection_lost(None)
            if not peer.is_closing():
                keep_open = peer._protocol.eof_received()
                if not keep_open:
                    peer.close()

    def _connection_lost(self, exc: Exception | None) -> None:
        if self._lost:
            return
        self._lost = True
        self._closing = True
        self._outgoing.clear()
        self._outgoing_bytes = 0
        self._protocol.connection_lost(exc)


class MemoryPipe:
    """Two connected in-memory transports, one per protocol, started on the running loop."""

    _ids = itertools.count(1)

    def __init__(
        self,
        client: asyncio.BufferedProtocol,
        server: asyncio.BufferedProtocol,
        client_name: str = "client",
        server_name: str = "server",
    ) -> None:
        self.loop = asyncio.get_running_loop()
        self.id = next(self._ids)
        self.client = _MemoryEnd(self, client, f"{client_name}#{self.id}")
        self.server = _MemoryEnd(self, server, f"{server_name}#{self.id}")
        self.client.peer, self.server.peer = self.server, self.client
        # The server speaks first (its challenge), as on an accepted socket.
        server.connection_made(self.server)
        client.connection_made(self.client)

    def name_of(self, end: _MemoryEnd) -> str:
        """The name of the other end, as `peername` reports it."""
        return (self.server if end is self.client else self.client)._name


class MemoryTransport:
    """Channels to servers registered by name in this process (see the module docstring)."""

    def __init__(
        self,
        *,
        max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES,
        max_header_bytes: int = DEFAULT_MAX_HEADER_BYTES,
    ) -> None:
        self.max_frame_bytes = max_frame_bytes
        self.max_header_bytes = max_header_bytes
        self._servers: dict[str, Acceptor] = {}

    def add(self, address: str, server: Acceptor) -> None:
        """Make `server` reachable at `address` (usually its name)."""
        self._servers[self.parse_address(address)] = server

    def remove(self, address: str) -> None:
        """Make `address` unreachable; open channels to it stay open."""
        self._servers.pop(address, None)

    def parse_address(self, address: Any) -> str:
        """An address is the non-empty name a server was added under."""
        if not isinstance(address, str) or not address:
            raise ValueError(f"an in-memory address is a non-empty str, got {address!r}")
        return address

    async def open(
        self,
        address: str,
        *,
        token: bytes,
        name: str,
        timeout: float = DEFAULT_HANDSHAKE_TIMEOUT,
        request_timeout: float = DEFAULT_REQUEST_TIMEOUT,
    ) -> Connection:
        """Connect to the server added under `address` and run the handshake."""
        token = check_token(token)
        server = self._servers.get(address)
        if server is None:
            raise ConnectionRefusedError(f"no in-memory server at {address!r}")
        protocol = _ClientProtocol(token, name, None, self.max_frame_bytes, self.max_header_bytes)
        pipe = MemoryPipe(protocol, server.accept(), client_name=name, server_name=address)
        try:
            async with asyncio.timeout(timeout):
                await protocol.handshake_done
        except BaseException as exc:
            pipe.client.abort()
            if isinstance(exc, TimeoutError):
                raise TimeoutError(
                    f"connecting to {address!r} in memory timed out after {timeout} s"
                ) from None
            if isinstance(exc, WorkerLostError):
                raise AuthenticationError(
                    f"handshake with {address!r} failed: connection closed ({exc.reason})"
                ) from exc
            raise
        return Connection(protocol, request_timeout)

    def __repr__(self) -> str:
        return f"<MemoryTransport {sorted(self._servers)}>"
