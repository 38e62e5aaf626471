"""A legitimate client's latency while hostile peers ask a worker for more memory than it has.

A worker (`python -m autograd_async.workers`, --max-memory 1G, 512M per peer, 256M per call) serves two kinds
of peers. The legitimate one calls a remote `mul` of 256 float32 every 5 ms and times each answer.
An attack process (a process of its own, as a real attacker would be) runs ATTACKERS peers that
each send, back to back, calls whose results or parameters dwarf their inputs: a (1, 16000) +
(16000, 1) float32 add (977 MiB asked for 125 KiB sent; refused before the work, from the
shapes), a (16000, 1) @ (1, 16000) outer product (the same), and a 16000 x 16000 `Linear`
(refused while it allocates its weight). Measured: the legitimate calls' p50, p99 and max
without and with the attack, the attack calls refused, and the worker's resident memory (its
peak during the attack, sampled every 10 ms from /proc, and 2 s after). Target: the p99 under
attack within 5 ms of the p99 without it; the worker's memory within 64 MiB of its baseline.

What the counting costs (a NumPy memory handler per call: autograd_async/workers/allocator.py) is measured in
this process too: CPU microseconds per op with and without it, best of --reps runs.

Run:  python benchmarks/worker_memory.py [--seconds 3] [--attackers 4] [--quick]
"""

from __future__ import annotations

import asyncio
import contextlib
import multiprocessing as mp
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _timing import (
    argument_parser,
    limit_blas_threads,
    machine_line,
    percentile,
    print_table,
    use_repository_checkout,
    verdict,
)

use_repository_checkout()
limit_blas_threads(1)  # CPU times of BLAS threads spinning on a busy machine would swamp them

import uvloop  # noqa: E402

import autograd_async as ag  # noqa: E402
from autograd_async import nn  # noqa: E402
from autograd_async.distributed import Client, RemoteModule, ResourceExhausted  # noqa: E402
from autograd_async.workers import allocator  # noqa: E402
from autograd_async.workers.memory import MemoryBudget  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
TOKEN = b"benchmark-token-worker-memory"
LIMITS = ("--max-memory", "1G", "--max-peer-memory", "512M", "--max-call-memory", "256M")
PERIOD = 0.005  # seconds between the legitimate client's calls
TARGET_P99_EXTRA_MS = 5.0
TARGET_RSS_EXTRA_MIB = 64.0


def rss_mib(pid: int) -> float:
    """Resident memory of process `pid` in MiB, from /proc."""
    with open(f"/proc/{pid}/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError("VmRSS not found")


def start_worker(token_file: str) -> tuple[subprocess.Popen, str]:
    """Start the worker process; return it and its address from the READY line."""
    env = dict(os.environ, PYTHONPATH=str(REPO))
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "autograd_async.workers",
            "--name",
            "w1",
            "--devices",
            "cpu",
            "--token-file",
            token_file,
            *LIMITS,
        ],
        stdout=subprocess.PIPE,
        text=True,
        cwd=REPO,
        env=env,
    )
    line = proc.stdout.readline().split()
    if len(line) != 3 or line[0] != "READY":
        proc.kill()
        raise SystemExit("worker did not start")
    return proc, line[2]


# --- the attack process ---------------------------------------------------------------------


async def _attack(address: str, attackers: int, seconds: float) -> dict[str, int]:
    row, column = ag.ones(1, 16000), ag.ones(16000, 1)
    counts = {"refused": 0, "served": 0, "failed": 0}

    async def one_peer(index: int) -> None:
        async with Client(
            {"w1": address}, token=TOKEN, name=f"attacker-{index}", timeout=60
        ) as client:
            attacks = (
                lambda: client.call("w1", "add", row, column),
                lambda: client.call("w1", "matmul", column, row),
                lambda: RemoteModule.create(
                    client, "w1", "Linear", in_features=16000, out_features=16000
                ),
            )
            deadline = time.monotonic() + seconds
            turn = index
            while time.monotonic() < deadline:
                turn += 1
                try:
                    await attacks[turn % len(attacks)]()
                    counts["served"] += 1
                except ResourceExhausted:
                    counts["refused"] += 1
                except Exception:  # noqa: BLE001 - counted: the report shows it
                    counts["failed"] += 1

    await asyncio.gather(*(one_peer(i) for i in range(attackers)))
    return counts


def attack_main(address: str, attackers: int, seconds: float, report: Any) -> None:
    """Entry point of the attack process: report its counts through `report` at the end."""
    report.send(uvloop.run(_attack(address, attackers, seconds)))


# --- the legitimate client ------------------------------------------------------------------


async def legit_phase(client: Client, seconds: float) -> list[float]:
    """Round-trip seconds of a remote `mul` of 256 float32 every PERIOD for `seconds`."""
    x = ag.ones(256)
    latencies = []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        began = time.perf_counter()
        await client.call("w1", "mul", x, x)
        latencies.append(time.perf_counter() - began)
        await asyncio.sleep(PERIOD)
    return latencies


async def sample_rss(pid: int, stop: asyncio.Event) -> float:
    """The peak resident memory of `pid` until `stop` is set."""
    peak = 0.0
    while not stop.is_set():
        peak = max(peak, rss_mib(pid))
        await asyncio.sleep(0.01)
    return peak


