"""Distributed data-plane benchmark: a user's remote calls next to a raw echo of the same bytes.

Measured interleaved in one run, on loopback, every server in a process of its own:
  (a) a raw uvloop BufferedProtocol echo of the payload (store and forward, preallocated
      page-aligned buffers, in another process): the ceiling;
  (b) `Connection.request` to an echo handler: the transport alone, for reference;
  (c) `await client.call(w, "clone", x)` with x a float32 tensor of the payload's size: x goes
      to the worker (`python -m autograd_async.workers`), which clones it, and the clone comes back as a
      tensor;
  (d) a distributed backward through one remote `clone` whose output gradient is the payload:
      the gradient travels to the worker, which runs its part of backward on its engine, and
      the input's gradient (the same size) comes back into `x.grad`;
and the latency of a 1 KiB gradient handoff: a distributed backward through one remote `mul`
(256 float32), next to the 1 KiB round trips of (a), (b) and (e) a remote `mul` forward.
With --compare-heap, a second worker started with --release-freed-memory (the C library's
default heap, which maps and zeroes each large block afresh: autograd_async/workers/heap.py) takes part in
every round as (c').

"vs raw" is the median, over rounds, of (a)'s round trip over the mode's in the same round
(each round runs every mode back to back, so a burst of load from elsewhere hits them alike,
and starts one mode further on than the last, so that no mode always follows the same one);
its spread is the quartiles of those per-round ratios. The CPU time each side spends per round
trip (all its threads, from /proc) is printed too: load from elsewhere stretches wall times far
more than it does those, so they show what a mode costs beyond the raw echo on any machine.

Run:  python benchmarks/distributed.py [--mib 64] [--reps 31] [--latency-iters 2000]
                                      [--compare-heap]
      python benchmarks/distributed.py --ray: Ray worker actors against workers started by
      hand (benchmarks/distributed_ray.py)
GB/s counts the payload bytes of both directions: 2 x payload / round-trip time.
"""

from __future__ import annotations

import argparse
import asyncio
import math
import multiprocessing as mp
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import uvloop

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path[:0] = [str(REPO), str(HERE)]

from _timing import load_line, percentile, print_latencies, round_trip_parser  # noqa: E402
from transfer import RawEcho, median_rate  # noqa: E402 - benchmarks/transfer.py, the transport benchmark

import autograd_async as ag  # noqa: E402
from autograd_async import distributed as dist  # noqa: E402
from autograd_async.distributed import connect, serve  # noqa: E402
from autograd_async.distributed.pool import ALIGNMENT  # noqa: E402

LENGTH_BYTES = 8  # RawEcho's length prefix

TOKEN = b"benchmark-token-distributed"
WARMUP_ROUNDS = 2

# (label, key) of the throughput rows, in the order they are printed.
THROUGHPUT_ROWS = [
    ("(a) raw uvloop BufferedProtocol echo", "raw"),
    ("(b) Connection.request echo (the transport alone)", "transport"),
    ('(c) await client.call(w, "clone", x)', "call"),
    ("(d) distributed backward: gradient there and back", "backward"),
    ("(c') (c), the worker on the default heap", "call_default_heap"),
]


class AlignedEcho(RawEcho):
    """The raw echo, its payload (after the 8-byte length) starting on a page boundary.

    transfer.py's echo receives into a bytearray, where the payload starts 24 bytes past a page;
    the kernel copies into memory that is not cache-line aligned with about 9% more CPU, and
    the transport's pooled buffers are page-aligned: the ceiling should not pay for what the
    transport avoids.
    """

    def _new_buffer(self) -> np.ndarray:
        block = np.empty(self.capacity + ALIGNMENT, np.uint8)
        start = -(block.ctypes.data + LENGTH_BYTES) % ALIGNMENT
        return block[start : start + self.capacity]


async def _echo_handler(info: Any, method: str, kwargs: dict, arrays: list) -> tuple:
    return {}, arrays


async def _raw_server(capacity: int, ports: Any) -> None:
    loop = asyncio.get_running_loop()
    server = await loop.create_server(lambda: AlignedEcho(capacity, echo=True), "127.0.0.1", 0)
    echo = await serve(
        _echo_handler, token=TOKEN, name="echo", max_frame_bytes=capacity + (1 << 20)
    )
    ports.send((server.sockets[0].getsockname()[1], echo.address[1]))
    await asyncio.Event().wait()


def raw_server_main(capacity: int, ports: Any) -> None:
    """Entry point of the echo process (raw uvloop echo and a transport echo server)."""
    uvloop.run(_raw_server(capacity, ports))


def start_worker(
    token_file: Path, name: str = "bench", extra: tuple[str, ...] = ()
) -> tuple[subprocess.Popen, str]:
    """Start a worker process; return it and its address from the READY line."""
    env = dict(os.environ, PYTHONPATH=str(REPO))
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "autograd_async.workers",
            "--name",
            name,
            "--devices",
            "cpu",
            "--token-file",
            str(token_file),
            *extra,
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


