"""The mpi backend, with real ranks started by the launcher (a few launches: each costs ~1-2 s)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("mpi4py")

RANK_MAIN = Path(__file__).with_name("rank_main.py")
ROOT = Path(__file__).resolve().parents[3]


def launch(n: int, mode: str, timeout: float = 100, **env: str) -> subprocess.CompletedProcess:
    """Run rank_main.py MODE on n ranks under `python -m autograd_async.distributed.run`."""
    environment = dict(os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1", **env)
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "autograd_async.distributed.run",
            "-n",
            str(n),
            "--grace",
            "5",
            str(RANK_MAIN),
            mode,
        ],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=environment,
        cwd=ROOT,
    )


def test_every_collective_and_op_matches_numpy_on_three_processes():
    done = launch(3, "collectives")
    assert done.returncode == 0, done.stdout + done.stderr
    counts = re.findall(r"rank (\d): (\d+) collectives match NumPy", done.stdout)
    assert sorted(r for r, _ in counts) == ["0", "1", "2"], done.stdout
    assert min(int(c) for _, c in counts) > 200


@pytest.mark.parametrize("mode", ["raise", "kill"])
def test_a_failing_rank_makes_the_others_fail_fast_naming_it(mode):
    done = launch(3, mode)
    out = done.stdout + done.stderr
    assert done.returncode != 0, out
    # Each survivor names rank 1 in its failing collective, or in its next one after learning of
    # the failure; a rank that exits can also make MPI's process manager end the others before
    # they write their line (MPICH's words: "TERMINATED", or its process manager's error when a
    # killed rank broke its pipe). Either way the launcher names the rank and nobody waited for it.
    lines = [
        re.search(
            rf"rank {survivor} failed after ([\d.]+) s: all_reduce #[12] on group WORLD "
            r"\(mpi, ranks 0-2\): (the group is unusable after an earlier failure: )?"
            r"rank 1 failed",
            out,
        )
        for survivor in (0, 2)
    ]
    ended_by_mpi = "TERMINATED" in out or "process manager error" in out
    assert all(lines) or ended_by_mpi, out
    for found in filter(None, lines):
        # Far below the collectives' timeout (minutes): they learnt of it, they did not time out.
        assert float(found.group(1)) < 60.0, out
    assert "autograd_async.distributed.run: rank 1 failed first" in done.stderr
    if mode == "raise":
        assert "ValueError: rank 1 raised on purpose" in done.stderr
    else:
        assert "exited without finishing" in done.stderr


def test_a_rank_that_never_arrives_times_out_the_others_naming_it():
    done = launch(3, "late", TEST_PG_TIMEOUT="2")
    out = done.stdout + done.stderr
    assert done.returncode != 0, out
    lines = {r: re.search(rf"rank {r} failed after [\d.]+ s: (.*)", out) for r in (0, 2)}
    assert all(lines.values()), out
    # The first to time out names the missing rank; the other may learn of it from the first.
    # Both time out at about the same moment, so the later one may find the earlier already
    # gone (it exits on its error) and list it as not responding: true, and not the point.
    for found in lines.values():
        missing = re.search(r"missing ranks: (.*)$", found.group(1))
        assert missing, out
        entries = missing.group(1).split(", ")
        assert "rank 1 (last at all_reduce #1)" in entries, out
        survivors_gone = {f"rank {s} (not responding)" for s in (0, 2)}
        assert set(entries) <= {"rank 1 (last at all_reduce #1)"} | survivors_gone, out
    assert any(
        found.group(1).startswith(
            "all_reduce #2 on group WORLD.1 (mpi, ranks 0-2) timed out after 2 s"
        )
        for found in lines.values()
    ), out
