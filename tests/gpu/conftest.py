"""GPU tests: skipped cleanly without CuPy or a CUDA GPU; `benchmarks/gpu_check.sh` runs them."""

from __future__ import annotations

import pytest

import autograd_async as aa


def pytest_collection_modifyitems(config: pytest.Config, items: list) -> None:
    """Skip this folder's tests where there is no usable GPU."""
    if aa.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="needs CuPy and a CUDA GPU")
    for item in items:
        if "/tests/gpu/" in str(item.fspath):
            item.add_marker(skip)


@pytest.fixture
def two_gpus() -> None:
    """Skip unless two or more GPUs are visible."""
    if aa.cuda.device_count() < 2:
        pytest.skip("needs 2 or more CUDA GPUs")
