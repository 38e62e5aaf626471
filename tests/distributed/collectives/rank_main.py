"""One rank of the MPI tests, run by the launcher: `rank_main.py MODE`."""

from __future__ import annotations

import os
import signal
import sys
import time
from datetime import timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

import autograd_async as aa  # noqa: E402
import autograd_async.distributed as dist  # noqa: E402
from tests.distributed.collectives.checks import check_everything, check_mismatch  # noqa: E402


def main(mode: str) -> None:
    dist.init_process_group("mpi", timeout=timedelta(seconds=60))
    rank, size = dist.get_rank(), dist.get_world_size()
    # The short timeout applies from here: the ranks' start-up times may differ by more.
    group = None
    if "TEST_PG_TIMEOUT" in os.environ:
        group = dist.new_group(timeout=timedelta(seconds=float(os.environ["TEST_PG_TIMEOUT"])))
    if mode == "collectives":
        count = check_everything(rank, size)
        check_mismatch(rank, size, "cpu")
        t = aa.ones(2)
        dist.all_reduce(t)  # the group still works after a mismatch
        assert t.tolist() == [size, size]
        print(f"rank {rank}: {count} collectives match NumPy", flush=True)
        dist.destroy_process_group()
        return
    started = time.monotonic()
    try:
        t = aa.ones(4)
        dist.all_reduce(t, group=group)
        if rank == 1:
            if mode == "raise":
                raise ValueError("rank 1 raised on purpose")
            if mode == "kill":
                os.kill(os.getpid(), signal.SIGKILL)
            if mode == "late":
                time.sleep(float(os.environ["TEST_PG_TIMEOUT"]) + 3)
                return
        started = time.monotonic()
        dist.all_reduce(t, group=group)
    except dist.DistBackendError as exc:
        # A survivor whose first all_reduce had not completed when rank 1 failed fails there.
        print(f"rank {rank} failed after {time.monotonic() - started:.2f} s: {exc}", flush=True)
        raise


if __name__ == "__main__":
    main(sys.argv[1])
