"""The receive-buffer pool: reuse only when nothing refers to a buffer, bounded memory."""

from __future__ import annotations

import numpy as np

from autograd_async.distributed.pool import ReceivePool
from autograd_async.distributed.wire import FrameReader, encode_frame

MIB = 1 << 20


def address(a: np.ndarray) -> int:
    return a.__array_interface__["data"][0]


def test_buffer_is_reused_only_once_every_view_is_gone():
    pool = ReceivePool(max_bytes=16 * MIB)
    a = pool.empty((MIB // 4,), np.float32)
    base = address(a)  # the address only: holding the array would keep the buffer in use
    view = a.reshape(-1)[10:20]
    del a
    b = pool.empty((MIB // 4,), np.float32)  # `view` still holds the first buffer
    assert address(b) != base and pool.reused == 0
    del view
    c = pool.empty((MIB // 8,), np.float64)  # same bytes, another dtype and shape
    assert address(c) == base and pool.reused == 1
    assert c.shape == (MIB // 8,) and c.dtype == np.float64 and c.flags.c_contiguous
    mv = memoryview(c)
    del c
    assert address(pool.empty((MIB // 4,), np.float32)) != base  # a memoryview counts too
    del mv


def test_small_arrays_and_limits():
    pool = ReceivePool(max_bytes=3 * MIB, max_buffers=2)
    small = pool.empty((10,), np.float32)
    assert small.base is None and pool.pooled_bytes == 0  # a plain np.empty
    held = [pool.empty((MIB,), np.uint8) for _ in range(3)]  # all in use: only 2 are pooled
    assert pool.pooled_bytes == 2 * MIB
    del held
    big = pool.empty((2 * MIB,), np.uint8)  # evicts idle buffers to stay within 3 MiB
    assert pool.pooled_bytes <= 3 * MIB
    assert big.nbytes == 2 * MIB
    del big
    quarter = pool.empty((MIB // 2,), np.uint8)  # a 2 MiB buffer is too big to lend for 0.5 MiB
    assert pool.reused == 0 and quarter.nbytes == MIB // 2


def test_reader_fills_pooled_arrays():
    reader = FrameReader(pool=ReceivePool())
    data = np.arange(MIB // 4, dtype=np.float32)
    frame = b"".join(encode_frame("response", {"id": 1, "result": {}}, [data]))
    reader.feed(frame)
    first = reader.events.popleft().arrays[0]
    np.testing.assert_array_equal(first, data)
    base = address(first)
    del first
    reader.feed(b"".join(encode_frame("response", {"id": 2, "result": {}}, [data * 2])))
    second = reader.events.popleft().arrays[0]
    assert address(second) == base
    np.testing.assert_array_equal(second, data * 2)


def test_each_loan_has_its_own_memory_owner():
    """Autograd lets a leaf keep its first gradient without a copy when it can claim the
    array's memory owner; a reused buffer must look like a new owner each time."""
    from autograd_async.graph import claim

    pool = ReceivePool()
    first = pool.empty((MIB,), np.uint8)
    assert claim(first)
    del first
    second = pool.empty((MIB,), np.uint8)
    assert pool.reused == 1
    assert claim(second)
    assert not claim(second)


def test_pooled_arrays_start_on_a_page_boundary():
    """The kernel writes received bytes faster into cache-line aligned memory; a large
    malloc'ed block starts 16 bytes past a page, so the pool aligns its buffers itself."""
    from autograd_async.distributed.pool import ALIGNMENT

    pool = ReceivePool(max_bytes=4 * MIB, max_buffers=1)
    held = [pool.empty((MIB + 8,), np.uint8), pool.empty((MIB // 8, 3), np.float64)]
    assert pool.pooled_bytes == MIB + 8  # the second did not fit: a plain, aligned block
    for a in held:
        assert address(a) % ALIGNMENT == 0 and a.flags.writeable and a.flags.c_contiguous
    first = address(held[0])
    del held
    again = pool.empty((MIB // 4,), np.float32)
    assert address(again) == first and pool.reused == 1