async def measure(address: str, pid: int, seconds: float, attackers: int) -> dict[str, Any]:
    """Baseline phase, then the same under attack; latencies, counts and memory."""
    async with Client({"w1": address}, token=TOKEN, name="legit", timeout=60) as client:
        await legit_phase(client, min(seconds, 0.5))  # warm-up: connection, first calls
        rss_before = rss_mib(pid)
        quiet = await legit_phase(client, seconds)
        recv, send = mp.get_context("spawn").Pipe(duplex=False)
        attack = mp.get_context("spawn").Process(
            target=attack_main, args=(address, attackers, seconds + 1.0, send), daemon=True
        )
        attack.start()
        await asyncio.sleep(1.0)  # the attack process starts and connects
        stop = asyncio.Event()
        peak = asyncio.ensure_future(sample_rss(pid, stop))
        loud = await legit_phase(client, seconds)
        stop.set()
        counts = await asyncio.to_thread(recv.recv)
        await asyncio.to_thread(attack.join, 30)
        await asyncio.sleep(2.0)
        return {
            "quiet": quiet,
            "loud": loud,
            "counts": counts,
            "rss_before": rss_before,
            "rss_peak": await peak,
            "rss_after": rss_mib(pid),
        }


# --- what counting costs, in this process -------------------------------------------------


def cpu_us_per_op(fn: Any, ops: int, reps: int) -> tuple[float, float]:
    """Best-of-`reps` CPU microseconds per call of `fn`, (without, with) counting, the two
    alternating so that drift hits both alike."""
    budget = MemoryBudget(1 << 40)
    best = {False: float("inf"), True: float("inf")}
    for _ in range(reps):
        for counted in (False, True):
            with (
                allocator.counting(budget.account("bench", "call"))
                if counted
                else contextlib.nullcontext()
            ):
                began = time.process_time()
                for _ in range(ops):
                    fn()
                best[counted] = min(best[counted], time.process_time() - began)
            allocator.sweep()
    return best[False] / ops * 1e6, best[True] / ops * 1e6


def counting_costs(quick: bool, reps: int) -> list[list[Any]]:
    """Rows of (op, plain us, counted us, extra us) for ops a worker's calls run."""
    small_a, small_b = ag.ones(256), ag.ones(256)
    big = ag.ones((16 if quick else 64) << 18)
    layer = nn.Linear(256, 256)
    batch = ag.ones(32, 256)
    cases = [
        ("a + b, 256 float32", lambda: small_a + small_b, 2000),
        ("Linear(256, 256) forward, batch 32", lambda: layer(batch), 500),
        (f"clone of {big.numel() * 4 >> 20} MiB", big.clone, 3 if quick else 10),
    ]
    rows = []
    for label, fn, ops in cases:
        ops = max(1, ops // 10) if quick else ops
        plain, counted = cpu_us_per_op(fn, ops, reps)
        rows.append([label, plain, counted, counted - plain])
    return rows


def main() -> int:
    parser = argument_parser(__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=None, help="each phase (default 3)")
    parser.add_argument("--attackers", type=int, default=None, help="attacking peers (4)")
    args = parser.parse_args()
    seconds = args.seconds or (0.5 if args.quick else 3.0)
    attackers = args.attackers or (2 if args.quick else 4)

    print(__doc__.splitlines()[0])
    print(machine_line())
    with tempfile.TemporaryDirectory() as folder:
        token_file = Path(folder) / "token"
        token_file.write_bytes(TOKEN)
        token_file.chmod(0o600)
        proc, address = start_worker(str(token_file))
        try:
            result = uvloop.run(measure(address, proc.pid, seconds, attackers))
        finally:
            proc.kill()
            proc.wait(10)
    rows = []
    for phase in ("quiet", "loud"):
        ms = [t * 1e3 for t in result[phase]]
        rows.append(
            [
                f"{'without' if phase == 'quiet' else 'under'} attack",
                len(ms),
                percentile(ms, 50),
                percentile(ms, 99),
                max(ms),
            ]
        )
    print_table(
        f"remote mul of 256 float32 every {PERIOD * 1e3:g} ms; {attackers} attacking "
        f"peers for {seconds:g} s (ms)",
        ["legitimate client", "calls", "p50", "p99", "max"],
        rows,
    )
    counts = result["counts"]
    print_table(
        "attack calls",
        ["refused (ResourceExhausted)", "served", "failed otherwise"],
        [[counts["refused"], counts["served"], counts["failed"]]],
    )
    print_table(
        "worker resident memory (MiB)",
        ["before", "peak under attack", "2 s after"],
        [[result["rss_before"], result["rss_peak"], result["rss_after"]]],
    )
    extra = rows[1][3] - rows[0][3]
    print(
        f"\np99 under attack - p99 without: {extra:.2f} ms; target < "
        f"{TARGET_P99_EXTRA_MS:g} ms: {verdict(extra, TARGET_P99_EXTRA_MS)}"
    )
    grown = result["rss_peak"] - result["rss_before"]
    print(
        f"worker memory growth under attack: {grown:.1f} MiB; target < "
        f"{TARGET_RSS_EXTRA_MIB:g} MiB: {verdict(grown, TARGET_RSS_EXTRA_MIB)}"
    )
    print_table(
        f"cost of counting a call's allocations (CPU us per op, best of {args.reps or 5})",
        ["op", "plain", "counted", "extra"],
        counting_costs(args.quick, args.reps or 5),
    )
    return 0 if counts["served"] == 0 and counts["failed"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
