"""Mixed precision on CPU: a training step of examples/cnn.py's digits CNN in float32 and under
autocast (bfloat16, float16), ours beside PyTorch's CPU autocast, with peak memory.

Each setting runs in a fresh process (one library imported, one BLAS/intra-op thread), so that
its peak resident memory is its own: the growth of the peak resident set over the process's
size once the model, optimizer and batch exist (activations, gradients, optimizer state and the
allocator's high-water mark). A step is zero_grad, forward under autocast, cross-entropy,
backward through a GradScaler-scaled loss, and an AdamW step (as a float16 training loop
runs it; bfloat16 needs no scaling but the same loop is timed for both).

Run:  python benchmarks/amp.py [--reps 5] [--steps 20] [--batch 128] [--quick]
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import time
from pathlib import Path

from _timing import argument_parser, limit_blas_threads, machine_line, median, print_table

HERE = Path(__file__).resolve().parent
SETTINGS = ("float32", "bfloat16", "float16")


def _rss_kib() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * resource.getpagesize() // 1024


def _ours(low: str, batch: int, reps: int, steps: int) -> dict:
    sys.path.insert(0, str(HERE.parent))
    sys.path.insert(0, str(HERE.parent / "examples"))
    import numpy as np  # noqa: PLC0415
    from cnn import cnn  # noqa: PLC0415

    import autograd_async as aa  # noqa: PLC0415

    aa.set_num_threads(1)
    aa.manual_seed(0)
    model = cnn()
    optimizer = aa.optim.AdamW(model.parameters(), lr=1e-3)
    scaler = aa.amp.GradScaler("cpu", enabled=low != "float32")
    rng = np.random.default_rng(0)
    x = aa.tensor(rng.standard_normal((batch, 64)).astype(np.float32))
    y = aa.tensor(rng.integers(0, 10, batch))
    dtype = getattr(aa, low)

    def step() -> None:
        optimizer.zero_grad()
        with aa.autocast("cpu", dtype=dtype, enabled=low != "float32"):
            loss = aa.nn.functional.cross_entropy(model(x), y)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()

    return _measure(step, reps, steps)


def _torch(low: str, batch: int, reps: int, steps: int) -> dict:
    sys.path.insert(0, str(HERE))
    import numpy as np  # noqa: PLC0415
    import torch  # noqa: PLC0415
    from models import torch_cnn  # noqa: PLC0415

    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = torch_cnn(torch)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, foreach=False)
    scaler = torch.amp.GradScaler("cpu", enabled=low != "float32")
    rng = np.random.default_rng(0)
    x = torch.tensor(rng.standard_normal((batch, 64)).astype(np.float32))
    y = torch.tensor(rng.integers(0, 10, batch))
    dtype = getattr(torch, low)

    def step() -> None:
        optimizer.zero_grad()
        with torch.autocast("cpu", dtype=dtype, enabled=low != "float32"):
            loss = torch.nn.functional.cross_entropy(model(x), y)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()

    return _measure(step, reps, steps)


def _measure(step, reps: int, steps: int) -> dict:  # noqa: ANN001
    start_kib = _rss_kib()
    step()  # the first step allocates the gradients and the optimizer's state
    blocks = []
    for _ in range(reps):
        times = []
        for _ in range(steps):
            begun = time.perf_counter()
            step()
            times.append(time.perf_counter() - begun)
        blocks.append(median(times))
    peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {"ms": median(blocks) * 1e3, "peak_mib": max(peak_kib - start_kib, 0) / 1024}


def _child(library: str, lows: list[str], batch: int, reps: int, steps: int) -> dict:
    """Run settings `lows` of `library` in a fresh process (peak memory: the first one's)."""
    done = subprocess.run(
        [
            sys.executable,
            __file__,
            "--child",
            library,
            ",".join(lows),
            str(batch),
            str(reps),
            str(steps),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(done.stderr[-3000:])
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    """Run every setting in its own process and print the table and the ratios."""
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        library, lows, batch, reps, steps = sys.argv[2:7]
        limit_blas_threads(1)
        runs = {"ours": _ours, "torch": _torch}
        libraries = list(runs) if library == "both" else [library]
        print(
            json.dumps(
                {
                    f"{name} {low}": runs[name](low, int(batch), int(reps), int(steps))
                    for name in libraries
                    for low in lows.split(",")
                }
            )
        )
        return
    parser = argument_parser(__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=None, help="steps per timed block")
    parser.add_argument("--batch", type=int, default=None, help="images per step")
    args = parser.parse_args()
    reps = args.reps or (1 if args.quick else 5)
    steps = args.steps or (2 if args.quick else 20)
    batch = args.batch or (8 if args.quick else 128)
    print(machine_line())
    print(f"digits CNN, batch {batch}, 1 thread, {reps} blocks of {steps} steps per setting")
    results = {}
    if args.quick:  # one process for everything: a smoke run, its memory figures mean nothing
        for key, result in _child("both", list(SETTINGS), batch, reps, steps).items():
            results[tuple(key.split())] = result
    else:
        for library in ("ours", "torch"):
            for low in SETTINGS:
                results[library, low] = _child(library, [low], batch, reps, steps)[
                    f"{library} {low}"
                ]
    rows = []
    for low in SETTINGS:
        ours, theirs = results["ours", low], results["torch", low]
        rows.append(
            (
                low if low == "float32" else f"autocast {low}",
                ours["ms"],
                theirs["ms"],
                ours["ms"] / theirs["ms"],
                ours["peak_mib"],
                theirs["peak_mib"],
            )
        )
    print_table(
        "one training step",
        ["setting", "ours ms", "torch ms", "ours/torch", "ours peak MiB", "torch peak MiB"],
        rows,
    )
    for low in SETTINGS[1:]:
        for library in ("ours", "torch"):
            base, mixed = results[library, "float32"], results[library, low]
            print(
                f"{library} autocast {low} / float32: time {mixed['ms'] / base['ms']:.2f}, "
                f"peak memory {mixed['peak_mib'] / max(base['peak_mib'], 1e-9):.2f}"
            )


if __name__ == "__main__":
    main()
