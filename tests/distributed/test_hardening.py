"""What a hostile or careless peer can do to a server: nesting, idle connections, floods."""

from __future__ import annotations

import asyncio
import logging

import msgpack
import numpy as np
import pytest

from autograd_async.distributed import (
    AuthenticationError,
    Client,
    WorkerLostError,
    connect,
    serve,
)
from autograd_async.distributed.ratelimit import LogLimiter
from autograd_async.distributed.tls import client_context, is_loopback, server_context
from autograd_async.distributed.wire import MAGIC, PREFIX, VERSION, BadFrame, FrameReader

from .conftest import TOKEN, rss_kib

pytestmark = pytest.mark.timeout(60)


async def echo(info, method, kwargs, arrays):
    return {"method": method}, arrays


def nested(depth: int) -> object:
    value: object = 1
    for _ in range(depth):
        value = [value]
    return value


def hand_made(header: object) -> bytes:
    raw = msgpack.packb(header)
    return PREFIX.pack(MAGIC, VERSION, 0, len(raw), 0) + raw


# --- 4. nesting ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "header",
    [
        {"msg": "ping", "id": nested(1000)},
        nested(1000),
        {"msg": "request", "id": 3, "method": "m", "kwargs": {"a": nested(1000)}},
        {"msg": nested(500), "id": 4},
    ],
    ids=["in-a-field", "whole-header", "in-kwargs", "as-msg"],
)
def test_deep_nesting_is_a_per_frame_refusal(header):
    reader = FrameReader()
    reader.feed(hand_made(header) + hand_made({"msg": "ping", "id": 9}))
    bad, good = reader.events
    assert isinstance(bad, BadFrame) and "nested deeper than" in str(bad.error)
    assert good.msg == "ping" and good.id == 9  # the stream goes on


def test_a_refused_deep_header_keeps_its_request_id():
    reader = FrameReader()
    reader.feed(hand_made({"msg": "request", "id": 3, "method": "m", "kwargs": nested(900)}))
    assert reader.events[0].request_id == 3


async def test_nested_header_after_auth_gets_an_error_frame(raw):
    async with await serve(echo, token=TOKEN) as server:
        peer = await raw.open(*server.address)
        for _ in range(3):
            peer.send_raw(
                hand_made({"msg": "request", "id": 5, "method": nested(1000), "kwargs": {}})
            )
            error = await peer.recv()
            assert error.msg == "error" and error.fields["id"] == 5
            assert error.fields["type"] == "ProtocolError"
        peer.send("request", {"id": 6, "method": "echo", "kwargs": {}}, [np.ones(2)])
        response = await peer.recv()
        assert response.msg == "response" and response.fields["id"] == 6
        await peer.close()


async def test_nested_header_before_auth_closes_without_a_traceback(raw, caplog):
    caplog.set_level(logging.DEBUG)
    async with await serve(echo, token=TOKEN) as server:
        peer = await raw.open(*server.address, token=None)
        peer.send_raw(hand_made({"msg": "hello", "name": nested(1000), "version": 1}) * 20)
        assert await peer.closed_by_peer()
        await peer.close()
        await asyncio.sleep(0.05)
    assert not [r for r in caplog.records if r.exc_info or "Fatal" in r.getMessage()]
    assert not [r for r in caplog.records if "RecursionError" in r.getMessage()]


# --- 5. idle strangers ---------------------------------------------------------------------


async def test_idle_unauthenticated_connections_cost_little_memory(server_process):
    proc = server_process(max_handshakes=1000)
    peers = [await asyncio.open_connection(proc.host, proc.port) for _ in range(20)]
    await asyncio.sleep(0.3)
    before = rss_kib(proc.pid)
    count = 400
    peers += [await asyncio.open_connection(proc.host, proc.port) for _ in range(count)]
    for reader, _ in peers[-count:]:  # each got its challenge: the server saw the connection
        assert await asyncio.wait_for(reader.read(1), 5)
    grown = rss_kib(proc.pid) - before
    for _, writer in peers:
        writer.close()
    # 256 KiB of zero-filled staging per connection before; a few KiB of objects now.
    assert grown < count * 64, f"{grown} KiB for {count} idle connections"


async def test_pending_handshakes_are_capped(raw):
    async with await serve(echo, token=TOKEN, max_handshakes=3) as server:
        idle = [await raw.open(*server.address, token=None) for _ in range(3)]
        for peer in idle:
            assert (await peer.recv()).msg == "challenge"
        refused = await raw.open(*server.address, token=None)
        assert await refused.closed_by_peer()
        await refused.close()
        assert server.handshaking == 3 and server.connection_count == 3
        await idle[0].close()
        for _ in range(50):
            if server.handshaking < 3:
                break
            await asyncio.sleep(0.02)
        ok = await raw.open(*server.address)  # a slot is free again: the handshake completes
        ok.send("ping", {"id": 1})
        assert (await ok.recv()).msg == "pong"
        assert server.handshaking == 2
        for peer in (*idle[1:], ok):
            await peer.close()


