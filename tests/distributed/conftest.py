"""Fixtures for the transport tests: both event loops, raw wire peers, a server process."""

from __future__ import annotations

import asyncio
import os
import select
import subprocess
import sys
import textwrap
from pathlib import Path
from types import SimpleNamespace

import pytest

from autograd_async.distributed.auth import ClientHandshake
from autograd_async.distributed.wire import BadFrame, Frame, FrameReader, encode_frame

try:
    import uvloop
except ImportError:  # pragma: no cover - uvloop is a dependency on Linux
    uvloop = None

TOKEN = b"test-token-0123456789"
REPO = Path(__file__).resolve().parents[2]


def pytest_asyncio_loop_factories(config, item):
    """Run connection and auth tests on both the stdlib loop and uvloop."""
    factories = {"asyncio": asyncio.new_event_loop}
    if uvloop is not None and item.path.name in ("test_connection.py", "test_auth.py"):
        factories["uvloop"] = uvloop.new_event_loop
    return factories


class RawPeer:
    """A hand-driven client speaking raw frames, for sending what `Connection` never would."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer
        self.frames = FrameReader()

    def send(self, msg: str, fields: dict, arrays=()) -> None:
        self.writer.writelines(encode_frame(msg, fields, arrays))

    def send_raw(self, data: bytes) -> None:
        self.writer.write(data)

    async def recv(self, timeout: float = 5.0) -> Frame | BadFrame | None:
        """Next frame from the peer, or None at end of stream."""
        async with asyncio.timeout(timeout):
            while not self.frames.events:
                data = await self.reader.read(65536)
                if not data:
                    return None
                self.frames.feed(data)
            return self.frames.events.popleft()

    async def closed_by_peer(self, timeout: float = 5.0) -> bool:
        """Drain until end of stream; True when the peer closed the connection."""
        try:
            async with asyncio.timeout(timeout):
                while await self.reader.read(65536):
                    pass
            return True
        except (ConnectionResetError, BrokenPipeError):
            return True

    async def close(self) -> None:
        self.writer.close()
        try:
            await asyncio.wait_for(self.writer.wait_closed(), 2)
        except (OSError, TimeoutError):
            pass


async def open_raw(host: str, port: int, *, token: bytes | None = TOKEN,
                   name: str = "raw") -> RawPeer:
    """Open a raw connection; authenticate it first when `token` is given."""
    reader, writer = await asyncio.open_connection(host, port)
    peer = RawPeer(reader, writer)
    if token is None:
        return peer
    shake = ClientHandshake(token, name)
    peer.send("hello", shake.hello())
    while not shake.done:
        frame = await peer.recv()
        assert isinstance(frame, Frame), frame
        reply = shake.receive(frame.msg, frame.fields)
        if reply is not None:
            peer.send(*reply)
    return peer


@pytest.fixture
def token() -> bytes:
    return TOKEN


@pytest.fixture
def raw() -> SimpleNamespace:
    """Helpers to speak raw frames: `await raw.open(host, port, token=...)`."""
    return SimpleNamespace(open=open_raw, Frame=Frame, BadFrame=BadFrame)


_SERVER_SCRIPT = textwrap.dedent(
    """
    import asyncio, logging, os, sys
    import numpy as np
    import uvloop
    from autograd_async.distributed import serve

    async def handler(info, method, kwargs, arrays):
        if method == "sleep":
            await asyncio.sleep(kwargs.get("seconds", 0))
        return {"method": method, "peer": info.peer_name}, arrays

    async def main():
        logging.basicConfig(level=logging.ERROR)  # thousands of refusals are expected
        server = await serve(handler, token=os.environb[b"AG_TOKEN"], name="proc",
                             max_frame_bytes=int(sys.argv[1]), handshake_timeout=5.0)
        print(server.address[1], flush=True)
        await asyncio.Event().wait()

    uvloop.run(main())
    """
)


def rss_kib(pid: int, field: str = "VmRSS") -> int:
    """Resident memory of a process in KiB, from /proc."""
    with open(f"/proc/{pid}/status") as fh:
        for line in fh:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"{field} not found")


@pytest.fixture
def server_process():
    """Start an echo server in its own process; yields a function (max_frame_bytes) -> info."""
    procs: list[subprocess.Popen] = []

    def start(max_frame_bytes: int = 1 << 30) -> SimpleNamespace:
        env = dict(os.environ, AG_TOKEN=TOKEN.decode(), PYTHONPATH=str(REPO))
        proc = subprocess.Popen(
            [sys.executable, "-c", _SERVER_SCRIPT, str(max_frame_bytes)],
            stdout=subprocess.PIPE, env=env, text=True,
        )
        procs.append(proc)
        ready, _, _ = select.select([proc.stdout], [], [], 30)
        line = proc.stdout.readline() if ready else ""
        if not line:
            raise RuntimeError("server process did not start")
        return SimpleNamespace(proc=proc, pid=proc.pid, host="127.0.0.1", port=int(line))

    yield start
    for proc in procs:
        proc.kill()
        proc.wait(5)
