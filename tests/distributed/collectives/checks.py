"""Every collective against NumPy, run by each rank of a group (threads or MPI processes).

Each rank builds the same inputs for every rank from seeds, so it knows what the others sent
and can compute the expected result with NumPy alone.
"""

from __future__ import annotations

import asyncio

import numpy as np

import autograd_async as aa
import autograd_async.distributed as dist

DTYPES = ["float64", "float32", "int64", "int32", "float16", "bool"]
SHAPES = [(), (5,), (2, 3)]
OPS = {
    dist.ReduceOp.SUM: lambda xs: np.sum(xs, axis=0),
    dist.ReduceOp.AVG: lambda xs: np.mean(xs, axis=0),
    dist.ReduceOp.PRODUCT: lambda xs: np.prod(xs, axis=0),
    dist.ReduceOp.MIN: lambda xs: np.min(xs, axis=0),
    dist.ReduceOp.MAX: lambda xs: np.max(xs, axis=0),
    dist.ReduceOp.BAND: lambda xs: np.bitwise_and.reduce(xs, axis=0),
    dist.ReduceOp.BOR: lambda xs: np.bitwise_or.reduce(xs, axis=0),
    dist.ReduceOp.BXOR: lambda xs: np.bitwise_xor.reduce(xs, axis=0),
}


def host(t: aa.Tensor) -> np.ndarray:
    """The tensor's values as a NumPy array, from any device."""
    return t.cpu().numpy()


def values(rank: int, shape: tuple, dtype: str, salt: int = 0) -> np.ndarray:
    """Rank `rank`'s input: small integers (exact in every dtype, no overflow in products)."""
    rng = np.random.default_rng(1000 * salt + rank)
    return rng.integers(1, 4, size=shape).astype(dtype)


def expected_reduction(op: dist.ReduceOp, arrays: list[np.ndarray]) -> np.ndarray:
    dtype = arrays[0].dtype
    if dtype == np.bool_:
        merged = (
            np.max
            if op in (dist.ReduceOp.SUM, dist.ReduceOp.AVG, dist.ReduceOp.MAX, dist.ReduceOp.BOR)
            else np.min
        )
        return merged(np.stack(arrays), axis=0)
    out = OPS[op](np.stack(arrays).astype(np.float64 if op is dist.ReduceOp.AVG else dtype))
    return np.trunc(out).astype(dtype) if dtype.kind in "iu" else out.astype(dtype)


def tensor_on(array: np.ndarray, device: str, transposed: bool = False) -> aa.Tensor:
    """A tensor holding `array`, optionally as a non-contiguous (transposed) view."""
    if transposed and array.ndim == 2:
        return aa.tensor(np.ascontiguousarray(array.T), device=device).t()
    return aa.tensor(array, device=device)


def check_reductions(rank: int, size: int, device: str) -> int:
    """all_reduce and reduce for every op, dtype and shape (contiguous or not)."""
    count = 0
    for salt, (dtype, shape, op) in enumerate(
        (d, s, o) for d in DTYPES for s in SHAPES for o in OPS
    ):
        bitwise = op in (dist.ReduceOp.BAND, dist.ReduceOp.BOR, dist.ReduceOp.BXOR)
        if bitwise and dtype.startswith("float"):
            continue
        if dtype == "bool" and op in (dist.ReduceOp.BXOR,):
            continue
        inputs = [values(r, shape, dtype, salt) for r in range(size)]
        want = expected_reduction(op, inputs)
        for transposed in (False, True) if len(shape) == 2 else (False,):
            t = tensor_on(inputs[rank], device, transposed)
            dist.all_reduce(t, op=op)
            np.testing.assert_allclose(
                host(t).astype(float),
                want.astype(float),
                err_msg=f"all_reduce {op} {dtype} {shape}",
            )
            assert host(t).dtype == np.dtype(dtype)
            count += 1
        dst = salt % size
        t = tensor_on(inputs[rank], device)
        dist.reduce(t, dst=dst, op=op)
        if rank == dst:
            np.testing.assert_allclose(
                host(t).astype(float), want.astype(float), err_msg=f"reduce {op} {dtype} {shape}"
            )
        else:
            np.testing.assert_array_equal(host(t), inputs[rank])
        count += 1
    return count


