"""Load generator: CONCURRENCY clients each POST /saliency back to back for SECONDS.

    python benchmarks/saliency_load.py URL SECONDS CONCURRENCY

Prints `started` once every client has had an answer, then, at the end, one JSON line with the
requests answered and failed. Run as a process of its own, so that its client work (building
requests, parsing answers) does not run on the event loop of the server it measures.
"""

from __future__ import annotations

import asyncio
import json
import random
import sys
import time

import aiohttp


async def client(
    session: aiohttp.ClientSession, url: str, seed: int, ready: asyncio.Barrier, seconds: float
) -> tuple[int, int]:
    """POST one random digit-like input again and again; returns (answered, failed)."""
    rng = random.Random(seed)
    body = json.dumps({"input": [rng.randint(0, 16) for _ in range(64)]}).encode()
    counts = [0, 0]
    until = None
    while until is None or time.perf_counter() < until:
        async with session.post(f"{url}/saliency", data=body) as response:
            await response.read()
            counts[response.status != 200] += 1
        if until is None:
            await ready.wait()  # the last client to get an answer releases them all
            until = time.perf_counter() + seconds
    return counts[0], counts[1]


async def main(url: str, seconds: float, concurrency: int) -> None:
    """Run the clients and print the totals."""
    ready = asyncio.Barrier(concurrency + 1)
    connector = aiohttp.TCPConnector(limit=concurrency)
    async with aiohttp.ClientSession(connector=connector) as session:
        clients = [
            asyncio.create_task(client(session, url, seed, ready, seconds))
            for seed in range(concurrency)
        ]
        await ready.wait()
        print("started", flush=True)
        counts = await asyncio.gather(*clients)
    answered, failed = (sum(column) for column in zip(*counts, strict=True))
    print(json.dumps({"answered": answered, "failed": failed}), flush=True)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], float(sys.argv[2]), int(sys.argv[3])))
