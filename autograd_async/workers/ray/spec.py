"""What a Ray worker actor is told to be: a picklable record built by the driver.

Only plain values cross into the actor (Ray pickles them): TLS is given as file paths, read on
the node where each worker runs, so every node can keep its own certificate and private keys
never travel through Ray.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

__all__ = ["LOOPBACK", "NODE_ADDRESS", "TlsFiles", "WorkerSpec", "as_tls_files"]

LOOPBACK = "127.0.0.1"
# Listen on the address Ray knows the worker's node by (ray.util.get_node_ip_address()).
NODE_ADDRESS = "node"


class TlsFiles(NamedTuple):
    """PEM paths of a worker's TLS certificate and key and, for mutual TLS, the CA that signs
    the certificates of its clients and peers. Read on each worker's node, and on the driver
    by `RayWorkers.client()` (the CA to verify workers; cert and key to prove itself)."""

    cert: str
    key: str
    ca: str | None = None


def as_tls_files(tls: Any) -> TlsFiles | None:
    """`tls=` as TlsFiles: None, a TlsFiles, a (cert, key[, ca]) tuple or a mapping with the
    keys cert, key and optionally ca."""
    if tls is None or isinstance(tls, TlsFiles):
        return tls
    if isinstance(tls, Mapping):
        unknown = set(tls) - {"cert", "key", "ca"}
        if unknown or "cert" not in tls or "key" not in tls:
            raise ValueError(f"tls= takes the keys cert, key and optionally ca; got {sorted(tls)}")
        tls = (tls["cert"], tls["key"], tls.get("ca"))
    if isinstance(tls, tuple | list) and len(tls) in (2, 3):
        cert, key, *ca = (None if p is None else os.fspath(p) for p in tls)
        if cert is None or key is None:
            raise ValueError("tls= needs both a certificate and its key")
        return TlsFiles(cert, key, *ca)
    raise TypeError(
        f"tls= takes certificate paths (TlsFiles(cert, key, ca), a (cert, key[, ca]) tuple or "
        f"a mapping), got {type(tls).__name__}; an ssl.SSLContext cannot be sent to Ray actors "
        "(give it to cluster.client(ssl=...) for the driver's side)"
    )


@dataclass(frozen=True)
class WorkerSpec:
    """Everything one worker actor needs to start its `WorkerServer`."""

    name: str
    token: bytes
    devices: tuple[str, ...]
    load: tuple[str, ...] = ()
    host: str = LOOPBACK  # an address, or NODE_ADDRESS
    tls: TlsFiles | None = None
    insecure: bool = False
    num_gpus: float = 0
    # Further WorkerServer keyword arguments (context_ttl, peer_timeout, max_peer_bytes, ...).
    options: Mapping[str, Any] = field(default_factory=dict)

    def __repr__(self) -> str:  # never print the token
        return (
            f"WorkerSpec(name={self.name!r}, devices={self.devices}, host={self.host!r}, "
            f"tls={self.tls is not None}, load={self.load})"
        )
