"""Shared fixtures: devices to run on (CuPy ones skip without a GPU) and an optional PyTorch."""

from __future__ import annotations

import pytest

import autograd_async as aa


def _cuda_params() -> list:
    marks = pytest.mark.skipif(not aa.cuda_is_available(), reason="needs CuPy and a CUDA GPU")
    return [pytest.param("cuda:0", marks=marks)]


@pytest.fixture(params=["cpu", "sim:0", *_cuda_params()])
def device(request: pytest.FixtureRequest) -> str:
    """Each device kind the library supports: cpu, a sim device, and cuda:0 when present."""
    return request.param


@pytest.fixture
def torch():
    """PyTorch, or skip the comparison when it is not installed."""
    return pytest.importorskip("torch")
