"""Frame encoding/decoding and strict header validation (no sockets)."""

from __future__ import annotations

import random
import struct

import msgpack
import numpy as np
import pytest

from autograd_async.distributed.errors import ProtocolError
from autograd_async.distributed.schema import (
    ALLOWED_DTYPES,
    DEFAULT_REGISTRY,
    ArrayIndex,
    MessageRegistry,
    NonNegativeInt,
    register_message,
)
from autograd_async.distributed.wire import (
    MAGIC,
    MAX_BUFFERS,
    PREFIX,
    VERSION,
    BadFrame,
    Frame,
    FrameReader,
    decode_frame,
    encode_frame,
    pack_header,
)

REQUEST = {"id": 7, "method": "f", "kwargs": {}}


def roundtrip(msg: str, fields: dict, arrays=(), **limits) -> Frame:
    return decode_frame(b"".join(encode_frame(msg, fields, arrays)), **limits)


def raw_frame(
    header: object,
    buffers: list[bytes] = (),
    *,
    magic: bytes = MAGIC,
    version: int = VERSION,
    flags: int = 0,
    lengths: list[int] | None = None,
) -> bytes:
    """Build a frame by hand, bypassing the encoder's validation."""
    raw = msgpack.packb(header, use_bin_type=True) if not isinstance(header, bytes) else header
    lengths = [len(b) for b in buffers] if lengths is None else lengths
    prefix = PREFIX.pack(magic, version, flags, len(raw), len(lengths))
    return prefix + b"".join(struct.pack("<Q", n) for n in lengths) + raw + b"".join(buffers)


def request_header(**extra) -> dict:
    return {"msg": "request", **REQUEST, **extra}


def refused(data: bytes, **limits) -> str:
    with pytest.raises(ProtocolError) as info:
        decode_frame(data, **limits)
    return str(info.value)


def sample(dtype: str, shape=(3, 4)) -> np.ndarray:
    rng = np.random.default_rng(0)
    if dtype == "bool":
        return rng.random(shape) > 0.5
    if dtype.startswith("complex"):
        return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)
    if dtype.startswith(("int", "uint")):
        info = np.iinfo(dtype)
        return rng.integers(info.min, info.max, size=shape, dtype=dtype, endpoint=True)
    return rng.standard_normal(shape).astype(dtype)


def assert_received(got: np.ndarray, sent: np.ndarray) -> None:
    assert isinstance(got, np.ndarray)
    assert got.dtype == sent.dtype.newbyteorder("=") or got.dtype == sent.dtype
    assert got.shape == sent.shape
    np.testing.assert_array_equal(got, sent)
    assert got.flags.writeable and got.flags.c_contiguous


# --- round trips -------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", list(ALLOWED_DTYPES))
def test_every_allowed_dtype_round_trips(dtype):
    sent = sample(dtype)
    frame = roundtrip("request", REQUEST, [sent])
    assert_received(frame.arrays[0], sent)


@pytest.mark.parametrize("shape", [(), (0,), (3, 0, 2), (1,) * 32, (5,)])
def test_shapes_round_trip(shape):
    sent = np.arange(int(np.prod(shape)), dtype=np.float64).reshape(shape)
    frame = roundtrip("request", REQUEST, [sent, sent])
    for got in frame.arrays:
        assert_received(got, sent)


def test_large_array_round_trips():
    sent = np.random.default_rng(1).standard_normal(1 << 20)  # 8 MiB of float64
    frame = roundtrip("response", {"id": 1, "result": {"ok": True}}, [sent])
    assert_received(frame.arrays[0], sent)


@pytest.mark.parametrize(
    "make",
    [
        lambda a: a.T,
        lambda a: a[:, ::2],
        lambda a: a[::-1],
        lambda a: np.asfortranarray(a),
        lambda a: a.astype(">f8"),
        lambda a: a.astype(">c16").T,
    ],
    ids=["transposed", "strided", "reversed", "fortran", "big-endian", "big-endian-T"],
)
def test_non_contiguous_and_foreign_byte_order(make):
    sent = make(np.arange(24.0).reshape(4, 6))
    frame = roundtrip("request", REQUEST, [sent])
    assert_received(frame.arrays[0], sent)


