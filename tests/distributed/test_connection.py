"""Connections: request/response, multiplexing, errors, cancellation, loss, lifecycle."""

from __future__ import annotations

import asyncio
import random
import signal

import numpy as np
import pytest

from autograd_async.distributed import (
    ConnectionClosedError,
    ConnectionState,
    ProtocolError,
    RemoteError,
    WorkerLostError,
    connect,
    serve,
)
from autograd_async.distributed.wire import MAGIC, PREFIX

pytestmark = pytest.mark.timeout(30)


class NodeFailure(RuntimeError):
    """An error that says where it happened, like the autograd layer's will."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.node = "MulBackward0"
        self.worker = "worker-3"
        self.context_id = 17


async def handler(info, method, kwargs, arrays):
    """Test handler: methods named after what they do."""
    if method == "echo":
        return {"kwargs": kwargs, "peer": info.peer_name}, arrays
    if method == "sleep":
        await asyncio.sleep(kwargs["seconds"])
        return {"i": kwargs.get("i")}, [np.full(3, kwargs.get("i", 0))]
    if method == "fail":
        raise ValueError(f"bad value {kwargs.get('x')}")
    if method == "node-failure":
        raise NodeFailure("backward failed")
    if method == "bad-return":
        return "not a tuple"
    if method == "unencodable":
        return {"x": object()}, []
    if method == "sum":
        return {"sum": float(sum(a.sum() for a in arrays))}, []
    raise KeyError(method)


async def open_pair(**server_kwargs):
    server = await serve(handler, token=b"token-0123456789", name="srv", **server_kwargs)
    conn = await connect(*server.address, token=b"token-0123456789", name="cli")
    return server, conn


async def test_request_round_trip():
    server, conn = await open_pair()
    async with server, conn:
        sent = [np.arange(6, dtype=np.int16).reshape(2, 3), np.float64(1.5), np.zeros((0, 4))]
        result, arrays = await conn.request("echo", sent, a=1, nested={"b": [1, "x"]})
        assert result == {"kwargs": {"a": 1, "nested": {"b": [1, "x"]}}, "peer": "cli"}
        for got, want in zip(arrays, sent, strict=True):
            np.testing.assert_array_equal(got, want)
            assert got.flags.writeable
        # kwargs named like the call's own parameters go through `call`.
        result, _ = await conn.call("echo", {"method": "m", "arrays": 1, "timeout": 2})
        assert result["kwargs"] == {"method": "m", "arrays": 1, "timeout": 2}
        assert await conn.ping() >= 0


async def test_uses_the_running_loops_transports():
    server, conn = await open_pair()
    async with server, conn:
        loop_is_uvloop = type(asyncio.get_running_loop()).__module__.startswith("uvloop")
        transport = conn._protocol.transport
        assert type(transport).__module__.startswith("uvloop") == loop_is_uvloop


async def test_200_concurrent_requests_are_matched_to_their_ids():
    server, conn = await open_pair()
    rng = random.Random(0)
    async with server, conn:
        calls = [conn.request("sleep", seconds=rng.uniform(0, 0.05), i=i) for i in range(200)]
        results = await asyncio.gather(*calls)
        for i, (result, arrays) in enumerate(results):
            assert result == {"i": i}
            np.testing.assert_array_equal(arrays[0], np.full(3, i))
        assert conn.pending_count == 0


async def test_a_slow_request_does_not_block_others():
    server, conn = await open_pair()
    async with server, conn:
        slow = asyncio.create_task(conn.request("sleep", seconds=30))
        await conn.request("echo")
        assert not slow.done()  # the echo was answered while the slow request still ran
        slow.cancel()


async def test_handler_exceptions_become_remote_errors():
    server, conn = await open_pair()
    async with server, conn:
        with pytest.raises(RemoteError) as info:
            await conn.request("fail", x=3)
        assert info.value.remote_type == "ValueError"
        assert info.value.message == "bad value 3"
        assert info.value.worker == "srv"
        with pytest.raises(RemoteError) as info:
            await conn.request("node-failure")
        err = info.value
        assert (err.remote_type, err.node, err.worker, err.context_id) == (
            "NodeFailure",
            "MulBackward0",
            "worker-3",
            17,
        )
        assert "MulBackward0" in str(err) and "worker-3" in str(err)
        with pytest.raises(RemoteError, match="handler must return"):
            await conn.request("bad-return")
        with pytest.raises(RemoteError, match="ProtocolError: header cannot be encoded"):
            await conn.request("unencodable")
        with pytest.raises(RemoteError, match="KeyError"):
            await conn.request("no-such-method")
        # The connection is still fine after all of that.
        assert (await conn.request("sum", [np.ones(4)]))[0] == {"sum": 4.0}


async def test_local_encoding_errors_leave_the_connection_usable():
    server, conn = await open_pair()
    async with server, conn:
        with pytest.raises(ProtocolError, match="only numeric dtypes"):
            await conn.request("echo", [np.array(["text"])])
        with pytest.raises(ProtocolError, match="cannot be encoded"):
            await conn.request("echo", x={1, 2})
        assert conn.pending_count == 0
        await conn.request("echo")


async def test_timeout_cancels_the_remote_handler():
    cancelled = asyncio.Event()

    async def slow(info, method, kwargs, arrays):
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return {}, []

    async with await serve(slow, token=b"token-0123456789") as server:
        async with await connect(*server.address, token=b"token-0123456789") as conn:
            with pytest.raises(TimeoutError, match="got no answer within 0.1 s"):
                await conn.call("slow", timeout=0.1)
            await asyncio.wait_for(cancelled.wait(), 5)
            # A cancelled local task also cancels its remote handler.
            cancelled.clear()
            task = asyncio.create_task(conn.request("slow"))
            await asyncio.sleep(0.1)
            task.cancel()
            await asyncio.wait_for(cancelled.wait(), 5)
            assert conn.pending_count == 0


async def test_server_close_fails_pending_requests_promptly():
    server, conn = await open_pair()
    conn.request_timeout = 30
    calls = [asyncio.create_task(conn.request("sleep", seconds=20)) for _ in range(5)]
    await asyncio.sleep(0.1)
    loop = asyncio.get_running_loop()
    start = loop.time()
    await server.aclose()
    for call in calls:
        with pytest.raises(WorkerLostError) as info:
            await call
        assert info.value.worker == "srv"
    # Failed by the close, not by the handlers' 20 s or the 30 s timeout (10 s: loaded machines).
    assert loop.time() - start < 10
    assert conn.state is ConnectionState.CLOSED
    with pytest.raises(WorkerLostError):
        await conn.request("echo")
    await conn.aclose()


async def test_killed_server_process_fails_pending_requests_promptly(server_process):
    proc = server_process()
    conn = await connect(proc.host, proc.port, token=b"test-token-0123456789", request_timeout=30)
    calls = [asyncio.create_task(conn.request("sleep", seconds=20)) for _ in range(3)]
    await asyncio.sleep(0.2)
    loop = asyncio.get_running_loop()
    start = loop.time()
    proc.proc.send_signal(signal.SIGKILL)
    results = await asyncio.gather(*calls, return_exceptions=True)
    assert all(isinstance(r, WorkerLostError) and r.worker == "proc" for r in results)
    # Failed by the kill, not by the handlers' 20 s or the 30 s timeout (10 s: loaded machines).
    assert loop.time() - start < 10
    await conn.aclose()


async def test_bad_frame_gets_an_error_and_the_stream_continues(raw):
    server = await serve(handler, token=b"token-0123456789")
    async with server:
        peer = await raw.open(*server.address, token=b"token-0123456789")
        # Framing intact, header wrong: an error frame names the problem, the stream goes on.
        peer.send_raw(_hand_made({"msg": "request", "id": 5, "method": 1, "kwargs": {}}))
        error = await peer.recv()
        assert error.msg == "error" and error.fields["id"] == 5
        assert error.fields["type"] == "ProtocolError"
        assert "field 'method'" in error.fields["message"]
        peer.send("request", {"id": 6, "method": "echo", "kwargs": {}})
        response = await peer.recv()
        assert response.msg == "response" and response.fields["id"] == 6
        # A message the server does not take from clients.
        peer.send("pong", {"id": 8})
        error = await peer.recv()
        assert "unexpected message type 'pong'" in error.fields["message"]
        # A duplicate id while the first is still running.
        peer.send("request", {"id": 9, "method": "sleep", "kwargs": {"seconds": 0.3}})
        peer.send("request", {"id": 9, "method": "echo", "kwargs": {}})
        error = await peer.recv()
        assert "request id 9 is already in flight" in error.fields["message"]
        # Broken framing: the server drops this connection, and only this one.
        other = await connect(*server.address, token=b"token-0123456789")
        peer.send_raw(b"XX" + b"\0" * 40)
        assert await peer.closed_by_peer()
        await peer.close()
        assert (await other.request("echo", x=1))[0]["kwargs"] == {"x": 1}
        await other.aclose()


def _hand_made(header: dict) -> bytes:
    import msgpack

    raw = msgpack.packb(header)
    return PREFIX.pack(MAGIC, 1, 0, len(raw), 0) + raw


async def test_backpressure_with_a_small_pending_limit():
    server, conn = await open_pair(max_pending=4)
    async with server, conn:
        calls = [conn.request("sleep", seconds=0.01, i=i) for i in range(50)]
        results = await asyncio.gather(*calls)
        assert [r["i"] for r, _ in results] == list(range(50))


async def test_large_arrays_both_ways():
    server, conn = await open_pair()
    async with server, conn:
        sent = np.random.default_rng(0).standard_normal((1024, 1024)).astype(np.float32)
        for _ in range(3):
            _, arrays = await conn.request("echo", [sent, sent.T])
            np.testing.assert_array_equal(arrays[0], sent)
            np.testing.assert_array_equal(arrays[1], sent.T)


async def test_frame_larger_than_the_servers_limit_is_refused():
    server, conn = await open_pair(max_frame_bytes=1 << 16)
    async with server, conn:
        # The client's own limit is larger, so the server's refusal is what we see.
        with pytest.raises(WorkerLostError, match="lost connection"):
            await conn.request("echo", [np.zeros(1 << 14)])


async def test_lifecycle_states_and_use_after_close():
    server, conn = await open_pair()
    assert server.state is ConnectionState.OPEN and conn.state is ConnectionState.OPEN
    assert "open" in repr(conn) and "open" in repr(server)
    await conn.aclose()
    assert conn.state is ConnectionState.CLOSED
    with pytest.raises(ConnectionClosedError, match="is closed"):
        await conn.request("echo")
    with pytest.raises(ConnectionClosedError):
        async with conn:
            pass
    await conn.aclose()  # idempotent
    await server.aclose()
    assert server.state is ConnectionState.CLOSED
    with pytest.raises(ConnectionClosedError, match="closed"):
        server.address  # noqa: B018
    with pytest.raises(ConnectionClosedError):
        await server.start()


async def test_local_close_fails_pending_requests():
    server, conn = await open_pair()
    async with server:
        call = asyncio.create_task(conn.request("sleep", seconds=10))
        await asyncio.sleep(0.05)
        conn.close()
        with pytest.raises(ConnectionClosedError, match="closed locally"):
            await call
        await conn.wait_closed()
        await asyncio.sleep(0.05)
        assert server.connection_count == 0
