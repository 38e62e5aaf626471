"""Fuzzing: random and mutated frames against the pure reader and against a live server."""

from __future__ import annotations

import asyncio
import random
import struct
import sys

import msgpack
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from autograd_async.distributed import connect
from autograd_async.distributed.errors import ProtocolError
from autograd_async.distributed.wire import MAGIC, PREFIX, VERSION, FrameReader, encode_frame

from .conftest import TOKEN, rss_kib

DTYPE_NAMES = [
    "bool",
    "int8",
    "uint16",
    "int32",
    "int64",
    "uint64",
    "float16",
    "float32",
    "float64",
    "complex64",
    "complex128",
    "object",
    "<U4",
    "V8",
    "float128",
    "",
    5,
    None,
]
MSG_TYPES = [
    "request",
    "response",
    "error",
    "ping",
    "pong",
    "cancel",
    "hello",
    "challenge",
    "auth",
    "auth_ok",
    "launch",
    "",
    3,
    None,
]


def frame_bytes(
    header: object,
    buffers: list[bytes],
    lengths: list[int] | None = None,
    header_len: int | None = None,
) -> bytes:
    raw = header if isinstance(header, bytes) else msgpack.packb(header, use_bin_type=True)
    lengths = [len(b) for b in buffers] if lengths is None else lengths
    hlen = len(raw) if header_len is None else header_len
    prefix = PREFIX.pack(MAGIC, VERSION, 0, hlen, len(lengths))
    return prefix + b"".join(struct.pack("<Q", n) for n in lengths) + raw + b"".join(buffers)


def random_value(rng: random.Random, depth: int = 0) -> object:
    kind = rng.randrange(9 if depth < 4 else 6)
    if kind == 0:
        return None
    if kind == 1:
        return rng.random() < 0.5
    if kind == 2:
        return rng.choice([0, -1, 1, 2**63 - 1, -(2**63), 2**64 - 1, rng.randrange(-99, 99)])
    if kind == 3:
        return rng.choice([0.0, -1.5, float("nan"), float("inf"), rng.random()])
    if kind == 4:
        return "".join(rng.choice("ab\u00e9\u2603 ") for _ in range(rng.randrange(8)))
    if kind == 5:
        return ""
    if kind in (6, 7):
        return [random_value(rng, depth + 1) for _ in range(rng.randrange(4))]
    return {str(random_value(rng, 5)): random_value(rng, depth + 1) for _ in range(3)}


def random_arrays(rng: random.Random) -> tuple[list[dict], list[bytes]]:
    """Array metadata with random dtypes and shapes, with buffers that may or may not fit."""
    metas, buffers = [], []
    for _ in range(rng.randrange(3)):
        shape = [rng.choice([0, 1, 2, 3, 7, -1, 2**40]) for _ in range(rng.choice([0, 1, 2, 33]))]
        dtype = rng.choice(DTYPE_NAMES)
        metas.append({"dtype": dtype, "shape": shape})
        try:
            nbytes = int(np.prod(shape)) * np.dtype(dtype).itemsize
        except Exception:
            nbytes = rng.randrange(16)
        if not 0 <= nbytes <= 4096 or rng.random() < 0.2:
            nbytes = rng.randrange(64)
        buffers.append(bytes(rng.getrandbits(8) for _ in range(nbytes)))
    return metas, buffers


def valid_frame(rng: random.Random) -> bytes:
    kind = rng.randrange(4)
    rid = rng.randrange(1, 10_000)
    if kind == 0:
        arrays = [np.arange(rng.randrange(50), dtype=rng.choice(["f4", "i8", "u1", "c8"]))]
        return b"".join(
            encode_frame(
                "request",
                {"id": rid, "method": "echo", "kwargs": {"k": random_value(rng, 2)}},
                arrays,
            )
        )
    if kind == 1:
        return b"".join(encode_frame("ping", {"id": rid}))
    if kind == 2:
        return b"".join(encode_frame("cancel", {"id": rid}))
    return b"".join(
        encode_frame("request", {"id": rid, "method": "sleep", "kwargs": {"seconds": 0}})
    )


def intact_mutation(rng: random.Random) -> bytes:
    """A frame whose framing is intact but whose content may be anything."""
    kind = rng.randrange(6)
    if kind == 0:
        return valid_frame(rng)
    if kind == 1:  # random msgpack value as the header
        return frame_bytes(random_value(rng), [])
    if kind == 2:  # random bytes as the header
        return frame_bytes(bytes(rng.getrandbits(8) for _ in range(rng.randrange(1, 40))), [])
    header = {
        "msg": rng.choice(MSG_TYPES),
        "id": random_value(rng, 4),
        "method": rng.choice(["echo", 5, None]),
        "kwargs": random_value(rng, 2),
    }
    if kind == 3:  # drop, add or retype fields
        for key in rng.sample(list(header), rng.randrange(1, 3)):
            header.pop(key)
        header[rng.choice(["extra", "type", "message", "result", "node"])] = random_value(rng)
        return frame_bytes(header, [])
    metas, buffers = random_arrays(rng)  # random dtypes and shapes
    header = {
        "msg": "request",
        "id": rng.randrange(10**6),
        "method": "echo",
        "kwargs": {},
        "arrays": metas,
    }
    return frame_bytes(header, buffers)


