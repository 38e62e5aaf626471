"""Pipeline a model split over two devices: several micro-batches' backward passes at once.

Stage 1 of an MLP lives on device A, stage 2 on device B (cuda:0 and cuda:1 with two GPUs, the
simulated accelerators sim:0 and sim:1 otherwise); activations cross with `.to()`, whose backward
sends the gradient back. Each device has its own engine worker thread, so backward passes of
different micro-batches can run on both devices at once:

    sequential: fwd 1 | bwd 1 (B, then A) | fwd 2 | bwd 2 | ...
    pipelined:  fwd 1 | fwd 2 | fwd 3 | fwd 4 |
                      | bwd 1 on B | bwd 2 on B | bwd 3 on B | ...
                                   | bwd 1 on A | bwd 2 on A | ...

The pipelined step starts each micro-batch's `backward_async()` and goes straight on to the next
forward, then gathers them all. The example checks that the accumulated gradients equal one
single-device, full-batch backward of the same model with the same weights (exit status 1 if not),
prints the speedup of pipelined over sequential micro-batches, and can write a Chrome trace.

    python examples/multi_device.py                     # width 2048, 4 micro-batches, 5 steps
    python examples/multi_device.py --width 1024 --micro-batches 8 --trace pipeline.json

On simulated devices the layers must be wide. The device threads compute side by side only inside
NumPy's matmuls, where the GIL is released, so the matmuls must outweigh the Python bookkeeping
around them. Each matmul gets one BLAS thread (`--blas-threads`), as each simulated device stands
for one accelerator: the pipeline, not BLAS, is what puts the second core to work.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
import time
from collections.abc import Awaitable, Callable, Iterable, Iterator
from dataclasses import dataclass

import numpy as np
from threadpoolctl import threadpool_limits

import autograd_async as aa
from autograd_async import nn
from autograd_async.engine import get_engine
from autograd_async.engine.trace_events import ForwardOp, NodeRun
from autograd_async.nn import functional as F  # noqa: N812 - PyTorch's alias
from autograd_async.profiler import profile

CLASSES = 10


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line; `parse_args([])` gives the defaults."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=5, help="timed steps of each schedule")
    parser.add_argument("--micro-batches", type=int, default=4)
    parser.add_argument("--batch-size", type=int, default=512)
    parser.add_argument("--width", type=int, default=2048, help="units per hidden layer")
    parser.add_argument(
        "--blas-threads",
        type=int,
        default=1,
        help="BLAS threads per matmul (default 1: one core per simulated device)",
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--trace", metavar="OUT.json", help="write a trace of one pipelined step")
    args = parser.parse_args(argv)
    if min(args.steps, args.micro_batches, args.width, args.blas_threads) < 1:
        parser.error("--steps, --micro-batches, --width and --blas-threads must be at least 1")
    if args.batch_size < args.micro_batches:
        parser.error("--batch-size must be at least --micro-batches")
    return args


def pick_devices() -> tuple[str, str]:
    """Two GPUs when present, else two simulated accelerators."""
    if aa.cuda_device_count() >= 2:
        return "cuda:0", "cuda:1"
    if aa.sim_device_count() < 2:
        aa.set_sim_device_count(2)
    return "sim:0", "sim:1"


class TwoStageMLP(nn.Module):
    """An MLP cut in two: stage 1 on `device_a`, stage 2 (and the logits) on `device_b`."""

    def __init__(self, width: int, device_a: str, device_b: str) -> None:
        super().__init__()
        self.device_b = device_b
        self.stage1 = nn.Sequential(
            nn.Linear(width, width), nn.ReLU(), nn.Linear(width, width), nn.ReLU()
        ).to(device_a)
        self.stage2 = nn.Sequential(
            nn.Linear(width, width), nn.ReLU(), nn.Linear(width, CLASSES)
        ).to(device_b)

    def forward(self, x: aa.Tensor) -> aa.Tensor:
        """Logits on device B for inputs on device A."""
        # The hop between devices is an op like any other: its backward moves the gradient back.
        return self.stage2(self.stage1(x).to(self.device_b))


@dataclass(frozen=True)
class MicroBatch:
    """A slice of the batch; `weight` is its share of the rows, so the losses sum to the mean."""

    x: aa.Tensor
    y: aa.Tensor
    weight: float


def synthetic_batch(args: argparse.Namespace) -> tuple[np.ndarray, np.ndarray]:
    """Random inputs and labels: only their shapes (the work they cause) matter here."""
    rng = np.random.default_rng(args.seed)
    x = rng.standard_normal((args.batch_size, args.width), dtype=np.float32)
    y = rng.integers(0, CLASSES, size=args.batch_size)
    return x, y


def split(x: np.ndarray, y: np.ndarray, parts: int, device_a: str, device_b: str) -> list:
    """Cut a batch into micro-batches: inputs on device A, where stage 1 reads them, labels on B."""
    return [
        MicroBatch(aa.tensor(xs, device=device_a), aa.tensor(ys, device=device_b), len(ys) / len(y))
        for xs, ys in zip(np.array_split(x, parts), np.array_split(y, parts), strict=True)
    ]


def micro_batch_loss(model: nn.Module, mb: MicroBatch) -> aa.Tensor:
    """This micro-batch's part of the batch's mean cross-entropy."""
    return F.cross_entropy(model(mb.x), mb.y) * mb.weight


# ----------------------------------------------------------------------------------- schedules
async def sequential_step(model: nn.Module, micro_batches: list[MicroBatch]) -> None:
    """Accumulate gradients one micro-batch at a time: each backward finishes before the next."""
    for mb in micro_batches:
        await micro_batch_loss(model, mb).backward_async()


async def pipelined_step(model: nn.Module, micro_batches: list[MicroBatch]) -> None:
    """Start each micro-batch's backward and go on to the next forward; then wait for them all."""
    in_flight = []
    for mb in micro_batches:
        loss = micro_batch_loss(model, mb)
        in_flight.append(asyncio.ensure_future(loss.backward_async()))
        # One trip round the loop lets that task hand its graph to device B's worker; from there
        # it runs on the workers while this thread computes the next forward.
        await asyncio.sleep(0)
    # Each parameter's gradient is accumulated by its own device's worker, one node at a time,
    # so concurrent backward passes add into `.grad` safely.
    await asyncio.gather(*in_flight)