def test_scalars_and_lists_are_accepted_as_arrays():
    frame = roundtrip("request", REQUEST, [np.float32(2.5), [1, 2, 3]])
    assert frame.arrays[0].shape == () and frame.arrays[0] == np.float32(2.5)
    np.testing.assert_array_equal(frame.arrays[1], [1, 2, 3])


def test_header_fields_round_trip():
    kwargs = {"a": 1, "b": [1.5, "x", None, True], "c": {"d": {"e": [1, [2, 3]]}}, "t": (1, 2)}
    frame = roundtrip("request", {"id": 3, "method": "m", "kwargs": kwargs})
    assert frame.msg == "request" and frame.id == 3
    assert frame.fields["kwargs"] == {**kwargs, "t": [1, 2]}  # tuples travel as lists
    frame = roundtrip(
        "error",
        {
            "id": None,
            "type": "ValueError",
            "message": "m",
            "node": "n",
            "worker": "w",
            "context_id": 4,
        },
    )
    assert frame.fields["node"] == "n" and frame.id is None


def test_large_arrays_are_sent_without_copying():
    big = np.ones(1 << 20)
    chunks = encode_frame("request", REQUEST, [big])
    view = chunks[-1]
    assert isinstance(view, memoryview) and len(view) == big.nbytes
    assert np.shares_memory(np.frombuffer(view, dtype=np.uint8), big)


def test_reader_handles_any_split_of_a_stream_of_frames():
    frames = [
        encode_frame("request", {**REQUEST, "id": i}, [sample("float32", (i, 100)), np.int8(i)])
        for i in range(20)
    ]
    stream = b"".join(b"".join(f) for f in frames)
    rng = random.Random(0)
    for max_chunk in (1, 7, 4096, 100_000):
        reader = FrameReader()
        pos = 0
        while pos < len(stream):
            step = rng.randint(1, max_chunk)
            reader.feed(stream[pos : pos + step])
            pos += step
        reader.eof()
        got = list(reader.events)
        assert [f.id for f in got] == list(range(20))
        for i, frame in enumerate(got):
            assert_received(frame.arrays[0], sample("float32", (i, 100)))


def test_a_refused_header_does_not_break_the_stream():
    meta = [{"dtype": "float64", "shape": [2]}]
    bad = raw_frame(request_header(method=5, arrays=meta), [b"\0" * 16])
    good = b"".join(encode_frame("ping", {"id": 9}))
    reader = FrameReader()
    reader.feed(bad + good)
    first, second = reader.events
    assert isinstance(first, BadFrame) and first.request_id == 7
    assert "field 'method'" in str(first.error)
    assert isinstance(second, Frame) and second.msg == "ping"


# --- schema errors: each names what is wrong ---------------------------------------------


def test_unknown_message_type():
    assert "unknown message type 'launch'" in refused(raw_frame({"msg": "launch"}))


def test_missing_message_type():
    assert "no 'msg' field" in refused(raw_frame({"id": 1}))


def test_missing_field():
    header = {"msg": "request", "id": 1, "kwargs": {}}
    assert "missing required field 'method'" in refused(raw_frame(header))


def test_wrong_field_type():
    text = refused(raw_frame(request_header(method=42)))
    assert "field 'method'" in text and "must be str" in text and "42" in text


def test_bool_is_not_an_int():
    text = refused(raw_frame(request_header(id=True)))
    assert "field 'id'" in text and "bool True" in text


def test_negative_request_id():
    assert "non-negative int, got -1" in refused(raw_frame(request_header(id=-1)))


def test_extra_unknown_field():
    text = refused(raw_frame(request_header(priority=1)))
    assert "unknown field 'priority'" in text


def test_nested_value_of_wrong_type():
    # An empty bin key passes msgpack's own checks (strict_map_key allows bytes keys).
    text = refused(raw_frame(request_header(kwargs={"a": {"b": [1, {b"": 2}]}})))
    assert "field 'kwargs'" in text and ".a.b[1] has a non-str key bytes b''" in text


def test_wrong_item_type_in_a_typed_list():
    registry = MessageRegistry()
    registry.register("names", required={"names": list[str]})
    text = refused(raw_frame({"msg": "names", "names": ["a", 3]}), registry=registry)
    assert "message 'names', field 'names'[1] must be str, got int 3" in text


