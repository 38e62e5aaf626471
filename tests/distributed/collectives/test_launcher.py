"""The launcher: it forwards SIGTERM to the ranks, and runs a module with -m."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("mpi4py")

ROOT = Path(__file__).resolve().parents[3]


def test_sigterm_reaches_the_ranks_and_the_launcher_exits(tmp_path):
    script = tmp_path / "sleeper.py"
    script.write_text(
        "import signal, sys, time\n"
        "signal.signal(signal.SIGTERM, lambda *a: (print('rank got SIGTERM', flush=True),"
        " sys.exit(3)))\n"
        "print('ready', flush=True)\n"
        "time.sleep(120)\n"
    )
    launcher = subprocess.Popen(
        [sys.executable, "-m", "autograd_async.distributed.run", "-n", "2", str(script)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        cwd=ROOT,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
    )
    seen = 0
    deadline = time.monotonic() + 60
    while seen < 2 and time.monotonic() < deadline:
        line = launcher.stdout.readline()
        seen += line.strip() == "ready"
    assert seen == 2
    launcher.send_signal(signal.SIGTERM)
    out, _ = launcher.communicate(timeout=60)
    assert launcher.returncode != 0
    assert "rank got SIGTERM" in out, out