Step = Callable[[nn.Module, list[MicroBatch]], Awaitable[None]]


async def seconds_per_step(step: Step, model: nn.Module, micro_batches: list, steps: int) -> float:
    """Mean wall time of `step` after a warm-up step; the last step's gradients stay in `.grad`."""
    for timed in (False, True):
        began = time.perf_counter()
        for _ in range(steps if timed else 1):
            # No optimizer step: the weights stay put, so every step computes the same gradients.
            model.zero_grad()
            await step(model, micro_batches)
    return (time.perf_counter() - began) / steps


# -------------------------------------------------------------------------------------- checks
def gradients(model: nn.Module) -> dict[str, np.ndarray]:
    """Every parameter's `.grad` as a host array."""
    return {name: np.asarray(p.grad) for name, p in model.named_parameters()}


def single_device_gradients(
    model: TwoStageMLP, x: np.ndarray, y: np.ndarray, width: int, device: str
) -> dict[str, np.ndarray]:
    """Gradients of one full-batch backward of a copy of `model` that lives on `device` alone."""
    reference = TwoStageMLP(width, device, device)
    reference.load_state_dict(model.state_dict())  # copies the weights across devices
    loss = F.cross_entropy(reference(aa.tensor(x, device=device)), aa.tensor(y, device=device))
    loss.backward()
    return gradients(reference)


def check_gradients(got: dict[str, np.ndarray], want: dict[str, np.ndarray]) -> float:
    """Assert that `got` matches `want` parameter by parameter; returns the largest difference."""
    for name, expected in want.items():
        # Summing micro-batch gradients rounds differently from one full-batch matmul.
        scale = float(np.abs(expected).max())
        np.testing.assert_allclose(
            got[name], expected, rtol=1e-4, atol=1e-5 * scale, err_msg=f"gradient of {name}"
        )
    return max(float(np.abs(got[name] - want[name]).max()) for name in want)


def busy_intervals(events: Iterable) -> dict[str, list[tuple[int, int]]]:
    """Busy intervals per track: forward ops on their thread, backward nodes on their device."""
    tracks: dict[str, list[tuple[int, int]]] = {}
    for ev in events:
        if type(ev) is NodeRun:
            tracks.setdefault(f"backward on {ev.device}", []).append((ev.start_ns, ev.end_ns))
        elif type(ev) is ForwardOp:
            tracks.setdefault(f"forward on {ev.thread_name}", []).append((ev.start_ns, ev.end_ns))
    return tracks


def merged(intervals: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    """The same time covered by disjoint intervals (nested forward ops count once)."""
    out: list[tuple[int, int]] = []
    for lo, hi in sorted(intervals):
        if out and lo <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], hi))
        else:
            out.append((lo, hi))
    return out


