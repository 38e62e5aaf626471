"""utils.data against PyTorch's: the same batches for the same indices, the same collation,
lengths and errors; worker threads, and `async for` prefetching with cancellation."""

from __future__ import annotations

import asyncio
import collections
import threading
import time

import numpy as np
import pytest

import autograd_async as aa
from autograd_async.utils import data


def as_numpy(batch):
    """A batch, ours or torch's, as nested lists/dicts of (dtype name, values)."""
    if isinstance(batch, dict):
        return {k: as_numpy(v) for k, v in batch.items()}
    if isinstance(batch, list | tuple):
        return [as_numpy(b) for b in batch]
    if hasattr(batch, "numpy"):  # a torch tensor
        array = batch.numpy()
        return (str(array.dtype), array.tolist())
    if isinstance(batch, aa.Tensor):
        array = np.asarray(batch)
        return (str(array.dtype), array.tolist())
    return batch


class Records:
    """A map-style dataset of mixed samples: what default_collate must handle."""

    def __init__(self, lib, n=11):
        self.lib, self.n = lib, n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return {
            "x": self.lib.tensor([i, i * 0.5]),
            "pixels": np.full((2, 2), i, dtype=np.float32),
            "score": i / 4,
            "label": i % 3,
            "flag": bool(i % 2),
            "name": f"s{i}",
            "pair": (i, float(i)),
        }


ORDER = [7, 2, 9, 0, 4, 4, 10, 1, 3]


@pytest.mark.parametrize("batch_size", [1, 2, 4])
@pytest.mark.parametrize("drop_last", [False, True])
def test_tensor_dataset_batches_match_torch(torch, batch_size, drop_last):
    x = np.random.default_rng(0).standard_normal((11, 3)).astype(np.float32)
    y = np.arange(11)
    ours = data.DataLoader(
        data.TensorDataset(aa.tensor(x), aa.tensor(y)),
        batch_size=batch_size,
        sampler=ORDER,
        drop_last=drop_last,
    )
    theirs = torch.utils.data.DataLoader(
        torch.utils.data.TensorDataset(torch.tensor(x), torch.tensor(y)),
        batch_size=batch_size,
        sampler=ORDER,
        drop_last=drop_last,
    )
    assert len(ours) == len(theirs)
    assert [as_numpy(b) for b in ours] == [as_numpy(b) for b in theirs]


def test_mixed_samples_collate_like_torch(torch):
    ours = list(data.DataLoader(Records(aa), batch_size=4, sampler=ORDER))
    theirs = list(torch.utils.data.DataLoader(Records(torch), batch_size=4, sampler=ORDER))
    assert [as_numpy(b) for b in ours] == [as_numpy(b) for b in theirs]
    assert ours[0]["score"].dtype == aa.float64 and ours[0]["label"].dtype == aa.int64
    assert ours[0]["flag"].dtype == aa.bool_ and ours[0]["name"] == ["s7", "s2", "s9", "s0"]


def test_no_batching_converts_like_torch(torch):
    ours = list(data.DataLoader(Records(aa, 3), batch_size=None))
    theirs = list(torch.utils.data.DataLoader(Records(torch, 3), batch_size=None))
    assert [as_numpy(b) for b in ours] == [as_numpy(b) for b in theirs]


def test_named_tuples_keep_their_type():
    Point = collections.namedtuple("Point", "x y")
    batch = data.default_collate([Point(1, 2.0), Point(3, 4.0)])
    assert type(batch) is Point and batch.x.tolist() == [1, 3] and batch.y.dtype == aa.float64


def test_batch_sampler_and_len_match_torch(torch):
    batches = [[3, 1], [0], [2, 2, 4]]
    ours = data.DataLoader(data.TensorDataset(aa.arange(5)), batch_sampler=batches)
    theirs = torch.utils.data.DataLoader(
        torch.utils.data.TensorDataset(torch.arange(5)), batch_sampler=batches
    )
    assert len(ours) == len(theirs) == 3
    assert [as_numpy(b) for b in ours] == [as_numpy(b) for b in theirs]


def test_shuffle_is_a_permutation_reproducible_by_generator():
    ds = data.TensorDataset(aa.arange(50))

    def epoch(loader):
        return np.concatenate([np.asarray(b[0]) for b in loader]).tolist()

    first = data.DataLoader(ds, batch_size=8, shuffle=True, generator=aa.Generator(3))
    second = data.DataLoader(ds, batch_size=8, shuffle=True, generator=aa.Generator(3))
    a1, a2 = epoch(first), epoch(first)
    assert sorted(a1) == list(range(50)) and a1 != list(range(50))
    assert a1 != a2  # each epoch a new permutation
    assert [a1, a2] == [epoch(second), epoch(second)]
    aa.manual_seed(11)
    b1 = epoch(data.DataLoader(ds, batch_size=8, shuffle=True))
    aa.manual_seed(11)
    assert epoch(data.DataLoader(ds, batch_size=8, shuffle=True)) == b1


