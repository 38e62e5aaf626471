"""The frame format: a fixed little-endian prefix, a msgpack header, raw array buffers.

    prefix   magic b"AG" | version u8 | flags u8 (0) | header length u32 | buffer count u16
    lengths  one u64 per buffer
    header   msgpack map, validated by `schema` (message type, fields, array dtypes/shapes)
    buffers  the arrays' bytes, C order, little-endian, back to back

Arrays never go through msgpack: the sender hands memoryviews of them to the transport and
`FrameReader` hands the transport slices of new (or, for large ones, pooled: see pool.py)
arrays to read into. The reader is plain synchronous code (no sockets, no loop) so that it can
be tested and fuzzed directly; `FrameProtocol` drives it as an `asyncio.BufferedProtocol`.
"""

from __future__ import annotations

import asyncio
import logging
import struct
import sys
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

import numpy as np

from .errors import ConnectionClosedError, DistributedError, ProtocolError, ResourceExhausted
from .header import MAX_HEADER_DEPTH, check_depth, decode_msgpack, pack_header, unpack_header
from .pool import ReceivePool
from .schema import ALLOWED_DTYPES, DEFAULT_REGISTRY, MessageRegistry, wire_dtype_name

__all__ = [
    "DEFAULT_MAX_FRAME_BYTES",
    "DEFAULT_MAX_HEADER_BYTES",
    "MAGIC",
    "MAX_HEADER_DEPTH",
    "MAX_BUFFERS",
    "PREFIX",
    "VERSION",
    "BadFrame",
    "Frame",
    "FrameProtocol",
    "FrameReader",
    "decode_frame",
    "encode_frame",
    "pack_header",
    "unpack_header",
]

MAGIC = b"AG"
VERSION = 1
PREFIX = struct.Struct("<2sBBIH")
_LENGTH = struct.Struct("<Q")
DEFAULT_MAX_FRAME_BYTES = 1 << 30
DEFAULT_MAX_HEADER_BYTES = 1 << 20
# A frame with more buffers than this is a mistake; the limit also bounds the lengths table.
MAX_BUFFERS = 4096
# Arrays smaller than this are copied into the first chunk: one write beats many for latency.
_INLINE_BYTES = 64 * 1024
# Reading straight into an array pays off once the rest of it is larger than this.
_DIRECT_MIN = 32 * 1024
_STAGING_BYTES = 256 * 1024
# Until a peer has authenticated its frames are tiny handshake messages: an idle stranger must
# cost next to nothing (thousands of them used to hold 256 KiB each).
PREAUTH_STAGING_BYTES = 2 * 1024

logger = logging.getLogger("autograd_async.distributed")


@dataclass
class Frame:
    """One decoded, validated message: its type, fields and received arrays."""

    msg: str
    fields: dict[str, Any]
    arrays: list[np.ndarray] = field(default_factory=list)
    charged: int = 0  # bytes the reader's `admit` hook reserved for the arrays

    @property
    def id(self) -> int | None:
        """The request id the frame refers to, if it has one."""
        value = self.fields.get("id")
        return value if isinstance(value, int) else None


@dataclass
class BadFrame:
    """A frame whose framing was intact but whose header or content was refused."""

    error: DistributedError  # a ProtocolError, or ResourceExhausted from `admit`
    request_id: int | None
    charged: int = 0  # bytes reserved by `admit` before the frame was refused


def _wire_array(value: Any) -> tuple[np.ndarray, str]:
    """A C-contiguous little-endian array of an allowed dtype (copied only if needed), and
    its wire dtype name."""
    arr = np.asarray(value)
    name = wire_dtype_name(arr.dtype)  # raises ProtocolError for object/void/str dtypes
    if arr.dtype.byteorder == ">" or (arr.dtype.byteorder == "=" and sys.byteorder == "big"):
        # The wire is little-endian. One pass swaps the bytes and lays the array out in C
        # order (the default order "K" would keep a transposed layout, costing a second copy).
        return arr.astype(ALLOWED_DTYPES[name], order="C"), name
    # Not np.ascontiguousarray: it turns 0-d arrays into 1-d ones.
    return (arr if arr.flags.c_contiguous else arr.copy(order="C")), name


