"""Distributed autograd, layer 6. For now: the transport (framing, schema, auth, connections).

This package imports nothing from the autograd core; the layers below must run without it.
"""

from .auth import load_token
from .connection import Connection, ConnectionInfo, ConnectionState, Server, connect, serve
from .errors import (
    AuthenticationError,
    ConnectionClosedError,
    DistributedError,
    ProtocolError,
    RemoteError,
    WorkerLostError,
)
from .schema import MessageRegistry, register_message

__all__ = [
    "AuthenticationError",
    "Connection",
    "ConnectionClosedError",
    "ConnectionInfo",
    "ConnectionState",
    "DistributedError",
    "MessageRegistry",
    "ProtocolError",
    "RemoteError",
    "Server",
    "WorkerLostError",
    "connect",
    "load_token",
    "register_message",
    "serve",
]
