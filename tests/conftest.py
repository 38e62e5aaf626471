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


# The files that take longest, longest first: most build the wheel, run scripts or start worker
# processes, MPI ranks or Ray, for 20 s to 4 minutes each on a loaded 2-core host. CI runs the
# suite with `-n 2 --dist loadfile`, where xdist by default hands out files by their number of
# tests, most first: these few-test files came last, where one of them could keep a worker busy
# for minutes after the other had run out of files. Started first, they run beside the many
# short files, and the run ends on short ones.
SLOW_FILES_FIRST = (
    "tests/test_benchmarks.py",
    "tests/distributed/test_ray.py",
    "tests/distributed/test_worker_cli.py",
    "tests/test_release.py",
    "tests/ops/test_pooling_nd.py",
    "tests/distributed/test_failures.py",
    "tests/test_torch_programs.py",
    "tests/ops/test_grid_sampling.py",
    "tests/distributed/collectives/test_mpi_backend.py",
    "tests/core/test_deep_graphs.py",
    "tests/examples/test_cli_help.py",
    "tests/examples/test_gradient_service.py",
    "tests/test_type_stubs.py",
    "tests/docs/test_code_blocks.py",
    "tests/examples/test_models.py",
    "tests/distributed/test_example.py",
    "tests/examples/test_data_parallel.py",
)


def pytest_configure(config: pytest.Config) -> None:
    """Hand files to the xdist workers in the order of the collection, which
    pytest_collection_modifyitems sets, instead of xdist's own order by test count."""
    if hasattr(config.option, "loadscopereorder"):
        config.option.loadscopereorder = False


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark the tests of RULES_FREE_FILES `rules_free`, and order the files for the workers:
    SLOW_FILES_FIRST in their order, then the rest by number of tests, most first (what xdist
    does by default), each file's tests kept together and in their own order."""
    root = config.rootpath
    files = [item.path.relative_to(root).as_posix() for item in items]
    for item, file in zip(items, files):
        if file in RULES_FREE_FILES:
            item.add_marker(pytest.mark.rules_free)
    tests_per_file: dict[str, int] = {}
    for file in files:
        tests_per_file[file] = tests_per_file.get(file, 0) + 1
    slow_rank = {file: rank for rank, file in enumerate(SLOW_FILES_FIRST)}
    unranked = len(SLOW_FILES_FIRST)
    order = sorted(
        range(len(items)),
        key=lambda i: (slow_rank.get(files[i], unranked), -tests_per_file[files[i]]),
    )
    items[:] = [items[i] for i in order]
