"""Shared-token authentication: the pure handshake, live connections, TLS."""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
import ssl
import subprocess

import numpy as np
import pytest

from autograd_async.distributed import AuthenticationError, connect, load_token, serve
from autograd_async.distributed.auth import (
    ClientHandshake,
    ServerHandshake,
    check_token,
    compute_proof,
)
from autograd_async.distributed.errors import ProtocolError
from autograd_async.distributed.wire import encode_frame

from .conftest import TOKEN, write_token

pytestmark = pytest.mark.timeout(30)


class Recorder:
    """An echo handler that remembers every call."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    async def __call__(self, info, method, kwargs, arrays):
        self.calls.append(method)
        return {"peer": info.peer_name}, arrays


# --- tokens -------------------------------------------------------------------------------


def test_load_token_strips_whitespace(tmp_path):
    path = write_token(tmp_path / "token", b"  s3cret-s3cret-s3cret\n")
    assert load_token(path) == b"s3cret-s3cret-s3cret"


def test_load_token_refuses_an_empty_file(tmp_path):
    path = write_token(tmp_path / "token", b"\n")
    with pytest.raises(ValueError, match="is empty"):
        load_token(path)


def test_load_token_refuses_a_short_token(tmp_path):
    path = write_token(tmp_path / "token", b"abc\n")
    with pytest.raises(ValueError, match="at least 16 bytes, got 3"):
        load_token(path)


@pytest.mark.skipif(os.name != "posix", reason="POSIX file modes")
@pytest.mark.parametrize("mode", [0o644, 0o640, 0o604, 0o660])
def test_load_token_refuses_a_file_others_can_read(tmp_path, mode):
    path = write_token(tmp_path / "token")
    path.chmod(mode)
    with pytest.raises(PermissionError, match=f"mode {mode:04o}.*chmod 600"):
        load_token(path)
    path.chmod(0o400)
    assert load_token(path) == TOKEN


def test_check_token():
    assert check_token(bytearray(b"x" * 16)) == b"x" * 16
    with pytest.raises(ValueError, match="at least 16 bytes, got 1 "):
        check_token(b"x")
    with pytest.raises(ValueError, match="at least 16 bytes"):
        check_token(b"x" * 15)
    with pytest.raises(TypeError, match="must be bytes, got str"):
        check_token("text")
    with pytest.raises(ValueError, match="must not be empty"):
        check_token(b"")


# --- the pure handshake -------------------------------------------------------------------


def run_handshake(
    client_token: bytes, server_token: bytes
) -> tuple[ClientHandshake, ServerHandshake]:
    client = ClientHandshake(client_token, "c")
    server = ServerHandshake(server_token, "s")
    assert server.receive("hello", client.hello()) is None
    msg, fields = client.receive("challenge", server.challenge())
    msg, fields = server.receive(msg, fields)
    assert client.receive(msg, fields) is None
    return client, server


def test_handshake_authenticates_both_sides():
    client, server = run_handshake(b"token-0123456789", b"token-0123456789")
    assert client.done and server.done
    assert client.peer_name == "s" and server.peer_name == "c"


def test_handshake_refuses_a_wrong_client_token():
    with pytest.raises(AuthenticationError, match="client 'c' presented a wrong token"):
        run_handshake(b"bad-token-0123456", b"token-0123456789")


def test_client_refuses_a_server_that_cannot_prove_the_token():
    client = ClientHandshake(b"token-0123456789", "c")
    server = ServerHandshake(b"token-0123456789", "s")
    server.receive("hello", client.hello())
    client.receive("challenge", server.challenge())
    with pytest.raises(AuthenticationError, match="could not prove it knows the token"):
        client.receive("auth_ok", {"name": "s", "proof": "00" * 32})


def test_proofs_cannot_be_reflected():
    nonce_s, nonce_c = b"s" * 32, b"c" * 32
    assert compute_proof(b"t", nonce_s, nonce_c, "client") != compute_proof(
        b"t", nonce_s, nonce_c, "server"
    )


def test_handshake_refuses_messages_out_of_order():
    server = ServerHandshake(b"token-0123456789", "s")
    with pytest.raises(ProtocolError, match="'request' received before authentication"):
        server.receive("request", {"id": 1, "method": "m", "kwargs": {}})
    client = ClientHandshake(b"token-0123456789", "c")
    with pytest.raises(ProtocolError, match="expected 'challenge'"):
        client.receive("response", {"id": 1, "result": {}})


def test_handshake_refuses_a_malformed_nonce_and_version():
    server = ServerHandshake(b"token-0123456789", "s")
    server.receive("hello", {"name": "c", "version": 1})
    with pytest.raises(ProtocolError, match="client nonce must be 64 hex digits"):
        server.receive("auth", {"nonce": "zz", "proof": "00"})
    with pytest.raises(ProtocolError, match="protocol version 2"):
        ServerHandshake(b"token-0123456789", "s").receive("hello", {"name": "c", "version": 2})


# --- live connections ---------------------------------------------------------------------


async def test_right_token_works_both_ways(token):
    handler = Recorder()
    async with await serve(handler, token=token, name="srv") as server:
        async with await connect(*server.address, token=token, name="cli") as conn:
            assert conn.peer_name == "srv"
            result, arrays = await conn.request("echo", [np.arange(3)])
            assert result == {"peer": "cli"}
            np.testing.assert_array_equal(arrays[0], np.arange(3))
    assert handler.calls == ["echo"]


async def test_wrong_token_is_refused_and_logged(token, caplog):
    handler = Recorder()
    caplog.set_level(logging.WARNING, logger="autograd_async.distributed")
    async with await serve(handler, token=token, name="srv") as server:
        with pytest.raises(AuthenticationError, match="wrong token"):
            await connect(*server.address, token=b"not-the-token-0123", name="intruder")
        # The server keeps serving the right token afterwards.
        async with await connect(*server.address, token=token) as conn:
            await conn.ping()
    assert handler.calls == []
    assert any("authentication failed for 'intruder'" in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize("stage", ["before-hello", "after-hello"])
async def test_request_before_auth_closes_without_dispatch(token, raw, stage):
    handler = Recorder()
    async with await serve(handler, token=token) as server:
        peer = await raw.open(*server.address, token=None)
        challenge = await peer.recv()
        assert challenge.msg == "challenge"
        if stage == "after-hello":
            peer.send("hello", {"name": "sneaky", "version": 1})
        peer.send("request", {"id": 1, "method": "steal", "kwargs": {}})
        assert await peer.closed_by_peer()
        await peer.close()
        await asyncio.sleep(0.05)
    assert handler.calls == []


async def test_large_frame_before_auth_is_refused(token, raw):
    # Before authentication, frames are capped far below max_frame_bytes.
    async with await serve(Recorder(), token=token) as server:
        peer = await raw.open(*server.address, token=None)
        peer.send_raw(
            b"".join(
                encode_frame("request", {"id": 1, "method": "m", "kwargs": {}}, [np.zeros(1 << 17)])
            )
        )
        assert await peer.closed_by_peer()
        await peer.close()


async def test_silent_client_is_dropped_after_the_handshake_timeout(token, raw):
    async with await serve(Recorder(), token=token, handshake_timeout=0.2) as server:
        peer = await raw.open(*server.address, token=None)
        loop = asyncio.get_running_loop()
        start = loop.time()
        assert await peer.closed_by_peer(timeout=5)
        assert loop.time() - start < 2
        await peer.close()


async def test_client_handshake_times_out_on_a_silent_server(token):
    async def silent(reader, writer):
        await asyncio.sleep(10)

    listener = await asyncio.start_server(silent, "127.0.0.1", 0)
    try:
        host, port = listener.sockets[0].getsockname()[:2]
        with pytest.raises(TimeoutError, match="timed out after 0.2 s"):
            await connect(host, port, token=token, timeout=0.2)
    finally:
        listener.close()


async def test_client_refuses_an_impostor_server(token):
    # A fake server that does not know the token cannot produce the server proof.
    async def impostor(reader, writer):
        shake = ServerHandshake(b"other-token-012345", "impostor")
        writer.writelines(encode_frame("challenge", shake.challenge()))
        await reader.read(65536)
        writer.writelines(encode_frame("auth_ok", {"name": "impostor", "proof": "ab" * 32}))
        await asyncio.sleep(5)

    listener = await asyncio.start_server(impostor, "127.0.0.1", 0)
    try:
        host, port = listener.sockets[0].getsockname()[:2]
        with pytest.raises(
            AuthenticationError, match=r"calling itself 'impostor'\) could not prove"
        ):
            await connect(host, port, token=token, timeout=5)
    finally:
        listener.close()


# --- TLS ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tls_contexts(tmp_path_factory):
    """Server and client SSL contexts around a fresh self-signed certificate."""
    if shutil.which("openssl") is None:
        pytest.skip("openssl CLI not available")
    folder = tmp_path_factory.mktemp("tls")
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "1",
            "-subj",
            "/CN=localhost",
            "-addext",
            "subjectAltName=DNS:localhost,IP:127.0.0.1",
            "-keyout",
            str(key),
            "-out",
            str(cert),
        ],
        check=True,
        capture_output=True,
        timeout=60,
    )
    server_ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_ctx.load_cert_chain(cert, key)
    client_ctx = ssl.create_default_context(cafile=str(cert))
    return server_ctx, client_ctx


async def test_tls_round_trip(token, tls_contexts):
    server_ctx, client_ctx = tls_contexts
    sent = np.random.default_rng(0).standard_normal((256, 256))
    async with await serve(Recorder(), token=token, ssl=server_ctx) as server:
        async with await connect(
            *server.address, token=token, ssl=client_ctx, server_hostname="localhost"
        ) as conn:
            _, arrays = await conn.request("echo", [sent])
    np.testing.assert_array_equal(arrays[0], sent)
