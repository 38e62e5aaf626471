"""One MLP training step: ours against hand-written NumPy and torch, in one process.

Net: 784-1024-1024-10, ReLU, softmax cross-entropy, float32, batch 256, plain SGD (lr 0.01).
All contenders start from the same weights and train on the same fixed batch.

  ours             `aa.nn.Sequential(Linear, ReLU, Linear, ReLU, Linear)`,
                   `F.cross_entropy`, `opt.zero_grad()`, `loss.backward()`, `aa.optim.SGD.step()`
  NumPy            the same step written by hand, float32 throughout: `np.maximum` in place,
                   fused softmax-cross-entropy gradient, two matmuls per layer backward (none for
                   the input), in-place ReLU mask and in-place SGD; matmuls allocate their
                   results, as any natural code does
  NumPy (out=)     the same, with every matmul writing into a preallocated buffer: the allocation
                   floor
  NumPy (thread)   the hand-written step with its backward half handed to a helper thread and
                   waited for, as `loss.backward()` hands the backward to the cpu device's worker:
                   what one worker thread per device costs by itself
  torch            CPU, `torch.nn` and `torch.optim.SGD`, default threads and 1 thread

Medians of the step time over the timed steps. Ours and the NumPy variants alternate step by step
(a burst of load from other processes hits them alike); torch, whose OpenMP pool would fight
NumPy's BLAS pool for the two cores if interleaved step by step, runs in its own blocks, and the
blocks alternate over three rounds. NumPy, and so ours, use the BLAS's default thread count.
`--profile` adds the per-step work that does not grow with the net (ours and NumPy on a tiny net,
hot and after a full-size step), where ours spends its time: forward, backward and update per
step, the engine worker's busy time, and per-node backward times from the profiler.

Run:  python benchmarks/mlp.py [--reps 30] [--profile] [--quick]
"""

from __future__ import annotations

import gc
import queue
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

from _timing import (
    argument_parser,
    blas_threads,
    gc_label,
    load_line,
    machine_line,
    median,
    paired_ratio,
    pin_torch_threads,
    print_table,
    spread,
    use_repository_checkout,
    verdict,
)

use_repository_checkout()

import numpy as np  # noqa: E402
from _reference_mlp import torch_mlp  # noqa: E402

import autograd_async as aa  # noqa: E402
import autograd_async.nn  # noqa: E402, F401 - aa.nn
import autograd_async.optim  # noqa: E402, F401 - aa.optim
from autograd_async.engine import get_engine  # noqa: E402

LR = 0.01
TARGET_VS_NUMPY = 1.05


def make_weights(sizes: tuple[int, ...], seed: int = 0) -> list[tuple[np.ndarray, np.ndarray]]:
    """PyTorch-style U(-1/sqrt(fan_in), 1/sqrt(fan_in)) weights (out, in) and biases, float32."""
    rng = np.random.default_rng(seed)
    layers = []
    for fan_in, fan_out in zip(sizes[:-1], sizes[1:], strict=True):
        bound = 1 / np.sqrt(fan_in)
        w = rng.uniform(-bound, bound, (fan_out, fan_in)).astype(np.float32)
        b = rng.uniform(-bound, bound, fan_out).astype(np.float32)
        layers.append((w, b))
    return layers


def make_batch(batch: int, features: int, classes: int) -> tuple[np.ndarray, np.ndarray]:
    """A fixed random batch: float32 inputs and int64 class indices."""
    rng = np.random.default_rng(1)
    x = rng.standard_normal((batch, features)).astype(np.float32)
    y = rng.integers(0, classes, batch).astype(np.int64)
    return x, y