class Mode(NamedTuple):
    """One way of sending the payload there and back, and the process that answers it."""

    round_trip: Callable[[], Awaitable[float]]
    server_pid: int


class Results(NamedTuple):
    """Per mode: round-trip seconds, and CPU seconds per round trip of both sides."""

    seconds: dict[str, list[float]]
    client_cpu: dict[str, list[float]]
    server_cpu: dict[str, list[float]]


def process_cpu(pid: int) -> float:
    """CPU seconds the threads of a process have run so far (NaN where /proc lacks them)."""
    total = 0
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/schedstat") as fh:
                total += int(fh.read().split()[0])  # nanoseconds on a CPU
    except (OSError, ValueError, IndexError):
        return math.nan
    return total / 1e9


async def interleave(modes: dict[str, Mode], rounds: int, verbose: bool) -> Results:
    """Run every mode once per round, back to back, each round starting one mode further on
    (so that no mode always follows the same one); the first rounds only warm up."""
    results = Results(
        {key: [] for key in modes}, {key: [] for key in modes}, {key: [] for key in modes}
    )
    keys = list(modes)
    for rnd in range(rounds + WARMUP_ROUNDS):
        for key in keys[rnd % len(keys) :] + keys[: rnd % len(keys)]:
            mode = modes[key]
            client, server = time.process_time(), process_cpu(mode.server_pid)
            elapsed = await mode.round_trip()
            client = time.process_time() - client
            server = process_cpu(mode.server_pid) - server
            if verbose:
                print(f"{key:10} round {rnd}: {elapsed * 1e3:.1f} ms")
            if rnd >= WARMUP_ROUNDS:
                results.seconds[key].append(elapsed)
                results.client_cpu[key].append(client)
                results.server_cpu[key].append(server)
    return results


def print_throughput(args: argparse.Namespace, results: Results) -> None:
    """The throughput table: medians, GB/s, each mode's paired ratio to the raw echo, and the
    CPU time each side spent per round trip (mean), which load elsewhere changes far less."""
    nbytes = args.mib << 20
    print(
        f"distributed benchmark: {args.mib} MiB float32 payload, uvloop, loopback, servers "
        f"in other processes; {args.reps} interleaved rounds; {load_line()}"
    )
    print(
        f"{'mode':<52}{'median ms':>10}{'GB/s':>7}{'vs raw':>8}"
        f"{'ratio quartiles':>17}{'best ms':>9}{'CPU ms: client':>16}{'server':>8}"
    )
    raw = results.seconds["raw"]
    for label, key in THROUGHPUT_ROWS:
        if key not in results.seconds:
            continue
        times = results.seconds[key]
        ms, gbs = median_rate(times, nbytes)
        ratios = [r / t for r, t in zip(raw, times, strict=True)]
        low, high = percentile(ratios, 25), percentile(ratios, 75)
        client = statistics.mean(results.client_cpu[key]) * 1e3
        server = statistics.mean(results.server_cpu[key]) * 1e3
        print(
            f"{label:<52}{ms:>10.1f}{gbs:>7.2f}{statistics.median(ratios):>7.2f}x"
            f"{f'{low:.2f}..{high:.2f}':>17}{min(times) * 1e3:>9.1f}{client:>16.1f}"
            f"{server:>8.1f}"
        )


