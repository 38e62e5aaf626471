"""Repeat the repros of the stream defects 3-7 of issue 28 and compare each result with NumPy.

    python benchmarks/gpu_repros.py --device cuda --runs 20 --log2-size 24
    AUTOGRAD_ASYNC_SIM=cuda python benchmarks/gpu_repros.py --device sim --log2-size 12

Each repro runs `--runs` times on arrays of 2**log2-size elements and counts the runs whose
result equals the CPU's; the repros that need two devices are skipped with one. On `sim` devices
in the CUDA-faithful mode (AUTOGRAD_ASYNC_SIM=cuda) a race is a StreamRaceError, counted as a
failed run, and the host synchronisations inside `backward()` are counted (the target is none);
on GPUs nothing counts them. Prints one line per repro and a JSON summary (`--json PATH`).
Exits non-zero unless every run of every repro was correct.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import autograd_async as aa  # noqa: E402


def _side(device: str) -> aa.Stream:
    s = aa.Stream(device)
    s.wait_stream(aa.current_stream(device))
    return s


def _host(t: aa.Tensor) -> np.ndarray:
    return t.detach().cpu().numpy()


def repro_3_sum_on_the_consumer_stream(devices: list[str], n: int) -> bool:
    """A side-stream node receiving two gradients sums them on its stream."""
    dev = devices[0]
    x = aa.ones(n, device=dev, requires_grad=True)
    s = _side(dev)
    with aa.stream(s):
        h = x * 3
        loss = (h * 2 + h * 5).sum()
    aa.current_stream(dev).wait_stream(s)
    loss.backward()
    return bool(np.array_equal(_host(x.grad), np.full(n, 21.0, np.float32)))


def repro_4_host_copy_with_a_dtype(devices: list[str], n: int) -> bool:
    """A gradient copied back to the host in another dtype is read after its copy."""
    values = np.linspace(-1.0, 1.0, n)
    x = aa.tensor(values, requires_grad=True)
    seen: list = []
    y = x.to(devices[0], aa.float32)
    y.grad_fn.register_hook(lambda gi, go: seen.append(float(gi[0].numpy()[-1])))
    (y * y).sum().backward()
    expected = 2 * values.astype(np.float32).astype(np.float64)
    return bool(np.allclose(x.grad.numpy(), expected, rtol=1e-6)) and seen == [expected[-1]]


def repro_5_non_contiguous_copy(devices: list[str], n: int) -> bool:
    """A non-contiguous tensor copied to another device (its temporary ordered and kept)."""
    values = np.arange(n, dtype=np.float32).reshape(-1, 8)
    x = aa.tensor(values, device=devices[0])
    y = (x * 1)[:, 1:6].to(devices[1])
    del x
    return bool(np.array_equal(_host(y), values[:, 1:6]))


def repro_6_clip_grad_norm_two_devices(devices: list[str], n: int) -> bool:
    """clip_grad_norm_ over parameters on two devices reads finished norms."""
    a = aa.ones(n, device=devices[0], requires_grad=True)
    b = aa.ones(n // 2, device=devices[1], requires_grad=True)
    (a * 3).sum().backward()
    (b * 4).sum().backward()
    total = float(aa.nn.utils.clip_grad_norm_([a, b], max_norm=1.0).item())
    expected = np.sqrt(9.0 * n + 16.0 * (n // 2))
    coefficient = 1.0 / (expected + 1e-6)
    return (
        bool(np.isclose(total, expected, rtol=1e-4))
        and bool(np.allclose(_host(a.grad), 3 * coefficient, rtol=1e-4))
        and bool(np.allclose(_host(b.grad), 4 * coefficient, rtol=1e-4))
    )


def repro_7_record_stream(devices: list[str], n: int) -> bool:
    """A gradient made on one stream and read on another is not reused under the reader."""
    dev = devices[0]
    x = aa.ones(n, device=dev, requires_grad=True)
    h = x * 3
    s = _side(dev)
    with aa.stream(s):
        loss = (h * 2).sum()
    aa.current_stream(dev).wait_stream(s)
    loss.backward()
    with aa.stream(s):
        fresh = [aa.full((n,), 7.0, device=dev) for _ in range(3)]
    aa.current_stream(dev).wait_stream(s)
    ok = bool(np.array_equal(_host(x.grad), np.full(n, 6.0, np.float32)))
    return ok and all(float(f.sum().item()) == 7.0 * n for f in fresh)


REPROS: list[tuple[str, int, Callable]] = [
    ("3_sum_on_consumer_stream", 1, repro_3_sum_on_the_consumer_stream),
    ("4_host_copy_dtype", 1, repro_4_host_copy_with_a_dtype),
    ("5_non_contiguous_copy", 2, repro_5_non_contiguous_copy),
    ("6_clip_grad_norm_two_devices", 2, repro_6_clip_grad_norm_two_devices),
    ("7_record_stream", 1, repro_7_record_stream),
]


def host_syncs_in_backward(device: str, n: int) -> int | None:
    """Host synchronisations during one MLP backward on `device` (sim in cuda mode only)."""
    if not device.startswith("sim") or aa.backends.sim_mode() != "cuda":
        return None
    from autograd_async.backends.sim_streams import sim_world  # noqa: PLC0415

    width = max(8, min(256, int(np.sqrt(n))))
    model = aa.nn.Sequential(aa.nn.Linear(width, width), aa.nn.ReLU(), aa.nn.Linear(width, 10)).to(
        device
    )
    x = aa.randn(32, width, device=device)
    target = aa.tensor(np.arange(32) % 10, device=device)
    loss = aa.nn.functional.cross_entropy(model(x), target)
    before = sim_world.host_syncs
    loss.backward()
    return sim_world.host_syncs - before


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="cuda", help="device type: cuda or sim")
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--log2-size", type=int, default=24)
    parser.add_argument("--json", help="write the summary here")
    args = parser.parse_args(argv)
    n = 2**args.log2_size
    if args.device == "cuda":
        count = aa.cuda_device_count()
    else:
        count = 2
    devices = [f"{args.device}:{i}" for i in range(count)]
    if not devices:
        print(f"no {args.device} devices")
        return 1
    summary: dict = {"device": args.device, "devices": len(devices), "elements": n, "repros": {}}
    failed = False
    for name, needs, repro in REPROS:
        if len(devices) < needs:
            print(f"repro {name}: skipped (needs {needs} devices)")
            summary["repros"][name] = {"skipped": True}
            continue
        correct, errors = 0, []
        begun = time.perf_counter()
        for _ in range(args.runs):
            try:
                correct += repro(devices, n)
            except Exception as exc:  # noqa: BLE001 - a race or a device error: a failed run
                errors.append(f"{type(exc).__name__}: {str(exc)[:300]}")
        seconds = time.perf_counter() - begun
        failed |= correct != args.runs
        print(f"repro {name}: {correct}/{args.runs} correct ({seconds:.1f} s)")
        for error in sorted(set(errors))[:3]:
            print(f"  error: {error}")
        summary["repros"][name] = {"correct": correct, "runs": args.runs, "errors": errors[:3]}
    syncs = host_syncs_in_backward(devices[0], n)
    summary["host_syncs_in_backward"] = syncs
    print(f"host syncs inside backward: {'not counted on this device' if syncs is None else syncs}")
    failed |= bool(syncs)
    if args.json:
        Path(args.json).write_text(json.dumps(summary, indent=1))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
