"""Transfer benchmark of the distributed transport, on loopback, server in another process.

Compares, for one 64 MiB payload sent and echoed back:
  (a) a raw uvloop BufferedProtocol echo (store and forward, preallocated buffers),
  (a') the same raw echo receiving into a fresh np.empty buffer per message on both sides,
       which is what (b) must do (it hands each received array to its caller),
  (b) `Connection.request` carrying a float32 array there and back,
  (c) the same array packed as msgpack `bin` (the approach the wire format avoids),
and the latency of a 1 KiB round trip through (b) and (a).

Run:  python benchmarks/transfer.py [--mib 64] [--reps 7] [--latency-iters 2000]
GB/s counts the payload bytes of both directions: 2 x payload / round-trip time.
"""

from __future__ import annotations

import asyncio
import multiprocessing as mp
import statistics
import struct
import sys
import time
from pathlib import Path

import msgpack
import numpy as np
import uvloop

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _timing import print_latencies, round_trip_parser  # noqa: E402

from autograd_async.distributed import connect, serve  # noqa: E402

TOKEN = b"benchmark-token-transfer"
_LEN = struct.Struct("<Q")


class RawEcho(asyncio.BufferedProtocol):
    """Length-prefixed store-and-forward echo (server) or receiver (client), no copies.

    The whole message (8-byte length + payload) is read into one preallocated buffer, so
    small messages take one recv and large ones land in place. With `fresh`, every message
    gets a newly allocated buffer (page faults included), like a received array does.
    """

    def __init__(self, capacity: int, echo: bool, fresh: bool = False) -> None:
        self.capacity = capacity + _LEN.size
        self.fresh = fresh
        self.view = memoryview(self._new_buffer())
        self.pos = 0
        self.echo = echo
        self.done: asyncio.Future[int] | None = None
        self.transport: asyncio.Transport | None = None

    def _new_buffer(self):
        if self.fresh:
            return np.empty(self.capacity, np.uint8)
        return bytearray(self.capacity)

    def connection_made(self, transport):
        self.transport = transport

    def get_buffer(self, sizehint):
        return self.view[self.pos :]

    def buffer_updated(self, nbytes):
        self.pos += nbytes
        if self.pos < _LEN.size:
            return
        size = _LEN.unpack_from(self.view)[0]
        if self.pos < _LEN.size + size:
            return
        self.pos = 0
        message = self.view[: _LEN.size + size]
        if self.fresh and size > 65536:  # small ones would not be worth a fresh buffer
            self.view = memoryview(self._new_buffer())
        if self.echo:
            self.transport.writelines([message])
        elif self.done is not None and not self.done.done():
            self.done.set_result(size)

    def send(self, payload: memoryview) -> None:
        self.transport.writelines([_LEN.pack(len(payload)), payload])


class MsgpackEcho(asyncio.Protocol):
    """msgpack streaming echo/receiver: arrays travel as `bin` inside the message."""

    def __init__(self, echo: bool) -> None:
        self.unpacker = msgpack.Unpacker(max_buffer_size=1 << 31, raw=False)
        self.echo = echo
        self.done: asyncio.Future[np.ndarray] | None = None
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport):
        self.transport = transport

    def data_received(self, data):
        self.unpacker.feed(data)
        for msg in self.unpacker:
            arr = np.frombuffer(msg["data"], dtype=msg["dtype"]).reshape(msg["shape"])
            if self.echo:
                self.send(arr)
            elif self.done is not None and not self.done.done():
                self.done.set_result(arr.copy())  # a writable array, like (b) gives

    def send(self, arr: np.ndarray) -> None:
        msg = {"dtype": arr.dtype.str, "shape": list(arr.shape), "data": arr.data}
        self.transport.write(msgpack.packb(msg, use_bin_type=True))


async def echo_handler(info, method, kwargs, arrays):
    return {}, arrays


async def _serve_all(capacity: int, ports) -> None:
    loop = asyncio.get_running_loop()
    raw = await loop.create_server(lambda: RawEcho(capacity, echo=True), "127.0.0.1", 0)
    fresh = await loop.create_server(
        lambda: RawEcho(capacity, echo=True, fresh=True), "127.0.0.1", 0
    )
    mp_server = await loop.create_server(lambda: MsgpackEcho(echo=True), "127.0.0.1", 0)
    ours = await serve(
        echo_handler, token=TOKEN, name="bench", max_frame_bytes=capacity + (1 << 20)
    )
    ports.send(
        (
            raw.sockets[0].getsockname()[1],
            fresh.sockets[0].getsockname()[1],
            mp_server.sockets[0].getsockname()[1],
            ours.address[1],
        )
    )
    await asyncio.Event().wait()


def server_main(capacity: int, ports) -> None:
    """Entry point of the server process."""
    uvloop.run(_serve_all(capacity, ports))