def _byte_view(arr: np.ndarray) -> memoryview:
    """A flat uint8 memoryview of a contiguous array (works for 0-d and complex too)."""
    return arr.reshape(-1).view(np.uint8).data


def encode_frame(
    msg: str,
    fields: Mapping[str, Any],
    arrays: Sequence[Any] = (),
    *,
    registry: MessageRegistry | None = None,
    max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES,
    max_header_bytes: int = DEFAULT_MAX_HEADER_BYTES,
) -> list[bytes | memoryview]:
    """Encode a message as chunks for `transport.writelines`; large arrays are not copied."""
    registry = DEFAULT_REGISTRY if registry is None else registry
    converted = [_wire_array(a) for a in arrays]
    wire_arrays = [arr for arr, _ in converted]
    if len(wire_arrays) > MAX_BUFFERS:
        raise ProtocolError(f"a frame carries at most {MAX_BUFFERS} arrays, got {len(arrays)}")
    if "msg" in fields or "arrays" in fields:
        raise ProtocolError("fields 'msg' and 'arrays' are reserved by the wire format")
    header = {"msg": msg, **fields}
    if wire_arrays:
        header["arrays"] = [{"dtype": name, "shape": list(arr.shape)} for arr, name in converted]
    raw = pack_header(header)
    if len(raw) > max_header_bytes:
        raise ProtocolError(
            f"header of {len(raw)} bytes exceeds the max header size {max_header_bytes}"
        )
    lengths = [a.nbytes for a in wire_arrays]
    # Check the fields as the receiver will see them (tuples become lists, etc.), so that
    # mistakes surface at the sender with the same message the receiver would give. The
    # array metadata was built just above and needs no second look.
    seen = unpack_header(raw)
    seen.pop("msg")
    seen.pop("arrays", None)
    registry.get(msg).check_fields(seen, len(wire_arrays))
    total = PREFIX.size + 8 * len(lengths) + len(raw) + sum(lengths)
    if total > max_frame_bytes:
        raise ProtocolError(f"frame of {total} bytes exceeds the max frame size {max_frame_bytes}")
    head = bytearray(PREFIX.pack(MAGIC, VERSION, 0, len(raw), len(lengths)))
    for n in lengths:
        head += _LENGTH.pack(n)
    head += raw
    chunks: list[bytes | memoryview] = []
    for arr in wire_arrays:
        if arr.nbytes == 0:
            continue
        if arr.nbytes < _INLINE_BYTES and not chunks:
            head += _byte_view(arr)
        else:
            chunks.append(_byte_view(arr))
    return [bytes(head), *chunks]


_PREFIX_STATE, _LENGTHS_STATE, _HEADER_STATE, _BODY_STATE, _SKIP_STATE = range(5)


