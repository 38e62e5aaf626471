"""Distributed autograd, layer 6: the transport (framing, schema, auth, connections) and, above
it, clients, remote calls and modules, distributed contexts and optimizers.

The transport modules (`wire`, `schema`, `auth`, `connection`, `errors`) import nothing from the
autograd core; the modules above them (`client`, `context`, `recv`, `remote_module`,
`optimizer`) are built on it. Workers, the processes these talk to, live in `workers/`.
"""

from .auth import load_token
from .channel import Channel, TcpTransport, Transport
from .client import Client
from .collectives import *  # noqa: F403 - PyTorch's collectives, listed in collectives.__all__
from .collectives import __all__ as _collectives_all
from .connection import Connection, ConnectionInfo, ConnectionState, connect
from .context import (
    ContextReleasedError,
    DistributedContext,
    backward,
    context,
    current_context,
)
from .errors import (
    AuthenticationError,
    ConnectionClosedError,
    DistributedError,
    ProtocolError,
    RemoteError,
    ResourceExhausted,
    UnknownWorkerError,
    WorkerLostError,
)
from .memory import MemoryTransport
from .optimizer import DistributedOptimizer
from .recv import Recv, RemoteCall
from .remote_module import ParameterRef, RemoteModule
from .schema import MessageRegistry, register_message
from .server import Server, serve

__all__ = [
    "AuthenticationError",
    "Channel",
    "Client",
    "Connection",
    "ConnectionClosedError",
    "ConnectionInfo",
    "ConnectionState",
    "ContextReleasedError",
    "DistributedContext",
    "DistributedError",
    "DistributedOptimizer",
    "MemoryTransport",
    "MessageRegistry",
    "ParameterRef",
    "ProtocolError",
    "Recv",
    "RemoteCall",
    "RemoteError",
    "RemoteModule",
    "ResourceExhausted",
    "Server",
    "TcpTransport",
    "Transport",
    "UnknownWorkerError",
    "WorkerLostError",
    "backward",
    "connect",
    "context",
    "current_context",
    "load_token",
    "register_message",
    "serve",
    *_collectives_all,
]
