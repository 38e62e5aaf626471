"""What a hostile or careless peer can do to a server: nesting, idle connections, floods."""

from __future__ import annotations

import asyncio
import logging

import msgpack
import numpy as np
import pytest

from autograd_async.distributed import serve
from autograd_async.distributed.wire import MAGIC, PREFIX, VERSION, BadFrame, FrameReader

from .conftest import TOKEN

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

@pytest.mark.parametrize("header", [
    {"msg": "ping", "id": nested(1000)},
    nested(1000),
    {"msg": "request", "id": 3, "method": "m", "kwargs": {"a": nested(1000)}},
    {"msg": nested(500), "id": 4},
], ids=["in-a-field", "whole-header", "in-kwargs", "as-msg"])
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
            peer.send_raw(hand_made({"msg": "request", "id": 5, "method": nested(1000),
                                     "kwargs": {}}))
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
