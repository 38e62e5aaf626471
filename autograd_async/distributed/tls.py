"""TLS for the transport: SSL contexts from certificate files, and when plaintext is allowed.

The HMAC handshake authenticates both peers, but frames after it carry no MAC: on a network an
on-path relay could inject or alter a frame of an authenticated session. So a server refuses to
listen beyond loopback without TLS (which gives confidentiality and integrity to every frame)
unless told `insecure=True`; plaintext is for loopback, where only local processes can reach
the socket.
"""

from __future__ import annotations

import ipaddress
import os
import socket
import ssl

__all__ = ["client_context", "is_loopback", "server_context"]

PathLike = str | os.PathLike[str]


def server_context(cert: PathLike, key: PathLike, ca: PathLike | None = None) -> ssl.SSLContext:
    """A server-side context with this certificate; with `ca`, clients must present a
    certificate signed by it (mutual TLS)."""
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    ctx.load_cert_chain(os.fspath(cert), os.fspath(key))
    if ca is not None:
        ctx.load_verify_locations(cafile=os.fspath(ca))
        ctx.verify_mode = ssl.CERT_REQUIRED
    return ctx


def client_context(
    ca: PathLike | None = None, cert: PathLike | None = None, key: PathLike | None = None
) -> ssl.SSLContext:
    """A client-side context that verifies servers against `ca` (the system's CAs when None)
    and, given `cert` and `key`, presents that certificate (for mutual TLS)."""
    if (cert is None) != (key is None):
        raise ValueError("a TLS client certificate needs both cert and key")
    ctx = ssl.create_default_context(
        ssl.Purpose.SERVER_AUTH, cafile=None if ca is None else os.fspath(ca)
    )
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    if cert is not None and key is not None:
        ctx.load_cert_chain(os.fspath(cert), os.fspath(key))
    return ctx


def is_loopback(host: str | None) -> bool:
    """True when every address `host` names is a loopback address ('' and None mean all
    interfaces: False). Resolves names (raises socket.gaierror for an unknown one)."""
    if not host:
        return False
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        pass
    infos = socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)
    return bool(infos) and all(ipaddress.ip_address(info[4][0]).is_loopback for info in infos)
