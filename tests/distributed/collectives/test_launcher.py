"""The launcher: it forwards SIGTERM to the ranks, and runs a module with -m."""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

pytest.importorskip("mpi4py")

ROOT = Path(__file__).resolve().parents[3]


# mpiexec can take a minute to start ranks on a loaded machine: the waits below have their own.
@pytest.mark.timeout(240)
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
    # A reader thread, so the wait for the ranks has its own deadline: a bare readline would
    # block past it when mpiexec is slow to start the ranks on a loaded machine.
    lines: queue.SimpleQueue = queue.SimpleQueue()
    reader = threading.Thread(target=lambda: [lines.put(x) for x in launcher.stdout], daemon=True)
    reader.start()
    seen, got = 0, []
    deadline = time.monotonic() + 90
    while seen < 2 and time.monotonic() < deadline:
        try:
            line = lines.get(timeout=max(0.0, deadline - time.monotonic()))
        except queue.Empty:
            break
        got.append(line)
        seen += line.strip() == "ready"
    if seen < 2:
        launcher.kill()
        launcher.wait(timeout=30)
        pytest.fail(f"the ranks did not start within 90 s; the launcher printed: {''.join(got)}")
    launcher.send_signal(signal.SIGTERM)
    launcher.wait(timeout=60)
    reader.join(timeout=30)  # the rest of the output, up to the pipe's end
    while not lines.empty():
        got.append(lines.get_nowait())
    out = "".join(got)
    assert launcher.returncode != 0
    assert "rank got SIGTERM" in out, out
