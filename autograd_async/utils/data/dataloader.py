"""`DataLoader`: batches from a dataset, with PyTorch's options; `num_workers` threads load ahead
in order, and `async for` prefetches on a thread while the caller awaits its training step."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from ...creation import Generator
from .collate import default_collate, default_convert
from .dataset import IterableDataset
from .fetch import IterableFetcher, MapFetcher, with_worker_note
from .prefetch import AsyncBatchIterator
from .sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler
from .workers import WorkerPool, load, pooled_batches, streamed_batches


class _InfiniteConstantSampler(Sampler):
    """The sampler of an iterable dataset: the dataset itself decides what comes next."""

    def __iter__(self) -> Iterator[None]:
        while True:
            yield None


class DataLoader:
    """Iterate a dataset in batches (PyTorch's `torch.utils.data.DataLoader`).

    Beyond PyTorch: `async for batch in loader` builds up to `prefetch` batches ahead on a
    thread, so an awaited backward and the next batch's loading overlap; the loader's errors
    are raised in the caller, and leaving the loop early stops the thread. Workers are threads
    (`num_workers`), not processes; `pin_memory` is accepted and changes nothing.
    """

    def __init__(
        self,
        dataset: Any,
        batch_size: int | None = 1,
        shuffle: bool | None = None,
        sampler: Sampler | Iterable | None = None,
        batch_sampler: Sampler | Iterable | None = None,
        num_workers: int = 0,
        collate_fn: Callable[[Any], Any] | None = None,
        pin_memory: bool = False,
        drop_last: bool = False,
        timeout: float = 0,
        worker_init_fn: Callable[[int], None] | None = None,
        generator: Generator | None = None,
        *,
        prefetch_factor: int | None = None,
        persistent_workers: bool = False,
        prefetch: int = 2,
    ) -> None:
        if num_workers < 0:
            raise ValueError(
                "num_workers option should be non-negative; use num_workers=0 to disable "
                "worker threads."
            )
        if timeout < 0:
            raise ValueError("timeout option should be non-negative")
        if num_workers == 0 and prefetch_factor is not None:
            raise ValueError(
                "prefetch_factor option could only be specified with worker threads: let "
                "num_workers > 0, otherwise set prefetch_factor to None."
            )
        if persistent_workers and num_workers == 0:
            raise ValueError("persistent_workers option needs num_workers > 0")
        self.dataset = dataset
        self.num_workers = num_workers
        self.prefetch_factor = 2 if num_workers > 0 and prefetch_factor is None else prefetch_factor
        self.pin_memory = pin_memory
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.generator = generator
        self.persistent_workers = persistent_workers
        self.prefetch = prefetch
        self._iterable = isinstance(dataset, IterableDataset)
        if self._iterable:
            for name, value in (
                ("shuffle", shuffle),
                ("sampler", sampler),
                ("batch_sampler", batch_sampler),
            ):
                if value not in (None, False):
                    raise ValueError(
                        f"DataLoader with IterableDataset: expected unspecified {name} option, "
                        f"but got {name}={value}"
                    )
        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError(
                    "batch_sampler option is mutually exclusive with batch_size, shuffle, "
                    "sampler, and drop_last"
                )
            batch_size, drop_last = None, False
        elif batch_size is None and drop_last:
            raise ValueError(
                "batch_size=None option disables auto-batching and is mutually exclusive with "
                "drop_last"
            )
        if sampler is None:
            if self._iterable:
                sampler = _InfiniteConstantSampler()
            elif shuffle:
                sampler = RandomSampler(dataset, generator=generator)
            else:
                sampler = SequentialSampler(dataset)
        if batch_size is not None and batch_sampler is None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)
        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        if collate_fn is None:
            collate_fn = default_collate if self._auto_collation else default_convert
        self.collate_fn = collate_fn
        self._pool: WorkerPool | None = None

    @property
    def _auto_collation(self) -> bool:
        return self.batch_sampler is not None

    @property
    def _index_sampler(self) -> Iterable:
        batches = self.batch_sampler  # set exactly when batches are collated automatically
        return batches if batches is not None else self.sampler

    def __len__(self) -> int:
        if self._iterable:
            length, size = len(self.dataset), self.batch_size
            if size is not None:
                length = length // size if self.drop_last else -(-length // size)
            return length
        return len(self._index_sampler)  # type: ignore[arg-type]

    def __iter__(self) -> Iterator[Any]:
        return self._batches()

    def __aiter__(self) -> AsyncBatchIterator:
        return AsyncBatchIterator(self._batches, self.prefetch, self.timeout)

    def _batches(self) -> Iterator[Any]:
        if self._iterable:
            return self._iterable_batches()
        return self._map_batches()

    def _map_batches(self) -> Iterator[Any]:
        fetcher = MapFetcher(self.dataset, self._auto_collation, self.collate_fn)
        indices = iter(self._index_sampler)
        if self.num_workers == 0:
            for number, index in enumerate(indices):
                yield load(fetcher, index, number)
            return
        pool = self._pool or WorkerPool(self.dataset, self.num_workers, self.worker_init_fn)
        if self.persistent_workers:
            self._pool = pool
        try:
            yield from pooled_batches(pool, fetcher, indices, self._worker_prefetch(), self.timeout)
        finally:
            if not self.persistent_workers:
                pool.close()

    def _worker_prefetch(self) -> int:
        """Batches each worker thread loads ahead: `prefetch_factor`, set whenever there are
        workers (2 unless given)."""
        factor = self.prefetch_factor
        if factor is None:
            raise ValueError("prefetch_factor must be a number when num_workers > 0")
        return factor

    def _fetcher_for(self, samples: Iterator[Any]) -> IterableFetcher:
        return IterableFetcher(
            samples, self._auto_collation, self.collate_fn, self.batch_size, self.drop_last
        )

    def _iterable_batches(self) -> Iterator[Any]:
        if self.num_workers == 0:
            fetcher = self._fetcher_for(iter(self.dataset))
            for number in itertools.count():
                try:
                    batch = fetcher.next_batch()
                except StopIteration:
                    return
                except Exception as error:
                    raise with_worker_note(error, number) from None
                yield batch
        yield from streamed_batches(
            self.dataset,
            self.num_workers,
            self.worker_init_fn,
            self._fetcher_for,
            self._worker_prefetch(),
            self.timeout,
        )

    def close(self) -> None:
        """Stop persistent worker threads, if any."""
        if self._pool is not None:
            self._pool.close()
            self._pool = None


__all__ = ["DataLoader"]