# ------------------------------------------------------------------------------ ours
class Ours:
    """The step with autograd_async's nn, functional cross-entropy and optim.SGD."""

    def __init__(self, weights: list, x: np.ndarray, y: np.ndarray) -> None:
        layers: list[Any] = []
        for i, (w, b) in enumerate(weights):
            linear = aa.nn.Linear(w.shape[1], w.shape[0], dtype=aa.float32)
            with aa.no_grad():
                linear.weight.copy_(aa.from_numpy(w.copy()))
                linear.bias.copy_(aa.from_numpy(b.copy()))
            layers.append(linear)
            if i < len(weights) - 1:
                layers.append(aa.nn.ReLU())
        self.model = aa.nn.Sequential(*layers)
        self.opt = aa.optim.SGD(self.model.parameters(), lr=LR)
        self.x = aa.from_numpy(x)
        self.y = aa.from_numpy(y)
        self.cross_entropy = aa.nn.functional.cross_entropy

    def step(self) -> float:
        """One training step; returns the loss."""
        self.opt.zero_grad()
        loss = self.cross_entropy(self.model(self.x), self.y)
        loss.backward()
        self.opt.step()
        return float(loss.item())

    def step_phases(self) -> tuple[float, float, float, float]:
        """One step timed in phases: (zero_grad + forward, backward, update, loss) seconds."""
        t0 = time.perf_counter()
        self.opt.zero_grad()
        loss = self.cross_entropy(self.model(self.x), self.y)
        t1 = time.perf_counter()
        loss.backward()
        t2 = time.perf_counter()
        self.opt.step()
        t3 = time.perf_counter()
        return t1 - t0, t2 - t1, t3 - t2, float(loss.item())

    def first_weight(self) -> np.ndarray:
        """The first layer's weight (for the agreement check)."""
        return self.model[0].weight.detach().numpy()


# ----------------------------------------------------------------------------- NumPy
class HelperThread:
    """One daemon thread that runs a function for the caller, who blocks until it returns."""

    def __init__(self) -> None:
        self.jobs: queue.SimpleQueue = queue.SimpleQueue()
        self.results: queue.SimpleQueue = queue.SimpleQueue()
        threading.Thread(target=self._serve, name="numpy-backward", daemon=True).start()

    def _serve(self) -> None:
        while True:
            job = self.jobs.get()
            try:
                self.results.put((job(), None))
            except Exception as exc:  # noqa: BLE001 - handed back to the caller
                self.results.put((None, exc))

    def run(self, job: Callable[[], Any], timeout: float = 60.0) -> Any:
        """job() on the helper thread; raises what it raised."""
        self.jobs.put(job)
        result, error = self.results.get(timeout=timeout)
        if error is not None:
            raise error
        return result


