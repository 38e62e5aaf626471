"""Collectives (PyTorch's `torch.distributed` functions) on real communication engines.

- `process_group`: `ReduceOp`, the `ProcessGroup` contract and the default group;
- `work`: `Work` handles (awaitable from any loop, `.wait(timeout=)`, `.is_completed()`);
- `api`, `objects`: the collectives on tensors and on msgpack-encodable objects;
- `groups`: `init_process_group`, `new_group`, ranks and sizes;
- backends: `backend_mpi` (mpi4py, a progress thread), `backend_threads` (ranks are threads of
  one process), `backend_nccl` (CuPy's NCCL binding); each is imported when first used;
- `supervision`: a rank's line to the launcher, which makes a failed rank fail the others fast.
"""

from .api import (
    all_gather,
    all_gather_into_tensor,
    all_reduce,
    barrier,
    broadcast,
    gather,
    reduce,
    reduce_scatter,
    reduce_scatter_tensor,
    scatter,
)
from .backend_threads import HashStore
from .groups import (
    Backend,
    destroy_process_group,
    get_backend,
    get_rank,
    get_world_size,
    init_process_group,
    is_available,
    is_initialized,
    is_mpi_available,
    is_nccl_available,
    new_group,
)
from .objects import all_gather_object, broadcast_object_list
from .process_group import GroupMember, ProcessGroup, ReduceOp
from .spawn import spawn_threads
from .work import DistBackendError, DistError, Work

__all__ = [
    "Backend",
    "DistBackendError",
    "DistError",
    "GroupMember",
    "HashStore",
    "ProcessGroup",
    "ReduceOp",
    "Work",
    "all_gather",
    "all_gather_into_tensor",
    "all_gather_object",
    "all_reduce",
    "barrier",
    "broadcast",
    "broadcast_object_list",
    "destroy_process_group",
    "gather",
    "get_backend",
    "get_rank",
    "get_world_size",
    "init_process_group",
    "is_available",
    "is_initialized",
    "is_mpi_available",
    "is_nccl_available",
    "new_group",
    "reduce",
    "reduce_scatter",
    "reduce_scatter_tensor",
    "scatter",
    "spawn_threads",
]