async def bench(
    args: argparse.Namespace,
    ports: tuple[int, int],
    echo_pid: int,
    workers: dict[str, tuple[subprocess.Popen, str]],
) -> None:
    """Run the throughput modes interleaved, then the latencies; print the tables."""
    loop = asyncio.get_running_loop()
    raw_port, echo_port = ports
    nbytes = args.mib << 20
    payload = np.random.default_rng(0).standard_normal(nbytes // 4).astype(np.float32)
    payload_view = memoryview(payload.reshape(-1).view(np.uint8))
    small = np.random.default_rng(1).standard_normal(256).astype(np.float32)  # 1 KiB

    _, raw = await loop.create_connection(
        lambda: AlignedEcho(nbytes, echo=False), "127.0.0.1", raw_port
    )
    conn = await connect(
        "127.0.0.1",
        echo_port,
        token=TOKEN,
        name="bench",
        max_frame_bytes=nbytes + (1 << 20),
        request_timeout=120,
    )

    async def raw_roundtrip(data: memoryview = payload_view) -> float:
        raw.done = loop.create_future()
        start = time.perf_counter()
        raw.send(data)
        await raw.done
        return time.perf_counter() - start

    async def transport_roundtrip(a: np.ndarray = payload) -> float:
        start = time.perf_counter()
        _, out = await conn.request("echo", [a])
        elapsed = time.perf_counter() - start
        assert out[0].shape == a.shape
        return elapsed

    addresses = {name: address for name, (_, address) in workers.items()}
    async with dist.Client(addresses, token=TOKEN, timeout=120.0) as client:
        x_call = ag.from_numpy(payload)

        async def call_roundtrip(worker: str = "bench") -> float:
            start = time.perf_counter()
            y = await client.call(worker, "clone", x_call)
            elapsed = time.perf_counter() - start
            assert y.shape == x_call.shape
            return elapsed

        async def forward_roundtrip(a: np.ndarray) -> float:
            start = time.perf_counter()
            await client.call("bench", "mul", a, 2.0)
            return time.perf_counter() - start

        x = ag.from_numpy(payload.copy()).requires_grad_()
        grad = ag.from_numpy(payload)
        xs = ag.from_numpy(small.copy()).requires_grad_()
        grad_small = ag.from_numpy(small)
        async with dist.context(client) as ctx:
            y = await client.call("bench", "clone", x)
            ys = await client.call("bench", "mul", xs, 2.0)

            async def backward_roundtrip(
                root: ag.Tensor = y, g: ag.Tensor = grad, leaf: ag.Tensor = x
            ) -> float:
                leaf.grad = None
                start = time.perf_counter()
                await dist.backward(ctx, [root], [g], retain_graph=True)
                elapsed = time.perf_counter() - start
                assert leaf.grad is not None and leaf.grad.shape == leaf.shape
                return elapsed

            worker_pid = workers["bench"][0].pid
            modes = {
                "raw": Mode(raw_roundtrip, echo_pid),
                "transport": Mode(transport_roundtrip, echo_pid),
                "call": Mode(call_roundtrip, worker_pid),
                "backward": Mode(backward_roundtrip, worker_pid),
            }
            if "default-heap" in workers:
                modes["call_default_heap"] = Mode(
                    lambda: call_roundtrip("default-heap"), workers["default-heap"][0].pid
                )
            results = await interleave(modes, args.reps, args.verbose)
            np.testing.assert_array_equal(x.grad.numpy()[:8], payload[:8])
            out = await client.call("bench", "clone", x_call)
            np.testing.assert_array_equal(out.numpy()[-8:], payload[-8:])

            lat: dict[str, list[float]] = {
                "raw": [],
                "transport": [],
                "forward": [],
                "backward": [],
            }
            small_view = memoryview(small.view(np.uint8))
            for i in range(args.latency_iters + 200):
                times = (
                    await raw_roundtrip(small_view),
                    await transport_roundtrip(small),
                    await forward_roundtrip(small),
                    await backward_roundtrip(ys, grad_small, xs),
                )
                if i >= 200:
                    for key, t in zip(lat, times, strict=True):
                        lat[key].append(t)
            np.testing.assert_allclose(xs.grad.numpy(), 2.0 * small)
    raw.transport.close()
    await conn.aclose()

    print_throughput(args, results)
    if args.latency_iters:
        print_latencies(
            "latency, 1 KiB",
            [
                ("(a) raw uvloop echo of 1 KiB", "raw"),
                ("(b) Connection.request echo of 1 KiB", "transport"),
                ("(e) remote mul() forward, no context", "forward"),
                ("(d) distributed backward through remote mul()", "backward"),
            ],
            lat,
            52,
        )


def main() -> None:
    """Start the raw echo and worker processes, run the client side, print the tables."""
    parser = round_trip_parser(__doc__.splitlines()[0], reps=31)
    parser.add_argument(
        "--compare-heap",
        action="store_true",
        help="add (c'): the same call to a worker with the C library's default "
        "heap (--release-freed-memory), in every round",
    )
    parser.add_argument(
        "--ray",
        action="store_true",
        help="compare two Ray worker actors with two workers started by hand",
    )
    args = parser.parse_args()
    if args.ray:
        from distributed_ray import ray_main  # noqa: PLC0415 - Ray is optional

        ray_main(args)
        return
    ctx = mp.get_context("spawn")
    recv, send = ctx.Pipe(duplex=False)
    raw_proc = ctx.Process(target=raw_server_main, args=(args.mib << 20, send), daemon=True)
    raw_proc.start()
    with tempfile.TemporaryDirectory() as tmp:
        token_file = Path(tmp) / "token"
        token_file.write_bytes(TOKEN)
        token_file.chmod(0o600)  # the worker refuses a token others can read
        workers = {"bench": start_worker(token_file)}
        try:
            if args.compare_heap:
                workers["default-heap"] = start_worker(
                    token_file, "default-heap", ("--release-freed-memory",)
                )
            if not recv.poll(60):
                raise SystemExit("echo process did not start")
            uvloop.run(bench(args, recv.recv(), raw_proc.pid, workers))
        finally:
            for worker, _ in workers.values():
                worker.terminate()
                worker.wait(15)
            raw_proc.kill()
            raw_proc.join(5)


if __name__ == "__main__":
    main()
