"""Fixtures for the transport tests: both event loops, raw wire peers, a server process."""

from __future__ import annotations

import asyncio
import os
import select
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from autograd_async import distributed as dist
from autograd_async.distributed import Client
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
    if uvloop is not None and item.path.name in (
        "test_connection.py",
        "test_auth.py",
        "test_hardening.py",
    ):
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


async def open_raw(
    host: str, port: int, *, token: bytes | None = TOKEN, name: str = "raw"
) -> RawPeer:
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


def write_token(path: Path, data: bytes = TOKEN) -> Path:
    """Write a token file readable by its owner only (load_token refuses any other)."""
    path.write_bytes(data)
    path.chmod(0o600)
    return path


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True, timeout=60)


@pytest.fixture(scope="session")
def tls_files(tmp_path_factory) -> SimpleNamespace:
    """A test CA and a certificate it signed for localhost/127.0.0.1, usable by servers and
    clients (both extended key usages), made with the openssl CLI; skips without it."""
    if shutil.which("openssl") is None:
        pytest.skip("the openssl CLI is needed to make test certificates")
    folder = tmp_path_factory.mktemp("tls")
    ec = ("-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes")
    _openssl(
        "req",
        "-x509",
        *ec,
        "-days",
        "2",
        "-subj",
        "/CN=autograd-async test CA",
        "-addext",
        "basicConstraints=critical,CA:TRUE",
        "-addext",
        "keyUsage=critical,keyCertSign,cRLSign",
        "-keyout",
        "ca.key",
        "-out",
        "ca.pem",
        cwd=folder,
    )
    (folder / "leaf.ext").write_text(
        "subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth,clientAuth\n"
    )
    _openssl(
        "req", *ec, "-subj", "/CN=localhost", "-keyout", "leaf.key", "-out", "leaf.csr", cwd=folder
    )
    _openssl(
        "x509",
        "-req",
        "-in",
        "leaf.csr",
        "-CA",
        "ca.pem",
        "-CAkey",
        "ca.key",
        "-set_serial",
        "2",
        "-days",
        "2",
        "-extfile",
        "leaf.ext",
        "-out",
        "leaf.pem",
        cwd=folder,
    )
    for key in ("ca.key", "leaf.key"):
        (folder / key).chmod(0o600)
    return SimpleNamespace(ca=folder / "ca.pem", cert=folder / "leaf.pem", key=folder / "leaf.key")


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
                             max_frame_bytes=int(sys.argv[1]), handshake_timeout=5.0,
                             max_handshakes=int(sys.argv[2]))
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
    """Start an echo server in its own process; yields a function (max_frame_bytes,
    max_handshakes) -> info."""
    procs: list[subprocess.Popen] = []

    def start(max_frame_bytes: int = 1 << 30, max_handshakes: int = 64) -> SimpleNamespace:
        env = dict(os.environ, AG_TOKEN=TOKEN.decode(), PYTHONPATH=str(REPO))
        proc = subprocess.Popen(
            [sys.executable, "-c", _SERVER_SCRIPT, str(max_frame_bytes), str(max_handshakes)],
            stdout=subprocess.PIPE,
            env=env,
            text=True,
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


# --- real worker processes (`python -m autograd_async.workers`) ------------------------

WORKER_LOAD = "tests.distributed.worker_functions"


class WorkerProcess:
    """A worker started as `python -m autograd_async.workers`, its address read from READY."""

    def __init__(self, proc: subprocess.Popen, name: str, host: str, port: int, log: Path) -> None:
        self.proc, self.name, self.host, self.port, self.log = proc, name, host, port, log

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def pid(self) -> int:
        return self.proc.pid

    def kill(self) -> None:
        """SIGKILL, and reap."""
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(10)


def start_worker(
    name: str,
    token_file: Path,
    log_dir: Path,
    *,
    devices: str = "cpu,sim:0",
    peers: dict[str, str] | None = None,
    load: bool = True,
    listen: str = "127.0.0.1:0",
    extra: tuple[str, ...] = (),
    timeout: float = 30.0,
) -> WorkerProcess:
    """Start one worker process and wait for its READY line."""
    cmd = [
        sys.executable,
        "-m",
        "autograd_async.workers",
        "--listen",
        listen,
        "--name",
        name,
        "--devices",
        devices,
        "--token-file",
        str(token_file),
        *extra,
    ]
    for peer, address in (peers or {}).items():
        cmd += ["--peer", f"{peer}={address}"]
    if load:
        cmd += ["--load", WORKER_LOAD]
    log = log_dir / f"{name}-{os.urandom(3).hex()}.log"
    env = dict(os.environ, PYTHONPATH=str(REPO))
    with open(log, "wb") as err:
        proc = subprocess.Popen(
            cmd, stdout=subprocess.PIPE, stderr=err, cwd=REPO, env=env, text=True
        )
    ready, _, _ = select.select([proc.stdout], [], [], timeout)
    line = proc.stdout.readline() if ready else ""
    parts = line.split()
    if len(parts) != 3 or parts[0] != "READY" or parts[1] != name:
        proc.kill()
        proc.wait(5)
        raise RuntimeError(f"worker {name} did not start: {line!r}\n{log.read_text()}")
    host, _, port = parts[2].rpartition(":")
    return WorkerProcess(proc, name, host, int(port), log)


class WorkerFactory:
    """Starts workers for a test (or a module) and kills whatever is left at teardown."""

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.token_file = tmp / "token"
        write_token(self.token_file, TOKEN + b"\n")
        self.started: list[WorkerProcess] = []

    def __call__(self, name: str, **kwargs) -> WorkerProcess:
        worker = start_worker(name, self.token_file, self.tmp, **kwargs)
        self.started.append(worker)
        return worker

    def close(self) -> None:
        for worker in self.started:
            worker.kill()


@pytest.fixture
def spawn_worker(tmp_path):
    """`spawn_worker(name, peers=..., ...)` starts a worker process, killed at teardown."""
    factory = WorkerFactory(tmp_path)
    yield factory
    factory.close()


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """Three workers for a whole test module: w3; w2 (peer w3); w1 (peers w2, w3)."""
    factory = WorkerFactory(tmp_path_factory.mktemp("cluster"))
    w3 = factory("w3")
    w2 = factory("w2", peers={"w3": w3.address})
    w1 = factory("w1", peers={"w2": w2.address, "w3": w3.address})
    yield SimpleNamespace(
        w1=w1, w2=w2, w3=w3, token=TOKEN, addresses={w.name: w.address for w in (w1, w2, w3)}
    )
    factory.close()


@pytest.fixture
async def client(cluster):
    """A client of the module's cluster, closed after the test."""
    async with Client(cluster.addresses, token=cluster.token, timeout=10.0) as c:
        yield c


async def train_like_local(client, pairs, opt, local_opt, inputs) -> None:
    """Train two remote modules in a distributed context beside the same two modules locally,
    one step per input: the losses agree at every step and the parameters at the end.

    `pairs` is ((remote_first, local_first), (remote_second, local_second)); the model is
    `second(first(x).relu())` with the mean square as the loss."""
    (r1, first), (r2, second) = pairs
    for x in inputs:
        async with dist.context(client) as ctx:
            loss = (await r2((await r1(x)).relu())).square().mean()
            await dist.backward(ctx, [loss])
            await opt.step(ctx)
        local_opt.zero_grad()
        local_loss = second(first(x).relu()).square().mean()
        local_loss.backward()
        local_opt.step()
        assert abs(loss.item() - local_loss.item()) < 1e-5
    for rm, module in pairs:
        state = await rm.state_dict()
        for name, value in module.state_dict().items():
            np.testing.assert_allclose(state[name].numpy(), value.numpy(), rtol=1e-5, atol=1e-6)
