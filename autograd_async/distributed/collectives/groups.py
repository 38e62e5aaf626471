"""Starting and ending process groups: `init_process_group`, `new_group`, ranks and sizes."""

from __future__ import annotations

import os
from collections.abc import Sequence
from datetime import timedelta
from typing import Any

from .api import NOT_INITIALIZED, resolve_group
from .process_group import DEFAULT_TIMEOUT, GroupMember, ProcessGroup, default_groups
from .supervision import launched_rank

__all__ = [
    "Backend",
    "destroy_process_group",
    "get_backend",
    "get_rank",
    "get_world_size",
    "init_process_group",
    "is_available",
    "is_initialized",
    "is_mpi_available",
    "is_nccl_available",
    "new_group",
]


class Backend:
    """The backend names `init_process_group` accepts."""

    MPI = "mpi"
    NCCL = "nccl"
    THREADS = "threads"
    NAMES = (MPI, NCCL, THREADS)


def is_available() -> bool:
    """Collectives are always built in (their engines are imported on first use)."""
    return True


def is_mpi_available() -> bool:
    """True when mpi4py can be imported (without initialising MPI)."""
    import importlib.util  # noqa: PLC0415 - only asked here

    return importlib.util.find_spec("mpi4py") is not None


def is_nccl_available() -> bool:
    """True when CuPy's NCCL binding imports and a GPU is present."""
    try:
        import cupy  # noqa: PLC0415 - optional dependency
        from cupy.cuda import nccl  # noqa: F401, PLC0415 - optional dependency

        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:  # noqa: BLE001 - any failure means: not available here
        return False


def _default_backend() -> str:
    if launched_rank() is not None and is_mpi_available():
        return Backend.MPI
    raise ValueError(
        "init_process_group needs a backend: 'mpi' (launch with `python -m "
        "autograd_async.distributed.run -n N script.py` or mpiexec), 'nccl' or 'threads'"
    )


def init_process_group(
    backend: str | None = None,
    init_method: str | None = None,
    timeout: timedelta | None = None,
    world_size: int = -1,
    rank: int = -1,
    store: Any = None,
    group_name: str = "",
    pg_options: Any = None,
    device_id: Any = None,
) -> None:
    """Start the default process group (PyTorch's signature; `mpi`, `nccl` or `threads`)."""
    if default_groups.get() is not None:
        raise ValueError("trying to initialize the default process group twice!")
    name = (backend or _default_backend()).lower()
    timeout = timeout if timeout is not None else DEFAULT_TIMEOUT
    if not isinstance(timeout, timedelta):
        raise TypeError(
            f"Expected timeout argument to be of type datetime.timedelta, got {timeout!r}"
        )
    if name == Backend.MPI:
        from .backend_mpi import MpiProcessGroup  # noqa: PLC0415 - imports mpi4py

        group: ProcessGroup = MpiProcessGroup(name="WORLD", timeout=timeout)
        _check_given(group, world_size, rank)
        default_groups.process = group
    elif name == Backend.NCCL:
        from .backend_nccl import NcclProcessGroup  # noqa: PLC0415 - imports CuPy

        if store is not None:  # thread ranks of one process, one GPU each
            group = NcclProcessGroup.in_process(store, rank, world_size, device_id, timeout)
            default_groups.in_context.set(group)
        else:
            group = NcclProcessGroup.across_processes(timeout=timeout, device_id=device_id)
            _check_given(group, world_size, rank)
            default_groups.process = group
    elif name == Backend.THREADS:
        from .backend_threads import ThreadProcessGroup  # noqa: PLC0415 - only this backend

        if store is None or world_size < 1 or rank < 0:
            raise ValueError("the threads backend needs store=HashStore(), world_size and rank")
        group = ThreadProcessGroup(store, rank, world_size, name="WORLD", timeout=timeout)
        default_groups.in_context.set(group)
    else:
        raise ValueError(f"Invalid backend: '{backend}', expected one of {Backend.NAMES}")
    if default_groups.process is group:  # a process rank: torchrun's variables, for scripts
        os.environ.setdefault("WORLD_SIZE", str(group.size()))
        os.environ.setdefault("RANK", str(group.rank()))
        os.environ.setdefault("LOCAL_RANK", os.environ.get("MPI_LOCALRANKID", str(group.rank())))


def _check_given(group: ProcessGroup, world_size: int, rank: int) -> None:
    if world_size not in (-1, group.size()) or rank not in (-1, group.rank()):
        group.shutdown()
        raise ValueError(
            f"world_size={world_size}, rank={rank} disagree with the launch "
            f"(world size {group.size()}, rank {group.rank()})"
        )


def is_initialized() -> bool:
    """True once the default process group exists."""
    return default_groups.get() is not None


def get_rank(group: Any = None) -> int:
    """This process's rank in `group` (the default group when None); -1 outside the group."""
    if group is GroupMember.NON_GROUP_MEMBER:
        return -1
    return resolve_group(group).rank()


def get_world_size(group: Any = None) -> int:
    """How many ranks `group` (the default group when None) has."""
    if group is GroupMember.NON_GROUP_MEMBER:
        return -1
    return resolve_group(group).size()


def get_backend(group: Any = None) -> str:
    """The backend name of `group`."""
    return resolve_group(group).backend_name


def new_group(
    ranks: Sequence[int] | None = None,
    timeout: timedelta | None = None,
    backend: str | None = None,
    pg_options: Any = None,
    use_local_synchronization: bool = False,
    group_desc: str | None = None,
) -> Any:
    """A group of some ranks (every rank of the default group must call it, as PyTorch's)."""
    world = resolve_group(None)
    members = sorted(set(ranks)) if ranks is not None else list(world.ranks)
    for r in members:
        if r not in world.ranks:
            raise ValueError(f"new_group: rank {r} is not in the default group {world.ranks}")
    name = world.next_subgroup_name() if group_desc is None else group_desc
    group = world.new_subgroup(members, name, timeout or world.timeout)
    return group if group is not None else GroupMember.NON_GROUP_MEMBER


def destroy_process_group(group: Any = None) -> None:
    """End `group`, or the default group and with it this process's collectives."""
    if group is None or group is GroupMember.WORLD:
        found = default_groups.get()
        if found is None:
            raise ValueError(NOT_INITIALIZED)
        found.shutdown()
        if default_groups.in_context.get() is found:
            default_groups.in_context.set(None)
        if default_groups.process is found:
            default_groups.process = None
        return
    if group is not GroupMember.NON_GROUP_MEMBER:
        group.shutdown()
