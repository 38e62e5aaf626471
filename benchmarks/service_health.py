"""/health latency of the gradient service while 100 clients keep asking it for saliency maps.

examples/gradient_service.py runs on this process's uvloop (aiohttp on 127.0.0.1, a port chosen
by the OS) around the example's classifier, pre-trained for two epochs on cpu. A load process
(benchmarks/saliency_load.py) keeps CONCURRENCY clients posting /saliency back to back for
SECONDS; meanwhile this process GETs /health every 5 ms and times each answer. The load runs in
a process of its own, as it would in production: on the service's loop its client work would
queue in front of the server. Reported: /health p50, p99 and max, and the saliency requests
answered. Target: p99 under 50 ms on the machine in the README.

Run:  python benchmarks/service_health.py [--seconds 2] [--concurrency 100] [--quick]
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from pathlib import Path

from _timing import (
    argument_parser,
    machine_line,
    percentile,
    print_table,
    use_repository_checkout,
    verdict,
)

use_repository_checkout()
EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
sys.path.insert(0, str(EXAMPLES))  # the examples import their neighbours (`_data`) by name

import aiohttp  # noqa: E402
import uvloop  # noqa: E402
from aiohttp import web  # noqa: E402
from gradient_service import make_app, pretrained_model  # noqa: E402

SALIENCY_LOAD = Path(__file__).resolve().parent / "saliency_load.py"
TARGET_P99_MS = 50.0
HEALTH_PERIOD = 0.005  # seconds between health checks


async def measure(seconds: float, concurrency: int) -> tuple[list[float], dict]:
    """Serve, run the load process, and time /health until it ends; (latencies, load totals)."""
    model = await pretrained_model(epochs=2, device="cpu")
    runner = web.AppRunner(make_app(model, lr=0.05))
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    host, port = runner.addresses[0][:2]
    url = f"http://{host}:{port}"
    latencies: list[float] = []
    load = await asyncio.create_subprocess_exec(
        sys.executable,
        str(SALIENCY_LOAD),
        url,
        str(seconds),
        str(concurrency),
        stdout=subprocess.PIPE,
    )
    try:
        if await asyncio.wait_for(load.stdout.readline(), 60) != b"started\n":
            raise RuntimeError("the load process did not start")
        async with aiohttp.ClientSession() as monitor:
            while load.returncode is None and not load.stdout.at_eof():
                began = time.perf_counter()
                async with monitor.get(f"{url}/health") as response:
                    await response.read()
                    if response.status != 200:
                        raise RuntimeError(f"/health answered {response.status}")
                latencies.append(time.perf_counter() - began)
                await asyncio.sleep(HEALTH_PERIOD)
        totals = json.loads(await asyncio.wait_for(load.stdout.readline(), 60))
    finally:
        if load.returncode is None:
            load.kill()
        await load.wait()
        await runner.cleanup()
    return latencies, totals


def main() -> int:
    parser = argument_parser(__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=None, help="load duration (default 2)")
    parser.add_argument("--concurrency", type=int, default=None, help="load clients (100)")
    args = parser.parse_args()
    seconds = args.seconds or (0.5 if args.quick else 2.0)
    concurrency = args.concurrency or (10 if args.quick else 100)

    print(__doc__.splitlines()[0])
    print(machine_line())
    latencies, totals = uvloop.run(measure(seconds, concurrency))
    ms = [t * 1e3 for t in latencies]
    p99 = percentile(ms, 99)
    print_table(
        f"/health under saliency load: {concurrency} clients for {seconds:g} s (ms)",
        ["checks", "p50", "p99", "max", "saliency answered", "failed"],
        [[len(ms), percentile(ms, 50), p99, max(ms), totals["answered"], totals["failed"]]],
    )
    print(
        f"\n/health p99 under load: {p99:.1f} ms; target < {TARGET_P99_MS:g} ms: "
        f"{verdict(p99, TARGET_P99_MS)}"
    )
    return 0 if totals["failed"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