def test_non_str_key_in_kwargs():
    text = refused(raw_frame(request_header(kwargs={"a": {1: 2}})))
    assert "map keys must be str" in text


def test_arrays_on_a_message_that_carries_none():
    header = {"msg": "ping", "id": 1, "arrays": [{"dtype": "uint8", "shape": [1]}]}
    assert "carries no arrays" in refused(raw_frame(header, [b"\0"]))


def test_wrong_dtype():
    header = request_header(arrays=[{"dtype": "object", "shape": [1]}])
    text = refused(raw_frame(header, [b"\0" * 8]))
    assert "array 0" in text and "dtype 'object' is not allowed" in text


def test_negative_shape():
    header = request_header(arrays=[{"dtype": "uint8", "shape": [2, -1]}])
    assert "negative dimension -1" in refused(raw_frame(header, [b""]))


def test_too_many_dimensions():
    header = request_header(arrays=[{"dtype": "uint8", "shape": [1] * 33}])
    assert "33 dimensions, more than 32" in refused(raw_frame(header, [b"\0"]))


def test_oversized_shape():
    header = request_header(arrays=[{"dtype": "float64", "shape": [1 << 40, 1 << 40]}])
    text = refused(raw_frame(header, [b"\0" * 8]), max_frame_bytes=1 << 20)
    assert "array 0" in text and "more than the max frame size" in text


def test_shape_does_not_match_buffer_length():
    header = request_header(arrays=[{"dtype": "float32", "shape": [2, 3]}])
    text = refused(raw_frame(header, [b"\0" * 20]))
    assert "needs 24 bytes but the frame declares 20" in text


def test_more_metadata_than_buffers():
    header = request_header(arrays=[{"dtype": "uint8", "shape": [1]}] * 2)
    assert "describes 2 arrays but the frame carries 1" in refused(raw_frame(header, [b"\0"]))


def test_array_metadata_with_unknown_key():
    header = request_header(arrays=[{"dtype": "uint8", "shape": [1], "order": "F"}])
    assert "unknown field 'order'" in refused(raw_frame(header, [b"\0"]))


def test_bool_array_with_invalid_bytes():
    header = request_header(arrays=[{"dtype": "bool", "shape": [2]}])
    assert "other than 0 and 1" in refused(raw_frame(header, [b"\x01\x07"]))


def test_header_over_max_header_size():
    data = raw_frame(request_header(kwargs={"pad": "x" * 5000}))
    assert "exceeds the max header size 4096" in refused(data, max_header_bytes=4096)


def test_frame_over_max_frame_size():
    header = request_header(arrays=[{"dtype": "uint8", "shape": [1 << 30]}])
    text = refused(raw_frame(header, lengths=[1 << 30]), max_frame_bytes=1 << 20)
    assert "exceeds the max frame size 1048576" in text


def test_too_many_buffers():
    data = PREFIX.pack(MAGIC, VERSION, 0, 10, MAX_BUFFERS + 1)
    assert f"{MAX_BUFFERS + 1} buffers" in refused(data)


def test_truncated_frame():
    data = b"".join(encode_frame("request", REQUEST, [np.ones(100)]))
    for cut in (3, PREFIX.size + 4, len(data) - 1):
        assert "connection closed mid-frame" in refused(data[:cut])


def test_bad_magic():
    assert "bad magic b'XY'" in refused(raw_frame(request_header(), magic=b"XY"))


def test_bad_version():
    assert "unsupported protocol version 9" in refused(raw_frame(request_header(), version=9))


def test_unknown_flags():
    assert "unknown frame flags" in refused(raw_frame(request_header(), flags=1))


def test_header_is_not_msgpack():
    assert "not valid msgpack" in refused(raw_frame(b"\xc1"))


def test_header_with_trailing_bytes():
    assert "not valid msgpack" in refused(raw_frame(msgpack.packb(request_header()) + b"\x00"))


def test_header_is_not_a_map():
    assert "header must be a map, got list" in refused(raw_frame([1, 2]))