async def test_handshake_failures_are_logged_at_a_bounded_rate(caplog):
    caplog.set_level(logging.WARNING, logger="autograd_async.distributed")
    async with await serve(echo, token=TOKEN) as server:
        for _ in range(30):
            with pytest.raises(AuthenticationError):
                await connect(*server.address, token=b"x" * 16 + b"wrong")
    warnings = [r for r in caplog.records if r.name == "autograd_async.distributed"]
    assert 1 <= len(warnings) <= 11


def test_log_limiter_counts_what_it_suppresses(caplog):
    now = [0.0]
    limiter = LogLimiter(
        logging.getLogger("limiter-test"), burst=2, period=10, clock=lambda: now[0]
    )
    caplog.set_level(logging.WARNING, logger="limiter-test")
    assert [limiter.warning("failure %d", i) for i in range(5)] == [True, True, False, False, False]
    now[0] = 10.0
    assert limiter.warning("failure again")
    messages = [r.getMessage() for r in caplog.records]
    assert messages == [
        "failure 0",
        "failure 1",
        "3 similar messages suppressed since the last report",
        "failure again",
    ]


# --- 6. transport security -------------------------------------------------------------------


async def test_plaintext_beyond_loopback_needs_insecure(tls_files):
    with pytest.raises(ValueError, match="refusing to listen on '0.0.0.0' without TLS"):
        await serve(echo, "0.0.0.0", token=TOKEN)
    with pytest.raises(ValueError, match="without TLS"):
        await serve(echo, "", token=TOKEN)
    async with await serve(echo, "0.0.0.0", token=TOKEN, insecure=True) as server:
        async with await connect("127.0.0.1", server.address[1], token=TOKEN) as conn:
            assert (await conn.request("echo"))[0] == {"method": "echo"}
    ctx = server_context(tls_files.cert, tls_files.key)
    async with await serve(echo, "0.0.0.0", token=TOKEN, ssl=ctx) as server:
        async with await connect(
            "127.0.0.1", server.address[1], token=TOKEN, ssl=client_context(tls_files.ca)
        ) as conn:
            assert (await conn.request("echo"))[0] == {"method": "echo"}
    for host in ("127.0.0.1", "::1", "localhost", "127.3.4.5"):
        assert is_loopback(host), host
    assert not is_loopback("0.0.0.0") and not is_loopback("10.1.2.3")


async def test_the_server_names_itself_only_to_a_peer_that_proved_the_token(raw):
    async with await serve(echo, token=TOKEN, name="secret-worker-name") as server:
        stranger = await raw.open(*server.address, token=None)
        stranger.send("hello", {"name": "stranger", "version": 1})
        challenge = await stranger.recv()
        assert challenge.msg == "challenge" and set(challenge.fields) == {"nonce", "version"}
        stranger.send("auth", {"nonce": "00" * 32, "proof": "00" * 32})
        refusal = await stranger.recv()
        assert refusal.msg == "error" and "secret-worker-name" not in str(refusal.fields)
        await stranger.close()
        async with await connect(*server.address, token=TOKEN) as conn:
            assert conn.peer_name == "secret-worker-name"  # learnt from auth_ok


async def test_mutual_tls_with_client_options(tls_files):
    ctx = server_context(tls_files.cert, tls_files.key, ca=tls_files.ca)
    async with await serve(echo, token=TOKEN, name="w1", ssl=ctx) as server:
        address = {"w1": f"127.0.0.1:{server.address[1]}"}
        async with Client(
            address,
            token=TOKEN,
            tls_ca=tls_files.ca,
            tls_cert=tls_files.cert,
            tls_key=tls_files.key,
        ) as client:
            result, _ = await client.request("w1", "stats")
            assert result == {"method": "stats"}
        async with Client(address, token=TOKEN, tls_ca=tls_files.ca, timeout=5) as no_cert:
            with pytest.raises((WorkerLostError, AuthenticationError, OSError)):
                await no_cert.request("w1", "stats")
        async with Client(address, token=TOKEN, timeout=5) as plaintext:
            with pytest.raises((WorkerLostError, AuthenticationError)):
                await plaintext.request("w1", "stats")
    with pytest.raises(ValueError, match="not both"):
        Client(address, token=TOKEN, ssl=client_context(), tls_ca=tls_files.ca)
    with pytest.raises(ValueError, match="both cert and key"):
        Client(address, token=TOKEN, tls_cert=tls_files.cert)


async def test_short_tokens_are_refused_everywhere():
    short = b"abc"
    with pytest.raises(ValueError, match="at least 16 bytes, got 3"):
        Client({}, token=short)
    with pytest.raises(ValueError, match="at least 16 bytes, got 3"):
        await serve(echo, token=short)
    with pytest.raises(ValueError, match="at least 16 bytes, got 3"):
        await connect("127.0.0.1", 9, token=short)