class NumpyStep:
    """The hand-written step; with `preallocate`, matmuls write into buffers made once; with
    `backward_thread`, the backward half runs on a helper thread while the caller waits."""

    def __init__(
        self,
        weights: list,
        x: np.ndarray,
        y: np.ndarray,
        preallocate: bool,
        backward_thread: bool = False,
    ) -> None:
        self.params = [(w.copy(), b.copy()) for w, b in weights]
        self.x = x
        self.y = y
        self.rows = np.arange(x.shape[0])
        self.preallocate = preallocate
        self.buffers: dict[str, np.ndarray] = {}
        self.helper = HelperThread() if backward_thread else None

    def _mm(self, key: str, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        if not self.preallocate:
            return a @ b
        out = self.buffers.get(key)
        if out is None:
            out = self.buffers[key] = np.empty((a.shape[0], b.shape[1]), np.float32)
        return np.matmul(a, b, out=out)

    def forward(self) -> tuple[float, list, np.ndarray, np.ndarray]:
        """Loss, the ReLU outputs (with the input first), exp of the shifted logits, their sum."""
        acts = [self.x]
        h = self.x
        last = len(self.params) - 1
        for i, (w, b) in enumerate(self.params):
            h = self._mm(f"h{i}", h, w.T)
            h += b
            if i < last:
                np.maximum(h, 0, out=h)  # ReLU in place: the mask is (a > 0) later
                acts.append(h)
        z = h  # logits, shifted in place below
        z -= z.max(axis=1, keepdims=True)
        e = np.exp(z)
        total = e.sum(axis=1, keepdims=True)
        loss = float(np.log(total[:, 0]).sum() - z[self.rows, self.y].sum()) / z.shape[0]
        return loss, acts, e, total

    def backward(self, acts: list, e: np.ndarray, total: np.ndarray) -> list:
        """(weight, bias) gradients from the forward's leftovers."""
        e /= total  # softmax
        e[self.rows, self.y] -= 1
        e *= np.float32(1 / e.shape[0])
        g = e
        grads: list = [None] * len(self.params)
        for i in range(len(self.params) - 1, -1, -1):
            w, _ = self.params[i]
            a = acts[i]
            gw = self._mm(f"gw{i}", g.T, a)
            gb = g.sum(axis=0)
            grads[i] = (gw, gb)
            if i > 0:
                g = self._mm(f"ga{i}", g, w)
                np.multiply(g, a > 0, out=g)
        return grads

    def forward_backward(self) -> tuple[float, list]:
        """Loss and (weight, bias) gradients."""
        loss, acts, e, total = self.forward()
        if self.helper is None:
            return loss, self.backward(acts, e, total)
        return loss, self.helper.run(lambda: self.backward(acts, e, total))

    def update(self, grads: list) -> None:
        """In-place SGD: scale the gradient in place, subtract in place."""
        for (w, b), (gw, gb) in zip(self.params, grads, strict=True):
            gw *= np.float32(LR)
            w -= gw
            gb *= np.float32(LR)
            b -= gb

    def step(self) -> float:
        """One training step; returns the loss."""
        loss, grads = self.forward_backward()
        self.update(grads)
        return loss

    def step_phases(self) -> tuple[float, float, float, float]:
        """(forward + backward, 0, update, loss): NumPy's phases are not separable cheaply."""
        t0 = time.perf_counter()
        loss, grads = self.forward_backward()
        t1 = time.perf_counter()
        self.update(grads)
        t2 = time.perf_counter()
        return t1 - t0, 0.0, t2 - t1, loss

    def first_weight(self) -> np.ndarray:
        """The first layer's weight."""
        return self.params[0][0]


# ----------------------------------------------------------------------------- torch
class TorchStep:
    """The step with torch.nn and torch.optim.SGD at a given thread count."""

    def __init__(self, weights: list, x: np.ndarray, y: np.ndarray, threads: int | None) -> None:
        import torch  # noqa: PLC0415

        self.torch = torch
        self.model = torch_mlp(torch, weights)
        self.opt = torch.optim.SGD(self.model.parameters(), lr=LR)
        self.x = torch.from_numpy(x)
        self.y = torch.from_numpy(y)
        self.threads = threads if threads is not None else torch.get_num_threads()

    def step(self) -> float:
        """One training step at this contender's thread count; returns the loss."""
        torch = self.torch
        torch.set_num_threads(self.threads)
        self.opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(self.model(self.x), self.y)
        loss.backward()
        self.opt.step()
        return float(loss.item())

    def first_weight(self) -> np.ndarray:
        """The first layer's weight."""
        return self.model[0].weight.detach().numpy()


# ---------------------------------------------------------------------------- driver
def agreement(weights: list, x: np.ndarray, y: np.ndarray) -> str:
    """Run three steps of ours, NumPy (inline and threaded) and torch from the same start;
    report the differences."""
    contenders = [
        Ours(weights, x, y),
        NumpyStep(weights, x, y, False),
        TorchStep(weights, x, y, None),
        NumpyStep(weights, x, y, False, backward_thread=True),
    ]
    losses = [[c.step() for _ in range(3)] for c in contenders]
    w = [c.first_weight() for c in contenders]
    return (
        f"agreement after 3 steps: losses ours {losses[0][-1]:.6f}, numpy {losses[1][-1]:.6f}, "
        f"torch {losses[2][-1]:.6f}; max |W1 ours - numpy| {np.abs(w[0] - w[1]).max():.2e}, "
        f"max |W1 ours - torch| {np.abs(w[0] - w[2]).max():.2e}, "
        f"max |W1 numpy (thread) - numpy| {np.abs(w[3] - w[1]).max():.2e}"
    )


def time_blocks(
    groups: list[dict[str, Callable[[], Any]]],
    reps: int,
    warmup: int,
    rounds: int,
    pause: float = 0.3,
) -> dict[str, list[float]]:
    """Seconds per step of each contender.

    Contenders of one group share a thread pool (ours and NumPy: NumPy's BLAS) and alternate step
    by step, rotating the order. Groups with different pools (torch's OpenMP threads) run in
    separate blocks: interleaving them step by step oversubscribes two cores with spinning pool
    threads and makes every step 10x slower. The blocks alternate over `rounds` rounds, each block
    after a pause (spinning pool threads go to sleep) and `warmup` untimed rounds.
    """
    times: dict[str, list[float]] = {n: [] for group in groups for n in group}
    per_round = [reps // rounds + (1 if r < reps % rounds else 0) for r in range(rounds)]
    for count in per_round:
        for group in groups:
            names = list(group)
            time.sleep(pause)
            for i in range(warmup + count):
                shift = i % len(names)
                for name in names[shift:] + names[:shift]:
                    step = group[name]
                    begun = time.perf_counter()
                    step()
                    elapsed = time.perf_counter() - begun
                    if i >= warmup:
                        times[name].append(elapsed)
    return times


def fixed_work(full_numpy: NumpyStep, full_numpy_ms: float, reps: int = 60) -> None:
    """The per-step work that does not grow with the net: ours and NumPy on a tiny net.

    Measured twice: hot (tiny steps back to back) and cold (each after a full-size NumPy step,
    whose BLAS work leaves the caches as a training step leaves them for the next one).
    """
    weights = make_weights((8, 8, 8, 4))
    x, y = make_batch(4, 8, 4)
    tiny = {"ours": Ours(weights, x, y).step, "NumPy": NumpyStep(weights, x, y, False).step}
    medians: dict[tuple[str, str], float] = {}
    time.sleep(0.3)  # torch's OpenMP threads, busy-waiting after the agreement check, go to sleep
    for condition, before in (("hot", None), ("cold", full_numpy.step)):
        times: dict[str, list[float]] = {name: [] for name in tiny}
        for i in range(reps + 5):
            for name, step in tiny.items():
                if before is not None:
                    before()
                begun = time.perf_counter()
                step()
                if i >= 5:
                    times[name].append(time.perf_counter() - begun)
        for name, values in times.items():
            medians[name, condition] = median(values) * 1e6
    rows = [[name, medians[name, "hot"], medians[name, "cold"]] for name in tiny]
    hot = medians["ours", "hot"] - medians["NumPy", "hot"]
    cold = medians["ours", "cold"] - medians["NumPy", "cold"]
    rows.append(["ours - NumPy", hot, cold])
    rows.append(
        [
            "  as % of a full-size NumPy step",
            100 * hot / (full_numpy_ms * 1e3),
            100 * cold / (full_numpy_ms * 1e3),
        ]
    )
    print_table(
        "Per-step work that does not grow with the net (8-8-8-4, batch 4; medians, us)",
        ["step", "hot", "after a full-size NumPy step"],
        rows,
    )


def profile_ours(ours: Ours, numpy_step: NumpyStep, reps: int) -> None:
    """Where ours spends a step: phases against NumPy's, engine busy time, per-node backward."""
    engine = get_engine()
    phases = {"ours": [], "numpy": []}
    busy = []
    for _ in range(reps):
        engine.reset_stats()
        phases["ours"].append(ours.step_phases())
        busy.append(sum(s.busy_ns for s in engine.stats().values()) * 1e-9)
        phases["numpy"].append(numpy_step.step_phases())
    ours_fwd = median([p[0] for p in phases["ours"]])
    ours_bwd = median([p[1] for p in phases["ours"]])
    ours_upd = median([p[2] for p in phases["ours"]])
    np_fb = median([p[0] for p in phases["numpy"]])
    np_upd = median([p[2] for p in phases["numpy"]])
    worker = median(busy)
    print_table(
        "Where ours spends a step (medians, ms)",
        ["phase", "ours", "NumPy"],
        [
            ["zero_grad + forward", ours_fwd * 1e3, "-"],
            ["backward() wall", ours_bwd * 1e3, "-"],
            ["  of which worker busy (nodes)", worker * 1e3, "-"],
            ["  of which outside nodes (engine, handoff, wake-up)", (ours_bwd - worker) * 1e3, "-"],
            ["forward + backward", (ours_fwd + ours_bwd) * 1e3, np_fb * 1e3],
            ["SGD update", ours_upd * 1e3, np_upd * 1e3],
        ],
    )
    from autograd_async.profiler import profile  # noqa: PLC0415

    with profile(record_forward=True) as prof:
        for _ in range(5):
            ours.step()
    print(
        "\nprofiler key averages of 5 steps of ours (forward ops on the caller, backward nodes "
        "on the worker):"
    )
    print(prof.key_averages())
    import cProfile  # noqa: PLC0415
    import pstats  # noqa: PLC0415

    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(5):
        ours.step()
    profiler.disable()
    print(
        "\ncProfile of 5 steps of ours on the calling thread (the backward nodes run on the "
        "worker thread and show up as the wait in backward):"
    )
    pstats.Stats(profiler).sort_stats("tottime").print_stats(15)


def main() -> int:
    parser = argument_parser(__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--profile", action="store_true", help="show where ours spends its time")
    args = parser.parse_args()
    sizes = (784, 1024, 1024, 10) if not args.quick else (784, 128, 128, 10)
    batch = args.batch if not args.quick else 32
    reps = args.reps or (3 if args.quick else 30)
    warmup = 1 if args.quick else 2
    rounds = 1 if args.quick else 3

    weights = make_weights(sizes)
    x, y = make_batch(batch, sizes[0], sizes[-1])
    default_threads = pin_torch_threads(None)
    print(__doc__.splitlines()[0])
    print(machine_line())
    print(
        f"net {'-'.join(map(str, sizes))}, batch {batch}, float32, SGD lr {LR}; BLAS threads: "
        f"{blas_threads()}; torch default threads {default_threads}; {gc_label()}; "
        f"{reps} timed steps in {rounds} round(s), {warmup} warm-up steps per block"
    )

    ours = Ours(weights, x, y)
    numpy_step = NumpyStep(weights, x, y, preallocate=False)
    numpy_out = NumpyStep(weights, x, y, preallocate=True)
    numpy_thread = NumpyStep(weights, x, y, preallocate=False, backward_thread=True)
    torch_default = TorchStep(weights, x, y, default_threads)
    torch_one = TorchStep(weights, x, y, 1)
    groups = [
        {
            "ours": ours.step,
            "NumPy": numpy_step.step,
            "NumPy (out= buffers)": numpy_out.step,
            "NumPy (thread)": numpy_thread.step,
        },
        {f"torch ({default_threads} threads)": torch_default.step},
        {"torch (1 thread)": torch_one.step},
    ]
    gc.collect()
    times = time_blocks(groups, reps, warmup, rounds)
    pin_torch_threads(default_threads)
    ours_ms = median(times["ours"]) * 1e3
    numpy_ms = median(times["NumPy"]) * 1e3
    rows = []
    for name, values in times.items():
        ms = median(values) * 1e3
        rows.append([name, ms, ours_ms / ms, spread([v * 1e3 for v in values])])
    print_table(
        "Training step (medians)", ["contender", "ms/step", "ours / this", "ms min..max"], rows
    )
    paired = paired_ratio(times["ours"], times["NumPy"])
    paired_out = paired_ratio(times["ours"], times["NumPy (out= buffers)"])
    paired_thread = paired_ratio(times["NumPy (thread)"], times["NumPy"])
    print(
        f"\nours / NumPy: ratio of medians {ours_ms / numpy_ms:.3f}, of minima "
        f"{min(times['ours']) / min(times['NumPy']):.3f}; median of per-round ratios "
        f"{paired:.3f} (against NumPy with out= buffers: {paired_out:.3f})"
    )
    print(
        f"the hop alone: NumPy with its backward on a helper thread / NumPy, median of "
        f"per-round ratios {paired_thread:.3f}"
    )
    print(
        f"target: ours / NumPy <= {TARGET_VS_NUMPY} (median of per-round ratios, steady under "
        f"load): {verdict(paired, TARGET_VS_NUMPY)}"
    )
    print(agreement(weights, x, y))
    if args.profile:
        fixed_work(numpy_step, numpy_ms)
        profile_ours(ours, numpy_step, max(reps // 2, 3))
    print(f"\n{load_line()} at the end")
    return 0


if __name__ == "__main__":
    sys.exit(main())
