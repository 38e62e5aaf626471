"""Byte quotas: what a server holds for each peer, and in total, stays under two limits.

A `ByteBudget` is plain bookkeeping (no I/O, no locks: it is used from one event loop). The
server reserves bytes before it holds them (a request's arrays, a reply) or right after it made
them (a module's parameters, a context's records) and releases them when they are gone; a
reservation that would cross a limit raises `ResourceExhausted`, which reaches the caller as an
error frame, and nothing is held.
"""

from __future__ import annotations

import logging
from collections import Counter

from .errors import ResourceExhausted

__all__ = ["DEFAULT_MAX_PEER_BYTES", "DEFAULT_MAX_TOTAL_BYTES", "ByteBudget", "format_bytes"]

logger = logging.getLogger("autograd_async.distributed")

DEFAULT_MAX_PEER_BYTES = 512 << 20
DEFAULT_MAX_TOTAL_BYTES = 2 << 30


def format_bytes(n: int) -> str:
    """`n` bytes for a message: '512 MiB', '1.5 GiB', '300 bytes'."""
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift:
            value = n / (1 << shift)
            return f"{value:.0f} {unit}" if value.is_integer() else f"{value:.1f} {unit}"
    return f"{n} bytes"


class ByteBudget:
    """Bytes held per peer (at most `per_peer`) and in total (at most `total`)."""

    def __init__(
        self,
        per_peer: int = DEFAULT_MAX_PEER_BYTES,
        total: int = DEFAULT_MAX_TOTAL_BYTES,
        *,
        owner: str = "server",
    ) -> None:
        if per_peer <= 0 or total <= 0:
            raise ValueError(f"byte quotas must be positive, got {per_peer} and {total}")
        self.per_peer = per_peer
        self.total = total
        self.owner = owner
        self._held: Counter[str] = Counter()
        self._sum = 0

    def held(self, peer: str | None = None) -> int:
        """Bytes held for `peer`, or for everyone when None."""
        return self._sum if peer is None else self._held[peer]

    def reserve(self, peer: str, nbytes: int, what: str) -> None:
        """Count `nbytes` for `peer`, or raise ResourceExhausted (counting nothing)."""
        if nbytes <= 0:
            return
        self._check(peer, nbytes, what)
        self._held[peer] += nbytes
        self._sum += nbytes

    def ensure_room(self, peer: str, what: str) -> None:
        """Raise ResourceExhausted if `peer`, or everyone together, is already at a quota: for
        work whose size is known only once it is done."""
        self._check(peer, 1, what)

    def ensure_fits(self, peer: str, nbytes: int, what: str) -> None:
        """Raise ResourceExhausted if `nbytes` more would not fit now (counting nothing): for
        work that will hold them once it is done, refused before it starts."""
        if nbytes > 0:
            self._check(peer, nbytes, what)

    def _check(self, peer: str, nbytes: int, what: str) -> None:
        mine = self._held[peer]
        if mine + nbytes > self.per_peer:
            raise ResourceExhausted(
                f"{self.owner} refused {what}: it needs {format_bytes(nbytes)} and peer "
                f"{peer!r} already holds {format_bytes(mine)} there, over its quota of "
                f"{format_bytes(self.per_peer)} per peer (--max-peer-bytes)"
            )
        if self._sum + nbytes > self.total:
            raise ResourceExhausted(
                f"{self.owner} refused {what}: it needs {format_bytes(nbytes)} and "
                f"{format_bytes(self._sum)} are held for all peers, over the quota of "
                f"{format_bytes(self.total)} in total (--max-total-bytes)"
            )

    def force(self, peer: str, nbytes: int) -> None:
        """Count `nbytes` that are already held and cannot be refused (may exceed a quota)."""
        if nbytes > 0:
            self._held[peer] += nbytes
            self._sum += nbytes

    def release(self, peer: str, nbytes: int) -> None:
        """Stop counting `nbytes` for `peer`."""
        if nbytes <= 0:
            return
        left = self._held[peer] - nbytes
        if left < 0:  # a bookkeeping bug: never let it refuse work forever
            logger.error(
                "%s: released %d bytes for %r, which held only %d",
                self.owner,
                nbytes,
                peer,
                left + nbytes,
            )
            nbytes, left = nbytes + left, 0
        if left:
            self._held[peer] = left
        else:
            del self._held[peer]
        self._sum -= nbytes
