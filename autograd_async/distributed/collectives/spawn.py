"""`spawn_threads`: data-parallel replicas on the devices of one process (`threads` backend).

One thread per device runs `fn(rank, *args)` as rank `rank` of a fresh `threads` group, with
that device entered as the thread's current device; models built there and wrapped in
`DistributedDataParallel` run their backward on their own device's worker thread, and the
group's combiner thread joins their gradients. A rank that raises fails the others' collectives
at once (never a hang), and its error is raised to the caller.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from datetime import timedelta
from typing import Any

from ...devices import Device, backend_for
from .backend_threads import HashStore
from .groups import destroy_process_group, init_process_group
from .process_group import DEFAULT_TIMEOUT, default_groups

__all__ = ["spawn_threads"]


def spawn_threads(
    fn: Callable[..., Any],
    devices: Sequence[str | Device],
    args: Sequence[Any] = (),
    timeout: timedelta = DEFAULT_TIMEOUT,
    backend: str = "threads",
) -> list[Any]:
    """Run `fn(rank, *args)` on one thread per device, each a rank of a `threads` group (or
    `nccl` for one GPU per rank); return the results in rank order (re-raising the first
    rank's error)."""
    devs = [d if isinstance(d, Device) else Device(d) for d in devices]
    if len(set(devs)) != len(devs):
        raise ValueError(
            f"spawn_threads needs distinct devices (each replica's backward runs on its "
            f"device's worker thread), got {[str(d) for d in devs]}"
        )
    store = HashStore()
    size = len(devs)
    results: list[Any] = [None] * size
    errors: list[BaseException | None] = [None] * size

    def rank_main(rank: int) -> None:
        backend_for(devs[rank]).use_device(devs[rank])
        try:
            init_process_group(
                backend,
                rank=rank,
                world_size=size,
                store=store,
                timeout=timeout,
                device_id=devs[rank].index,
            )
        except BaseException as exc:  # noqa: BLE001 - handed to the caller
            errors[rank] = exc
            return
        group = default_groups.get()
        try:
            results[rank] = fn(rank, *args)
        except BaseException as exc:  # noqa: BLE001 - handed to the caller
            errors[rank] = exc
            text = f"rank {rank} failed ({type(exc).__name__}: {exc})"
            if group is not None and hasattr(group, "fail_pending"):
                group.fail_pending(text)
        finally:
            destroy_process_group()

    threads = [
        threading.Thread(target=rank_main, args=(r,), name=f"rank-{r}:{devs[r]}", daemon=True)
        for r in range(size)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    failed = [e for e in errors if e is not None]
    if failed:  # the first failure is the cause; the others are its echo
        primary = next((e for e in failed if "failed (" not in str(e)), failed[0])
        raise primary
    return results
