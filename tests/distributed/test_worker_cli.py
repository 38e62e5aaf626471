"""The worker's command line: READY line, signals and clean shutdown, start-up errors."""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import autograd_async as ag
from autograd_async import distributed as dist
from autograd_async.distributed import Client, ConnectionClosedError, RemoteError

from .conftest import REPO, TOKEN, WorkerProcess, start_worker, write_token

pytestmark = pytest.mark.timeout(60)


def run_cli(*args: str, timeout: float = 30) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    return subprocess.run(
        [sys.executable, "-m", "workers", *args],
        capture_output=True,
        text=True,
        cwd=REPO,
        env=env,
        timeout=timeout,
    )


def wait_exit(worker: WorkerProcess, timeout: float = 15) -> int:
    return worker.proc.wait(timeout)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
async def test_signal_finishes_in_flight_requests_then_exits_0(spawn_worker, sig):
    w = spawn_worker("w1")
    async with Client({"w1": w.address}, token=TOKEN, timeout=10.0) as client:
        pending = asyncio.ensure_future(client.call("w1", "sleepy", ag.zeros(3), seconds=1.0))
        await asyncio.sleep(0.3)  # the request is running on the worker
        w.proc.send_signal(sig)
        await asyncio.sleep(0.2)
        with pytest.raises((RemoteError, dist.WorkerLostError), match="shutting down|lost"):
            await client.call("w1", "tanh", ag.zeros(1))  # new requests are refused
        y = await pending  # the reply of the one in flight still arrives
        np.testing.assert_array_equal(y.numpy(), np.ones(3))
    assert await asyncio.to_thread(wait_exit, w) == 0
    assert "Traceback" not in w.log.read_text()


async def test_shutdown_releases_contexts_on_peers(spawn_worker):
    w2 = spawn_worker("w2")
    w1 = spawn_worker("w1", peers={"w2": w2.address})
    async with Client({"w1": w1.address, "w2": w2.address}, token=TOKEN) as client:
        ctx = dist.context(client)
        await ctx.__aenter__()
        await client.call(
            "w1", "tanh_then_peer", ag.ones(2, requires_grad=True), peer="w2", function="tanh"
        )
        assert (await client.stats("w2"))["contexts"] == 1
        w1.proc.terminate()
        assert await asyncio.to_thread(wait_exit, w1) == 0
        assert (await client.stats("w2"))["contexts"] == 0
        ctx.released = True  # w1 is gone; nothing left to release


def test_ready_line_and_console_script(tmp_path):
    token_file = tmp_path / "token"
    write_token(token_file)
    w = start_worker("solo", token_file, tmp_path, devices="sim:1,cpu", load=False)
    try:
        assert w.host == "127.0.0.1" and 0 < w.port < 65536
    finally:
        w.proc.terminate()
        assert w.proc.wait(15) == 0
    script = Path(sys.executable).with_name("autograd-async-worker")
    if not script.exists():
        script = shutil.which("autograd-async-worker")
    if script is None:
        pytest.skip("console script not installed")
    # PYTHONPATH: an editable install made before `workers/` existed maps autograd_async only
    env = dict(os.environ, PYTHONPATH=str(REPO))
    proc = subprocess.Popen(
        [str(script), "--name", "cs", "--token-file", str(token_file)],
        stdout=subprocess.PIPE,
        text=True,
        cwd=REPO,
        env=env,
    )
    try:
        assert proc.stdout.readline().startswith("READY cs 127.0.0.1:")
    finally:
        proc.terminate()
        assert proc.wait(15) == 0


def test_the_checkout_name_is_the_installed_package():
    # `workers/` is the repository's folder; the distribution ships `autograd_async.workers`.
    code = (
        "import workers, workers.registry, workers.ray.cluster, autograd_async.workers as w\n"
        "assert workers.registry is w.registry and workers.ray.cluster is w.ray.cluster\n"
        "assert workers.WorkerServer is w.WorkerServer\n"
        "from workers.__main__ import main; from autograd_async.workers.__main__ import main as m\n"
        "assert main is m\n"
    )
    env = dict(os.environ, PYTHONPATH=str(REPO))
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, env=env, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert (
        run_cli("--help").stdout
        == subprocess.run(
            [sys.executable, "-m", "autograd_async.workers", "--help"],
            capture_output=True,
            text=True,
            cwd=REPO,
            env=env,
            timeout=60,
        ).stdout
    )


def test_startup_errors(tmp_path):
    token_file = tmp_path / "token"
    write_token(token_file)
    base = ["--name", "w", "--token-file", str(token_file)]
    missing = run_cli("--name", "w", "--token-file", str(tmp_path / "absent"))
    assert missing.returncode == 1 and "absent" in missing.stderr and missing.stdout == ""
    bad_module = run_cli(*base, "--load", "no_such_module_here")
    assert bad_module.returncode == 1 and "no_such_module_here" in bad_module.stderr
    assert run_cli(*base, "--peer", "nonsense").returncode == 2
    assert run_cli(*base, "--devices", "tpu:0").returncode == 2
    assert run_cli(*base, "--context-ttl", "0").returncode == 2
    empty = tmp_path / "empty"
    write_token(empty, b"  \n")
    assert "empty" in run_cli("--name", "w", "--token-file", str(empty)).stderr


