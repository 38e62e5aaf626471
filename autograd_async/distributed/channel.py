"""The transport seam: what a `Client` needs from a connection to one worker (a `Channel`) and
from whatever opens those connections (a `Transport`), plus the default, TCP (+TLS).

    client = Client({"w1": "10.0.0.5:7001"}, token=token)                  # TcpTransport
    client = Client({"w1": "w1"}, token=token, transport=MemoryTransport())  # memory.py

A transport turns an address (whatever its `parse_address` accepts) into an open, authenticated
channel; a channel carries requests (a method name, simple kwargs and out-of-band arrays) and
their answers, many at a time. `Connection` (connection.py) is the channel of every transport
that moves wire frames over an asyncio byte stream: TCP sockets here, in-memory pipes in
memory.py. Another transport implements these two protocols (docs/wire-protocol.md, section 11).
"""

from __future__ import annotations

import ssl as ssl_module
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple, Protocol, runtime_checkable

import numpy as np

from .connection import DEFAULT_HANDSHAKE_TIMEOUT, DEFAULT_REQUEST_TIMEOUT, ConnectionState
from .connection import connect as connect_tcp
from .wire import DEFAULT_MAX_FRAME_BYTES

__all__ = ["Channel", "TcpAddress", "TcpTransport", "Transport", "parse_tcp_address"]


@runtime_checkable
class Channel(Protocol):
    """An open, authenticated, multiplexed connection to one named peer."""

    @property
    def state(self) -> ConnectionState:
        """OPEN until closed here or lost; CLOSED after."""

    @property
    def peer_name(self) -> str:
        """The name the peer proved (during authentication) it answers to."""

    async def call(
        self,
        method: str,
        kwargs: Mapping[str, Any] | None = None,
        arrays: Sequence[Any] = (),
        *,
        timeout: float | None = None,
    ) -> tuple[dict[str, Any], list[np.ndarray]]:
        """Run `method` on the peer; return its (result map, arrays). Raises TimeoutError when
        unanswered within `timeout`, WorkerLostError when the channel is lost, RemoteError when
        the peer reports a failure, ConnectionClosedError after `close`."""

    async def ping(self, timeout: float | None = None) -> float:
        """Round-trip a ping; return the seconds it took."""

    def close(self) -> None:
        """Start closing: requests in flight fail with ConnectionClosedError."""

    async def wait_closed(self) -> None:
        """Wait until the channel is closed."""


@runtime_checkable
class Transport(Protocol):
    """Opens channels to workers: the one thing a `Client` knows about the network."""

    def parse_address(self, address: Any) -> Any:
        """Check and normalise a worker address; ValueError when it is not one. The result's
        `str()` names the address in error messages."""

    async def open(
        self, address: Any, *, token: bytes, name: str, timeout: float, request_timeout: float
    ) -> Channel:
        """Open a channel to the worker at `address` (from `parse_address`), announcing `name`
        and proving `token`, within `timeout` seconds. Raises OSError, TimeoutError or
        WorkerLostError when the worker cannot be reached, AuthenticationError when the
        handshake fails."""


class TcpAddress(NamedTuple):
    """A worker's (host, port); printed as `host:port`."""

    host: str
    port: int

    def __str__(self) -> str:
        return f"{self.host}:{self.port}"


def parse_tcp_address(address: str | tuple[str, int]) -> TcpAddress:
    """`"host:port"` or `(host, port)` as a TcpAddress."""
    if isinstance(address, tuple):
        host, port = address
    else:
        host, sep, port_text = str(address).rpartition(":")
        if not sep or not port_text.isdigit():
            raise ValueError(f"worker address must be 'host:port', got {address!r}")
        port = int(port_text)
    if not 0 <= int(port) < 65536:
        raise ValueError(f"port out of range in worker address {address!r}")
    return TcpAddress(str(host).strip("[]"), int(port))


class TcpTransport:
    """Channels over TCP sockets, TLS when given an `ssl` context: `Connection`s."""

    def __init__(
        self,
        *,
        ssl: ssl_module.SSLContext | None = None,
        server_hostname: str | None = None,
        max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES,
    ) -> None:
        self.ssl = ssl
        self.server_hostname = server_hostname
        self.max_frame_bytes = max_frame_bytes

    def parse_address(self, address: str | tuple[str, int]) -> TcpAddress:
        """`"host:port"` or `(host, port)`."""
        return parse_tcp_address(address)

    async def open(
        self,
        address: TcpAddress,
        *,
        token: bytes,
        name: str,
        timeout: float = DEFAULT_HANDSHAKE_TIMEOUT,
        request_timeout: float = DEFAULT_REQUEST_TIMEOUT,
    ) -> Channel:
        """Connect, run the handshake (over TLS when configured), return the connection."""
        host, port = address
        return await connect_tcp(
            host,
            port,
            token=token,
            name=name,
            ssl=self.ssl,
            server_hostname=self.server_hostname,
            timeout=timeout,
            request_timeout=request_timeout,
            max_frame_bytes=self.max_frame_bytes,
        )

    def __repr__(self) -> str:
        return f"<TcpTransport {'TLS' if self.ssl is not None else 'plaintext'}>"
