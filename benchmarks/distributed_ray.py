"""`python benchmarks/distributed.py --ray`: workers as Ray actors against workers started by hand.

Two pairs of workers on this machine, all on loopback: h0, h1 started by hand
(`python -m autograd_async.workers`), and r0, r1 started as Ray actors by
`autograd_async.workers.ray.RayWorkers` (on the Ray this process is connected to, else a local
one). For each pair, a distributed backward through
`relay` on the first worker, which clones the payload on the second: the gradient (the payload
size) goes client -> first -> second and back the same way. The two pairs are interleaved
repetition by repetition; the table gives medians and their ratio (target: the same within noise,
Ray being only placement and supervision, never the data path).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
REPO = HERE.parent

from _timing import load_line, machine_line, paired_ratio, spread  # noqa: E402
from transfer import median_rate  # noqa: E402

import autograd_async as ag  # noqa: E402
from autograd_async import distributed as dist  # noqa: E402

TOKEN = b"benchmark-token-distributed-ray"
LOAD = "relay_functions"  # benchmarks/relay_functions.py
PAIRS = {"by hand": ("h0", "h1"), "Ray actors": ("r0", "r1")}


def _start_by_hand(
    name: str, token_file: Path, env: dict[str, str], peers: dict[str, str]
) -> tuple[subprocess.Popen, str]:
    cmd = [
        sys.executable,
        "-m",
        "autograd_async.workers",
        "--name",
        name,
        "--devices",
        "cpu",
        "--token-file",
        str(token_file),
        "--load",
        LOAD,
    ]
    for peer, address in peers.items():
        cmd += ["--peer", f"{peer}={address}"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, cwd=REPO, env=env)
    line = proc.stdout.readline().split()
    if len(line) != 3 or line[0] != "READY":
        proc.kill()
        raise SystemExit(f"worker {name} did not start")
    return proc, line[2]


async def _measure(args: argparse.Namespace, addresses: dict[str, str]) -> dict[str, list]:
    nbytes = args.mib << 20
    payload = np.random.default_rng(0).standard_normal(nbytes // 4).astype(np.float32)
    grad = ag.from_numpy(payload)
    times: dict[str, list[float]] = {label: [] for label in PAIRS}
    async with dist.Client(addresses, token=TOKEN, timeout=120.0) as client:
        async with dist.context(client) as ctx:
            graphs = {}
            for label, (first, second) in PAIRS.items():
                x = ag.from_numpy(payload.copy()).requires_grad_()
                graphs[label] = (x, await client.call(first, "relay", x, peer=second))
            for rep in range(args.reps + 2):  # interleaved; the first two warm up
                for label, (x, y) in graphs.items():
                    x.grad = None
                    start = time.perf_counter()
                    await dist.backward(ctx, [y], [grad], retain_graph=True)
                    elapsed = time.perf_counter() - start
                    assert x.grad is not None and x.grad.shape == x.shape
                    if args.verbose:
                        print(f"{label:11} rep {rep}: {elapsed * 1e3:.1f} ms")
                    if rep >= 2:
                        times[label].append(elapsed)
            for x, _ in graphs.values():
                np.testing.assert_allclose(x.grad.numpy()[:8], payload[:8])
    return times


async def _run(args: argparse.Namespace, by_hand: dict[str, str]) -> dict[str, list]:
    from autograd_async.workers.ray import RayWorkers  # noqa: PLC0415 - Ray is optional

    async with await RayWorkers.start(
        n=2, names=["r0", "r1"], devices="cpu", token=TOKEN, load=(LOAD,), num_cpus=0, strategy=None
    ) as cluster:
        return await _measure(args, {**by_hand, **cluster.addresses})


def ray_main(args: argparse.Namespace) -> None:
    """Start both pairs of workers, run the interleaved round trips, print the table."""
    print(machine_line())
    # The workers of both kinds import relay_functions from here (Ray workers inherit it too,
    # when this process starts the local Ray).
    os.environ["PYTHONPATH"] = os.pathsep.join(
        [str(REPO), str(HERE), *filter(None, [os.environ.get("PYTHONPATH")])]
    )
    sys.path[:0] = [str(REPO), str(HERE)]
    procs = []
    with tempfile.TemporaryDirectory() as tmp:
        token_file = Path(tmp) / "token"
        token_file.write_bytes(TOKEN)
        token_file.chmod(0o600)  # the worker refuses a token others can read
        try:
            h1, h1_address = _start_by_hand("h1", token_file, dict(os.environ), {})
            procs.append(h1)
            h0, h0_address = _start_by_hand("h0", token_file, dict(os.environ), {"h1": h1_address})
            procs.append(h0)
            times = asyncio.run(_run(args, {"h0": h0_address, "h1": h1_address}))
        finally:
            for proc in procs:
                proc.terminate()
            for proc in procs:
                proc.wait(15)
    nbytes = args.mib << 20
    print(
        f"distributed benchmark --ray: {args.mib} MiB float32 gradient, client -> worker -> "
        f"peer worker and back, loopback; median of {args.reps}; GB/s = 2 x payload / time"
    )
    print(f"{'workers':<14}{'median ms':>10}{'GB/s':>8}{'min..max ms':>18}")
    for label, samples in times.items():
        ms, gbs = median_rate(samples, nbytes)
        print(f"{label:<14}{ms:>10.1f}{gbs:>8.2f}{spread([t * 1e3 for t in samples]):>18}")
    ratio = paired_ratio(times["Ray actors"], times["by hand"])
    print(
        f"time, Ray actors / by hand: {ratio:.3f} (median of per-repetition ratios); {load_line()}"
    )