class FrameReader:
    """Incremental frame decoder with BufferedProtocol's get_buffer/buffer_updated interface.

    Decoded frames and refused-but-skippable frames accumulate in `events`. A broken framing
    (bad magic or version, sizes over the limits) raises ProtocolError from `buffer_updated`
    and leaves the reader unusable: the stream cannot be resynchronised.
    """

    def __init__(
        self,
        *,
        registry: MessageRegistry | None = None,
        max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES,
        max_header_bytes: int = DEFAULT_MAX_HEADER_BYTES,
        pool: ReceivePool | None = None,
        staging_bytes: int = _STAGING_BYTES,
        admit: Callable[[int], None] | None = None,
    ) -> None:
        self.registry = DEFAULT_REGISTRY if registry is None else registry
        self.pool = pool  # reuses large receive buffers (see pool.py); None: np.empty
        # Both limits may be changed between frames (e.g. tight until authenticated).
        self.max_frame_bytes = max_frame_bytes
        self.max_header_bytes = max_header_bytes
        # Size of the staging buffer between frames; may be raised (after authentication).
        self.staging_bytes = staging_bytes
        # Called with a frame's array bytes before they are allocated; raising
        # ResourceExhausted refuses the frame (its buffers are skipped). `charged` holds what
        # it accepted for the frame in progress, handed to the frame's event when it ends.
        self.admit = admit
        self.charged = 0
        self.events: deque[Frame | BadFrame] = deque()
        self.frames_read = 0
        self._buf = bytearray(staging_bytes)
        self._view = memoryview(self._buf)
        self._start = 0
        self._end = 0
        self._direct = False
        self._broken: ProtocolError | None = None
        self._reset()

    def _reset(self) -> None:
        self._state = _PREFIX_STATE
        self._need = PREFIX.size
        self._nbuf = 0
        self._header_len = 0
        self._lengths: tuple[int, ...] = ()
        self._msg: Any = None
        self._arrays: list[np.ndarray] = []
        self._targets: list[memoryview] = []
        self._index = 0
        self._offset = 0
        self._skip = 0
        self._bad: BadFrame | None = None
        self.charged = 0

    @property
    def mid_frame(self) -> bool:
        """True when part of a frame has been received but not all of it."""
        return self._state != _PREFIX_STATE or self._end > self._start

    @property
    def frame_size(self) -> int:
        """Total byte size of the frame being received, once its prefix is known (else 0)."""
        if self._state in (_PREFIX_STATE, _LENGTHS_STATE):
            return 0
        return PREFIX.size + 8 * self._nbuf + self._header_len + sum(self._lengths)

    def get_buffer(self, sizehint: int = -1) -> memoryview:
        """Return writable memory for the next bytes of the stream."""
        if self._broken is not None:
            raise self._broken
        if self._state == _BODY_STATE and self._start == self._end:
            target = self._targets[self._index]
            if len(target) - self._offset >= _DIRECT_MIN:
                self._direct = True
                return target[self._offset :]
        self._direct = False
        if self._start == self._end:
            self._start = self._end = 0
            staging = self.staging_bytes
            if len(self._buf) != staging and self._need <= staging:
                self._resize(staging)  # a large header is done (give the memory back), or
                # the staging size changed (grown after authentication)
        free = len(self._buf) - self._end
        pending = self._end - self._start
        if free < 4096 or free < self._need - pending:
            if self._need > len(self._buf):
                self._resize(self._need)  # bounded by max_header_bytes + 8 * MAX_BUFFERS
            if self._start:
                self._buf[:pending] = self._buf[self._start : self._end]
                self._start, self._end = 0, pending
        return self._view[self._end :]

    def _resize(self, size: int) -> None:
        pending = self._end - self._start
        new = bytearray(max(size, pending))
        new[:pending] = self._view[self._start : self._end]
        self._view.release()
        self._buf, self._view = new, memoryview(new)
        self._start, self._end = 0, pending

    def buffer_updated(self, nbytes: int) -> None:
        """Account for `nbytes` written into the last buffer and decode what is complete."""
        if self._broken is not None:
            raise self._broken
        try:
            if self._direct:
                self._direct = False
                self._offset += nbytes
                if self._offset == len(self._targets[self._index]):
                    self._next_array()
                return
            self._end += nbytes
            self._process()
        except ProtocolError as exc:
            self._broken = exc
            raise

    def feed(self, data: bytes | bytearray | memoryview) -> None:
        """Feed bytes (a convenience for tests and fuzzing: copies through get_buffer)."""
        data = memoryview(data).cast("B")
        while data:
            buf = self.get_buffer(len(data))
            n = min(len(buf), len(data))
            buf[:n] = data[:n]
            data = data[n:]
            self.buffer_updated(n)

    def eof(self) -> None:
        """Signal the end of the stream; raise ProtocolError if it cut a frame short."""
        if self._broken is None and self.mid_frame:
            got = self._end - self._start
            raise ProtocolError(
                f"connection closed mid-frame (frame of {self.frame_size or 'unknown'} bytes "
                f"incomplete, {got} bytes of the current part buffered)"
            )

    def _process(self) -> None:
        while True:
            avail = self._end - self._start
            state = self._state
            if state == _PREFIX_STATE:
                if avail < PREFIX.size:
                    return
                self._parse_prefix()
            elif state == _LENGTHS_STATE:
                if avail < 8 * self._nbuf:
                    return
                self._parse_lengths()
            elif state == _HEADER_STATE:
                if avail < self._header_len:
                    return
                self._parse_header()
            elif state == _BODY_STATE:
                if avail == 0:
                    return
                target = self._targets[self._index]
                take = min(avail, len(target) - self._offset)
                target[self._offset : self._offset + take] = self._view[
                    self._start : self._start + take
                ]
                self._start += take
                self._offset += take
                if self._offset == len(target):
                    self._next_array()
            else:  # _SKIP_STATE: drain the buffers of a refused frame without keeping them
                take = min(avail, self._skip)
                self._start += take
                self._skip -= take
                if self._skip:
                    return
                self._finish_bad()

    def _parse_prefix(self) -> None:
        magic, version, flags, header_len, nbuf = PREFIX.unpack_from(self._buf, self._start)
        if magic != MAGIC:
            raise ProtocolError(f"bad magic {bytes(magic)!r}, expected {MAGIC!r}")
        if version != VERSION:
            raise ProtocolError(f"unsupported protocol version {version}, expected {VERSION}")
        if flags != 0:
            raise ProtocolError(f"unknown frame flags {flags:#04x}")
        if header_len > self.max_header_bytes:
            raise ProtocolError(
                f"header length {header_len} exceeds the max header size {self.max_header_bytes}"
            )
        if nbuf > MAX_BUFFERS:
            raise ProtocolError(f"frame declares {nbuf} buffers, more than {MAX_BUFFERS}")
        self._start += PREFIX.size
        self._header_len, self._nbuf = header_len, nbuf
        self._state, self._need = _LENGTHS_STATE, 8 * nbuf

    def _parse_lengths(self) -> None:
        self._lengths = struct.unpack_from(f"<{self._nbuf}Q", self._buf, self._start)
        self._start += 8 * self._nbuf
        self._state, self._need = _HEADER_STATE, self._header_len
        # Refuse before allocating anything: the declared sizes are untrusted.
        total = self.frame_size
        if total > self.max_frame_bytes:
            raise ProtocolError(
                f"frame of {total} bytes exceeds the max frame size {self.max_frame_bytes}"
            )

    def _parse_header(self) -> None:
        raw = bytes(self._view[self._start : self._start + self._header_len])
        self._start += self._header_len
        self._need = 0
        header: Any = None
        try:
            header = decode_msgpack(raw)
            check_depth(header)  # after assigning: a valid id still routes the refusal
            self._msg = self.registry.validate(header, self._lengths, self.max_frame_bytes)
            nbytes = sum(self._lengths)
            if self.admit is not None and nbytes:
                self.admit(nbytes)  # raises to refuse; nothing is allocated before it agrees
                self.charged = nbytes
        except Exception as exc:  # noqa: BLE001 - any refusal is per frame, never fatal
            # Framing is intact: report the frame, skip its buffers and carry on.
            if not isinstance(exc, ProtocolError | ResourceExhausted):
                exc = ProtocolError(f"header refused: {type(exc).__name__}: {exc}")
            self._bad = BadFrame(exc, _request_id_of(header))
            self._skip = sum(self._lengths)
            self._state = _SKIP_STATE
            if not self._skip:
                self._finish_bad()
            return
        # Untrusted sizes were checked above; np.empty only reserves, pages fill as bytes arrive.
        empty = np.empty if self.pool is None else self.pool.empty
        self._arrays = [empty(m.shape, m.dtype) for m in self._msg.arrays]
        self._targets = [_byte_view(a) for a in self._arrays]
        self._state, self._index, self._offset = _BODY_STATE, -1, 0
        self._next_array()

    def _next_array(self) -> None:
        self._index += 1
        self._offset = 0
        while self._index < len(self._targets) and len(self._targets[self._index]) == 0:
            self._index += 1
        if self._index == len(self._targets):
            self._finish_frame()

    def _finish_frame(self) -> None:
        msg, arrays, charged = self._msg, self._arrays, self.charged
        self._reset()
        self.frames_read += 1
        for i, arr in enumerate(arrays):
            # Any byte other than 0/1 in a bool array is undefined behaviour in NumPy.
            if arr.dtype == np.bool_ and arr.size and arr.view(np.uint8).max() > 1:
                error = ProtocolError(f"array {i}: bool array holds bytes other than 0 and 1")
                self.events.append(BadFrame(error, _request_id_of(msg.fields), charged))
                return
        self.events.append(Frame(msg.type, msg.fields, arrays, charged))

    def _finish_bad(self) -> None:
        bad = self._bad
        assert bad is not None
        bad.charged = self.charged
        self._reset()
        self.frames_read += 1
        self.events.append(bad)


