"""Shared fixtures: devices to run on (CuPy ones skip without a GPU) and an optional PyTorch."""

from __future__ import annotations

import random
import sys
import zlib

import numpy as np
import pytest

import autograd_async as aa
from autograd_async.backends.sanitizer import sanitizer
from autograd_async.backends.sim_mode import sim_mode_state


@pytest.fixture(autouse=True)
def _sim_allocator_empty_between_tests():
    """Under the CUDA-faithful sim mode, each test starts with the simulated allocator's pool
    empty: a race one test leaves behind on purpose must not fail the next."""
    yield
    if sim_mode_state.mode == "cuda":
        sanitizer.empty_cache()


@pytest.fixture(autouse=True)
def _inline_claims_wait_out_a_busy_worker(monkeypatch: pytest.MonkeyPatch):
    """A small all-cpu pass runs inline unless the cpu worker is busy beyond a 2 ms claim; on a
    loaded machine a worker descheduled mid-wake-up would send a pass the tests expect inline to
    the worker. Tests wait up to a second instead (tests of that fallback set their own)."""
    from autograd_async.engine import inline

    monkeypatch.setattr(inline, "CLAIM_TIMEOUT_S", 1.0)


@pytest.fixture(autouse=True)
def _seeded_per_test(request: pytest.FixtureRequest):
    """Every test draws from generators seeded by its own id: a test whose tolerance suits the
    numbers it drew passes on every run, whatever order or worker runs it, rather than failing
    one run in a thousand."""
    seed = zlib.crc32(request.node.nodeid.encode())
    aa.manual_seed(seed)
    np.random.seed(seed)
    random.seed(seed)
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.manual_seed(seed)
    yield


def _cuda_params() -> list:
    marks = pytest.mark.skipif(not aa.cuda_is_available(), reason="needs CuPy and a CUDA GPU")
    return [pytest.param("cuda:0", marks=marks)]


def _device_params() -> list:
    # Under the CUDA-faithful sim rules only sim (and cuda) cases differ from the plain pass, which
    # has already run the cpu ones: the second CI pass runs what it can catch.
    plain = [] if aa.sim_mode() == "cuda" else ["cpu"]
    return [*plain, "sim:0", *_cuda_params()]


@pytest.fixture(params=_device_params())
def device(request: pytest.FixtureRequest) -> str:
    """Each device kind the library supports: cpu, a sim device, and cuda:0 when present."""
    return request.param


@pytest.fixture
def torch():
    """PyTorch, or skip the comparison when it is not installed."""
    return pytest.importorskip("torch")


# Files that never put arrays on a sim device: command lines, wire fuzzing, stub freshness, the
# benchmark scripts' smoke runs, Ray placement, plotting, and worker failures, limits and the
# distributed example, whose tensors all live on the cpu. The second CI pass,
# under the CUDA-faithful sim rules (AUTOGRAD_ASYNC_SIM=cuda), leaves them out with
# `-m "not rules_free"`: they would pass the same way and take a third of the suite's time.
RULES_FREE_FILES = frozenset(
    {
        "tests/test_benchmarks.py",
        "tests/test_type_stubs.py",
        "tests/test_doctor.py",
        "tests/test_release.py",
        "tests/examples/test_cli_help.py",
        "tests/distributed/test_worker_cli.py",
        "tests/distributed/test_fuzz.py",
        "tests/distributed/test_ray.py",
        "tests/profiler/test_plot_and_cli.py",
        "tests/distributed/test_failures.py",
        "tests/distributed/test_worker_limits.py",
        "tests/distributed/test_example.py",
    }
)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark the tests of RULES_FREE_FILES `rules_free`."""
    root = config.rootpath
    for item in items:
        if item.path.relative_to(root).as_posix() in RULES_FREE_FILES:
            item.add_marker(pytest.mark.rules_free)