async def test_closed_client_cannot_call(spawn_worker):
    w = spawn_worker("w1", load=False)
    client = Client({"w1": w.address}, token=TOKEN)
    async with client:
        assert (await client.stats("w1"))["functions"][:2] == ["add", "clone"]
    with pytest.raises(ConnectionClosedError):
        await client.call("w1", "tanh", ag.ones(1))


def test_bad_arguments_exit_2_with_a_usage_line(tmp_path):
    token_file = tmp_path / "token"
    write_token(token_file)
    base = ["--name", "w", "--token-file", str(token_file)]
    loud = run_cli(*base, "--log-level", "LOUD")
    assert loud.returncode == 2 and "Traceback" not in loud.stderr
    assert "invalid choice: 'LOUD'" in loud.stderr
    for name in ("", "  "):
        empty = run_cli("--name", name, "--token-file", str(token_file))
        assert empty.returncode == 2 and "worker name" in empty.stderr, empty.stderr
    # No abbreviations: `--token` is not taken as `--token-file`.
    abbreviated = run_cli("--name", "w", "--token", str(token_file))
    assert abbreviated.returncode == 2 and "--token" in abbreviated.stderr
    assert "unrecognized arguments" in abbreviated.stderr or "required" in abbreviated.stderr


def test_unknown_listen_host_is_named(tmp_path):
    token_file = tmp_path / "token"
    write_token(token_file)
    bad = run_cli(
        "--name", "w", "--token-file", str(token_file), "--listen", "no-such-host.invalid:0"
    )
    assert bad.returncode == 1 and "Traceback" not in bad.stderr
    assert "no-such-host.invalid" in bad.stderr, bad.stderr


def test_help_describes_the_worker():
    shown = run_cli("--help")
    assert shown.returncode == 0
    assert "READY" in shown.stdout and "token" in shown.stdout


def test_plaintext_beyond_loopback_needs_insecure(tmp_path):
    token_file = write_token(tmp_path / "token")
    refused = run_cli("--name", "w", "--token-file", str(token_file), "--listen", "0.0.0.0:0")
    assert refused.returncode == 1 and "Traceback" not in refused.stderr
    assert "without TLS" in refused.stderr and "--insecure" in refused.stderr
    w = start_worker(
        "open", token_file, tmp_path, listen="0.0.0.0:0", load=False, extra=("--insecure",)
    )
    w.proc.terminate()
    assert w.proc.wait(15) == 0


def test_tls_flags_go_together(tmp_path, tls_files):
    token_file = write_token(tmp_path / "token")
    base = ["--name", "w", "--token-file", str(token_file)]
    assert run_cli(*base, "--tls-cert", str(tls_files.cert)).returncode == 2
    assert run_cli(*base, "--tls-ca", str(tls_files.ca)).returncode == 2


async def test_mutual_tls_worker_beyond_loopback(tmp_path, tls_files):
    token_file = write_token(tmp_path / "token")
    w = start_worker(
        "tls",
        token_file,
        tmp_path,
        listen="0.0.0.0:0",
        extra=(
            "--tls-cert",
            str(tls_files.cert),
            "--tls-key",
            str(tls_files.key),
            "--tls-ca",
            str(tls_files.ca),
        ),
    )
    address = {"tls": f"127.0.0.1:{w.port}"}
    try:
        async with Client(
            address,
            token=TOKEN,
            tls_ca=tls_files.ca,
            tls_cert=tls_files.cert,
            tls_key=tls_files.key,
        ) as client:
            y = await client.call("tls", "tanh", ag.zeros(3))
            np.testing.assert_array_equal(y.numpy(), np.zeros(3))
        async with Client(address, token=TOKEN, timeout=5) as plaintext:
            with pytest.raises((dist.WorkerLostError, dist.AuthenticationError)):
                await plaintext.call("tls", "tanh", ag.zeros(3))
        async with Client(address, token=TOKEN, tls_ca=tls_files.ca, timeout=5) as no_cert:
            with pytest.raises((dist.WorkerLostError, dist.AuthenticationError, OSError)):
                await no_cert.call("tls", "tanh", ag.zeros(3))
    finally:
        w.proc.terminate()
        assert w.proc.wait(15) == 0


def test_weak_token_files_are_refused(tmp_path):
    short = write_token(tmp_path / "short", b"abc\n")
    result = run_cli("--name", "w", "--token-file", str(short))
    assert result.returncode == 1 and "at least 16 bytes" in result.stderr
    shared = write_token(tmp_path / "shared")
    shared.chmod(0o644)
    result = run_cli("--name", "w", "--token-file", str(shared))
    assert result.returncode == 1 and "chmod 600" in result.stderr
    assert "Traceback" not in result.stderr