class Slow(data.Dataset):
    """Records which threads fetched which items; optionally fails at one index."""

    def __init__(self, n=12, fail_at=None, delay=0.0):
        self.n, self.fail_at, self.delay = n, fail_at, delay
        self.fetched: list[int] = []
        self.threads: set[int] = set()
        self.workers: set = set()
        self.lock = threading.Lock()

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        time.sleep(self.delay)
        with self.lock:
            self.fetched.append(i)
            self.threads.add(threading.get_ident())
            info = data.get_worker_info()
            self.workers.add(None if info is None else info.id)
        if i == self.fail_at:
            raise KeyError(f"sample {i} is missing")
        return aa.tensor(float(i))


def test_worker_threads_keep_order_and_report_their_ids():
    ds = Slow(23)
    started = []
    loader = data.DataLoader(
        ds, batch_size=3, num_workers=3, worker_init_fn=started.append, prefetch_factor=2
    )
    got = np.concatenate([np.asarray(b) for b in loader]).tolist()
    assert got == list(range(23))
    assert threading.get_ident() not in ds.threads
    assert ds.workers <= {0, 1, 2} and None not in ds.workers
    assert sorted(started) == sorted(set(started)) and set(started) <= {0, 1, 2}
    assert data.get_worker_info() is None


@pytest.mark.parametrize("num_workers", [0, 2])
def test_dataset_error_reaches_the_caller_after_earlier_batches(num_workers):
    loader = data.DataLoader(Slow(12, fail_at=7), batch_size=2, num_workers=num_workers)
    seen = []
    with pytest.raises(KeyError, match="sample 7 is missing") as info:
        for batch in loader:
            seen.append(np.asarray(batch).tolist())
    assert seen == [[0.0, 1.0], [2.0, 3.0], [4.0, 5.0]]
    note = " ".join(getattr(info.value, "__notes__", []))
    assert "batch 3" in note
    if num_workers:
        assert "worker thread" in note


class Stream(data.IterableDataset):
    def __init__(self, n, shard=False):
        self.n, self.shard = n, shard

    def __iter__(self):
        info = data.get_worker_info()
        start, step = (0, 1) if info is None or not self.shard else (info.id, info.num_workers)
        return iter(range(start, self.n, step))

    def __len__(self):
        return self.n


@pytest.mark.parametrize("drop_last", [False, True])
def test_iterable_dataset_matches_torch(torch, drop_last):
    class TorchStream(torch.utils.data.IterableDataset):
        def __iter__(self):
            return iter(range(10))

        def __len__(self):
            return 10

    ours = data.DataLoader(Stream(10), batch_size=4, drop_last=drop_last)
    theirs = torch.utils.data.DataLoader(TorchStream(), batch_size=4, drop_last=drop_last)
    assert len(ours) == len(theirs)
    assert [as_numpy(b) for b in ours] == [as_numpy(b) for b in theirs]


def test_iterable_dataset_on_workers_like_torch_processes():
    sharded = data.DataLoader(Stream(20, shard=True), batch_size=3, num_workers=2)
    got = np.concatenate([np.asarray(b) for b in sharded]).tolist()
    assert sorted(got) == list(range(20))
    # Unsharded, each worker streams the whole dataset, as each PyTorch worker process does.
    copies = data.DataLoader(Stream(5), batch_size=2, num_workers=2)
    assert sorted(np.concatenate([np.asarray(b) for b in copies]).tolist()) == sorted(
        list(range(5)) * 2
    )


def test_timeout_names_itself():
    loader = data.DataLoader(Slow(4, delay=1.5), batch_size=1, num_workers=1, timeout=0.3)
    with pytest.raises(RuntimeError, match="DataLoader timed out after 0.3 seconds"):
        next(iter(loader))


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"shuffle": True, "sampler": [0]}, "sampler option is mutually exclusive with shuffle"),
        ({"batch_sampler": [[0]], "batch_size": 2}, "batch_sampler option is mutually exclusive"),
        ({"batch_size": None, "drop_last": True}, "disables auto-batching"),
        ({"num_workers": -1}, "num_workers option should be non-negative"),
        ({"prefetch_factor": 2}, "prefetch_factor option could only be specified"),
        ({"persistent_workers": True}, "persistent_workers option needs num_workers > 0"),
        ({"timeout": -1}, "timeout option should be non-negative"),
        ({"batch_size": 0}, "batch_size should be a positive integer value"),
    ],
)
def test_constructor_errors_match_torch(torch, kwargs, message):
    with pytest.raises(ValueError, match=message):
        data.DataLoader(data.TensorDataset(aa.arange(3)), **kwargs)
    torch_message = message.replace("worker threads", "multiprocessing").split(" could")[0]
    with pytest.raises(ValueError, match=torch_message):
        torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.arange(3)), **kwargs)