def test_header_with_ext_type():
    data = raw_frame(msgpack.packb({"msg": "ping", "id": msgpack.ExtType(5, b"")}))
    assert "ext type 5" in refused(data)


def test_header_with_bin_value():
    data = raw_frame(msgpack.packb(request_header(kwargs={"a": b"xyz"}), use_bin_type=True))
    assert "bin) values are not allowed" in refused(data)


def test_header_with_deep_nesting():
    value: object = 1
    for _ in range(40):
        value = [value]
    assert "nested deeper than 16" in refused(raw_frame(request_header(kwargs={"a": value})))


# --- the sender refuses what the receiver would -----------------------------------------


@pytest.mark.parametrize(
    "bad",
    [
        np.array([object()]),
        np.array(["text"]),
        np.zeros(2, dtype="V4"),
        np.zeros(2, dtype=[("a", "f4"), ("b", "i4")]),
        np.array(["2020-01-01"], dtype="datetime64[D]"),
    ],
    ids=["object", "str", "void", "structured", "datetime"],
)
def test_sender_refuses_non_numeric_dtypes(bad):
    with pytest.raises(ProtocolError, match="only numeric dtypes"):
        encode_frame("request", REQUEST, [bad])


def test_sender_refuses_unencodable_kwargs():
    with pytest.raises(ProtocolError, match="cannot be encoded"):
        encode_frame("request", {**REQUEST, "kwargs": {"a": object()}})


def test_sender_refuses_numpy_scalars_in_kwargs():
    with pytest.raises(ProtocolError):
        encode_frame("request", {**REQUEST, "kwargs": {"a": np.float32(1.0)}})


def test_sender_validates_its_own_fields():
    with pytest.raises(ProtocolError, match="missing required field 'method'"):
        encode_frame("request", {"id": 1, "kwargs": {}})


def test_sender_enforces_max_header_size():
    with pytest.raises(ProtocolError, match="max header size"):
        encode_frame("request", {**REQUEST, "kwargs": {"s": "x" * 100}}, max_header_bytes=64)


def test_pack_header_refuses_unsupported_values():
    with pytest.raises(ProtocolError):
        pack_header({"x": {1, 2}})


# --- registry API --------------------------------------------------------------------------


def test_registry_registers_and_validates_new_message_types():
    registry = MessageRegistry()
    registry.register(
        "grads",
        required={"context_id": NonNegativeInt, "slots": list[ArrayIndex], "names": list[str]},
        optional={"note": str | None},
        arrays=True,
    )
    assert "grads" in registry and registry.names() == ["grads"]
    arrays = [np.ones(2), np.zeros(3)]
    fields = {"context_id": 1, "slots": [1, 0], "names": ["a", "b"], "note": None}
    frame = decode_frame(
        b"".join(encode_frame("grads", fields, arrays, registry=registry)), registry=registry
    )
    assert frame.fields == fields and len(frame.arrays) == 2
    with pytest.raises(ProtocolError, match=r"slots'.*\[1\] refers to array 5"):
        encode_frame("grads", {**fields, "slots": [0, 5]}, arrays, registry=registry)
    with pytest.raises(ProtocolError, match="unknown message type 'request'"):
        encode_frame("request", REQUEST, registry=registry)


def test_registry_refuses_bad_declarations():
    registry = MessageRegistry()
    registry.register("a")
    with pytest.raises(ValueError, match="already registered"):
        registry.register("a")
    with pytest.raises(ValueError, match="reserved"):
        registry.register("b", required={"msg": str})
    with pytest.raises(ValueError, match="both required and optional"):
        registry.register("c", required={"x": int}, optional={"x": int})
    with pytest.raises(TypeError, match="unsupported field type"):
        registry.register("d", required={"x": bytes})


def test_default_registry_holds_the_core_messages():
    names = set(DEFAULT_REGISTRY.names())
    core = {
        "hello",
        "challenge",
        "auth",
        "auth_ok",
        "request",
        "response",
        "error",
        "ping",
        "pong",
        "cancel",
    }
    assert core <= names
    with pytest.raises(ValueError):
        register_message("request", required={"id": int})


def test_sender_refuses_reserved_field_names():
    with pytest.raises(ProtocolError, match="reserved"):
        encode_frame("request", {**REQUEST, "msg": "response"})
