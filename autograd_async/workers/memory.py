"""A worker's memory budget: what the calls of its peers may allocate, per call, per peer, in all.

Byte quotas (`ByteBudget`) bound what a peer sends and what the worker holds for it; this
bounds what its calls compute. A `(1, 16000) + (16000, 1)` float32 add sends 125 KiB and asks
for a 977 MiB result; outer products, `expand(...).contiguous()`, `repeat`, `zeros` of a large
shape, a module's forward do the same. Two checks:

- before the work, a call whose outputs can be sized from its inputs (the registry's
  `output_nbytes`: broadcast and matmul shapes of the default functions) is refused when they
  would not fit;
- during it, every array the call makes is counted as NumPy allocates it (`allocator.counting`)
  and a block that would take the call, its peer or the worker over a limit is refused before it
  exists: the call fails with `ResourceExhausted` naming the call, the size and the limit.

Counts are plain bookkeeping under a lock (the counting runs on compute threads and the loop);
`MemoryGuard` drives it around each call on the worker's loop. Arrays a call leaves behind
(outputs kept in a distributed context, a module's parameters) stay counted against its peer and
the worker until they are freed.
"""

from __future__ import annotations

import asyncio
import gc
import os
import threading
from collections import Counter
from collections.abc import Awaitable, Callable
from concurrent.futures import Executor
from pathlib import Path
from typing import Any, TypeVar

from autograd_async.distributed.errors import ResourceExhausted
from autograd_async.distributed.quota import format_bytes
from autograd_async.utils.malloc import release_free_memory

from . import allocator

__all__ = [
    "DEFAULT_MAX_MEMORY",
    "CallAccount",
    "MemoryBudget",
    "MemoryGuard",
    "machine_memory",
]

T = TypeVar("T")

# A counted call that was refused, or that used half its share or more, makes the worker give
# its free heap memory back to the system once no counted call has run for TRIM_DELAY seconds.
TRIM_DELAY = 0.5


def machine_memory() -> int:
    """The memory this process may use: physical memory, or its cgroup's limit if lower."""
    try:
        total = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        total = 8 << 30  # a platform without sysconf: assume a small machine
    for limit_file in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        try:
            text = Path(limit_file).read_text().strip()
        except OSError:
            continue
        if text.isdigit():
            total = min(total, int(text))
    return total


# Half of the machine: the rest is the worker's own (interpreter, frames, replies) and others'.
DEFAULT_MAX_MEMORY = machine_memory() // 2


class CallAccount:
    """What one call (or module build) has allocated and still holds; the allocator's meter."""

    __slots__ = ("budget", "peak", "peer", "refusal", "used", "what")

    def __init__(self, budget: MemoryBudget, peer: str, what: str) -> None:
        self.budget = budget
        self.peer = peer
        self.what = what
        self.used = 0
        self.peak = 0
        self.refusal: str | None = None  # why the last refused block was refused

    def admit(self, nbytes: int) -> bool:
        """Count `nbytes` about to be allocated, or refuse them (recording why)."""
        return self.budget.admit(self, nbytes)

    def release(self, nbytes: int) -> None:
        """`nbytes` it admitted were freed."""
        self.budget.release(self, nbytes)

    def exhausted(self) -> ResourceExhausted:
        """The error for the caller of a call whose allocation was refused."""
        return ResourceExhausted(self.refusal or f"{self.budget.owner} refused {self.what}")