def _request_id_of(header: Any) -> int | None:
    """Best-effort id of a refused header, so the error can be routed to its request."""
    if isinstance(header, dict):
        value = header.get("id")
        if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 2**64:
            return value
    return None


def decode_frame(
    data: bytes | bytearray | memoryview,
    *,
    registry: MessageRegistry | None = None,
    max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES,
    max_header_bytes: int = DEFAULT_MAX_HEADER_BYTES,
) -> Frame:
    """Decode exactly one frame from bytes; raise ProtocolError for anything wrong with it."""
    reader = FrameReader(
        registry=registry, max_frame_bytes=max_frame_bytes, max_header_bytes=max_header_bytes
    )
    reader.feed(data)
    reader.eof()
    if len(reader.events) != 1:
        raise ProtocolError(f"expected one frame, got {len(reader.events)}")
    event = reader.events.popleft()
    if isinstance(event, BadFrame):
        raise event.error
    return event


class FrameProtocol(asyncio.BufferedProtocol):
    """Drives a FrameReader from a transport, writes frames without copying their arrays.

    Subclasses handle decoded frames in `on_event`. Until `open_limits` is called the
    reader enforces the (smaller) `first_*` limits, e.g. while a peer is unauthenticated.
    """

    def __init__(
        self,
        *,
        registry: MessageRegistry | None,
        max_frame_bytes: int,
        max_header_bytes: int,
        first_frame_bytes: int,
        first_header_bytes: int,
    ) -> None:
        self.registry = registry
        self.max_frame_bytes = max_frame_bytes
        self.max_header_bytes = max_header_bytes
        self.reader = FrameReader(
            registry=registry,
            max_frame_bytes=first_frame_bytes,
            max_header_bytes=first_header_bytes,
            pool=ReceivePool(),
            staging_bytes=PREAUTH_STAGING_BYTES,
        )
        self.transport: asyncio.Transport | None = None
        self.loop = asyncio.get_running_loop()
        self.closed = self.loop.create_future()
        self.close_reason: str | None = None
        self._write_paused = False
        self._drain_waiters: deque[asyncio.Future[None]] = deque()
        self._writelines = False

    # -- asyncio callbacks -------------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # A stream transport, though uvloop's are not subclasses of asyncio.Transport.
        stream = cast(asyncio.Transport, transport)
        self.transport = stream
        # The stdlib's generic writelines joins its chunks (a full copy); write them one by
        # one there. uvloop and newer asyncio transports gather them without copying.
        self._writelines = type(stream).writelines is not asyncio.WriteTransport.writelines

    def get_buffer(self, sizehint: int) -> memoryview:
        return self.reader.get_buffer(sizehint)

    def buffer_updated(self, nbytes: int) -> None:
        # Nothing may escape into the transport: the loop would log a fatal-error traceback
        # per call (a log flood a peer controls) and drop the connection with its requests.
        try:
            self.reader.buffer_updated(nbytes)
        except Exception as exc:  # noqa: BLE001 - ProtocolError, or a bug: either way fatal
            # Framing is broken: the stream cannot be resynchronised, so drop it.
            self.abort(f"broken framing: {exc}")
            return
        events = self.reader.events
        while events and not self.is_closing:
            event = events.popleft()
            try:
                self.on_event(event)
            except Exception as exc:  # noqa: BLE001 - a bug in a handler of this side
                logger.error(
                    "dropping connection after an error handling a %s frame: %r",
                    getattr(event, "msg", "refused"),
                    exc,
                )
                self.abort(f"internal error: {type(exc).__name__}: {exc}")
        while events:
            self.on_discard(events.popleft())

    def eof_received(self) -> bool:
        try:
            self.reader.eof()
        except ProtocolError as exc:
            self.close_reason = self.close_reason or str(exc)
        return False  # close our side too

    def connection_lost(self, exc: Exception | None) -> None:
        if exc is not None and self.close_reason is None:
            self.close_reason = f"{type(exc).__name__}: {exc}"
        self._wake_drainers(self.lost_error())
        if not self.closed.done():
            self.closed.set_result(None)

    def pause_writing(self) -> None:
        self._write_paused = True
        self.update_reading()

    def resume_writing(self) -> None:
        self._write_paused = False
        self._wake_drainers(None)
        self.update_reading()

    # -- hooks for subclasses ----------------------------------------------------------
    def on_event(self, event: Frame | BadFrame) -> None:
        """Handle one decoded (or refused) frame."""
        raise NotImplementedError

    def on_discard(self, event: Frame | BadFrame) -> None:
        """A decoded frame is dropped unhandled because the connection is closing."""

    def lost_error(self) -> Exception:
        """The exception that operations on a closed connection raise."""
        return ConnectionClosedError("connection closed")

    def update_reading(self) -> None:
        """Pause or resume reading from the peer (backpressure); clients always read."""

    # -- helpers -----------------------------------------------------------------------
    @property
    def is_closing(self) -> bool:
        """True once the transport is gone or going."""
        return self.transport is None or self.transport.is_closing()

    def send(self, msg: str, fields: Mapping[str, Any], arrays: Sequence[Any] = ()) -> None:
        """Encode and write one frame; the arrays' memory is handed to the transport."""
        chunks = encode_frame(
            msg,
            fields,
            arrays,
            registry=self.registry,
            max_frame_bytes=self.max_frame_bytes,
            max_header_bytes=self.max_header_bytes,
        )
        if self.is_closing:
            raise self.lost_error()
        assert self.transport is not None
        if self._writelines:
            self.transport.writelines(chunks)
        else:
            for chunk in chunks:
                self.transport.write(chunk)

    async def drain(self) -> None:
        """Wait until the transport's write buffer is below its low-water mark."""
        if self.is_closing:
            raise self.lost_error()
        if not self._write_paused:
            return
        waiter = self.loop.create_future()
        self._drain_waiters.append(waiter)
        await waiter

    def _wake_drainers(self, exc: Exception | None) -> None:
        while self._drain_waiters:
            waiter = self._drain_waiters.popleft()
            if not waiter.done():
                if exc is None:
                    waiter.set_result(None)
                else:
                    waiter.set_exception(exc)

    def abort(self, reason: str) -> None:
        """Drop the connection at once, remembering why."""
        self.close_reason = self.close_reason or reason
        if self.transport is not None:
            self.transport.abort()

    def open_limits(self) -> None:
        """Switch the reader from the first-frame limits to the full ones (and its staging
        buffer to full size, allocated only now that the peer is authenticated)."""
        self.reader.max_frame_bytes = self.max_frame_bytes
        self.reader.max_header_bytes = self.max_header_bytes
        self.reader.staging_bytes = _STAGING_BYTES
