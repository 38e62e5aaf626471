"""Helpers for backend tests: snippets run in a fresh interpreter under the CUDA-faithful sim mode.

The sim mode is fixed at the first use of a sim device, and this test process has long used sim
devices in the plain mode, so the CUDA rules are exercised in a child process started with
AUTOGRAD_ASYNC_SIM=cuda.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import autograd_async as aa

ROOT = Path(__file__).resolve().parents[2]


def run_in_cuda_sim(code: str, *args: str, timeout: float = 240.0) -> str:
    """Run `code` in a new interpreter with sim devices under CUDA's rules; its stdout."""
    env = dict(os.environ)
    env["AUTOGRAD_ASYNC_SIM"] = "cuda"
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=ROOT,
    )
    assert proc.returncode == 0, f"child failed ({proc.returncode}):\n{proc.stderr}"
    return proc.stdout


def run_json(code: str, *args: str) -> dict:
    """`run_in_cuda_sim` for a snippet whose last stdout line is a JSON object."""
    return json.loads(run_in_cuda_sim(code, *args).strip().splitlines()[-1])


needs_gpu = pytest.mark.skipif(not aa.cuda_is_available(), reason="needs CuPy and a CUDA GPU")
needs_two_gpus = pytest.mark.skipif(aa.cuda.device_count() < 2, reason="needs 2 CUDA GPUs")