class MemoryBudget:
    """Bytes that calls may hold: `per_call` for one, `per_peer` for one peer's, `total` in all."""

    def __init__(
        self,
        total: int = DEFAULT_MAX_MEMORY,
        *,
        per_peer: int | None = None,
        per_call: int | None = None,
        owner: str = "worker",
    ) -> None:
        per_peer = total // 2 if per_peer is None else per_peer
        per_call = total // 4 if per_call is None else per_call
        if min(total, per_peer, per_call) <= 0:
            raise ValueError(
                f"memory limits must be positive, got {total}, {per_peer} and {per_call}"
            )
        self.total = total
        self.per_peer = min(per_peer, total)
        self.per_call = min(per_call, self.per_peer)
        self.owner = owner
        self.running = 0  # counted calls in progress
        self._lock = threading.Lock()  # never held while sweeping (which releases)
        self._held: Counter[str] = Counter()
        self._sum = 0

    def held(self, peer: str | None = None) -> int:
        """Bytes counted for `peer`, or for all peers when None (after a sweep: exact)."""
        allocator.sweep()
        with self._lock:
            return self._sum if peer is None else self._held[peer]

    def account(self, peer: str, what: str) -> CallAccount:
        """A fresh account for `what` (e.g. "call 'add'"), run for `peer`."""
        return CallAccount(self, peer, what)

    # ------------------------------------------------------------------ before the work
    def check(self, peer: str, what: str, nbytes: int) -> None:
        """Raise ResourceExhausted if `what` would not fit when it allocates `nbytes`: for
        outputs sized before the work."""
        if nbytes <= 0:
            return
        refusal = self._refusal(peer, what, 0, nbytes)
        if refusal is not None:
            allocator.sweep()
            refusal = self._refusal(peer, what, 0, nbytes)
        if refusal is not None:
            raise ResourceExhausted(refusal)

    # ------------------------------------------------------------------ during the work
    def admit(self, account: CallAccount, nbytes: int) -> bool:
        """Count `nbytes` for `account`, or refuse them and record why (counting nothing)."""
        if self._count(account, nbytes) is None:
            return True
        # Arrays already gone may still be counted: find them (this call's alone when only its
        # own share is short), then try again.
        allocator.sweep(account if account.used + nbytes > self.per_call else None)
        refusal = self._count(account, nbytes)
        if refusal is None:
            return True
        account.refusal = refusal
        return False

    def _count(self, account: CallAccount, nbytes: int) -> str | None:
        """Count `nbytes` for `account` if they fit; else why not (counting nothing)."""
        with self._lock:
            used = account.used + nbytes
            if (
                used <= self.per_call
                and self._held[account.peer] + nbytes <= self.per_peer
                and self._sum + nbytes <= self.total
            ):
                account.used = used
                if used > account.peak:
                    account.peak = used
                self._held[account.peer] += nbytes
                self._sum += nbytes
                return None
            return self._refusal(account.peer, account.what, account.used, nbytes)

    def release(self, account: CallAccount, nbytes: int) -> None:
        """Stop counting `nbytes` of `account`."""
        with self._lock:
            account.used -= nbytes
            left = self._held[account.peer] - nbytes
            if left > 0:
                self._held[account.peer] = left
            else:
                del self._held[account.peer]
            self._sum -= nbytes

    def _refusal(self, peer: str, what: str, used: int, nbytes: int) -> str | None:
        mine = self._held[peer] if peer in self._held else 0
        if (
            used + nbytes <= self.per_call
            and mine + nbytes <= self.per_peer
            and self._sum + nbytes <= self.total
        ):
            return None
        needs = f"{self.owner} refused {what} from peer {peer!r}: it needs {format_bytes(nbytes)}"
        if used + nbytes > self.per_call:
            held = f" more while holding {format_bytes(used)}" if used else ""
            return (
                f"{needs}{held}, over the memory share of {format_bytes(self.per_call)} per "
                "call (--max-call-memory)"
            )
        if mine + nbytes > self.per_peer:
            return (
                f"{needs} while the peer's calls hold {format_bytes(mine)}, over the memory "
                f"share of {format_bytes(self.per_peer)} per peer (--max-peer-memory)"
            )
        return (
            f"{needs} while calls hold {format_bytes(self._sum)} in all, over the "
            f"worker's memory budget of {format_bytes(self.total)} (--max-memory)"
        )

    # ------------------------------------------------------------------ around each call
    def started(self) -> None:
        """A counted call begins."""
        with self._lock:
            self.running += 1

    def finished(self, account: CallAccount) -> bool:
        """A counted call ended; True when the worker should give freed memory back to the
        system once calls pause (the call was refused, or used half its share or more).
        What it freed is found by the next sweep: before any refusal, and in `held`."""
        with self._lock:
            self.running -= 1
        return account.refusal is not None or 2 * account.peak >= self.per_call


class MemoryGuard:
    """Runs a worker's calls with their allocations counted on its `MemoryBudget`, and gives
    freed memory back to the system after a burst (the worker keeps freed blocks for reuse
    otherwise: workers/heap.py)."""

    def __init__(self, budget: MemoryBudget, executor: Executor) -> None:
        self.budget = budget
        self._executor = executor  # where the trim runs, off the serving loop
        self._trim_timer: asyncio.TimerHandle | None = None

    async def run(
        self, peer: str, what: str, fn: Callable[..., Awaitable[T]], *args: Any, **kwargs: Any
    ) -> T:
        """`await fn(*args, **kwargs)` with what it allocates counted against `peer`'s
        shares; an allocation refused there fails it with ResourceExhausted."""
        account = self.budget.account(peer, what)
        self.budget.started()
        try:
            with allocator.counting(account):
                return await fn(*args, **kwargs)
        except Exception as exc:
            if account.refusal is not None:  # MemoryError, or whatever the code made of it
                raise account.exhausted() from exc
            raise
        finally:
            if self.budget.finished(account):
                self._schedule_trim()

    def close(self) -> None:
        """Stop the pending trim, if any."""
        if self._trim_timer is not None:
            self._trim_timer.cancel()
            self._trim_timer = None

    def _schedule_trim(self) -> None:
        self.close()
        self._trim_timer = asyncio.get_running_loop().call_later(TRIM_DELAY, self._trim)

    def _trim(self) -> None:
        self._trim_timer = None
        if self.budget.running:  # calls still allocate: look again later
            self._schedule_trim()
            return
        self._executor.submit(_give_back_memory)


def _give_back_memory() -> None:
    """Count the arrays gone since, and return the heap's free memory to the system."""
    gc.collect()  # arrays held only by reference cycles (a backward's graph) go first
    allocator.sweep()
    release_free_memory()
