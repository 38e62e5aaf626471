"""Everyday PyTorch programs (tests/torch_programs/program_*.py: training loops, recurrent and
transformer models, a VAE, a GAN, custom Functions, hooks, parametrizations, data loading,
checkpoints, linalg, torch.func, torch.testing) run unchanged with `torch` answered by
autograd_async, as a user porting them by changing the import would run them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

PROGRAMS = Path(__file__).parent / "torch_programs"


@pytest.mark.timeout(300)
@pytest.mark.parametrize("program", sorted(p.name for p in PROGRAMS.glob("program_*.py")))
def test_program_runs_with_torch_answered_by_autograd_async(program, tmp_path):
    done = subprocess.run(
        [sys.executable, str(PROGRAMS / "run_as_torch.py"), str(PROGRAMS / program)],
        cwd=tmp_path,  # the programs save checkpoints in their working directory
        capture_output=True,
        text=True,
        timeout=280,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Traceback (most recent call last)" not in done.stderr, done.stderr[-3000:]
    assert done.stdout.strip()
