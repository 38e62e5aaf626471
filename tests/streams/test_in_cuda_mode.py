"""Runs tests/streams/sim_cuda in a fresh interpreter under the CUDA-faithful sim mode."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from autograd_async.backends.sim_mode import sim_mode

FOLDER = Path(__file__).parent / "sim_cuda"
ROOT = Path(__file__).parents[2]


@pytest.mark.timeout(600)
def test_sim_cuda_folder_passes_in_a_fresh_interpreter():
    if sim_mode() == "cuda":
        pytest.skip("this process is in the sim cuda mode: the folder's tests run here directly")
    # Prepended, not replaced: packages installed beside the interpreter stay importable.
    path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH", "")]))
    env = dict(os.environ, AUTOGRAD_ASYNC_SIM="cuda", PYTHONPATH=path)
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(FOLDER)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=580,
    )
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-2000:]
    assert " passed" in done.stdout
