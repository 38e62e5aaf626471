"""GPU stage for the nccl backend: run on a machine with one or more NVIDIA GPUs.

    python benchmarks/gpu_nccl_check.py

1. the NCCL tests in one process (thread ranks, one GPU each; 1 GPU and, when present, 2);
2. with two or more GPUs, two processes under the launcher: an all_reduce and a DDP step on NCCL.
Exit status 0 when everything passed (or there is no GPU: then it says so and skips).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

TWO_PROCESSES = """
import numpy as np
import autograd_async as aa
import autograd_async.distributed as dist
import autograd_async.nn as nn
dist.init_process_group("nccl")
rank, size = dist.get_rank(), dist.get_world_size()
device = f"cuda:{rank}"
t = aa.full((1000,), float(rank + 1), device=device)
dist.all_reduce(t)
assert np.allclose(t.cpu().numpy(), size * (size + 1) / 2), t
model = nn.Linear(8, 4).to(device)
ddp = nn.parallel.DistributedDataParallel(model)
ddp(aa.ones(5, 8, device=device) * (rank + 1)).sum().backward()
grads = [None] * size
dist.all_gather_object(grads, model.weight.grad.cpu().numpy().tolist())
assert grads[0] == grads[1]
print(f"rank {rank}: nccl all_reduce and DDP across processes ok", flush=True)
dist.destroy_process_group()
"""


def main() -> int:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    try:
        import cupy

        gpus = cupy.cuda.runtime.getDeviceCount()
    except Exception as exc:  # noqa: BLE001 - any failure: no GPU here
        print(f"gpu_nccl_check: no usable GPU ({exc}); skipped")
        return 0
    print(f"gpu_nccl_check: {gpus} GPU(s)")
    status = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "tests/distributed/collectives/test_nccl_backend.py",
        ],
        cwd=ROOT,
        env=env,
    ).returncode
    if gpus >= 2:
        with tempfile.TemporaryDirectory() as tmp:
            script = Path(tmp) / "nccl_two_processes.py"
            script.write_text(TWO_PROCESSES)
            status |= subprocess.run(
                [sys.executable, "-m", "autograd_async.distributed.run", "-n", "2", str(script)],
                cwd=ROOT,
                env=env,
                timeout=300,
            ).returncode
    print("gpu_nccl_check: " + ("passed" if status == 0 else "FAILED"))
    return 0 if status == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