def overlap_seconds(events: Iterable) -> float:
    """Time during which two or more tracks (forward, device A, device B) were busy together.

    Zero for a strictly sequential run; a sweep over every interval's start and end counts how
    many tracks are busy between consecutive edges.
    """
    edges = sorted(
        (t, step)
        for track in busy_intervals(events).values()
        for lo, hi in merged(track)
        for t, step in ((lo, 1), (hi, -1))
    )
    busy, since, total = 0, 0, 0
    for t, step in edges:
        if busy >= 2:
            total += t - since
        busy, since = busy + step, t
    return total / 1e9


# ------------------------------------------------------------------------------------- driving
@dataclass(frozen=True)
class Report:
    """Timings of both schedules, the gradient check, and the overlap seen in a traced step."""

    devices: tuple[str, str]
    sequential_s: float
    pipelined_s: float
    max_gradient_difference: float
    traced_step_s: float
    overlap_s: float
    nodes_run: dict[str, int]

    @property
    def speedup(self) -> float:
        """Sequential time over pipelined time."""
        return self.sequential_s / self.pipelined_s


@contextlib.contextmanager
def blas_threads(count: int) -> Iterator[None]:
    """Limit each NumPy matmul to `count` threads.

    A simulated device stands for an accelerator with its own compute. Giving each matmul one core
    models that: two device threads then compute side by side, as two GPUs would. A multithreaded
    BLAS would instead spread every matmul over all cores, and the devices would fight over them.
    """
    with threadpool_limits(limits=count, user_api="blas"):
        yield


async def traced_pipelined_step(model: nn.Module, micro_batches: list) -> tuple[profile, float]:
    """One pipelined step under the profiler (forward ops included); returns it and its time."""
    model.zero_grad()
    with profile(record_forward=True) as prof:
        began = time.perf_counter()
        await pipelined_step(model, micro_batches)
        seconds = time.perf_counter() - began
    return prof, seconds


async def run(args: argparse.Namespace) -> Report:
    """Time both schedules, check their gradients, trace one pipelined step."""
    device_a, device_b = pick_devices()
    aa.manual_seed(args.seed)
    model = TwoStageMLP(args.width, device_a, device_b)
    x, y = synthetic_batch(args)
    micro_batches = split(x, y, args.micro_batches, device_a, device_b)
    with blas_threads(args.blas_threads):
        want = single_device_gradients(model, x, y, args.width, device_a)
        sequential = await seconds_per_step(sequential_step, model, micro_batches, args.steps)
        difference = check_gradients(gradients(model), want)
        pipelined = await seconds_per_step(pipelined_step, model, micro_batches, args.steps)
        difference = max(difference, check_gradients(gradients(model), want))
        before = get_engine().stats()
        prof, traced = await traced_pipelined_step(model, micro_batches)
        after = get_engine().stats()
    if args.trace:
        prof.export_chrome_trace(args.trace)
    nodes = {
        dev: after[dev].nodes_run - (before[dev].nodes_run if dev in before else 0)
        for dev in (device_a, device_b)
    }
    return Report(
        (device_a, device_b),
        sequential,
        pipelined,
        difference,
        traced,
        overlap_seconds(prof.events),
        nodes,
    )


def main(argv: list[str] | None = None) -> int:
    """Run from the command line; the exit status is 1 when the gradients disagree."""
    args = parse_args(argv)
    try:
        report = asyncio.run(run(args))
    except AssertionError as exc:
        print(
            f"FAILED: pipelined gradients differ from the single-device run\n{exc}", file=sys.stderr
        )
        return 1
    a, b = report.devices
    print(
        f"stage 1 on {a}, stage 2 on {b}; batch {args.batch_size} in {args.micro_batches} "
        f"micro-batches, width {args.width}"
    )
    print(
        f"gradients match a single-device run (largest difference "
        f"{report.max_gradient_difference:.2e})"
    )
    print(f"sequential micro-batches: {report.sequential_s * 1e3:8.1f} ms per step")
    print(
        f"pipelined micro-batches:  {report.pipelined_s * 1e3:8.1f} ms per step "
        f"({report.speedup:.2f}x faster)"
    )
    print(
        f"traced step: {report.traced_step_s * 1e3:.1f} ms, of which "
        f"{report.overlap_s * 1e3:.1f} ms had two or more of forward, {a} and {b} busy at once; "
        f"nodes run: " + ", ".join(f"{d} {n}" for d, n in report.nodes_run.items())
    )
    if args.trace:
        print(f"trace written to {args.trace}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