def check_movement(rank: int, size: int, device: str) -> int:
    """broadcast, gathers, scatters and reduce_scatter against NumPy."""
    count = 0
    for salt, dtype in enumerate(["float64", "float32", "int64", "bool"]):
        for shape in SHAPES:
            inputs = [values(r, shape, dtype, salt) for r in range(size)]
            src = (salt + len(shape)) % size
            t = tensor_on(inputs[rank], device, transposed=True)
            dist.broadcast(t, src=src)
            np.testing.assert_array_equal(host(t), inputs[src])

            outs = [aa.zeros(shape, dtype=t.dtype, device=device) for _ in range(size)]
            dist.all_gather(outs, tensor_on(inputs[rank], device))
            for r in range(size):
                np.testing.assert_array_equal(host(outs[r]), inputs[r])

            flat = aa.zeros((size, *shape), dtype=t.dtype, device=device)
            dist.all_gather_into_tensor(flat, tensor_on(inputs[rank], device))
            np.testing.assert_array_equal(host(flat), np.stack(inputs))

            gathered = [aa.zeros(shape, dtype=t.dtype, device=device) for _ in range(size)]
            dist.gather(tensor_on(inputs[rank], device), gathered if rank == src else None, dst=src)
            if rank == src:
                for r in range(size):
                    np.testing.assert_array_equal(host(gathered[r]), inputs[r])

            parts = [values(src, shape, dtype, salt + 10 * r) for r in range(size)]
            out = aa.zeros(shape, dtype=t.dtype, device=device)
            dist.scatter(
                out, [tensor_on(p, device) for p in parts] if rank == src else None, src=src
            )
            np.testing.assert_array_equal(host(out), parts[rank])
            count += 5
            if dtype == "bool":
                continue
            # reduce_scatter: rank r sends parts_of[r][i] for each i; rank i keeps the sum
            parts_of = [
                [values(r, shape, dtype, salt + 100 * i) for i in range(size)] for r in range(size)
            ]
            got = aa.zeros(shape, dtype=t.dtype, device=device)
            dist.reduce_scatter(got, [tensor_on(p, device) for p in parts_of[rank]])
            want = np.sum([parts_of[r][rank] for r in range(size)], axis=0).astype(dtype)
            np.testing.assert_array_equal(host(got), want)
            got = aa.zeros(shape, dtype=t.dtype, device=device)
            dist.reduce_scatter_tensor(
                got, tensor_on(np.stack(parts_of[rank]), device), op=dist.ReduceOp.MAX
            )
            want = np.max([parts_of[r][rank] for r in range(size)], axis=0).astype(dtype)
            np.testing.assert_array_equal(host(got), want)
            count += 2
    dist.barrier()
    return count


def check_objects(rank: int, size: int) -> None:
    got: list = [None] * size
    dist.all_gather_object(got, {"rank": rank, "name": f"r{rank}", "xs": [rank, 1.5]})
    assert got == [{"rank": r, "name": f"r{r}", "xs": [r, 1.5]} for r in range(size)], got
    sent = [{"a": [1, 2]}, "text", None, 3.25] if rank == size - 1 else [0, 0, 0, 0]
    dist.broadcast_object_list(sent, src=size - 1)
    assert sent == [{"a": [1, 2]}, "text", None, 3.25], sent
    try:
        dist.all_gather_object(got, object())
    except TypeError as exc:
        assert "never pickle" in str(exc)
    else:
        raise AssertionError("an object msgpack cannot carry was sent")


def check_async_handles(rank: int, size: int, device: str) -> None:
    """Handles awaited from an event loop that keeps running (a ticker keeps ticking)."""

    async def main() -> int:
        ticks = 0

        async def ticker() -> None:
            nonlocal ticks
            while True:
                await asyncio.sleep(0.001)
                ticks += 1

        task = asyncio.create_task(ticker())
        tensors = [aa.full((64,), float(rank + i), device=device) for i in range(4)]
        works = [dist.all_reduce(t, async_op=True) for t in tensors]
        # Ranks other than 0 arrive late, so rank 0's handles are pending for a while.
        if rank != 0:
            await asyncio.sleep(0.05)
        for w in works:
            await w
        ticks_before = ticks
        # a barrier entered late by rank 0: the others' loops keep ticking while they wait
        if rank == 0:
            await asyncio.sleep(0.3)
        await dist.barrier(async_op=True)
        task.cancel()
        assert all(w.is_completed() and w.wait(timeout=1) for w in works)
        total = sum(range(size))
        for i, t in enumerate(tensors):
            np.testing.assert_array_equal(host(t), np.full(64, total + size * i))
        return ticks - ticks_before

    ticked = asyncio.run(main())
    if rank != 0:
        # 1 ms ticks for 0.3 s: a loop blocked by the barrier would tick at most once.
        assert ticked >= 3, f"the loop ticked only {ticked} times while awaiting a barrier"


def check_mismatch(rank: int, size: int, device: str) -> None:
    try:
        dist.all_reduce(aa.zeros(3 + rank, device=device))
    except dist.DistBackendError as exc:
        assert "different sizes or dtypes" in str(exc) and "rank 1: 4 elements" in str(exc), exc
    else:
        raise AssertionError("tensors of different sizes were reduced")


def check_everything(rank: int, size: int, device: str = "cpu") -> int:
    """All the checks above; the number of collectives compared with NumPy."""
    count = check_reductions(rank, size, device) + check_movement(rank, size, device)
    check_objects(rank, size)
    check_async_handles(rank, size, device)
    assert dist.get_rank() == rank and dist.get_world_size() == size
    return count