def median_rate(times: list[float], nbytes: int) -> tuple[float, float]:
    """Median round-trip milliseconds and GB/s (the payload goes there and back)."""
    t = statistics.median(times)
    return t * 1e3, 2 * nbytes / t / 1e9


async def bench(args, ports: tuple[int, int, int, int]) -> None:
    loop = asyncio.get_running_loop()
    raw_port, fresh_port, mp_port, our_port = ports
    nbytes = args.mib << 20
    arr = np.random.default_rng(0).standard_normal(nbytes // 4).astype(np.float32)
    payload = memoryview(arr.reshape(-1).view(np.uint8))
    small = np.random.default_rng(1).standard_normal(256).astype(np.float32)  # 1 KiB
    small_payload = memoryview(small.view(np.uint8))

    _, raw = await loop.create_connection(
        lambda: RawEcho(nbytes, echo=False), "127.0.0.1", raw_port
    )
    _, fresh = await loop.create_connection(
        lambda: RawEcho(nbytes, echo=False, fresh=True), "127.0.0.1", fresh_port
    )
    _, mpk = await loop.create_connection(lambda: MsgpackEcho(echo=False), "127.0.0.1", mp_port)
    conn = await connect(
        "127.0.0.1",
        our_port,
        token=TOKEN,
        name="bench-client",
        max_frame_bytes=nbytes + (1 << 20),
        request_timeout=120,
    )

    async def raw_roundtrip(data: memoryview, proto: RawEcho = raw) -> float:
        proto.done = loop.create_future()
        start = time.perf_counter()
        proto.send(data)
        await proto.done
        return time.perf_counter() - start

    async def fresh_roundtrip(data: memoryview) -> float:
        return await raw_roundtrip(data, fresh)

    async def our_roundtrip(a: np.ndarray) -> float:
        start = time.perf_counter()
        _, out = await conn.request("echo", [a])
        elapsed = time.perf_counter() - start
        assert out[0].shape == a.shape
        return elapsed

    async def msgpack_roundtrip(a: np.ndarray) -> float:
        mpk.done = loop.create_future()
        start = time.perf_counter()
        mpk.send(a)
        await mpk.done
        return time.perf_counter() - start

    results: dict[str, list[float]] = {"raw": [], "fresh": [], "ours": [], "msgpack": []}
    for rep in range(args.reps + 2):  # interleaved, so drift hits all modes alike
        for key, fn, x in (
            ("raw", raw_roundtrip, payload),
            ("fresh", fresh_roundtrip, payload),
            ("ours", our_roundtrip, arr),
            ("msgpack", msgpack_roundtrip, arr),
        ):
            elapsed = await fn(x)
            if args.verbose:
                print(f"{key:8} rep {rep}: {elapsed * 1e3:.1f} ms")
            if rep >= 2:  # the first two are warm-up (page faults, socket buffers)
                results[key].append(elapsed)

    lat: dict[str, list[float]] = {"raw": [], "ours": []}
    for i in range(args.latency_iters + 200):
        t_raw = await raw_roundtrip(small_payload)
        t_ours = await our_roundtrip(small)
        if i >= 200:
            lat["raw"].append(t_raw)
            lat["ours"].append(t_ours)

    await conn.aclose()
    for proto in (raw, fresh, mpk):
        proto.transport.close()

    raw_ms, raw_gbs = median_rate(results["raw"], nbytes)
    print(
        f"transfer benchmark: {args.mib} MiB payload, uvloop, loopback, server in another "
        f"process; median of {args.reps} round trips; GB/s = 2 x payload / time"
    )
    print(f"{'mode':<44}{'median ms':>10}{'GB/s':>8}{'vs raw':>8}")
    rows = [
        ("(a) raw uvloop BufferedProtocol echo", "raw"),
        ("(a') raw echo into fresh np.empty buffers", "fresh"),
        ("(b) Connection.request float32 array", "ours"),
        ("(c) msgpack bin round trip", "msgpack"),
    ]
    for label, key in rows:
        ms, gbs = median_rate(results[key], nbytes)
        print(f"{label:<44}{ms:>10.1f}{gbs:>8.2f}{gbs / raw_gbs:>7.2f}x")
    print_latencies(
        "latency, 1 KiB round trip",
        [("(d) Connection.request 256 x float32", "ours"), ("(d) raw uvloop echo of 1 KiB", "raw")],
        lat,
        44,
    )


def main() -> None:
    """Start the server process, run the client side, print the table."""
    args = round_trip_parser(__doc__.splitlines()[0], reps=11).parse_args()
    ctx = mp.get_context("spawn")
    recv, send = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=server_main, args=(args.mib << 20, send), daemon=True)
    proc.start()
    try:
        if not recv.poll(60):
            raise SystemExit("server process did not start")
        uvloop.run(bench(args, recv.recv()))
    finally:
        proc.kill()
        proc.join(5)


if __name__ == "__main__":
    main()
