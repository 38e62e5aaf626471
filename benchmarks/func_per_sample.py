"""Per-example gradients of an MLP: `vmap(grad(loss))` against a loop, torch.func and NumPy.

Net: 784-256-10, ReLU, softmax cross-entropy, float32, batch 64, one BLAS thread (and one torch
thread). Every contender computes the gradient of each example's loss with respect to all
parameters (64 copies of each: 51 MB for the first weight), from the same weights and data.

  ours vmap        `vmap(grad(loss), in_dims=(None, 0, 0))(params, x, y)`, `loss` calling
                   `functional_call(model, params, (x,))` and `F.cross_entropy`
  ours loop        `grad(loss)(params, x[i], y[i])` for each example, stacked
  torch.func       the same program on `torch.func` (vmap, grad, functional_call)
  torch loop       `torch.autograd.grad` per example, stacked
  NumPy            the per-example gradients written by hand in batched NumPy: one matmul per
                   layer forward, an outer product per layer for the weight gradients

Medians over the timed repetitions; ours and NumPy alternate repetition by repetition, torch runs
in its own block. The target is ours vmap within 1.2x of NumPy.

Run:  python benchmarks/func_per_sample.py [--reps 30] [--quick]
"""

from __future__ import annotations

import time
from collections.abc import Callable

from _timing import (
    argument_parser,
    blas_threads,
    limit_blas_threads,
    machine_line,
    median,
    paired_ratio,
    print_table,
    spread,
    use_repository_checkout,
    verdict,
)

limit_blas_threads(1)
use_repository_checkout()

import numpy as np  # noqa: E402

import autograd_async as aa  # noqa: E402
import autograd_async.nn.functional as F  # noqa: E402, N812
from autograd_async import nn  # noqa: E402
from autograd_async.func import functional_call, grad, vmap  # noqa: E402

TARGET_VS_NUMPY = 1.2


def make_data(
    sizes: tuple[int, ...], batch: int, seed: int = 0
) -> tuple[list, np.ndarray, np.ndarray]:
    """Weights (out, in) and biases of each layer, inputs and class labels, float32."""
    rng = np.random.default_rng(seed)
    layers = []
    for fan_in, fan_out in zip(sizes[:-1], sizes[1:], strict=True):
        bound = 1 / np.sqrt(fan_in)
        layers.append(
            (
                rng.uniform(-bound, bound, (fan_out, fan_in)).astype(np.float32),
                rng.uniform(-bound, bound, fan_out).astype(np.float32),
            )
        )
    x = rng.standard_normal((batch, sizes[0])).astype(np.float32)
    y = rng.integers(0, sizes[-1], batch)
    return layers, x, y


def numpy_per_sample(layers: list, x: np.ndarray, y: np.ndarray) -> dict[str, np.ndarray]:
    """The per-example gradients of the two-layer net, by hand."""
    (w1, b1), (w2, b2) = layers
    h = x @ w1.T
    h += b1
    np.maximum(h, 0, out=h)
    logits = h @ w2.T
    logits += b2
    logits -= logits.max(axis=1, keepdims=True)
    p = np.exp(logits)
    p /= p.sum(axis=1, keepdims=True)
    p[np.arange(len(y)), y] -= 1  # d loss / d logits, per example
    gw2 = p[:, :, None] * h[:, None, :]
    gh = p @ w2
    gh *= h > 0
    gw1 = gh[:, :, None] * x[:, None, :]
    return {"0.weight": gw1, "0.bias": gh, "2.weight": gw2, "2.bias": p}


def ours(layers: list, x: np.ndarray, y: np.ndarray) -> tuple[Callable, Callable]:
    """`vmap(grad(...))` and the per-example loop on our tensors."""
    sizes = [layers[0][0].shape[1]] + [w.shape[0] for w, _ in layers]
    model = nn.Sequential(nn.Linear(sizes[0], sizes[1]), nn.ReLU(), nn.Linear(sizes[1], sizes[2]))
    params = {}
    for i, (w, b) in zip((0, 2), layers, strict=True):
        params[f"{i}.weight"] = aa.from_numpy(w)
        params[f"{i}.bias"] = aa.from_numpy(b)
    xs, ys = aa.from_numpy(x), aa.from_numpy(y)

    def loss(p: dict, xi: aa.Tensor, yi: aa.Tensor) -> aa.Tensor:
        return F.cross_entropy(functional_call(model, p, (xi,)), yi)

    per_sample = vmap(grad(loss), in_dims=(None, 0, 0))
    one = grad(loss)

    def batched() -> dict:
        return per_sample(params, xs, ys)

    def loop() -> dict:
        grads = [one(params, xs[i], ys[i]) for i in range(len(y))]
        return {k: aa.stack([g[k] for g in grads]) for k in grads[0]}

    return batched, loop


