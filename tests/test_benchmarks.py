"""Every benchmark script runs to its report at a tiny size, so none of them rots between uses.

These check that the scripts work, not what they measure: figures from a test run mean nothing.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"

# (script, tiny arguments, a line its report always prints, reference libraries it needs)
SMOKE_RUNS = [
    ("chain.py", ["--quick"], "target: ours backward() per node", ("torch", "autograd")),
    ("mlp.py", ["--quick"], "target: ours / NumPy", ("torch",)),
    ("conv.py", ["--quick"], "target: ours / torch", ("torch",)),
    ("engine_latency.py", ["--quick"], "await backward_async() / raw round trip", ()),
    ("parallel.py", ["--quick"], "speedup split vs serial", ()),
    ("dataloader.py", ["--quick"], "target: ours / torch DataLoader", ("torch",)),
    ("models.py", ["--quick"], "target: ours / torch (transformer)", ("torch",)),
    ("rnn.py", ["--quick"], "target: ours / torch <= 1.3 in every case", ("torch",)),
    ("profiler_overhead.py", ["--ops", "300", "--repeats", "2"], "ratio on/off", ()),
    ("transfer.py", ["--mib", "1", "--reps", "2", "--latency-iters", "30"], "raw uvloop echo", ()),
    (
        "distributed.py",
        ["--mib", "1", "--reps", "2", "--latency-iters", "30"],
        "distributed backward through remote mul()",
        (),
    ),
    ("service_health.py", ["--quick"], "/health p99 under load", ("aiohttp",)),
    (
        "gpu_repros.py",
        ["--device", "sim", "--log2-size", "10", "--runs", "2"],
        "host syncs inside backward",
        (),
    ),
    ("func_per_sample.py", ["--quick"], "target: ours vmap / NumPy", ("torch",)),
    ("data_parallel.py", ["--quick"], "target: ours / torch >= 1.0", ("torch", "mpi4py")),
    ("worker_memory.py", ["--quick", "--seconds", "0.3"], "p99 under attack - p99 without", ()),
    ("amp.py", ["--quick"], "ours autocast float16 / float32", ("torch",)),
    ("chain_instructions.py", ["20"], "chains recorded and backpropagated: 2 of 20 ops", ()),
]


@pytest.mark.parametrize(
    ("script", "args", "expected", "needs"), SMOKE_RUNS, ids=[run[0] for run in SMOKE_RUNS]
)
def test_benchmark_runs_to_its_report(script, args, expected, needs):
    for module in needs:
        if importlib.util.find_spec(module) is None:
            pytest.skip(f"{script} compares with {module}, which is not installed")
    done = subprocess.run(
        [sys.executable, str(BENCHMARKS / script), *args],
        capture_output=True,
        text=True,
        # Under the per-test timeout, yet far above a quick run (seconds when quiet): chain.py
        # --quick, importing torch beside a parallel test run on two cores, took over 50 s.
        timeout=110,
        cwd=BENCHMARKS.parent,
        env=dict(os.environ, PYTHONUNBUFFERED="1"),
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert expected in done.stdout, done.stdout[-2000:]
