"""examples/data_parallel.py: in one process over two sim devices, and as two MPI ranks."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from .helpers import EXAMPLE_TEST_TIMEOUT, EXAMPLE_TIMEOUT, EXAMPLES, example_env, run_example

pytest.importorskip("sklearn")


def assert_trained(out: str, world: int) -> None:
    for rank in range(world):
        assert re.search(rf"rank {rank}/{world} on \S+: [\d,]+ samples/s", out), out
    found = re.search(rf"test accuracy ([\d.]+)% after data-parallel training on {world}", out)
    assert found and float(found.group(1)) > 50, out


@pytest.mark.timeout(EXAMPLE_TEST_TIMEOUT)
def test_replicas_on_two_sim_devices_train_in_one_process():
    done = run_example("data_parallel.py", "--devices", "sim:0,sim:1", "--epochs", "2")
    assert done.returncode == 0, done.stdout + done.stderr
    assert_trained(done.stdout, 2)


@pytest.mark.timeout(EXAMPLE_TEST_TIMEOUT)
def test_two_mpi_ranks_under_the_launcher():
    pytest.importorskip("mpi4py")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "autograd_async.distributed.run",
            "-n",
            "2",
            str(EXAMPLES / "data_parallel.py"),
            "--epochs",
            "2",
        ],
        capture_output=True,
        text=True,
        timeout=EXAMPLE_TIMEOUT,
        cwd=EXAMPLES.parent,
        env=dict(
            example_env(),
            OMP_NUM_THREADS="1",
            PYTHONPATH=os.pathsep.join(
                p for p in (str(EXAMPLES.parent), os.environ.get("PYTHONPATH")) if p
            ),
        ),
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert_trained(done.stdout, 2)
