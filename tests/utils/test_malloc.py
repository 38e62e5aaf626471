"""retain_freed_memory: large NumPy temporaries reuse freed memory instead of faulting in pages.

The setting is process-wide, so each measurement runs in a fresh interpreter: the test process's
own allocator is left as it was.
"""

from __future__ import annotations

import platform
import subprocess
import sys

import pytest

from autograd_async.utils.malloc import retain_freed_memory

# Minor page faults per round of an op-like pattern: arrays of several sizes, then freed. With
# glibc's default settings it faults in about half of its 22 MiB every round (3,173 measured).
FAULTS_PER_ROUND = """
import resource, sys
import numpy as np
from autograd_async.utils.malloc import retain_freed_memory

if sys.argv[1] == "retain":
    assert retain_freed_memory()

def one_round():
    kept = []
    for mib in (3, 1, 5, 2, 7, 0.5, 4):
        a = np.empty(int(mib * (1 << 20)) // 8)
        a.fill(1.0)
        kept.append(a)

for _ in range(2):
    one_round()  # the first rounds grow the heap
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(10):
    one_round()
print((resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) / 10)
"""


def faults_per_round(mode: str) -> float:
    done = subprocess.run(
        [sys.executable, "-c", FAULTS_PER_ROUND, mode], capture_output=True, text=True, timeout=100
    )
    assert done.returncode == 0, done.stderr
    return float(done.stdout)


@pytest.mark.skipif(
    not sys.platform.startswith("linux") or platform.libc_ver()[0] != "glibc",
    reason="mallopt is glibc's",
)
def test_freed_blocks_are_reused_without_page_faults() -> None:
    assert faults_per_round("retain") < 100
    assert faults_per_round("default") > 1000  # the pattern does fault without the setting


def test_off_linux_it_reports_that_nothing_changed(monkeypatch) -> None:
    monkeypatch.setattr(sys, "platform", "darwin")
    assert retain_freed_memory() is False