def framing_mutation(rng: random.Random) -> bytes:
    """A frame that is likely to break the framing itself."""
    frame = bytearray(valid_frame(rng))
    kind = rng.randrange(6)
    if kind == 0:  # flip bytes anywhere
        for _ in range(rng.randrange(1, 4)):
            frame[rng.randrange(len(frame))] ^= 1 << rng.randrange(8)
        return bytes(frame)
    if kind == 1:  # truncate
        return bytes(frame[: rng.randrange(len(frame))])
    if kind == 2:  # oversized lengths
        return frame_bytes(
            b"\x80",
            [],
            lengths=[rng.choice([2**63, 2**40, 5 << 20])],
            header_len=rng.choice([1, 2**32 - 1]),
        )
    if kind == 3:  # garbage
        return bytes(rng.getrandbits(8) for _ in range(rng.randrange(1, 200)))
    if kind == 4:  # a large array, within the limit, that never arrives in full
        meta = [{"dtype": "float64", "shape": [3 << 17]}]
        header = {"msg": "request", "id": 1, "method": "echo", "kwargs": {}, "arrays": meta}
        return frame_bytes(header, [b"\1" * rng.randrange(1 << 16)], lengths=[3 << 20])
    frame[rng.randrange(4)] ^= 0xFF  # bad magic, version or flags
    return bytes(frame)


MARKER_ID = 10**12


async def fuzz_connection(
    host: str, port: int, rng: random.Random, authenticate: bool, raw_open
) -> tuple[int, int, int]:
    """Send mutated frames on one connection; return (frames sent, processed, error replies).

    On an authenticated connection a marker ping follows the batch: its pong proves that the
    server got through every frame before it. Then comes one frame that may break the
    framing, and the end of the stream.
    """
    peer = await raw_open(host, port, token=TOKEN if authenticate else None)
    frames = [intact_mutation(rng) for _ in range(rng.randrange(60, 120))]
    marker = asyncio.get_running_loop().create_future()
    errors = 0

    async def drain_replies() -> None:
        nonlocal errors
        reader = FrameReader()
        try:
            while data := await peer.reader.read(1 << 16):
                reader.feed(data)
                for event in reader.events:
                    msg = getattr(event, "msg", "")
                    errors += msg == "error"
                    if msg == "pong" and event.fields["id"] == MARKER_ID:
                        marker.set_result(None)
                reader.events.clear()
        except (ConnectionResetError, ProtocolError):
            pass

    replies = asyncio.create_task(drain_replies())
    processed = 0
    try:
        peer.writer.write(b"".join(frames))
        if authenticate:
            peer.writer.write(b"".join(encode_frame("ping", {"id": MARKER_ID})))
            await asyncio.wait_for(marker, 10)
            processed = len(frames)
        last = framing_mutation(rng) if rng.random() < 0.7 else valid_frame(rng)
        peer.writer.write(last)
        await peer.writer.drain()
        peer.writer.write_eof()  # a frame cut short by the mutation ends here
    except OSError:
        pass  # the server already dropped the connection (broken framing, no auth)
    await asyncio.wait_for(replies, 10)
    await peer.close()
    return len(frames) + 1 + authenticate, processed, errors


@pytest.mark.timeout(60)
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc for RSS")
async def test_live_server_survives_10000_mutated_frames(server_process, raw):
    proc = server_process(max_frame_bytes=4 << 20)
    host, port = proc.host, proc.port
    async with await connect(host, port, token=TOKEN) as conn:
        await conn.request("echo", [np.ones(1 << 18)])  # warm up the allocator
    baseline = rss_kib(proc.pid)

    rng = random.Random(1234)
    sent = processed = errors = connections = 0
    while processed < 10_000:
        batch = [
            fuzz_connection(host, port, random.Random(rng.random()), rng.random() < 0.8, raw.open)
            for _ in range(6)
        ]
        for frames, done, errs in await asyncio.gather(*batch):
            sent, processed, errors = sent + frames, processed + done, errors + errs
        connections += len(batch)
    assert errors > processed // 2  # most mutated frames got an error frame back

    async with await connect(host, port, token=TOKEN) as conn:
        result, arrays = await conn.request("echo", [np.arange(10.0)], after="fuzz")
        assert result["method"] == "echo"
        np.testing.assert_array_equal(arrays[0], np.arange(10.0))
    assert proc.proc.poll() is None
    peak = rss_kib(proc.pid, "VmHWM")
    now = rss_kib(proc.pid)
    print(
        f"fuzz: {sent} frames sent on {connections} connections, {processed} processed "
        f"after auth, {errors} error replies; server RSS {baseline} KiB before, "
        f"{now} KiB after, {peak} KiB peak"
    )
    assert peak - baseline < 64 * 1024
    assert now - baseline < 32 * 1024


# --- the pure reader: anything at all raises ProtocolError or decodes ---------------------


def _feed_all(data: bytes, chunk: int) -> None:
    reader = FrameReader(max_frame_bytes=1 << 20, max_header_bytes=1 << 12)
    try:
        for i in range(0, len(data), chunk):
            reader.feed(data[i : i + chunk])
        reader.eof()
    except ProtocolError:
        pass


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=512), st.integers(1, 64))
def test_reader_on_random_bytes(data, chunk):
    _feed_all(MAGIC + bytes([VERSION, 0]) + data if data[:1] == b"\0" else data, chunk)


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 97))
def test_reader_on_mutated_streams(seed, chunk):
    rng = random.Random(seed)
    stream = b"".join(intact_mutation(rng) for _ in range(5)) + framing_mutation(rng)
    _feed_all(stream, chunk)
