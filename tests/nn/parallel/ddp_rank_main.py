"""One rank of the DDP tests, run by the launcher."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

import autograd_async.distributed as dist  # noqa: E402
from tests.nn.parallel.ddp_checks import check_everything  # noqa: E402

if __name__ == "__main__":
    dist.init_process_group("mpi")
    check_everything(dist.get_rank(), dist.get_world_size())
    print(f"rank {dist.get_rank()} of {dist.get_world_size()}: DDP matches one process", flush=True)
    dist.destroy_process_group()
