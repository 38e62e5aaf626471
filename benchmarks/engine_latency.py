"""Engine latency: a small backward against the raw cost of a cross-thread round trip.

(a) `await loss.backward_async()` on a 10-node CPU graph of (4,)-shaped tensors, from a coroutine
    on a uvloop loop in the main thread, against the raw round trip it cannot beat: main loop ->
    `other_loop.call_soon_threadsafe` -> other uvloop thread -> `main_loop.call_soon_threadsafe`
    setting an asyncio future the coroutine awaits. Also the same round trip with a
    `concurrent.futures.Future` awaited through `asyncio.wrap_future` (the engine's own
    primitive), and the blocking `loss.backward()` from a plain thread against a blocking round
    trip (`call_soon_threadsafe` on the other loop sets a `concurrent.futures.Future` the main
    thread waits on). p50 and p99 over many runs, the cases interleaved run by run; the graph is
    built before each timed run. The worker's busy time (its nodes' own work) is shown too, and,
    when torch is installed, torch's `backward()` of the same graph (1 thread): its C++ engine
    runs CPU nodes on the calling thread, so that row is the cost of the work with no hop at all.
    This small all-cpu graph runs inline on the caller (engine/inline.py); the "forced hop" rows
    run the same passes with `Engine.inline_max_nodes = 0`, through the cpu worker's thread.
    Target (issue): the awaited pass <= 1.0x torch's blocking backward at p50.
(b) The cost of one cross-device handoff: a chain of N ops on cpu, the same chain with K
    same-device `.to("cpu", copy=True)` nodes inserted, and with K `.to()` alternating
    cpu -> sim:0 -> cpu ... (each adds a node and a handoff). (crossing - local copies) / K is the
    handoff; (crossing - plain) / K the handoff plus its node. Blocking `backward()`, medians;
    compared with the raw round trip run back to back (as a chain's handoffs follow each other).

Run:  python benchmarks/engine_latency.py [--runs 2000] [--steps 600] [--crossings 200] [--quick]
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import gc
import sys
import threading
import time
from typing import Any

from _timing import (
    argument_parser,
    gc_label,
    load_line,
    machine_line,
    median,
    percentile,
    pin_torch_threads,
    print_table,
    use_repository_checkout,
    verdict,
)

use_repository_checkout()

import numpy as np  # noqa: E402
import uvloop  # noqa: E402

import autograd_async as aa  # noqa: E402
from autograd_async.engine import get_engine  # noqa: E402

TARGET_RATIO = 1.5
# The awaited pass of the small graph against torch's blocking backward of the same graph.
TARGET_TORCH_RATIO = 1.0


# --------------------------------------------------------------------------- raw round trips
class OtherLoop:
    """A uvloop event loop running forever on its own thread (the far end of a round trip)."""

    def __init__(self) -> None:
        self.loop = uvloop.new_event_loop()
        self._thread = threading.Thread(target=self._run, name="other-loop", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()

    def close(self) -> None:
        """Stop the loop and join its thread."""
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(5)
        self.loop.close()


def _bounce(caller: asyncio.AbstractEventLoop, future: asyncio.Future) -> None:
    caller.call_soon_threadsafe(future.set_result, None)


async def raw_round_trip(other: asyncio.AbstractEventLoop) -> None:
    """Caller loop -> other loop -> caller loop, completing an asyncio future."""
    loop = asyncio.get_running_loop()
    future = loop.create_future()
    other.call_soon_threadsafe(_bounce, loop, future)
    await future


def _settle(future: concurrent.futures.Future) -> None:
    future.set_result(None)


async def wrapped_round_trip(other: asyncio.AbstractEventLoop) -> None:
    """The same trip with a concurrent.futures.Future awaited via asyncio.wrap_future."""
    future: concurrent.futures.Future = concurrent.futures.Future()
    other.call_soon_threadsafe(_settle, future)
    await asyncio.wrap_future(future)


def blocking_round_trip(other: asyncio.AbstractEventLoop) -> None:
    """A plain thread -> other loop -> back, waiting on a concurrent.futures.Future."""
    future: concurrent.futures.Future = concurrent.futures.Future()
    other.call_soon_threadsafe(_settle, future)
    future.result()


# ------------------------------------------------------------------------------- graphs
def small_graph(lib: Any = aa) -> Any:
    """A 10-node backward graph (AccumulateGrad, 8 elementwise ops, the sum) in `lib`: ours or
    torch."""
    x = lib.tensor(np.linspace(-1.0, 1.0, 4), requires_grad=True)
    y = x
    for i in range(8):
        kind = i % 3
        if kind == 0:
            y = y * 1.5
        elif kind == 1:
            y = y + 0.5
        else:
            y = lib.tanh(y)
    return y.sum()


def optional_torch() -> Any:
    """torch pinned to one thread, or None when it is not installed."""
    try:
        import torch  # noqa: PLC0415
    except ImportError:
        return None
    pin_torch_threads(1)
    return torch


def chain_graph(steps: int, crossings: int, mode: str) -> Any:
    """`steps` elementwise ops on (4,) tensors, with `crossings` `.to()` nodes spread evenly.

    mode 'plain': no `.to()`; 'local': `.to("cpu", copy=True)` (a node, no handoff);
    'cross': `.to()` alternating to sim:0 and back to cpu (a node and a handoff each).
    """
    x = aa.tensor(np.linspace(-1.0, 1.0, 4), requires_grad=True)
    y = x
    every = max(steps // max(crossings, 1), 1)
    moved = 0
    for i in range(steps):
        kind = i % 3
        y = y * 1.0001 if kind == 0 else (y + 0.5 if kind == 1 else aa.tanh(y))
        if mode != "plain" and moved < crossings and (i + 1) % every == 0:
            if mode == "local":
                y = y.to("cpu", copy=True)
            else:
                y = y.to("sim:0" if moved % 2 == 0 else "cpu")
            moved += 1
    if y.device.type != "cpu":
        y = y.to("cpu")  # an odd count ends on sim:0: come home (one more handoff)
    return y.sum()


# ------------------------------------------------------------------------------ part (a)
def part_a(runs: int, warmup: int, other: OtherLoop) -> dict[str, list[float]]:
    """Seconds per run of each latency case (async cases on a uvloop loop, blocking ones not)."""
    engine = get_engine()
    times: dict[str, list[float]] = {
        "raw round trip (asyncio future)": [],
        "raw round trip (wrap_future)": [],
        "await backward_async()": [],
        "  worker busy in its nodes": [],
        "await backward_async(), forced hop": [],
        "raw round trip (blocking)": [],
        "backward() (blocking)": [],
        "backward() (blocking), forced hop": [],
    }
    torch = optional_torch()
    if torch is not None:
        times["torch backward(), no hop (1 thread)"] = []
    far = other.loop

    async def async_cases() -> None:
        perf = time.perf_counter
        for i in range(warmup + runs):
            # The graph is built first, so each timed case starts right after another one and
            # the far thread's CPU never idles long (this VM's haltpoll idle makes waking a CPU
            # idle for over ~100 us twice as slow: that would bias whichever case came after).
            loss = small_graph()
            begun = perf()
            await raw_round_trip(far)
            raw = perf() - begun
            begun = perf()
            await wrapped_round_trip(far)
            wrapped = perf() - begun
            engine.reset_stats()
            begun = perf()
            await loss.backward_async()
            ours = perf() - begun
            busy = engine.stats()["cpu"].busy_ns * 1e-9
            loss = small_graph()
            engine.inline_max_nodes = 0
            begun = perf()
            await loss.backward_async()
            hopped = perf() - begun
            del engine.inline_max_nodes  # the class default again
            if i >= warmup:
                times["raw round trip (asyncio future)"].append(raw)
                times["raw round trip (wrap_future)"].append(wrapped)
                times["await backward_async()"].append(ours)
                times["  worker busy in its nodes"].append(busy)
                times["await backward_async(), forced hop"].append(hopped)

    uvloop.run(async_cases())
    perf = time.perf_counter
    for i in range(warmup + runs):
        loss = small_graph()
        begun = perf()
        blocking_round_trip(far)
        raw = perf() - begun
        begun = perf()
        loss.backward()
        ours = perf() - begun
        loss = small_graph()
        engine.inline_max_nodes = 0
        begun = perf()
        loss.backward()
        hopped = perf() - begun
        del engine.inline_max_nodes
        if i >= warmup:
            times["raw round trip (blocking)"].append(raw)
            times["backward() (blocking)"].append(ours)
            times["backward() (blocking), forced hop"].append(hopped)
        if torch is not None:
            reference = small_graph(torch)
            begun = perf()
            reference.backward()
            if i >= warmup:
                times["torch backward(), no hop (1 thread)"].append(perf() - begun)
    return times


def burst_round_trips(runs: int, other: OtherLoop) -> list[float]:
    """Seconds per raw round trip run back to back (neither thread idles between them)."""
    times: list[float] = []

    async def burst() -> None:
        perf = time.perf_counter
        for _ in range(runs):
            begun = perf()
            await raw_round_trip(other.loop)
            times.append(perf() - begun)

    uvloop.run(burst())
    return times[len(times) // 10 :]


def count_nodes() -> int:
    """Nodes the engine runs for one backward of the small graph."""
    engine = get_engine()
    loss = small_graph()
    engine.reset_stats()
    loss.backward()
    return sum(s.nodes_run for s in engine.stats().values())


# ------------------------------------------------------------------------------ part (b)
def part_b(steps: int, crossings: int, reps: int, warmup: int) -> tuple[dict, int]:
    """Seconds per blocking backward of each chain mode, interleaved; and handoffs per cross run."""
    engine = get_engine()
    modes = ("plain", "local", "cross")
    times: dict[str, list[float]] = {m: [] for m in modes}
    handoffs = 0
    for i in range(warmup + reps):
        for mode in modes:
            loss = chain_graph(steps, crossings, mode)
            engine.reset_stats()
            begun = time.perf_counter()
            loss.backward()
            elapsed = time.perf_counter() - begun
            if mode == "cross":
                handoffs = sum(s.handoffs_out for s in engine.stats().values())
            if i >= warmup:
                times[mode].append(elapsed)
    return times, handoffs


def main() -> int:
    parser = argument_parser(__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=None, help="latency runs (default 2000)")
    parser.add_argument("--steps", type=int, default=None, help="chain ops in (b) (default 600)")
    parser.add_argument("--crossings", type=int, default=None, help=".to() nodes in (b) (200)")
    args = parser.parse_args()
    runs = args.runs or (100 if args.quick else 2000)
    steps = args.steps or (60 if args.quick else 600)
    crossings = args.crossings or (20 if args.quick else 200)
    reps = args.reps or (3 if args.quick else 40)
    warmup = 10 if args.quick else 100

    print(__doc__.splitlines()[0])
    print(machine_line())
    print(f"engine loop: {get_engine().loop_kind}; caller loop: uvloop; {gc_label()}")
    nodes = count_nodes()
    other = OtherLoop()
    try:
        gc.collect()
        times = part_a(runs, warmup, other)
        burst = burst_round_trips(runs, other)
    finally:
        other.close()
    rows = []
    for name, values in times.items():
        rows.append(
            [name, percentile(values, 50) * 1e6, percentile(values, 99) * 1e6, min(values) * 1e6]
        )
    print_table(
        f"(a) latency of a {nodes}-node CPU backward vs raw round trips, {runs} runs each, "
        "interleaved (us)",
        ["case", "p50", "p99", "min"],
        rows,
    )
    raw50 = percentile(times["raw round trip (asyncio future)"], 50)
    raw99 = percentile(times["raw round trip (asyncio future)"], 99)
    ours50 = percentile(times["await backward_async()"], 50)
    ours99 = percentile(times["await backward_async()"], 99)
    busy50 = percentile(times["  worker busy in its nodes"], 50)
    block50 = percentile(times["backward() (blocking)"], 50)
    rawb50 = percentile(times["raw round trip (blocking)"], 50)
    print(
        f"\nawait backward_async() / raw round trip: p50 {ours50 / raw50:.2f}x, "
        f"p99 {ours99 / raw99:.2f}x; target p50 <= {TARGET_RATIO}x: "
        f"{verdict(ours50 / raw50, TARGET_RATIO)}"
    )
    print(
        f"  above the raw round trip: {(ours50 - raw50) * 1e6:.1f} us at p50, of which the "
        f"worker's busy time in the nodes themselves {busy50 * 1e6:.1f} us (this difference "
        "is steadier than the ratio: waking an idle vCPU of this VM costs 10 to 90 us, "
        "varying from run to run, and both sides pay it)"
    )
    print(f"  less that busy time: {(ours50 - busy50) / raw50:.2f}x the raw round trip")
    if "torch backward(), no hop (1 thread)" in times:
        torch50 = percentile(times["torch backward(), no hop (1 thread)"], 50)
        print(
            f"  the target leaves {(TARGET_RATIO - 1) * raw50 * 1e6:.1f} us for the work above "
            f"the round trip; torch's whole backward of this graph, on the caller's thread "
            f"with no hop, takes {torch50 * 1e6:.1f} us"
        )
    print(
        f"backward() / blocking raw round trip: p50 {block50 / rawb50:.2f}x "
        f"({(block50 - rawb50) * 1e6:.1f} us above it)"
    )
    if "torch backward(), no hop (1 thread)" in times:
        torch50 = percentile(times["torch backward(), no hop (1 thread)"], 50)
        hop50 = percentile(times["await backward_async(), forced hop"], 50)
        blockhop50 = percentile(times["backward() (blocking), forced hop"], 50)
        print(
            f"await backward_async() / torch backward(): p50 {ours50 / torch50:.2f}x inline, "
            f"{hop50 / torch50:.2f}x with the forced hop; target p50 <= {TARGET_TORCH_RATIO}x: "
            f"{verdict(ours50 / torch50, TARGET_TORCH_RATIO)}"
        )
        print(
            f"backward() / torch backward(): p50 {block50 / torch50:.2f}x inline, "
            f"{blockhop50 / torch50:.2f}x with the forced hop"
        )

    times_b, handoffs = part_b(steps, crossings, reps, max(warmup // 20, 1))
    plain, local, cross = (median(times_b[m]) for m in ("plain", "local", "cross"))
    per_handoff = (cross - local) / handoffs
    per_node_and_handoff = (cross - plain) / handoffs
    burst50 = percentile(burst, 50)
    rows = [
        ["plain chain", steps + 2, plain * 1e3],
        ["+ same-device .to(copy=True) nodes", steps + crossings + 2, local * 1e3],
        ["+ crossing .to() nodes (cpu<->sim:0)", steps + crossings + 2, cross * 1e3],
    ]
    print_table(
        f"(b) blocking backward of a {steps}-op chain with {handoffs} handoffs, medians of {reps}",
        ["chain", "nodes", "ms"],
        rows,
    )
    print(
        f"\nper handoff (crossing - local copies): {per_handoff * 1e6:.1f} us; with its node "
        f"(crossing - plain): {per_node_and_handoff * 1e6:.1f} us"
    )
    print(
        f"raw round trip run back to back (handoffs in a chain follow each other the same "
        f"way): p50 {burst50 * 1e6:.1f} us, so one handoff (one way) costs "
        f"{per_handoff / burst50:.2f}x a whole raw round trip, {2 * per_handoff / burst50:.2f}x "
        "its one-way half"
    )
    print(f"\n{load_line()} at the end")
    return 0


if __name__ == "__main__":
    sys.exit(main())
