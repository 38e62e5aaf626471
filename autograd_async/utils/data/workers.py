"""Loading on worker threads: batches of a map-style dataset fetched by a pool in order, and
iterable datasets streamed by one thread each and read round-robin, as PyTorch's workers do."""

from __future__ import annotations

import concurrent.futures
import contextvars
import itertools
import queue
import threading
from collections import deque
from collections.abc import Callable, Iterator
from typing import Any

from ...creation import default_generator
from .fetch import IterableFetcher, MapFetcher, WorkerInfo, enter_worker, with_worker_note

# How long one wait lasts before it looks again at whether it should give up.
POLL_SECONDS = 0.1


def _timed_out(timeout: float) -> RuntimeError:
    return RuntimeError(f"DataLoader timed out after {timeout} seconds")


def _base_seed() -> int:
    return int(default_generator.rng.integers(0, 2**62))


class WorkerPool:
    """`num_workers` threads that fetch batches of a map-style dataset."""

    def __init__(
        self, dataset: Any, num_workers: int, worker_init_fn: Callable[[int], None] | None
    ) -> None:
        ids = itertools.count()
        seed = _base_seed()
        # Each thread claims an id once, when the pool starts it, and keeps its info here: each
        # batch runs in a copy of the caller's context, which is told the info afresh.
        id_lock = threading.Lock()
        self._local = threading.local()

        def init() -> None:
            with id_lock:
                worker_id = next(ids)
            info = WorkerInfo(worker_id, num_workers, seed + worker_id, dataset)
            self._local.info = info
            enter_worker(info, worker_init_fn)

        self.executor = concurrent.futures.ThreadPoolExecutor(
            num_workers, thread_name_prefix="autograd-async-loader", initializer=init
        )
        self.num_workers = num_workers

    def submit(
        self, context: contextvars.Context, fetcher: MapFetcher, index: Any, batch: int
    ) -> concurrent.futures.Future:
        """Fetch one batch on a worker thread, in a copy of the caller's context."""
        return self.executor.submit(context.copy().run, self._load, fetcher, index, batch)

    def _load(self, fetcher: MapFetcher, index: Any, batch: int) -> Any:
        enter_worker(self._local.info, None)
        return load(fetcher, index, batch)

    def close(self) -> None:
        """Stop the threads once their current batch is done; queued batches are dropped."""
        self.executor.shutdown(wait=False, cancel_futures=True)


def load(fetcher: MapFetcher, index: Any, batch: int) -> Any:
    """One batch; its error names the worker thread (if any) and the batch number."""
    try:
        return fetcher.fetch(index)
    except BaseException as error:
        raise with_worker_note(error, batch) from None


def pooled_batches(
    pool: WorkerPool,
    fetcher: MapFetcher,
    indices: Iterator[Any],
    prefetch_factor: int,
    timeout: float,
) -> Iterator[Any]:
    """The batches in index order, `prefetch_factor` per worker fetched ahead."""
    pending: deque[concurrent.futures.Future] = deque()
    numbered = enumerate(indices)
    context = contextvars.copy_context()
    try:
        for number, index in itertools.islice(numbered, prefetch_factor * pool.num_workers):
            pending.append(pool.submit(context, fetcher, index, number))
        while pending:
            future = pending.popleft()
            waited = 0.0
            while not future.done():
                concurrent.futures.wait([future], timeout=POLL_SECONDS)
                waited += POLL_SECONDS
                if timeout and waited >= timeout and not future.done():
                    raise _timed_out(timeout)
            batch = future.result()
            for number, index in itertools.islice(numbered, 1):
                pending.append(pool.submit(context, fetcher, index, number))
            yield batch
    finally:
        for future in pending:
            future.cancel()


_END = object()


def streamed_batches(
    dataset: Any,
    num_workers: int,
    worker_init_fn: Callable[[int], None] | None,
    make_fetcher: Callable[[Iterator[Any]], IterableFetcher],
    prefetch_factor: int,
    timeout: float,
) -> Iterator[Any]:
    """Batches of an iterable dataset, each worker thread streaming its own copy of it.

    As with PyTorch's worker processes, every worker iterates the whole dataset unless the
    dataset splits itself by `get_worker_info()`; batches are taken from the workers in turn.
    """
    stop = threading.Event()
    outboxes: list[queue.Queue] = [queue.Queue(maxsize=prefetch_factor) for _ in range(num_workers)]
    seed = _base_seed()
    context = contextvars.copy_context()

    def put(outbox: queue.Queue, item: Any) -> bool:
        while not stop.is_set():
            try:
                outbox.put(item, timeout=POLL_SECONDS)
                return True
            except queue.Full:
                continue
        return False

    def stream(worker_id: int) -> None:
        outbox = outboxes[worker_id]
        try:
            enter_worker(
                WorkerInfo(worker_id, num_workers, seed + worker_id, dataset), worker_init_fn
            )
            fetcher = make_fetcher(iter(dataset))
            for number in itertools.count():
                try:
                    batch = fetcher.next_batch()
                except StopIteration:
                    break
                except BaseException as error:
                    put(outbox, with_worker_note(error, number))
                    return
                if not put(outbox, (batch,)):
                    return
        except BaseException as error:  # worker_init_fn or iter() failed
            put(outbox, with_worker_note(error, 0))
            return
        put(outbox, _END)

    threads = [
        threading.Thread(
            target=context.copy().run,
            args=(stream, worker_id),
            name=f"autograd-async-loader-{worker_id}",
            daemon=True,
        )
        for worker_id in range(num_workers)
    ]
    for thread in threads:
        thread.start()
    try:
        live = list(range(num_workers))
        while live:
            for worker_id in list(live):
                item = _take(outboxes[worker_id], timeout, threads[worker_id])
                if item is _END:
                    live.remove(worker_id)
                elif isinstance(item, BaseException):
                    raise item
                else:
                    yield item[0]
    finally:
        stop.set()


def _take(outbox: queue.Queue, timeout: float, worker: threading.Thread) -> Any:
    """The worker's next item; a timeout, or a worker that ended without its end marker, raises."""
    waited = 0.0
    while True:
        try:
            return outbox.get(timeout=POLL_SECONDS)
        except queue.Empty:
            if not worker.is_alive() and outbox.empty():
                raise RuntimeError(
                    f"DataLoader worker thread {worker.name} ended without finishing its stream"
                ) from None
            waited += POLL_SECONDS
            if timeout and waited >= timeout:
                raise _timed_out(timeout) from None
