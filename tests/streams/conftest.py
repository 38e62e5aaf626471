"""The stream tests run under the CUDA-faithful sim mode, which is fixed at a process's first sim
use: in a run that started in the plain mode they are skipped here and run again, in a fresh
interpreter with AUTOGRAD_ASYNC_SIM=cuda, by `test_in_cuda_mode.py`."""

from __future__ import annotations

import pytest

from autograd_async.backends.sim_mode import sim_mode

RUNNER = "test_in_cuda_mode.py"


def pytest_collection_modifyitems(config: pytest.Config, items: list) -> None:
    """Skip the sim-cuda tests of this folder when this process is not in that mode."""
    if sim_mode() == "cuda":
        return
    skip = pytest.mark.skip(reason=f"needs AUTOGRAD_ASYNC_SIM=cuda; {RUNNER} runs them so")
    for item in items:
        path = str(item.fspath)
        if "/tests/streams/" in path and not path.endswith(RUNNER) and "/sim_cuda/" in path:
            item.add_marker(skip)