def torch_contenders(layers: list, x: np.ndarray, y: np.ndarray) -> tuple[Callable, Callable]:
    """torch.func's `vmap(grad(...))` and torch's per-example loop, one thread."""
    import torch  # noqa: PLC0415
    from torch.func import functional_call as t_call  # noqa: PLC0415
    from torch.func import grad as t_grad  # noqa: PLC0415
    from torch.func import vmap as t_vmap  # noqa: PLC0415

    torch.set_num_threads(1)
    sizes = [layers[0][0].shape[1]] + [w.shape[0] for w, _ in layers]
    model = torch.nn.Sequential(
        torch.nn.Linear(sizes[0], sizes[1]), torch.nn.ReLU(), torch.nn.Linear(sizes[1], sizes[2])
    )
    params = {}
    for i, (w, b) in zip((0, 2), layers, strict=True):
        params[f"{i}.weight"] = torch.from_numpy(w)
        params[f"{i}.bias"] = torch.from_numpy(b)
    xs, ys = torch.from_numpy(x), torch.from_numpy(y)

    def loss(p: dict, xi: torch.Tensor, yi: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.cross_entropy(t_call(model, p, (xi,)), yi)

    per_sample = t_vmap(t_grad(loss), in_dims=(None, 0, 0))
    leaves = {k: v.clone().requires_grad_() for k, v in params.items()}

    def batched() -> dict:
        return per_sample(params, xs, ys)

    def loop() -> dict:
        rows = []
        for i in range(len(y)):
            out = torch.nn.functional.cross_entropy(t_call(model, leaves, (xs[i],)), ys[i])
            rows.append(torch.autograd.grad(out, list(leaves.values())))
        return {k: torch.stack([r[j] for r in rows]) for j, k in enumerate(leaves)}

    return batched, loop


def timed(fn: Callable) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main() -> None:
    parser = argument_parser(__doc__.splitlines()[0])
    args = parser.parse_args()
    sizes, batch = ((784, 256, 10), 64) if not args.quick else ((20, 16, 4), 8)
    reps = args.reps or (3 if args.quick else 30)
    layers, x, y = make_data(sizes, batch)
    print(machine_line())
    print(f"BLAS threads: {blas_threads()}  net {'-'.join(map(str, sizes))}  batch {batch}")

    ours_vmap, ours_loop = ours(layers, x, y)
    by_hand = numpy_per_sample(layers, x, y)
    got = ours_vmap()
    for key, expected in by_hand.items():  # the same gradients, or the timing means nothing
        np.testing.assert_allclose(got[key].numpy(), expected, rtol=1e-4, atol=1e-5)
    looped = ours_loop()
    np.testing.assert_allclose(looped["0.weight"].numpy(), by_hand["0.weight"], atol=1e-5)

    times: dict[str, list[float]] = {"ours vmap": [], "NumPy": [], "ours loop": []}
    for _ in range(2):  # warm up
        ours_vmap(), numpy_per_sample(layers, x, y)
    for _ in range(reps):
        times["ours vmap"].append(timed(ours_vmap))
        times["NumPy"].append(timed(lambda: numpy_per_sample(layers, x, y)))
    for _ in range(max(3, reps // 5)):
        times["ours loop"].append(timed(ours_loop))

    try:
        torch_vmap, torch_loop = torch_contenders(layers, x, y)
    except ImportError:
        torch_vmap = torch_loop = None
    if torch_vmap is not None:
        tgot = torch_vmap()
        np.testing.assert_allclose(tgot["0.weight"].numpy(), by_hand["0.weight"], atol=1e-5)
        times["torch.func"], times["torch loop"] = [], []
        for _ in range(2):
            torch_vmap(), torch_loop()
        for _ in range(reps):
            times["torch.func"].append(timed(torch_vmap))
        for _ in range(max(3, reps // 5)):
            times["torch loop"].append(timed(torch_loop))

    base = median(times["NumPy"])
    rows = [
        (name, median(ts) * 1e3, spread([t * 1e3 for t in ts]), median(ts) / base)
        for name, ts in times.items()
    ]
    print_table("per-example gradients (ms, median)", ["contender", "ms", "range", "/ NumPy"], rows)
    ratio = paired_ratio(times["ours vmap"], times["NumPy"])
    print(f"\ntarget: ours vmap / NumPy (paired) {ratio:.3f}: {verdict(ratio, TARGET_VS_NUMPY)}")


if __name__ == "__main__":
    main()