def test_iterable_dataset_refuses_shuffle():
    with pytest.raises(ValueError, match="expected unspecified shuffle option"):
        data.DataLoader(Stream(3), shuffle=True)


def test_tensor_dataset_checks_sizes():
    with pytest.raises(ValueError, match="Size mismatch between tensors"):
        data.TensorDataset(aa.zeros(3), aa.zeros(4))
    with pytest.raises(TypeError, match="argument 1 is list"):
        data.TensorDataset(aa.zeros(3), [1, 2, 3])


def test_subset_concat_and_random_split(torch):
    ds = data.TensorDataset(aa.arange(10))
    sub = data.Subset(ds, [9, 3])
    assert [int(sub[i][0]) for i in range(2)] == [9, 3]
    both = ds + sub
    assert len(both) == 12 and int(both[11][0]) == 3 and int(both[-1][0]) == 3
    for lengths in ([3, 7], [0.3, 0.3, 0.4], [0.5, 0.5]):
        parts = data.random_split(ds, lengths, generator=aa.Generator(0))
        theirs = torch.utils.data.random_split(range(10), lengths)
        assert [len(p) for p in parts] == [len(t) for t in theirs]
        flat = [i for p in parts for i in p.indices]
        assert sorted(flat) == list(range(10))
    with pytest.raises(ValueError, match="Sum of input lengths does not equal"):
        data.random_split(ds, [3, 3])


async def test_async_for_yields_every_batch_loaded_off_the_loop():
    ds = Slow(10)
    loader = data.DataLoader(ds, batch_size=4)
    got = [np.asarray(b).tolist() async for b in loader]
    assert got == [[0.0, 1.0, 2.0, 3.0], [4.0, 5.0, 6.0, 7.0], [8.0, 9.0]]
    assert threading.get_ident() not in ds.threads


async def test_async_for_prefetch_is_bounded():
    ds = Slow(40)
    loader = data.DataLoader(ds, batch_size=1, prefetch=3)
    batches = aiter(loader)
    await anext(batches)
    # Let the thread run ahead as far as it may; it must stop at `prefetch` batches ahead.
    for _ in range(50):
        await asyncio.sleep(0.02)
    assert 1 <= len(ds.fetched) <= 1 + 3
    await batches.aclose()


async def test_async_for_overlaps_an_awaited_backward():
    ds = Slow(6, delay=0.01)
    w = aa.tensor([1.0], requires_grad=True)
    async for batch in data.DataLoader(ds, batch_size=2):
        loss = (w * batch).sum()
        await loss.backward_async()
    assert float(w.grad) == sum(range(6))


async def test_async_error_reaches_the_caller_in_order():
    seen = []
    with pytest.raises(KeyError, match="sample 5 is missing"):
        async for batch in data.DataLoader(Slow(10, fail_at=5), batch_size=2):
            seen.append(np.asarray(batch).tolist())
    assert seen == [[0.0, 1.0], [2.0, 3.0]]


async def _wait_until(condition, seconds=10.0):
    deadline = time.monotonic() + seconds  # generous: only a hang should fail this
    while not condition() and time.monotonic() < deadline:
        await asyncio.sleep(0.02)
    return condition()


async def test_break_out_of_async_for_stops_the_thread():
    loader = data.DataLoader(Slow(1000), batch_size=1, prefetch=2)
    batches = aiter(loader)
    async for _ in batches:
        break
    assert await _wait_until(lambda: True)
    thread = batches._thread
    del batches
    assert await _wait_until(lambda: not thread.is_alive())


async def test_cancelled_consumer_stops_the_thread():
    loader = data.DataLoader(Slow(100, delay=0.05), batch_size=1)
    batches = aiter(loader)

    async def consume():
        async for _ in batches:
            pass

    task = asyncio.create_task(consume())
    await asyncio.sleep(0.2)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await batches.aclose()
    assert await _wait_until(lambda: not batches.producer_alive)


async def test_async_with_closes():
    async with aiter(data.DataLoader(Slow(50), batch_size=5)) as batches:
        first = await anext(batches)
        assert np.asarray(first).tolist() == [0.0, 1.0, 2.0, 3.0, 4.0]
    assert await _wait_until(lambda: not batches.producer_alive)
    with pytest.raises(StopAsyncIteration):
        await anext(batches)


def test_a_worker_thread_that_ended_silently_is_reported_not_waited_for():
    import queue

    from autograd_async.utils.data.workers import _take

    ended = threading.Thread(target=lambda: None, name="loader-7")
    ended.start()
    ended.join()
    with pytest.raises(RuntimeError, match="loader-7 ended without finishing its stream"):
        _take(queue.Queue(), 0, ended)
